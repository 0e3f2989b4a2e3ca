"""The local object store: bucket `b`'s object `k` is the file `<root>/b/k` (a `store.url` of `file:`; the
embedded default). An upload writes a hidden temp file beside its object and commits with `os.replace`,
so an object is there whole or not at all, as on S3.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
from collections.abc import Callable, Iterable
from pathlib import Path

from connectors.storage.objectstore import ObjectStore, Upload, check_key
from connectors.storage.store_config import S3_BUCKET, STORE_URL
from ingest.errors import ConfigError, FatalError, LakeConnectError, Problem, RetriableError

log = logging.getLogger(__name__)

_TEMP = re.compile(r"^\.(?P<name>.+)\.[0-9a-f]{16}\.incomplete$")
"""Temp files of uploads in progress: `.<name>.<16 hex>.incomplete`, next to the object they become."""


class LocalStore(ObjectStore):
    """Objects as files: bucket b's object k is `<root>/b/k`. Commits are `os.replace` of a hidden temp file."""

    def __init__(self, root: str, bucket: str, compression_level: int | None = None):
        self.root = root
        self.bucket = bucket
        self.compression_level = compression_level

    def __repr__(self) -> str:
        compression = "none" if self.compression_level is None else "gzip"
        return f"LocalStore(root={self.root!r}, bucket={self.bucket!r}, compression={compression!r})"

    __str__ = __repr__

    @property
    def _dir(self) -> Path:
        return Path(self.root) / self.bucket

    def path(self, key: str) -> Path:
        check_key(key)
        return self._dir / key

    def url(self, key: str = "") -> str:
        return str(self._dir / key)

    def check(self) -> None:
        root = Path(self.root)
        if not root.is_dir():
            raise ConfigError([Problem(STORE_URL, f"directory {root} does not exist: create it or fix {STORE_URL}")])
        if not self._dir.is_dir():
            raise ConfigError([Problem(S3_BUCKET, f"bucket directory {self._dir} does not exist: create it "
                                                  f"(mkdir -p {self._dir}) or fix {S3_BUCKET}")])
        if not os.access(self._dir, os.W_OK | os.X_OK):
            raise ConfigError([Problem(STORE_URL, f"bucket directory {self._dir} is not writable by this user")])

    def upload(self, key: str) -> Upload:
        return _LocalUpload(self, key)

    def _files(self, prefix: str):
        """(key, path, is a temp file) of every file under prefix."""
        if ".." in prefix.split("/"):
            raise ValueError(f"invalid prefix {prefix!r}: no '..' in it")
        base = self._dir / prefix.rpartition("/")[0]  # the deepest directory the prefix names
        for dirpath, _, filenames in os.walk(base):
            rel = Path(dirpath).relative_to(self._dir).as_posix()
            for name in filenames:
                temp = _TEMP.match(name)
                key = (f"{rel}/" if rel != "." else "") + (temp["name"] if temp else name)
                if key.startswith(prefix):
                    yield key, Path(dirpath) / name, temp is not None

    def abort_incomplete(self, prefix: str, match: Callable[[str], bool] | None = None) -> list[str]:
        found = []
        for key, path, temp in list(self._files(prefix)):
            if temp and (match is None or match(key)):
                path.unlink(missing_ok=True)
                log.info("removed the temp file of an incomplete upload of %s: %s", key, path)
                found.append(key)
        return sorted(found)

    def list(self, prefix: str) -> list[str]:
        return sorted(key for key, _, temp in self._files(prefix) if not temp)

    def list_info(self, prefix: str) -> list[tuple[str, int, int]]:
        out = []
        for key, path, temp in self._files(prefix):
            if not temp:
                st = path.stat()
                out.append((key, st.st_size, int(st.st_mtime * 1000)))
        return sorted(out)

    def read(self, key: str) -> bytes:
        try:
            return self.path(key).read_bytes()
        except FileNotFoundError:
            raise FatalError(f"object {key} does not exist in {self._dir}") from None

    def delete(self, keys: Iterable[str]) -> None:
        for key in keys:
            self.path(key).unlink(missing_ok=True)


class _LocalUpload(Upload):
    def __init__(self, store: LocalStore, key: str):
        super().__init__(key, store.compression_level)
        self._target = store.path(key)
        try:
            self._target.parent.mkdir(parents=True, exist_ok=True)
            self._temp = self._target.with_name(f".{self._target.name}.{secrets.token_hex(8)}.incomplete")
            self._file = open(self._temp, "xb")
        except OSError as e:
            raise self._error("create", e) from None

    def _error(self, op: str, e: OSError) -> LakeConnectError:
        if isinstance(e, PermissionError):
            return ConfigError([Problem(STORE_URL, f"cannot {op} {self._target}: {e.strerror}; fix the "
                                                   f"directory's permissions or {STORE_URL}")])
        return RetriableError(f"cannot {op} {self._target}: {e.strerror or e}; check the filesystem (space, "
                              f"health), then run the batch again")

    def _write_raw(self, data: memoryview) -> None:
        try:
            self._file.write(data)
        except OSError as e:
            raise self._error("write", e) from None

    def _commit_raw(self) -> None:
        try:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            os.replace(self._temp, self._target)
            directory = os.open(self._target.parent, os.O_RDONLY)  # make the rename itself durable
            try:
                os.fsync(directory)
            finally:
                os.close(directory)
        except OSError as e:
            raise self._error("commit", e) from None

    def _abort_raw(self) -> None:
        self._file.close()
        self._temp.unlink(missing_ok=True)
