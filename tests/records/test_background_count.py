"""A source's count of its records (the JDBC range count, the CDC events' count) runs in the background from
the read on; a write waits for it."""

from __future__ import annotations

import threading

import pytest

from ingest.records import counted_in_background


def test_the_result_is_waited_for():
    release = threading.Event()

    def count():
        release.wait(5)
        return (3, None)

    result = counted_in_background(count)
    release.set()
    assert result() == (3, None)
    assert result() == (3, None)


def test_a_failed_count_is_tried_again_by_the_caller_and_its_own_error_raised():
    calls = []

    def count():
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionError(f"try {len(calls)} refused")
        return (5, None)

    result = counted_in_background(count)
    with pytest.raises(ConnectionError, match="try 2 refused"):
        result()  # the background try failed; this one too, with its own error
    assert result() == (5, None)  # a retried write gets a fresh try
    assert len(calls) == 3


def test_wait_only_waits_for_the_background_run_and_never_counts_again():
    release, calls = threading.Event(), []

    def count():
        calls.append(1)
        release.wait(5)
        raise ConnectionError("refused")

    result = counted_in_background(count)
    assert not result.wait(0.05)  # still running
    release.set()
    assert result.wait(5)  # ended (failed), and nothing was tried again
    assert len(calls) == 1
