"""EnvVarConfigProvider, FileConfigProvider and DirectoryConfigProvider, as Kafka's."""

from __future__ import annotations

import os
import re
from pathlib import Path

from ingest.config.loader import load_properties_file
from ingest.config.providers import ConfigProvider


class EnvVarConfigProvider(ConfigProvider):
    """`${env:NAME}`: an environment variable (optionally limited by `allowlist.pattern`)."""

    aliases = ("org.apache.kafka.common.config.provider.EnvVarConfigProvider",)

    def get(self, path: str, keys: set[str]) -> dict[str, str]:
        allow = re.compile(self.params.get("allowlist.pattern", ".*"))
        return {k: os.environ[k] for k in keys if k in os.environ and allow.fullmatch(k)}


class FileConfigProvider(ConfigProvider):
    """`${file:/path/to/file.properties:key}`: a key of a properties file."""

    aliases = ("org.apache.kafka.common.config.provider.FileConfigProvider",)

    def get(self, path: str, keys: set[str]) -> dict[str, str]:
        _check_allowed(path, self.params)
        props = load_properties_file(path)
        return {k: props[k] for k in keys if k in props}


class DirectoryConfigProvider(ConfigProvider):
    """`${directory:/path/to/dir:file}`: the content of a file in a directory (a mounted secret)."""

    aliases = ("org.apache.kafka.common.config.provider.DirectoryConfigProvider",)

    def get(self, path: str, keys: set[str]) -> dict[str, str]:
        _check_allowed(path, self.params)
        base = Path(path)
        out = {}
        for k in keys:
            f = base / k
            if f.is_file() and f.resolve().parent == base.resolve():
                out[k] = f.read_text(encoding="utf-8")
        return out


def _check_allowed(path: str, params: dict[str, str]) -> None:
    allowed = [p.strip() for p in params.get("allowed.paths", "").split(",") if p.strip()]
    if allowed and not any(Path(path).resolve().is_relative_to(Path(a).resolve()) for a in allowed):
        raise PermissionError(f"path {path} is outside allowed.paths")
