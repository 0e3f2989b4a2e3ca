"""The error family. Each error says what happened and what to do next.

`ConfigError` and `StateError` are a person's to fix (exit code 2); `RetriableError` may succeed when
tried again (exit code 75, EX_TEMPFAIL, so a scheduler retries only those); `FatalError` needs a person;
`DataError` is one bad record (dead letter queue when tolerated).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass


class LakeConnectError(Exception):
    """Base of every error the runtime raises on purpose."""

    exit_code = 1


@dataclass(frozen=True)
class Problem:
    """One problem with one configuration key (or with the file as a whole when key is None)."""

    key: str | None
    message: str

    def __str__(self) -> str:
        return f"{self.key}: {self.message}" if self.key else self.message


class ConfigError(LakeConnectError):
    """Configuration that cannot be used. Carries every problem found, not just the first."""

    exit_code = 2

    def __init__(self, problems: list[Problem] | str, *, source: str | None = None,
                 warnings: list[Problem] | tuple[Problem, ...] = ()):
        if isinstance(problems, str):
            problems = [Problem(None, problems)]
        self.problems = list(problems)
        self.source = source
        self.warnings = list(warnings)  # what would only have been warned of (keys nobody declares)
        super().__init__(self.render())

    def render(self) -> str:
        where = f" in {self.source}" if self.source else ""
        if len(self.problems) == 1:
            lines = [f"invalid configuration{where}: {self.problems[0]}"]
        else:
            lines = [f"invalid configuration{where}: {len(self.problems)} problems"]
            lines += [f"  - {p}" for p in self.problems]
        lines += [f"  warning: {w}" for w in self.warnings]
        return "\n".join(lines)


class StateError(LakeConnectError):
    """A state table (offsets, configs, status, runs, a topic) is missing, corrupt or inconsistent."""

    exit_code = 2


class ConcurrentRunError(LakeConnectError):
    """Another run of the same connector holds its lease."""

    exit_code = 3


class RetriableError(LakeConnectError):
    """A failure that may go away when the batch is tried again (network, lock conflict, timeout)."""

    exit_code = 75  # EX_TEMPFAIL: schedulers (dags/) retry this code and no other failure


class FatalError(LakeConnectError):
    """A failure that needs a person: the task goes FAILED with this message."""


DATA_EXCEPTION = "org.apache.kafka.connect.errors.DataException"


class DataError(LakeConnectError):
    """One record (or a batch's schema) cannot be converted, transformed or written.

    Its context, for Kafka's error reporting (`errors.*` logs, the dead letter queue's headers): the Java
    exception Kafka would have thrown (`exception_class`), and the stage and class that failed, when the code
    that raises it knows them; a stage adds its own with `in_stage`."""

    def __init__(self, message: str, *, exception_class: str | None = None, stage: str | None = None,
                 executing_class: str | None = None):
        super().__init__(message)
        self.exception_class = exception_class or DATA_EXCEPTION
        self.stage = stage
        self.executing_class = executing_class

    def in_stage(self, stage: str, executing_class: str | None) -> DataError:
        """This error as `stage` (run by `executing_class`) reports it: a copy, the original unchanged."""
        found = copy.copy(self)
        found.stage, found.executing_class = stage, executing_class
        return found


def from_executor(e: BaseException, doing: str) -> LakeConnectError:
    """The error a Spark task raised on an executor (a DataError naming the record, a ConfigError naming
    the key to fix…), without Spark's trace; else the last line of the Python worker's traceback."""
    if isinstance(e, LakeConnectError):
        return e
    text = str(e)
    found = re.findall(r"(?m)^\s*(?:ingest\.errors\.)?(DataError|ConfigError|RetriableError|FatalError|StateError): "
                       r"(.+?)(?: SQLSTATE: \w+)?$", text)
    if found:
        name, message = found[-1]
        cls = globals()[name]
        message = message.strip().removeprefix("invalid configuration: ")
        return ConfigError([Problem(None, message)]) if cls is ConfigError else cls(message)
    last = re.findall(r"(?m)^\s*(\w+(?:Error|Exception)): (.+?)(?: SQLSTATE: \w+)?$", text)
    detail = f"{last[-1][0]}: {last[-1][1]}" if last else (text.strip().splitlines() or [type(e).__name__])[0]
    return LakeConnectError(f"{doing} failed: {detail}")
