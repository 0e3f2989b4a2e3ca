"""EnvVarConfigProvider, FileConfigProvider and DirectoryConfigProvider, as Kafka's."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from ingest.config.loader import parse_properties
from ingest.config.providers import ConfigProvider
from ingest.errors import ConfigError, Problem


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
        props = parse_properties(_read(_allowed(path, self.params)), source=path)
        return {k: props[k] for k in keys if k in props}


class DirectoryConfigProvider(ConfigProvider):
    """`${directory:/path/to/dir:file}`: the content of a file in a directory (a mounted secret)."""

    aliases = ("org.apache.kafka.common.config.provider.DirectoryConfigProvider",)

    def get(self, path: str, keys: set[str]) -> dict[str, str]:
        base = _allowed(path, self.params)
        out = {}
        for k in keys:
            f = (base / k).resolve()
            if f.parent == base and f.exists():
                out[k] = _read(f)
        return out


MAX_BYTES = 2**20
"""The largest file a provider reads: a secret is a few bytes; anything larger is not one."""


def _allowed(path: str, params: dict[str, str]) -> Path:
    """`path` resolved (links followed), if it lies below one of the provider's `allowed.paths` (KIP-993;
    without any, no path is allowed)."""
    allowed = [p.strip() for p in params.get("allowed.paths", "").split(",") if p.strip()]
    if not allowed:
        raise _refused("the worker allows this provider no path: set its allowed.paths "
                       "(config.providers.<name>.param.allowed.paths)")
    resolved = Path(path).resolve()
    if not any(resolved.is_relative_to(Path(a).resolve()) for a in allowed):
        raise _refused(f"path {path} is outside the provider's allowed.paths")
    return resolved


def _read(path: Path) -> str:
    """A regular file's text (not a FIFO or device, which could block or never end), at most MAX_BYTES."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise _refused(f"file not found: {path}") from None
    if not stat.S_ISREG(info.st_mode):
        raise _refused(f"{path} is not a regular file")
    with path.open("rb") as f:
        data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise _refused(f"{path} is larger than {MAX_BYTES} bytes; a secret file is small")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise _refused(f"{path} is not UTF-8 text") from None


def _refused(message: str) -> ConfigError:
    return ConfigError([Problem(None, message)])
