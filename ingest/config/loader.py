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
    raise TypeError("object" if isinstance(value, dict) else "array" if isinstance(value, list) else
                    type(value).__name__)


MAX_CONFIG_KEYS = 1000
MAX_VALUE_CHARS = 65536
"""A connector config's bounds: a real one has tens of keys of short values (a long SQL query fits)."""


def config_size_problems(config: dict[str, Any]) -> list[Problem]:
    if len(config) > MAX_CONFIG_KEYS:
        return [Problem(None, f"a connector config has at most {MAX_CONFIG_KEYS} keys, this one {len(config)}")]
    return [Problem(str(k)[:100], f"a value has at most {MAX_VALUE_CHARS} characters, this one {len(v)}")
            for k, v in config.items() if isinstance(v, str) and len(v) > MAX_VALUE_CHARS][:1]


def connector_from_json(data: Any, *, source: str, name: str | None = None, default_name: str | None = None,
                        default_problem: str | None = None) -> tuple[str, dict[str, str]]:
    """Accept `{"name": …, "config": {…}}` (POST /connectors) or a flat config (PUT …/config). A config without a
    name takes `name`, else `default_name` (a file's name; `default_problem`: why that is no connector name);
    `name` must match a name it has."""
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
    problems: list[Problem] = config_size_problems(config)
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
    if "name" not in out and default_name is not None:  # a name the file gives, even an empty one, is its own
        if default_problem:
            problems.append(Problem("name", f"the file has none, and its file name gives {default_name[:100]!r}, "
                                            f"which {default_problem}; add a \"name\" to the file or give --name"))
        else:
            out["name"] = default_name
    if not out.get("name") and not any(p.key == "name" for p in problems):
        problems.append(Problem("name", "missing required configuration (the connector's name)"))
    if problems:
        raise ConfigError(problems, source=source)
    return out["name"], out


def parse_properties(text: str, *, source: str) -> dict[str, str]:
    """Java `Properties.load` semantics: `=`, `:` or space separators, `#`/`!` comments, `\\` continuations;
    a malformed `\\uxxxx` escape is an error naming its line, as Java refuses it."""
    props: dict[str, str] = {}
    logical: list[tuple[int, str]] = []
    buffer, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.lstrip()
        if not buffer and (not line or line[0] in "#!"):
            continue
        if not buffer:
            start = number
        # An odd number of trailing backslashes continues the line.
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            buffer += line[:-1]
            continue
        logical.append((start, buffer + line))
        buffer = ""
    if buffer:
        logical.append((start, buffer))
    for number, line in logical:
        m = re.match(r"((?:\\.|[^=:\s\\])*)\s*[=:\s]?\s*(.*)$", line)
        key, value = (m.group(1), m.group(2)) if m else (line, "")
        try:
            props[_unescape(key)] = _unescape(value)
        except ValueError as e:
            raise ConfigError(f"line {number}: {e}", source=source) from None
    return props


def _unescape(s: str) -> str:
    escapes = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}

    def repl(m: re.Match[str]) -> str:
        c = m.group(1)
        if c.startswith("u"):
            if not re.fullmatch(r"u[0-9a-fA-F]{4}", c):
                raise ValueError(f"malformed \\uxxxx escape '\\{c}' (a \\u needs four hexadecimal digits)")
            return chr(int(c[1:], 16))
        return escapes.get(c, c)

    return re.sub(r"\\(u.{0,4}|.)", repl, s)


MAX_JSON_DEPTH = 64
"""How deeply a config's JSON may nest: a connector config is an object of strings, two levels deep."""


def parse_json(text: str | bytes) -> Any:
    """JSON as a config or request body may hold it, or ValueError with a message for the user: duplicate keys
    are refused (Jackson, which Kafka Connect parses with, would keep the last one silently), as are nesting
    deeper than MAX_JSON_DEPTH, numbers too long to convert and lone surrogates."""
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                raise ValueError(f"duplicate key '{key}': each key may appear once in an object")
            out[key] = value
        return out

    if (text[:3] == b"\xef\xbb\xbf") if isinstance(text, bytes) else text.startswith("\ufeff"):
        raise ValueError("malformed JSON: the text starts with a byte order mark (U+FEFF); save it as UTF-8 "
                         "without a BOM")
    try:
        data = json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as e:
        raise ValueError(f"malformed JSON at line {e.lineno}, column {e.colno}: {e.msg}") from None
    except RecursionError:
        raise ValueError(f"malformed JSON: nested more than {MAX_JSON_DEPTH} levels deep") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"malformed JSON: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except ValueError as e:
        if "integer string conversion" in str(e):
            raise ValueError("malformed JSON: a number with more than 4300 digits") from None
        raise
    stack = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise ValueError(f"malformed JSON: nested more than {MAX_JSON_DEPTH} levels deep")
        if isinstance(node, dict):
            stack.extend((k, depth) for k in node)
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
        elif isinstance(node, str) and any("\ud800" <= c <= "\udfff" for c in node):
            raise ValueError("malformed JSON: a string holds a lone surrogate (\\ud800-\\udfff), which is not "
                             "Unicode text")
    return data


def load_connector_file(path: str | Path, *, name: str | None = None, default_name: str | None = None,
                        default_problem: str | None = None) -> tuple[str, dict[str, str]]:
    """A connector config from a .json or .properties file; ConfigError (never a traceback) otherwise. A config
    without a name takes `name`, else `default_name` (see `connector_from_json`)."""
    p = Path(path)
    source = str(p)
    text = _read_text(p)
    names = {"name": name, "default_name": default_name, "default_problem": default_problem}
    if p.suffix.lower() == ".properties" or (p.suffix.lower() != ".json" and not text.lstrip().startswith("{")):
        props = parse_properties(text, source=source)
        return connector_from_json(props, source=source, **names)
    try:
        data = parse_json(text)
    except ValueError as e:
        raise ConfigError(str(e), source=source) from None
    return connector_from_json(data, source=source, **names)


def file_connector_name(path: str | Path) -> str:
    """The connector name a file's name gives: the name without .json or .properties (`jdbc-source-inc.json` is
    connector `jdbc-source-inc`)."""
    p = Path(path)
    return p.stem if p.suffix.lower() in (".json", ".properties") else p.name


def load_properties_file(path: str | Path) -> dict[str, str]:
    p = Path(path)
    return parse_properties(_read_text(p), source=str(p))


def _read_text(p: Path) -> str:
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"file not found: {p}") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{p} is not UTF-8 text (byte 0x{e.object[e.start]:02x} at position {e.start}); save "
                          "it as UTF-8") from None
    except OSError as e:
        raise ConfigError(f"cannot read {p}: {e.strerror or e}") from None
