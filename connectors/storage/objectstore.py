"""What every object store of the S3 sink is: `ObjectStore`, a bucket of objects, and `Upload`, one object
being written. The stores themselves are S3 (connectors/storage/s3store.py) and the local filesystem
(connectors/storage/localstore.py); connectors/storage/store.py makes the one a config names.

Contracts every store keeps:
- A store is small and picklable (it is shipped to Spark executors): it holds settings; S3 clients are
  built lazily, once per process. Its repr, str and error messages never show a secret.
- `upload(key)` returns an `Upload`: nothing is visible until `commit()`, then the whole object is, at
  once (S3: one PutObject or a completed multipart upload; local: `os.replace` of a hidden temp file).
  `abort()` leaves nothing behind. A crashed writer may leave an incomplete upload or temp file;
  `abort_incomplete(prefix)` removes them.
- Failures are classified: `RetriableError` (the store did not answer well `s3.part.retries` + 1 times:
  run the batch again), `ConfigError` naming the key to fix, `FatalError` for the rest.
"""

from __future__ import annotations

import logging
import zlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from typing import Any

log = logging.getLogger(__name__)


def check_key(key: str) -> None:
    """ValueError unless `key` is an object key every store can hold."""
    # keys become paths on the local store: no way out of the bucket, nothing a path cannot hold
    parts = key.split("/")
    if not key or key.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\0" in key:
        raise ValueError(f"invalid object key {key!r}: it needs non-empty '/'-separated names, none '.' or '..'")


# --- uploads -----------------------------------------------------------------------------------


class Upload(ABC):
    """One object being written: `write()` bytes, then `commit()` (all or nothing) or `abort()`.

    As a context manager it commits on a clean exit and aborts when an exception leaves the block.
    Not thread-safe. `bytes_written` counts the bytes given to `write()` (before compression).
    """

    def __init__(self, key: str, compression_level: int | None):
        self.key = key
        self.bytes_written = 0
        # gzip framing (wbits 16+15), as java.util.zip.GZIPOutputStream writes it in Confluent's sink
        self._gzip = None if compression_level is None else zlib.compressobj(compression_level, zlib.DEFLATED, 31)
        self._state = "open"

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._state != "open":
            raise ValueError(f"upload of {self.key} is {self._state}: it takes no more data")
        view = memoryview(data)
        if view.ndim != 1 or view.itemsize != 1:
            view = view.cast("B")
        self.bytes_written += view.nbytes
        if self._gzip is not None:
            view = memoryview(self._gzip.compress(view))
        if view.nbytes:
            self._guarded(self._write_raw, view)

    def commit(self) -> None:
        """Make the object visible, whole. A second commit does nothing; a commit after abort fails."""
        if self._state == "committed":
            return
        if self._state != "open":
            raise ValueError(f"upload of {self.key} was aborted: it cannot be committed")
        if self._gzip is not None:
            tail = self._gzip.flush()
            if tail:
                self._guarded(self._write_raw, memoryview(tail))
        self._guarded(self._commit_raw)
        self._state = "committed"

    def abort(self) -> None:
        """Drop what was written; the object (or its previous version) stays as it was. Idempotent."""
        if self._state == "open":
            self._state = "aborted"
            self._abort_raw()

    def _guarded(self, step: Callable[..., None], *args: Any) -> None:
        try:
            step(*args)
        except BaseException:
            self._state = "aborted"
            try:
                self._abort_raw()
            except Exception as e:  # the first failure is the one to report; abort_incomplete cleans up
                log.warning("could not clean up the failed upload of %s: %s", self.key, e)
            raise

    def __enter__(self) -> Upload:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()

    @abstractmethod
    def _write_raw(self, data: memoryview) -> None: ...

    @abstractmethod
    def _commit_raw(self) -> None: ...

    @abstractmethod
    def _abort_raw(self) -> None: ...


# --- stores ------------------------------------------------------------------------------------


class ObjectStore(ABC):
    """A bucket of objects. See the module docstring for the contracts every store keeps."""

    bucket: str
    compression_level: int | None  # None: no compression; else gzip at this level

    @property
    def extension_suffix(self) -> str:
        """What the caller appends to object names: '.gz' when the store gzips them (as Confluent does)."""
        return "" if self.compression_level is None else ".gz"

    @abstractmethod
    def url(self, key: str = "") -> str:
        """Where object `key` is, for messages: s3://bucket/key, or a local path."""

    @abstractmethod
    def check(self) -> None:
        """The bucket exists and the credentials work; else ConfigError naming the key to fix."""

    @abstractmethod
    def upload(self, key: str) -> Upload:
        """Start writing object `key`: nothing is visible before the upload's commit()."""

    @abstractmethod
    def abort_incomplete(self, prefix: str, match: Callable[[str], bool] | None = None) -> list[str]:
        """Remove the incomplete uploads (S3) / temp files (local) under `prefix` that crashed writers left
        (only those whose object key `match` accepts, when given).

        Returns the key of each one removed, sorted. Call it only while no writer of those keys runs
        (under the connector's lease, before a batch writes): it cannot tell a live upload from a dead one.
        """

    @abstractmethod
    def list(self, prefix: str) -> list[str]:
        """Every object key under `prefix`, sorted."""

    @abstractmethod
    def list_info(self, prefix: str) -> list[tuple[str, int, int]]:
        """(key, size in bytes, last modified in epoch ms) of every object under `prefix`, sorted by key."""

    @abstractmethod
    def read(self, key: str) -> bytes:
        """The bytes of object `key`, as stored (still compressed when the store compresses)."""

    @abstractmethod
    def delete(self, keys: Iterable[str]) -> None:
        """Delete these objects; keys that do not exist are ignored."""
