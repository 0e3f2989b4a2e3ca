"""Keeping secrets out of logs, status traces, errors and run history.

This module imports nothing of lakeconnect: config definitions (`configdef`) build on it.

Every secret a run knows — PASSWORD-typed values and values that came from a config provider — is
registered with the scrubber, which replaces it with `[hidden]` in any text that leaves the process.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable

HIDDEN = "[hidden]"  # what a secret reads as wherever it is shown

# Not bounded, on purpose: a secret dropped from here would show in the next text holding it, and a connector
# may use it as long as the process runs. It holds the secret values of the configs this process validated (and
# the REST server's users): validating them again each batch adds nothing, so it grows only when a config
# brings a new secret (a new connector, a rotated password), by the bytes of that value.
_secrets: set[str] = set()
_pattern: re.Pattern[str] | None = None  # every secret, longest first: one pass over a text scrubs it
_lock = threading.Lock()


def register(values: Iterable[str | None]) -> None:
    global _pattern
    new = {v for v in values if v and len(v) >= 3} - _secrets  # shorter strings would blank out ordinary words
    if new:
        with _lock:
            _secrets.update(new)
            _pattern = None


def scrub(text: str | None, keep: Iterable[str] = ()) -> str | None:
    """`text` with every registered secret replaced by `[hidden]`, in one pass whatever their number.

    `keep`: what the reader of the text sent itself (a request's path and body). A secret found in it is
    left as it is: hiding only the registered ones would tell a caller which of its guesses are secrets."""
    global _pattern
    if not text or not _secrets:
        return text
    pattern = _pattern
    if pattern is None:
        with _lock:
            pattern = _pattern = re.compile("|".join(re.escape(s) for s in sorted(_secrets, key=len, reverse=True)))
    sent = [k for k in keep if k]
    return pattern.sub(lambda m: m.group(0) if any(m.group(0) in k for k in sent) else HIDDEN, text)


class ScrubbingFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = scrub(record.getMessage())
        record.args = ()
        return True
