"""Exclusive locks on a local lake: `fcntl.flock` on `<lake_root>/_locks/<name>.lock`.

They serialise writers that read-then-commit (topic offsets, schema ids) so they do not waste work
racing. Correctness does not rest on them: those commits are also pinned to the table version they
read (a commit that lands anywhere else fails). Remote lakes get no lock here, only the pin: the
runner's lease is what keeps two writers apart there.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from ingest.delta._table import is_local, normalize_uri
from ingest.errors import RetriableError

LOCK_TIMEOUT_S = 120.0


@contextmanager
def lake_lock(lake_root: str, name: str, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    root = normalize_uri(lake_root)
    if not is_local(root):
        yield
        return
    directory = os.path.join(root, "_locks")
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{name}.lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise RetriableError(
                        f"lock {path} still held by another writer after {timeout:.0f}s; try again later"
                    ) from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
