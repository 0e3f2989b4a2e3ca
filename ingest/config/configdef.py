"""ConfigDef: each configuration key declared once, with type, default, validator, importance, doc, group.

Modelled on Kafka's `org.apache.kafka.common.config.ConfigDef`. Values arrive as strings (properties
files, the REST API) or JSON scalars; `ConfigDef.parse` turns them into typed values and reports every
problem at once, per key. PASSWORD values become `Password` objects whose repr never shows the secret.
"""

from __future__ import annotations

import difflib
import enum
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ingest.config.secrets import HIDDEN, scrub
from ingest.errors import ConfigError, Problem


class Type(enum.Enum):
    BOOLEAN = "BOOLEAN"
    STRING = "STRING"
    INT = "INT"
    SHORT = "SHORT"
    LONG = "LONG"
    DOUBLE = "DOUBLE"
    LIST = "LIST"
    CLASS = "CLASS"
    PASSWORD = "PASSWORD"


class Importance(enum.Enum):
    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    LOW = "LOW"


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()
"""Marks a required key: parsing fails when it is absent."""


class Password:
    """A secret value. `str()` and `repr()` print `[hidden]`; `.value` gives the secret itself."""

    __slots__ = ("_value",)

    def __init__(self, value: str):
        self._value = value

    @property
    def value(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return HIDDEN

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Password) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


# --- validators: callables (key, value) -> error message or None --------------------------------

Validator = Callable[[str, Any], "str | None"]


@dataclass(frozen=True)
class Range:
    """A number within [min, max] (either end may be open)."""

    min: float | None = None
    max: float | None = None

    @classmethod
    def at_least(cls, n: float) -> Range:
        return cls(min=n)

    @classmethod
    def between(cls, lo: float, hi: float) -> Range:
        return cls(min=lo, max=hi)

    def __call__(self, key: str, value: Any) -> str | None:
        if value is None:
            return None
        if self.min is not None and value < self.min:
            return f"value {value} must be at least {self.min:g}"
        if self.max is not None and value > self.max:
            return f"value {value} must be no more than {self.max:g}"
        return None

    def describe(self) -> str:
        lo = "..." if self.min is None else f"{self.min:g}"
        hi = "..." if self.max is None else f"{self.max:g}"
        return f"[{lo},{hi}]"


@dataclass(frozen=True)
class ValidString:
    """One of a fixed set of strings (case-insensitive when asked, as Kafka's CaseInsensitiveValidString)."""

    allowed: tuple[str, ...]
    case_insensitive: bool = False

    @classmethod
    def of(cls, *allowed: str, case_insensitive: bool = False) -> ValidString:
        return cls(tuple(allowed), case_insensitive)

    def __call__(self, key: str, value: Any) -> str | None:
        if value is None:
            return None
        values = value if isinstance(value, list) else [value]
        norm = {a.lower() if self.case_insensitive else a for a in self.allowed}
        for v in values:
            if (v.lower() if self.case_insensitive else v) not in norm:
                return f"invalid value '{v}'; expected one of: {', '.join(self.allowed)}"
        return None

    def describe(self) -> str:
        return "[" + ", ".join(self.allowed) + "]"


class NonEmptyString:
    def __call__(self, key: str, value: Any) -> str | None:
        if value is not None and not str(value).strip():
            return "must not be empty"
        return None

    def describe(self) -> str:
        return "non-empty string"


_JAVA_NAMED_GROUP = re.compile(r"(?<!\\)\(\?<(?![=!])")
_JAVA_NAMED_REFERENCE = re.compile(r"\\k<([A-Za-z][A-Za-z0-9]*)>")


class ValidRegex:
    """A value that compiles as a regular expression. The regexes run as Java's (Spark's rlike and
    regexp_replace, as Kafka's Pattern), so Java's own syntax for named groups, `(?<name>...)` and
    `\\k<name>`, is read as Python's `(?P<name>...)` and `(?P=name)` for the check; the rest of the common
    syntax Java and Python agree on."""

    def __call__(self, key: str, value: Any) -> str | None:
        if value is None:
            return None
        for v in value if isinstance(value, list) else [value]:
            try:
                re.compile(_JAVA_NAMED_REFERENCE.sub(r"(?P=\1)", _JAVA_NAMED_GROUP.sub("(?P<", v)))
            except re.error as e:
                return f"invalid regular expression '{v}': {e}"
        return None

    def describe(self) -> str:
        return "a regular expression"


# --- keys -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConfigKey:
    name: str
    type: Type
    default: Any = NO_DEFAULT
    validator: Validator | None = None
    importance: Importance = Importance.MEDIUM
    doc: str = ""
    group: str | None = None
    order: int = 0

    @property
    def required(self) -> bool:
        return self.default is NO_DEFAULT

    def describe_validator(self) -> str:
        describe = getattr(self.validator, "describe", None)
        return describe() if describe else ""


_TRUE = {"true"}
_FALSE = {"false"}


def _parse_value(key: ConfigKey, raw: Any) -> Any:
    """Turn a raw value into the key's type; raises ValueError with a message naming what was expected."""
    if raw is None:
        return None
    t = key.type
    if t is Type.PASSWORD:
        if isinstance(raw, Password):
            return raw
        return Password(str(raw))
    if t in (Type.STRING, Type.CLASS):
        if not isinstance(raw, (str, int, float, bool)):
            raise ValueError(f"expected a string, got {type(raw).__name__}")
        return str(raw).strip() if t is Type.CLASS else str(raw)
    if t is Type.BOOLEAN:
        if isinstance(raw, bool):
            return raw
        s = str(raw).strip().lower()
        if s in _TRUE:
            return True
        if s in _FALSE:
            return False
        raise ValueError(f"expected a boolean (true or false), got '{raw}'")
    if t in (Type.INT, Type.SHORT, Type.LONG):
        if isinstance(raw, bool):
            raise ValueError(f"expected an integer, got '{raw}'")
        try:
            n = int(str(raw).strip())
        except ValueError:
            raise ValueError(f"expected an integer, got '{raw}'") from None
        bits = {Type.SHORT: 16, Type.INT: 32, Type.LONG: 64}[t]
        if not -(2 ** (bits - 1)) <= n < 2 ** (bits - 1):
            raise ValueError(f"{str(n)[:40]} is out of range for a {bits}-bit integer "
                             f"({-(2 ** (bits - 1))} to {2 ** (bits - 1) - 1})")
        return n
    if t is Type.DOUBLE:
        try:
            return float(str(raw).strip())
        except ValueError:
            raise ValueError(f"expected a number, got '{raw}'") from None
    if t is Type.LIST:
        if isinstance(raw, list):
            return [str(v).strip() for v in raw]
        s = str(raw).strip()
        return [] if not s else [part.strip() for part in s.split(",")]
    raise AssertionError(t)


def format_value(value: Any) -> str:
    """Render a typed value back to Kafka's string form (passwords stay hidden)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(format_value(v) for v in value)
    return str(value)


class ConfigDef:
    """An ordered set of declared keys, plus prefixes under which any key is accepted."""

    def __init__(self, keys: Iterable[ConfigKey] = (), prefixes: Iterable[str] = ()):
        self._keys: dict[str, ConfigKey] = {}
        self._prefixes: list[str] = list(prefixes)
        for k in keys:
            self._add(k)

    def _add(self, key: ConfigKey) -> None:
        if key.name in self._keys:
            raise ValueError(f"configuration key '{key.name}' is defined twice")
        self._keys[key.name] = key

    def define(
        self,
        name: str,
        type: Type,
        default: Any = NO_DEFAULT,
        validator: Validator | None = None,
        importance: Importance = Importance.MEDIUM,
        doc: str = "",
        group: str | None = None,
    ) -> ConfigDef:
        self._add(ConfigKey(name, type, default, validator, importance, doc, group, len(self._keys)))
        return self

    def allow_prefix(self, prefix: str) -> ConfigDef:
        """Accept any key that starts with `prefix` (e.g. `key.converter.`); it is passed on unparsed."""
        self._prefixes.append(prefix)
        return self

    def merge(self, other: ConfigDef) -> ConfigDef:
        merged = ConfigDef(self._keys.values(), self._prefixes)
        for k in other._keys.values():
            if k.name not in merged._keys:
                merged._add(k)
        merged._prefixes += [p for p in other._prefixes if p not in merged._prefixes]
        return merged

    @property
    def keys(self) -> dict[str, ConfigKey]:
        return dict(self._keys)

    @property
    def prefixes(self) -> list[str]:
        return list(self._prefixes)

    def __contains__(self, name: str) -> bool:
        return name in self._keys

    def accepts(self, name: str) -> bool:
        return name in self._keys or any(name.startswith(p) for p in self._prefixes)

    def validate(self, raw: Mapping[str, Any], *, strict: bool = True) -> tuple[dict[str, Any], list[Problem]]:
        """Parse every key; return (typed values, problems). Unknown keys are problems when `strict`."""
        values: dict[str, Any] = {}
        problems: list[Problem] = []
        for name, key in self._keys.items():
            if name in raw and raw[name] is not None:
                try:
                    value = _parse_value(key, raw[name])
                except ValueError as e:
                    problems.append(Problem(name, str(e)))
                    continue
            elif key.required:
                hint = f" ({key.doc.split('.')[0]})" if key.doc else ""
                problems.append(Problem(name, f"missing required configuration{hint}"))
                continue
            else:
                value = key.default
            if key.validator is not None:
                plain = value.value if isinstance(value, Password) else value
                message = key.validator(name, plain)
                if message:
                    problems.append(Problem(name, message))
                    continue
            values[name] = value
        if strict:
            for name in raw:
                if not self.accepts(name):
                    problems.append(Problem(name, self._unknown_message(name)))
        return values, problems

    def unused(self, raw: Mapping[str, Any]) -> list[Problem]:
        """Keys of `raw` that this definition neither declares nor accepts by prefix, as warnings. Kafka
        Connect accepts such keys and logs them as unused (teams keep owners and ticket ids in connector
        configs); a likely typo names the declared key it resembles."""
        return [Problem(name, self._unknown_message(name, "not a known configuration key, ignored"))
                for name in raw if isinstance(name, str) and not self.accepts(name)]

    def _unknown_message(self, name: str, text: str = "unknown configuration key") -> str:
        close = difflib.get_close_matches(name, list(self._keys), n=1, cutoff=0.75)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        return f"{text}{hint}"

    def parse(self, raw: Mapping[str, Any], *, source: str | None = None, strict: bool = True) -> Config:
        values, problems = self.validate(raw, strict=strict)
        if problems:
            raise ConfigError(problems, source=source)
        return Config(self, values, dict(raw))


class Config(Mapping[str, Any]):
    """Validated, typed configuration. Indexing gives typed values; `originals` the raw input."""

    def __init__(self, definition: ConfigDef, values: dict[str, Any], originals: dict[str, Any]):
        self.definition = definition
        self._values = values
        self.originals = originals

    def __getitem__(self, key: str) -> Any:
        if key not in self._values:
            raise KeyError(f"configuration key '{key}' is not declared")
        return self._values[key]

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def secret(self, key: str) -> str | None:
        """The plain value of a PASSWORD key (None when unset)."""
        v = self[key]
        return v.value if isinstance(v, Password) else v

    def with_prefix(self, prefix: str, *, strip: bool = True) -> dict[str, Any]:
        """Raw values of every original key starting with `prefix` (as Kafka's originalsWithPrefix)."""
        return {(k[len(prefix):] if strip else k): v for k, v in self.originals.items() if k.startswith(prefix)}

    def resolved_secrets(self, raw: Mapping[str, str]) -> list[str]:
        """The plain secrets this config holds, to register with the scrubber (`secrets.register`): values of
        PASSWORD and secret-looking keys, values a provider resolved (they differ from `raw`), URL passwords."""
        found = []
        for key, value in self.originals.items():
            plain = value.value if isinstance(value, Password) else value
            if not isinstance(plain, str):
                continue
            if is_secret_key(key, self.definition) or raw.get(key) != plain:
                found.append(plain)
            else:
                found.extend(url_passwords(plain))
        return found

    def masked(self) -> dict[str, str]:
        """The original key/values as strings: PASSWORD-typed keys and provider-resolved values hidden."""
        return {k: scrub(v) for k, v in mask(self.originals, self.definition).items()}

    def __repr__(self) -> str:
        return f"Config({self.masked()!r})"


_TABLE_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")


def valid_table_name(key: str, value: Any) -> str | None:
    """A name that becomes a table's directory (a state table, a connector's offsets table): Kafka's topic-name
    rules (1 to 249 of letters, digits, '.', '_' and '-', not '.' or '..'), so it never leaves its parent."""
    if value is None:
        return None
    text = str(value)
    if not _TABLE_NAME.fullmatch(text) or text in (".", ".."):
        return (f"'{text[:80]}' is not a valid table name: use 1 to 249 letters, digits, '.', '_' or '-' "
                "(not '.' or '..')")
    return None


def is_secret_key(name: str, definition: ConfigDef | None = None) -> bool:
    """PASSWORD keys, plus keys whose names say they hold a secret (a prefixed client password, say)."""
    if definition is not None and name in definition.keys:
        return definition.keys[name].type is Type.PASSWORD
    lowered = name.lower()
    if lowered.endswith(_NOT_SECRET_ENDINGS):  # credentials.source, credentials.provider.class: names, not secrets
        return False
    return any(w in lowered for w in ("password", "secret", "token", "credential", "sasl.jaas.config", "api.key",
                                      "user.info"))  # a registry's basic.auth.user.info: user:password


_NOT_SECRET_ENDINGS = (".class", ".source", ".provider", ".type", ".enable", ".enabled", ".location", ".mode")


def mask(raw: Mapping[str, Any], definition: ConfigDef | None = None) -> dict[str, str]:
    """Strings for display: secrets are `[hidden]`, except unresolved `${provider:…}` references."""
    return {k: masked_value(k, v, definition) for k, v in raw.items()}


def masked_value(key: str, value: Any, definition: ConfigDef | None = None) -> str:
    """One value for display: a secret key's value is `[hidden]`; elsewhere a password inside a URL is."""
    text = format_value(value)
    if _is_reference(text):
        return text
    if is_secret_key(key, definition):
        return HIDDEN
    return redact_url(text)


# user:password@ in any URL of a value (a list of URLs too), and a JDBC URL's password=… parameter.
_URL_USERINFO = re.compile(r"(//[^/@:\s,]+:)([^@\s,]+)@")
_URL_PASSWORD = re.compile(r"(?i)((?:[?&;]|^)password=)([^&;\s,]+)")


def redact_url(text: str | None) -> str:
    """`text` with the passwords of the URLs in it replaced by `[hidden]` (user names stay)."""
    if not text:
        return ""
    if "//" in text:
        text = _URL_USERINFO.sub(lambda m: m.group(1) + HIDDEN + "@", text)
    if "password=" in text.lower() and ("//" in text or text.startswith("jdbc:")):
        text = _URL_PASSWORD.sub(lambda m: m.group(1) + HIDDEN, text)
    return text


def url_passwords(text: str | None) -> list[str]:
    """The passwords `redact_url` hides, for the log scrubber."""
    if not text or "//" not in text and not text.startswith("jdbc:"):
        return []
    found = [m.group(2) for m in _URL_USERINFO.finditer(text)] + [m.group(2) for m in _URL_PASSWORD.finditer(text)]
    return [p for p in found if p != HIDDEN]


def secret_values(raw: Mapping[str, Any], definition: ConfigDef | None = None) -> list[str]:
    """The plain secrets of a config, for the log scrubber: secret keys' values and the passwords in URLs."""
    found: list[str] = []
    for k, v in raw.items():
        if not isinstance(v, str) or not v or v == HIDDEN or _is_reference(v):
            continue
        found.extend([v] if is_secret_key(k, definition) else url_passwords(v))
    return found


def _is_reference(text: str) -> bool:
    return bool(re.fullmatch(r"\$\{[^}]+\}", text.strip()))
