"""A command whose Spark JVM dies under it (local mode: an OutOfMemoryError ends the JVM) says so, with the
setting to raise, instead of the lost bridge's `Connection refused`."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.conftest import REPO

SCRIPT = textwrap.dedent("""
    import os, signal, sys
    from ingest import cli
    from ingest.spark import get_spark, jvm_exited

    spark = get_spark({"spark.master": "local[1]"})
    assert jvm_exited() is None
    proc = spark.sparkContext._gateway.proc
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()

    def command(args):  # a command's next call into the JVM
        return spark.range(3).count()

    class Parser:
        def parse_args(self, argv):
            import argparse
            return argparse.Namespace(func=command, debug=False)
    cli.build_parser = Parser
    sys.exit(cli.main([]))
""")


def test_a_dead_jvm_is_named_with_the_setting_to_raise(tmp_path):
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert r.returncode == 1, r.stderr
    assert "the Spark driver's JVM stopped (exit status -9)" in r.stderr, r.stderr
    assert "raise spark.driver.memory in the worker config" in r.stderr
    assert "unexpected failure" not in r.stderr
