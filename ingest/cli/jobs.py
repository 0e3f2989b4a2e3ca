"""`export job` (a connector as a Databricks job definition) and `signal` (Debezium's ad-hoc signals)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ingest.api import Signallable
from ingest.errors import ConfigError, Problem


def _spec(args, name: str):
    """The connector as the config store has it (a connector file is not enough: the job runs the stored one)."""
    from ingest.runtime.worker import Worker
    from ingest.orchestration.specs import ConnectorSpec

    worker = Worker.load(args.worker)
    found = worker.stores.configs.require(name)
    return worker, ConnectorSpec(name, {str(k): str(v) for k, v in found["config"].items()}, None,
                                 found["target_state"])


def cmd_export_job(args) -> int:
    from ingest import __version__
    from ingest.orchestration.databricks import job_definition
    from ingest.orchestration.specs import schedule_problem

    _, spec = _spec(args, args.name)
    problem = schedule_problem(spec)
    if problem:
        raise ConfigError([Problem("lakeconnect.schedule", problem)], source=f"connector '{args.name}'")
    wheel = args.wheel or f"/Workspace/Shared/lakeconnect/lakeconnect-{__version__}-py3-none-any.whl"
    job, notes = job_definition(spec, wheel=wheel, worker=args.worker_path,
                                existing_cluster_id=args.existing_cluster_id, spark_version=args.spark_version,
                                node_type_id=args.node_type_id, num_workers=args.num_workers,
                                until_caught_up=not args.one_batch)
    text = json.dumps(job, indent=2) + "\n"
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"Wrote the Databricks job for connector {args.name} to {args.out} "
              f"(create it with: databricks jobs create --json @{args.out})")
    else:
        sys.stdout.write(text)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    return 0


def cmd_signal(args) -> int:
    worker, spec = _spec(args, args.name)
    tables = [t.strip() for t in args.incremental_snapshot.split(",") if t.strip()]
    if not tables:
        raise ConfigError([Problem(None, "--incremental-snapshot needs at least one <db>.<table>")])
    setup = worker.validate(spec.config, source=f"connector '{args.name}'")
    connector = setup.connector()
    if not isinstance(connector, Signallable):
        raise ConfigError([Problem("connector.class", f"connector '{args.name}' ({setup.info.name}) takes no "
                                                      "signals; incremental snapshots are for MySQL CDC connectors "
                                                      "(MySqlConnector with signal.data.collection)")])
    signal_id = connector.send_signal("execute-snapshot", tables)
    print(f"Signal {signal_id} (execute-snapshot of {', '.join(tables)}) written; the next runs of {args.name} "
          "take the snapshot")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    e = sub.add_parser("export", help="a connector as another scheduler's job").add_subparsers(
        dest="action", metavar="WHAT", required=True)
    p = e.add_parser("job", help="a Databricks job definition (Jobs API 2.1 JSON): one wheel task per task")
    p.add_argument("name")
    p.add_argument("--out", metavar="FILE", help="write the JSON here (default: stdout)")
    p.add_argument("--wheel", help="the lakeconnect wheel's location in the workspace (a Volume or workspace path); "
                                   "default /Workspace/Shared/lakeconnect/lakeconnect-<version>-py3-none-any.whl")
    p.add_argument("--worker-path", help="the worker configuration's path as the job sees it (passed as --worker)")
    p.add_argument("--existing-cluster-id", help="run on this cluster instead of a new job cluster")
    p.add_argument("--spark-version", default="17.3.x-scala2.13", help="the job cluster's runtime")
    p.add_argument("--node-type-id", default="i3.xlarge", help="the job cluster's node type")
    p.add_argument("--num-workers", type=int, default=1)
    p.add_argument("--one-batch", action="store_true", help="each run does one batch, not until caught up")
    p.set_defaults(func=cmd_export_job)

    p = sub.add_parser("signal", help="send a connector a signal (MySQL CDC: an ad-hoc incremental snapshot)")
    p.add_argument("name")
    p.add_argument("--incremental-snapshot", metavar="TABLES", required=True,
                   help="comma-separated <db>.<table> names to snapshot again, in chunks, beside the binlog")
    p.set_defaults(func=cmd_signal)
