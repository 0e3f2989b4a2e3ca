"""Kafka Connect's `/admin/loggers` (KIP-495, KIP-976) over Python's logging: the levels of root and of the
`lakeconnect` loggers, read and changed while the process runs (a `lakeconnect worker`'s runs log through them).

As Kafka Connect 4.1's Loggers: a logger's level is its effective one, in log4j's names; setting a namespace
sets it on every logger whose name starts with it (the namespace's own logger created when missing) and
answers the loggers whose level changed; `last_modified` is when this API last changed it (epoch ms). Only
root and `lakeconnect` and the loggers under it can be read or set: a request never names another object.
"""

from __future__ import annotations

import logging
import re
import threading
import time

ROOT = "root"
NAMESPACE = "lakeconnect"
# log4j's levels as Python's: TRACE and ALL below DEBUG, OFF above CRITICAL (nothing is logged at it).
LEVELS = {"OFF": logging.CRITICAL + 1, "FATAL": logging.CRITICAL, "ERROR": logging.ERROR, "WARN": logging.WARNING,
          "INFO": logging.INFO, "DEBUG": logging.DEBUG, "TRACE": 5, "ALL": 1}
MAX_CREATED = 256
"""Loggers this API may create (a PUT of a namespace no logger has yet): Python keeps every logger for good."""
_NAME = re.compile(r"lakeconnect(?:\.[A-Za-z0-9_$-]{1,100}){0,10}")


class LoggerError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


def level_name(level: int) -> str:
    """The log4j name of a Python level (a level between two names takes the lower one)."""
    return next((name for name, value in LEVELS.items() if level >= value), "ALL")


def parse_level(text: str) -> int:
    """The Python level of a log4j level name (any case, spaces around it ignored, as log4j's Level.getLevel)."""
    level = LEVELS.get(text.strip().upper())
    if level is None:
        raise LoggerError(404, f"invalid log level '{text[:100]}'.")
    return level


class Loggers:
    """One process's loggers, changed by one call at a time."""

    def __init__(self):
        self._lock = threading.Lock()
        self._modified: dict[str, int] = {}
        self._created = 0

    def _known(self) -> dict[str, logging.Logger]:
        """Root and the `lakeconnect` loggers that exist, by name."""
        found = {ROOT: logging.getLogger()}
        for name, logger in list(logging.Logger.manager.loggerDict.items()):
            if isinstance(logger, logging.Logger) and (name == NAMESPACE or name.startswith(NAMESPACE + ".")):
                found[name] = logger
        return found

    def _level(self, name: str, logger: logging.Logger) -> dict[str, object]:
        return {"level": level_name(logger.getEffectiveLevel()), "last_modified": self._modified.get(name)}

    def all_levels(self) -> dict[str, dict[str, object]]:
        with self._lock:
            known = self._known()
            return {name: self._level(name, known[name]) for name in sorted(known)}

    def level(self, name: str) -> dict[str, object]:
        with self._lock:
            key = ROOT if name.lower() == ROOT else name
            logger = self._known().get(key)
            if logger is None:
                raise LoggerError(404, f"Logger {name[:200]} not found.")
            return self._level(key, logger)

    def set_level(self, namespace: str, level: int) -> list[str]:
        """Set `namespace` and every logger whose name starts with it; the names whose level changed, sorted."""
        with self._lock:
            known = self._known()
            created = False
            if namespace.lower() == ROOT:
                targets = dict(known)
            else:
                if not _NAME.fullmatch(namespace):
                    raise LoggerError(400, f"Logger {namespace[:200]} cannot be set: only root, {NAMESPACE} and "
                                           f"the loggers under it (dotted names of letters, digits, _, $ and -)")
                targets = {n: lg for n, lg in known.items() if n != ROOT and n.startswith(namespace)}
                created = namespace not in targets
                if created:
                    if self._created >= MAX_CREATED:
                        raise LoggerError(400, f"Logger {namespace} does not exist and {MAX_CREATED} loggers were "
                                               "already created through this API; set an existing one or its parent")
                    self._created += 1
                    targets[namespace] = logging.getLogger(namespace)
            # A logger created now had no level before (Kafka's answer names it even if it inherited this one).
            before = {n: "" if n == namespace and created else level_name(lg.getEffectiveLevel())
                      for n, lg in targets.items()}
            for logger in targets.values():
                logger.setLevel(level)
            now_ms = int(time.time() * 1000)
            changed = sorted(n for n in targets if before[n] != level_name(level))
            for name in changed:
                self._modified[name] = now_ms
            return changed
