"""`make setup`'s Maven step (tests/services/fetch_jars.sh) when Maven Central cannot be reached: a clear
message naming what could not be had and what still works, exit 1, and nothing half-fetched left behind."""

from __future__ import annotations

import os
import subprocess

from tests.conftest import REPO

SCRIPT = REPO / "tests" / "services" / "fetch_jars.sh"


def test_an_unreachable_maven_central_is_named_and_nothing_is_half_fetched(tmp_path):
    settings = tmp_path / "settings.xml"
    settings.write_text("""<settings><mirrors><mirror><id>down</id><mirrorOf>*</mirrorOf>
        <url>http://127.0.0.1:1/maven2</url></mirror></mirrors></settings>""")
    jars = tmp_path / "jars"
    env = {**os.environ, "LAKECONNECT_JARS": str(jars),
           "LAKECONNECT_MAVEN_ARGS": f"-s {settings} -Dmaven.repo.local={tmp_path / 'repo'}"}
    r = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Maven could not fetch the test bed's Java artifacts: " in r.stderr
    assert "org.apache.kafka:kafka_2.13:" in r.stderr and "io.debezium:debezium-connector-mysql:" in r.stderr
    assert "127.0.0.1:1" in r.stderr  # where it tried, from Maven's own words
    assert "`make demo` and lakeconnect itself work" in r.stderr and "Maven Central is reachable" in r.stderr
    assert "Traceback" not in r.stderr
    assert not [p for p in jars.iterdir() if p.name != "maven.log"]  # no module directory, no stamp
