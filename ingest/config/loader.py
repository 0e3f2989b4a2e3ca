"""Reading connector and worker configuration files: the JSON the book sends to the REST API, and
Java properties files. Every value comes back as a string, as Kafka Connect sees it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ingest.errors import ConfigError, Problem


def _stringify(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    raise TypeError(type(value).__name__)


def connector_from_json(data: Any, *, source: str, name: str | None = None) -> tuple[str, dict[str, str]]:
    """Accept `{"name": …, "config": {…}}` (POST /connectors) or a flat config (PUT …/config)."""
    if not isinstance(data, dict):
        raise ConfigError("expected a JSON object with the connector's configuration", source=source)
    if "config" in data and isinstance(data["config"], dict):
        config = dict(data["config"])
        outer_name = data.get("name")
        if outer_name is not None and config.get("name") not in (None, outer_name):
            raise ConfigError(
                [Problem("name", f"'{config['name']}' in config differs from the outer name '{outer_name}'")],
                source=source,
            )
        if outer_name is not None:
            config.setdefault("name", outer_name)
    else:
        config = dict(data)
    problems: list[Problem] = []
    out: dict[str, str] = {}
    for key, value in config.items():
        try:
            text = _stringify(value)
        except TypeError as e:
            problems.append(Problem(key, f"expected a string value, got a JSON {e}"))
            continue
        if text is not None:
            out[key] = text
    if name is not None:
        if out.get("name", name) != name:
            problems.append(Problem("name", f"'{out['name']}' does not match the connector name '{name}'"))
        out["name"] = name
    if not out.get("name"):
        problems.append(Problem("name", "missing required configuration (the connector's name)"))
    if problems:
        raise ConfigError(problems, source=source)
    return out["name"], out


def parse_properties(text: str, *, source: str) -> dict[str, str]:
    """Java `Properties.load` semantics: `=`, `:` or space separators, `#`/`!` comments, `\\` continuations."""
    props: dict[str, str] = {}
    logical: list[str] = []
    buffer = ""
    for raw in text.splitlines():
        line = raw.lstrip()
        if not buffer and (not line or line[0] in "#!"):
            continue
        # An odd number of trailing backslashes continues the line.
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            buffer += line[:-1]
            continue
        logical.append(buffer + line)
        buffer = ""
    if buffer:
        logical.append(buffer)
    for line in logical:
        m = re.match(r"((?:\\.|[^=:\s\\])*)\s*[=:\s]?\s*(.*)$", line)
        key, value = (m.group(1), m.group(2)) if m else (line, "")
        props[_unescape(key)] = _unescape(value)
    return props


def _unescape(s: str) -> str:
    escapes = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}

    def repl(m: re.Match[str]) -> str:
        c = m.group(1)
        if c.startswith("u"):
            return chr(int(c[1:], 16))
        return escapes.get(c, c)

    return re.sub(r"\\(u[0-9a-fA-F]{4}|.)", repl, s)


def load_connector_file(path: str | Path, *, name: str | None = None) -> tuple[str, dict[str, str]]:
    """A connector config from a .json or .properties file; ConfigError (never a traceback) otherwise."""
    p = Path(path)
    source = str(p)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"file not found: {p}", source=None) from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read {p}: {e}") from None
    if p.suffix.lower() == ".properties" or (p.suffix.lower() != ".json" and not text.lstrip().startswith("{")):
        props = parse_properties(text, source=source)
        return connector_from_json(props, source=source, name=name)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(f"malformed JSON at line {e.lineno}, column {e.colno}: {e.msg}", source=source) from None
    return connector_from_json(data, source=source, name=name)


def load_properties_file(path: str | Path) -> dict[str, str]:
    p = Path(path)
    try:
        return parse_properties(p.read_text(encoding="utf-8"), source=str(p))
    except FileNotFoundError:
        raise ConfigError(f"file not found: {p}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read {p}: {e}") from None
