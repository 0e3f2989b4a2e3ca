"""`GET /metrics`: Kafka Connect's metrics (the book's ch. 9) in Prometheus's text format, computed from real
batches of FileStream connectors and read from a `lakeconnect rest` process as a Prometheus server scrapes it.

prometheus_client is not installed here, so the exposition is checked by a strict parser of the 0.0.4 format.
"""

from __future__ import annotations

import base64
import json
import math
import re
import urllib.error
import urllib.request

from tests.conftest import cli_here, run_here
from tests.rest.test_rest_api import Rest

from ingest.runtime.metrics import RATE_WINDOW, _escape_label

SINK = 'orders "eu" \\ sink'  # a hostile name: a quote and a backslash to escape (control characters are refused)
VALUES = ['{"a":1}', "not json", '{"a":2}', "{broken", '{"a":3}']

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\\\|\\"|\\n)*"'
_SAMPLE = re.compile(rf"({_NAME})(?:\{{((?:{_LABEL})(?:,{_LABEL})*)?\}})? (\S+)")
_LABELS = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\\\|\\"|\\n)*)"')


def parse(text: str) -> dict[str, dict]:
    """The 0.0.4 text format, strictly: every family has one HELP and one TYPE line before its samples, which are
    together; every sample's name is its family's, its labels well escaped and unique, its value a float."""
    assert text.endswith("\n")
    families: dict[str, dict] = {}
    current = None
    for line in text[:-1].split("\n"):
        if line.startswith("# HELP "):
            name, _, help_text = line[7:].partition(" ")
            assert re.fullmatch(_NAME, name) and name not in families, line
            current = families[name] = {"help": help_text, "type": None, "samples": {}}
            continue
        if line.startswith("# TYPE "):
            name, _, kind = line[7:].partition(" ")
            assert current is families.get(name) and current["type"] is None, line
            assert kind in ("counter", "gauge"), line
            assert (kind == "counter") == name.endswith("_total"), line
            current["type"] = kind
            continue
        m = _SAMPLE.fullmatch(line)
        assert m and current is not None and m.group(1) == list(families)[-1] and current["type"], line
        pairs = _LABELS.findall(m.group(2) or "")
        labels = {k: v.replace("\\n", "\n").replace('\\"', '"').replace("\\\\", "\\") for k, v in pairs}
        assert len(labels) == len(pairs), line
        key = tuple(sorted(labels.items()))
        assert key not in current["samples"], f"duplicate series: {line}"
        current["samples"][key] = float(m.group(3))  # NaN, +Inf and numbers; anything else raises
    return families


def value(families: dict[str, dict], name: str, **labels: str) -> float:
    samples = families[name]["samples"]
    return samples[tuple(sorted(labels.items()))]


def _create(worker, tmp_path, config: dict) -> None:
    path = tmp_path / "connector.json"
    path.write_text(json.dumps(config))
    r = cli_here("connectors", "create", str(path), worker=worker)
    assert r.returncode == 0, r.stderr


def _scrape(server: Rest, user: str | None = None) -> tuple[int, str, str]:
    request = urllib.request.Request(server.url + "/metrics")
    if user:
        request.add_header("Authorization", "Basic " + base64.b64encode(user.encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, r.headers["Content-Type"], r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers["Content-Type"], e.read().decode()


def test_metrics_of_real_batches(tmp_path, worker_file):
    source = tmp_path / "source.txt"
    source.write_text("one\ntwo\nthree\n")
    _create(worker_file, tmp_path, {"name": "src", "connector.class": "FileStreamSource", "file": str(source),
                                    "topic": "lines"})
    assert cli_here("topics", "create", "events", "--partitions", "1", worker=worker_file).returncode == 0
    r = cli_here("topics", "produce", "events", worker=worker_file, stdin="".join(v + "\n" for v in VALUES))
    assert r.returncode == 0, r.stderr
    _create(worker_file, tmp_path, {
        "name": SINK, "connector.class": "FileStreamSink", "topics": "events", "file": str(tmp_path / "sink.out"),
        "value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false",
        "errors.tolerance": "all", "errors.deadletterqueue.topic.name": "events-dlq", "errors.log.enable": "true"})
    _create(worker_file, tmp_path, {"name": "idle", "connector.class": "FileStreamSource",
                                    "file": str(tmp_path / "none.txt"), "topic": "idle", "tasks.max": "1",
                                    "database.password": "s3cr3t-in-config"})  # a team's own key, masked

    credentials = tmp_path / "credentials.properties"
    credentials.write_text("kate=w0rd\n")
    server = Rest(worker_file, "--credentials", str(credentials))  # its counters count from its start
    try:
        assert _scrape(server)[0] == 401  # the other routes' basic authentication
        assert _scrape(server, "kate:w0rd")[0] == 200
        run_here(worker_file, "src")
        with open(source, "a") as f:
            f.write("four\nfive\n")
        run_here(worker_file, "src")  # two batches: 3 records, then 2
        run_here(worker_file, SINK)
        status, content_type, text = _scrape(server, "kate:w0rd")
        _, sink_status = server.call("GET", "/connectors/" + urllib.request.quote(SINK, safe="") + "/status",
                                     user="kate:w0rd")
    finally:
        assert "w0rd" not in server.stop()
    assert status == 200, text
    assert content_type == "text/plain; version=0.0.4; charset=utf-8"
    assert "w0rd" not in text and "s3cr3t" not in text and str(source) not in text  # no config value, no secret
    m = parse(text)

    src = {"connector": "src", "task": "0"}
    assert value(m, "kafka_connect_source_task_source_record_poll_total", **src) == 5
    assert value(m, "kafka_connect_source_task_source_record_write_total", **src) == 5
    window = RATE_WINDOW.total_seconds()
    assert math.isclose(value(m, "kafka_connect_source_task_source_record_poll_rate", **src), 5 / window)
    assert math.isclose(value(m, "kafka_connect_source_task_source_record_write_rate", **src), 5 / window)
    assert value(m, "kafka_connect_connector_task_batch_size_max", **src) == 3
    assert value(m, "kafka_connect_connector_task_batch_size_avg", **src) == 2.5
    assert value(m, "kafka_connect_connector_task_status", **src, status="running") == 1
    assert value(m, "kafka_connect_connector_status", connector="src", status="running") == 1
    assert value(m, "kafka_connect_connector_connector_type", connector="src", connector_type="source") == 1
    assert value(m, "kafka_connect_connector_connector_class", connector="src",
                 connector_class="org.apache.kafka.connect.file.FileStreamSourceConnector") == 1
    poll_max = value(m, "kafka_connect_source_task_poll_batch_max_time_ms", **src)
    assert 0 < value(m, "kafka_connect_source_task_poll_batch_avg_time_ms", **src) <= poll_max
    # the batches' own timings, as `connectors status --runs` shows them
    runs = json.loads(cli_here("connectors", "status", "src", "--runs", "5", worker=worker_file).stdout)["runs"]
    commits = [run["timings_ms"]["commit"] for run in runs if run["state"] == "COMMITTED"]
    assert len(commits) == 2
    assert value(m, "kafka_connect_connector_task_offset_commit_max_time_ms", **src) == max(commits)
    assert math.isclose(value(m, "kafka_connect_connector_task_offset_commit_avg_time_ms", **src),
                        sum(commits) / 2)
    assert value(m, "kafka_connect_task_error_total_records_skipped", **src) == 0
    assert value(m, "kafka_connect_task_error_last_error_timestamp", **src) == 0

    snk = {"connector": SINK, "task": "0"}
    assert value(m, "kafka_connect_sink_task_sink_record_read_total", **snk) == 5
    assert math.isclose(value(m, "kafka_connect_sink_task_sink_record_read_rate", **snk), 5 / window)
    assert value(m, "kafka_connect_sink_task_offset_commit_completion_total", **snk) == 1
    assert value(m, "kafka_connect_sink_task_put_batch_max_time_ms", **snk) > 0
    assert value(m, "kafka_connect_task_error_total_record_errors", **snk) == 2
    assert value(m, "kafka_connect_task_error_total_records_skipped", **snk) == 2
    assert value(m, "kafka_connect_task_error_total_errors_logged", **snk) == 2
    assert value(m, "kafka_connect_task_error_deadletterqueue_produce_requests", **snk) == 2
    assert value(m, "kafka_connect_task_error_last_error_timestamp", **snk) > 0
    assert value(m, "kafka_connect_connector_task_status", **snk,
                 status=sink_status["tasks"][0]["state"].lower()) == 1
    # the hostile name, escaped on the wire and read back as it is
    assert 'connector="orders \\"eu\\" \\\\ sink"' in text

    # a connector that never ran: its counts are real zeros, its averages Kafka's NaN (no sample)
    idle = {"connector": "idle", "task": "0"}
    assert value(m, "kafka_connect_source_task_source_record_poll_total", **idle) == 0
    assert math.isnan(value(m, "kafka_connect_source_task_poll_batch_avg_time_ms", **idle))
    assert value(m, "kafka_connect_connector_task_status", **idle, status="unassigned") == 1

    assert value(m, "kafka_connect_worker_connector_count") == 3
    assert value(m, "kafka_connect_worker_task_count") == 3
    assert value(m, "kafka_connect_worker_connector_total_task_count", connector=SINK) == 1
    assert value(m, "kafka_connect_worker_connector_unassigned_task_count", connector="idle") == 1
    # what lakeconnect cannot know is left out, not shown as 0
    for missing in ("kafka_connect_sink_task_sink_record_send_total", "kafka_connect_sink_task_sink_record_lag_max",
                    "kafka_connect_connector_task_running_ratio", "kafka_connect_task_error_total_retries",
                    "kafka_connect_worker_task_startup_attempts_total"):
        assert missing not in m


def test_label_values_are_escaped():
    assert _escape_label('a"b\\c\nd') == 'a\\"b\\\\c\\nd'
    parsed = parse('# HELP x_total h\n# TYPE x_total counter\nx_total{connector="%s"} 1\n' % _escape_label('a"\\\n'))
    assert value(parsed, "x_total", connector='a"\\\n') == 1


def test_counters_count_from_the_start_never_go_down_and_rates_keep_their_window(tmp_path, worker_file):
    """In process, with the clock given: a batch committed before the metrics started is not counted (Kafka's
    counters count from the worker's start), though the rate window holds it; maintenance pruning the runs
    table leaves the counters as they were; a scrape after the window has passed shows rates of 0 and Kafka's NaN averages, the counters unchanged."""
    import datetime as dt

    from ingest.config.worker import load_worker
    from ingest.maintenance import compact_history
    from ingest.runtime.metrics import Metrics
    from ingest.runtime.worker import Worker

    source = tmp_path / "source.txt"
    source.write_text("before\n")
    _create(worker_file, tmp_path, {"name": "src", "connector.class": "FileStreamSource", "file": str(source),
                                    "topic": "lines"})
    run_here(worker_file, "src")
    worker = Worker(load_worker(str(worker_file)))
    metrics = Metrics(worker.stores, worker.registry)
    for lines in ("a\nb\n", "c\n"):
        with open(source, "a") as f:
            f.write(lines)
        run_here(worker_file, "src")
    src = {"connector": "src", "task": "0"}
    now = dt.datetime.now(dt.timezone.utc)
    m = parse(metrics.text(now))
    assert value(m, "kafka_connect_source_task_source_record_poll_total", **src) == 3
    assert value(m, "kafka_connect_connector_task_batch_size_max", **src) == 2
    # the window holds every batch that ended in it, the one before the start too
    assert math.isclose(value(m, "kafka_connect_source_task_source_record_write_rate", **src),
                        4 / RATE_WINDOW.total_seconds())
    assert parse(metrics.text(now)) == m  # a second scrape counts nothing twice

    pruned = compact_history(worker.stores.runs.uri, ["connector", "task"], 2**62, None, runs=True)
    assert pruned and pruned["rows_after"] < pruned["rows_before"]
    assert value(parse(metrics.text(now)), "kafka_connect_source_task_source_record_poll_total", **src) == 3

    later = parse(metrics.text(now + RATE_WINDOW + dt.timedelta(minutes=1)))
    assert value(later, "kafka_connect_source_task_source_record_poll_total", **src) == 3
    assert value(later, "kafka_connect_source_task_source_record_write_rate", **src) == 0
    assert math.isnan(value(later, "kafka_connect_connector_task_batch_size_avg", **src))


def test_a_damaged_stats_row_is_read_without_its_numbers():
    from ingest.runtime.metrics import _parse_stats
    import pyarrow as pa

    rows = _parse_stats(pa.chunked_array([['{"records_read": 3, "timings_ms": {"put": 1.5}}',
                                           '{"records_read": "3", "timings_ms": []}', "not json", None]]))
    assert rows.column("records_read").to_pylist() == [3, None, None, None]
    assert rows.column("timings_ms").to_pylist()[0]["put"] == 1.5
