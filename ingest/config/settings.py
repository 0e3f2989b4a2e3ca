"""Typed settings: a plugin reads its validated config once, into a frozen dataclass whose fields name their
keys, instead of string-keyed reads scattered through its code (as dlt's configspecs and Singer's typed
configs do).

    @dataclass(frozen=True)
    class JdbcSettings(Settings):
        url: str = setting("connection.url")
        attempts: int = setting("connection.attempts")

    settings = JdbcSettings.from_config(config)   # config: the plugin's validated Config

Every field's key must be one its ConfigDef declares (`undeclared`; the plugin contract suite checks it), so a
renamed key or a typo fails a test, not a run. Values are the ConfigDef's typed ones (its default when unset);
`convert` shapes one further (a list into a tuple, a name into lower case).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeVar

from ingest.config.configdef import ConfigDef

S = TypeVar("S", bound="Settings")
_KEY, _CONVERT = "lakeconnect.key", "lakeconnect.convert"


def setting(key: str, convert: Callable[[Any], Any] | None = None, *, shown: bool = True) -> Any:
    """A settings field read from `key` (then `convert`ed). `shown=False`: left out of the settings' repr (a
    value that may hold a secret, such as a URL with a password in it)."""
    return dataclasses.field(metadata={_KEY: key, _CONVERT: convert}, repr=shown)


class Settings:
    """Base of a plugin's typed settings (subclasses are frozen dataclasses of `setting` fields)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @classmethod
    def keys(cls) -> dict[str, str]:
        """{field name: config key}."""
        return {f.name: f.metadata[_KEY] for f in dataclasses.fields(cls) if _KEY in f.metadata}

    @classmethod
    def from_config(cls: type[S], config: Mapping[str, Any]) -> S:
        values = {}
        for f in dataclasses.fields(cls):
            if _KEY not in f.metadata:
                continue
            value = config[f.metadata[_KEY]]
            convert = f.metadata[_CONVERT]
            values[f.name] = convert(value) if convert is not None else value
        return cls(**values)

    @classmethod
    def undeclared(cls, definition: ConfigDef) -> list[str]:
        """Keys of these settings that `definition` does not declare."""
        return sorted(key for key in cls.keys().values() if key not in definition)
