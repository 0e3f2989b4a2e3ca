"""The contract every plugin keeps, whatever its kind, run over every plugin the registry finds (installed
third-party plugins included): it is the class its kind's contract in `ingest/api.py` says, implements every
call that contract leaves to it, is found by each of its names, and documents every setting it declares.

The suites of each kind's behaviour build on these: tests/transforms/test_contract.py (every transform),
tests/converters/test_contract.py (every converter).
"""

from __future__ import annotations

import inspect

import pytest

from ingest.api import (Converter, Format, HeaderConverter, Partitioner, Plugin, Predicate, SinkConnector,
                        SourceConnector, Transform)
from ingest.config.configdef import ConfigDef, Type
from ingest.config.providers import ConfigProvider
from ingest.registry import PluginKind, default_registry

CONTRACTS: dict[PluginKind, tuple[type, ...]] = {
    PluginKind.SOURCE: (SourceConnector,),
    PluginKind.SINK: (SinkConnector,),
    PluginKind.CONVERTER: (Converter, HeaderConverter),
    PluginKind.TRANSFORM: (Transform,),
    PluginKind.PREDICATE: (Predicate,),
    PluginKind.PARTITIONER: (Partitioner,),
    PluginKind.FORMAT: (Format,),
    PluginKind.CONFIG_PROVIDER: (ConfigProvider,),
}
REGISTRY = default_registry()
PLUGINS = REGISTRY.plugins()


def _id(info) -> str:
    return f"{info.kind.label}:{info.name}"


def left_to_plugins(contract: type) -> set[str]:
    """The calls a contract declares but does not implement (their body raises NotImplementedError)."""
    found = set()
    for cls in inspect.getmro(contract):
        for name, member in vars(cls).items():
            function = getattr(member, "__func__", member)
            if inspect.isfunction(function) and "raise NotImplementedError" in inspect.getsource(function):
                found.add(name)
    return found


def test_every_kind_has_a_contract_and_plugins():
    assert set(CONTRACTS) == set(PluginKind)
    assert {info.kind for info in PLUGINS} == set(PluginKind)


def test_the_contract_check_sees_an_unimplemented_call():
    class Half(Transform):
        pass

    assert "apply" in left_to_plugins(Transform)
    assert Half.apply is Transform.apply  # what test_implements_its_contract refuses


@pytest.mark.parametrize("info", PLUGINS, ids=_id)
def test_implements_its_contract(info):
    contracts = [c for c in CONTRACTS[info.kind] if issubclass(info.cls, c)]
    assert contracts, f"{info.class_name} is a {info.kind.label} but none of {CONTRACTS[info.kind]}"
    assert issubclass(info.cls, Plugin)
    for contract in contracts:
        missing = sorted(name for name in left_to_plugins(contract)
                         if getattr(info.cls, name) is getattr(contract, name))
        assert not missing, f"{info.class_name} does not implement {contract.__name__}.{', '.join(missing)}"


@pytest.mark.parametrize("info", PLUGINS, ids=_id)
def test_found_by_each_of_its_names(info):
    for name in (info.name, *info.aliases):
        assert REGISTRY.get(info.kind, name).cls is info.cls, name


@pytest.mark.parametrize("info", PLUGINS, ids=_id)
def test_documents_every_setting(info):
    definition = info.cls.config_def()
    assert isinstance(definition, ConfigDef)
    undocumented = sorted(name for name, key in definition.keys.items() if not key.doc.strip())
    assert not undocumented, f"{info.class_name} declares settings without documentation: {undocumented}"
    for name, key in definition.keys.items():
        if not key.required and key.default is not None and key.validator is not None:
            problem = key.validator(name, key.default)  # a default is a valid value of its own key
            assert problem is None, f"{info.class_name}: the default of {name} ({key.default!r}) is refused: {problem}"


TYPED = [info for info in PLUGINS if info.cls.settings_class is not None]


def test_some_plugins_read_typed_settings():
    assert {"JdbcSource", "DeltaTableSink", "S3Sink"} <= {info.name for info in TYPED}


@pytest.mark.parametrize("info", TYPED, ids=_id)
def test_typed_settings_read_only_declared_keys(info):
    from ingest.config.settings import Settings

    from ingest.reference import plugin_definition  # a connector's keys and those every connector takes

    assert issubclass(info.cls.settings_class, Settings)
    undeclared = info.cls.settings_class.undeclared(plugin_definition(info))
    assert not undeclared, f"{info.class_name}'s settings read keys its ConfigDef does not declare: {undeclared}"


def test_the_settings_check_sees_an_undeclared_key():
    from dataclasses import dataclass

    from ingest.config.settings import Settings, setting

    @dataclass(frozen=True)
    class Typo(Settings):
        url: str = setting("conection.url")

    assert Typo.undeclared(ConfigDef().define("connection.url", Type.STRING, "", doc="The URL.")) == ["conection.url"]
