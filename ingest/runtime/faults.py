"""Fault injection: kill the process at a named step of a batch, to prove exactly-once recovery.

`LAKECONNECT_CRASH_AT=write` (or `write:2` for the second time that step is reached) makes the process
exit immediately with status 137 right after that step, as `kill -9` would: no cleanup, no finally.
"""

from __future__ import annotations

import os
import sys

CRASH_ENV = "LAKECONNECT_CRASH_AT"
CRASH_EXIT = 137
SOURCE_STEPS = ("plan", "read", "transform", "convert", "write", "commit", "done")
SINK_STEPS = ("plan", "read", "convert", "transform", "put", "write", "commit", "done")

_seen: dict[str, int] = {}


def point(step: str) -> None:
    spec = os.environ.get(CRASH_ENV)
    if not spec:
        return
    name, _, nth = spec.partition(":")
    if name != step:
        return
    _seen[step] = _seen.get(step, 0) + 1
    if _seen[step] == int(nth or 1):
        sys.stderr.write(f"fault injection: killed after step '{step}'\n")
        sys.stderr.flush()
        os._exit(CRASH_EXIT)
