#!/usr/bin/env bash
# tests/services/pytest.sh -- the test suite as `make test` runs it (after up.sh), in two parts:
#
# 1. every test but the MySQL CDC ones, on two pytest workers at once (pytest-xdist, `--dist worksteal`):
#    most of the suite's time is crash tests that start one Spark process after another, and two of them
#    overlap well on two cores. LAKECONNECT_TEST_WORKERS sets the number (0: in this process).
# 2. the tests marked `serial` (tests/conftest.py): the MySQL CDC tests, as each batch reads the private
#    MariaDB's binlog up to its end and some restart the server or purge its binlogs, so no other test may
#    write to it meanwhile. They too run on two workers, each with a MariaDB of its own (up.sh starts
#    $LAKECONNECT_MARIADB_INSTANCES of them, default 2; tests/services/fixtures.py hands worker gwN the
#    N+1th). Both parts keep the two cores busy (the serial one measured 1% idle).
#    LAKECONNECT_TEST_SERIAL_WORKERS sets the number (0: in this process, on the first).
#
# The CLI processes of both parts run their Spark in a JVM their test process shares between them
# (tests/shared_jvm.py); LAKECONNECT_TEST_OWN_JVM=1 gives each its own.
#
# Arguments go to both runs (paths, -k, -x, --lf ...). Both parts run even when the first fails; the exit
# status is the first failure's. A part with no test selected (pytest's status 5) counts as passed.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

# The project's own modules compiled once, for the hundreds of processes that import them (CLI runs, Spark's
# Python workers, Airflow's tasks): with PYTHONDONTWRITEBYTECODE set none writes a .pyc, and each compiled
# about 120 modules from source again (0.56 s a process).
.venv/bin/python -m compileall -q -j 0 ingest connectors dags tests >/dev/null || true

workers="${LAKECONNECT_TEST_WORKERS:-2}"
serial_workers="${LAKECONNECT_TEST_SERIAL_WORKERS:-2}"
status=0
.venv/bin/python -m pytest -n "$workers" --dist worksteal -m "not serial" "$@"
first=$?
[ "$first" -eq 5 ] && first=0
LAKECONNECT_TEST_MARIADB_PER_WORKER=1 .venv/bin/python -m pytest -n "$serial_workers" --dist worksteal -m serial "$@"
second=$?
[ "$second" -eq 5 ] && second=0
[ "$first" -ne 0 ] && status=$first || status=$second
exit "$status"
