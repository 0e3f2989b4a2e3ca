"""Kafka's side: the corpus through the oracle harness (tests/oracle/java), one JVM for all of it."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
JARS = Path(os.environ.get("LAKECONNECT_JARS", ROOT / ".jars"))
ORACLE_JAR = JARS / "oracle" / "oracle.jar"
MAIN = "io.lakeconnect.oracle.Oracle"


def missing() -> str | None:
    """Why the oracle cannot run here, or None."""
    if not ORACLE_JAR.is_file():
        return f"{ORACLE_JAR} is missing: run `make setup` (it fetches Kafka Connect's jars and builds the oracle)"
    if not any((JARS / "connect").glob("connect-transforms-*.jar")):
        return f"{JARS / 'connect'} has no Kafka Connect jars: run `make setup`"
    return None


def run(cases: list[dict]) -> dict[str, dict[str, Any]]:
    """Every case's answer from Kafka's classes, by case id."""
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for case in cases:
            f.write(json.dumps(case) + "\n")
    try:
        # UTC: StringConverter and FileStreamSink print dates with java.util.Date.toString (the JVM's zone).
        done = subprocess.run(
            ["java", "-Duser.timezone=UTC", "-Dlog4j2.level=ERROR", "-cp",
             f"{ORACLE_JAR}{os.pathsep}{JARS / 'connect' / '*'}", MAIN, f.name],
            capture_output=True, text=True, timeout=600, check=False)
    finally:
        os.unlink(f.name)
    if done.returncode != 0:
        raise RuntimeError(f"the oracle harness failed ({done.returncode}): {done.stderr[-3000:]}")
    answers = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if len(answers) != len(cases):
        raise RuntimeError(f"the oracle answered {len(answers)} of {len(cases)} cases: {done.stderr[-3000:]}")
    return {a["id"]: a for a in answers}
