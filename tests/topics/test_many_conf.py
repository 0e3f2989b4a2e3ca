"""The SQL settings `append_topics` takes for its job (`ingest.topics.many._conf`) on a session that runs on
several threads: while any job holds them they hold, and when the last ends the session has its own back."""

from __future__ import annotations

import random
import threading
import time

import pytest

from ingest.topics import many

KEYS = (many.WHOLE_STAGE_CODEGEN, many.UNION_OUTPUT_PARTITIONING)
TEMPORARY = {many.WHOLE_STAGE_CODEGEN: "false", many.UNION_OUTPUT_PARTITIONING: "false"}


@pytest.fixture
def settings(spark):
    """The session's own values of KEYS for the test, one set and one unset; as before the test afterwards."""
    before = _values(spark)
    spark.conf.set(many.WHOLE_STAGE_CODEGEN, "true")  # set: restored by a set
    spark.conf.unset(many.UNION_OUTPUT_PARTITIONING)  # unset: restored by an unset
    yield _values(spark)
    for key, value in before.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)


def _values(spark) -> dict[str, str | None]:
    return {key: spark.conf.get(key, None) for key in KEYS}


def _run_in_thread(target) -> tuple[threading.Thread, list]:
    errors: list[BaseException] = []

    def run():
        try:
            target()
        except BaseException as e:  # collected, asserted on by the test
            errors.append(e)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, errors


def test_two_overlapping_jobs_leave_the_session_as_it_was(spark, settings):
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def job_a():
        with many._conf(spark, TEMPORARY):
            a_in.set()
            assert b_in.wait(30)
        a_out.set()

    def job_b():
        assert a_in.wait(30)
        with many._conf(spark, TEMPORARY):  # A's temporary values are what it finds
            b_in.set()
            assert a_out.wait(30)
            seen["b after a"] = _values(spark)  # A is done, B's job still runs: still B's values

    (ta, ea), (tb, eb) = _run_in_thread(job_a), _run_in_thread(job_b)
    ta.join(60)
    tb.join(60)
    assert not ea and not eb
    assert seen["b after a"] == TEMPORARY
    assert _values(spark) == settings and not many._HELD


def test_many_threads_entering_and_leaving_at_random_leave_the_session_as_it_was(spark, settings):
    def jobs(seed):
        rng = random.Random(seed)
        for _ in range(15):
            with many._conf(spark, TEMPORARY):
                time.sleep(rng.random() / 200)
                assert _values(spark) == TEMPORARY
            time.sleep(rng.random() / 400)

    started = [_run_in_thread(lambda s=s: jobs(s)) for s in range(4)]
    for thread, _ in started:
        thread.join(120)
    assert not [e for _, errors in started for e in errors]
    assert _values(spark) == settings and not many._HELD


def test_a_job_wanting_another_value_waits_for_the_setting_to_be_free(spark, settings):
    holding, release = threading.Event(), threading.Event()
    seen = []

    def first():
        with many._conf(spark, {many.WHOLE_STAGE_CODEGEN: "false"}):
            holding.set()
            assert release.wait(30)
            seen.append(("first", spark.conf.get(many.WHOLE_STAGE_CODEGEN)))

    def second():
        assert holding.wait(30)
        with many._conf(spark, {many.WHOLE_STAGE_CODEGEN: "true"}):
            seen.append(("second", spark.conf.get(many.WHOLE_STAGE_CODEGEN)))

    (t1, e1), (t2, e2) = _run_in_thread(first), _run_in_thread(second)
    assert holding.wait(30)
    time.sleep(0.2)
    assert seen == []  # the second waits
    release.set()
    t1.join(60)
    t2.join(60)
    assert not e1 and not e2
    assert seen == [("first", "false"), ("second", "true")]
    assert _values(spark) == settings and not many._HELD


def test_a_failing_job_gives_the_settings_back(spark, settings):
    with pytest.raises(RuntimeError):
        with many._conf(spark, TEMPORARY):
            raise RuntimeError("the job failed")
    assert _values(spark) == settings and not many._HELD
