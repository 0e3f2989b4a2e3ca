"""The test harness's shared Spark JVM (tests/shared_jvm.py) behaves, for a CLI process, like a JVM of its
own: a crash asked of the process reaches Spark's Python workers, and once the process has ended its
SparkContext is gone, so the next process starts a fresh one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ingest.runtime import faults
from ingest.spark import spark_conf
from tests.conftest import REPO, write_worker
from tests.shared_jvm import SharedJvms


def test_a_crash_spec_goes_to_the_python_workers_through_spark_settings(monkeypatch):
    monkeypatch.setenv(faults.CRASH_ENV, "upload:2")
    monkeypatch.setenv(faults.DRIVER_ENV, "4242")
    conf = spark_conf({})
    assert conf["spark.executorEnv.LAKECONNECT_CRASH_AT"] == "upload:2"
    assert conf["spark.executorEnv.LAKECONNECT_DRIVER_PID"] == "4242"
    monkeypatch.delenv(faults.CRASH_ENV)
    monkeypatch.delenv(faults.DRIVER_ENV)
    assert not any(k.startswith("spark.executorEnv.") for k in spark_conf({}))


# A driver process that uses the shared JVM, sees the crash step in its Python workers, and dies without
# stopping its SparkContext (os._exit, as a kill at a step does).
DRIVER = """
import os, sys
from ingest.spark import get_spark
spark = get_spark({"spark.master": "local[1]"})
seen = spark.range(1).rdd.map(lambda _: os.environ.get("LAKECONNECT_CRASH_AT")).collect()
print("app", spark.sparkContext.applicationId, "seen", seen[0], flush=True)
os._exit(0)
"""


def test_each_process_gets_a_fresh_spark_context_in_the_same_jvm(tmp_path: Path):
    jvms = SharedJvms(tmp_path / "logs", REPO)
    worker = write_worker(tmp_path / "worker.properties", tmp_path / "lake")
    env = {k: v for k, v in os.environ.items() if k != faults.CRASH_ENV}
    apps = []
    try:
        for step in ("write", "plan"):
            jvm = jvms.lease(worker, env)
            done = subprocess.run([sys.executable, "-c", DRIVER], cwd=REPO, capture_output=True, text=True,
                                  timeout=300, env={**env, **jvm.env(), faults.CRASH_ENV: step})
            jvm.reset()
            assert done.returncode == 0, done.stderr
            app, seen = done.stdout.split()[1], done.stdout.split()[3]
            assert seen == step  # the driver's crash step, in a Python worker the shared JVM started
            apps.append((jvm.proc.pid, app))
        assert apps[0][0] == apps[1][0]  # one JVM
        assert apps[0][1] != apps[1][1]  # two SparkContexts: the first was stopped when its process ended
    finally:
        jvms.close()
