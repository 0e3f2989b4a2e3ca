"""`lakeconnect topics produce|consume` and Kafka's console tools' `--property` settings.

The parsing and printing are compared with Kafka's own classes, run by these tests: Kafka 4.1's
org.apache.kafka.tools.LineMessageReader (kafka-console-producer's line reader) and
org.apache.kafka.tools.consumer.DefaultMessageFormatter (kafka-console-consumer's printer), from the test bed's
kafka-tools jar (.jars/broker), over the cases of tests/topics/console_cases.json, through the small harness
tests/topics/java/ConsoleOracle.java (compiled here, one JVM for every case). The CLI tests then run the commands
over real topic tables.
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from ingest.cli.console import (
    FORMATTER_PROPERTIES, READER_PROPERTIES, ConsumedRecord, LineReader, RecordFormatter, read_lines,
    tool_properties,
)
from ingest.errors import ConfigError, DataError
from ingest.topics import TopicTable
from tests.conftest import cli, cli_here, write_worker

HERE = Path(__file__).parent
ORACLE = json.loads((HERE / "console_cases.json").read_text())
JARS = Path(os.environ.get("LAKECONNECT_JARS", HERE.parents[1] / ".jars")) / "broker"


@pytest.fixture(scope="module")
def kafka_tools(tmp_path_factory):
    """What Kafka's classes do with every case: {"reader": {name: answer}, "formatter": {name: base64 bytes}}."""
    if not any(JARS.glob("kafka-tools-[0-9]*.jar")):
        pytest.fail(f"{JARS} has no kafka-tools jar: run `make setup`", pytrace=False)  # never a skip
    work = tmp_path_factory.mktemp("console-oracle")
    cases = work / "cases.json"
    cases.write_text(json.dumps(ORACLE))
    classpath = f"{JARS}/*"
    subprocess.run(["javac", "-nowarn", "-d", str(work), "-cp", classpath, str(HERE / "java" / "ConsoleOracle.java")],
                   check=True, capture_output=True, timeout=300)
    done = subprocess.run(["java", "-cp", f"{work}{os.pathsep}{classpath}",
                           "org.apache.kafka.tools.consumer.ConsoleOracle", str(cases)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    answered = json.loads(cases.read_text())
    return {kind: {c["name"]: c["kafka"] for c in answered[kind]} for kind in ("reader", "formatter")}
KNOWN_READER = ("parse.key, key.separator, parse.headers, headers.delimiter, headers.separator, "
                "headers.key.separator, null.marker, ignore.error")


def _pairs(props: dict[str, str]) -> list[str]:
    return [f"{k}={v}" for k, v in props.items()]


def _text(b: bytes | None) -> str | None:
    return None if b is None else b.decode()


@pytest.mark.parametrize("case", ORACLE["reader"], ids=[c["name"] for c in ORACLE["reader"]])
def test_lines_are_read_as_kafkas_line_reader_reads_them(case, kafka_tools):
    kafka = kafka_tools["reader"][case["name"]]
    try:
        reader = LineReader(tool_properties(READER_PROPERTIES, _pairs(case["props"]), "kafka-console-producer"))
    except ConfigError as e:
        assert kafka.get("error") and not kafka["records"], f"Kafka accepted the properties; we said {e}"
        assert kafka["error"] in str(e)
        return
    records, error = [], None
    for number, line in enumerate(read_lines(io.StringIO(case["input"])), 1):
        try:
            r = reader.parse(line, number)
        except DataError as e:
            error = str(e)
            break
        records.append({"key": _text(r.key), "value": _text(r.value),
                        "headers": [[k, _text(v)] for k, v in r.headers or []]})
    assert records == kafka["records"]
    if "error" in kafka:
        assert error is not None and error.startswith(kafka["error"]), (error, kafka["error"])
    else:
        assert error is None


@pytest.mark.parametrize("case", ORACLE["formatter"], ids=[c["name"] for c in ORACLE["formatter"]])
def test_records_are_printed_byte_for_byte_as_kafkas_formatter_prints_them(case, kafka_tools):
    r = case["record"]
    enc = (lambda s: None if s is None else s.encode())
    formatter = RecordFormatter(tool_properties(FORMATTER_PROPERTIES, _pairs(case["props"]), "kafka-console-consumer"))
    got = formatter.format(ConsumedRecord(r["partition"], r["offset"], r["timestamp"], r["timestamp_type"],
                                          enc(r["key"]), enc(r["value"]), [(k, enc(v)) for k, v in r["headers"]]))
    assert got == base64.b64decode(kafka_tools["formatter"][case["name"]])


def test_every_property_is_covered_by_the_cases():
    reader = {k for c in ORACLE["reader"] for k in c["props"]}
    formatter = {k for c in ORACLE["formatter"] for k in c["props"]}
    assert reader == set(READER_PROPERTIES.keys)
    assert formatter == set(FORMATTER_PROPERTIES.keys)


def test_escapes_in_a_property_are_unescaped_and_other_characters_kept():
    props = tool_properties(READER_PROPERTIES, ["key.separator=\\t|", "null.marker=nul é✓"], "kafka-console-producer")
    assert (props["key.separator"], props["null.marker"]) == ("\t|", "nul é✓")
    with pytest.raises(ConfigError, match=r"--property key.separator: a backslash escape that names no character"):
        tool_properties(READER_PROPERTIES, ["key.separator=a\\"], "kafka-console-producer")


# --- the commands over real topic tables -------------------------------------------------------------------


def _records(lake: Path, topic: str) -> list[dict]:
    rows = TopicTable(str(lake), topic).read().orderBy("partition", "offset").collect()
    return [{"key": _text(r["key"]), "value": _text(r["value"]),
             "headers": [(h["key"], _text(h["value"])) for h in r["headers"] or []]} for r in rows]


def test_the_books_tombstone_command_writes_a_null_value(worker_file, lake):
    # Kafka Connect book, ch. 7: kafka-console-producer ... --property parse.key=true --property key.separator=,
    # --property null.marker=NULL, then `key1,NULL`
    done = cli_here("topics", "produce", "orders", "--property", "parse.key=true", "--property", "key.separator=,",
                    "--property", "null.marker=NULL", worker=worker_file, stdin="key1,value1\nkey1,NULL\n")
    assert done.returncode == 0, done.stderr
    assert _records(lake, "orders") == [{"key": "key1", "value": "value1", "headers": []},
                                        {"key": "key1", "value": None, "headers": []}]


def test_headers_and_ignore_error_reach_the_topic(worker_file, lake):
    done = cli_here("topics", "produce", "h", "--property", "parse.headers=true", "--property", "parse.key=true",
                    "--property", "ignore.error=true", "--property", "null.marker=-", worker=worker_file,
                    stdin="a:1,b:-\tk\tv\n-\tk2\tv2\nno delimiter\n")
    assert done.returncode == 0, done.stderr
    assert _records(lake, "h") == [{"key": "k", "value": "v", "headers": [("a", "1"), ("b", None)]},
                                   {"key": "k2", "value": "v2", "headers": []},
                                   {"key": None, "value": "no delimiter", "headers": []}]


def test_a_malformed_line_is_named_and_nothing_is_written(worker_file, lake):
    done = cli_here("topics", "produce", "bad", "--property", "parse.key=true", worker=worker_file,
                    stdin="k1\tv1\nno separator\nk3\tv3\nh\n")
    assert done.returncode == 2
    assert "No key separator found on line number 2: 'no separator'" in done.stderr
    assert "line number 4: 'h'" in done.stderr
    assert "nothing was written" in done.stderr
    assert not TopicTable(str(lake), "bad").exists()  # not even created


def test_an_unknown_property_is_refused_with_the_known_ones(worker_file, lake):
    done = cli_here("topics", "produce", "typo", "--property", "parse.keys=true", worker=worker_file, stdin="k\tv\n")
    assert done.returncode == 2
    assert done.stderr.strip() == ("error: invalid configuration: --property parse.keys: an unknown property of "
                                   "kafka-console-producer (Kafka's would ignore it silently); the known ones "
                                   f"are {KNOWN_READER}")
    assert not TopicTable(str(lake), "typo").exists()
    done = cli_here("topics", "consume", "typo", "--property", "print.keys=true", worker=worker_file)
    assert done.returncode == 2
    assert "--property print.keys: an unknown property of kafka-console-consumer" in done.stderr
    assert "print.timestamp, print.partition, print.offset" in done.stderr


def test_kafkas_own_checks_of_the_separators_are_made(worker_file, lake):
    done = cli_here("topics", "produce", "t", "--property", "parse.key=true", "--property", "key.separator=,",
                    "--property", "null.marker=,", worker=worker_file, stdin="a,b\n")
    assert done.returncode == 2 and "null.marker and key.separator may not be equal" in done.stderr
    assert not TopicTable(str(lake), "t").exists()


@pytest.fixture
def printed(worker_file, lake):
    """Topic `p` of two partitions: k1 (headers h1:v1 and h2 null), k2 (a null value), k3, wherever their keys
    put them; the worker and its records' (partition, offset, key), in the order consume prints them."""
    assert cli_here("topics", "create", "p", "--partitions", "2", worker=worker_file).returncode == 0
    done = cli_here("topics", "produce", "p", "--property", "parse.headers=true", "--property", "parse.key=true",
                    "--property", "null.marker=-", "--property", "ignore.error=true", worker=worker_file,
                    stdin="h1:v1,h2:-\tk1\tv1\n-\tk2\t-\n-\tk3\tv3\n")
    assert done.returncode == 0, done.stderr
    rows = TopicTable(str(lake), "p").read().orderBy("partition", "offset").collect()
    return worker_file, [(r["partition"], r["offset"], _text(r["key"])) for r in rows]


def _consume(worker, *args: str) -> str:
    done = cli_here("topics", "consume", "p", "--from-beginning", *args, worker=worker)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_consume_prints_each_property_as_kafka_does(printed):
    printed, rows = printed
    assert len({p for p, _, _ in rows}) == 2, rows  # the keys land in both partitions
    order = [k for _, _, k in rows]  # consume prints partition by partition, offset by offset
    where = {k: (p, o) for p, o, k in rows}
    value = {"k1": "v1", "k2": "null", "k3": "v3"}
    headers = {"k1": "h1:v1,h2:null", "k2": "NO_HEADERS", "k3": "NO_HEADERS"}
    assert _consume(printed).splitlines() == [value[k] for k in order]
    assert _consume(printed, "--property", "print.key=true").splitlines() == [f"{k}\t{value[k]}" for k in order]
    assert _consume(printed, "--property", "print.partition=true").splitlines() == [
        f"Partition:{where[k][0]}\t{value[k]}" for k in order]
    assert _consume(printed, "--property", "print.offset=true").splitlines() == [
        f"Offset:{where[k][1]}\t{value[k]}" for k in order]
    assert _consume(printed, "--property", "print.headers=true").splitlines() == [
        f"{headers[k]}\t{value[k]}" for k in order]
    stamped = _consume(printed, "--property", "print.timestamp=true").splitlines()
    assert all(re.fullmatch(r"CreateTime:1\d{12}\t" + re.escape(value[k]), line) for k, line in zip(order, stamped))
    assert _consume(printed, "--property", "print.value=false", "--property", "print.key=true") == \
        "".join(f"{k}\n" for k in order)
    assert _consume(printed, "--property", "print.key=true", "--property", "key.separator=|", "--property",
                    "line.separator=;", "--property", "null.literal=NIL") == "".join(
        f"{k}|{'NIL' if value[k] == 'null' else value[k]};" for k in order)
    assert _consume(printed, "--property", "print.headers=true", "--property", "headers.separator= & ",
                    "--property", "print.value=false").splitlines() == [headers[k].replace(",", " & ") for k in order]


def test_max_messages_stops_as_kafkas_loop_does(printed):
    printed, _ = printed
    done = cli_here("topics", "consume", "p", "--from-beginning", "--max-messages", "2", worker=printed)
    assert done.returncode == 0 and len(done.stdout.splitlines()) == 2
    assert "Processed a total of 2 messages" in done.stderr
    for limit, lines in (("0", 0), ("-1", 3), ("-5", 0), ("10", 3)):
        done = cli_here("topics", "consume", "p", "--from-beginning", "--max-messages", limit, worker=printed)
        assert done.returncode == 0 and len(done.stdout.splitlines()) == lines, (limit, done.stdout)


def test_a_group_starts_where_it_committed(printed):
    printed, _ = printed
    first = cli_here("topics", "consume", "p", "--group", "g1", "--from-beginning", "--max-messages", "2",
                     "--property", "print.key=true", worker=printed)
    assert first.returncode == 0 and len(first.stdout.splitlines()) == 2
    rest = cli_here("topics", "consume", "p", "--group", "g1", "--property", "print.key=true", worker=printed)
    assert rest.returncode == 0 and len(rest.stdout.splitlines()) == 1
    assert sorted(first.stdout.splitlines() + rest.stdout.splitlines()) == ["k1\tv1", "k2\tnull", "k3\tv3"]
    again = cli_here("topics", "consume", "p", "--group", "g1", "--from-beginning", worker=printed)
    assert again.stdout == "" and "Processed a total of 0 messages" in again.stderr  # committed: not from the start
    # without --from-beginning a new group starts at the end, and commits it there
    assert cli_here("topics", "consume", "p", "--group", "g2", worker=printed).stdout == ""
    assert cli_here("topics", "consume", "p", "--group", "g2", "--from-beginning", worker=printed).stdout == ""
    refused = cli_here("topics", "consume", "p", "--group", "g3", "--partition", "0", worker=printed)
    assert refused.returncode == 2 and "--group: cannot be given with --partition" in refused.stderr


def test_a_real_process_prints_what_the_formatter_writes(printed):
    printed, rows = printed
    p, o, k = rows[0]
    done = cli("topics", "consume", "p", "--from-beginning", "--max-messages", "1", "--property", "print.key=true",
               "--property", "print.offset=true", "--property", "print.partition=true", "--property",
               "print.headers=true", "--property", "line.separator=;", worker=printed)
    assert done.returncode == 0, done.stderr
    headers = {"k1": "h1:v1,h2:null"}.get(k, "NO_HEADERS")
    value = {"k1": "v1", "k2": "null", "k3": "v3"}[k]
    assert done.stdout == f"Partition:{p}\tOffset:{o}\t{headers}\t{k}\t{value};"


def test_on_a_kafka_cluster_the_tombstone_is_kafkas_and_the_group_is_kafkas_own(kafka, tmp_path):
    from confluent_kafka import Consumer, TopicPartition

    topic, group = kafka.unique_topic("console"), kafka.unique_topic("console-group")
    kafka.create_topic(topic, 1)
    (tmp_path / "lake").mkdir()
    worker = write_worker(tmp_path / "worker.properties", tmp_path / "lake", **{
        "topic.backend": "kafka", "kafka.bootstrap.servers": kafka.bootstrap})
    done = cli_here("topics", "produce", topic, "--property", "parse.key=true", "--property", "key.separator=,",
                    "--property", "null.marker=NULL", "--property", "parse.headers=true", "--property",
                    "headers.delimiter=|", worker=worker, stdin="h:1|a,1\nNULL|b,NULL\nNULL|c,3\n")
    assert done.returncode == 0, done.stderr
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        got = [consumer.poll(10) for _ in range(3)]
        assert [(m.key(), m.value(), m.headers()) for m in got] == [
            (b"a", b"1", [("h", b"1")]), (b"b", None, None), (b"c", b"3", None)]
        done = cli_here("topics", "consume", topic, "--group", group, "--from-beginning", "--max-messages", "2",
                        "--property", "print.key=true", "--property", "print.headers=true", worker=worker)
        assert done.returncode == 0, done.stderr
        assert done.stdout == "h:1\ta\t1\nNO_HEADERS\tb\tnull\n"
        # the position Kafka's own group holds, as kafka-consumer-groups --describe would show it
        assert [tp.offset for tp in consumer.committed([TopicPartition(topic, 0)], timeout=10)] == [2]
    finally:
        consumer.close()
    done = cli_here("topics", "consume", topic, "--group", group, "--property", "print.key=true", worker=worker)
    assert done.stdout == "c\t3\n"


def test_the_console_modules_timestamp_names_are_the_topic_layouts():
    """ingest.cli.console names Kafka's timestamp types itself, so that the CLI's parser imports no Arrow."""
    from ingest.cli.console import TIMESTAMP_TYPES
    from ingest.topics.layout import CREATE_TIME, LOG_APPEND_TIME

    assert TIMESTAMP_TYPES == (CREATE_TIME, LOG_APPEND_TIME)
