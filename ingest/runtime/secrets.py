"""Keeping secrets out of logs, status traces, errors and run history.

Every secret a run knows — PASSWORD-typed values and values that came from a config provider — is
registered with the scrubber, which replaces it with `[hidden]` in any text that leaves the process.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from ingest.config.configdef import HIDDEN, Config, Password, is_secret_key, url_passwords

_secrets: set[str] = set()


def register(values: Iterable[str | None]) -> None:
    for v in values:
        if v and len(v) >= 3:  # shorter strings would blank out ordinary words
            _secrets.add(v)


def register_config(resolved: Config, raw: Mapping[str, str]) -> None:
    """Secrets of a validated connector config: PASSWORD keys, secret-looking keys, resolved references."""
    found = []
    for key, value in resolved.originals.items():
        plain = value.value if isinstance(value, Password) else value
        if not isinstance(plain, str):
            continue
        if is_secret_key(key, resolved.definition) or raw.get(key) != plain:
            found.append(plain)
        else:
            found.extend(url_passwords(plain))
    register(found)


def scrub(text: str | None) -> str | None:
    if not text:
        return text
    for s in sorted(_secrets, key=len, reverse=True):
        text = text.replace(s, HIDDEN)
    return text


class ScrubbingFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = scrub(record.getMessage())
        record.args = ()
        return True
