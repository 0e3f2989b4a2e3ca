"""The plugin registry: every plugin is found through an entry point, one group per kind.

A plugin's entry-point name is its short name (`FileStreamSource`); the class lists the Kafka Connect
class names a user may write (`org.apache.kafka.connect.file.FileStreamSourceConnector`) in `aliases`.
Kafka's own alias rules also apply: the simple class name, and the simple name without its kind suffix.
Nothing registers itself on import; the registry reads the installed distributions' metadata.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from importlib.metadata import entry_points
from typing import Any

from ingest.errors import ConfigError, Problem


class PluginKind(enum.Enum):
    SOURCE = ("source", "lakeconnect.sources", "Connector")
    SINK = ("sink", "lakeconnect.sinks", "Connector")
    CONVERTER = ("converter", "lakeconnect.converters", "Converter")
    TRANSFORM = ("transform", "lakeconnect.transforms", "")
    PREDICATE = ("predicate", "lakeconnect.predicates", "")
    PARTITIONER = ("partitioner", "lakeconnect.partitioners", "Partitioner")
    FORMAT = ("format", "lakeconnect.formats", "Format")
    CONFIG_PROVIDER = ("config provider", "lakeconnect.config_providers", "ConfigProvider")

    def __init__(self, label: str, group: str, suffix: str):
        self.label = label
        self.group = group
        self.suffix = suffix


@dataclass(frozen=True)
class PluginInfo:
    kind: PluginKind
    name: str
    cls: type
    aliases: tuple[str, ...]

    @property
    def class_name(self) -> str:
        """The Kafka Connect class name when the plugin has one, else its short name."""
        return self.aliases[0] if self.aliases else self.name

    @property
    def version(self) -> str:
        return getattr(self.cls, "version", "") or ""

    @property
    def doc(self) -> str:
        return (self.cls.__doc__ or "").strip().split("\n")[0]


def _normalise(name: str) -> str:
    # The book prints "org.apache.kafka.connect.file FileStreamSinkConnector": a space for a dot.
    return re.sub(r"\s+", ".", name.strip())


class Registry:
    """Plugins of every kind, loaded from entry points on first use."""

    def __init__(self, extra: Mapping[PluginKind, Mapping[str, type]] | None = None):
        self._extra = extra or {}
        self.broken: dict[tuple[PluginKind, str], str] = {}

    @cached_property
    def _plugins(self) -> dict[PluginKind, list[PluginInfo]]:
        found: dict[PluginKind, list[PluginInfo]] = {}
        for kind in PluginKind:
            infos: dict[str, PluginInfo] = {}
            for ep in entry_points(group=kind.group):
                if ep.name in infos:
                    continue  # the same distribution seen twice on sys.path
                try:
                    cls = ep.load()
                except Exception as e:  # a broken plugin must not hide the others; it is reported when named
                    self.broken[(kind, ep.name)] = f"{ep.value} failed to load: {type(e).__name__}: {e}"
                    continue
                infos[ep.name] = PluginInfo(kind, ep.name, cls, tuple(getattr(cls, "aliases", ())))
            for name, cls in self._extra.get(kind, {}).items():
                infos[name] = PluginInfo(kind, name, cls, tuple(getattr(cls, "aliases", ())))
            found[kind] = sorted(infos.values(), key=lambda i: i.name)
        return found

    @cached_property
    def _index(self) -> dict[PluginKind, dict[str, PluginInfo]]:
        index: dict[PluginKind, dict[str, PluginInfo]] = {}
        for kind, infos in self._plugins.items():
            names: dict[str, PluginInfo] = {}
            for info in infos:
                for n in self._names_of(info):
                    names.setdefault(n, info)
            index[kind] = names
        return index

    @staticmethod
    def _names_of(info: PluginInfo) -> list[str]:
        names = [info.name, info.cls.__name__]
        for alias in info.aliases:
            simple = alias.rsplit(".", 1)[-1]
            names += [alias, simple]
            # Kafka's aliases: FileStreamSinkConnector -> FileStreamSink; JsonConverter -> Json.
            if info.kind.suffix and simple.endswith(info.kind.suffix) and simple != info.kind.suffix:
                names.append(simple[: -len(info.kind.suffix)])
        return names

    def plugins(self, kind: PluginKind | None = None) -> list[PluginInfo]:
        if kind is None:
            return [i for k in PluginKind for i in self._plugins[k]]
        return list(self._plugins[kind])

    def find(self, kind: PluginKind, name: str) -> PluginInfo | None:
        return self._index[kind].get(_normalise(name))

    def get(self, kind: PluginKind, name: str, *, key: str | None = None) -> PluginInfo:
        """The plugin called `name`; a ConfigError naming `key` and listing the known ones otherwise."""
        info = self.find(kind, name)
        if info is None and (kind, _normalise(name)) in self.broken:
            raise ConfigError([Problem(key, f"{kind.label} '{name}' is installed but {self.broken[(kind, _normalise(name))]}")])
        if info is None:
            known = ", ".join(i.class_name for i in self._plugins[kind]) or "none installed"
            raise ConfigError([Problem(key, f"unknown {kind.label} '{name}'; known {kind.label}s: {known}")])
        return info

    def find_connector(self, name: str) -> PluginInfo | None:
        return self.find(PluginKind.SOURCE, name) or self.find(PluginKind.SINK, name)

    def get_connector(self, name: str, *, key: str = "connector.class") -> PluginInfo:
        info = self.find_connector(name)
        for kind in (PluginKind.SOURCE, PluginKind.SINK):
            if info is None and (kind, _normalise(name)) in self.broken:
                raise ConfigError([Problem(key, f"connector '{name}' is installed but {self.broken[(kind, _normalise(name))]}")])
        if info is None:
            known = ", ".join(i.class_name for k in (PluginKind.SOURCE, PluginKind.SINK) for i in self._plugins[k])
            raise ConfigError([Problem(key, f"unknown connector class '{name}'; known connectors: {known}")])
        return info

    def create(self, kind: PluginKind, name: str, *, key: str | None = None, **kwargs: Any) -> Any:
        return self.get(kind, name, key=key).cls(**kwargs)


_default: Registry | None = None


def default_registry() -> Registry:
    global _default
    if _default is None:
        _default = Registry()
    return _default
