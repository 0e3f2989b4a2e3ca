"""`lakeconnect demo`: the main example job on the embedded default (local Spark, lake under ./lake).

A file becomes a topic and the topic becomes a file again, exactly once, with the offsets visible —
the FileStream pair the book starts with (ch. 3). Each run appends a few lines and moves them along.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from ingest.config.worker import FILE_CONNECTORS_ENABLE, LAKE_ROOT, load_worker
from ingest.errors import StateError


def run_demo(args) -> int:
    from ingest.runtime.worker import Worker

    overrides = {FILE_CONNECTORS_ENABLE: "true"}
    if args.lake:
        overrides[LAKE_ROOT] = args.lake
    worker = Worker(load_worker(args.worker, overrides))
    base = Path(worker.lake_root) / "demo"
    base.mkdir(parents=True, exist_ok=True)
    source_file, sink_file = base / "input.txt", base / "output.txt"
    stamp = dt.datetime.now().isoformat(timespec="seconds")
    with open(source_file, "a", encoding="utf-8") as f:
        for i in range(1, 4):
            f.write(f"line {i} written at {stamp}\n")

    configs = {
        "demo-file-source": {"connector.class": "FileStreamSource", "tasks.max": "1", "file": str(source_file),
                             "topic": "demo-lines"},
        "demo-file-sink": {"connector.class": "FileStreamSink", "tasks.max": "1", "topics": "demo-lines",
                           "file": str(sink_file)},
    }
    for name, config in configs.items():
        config = {"name": name, **config}
        try:
            worker.stores.configs.require(name)
            worker.update(name, config)
        except StateError:
            worker.create(name, config)
    print(f"lake: {worker.lake_root}")
    for name in configs:
        for report in worker.run(name, until_caught_up=True):
            print(f"{name} {report.summary()}")
    print("\nsource offsets (lakeconnect offsets list demo-file-source):")
    print(json.dumps({"offsets": worker.offsets("demo-file-source")}, indent=2))
    print("sink offsets (lakeconnect offsets list demo-file-sink):")
    print(json.dumps({"offsets": worker.offsets("demo-file-sink")}, indent=2))
    lines = sink_file.read_text(encoding="utf-8").splitlines()
    print(f"\n{sink_file} now has {len(lines)} lines; the last ones:")
    for line in lines[-3:]:
        print(f"  {line}")
    return 0
