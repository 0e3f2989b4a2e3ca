"""The dlt baseline of the JDBC source benchmarks (not a test): ONE run of a dlt pipeline that copies a table of
a SQL database into a Delta table, then exit. This process, start to end, is the command a benchmark times
against `lakeconnect run`.

    .venv-dlt/bin/python tests/bench/dlt_baseline.py --source sqlite:////tmp/x/shop.db --table orders \\
        --incremental id --dest /tmp/x/lake --pipelines-dir /tmp/x/pipelines [--pipeline-name NAME] \\
        [--backend pyarrow|sqlalchemy|connectorx] [--write-disposition append|replace] [--cx-partitions N]

It runs in `.venv-dlt` (`bash tests/services/setup.sh --bench`), never in lakeconnect's `.venv`, and imports
nothing from lakeconnect. What a data engineer would write with dlt (https://dlthub.com) instead of the JDBC
source: dlt's `sql_table` source (SQLAlchemy reflection; rows read by --backend) with
`dlt.sources.incremental(--incremental)` when given, into dlt's `filesystem` destination on the local
directory --dest, as a Delta table (`table_format="delta"`): --dest/<--dataset>/<table>/.

dlt keeps the incremental cursor in the pipeline's state, under --pipelines-dir/<--pipeline-name>/, and
commits it to the destination in the same load as the rows: the next run with the same two arguments reads
only rows past it. Each run also syncs that state with the destination first (dlt's default).

--backend: `pyarrow` (the default; rows read through SQLAlchemy into Arrow tables, which skip dlt's
normalizer on the way to Parquet: dlt's docs recommend it for speed, 20-30x over `sqlalchemy`, which they
call the slowest and recommend for small tables), `sqlalchemy` (Python dicts through dlt's normalizer),
`connectorx` (Rust reads straight into Arrow; dlt's docs call it the fastest, and it ignores the chunk size:
the whole result is one Arrow table). Measured with dlt_check.py --timings (two cores): a poll that finds
nothing new is 0.4-0.5 s faster with `sqlalchemy` (it never imports pyarrow and pandas), 10 new rows take the
same with every backend, and from 10,000 rows on `pyarrow` is faster; so a benchmark of polls should time
both. --cx-partitions N (connectorx only) reads N ranges of the incremental column (or `id`) at once, as
Spark's JDBC reader reads ranges.

The last line printed is one JSON object: rows loaded into the table (from the run's normalize trace),
the load packages, and this process's own wall time (`wall_s`, from before dlt is imported to the end;
`import_s` of it the import of dlt, `run_s` the `pipeline.run` call). dlt's anonymous telemetry is off
(RUNTIME__DLTHUB_TELEMETRY=false unless set): it would call out to the network on every run.
"""

from __future__ import annotations

import time

START = time.perf_counter()

import argparse  # noqa: E402  (after START: the process's own time includes every import)
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

BACKENDS = ("pyarrow", "sqlalchemy", "connectorx")
DISPOSITIONS = ("append", "replace")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", required=True,
                    help="SQLAlchemy URL: sqlite:///PATH or mysql+pymysql://user:pass@127.0.0.1:PORT/db")
    ap.add_argument("--table", required=True, help="the source table; the Delta table gets its name")
    ap.add_argument("--dest", required=True, help="local directory: the filesystem destination's bucket_url")
    ap.add_argument("--pipelines-dir", required=True, help="where dlt keeps the pipeline's state between runs")
    ap.add_argument("--pipeline-name", help="default: dlt_<table>")
    ap.add_argument("--dataset", default="bench", help="dataset name: the folder under --dest (default bench)")
    ap.add_argument("--incremental", metavar="COLUMN",
                    help="cursor column: dlt.sources.incremental(COLUMN); without it, the whole table every run")
    ap.add_argument("--backend", choices=BACKENDS, default="pyarrow", help="sql_table's backend= (default pyarrow)")
    ap.add_argument("--write-disposition", choices=DISPOSITIONS, default="append")
    ap.add_argument("--chunk-size", type=int, default=50_000, help="rows per batch read (sql_table's chunk_size)")
    ap.add_argument("--cx-partitions", type=int, default=0,
                    help="connectorx only: read in N ranges at once (partition_on the cursor column or id)")
    args = ap.parse_args(argv)
    if args.cx_partitions and args.backend != "connectorx":
        ap.error("--cx-partitions needs --backend connectorx")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("RUNTIME__DLTHUB_TELEMETRY", "false")

    t_import = time.perf_counter()
    import dlt
    from dlt.destinations import filesystem
    from dlt.sources.sql_database import sql_table
    import_s = time.perf_counter() - t_import

    backend_kwargs = {}
    if args.cx_partitions:
        backend_kwargs = {"partition_on": args.incremental or "id", "partition_num": args.cx_partitions}
    resource = sql_table(
        credentials=args.source,
        table=args.table,
        backend=args.backend,
        chunk_size=args.chunk_size,
        incremental=dlt.sources.incremental(args.incremental) if args.incremental else None,
        backend_kwargs=backend_kwargs or None,
    )
    pipeline = dlt.pipeline(
        pipeline_name=args.pipeline_name or f"dlt_{args.table}",
        pipelines_dir=args.pipelines_dir,
        destination=filesystem(bucket_url=os.path.abspath(args.dest)),
        dataset_name=args.dataset,
    )
    t_run = time.perf_counter()
    info = pipeline.run(resource, write_disposition=args.write_disposition, table_format="delta")
    run_s = time.perf_counter() - t_run
    info.raise_on_failed_jobs()

    # Rows of the table itself, as dlt's normalize step counted them; none when the run extracted nothing.
    normalize = pipeline.last_trace.last_normalize_info
    counts = normalize.row_counts if normalize is not None else {}
    table = pipeline.default_schema.naming.normalize_table_identifier(args.table)
    print(json.dumps({
        "tool": "dlt", "dlt_version": dlt.__version__, "table": table, "backend": args.backend,
        "write_disposition": args.write_disposition, "incremental": args.incremental,
        "rows": counts.get(table, 0), "load_packages": len(info.loads_ids),
        "import_s": round(import_s, 3), "run_s": round(run_s, 3), "wall_s": round(time.perf_counter() - START, 3),
    }), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
