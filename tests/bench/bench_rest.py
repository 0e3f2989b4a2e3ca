"""Benchmark of the REST API's server (not a test): calls per second and latency of `lakeconnect rest` with
several clients at once.

    PYTHONPATH=. .venv/bin/python tests/bench/bench_rest.py [--clients 8] [--seconds 10] [--project DIR]

It creates `--connectors` FileStream source connectors in a temporary lake, starts `python -m ingest rest`
from `--project` (default: this checkout; give another checkout to compare two versions of the server on the
same machine in the same run), and for `--seconds` lets `--clients` threads each call, over one kept-alive
connection, GET /connectors/{name}/status of connectors in turn, then GET /connectors?expand=status. It prints
calls/s and the median and 99th-percentile latency of each.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _worker(base: Path) -> Path:
    worker = base / "worker.properties"
    worker.write_text(f"lake.root={base / 'lake'}\nfile.connectors.enable=true\n"
                      "key.converter=org.apache.kafka.connect.storage.StringConverter\n"
                      "value.converter=org.apache.kafka.connect.storage.StringConverter\n")
    return worker


def _load(url: str, paths: list[str], clients: int, seconds: float) -> tuple[int, list[float]]:
    host, port = url.removeprefix("http://").split(":")
    latencies: list[float] = []
    count = [0]
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def client(offset: int) -> None:
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        mine, i = [], offset
        while time.monotonic() < stop:
            started = time.perf_counter()
            conn.request("GET", paths[i % len(paths)], headers={"Host": f"127.0.0.1:{port}"})
            response = conn.getresponse()
            response.read()
            assert response.status == 200, response.status
            mine.append(time.perf_counter() - started)
            i += 1
        conn.close()
        with lock:
            latencies.extend(mine)
            count[0] += len(mine)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return count[0], latencies


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--connectors", type=int, default=8)
    ap.add_argument("--project", type=Path, default=REPO)
    args = ap.parse_args()

    base = Path(tempfile.mkdtemp(prefix="lakeconnect-bench-rest-"))
    worker = _worker(base)
    python = args.project / ".venv" / "bin" / "python"
    command = [str(python if python.exists() else sys.executable), "-m", "ingest", "--worker", str(worker), "rest",
               "--listen", "http://127.0.0.1:0"]
    server = subprocess.Popen(command, cwd=args.project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        url = line.split("listening on ")[1].split()[0]
        host, port = url.removeprefix("http://").split(":")
        names = [f"bench-{i}" for i in range(args.connectors)]
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        for name in names:
            body = json.dumps({"name": name, "config": {"connector.class": "FileStreamSource",
                                                        "file": str(base / f"{name}.txt"), "topic": name}})
            conn.request("POST", "/connectors", body, {"Content-Type": "application/json"})
            response = conn.getresponse()
            response.read()
            assert response.status == 201, response.status
        conn.close()
        print(f"server: {args.project} ({args.clients} clients, {args.seconds:g} s each)")
        for label, paths in (("GET /connectors/{name}/status", [f"/connectors/{n}/status" for n in names]),
                             ("GET /connectors?expand=status", ["/connectors?expand=status"])):
            _load(url, paths, args.clients, 1)  # warm-up
            count, latencies = _load(url, paths, args.clients, args.seconds)
            latencies.sort()
            p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
            print(f"{label:32} {count / args.seconds:8.1f} calls/s  median {statistics.median(latencies) * 1000:7.1f}"
                  f" ms  p99 {p99 * 1000:7.1f} ms")
    finally:
        server.terminate()
        server.communicate(timeout=30)


if __name__ == "__main__":
    main()
