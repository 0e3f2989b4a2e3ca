"""`${provider:path:key}` placeholders, resolved through config-provider plugins (Kafka's ConfigProvider).

The worker names its providers as Kafka's does (`config.providers=file`,
`config.providers.file.class=…FileConfigProvider`, `config.providers.file.param.*`); a connector may use
only those (`env`, `file` and `directory` need no class). The file and directory providers read only below
their `allowed.paths` (KIP-993), regular files of at most 1 MiB. Stored and displayed configs keep the
placeholder, so secrets stay out of state tables; a validation message never shows a resolved value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ingest.api import Plugin
from ingest.errors import ConfigError, Problem
from ingest.registry import PluginKind, Registry

# Kafka's ConfigTransformer pattern: ${provider:[path:]key}
PLACEHOLDER = re.compile(r"\$\{([^}]*?):(?:([^}]*?):)?([^}]*?)\}")

BUILTIN_PROVIDERS = {"env": "EnvVarConfigProvider", "file": "FileConfigProvider", "directory": "DirectoryConfigProvider"}


class ConfigProvider(Plugin):
    """Looks up keys at a path. Errors must not contain the values looked up."""

    def __init__(self, params: Mapping[str, Any]):
        self.params = dict(params)

    def get(self, path: str, keys: set[str]) -> dict[str, str]:
        """The values of `keys` at `path`; a missing key is simply absent from the result."""
        raise NotImplementedError


def has_placeholders(value: str) -> bool:
    return bool(PLACEHOLDER.search(value))


def provider_problems(registry: Registry, worker_raw: Mapping[str, str]) -> list[Problem]:
    """The worker's declared providers that cannot be loaded: each named in `config.providers` needs a class
    (`config.providers.<name>.class`, unless it is a built-in name) that is an installed provider."""
    problems = []
    for name in (n.strip() for n in str(worker_raw.get("config.providers", "")).split(",")):
        if not name:
            continue
        key = f"config.providers.{name}.class"
        cls = worker_raw.get(key) or BUILTIN_PROVIDERS.get(name)
        if not cls:
            problems.append(Problem(key, "missing: every provider named in config.providers needs its class"))
            continue
        try:
            registry.get(PluginKind.CONFIG_PROVIDER, str(cls), key=key)
        except ConfigError as e:
            problems.extend(e.problems)
    return problems


class ConfigResolver:
    def __init__(self, registry: Registry, worker_raw: Mapping[str, str]):
        self.registry = registry
        names = [n.strip() for n in worker_raw.get("config.providers", "").split(",") if n.strip()]
        # Only the providers the worker declares, as Kafka's worker (a connector config naming another is refused:
        # since CVE-2024-31141 Kafka itself lets the worker limit them)
        self._classes: dict[str, str] = {}
        self._params: dict[str, dict[str, str]] = {}
        for n in names:
            cls = worker_raw.get(f"config.providers.{n}.class") or BUILTIN_PROVIDERS.get(n)
            if cls:
                self._classes[n] = cls
            prefix = f"config.providers.{n}.param."
            self._params[n] = {k[len(prefix):]: v for k, v in worker_raw.items() if k.startswith(prefix)}
        self._instances: dict[str, ConfigProvider] = {}

    def _provider(self, name: str) -> ConfigProvider:
        if name not in self._instances:
            if name not in self._classes:
                known = ", ".join(sorted(self._classes)) or "none"
                raise KeyError(f"unknown config provider '{name}': the worker declares {known}; a connector may use "
                               "only the providers the worker's config.providers names (e.g. config.providers=file "
                               "with config.providers.file.param.allowed.paths=/run/secrets)")
            info = self.registry.get(PluginKind.CONFIG_PROVIDER, self._classes[name], key=f"config.providers.{name}.class")
            self._instances[name] = info.cls(self._params.get(name, {}))
        return self._instances[name]

    def resolve(self, raw: Mapping[str, str], *, source: str | None = None) -> dict[str, str]:
        """Replace every placeholder; all unresolvable references are reported together, values never."""
        out: dict[str, str] = {}
        problems: list[Problem] = []
        for key, value in raw.items():
            if not isinstance(value, str) or "${" not in value:
                out[key] = value
                continue

            def substitute(m: re.Match[str], key: str = key) -> str:
                provider, path, name = m.group(1), m.group(2) or "", m.group(3)
                try:
                    found = self._provider(provider).get(path, {name})
                except ConfigError as e:
                    problems.append(Problem(key, f"cannot resolve {m.group(0)}: {e.problems[0].message}"))
                    return m.group(0)
                except KeyError as e:
                    problems.append(Problem(key, str(e.args[0])))
                    return m.group(0)
                except Exception as e:  # a provider's I/O failure names the reference, not a value
                    problems.append(Problem(key, f"cannot resolve {m.group(0)}: {type(e).__name__}: {e}"))
                    return m.group(0)
                if name not in found:
                    problems.append(Problem(key, f"cannot resolve {m.group(0)}: no key '{name}' at '{path}'"))
                    return m.group(0)
                return found[name]

            out[key] = PLACEHOLDER.sub(substitute, value)
        if problems:
            raise ConfigError(problems, source=source)
        return out
