"""errors.retry.timeout / errors.retry.delay.max.ms: Kafka's RetryWithToleranceOperator backoff."""

import pytest

from ingest.errors import DataError, RetriableError
from ingest.runtime.tolerance import ErrorPolicy


class Flaky:
    def __init__(self, failures: int, error=RetriableError):
        self.failures, self.calls, self.error = failures, 0, error

    def __call__(self):
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error(f"attempt {self.calls} failed")
        return "ok"


def test_no_retries_by_default():
    op, slept = Flaky(1), []
    with pytest.raises(RetriableError):
        ErrorPolicy().retrying(op, "TASK_PUT", "put", sleep=slept.append)
    assert op.calls == 1 and slept == []


def test_backoff_doubles_from_300ms_and_is_capped(monkeypatch):
    op, slept = Flaky(4), []
    policy = ErrorPolicy(retry_timeout_ms=-1, retry_delay_max_ms=1000)  # -1: retry forever
    assert policy.retrying(op, "TASK_PUT", "put", sleep=slept.append) == "ok"
    assert slept == [0.3, 0.6, 1.0, 1.0]


def test_gives_up_when_the_next_wait_would_pass_the_timeout():
    op, slept = Flaky(100), []
    policy = ErrorPolicy(retry_timeout_ms=1000, retry_delay_max_ms=60000)
    with pytest.raises(RetriableError, match="errors.retry.timeout=1000"):
        policy.retrying(op, "TASK_PUT", "put", sleep=slept.append)
    assert slept == [0.3, 0.6]  # 0.3 + 0.6 + 1.2 would pass 1 s


def test_only_retriable_errors_are_retried():
    op, slept = Flaky(1, DataError), []
    with pytest.raises(DataError):
        ErrorPolicy(retry_timeout_ms=-1).retrying(op, "TRANSFORMATION", "t", sleep=slept.append)
    assert op.calls == 1
