"""lakeconnect's Airflow DAGs: one per connector in conf/connectors/ and in the lake's config store.

Point Airflow at this directory (AIRFLOW__CORE__DAGS_FOLDER=<project>/dags). Parsing reads the worker
configuration ($LAKECONNECT_WORKER, else conf/worker.properties), the connector files
($LAKECONNECT_CONNECTORS_DIR, else conf/connectors) and the config store; it never imports Spark. Runs
happen in `python -m ingest` processes of the project's interpreter ($LAKECONNECT_PYTHON, else
.venv/bin/python). See docs/airflow.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

# The project may not be installed in Airflow's environment: its package sits beside this directory.
_PROJECT = str(Path(__file__).resolve().parents[1])
if _PROJECT not in sys.path:
    sys.path.insert(0, _PROJECT)

from ingest.orchestration.airflow_dags import build_dags  # noqa: E402

globals().update(build_dags())
