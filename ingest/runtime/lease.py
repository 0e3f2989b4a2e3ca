"""Leases: one run of a connector task at a time.

On a local lake the lease is an exclusive `flock` on `<lake>/_locks/<name>.lock`, released by the
kernel when the process dies, so a killed run never leaves a stale lease behind.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from ingest.errors import ConcurrentRunError, StateError


class Lease:
    def __init__(self, lake_root: str, name: str, locks_dir: str | None = None):
        if locks_dir:
            directory = Path(locks_dir)
        elif "://" in lake_root and not lake_root.startswith("file://"):
            raise StateError(f"leases on a remote lake ({lake_root}) need a directory every run of its connectors "
                             "shares: set lake.locks.dir in the worker config to a local or mounted directory "
                             "(one machine's runs, or a shared mount for several), or use a mounted lake")
        else:
            directory = Path(lake_root.removeprefix("file://")) / "_locks"
        self.path = directory / f"{name}.lock"
        self._fd: int | None = None

    def acquire(self, what: str) -> Lease:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise StateError(f"cannot take the lease of {what} at {self.path}: {e.strerror or e}; the lease directory "
                             "(lake.locks.dir, else <lake.root>/_locks) must be a writable directory") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            holder = self.path.read_text().strip() or "another process"
            raise ConcurrentRunError(f"{what} is already running ({holder}); this run stops without "
                                     "changing anything — wait for the other run to finish") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()} on {os.uname().nodename}".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc) -> None:
        self.release()
