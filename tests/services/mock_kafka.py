"""A standalone Kafka-protocol test cluster: librdkafka's mock cluster, driven through ctypes.

The librdkafka shared library bundled inside the confluent-kafka wheel exports the mock-cluster C API
(rd_kafka_mock_cluster_new / rd_kafka_mock_cluster_bootstraps / rd_kafka_mock_topic_create). This script
loads that library, creates a producer handle (the mock cluster needs an rd_kafka_t to hang off), starts
a cluster of --brokers brokers on 127.0.0.1 (random ports), creates the topics given as NAME:PARTITIONS,
writes the bootstrap string to --bootstrap-file (atomically) and then sleeps until SIGTERM/SIGINT, when
it destroys the cluster and removes the bootstrap (and pid) file.

Limits of the mock (see DESIGN.md section 4): it does not enforce transactions, topics cannot be created
through the admin API, partitions are capped at a few MiB, and all data lives in memory in this process.

Usage: python tests/services/mock_kafka.py --brokers 3 --bootstrap-file F [--pid-file P] [TOPIC:PARTS ...]
Default topics: orders:5 topic-to-export:1
       python tests/services/mock_kafka.py --check --bootstrap-file F [--check-topic T] [--timeout S]
  (used by up.sh) checks a running cluster with confluent_kafka: metadata, then produce + flush one
  message to T and read it back with a `group.protocol=consumer` consumer, within S seconds.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import glob
import importlib.util
import os
import signal
import sys
import threading

DEFAULT_TOPICS = ["orders:5", "topic-to-export:1"]
RD_KAFKA_PRODUCER = 0


def find_librdkafka() -> str:
    """Path of the librdkafka bundled in the confluent-kafka wheel (falls back to a system one)."""
    spec = importlib.util.find_spec("confluent_kafka")
    candidates: list[str] = []
    if spec is not None and spec.submodule_search_locations:
        pkg_dir = list(spec.submodule_search_locations)[0]
        site = os.path.dirname(pkg_dir)
        for pattern in (
            os.path.join(site, "confluent_kafka.libs", "librdkafka*.so*"),  # manylinux (auditwheel)
            os.path.join(pkg_dir, ".libs", "librdkafka*.so*"),
            os.path.join(site, "confluent_kafka", ".dylibs", "librdkafka*.dylib"),  # macOS (delocate)
            os.path.join(pkg_dir, "**", "librdkafka*.so*"),
        ):
            candidates.extend(sorted(glob.glob(pattern, recursive=True)))
    system = ctypes.util.find_library("rdkafka")
    if system:
        candidates.append(system)
    for path in candidates:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        if hasattr(lib, "rd_kafka_mock_cluster_new"):
            return path
    raise SystemExit(
        "mock_kafka: no librdkafka with the mock-cluster API found "
        f"(looked at {candidates or 'nothing: is confluent-kafka installed?'})"
    )


def load(path: str) -> ctypes.CDLL:
    lib = ctypes.CDLL(path)
    vp, cp, i, sz = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_size_t
    lib.rd_kafka_version_str.restype = cp
    lib.rd_kafka_version_str.argtypes = []
    lib.rd_kafka_conf_new.restype = vp
    lib.rd_kafka_conf_new.argtypes = []
    lib.rd_kafka_conf_set.restype = i
    lib.rd_kafka_conf_set.argtypes = [vp, cp, cp, cp, sz]
    lib.rd_kafka_new.restype = vp
    lib.rd_kafka_new.argtypes = [i, vp, cp, sz]
    lib.rd_kafka_destroy.restype = None
    lib.rd_kafka_destroy.argtypes = [vp]
    lib.rd_kafka_err2str.restype = cp
    lib.rd_kafka_err2str.argtypes = [i]
    lib.rd_kafka_mock_cluster_new.restype = vp
    lib.rd_kafka_mock_cluster_new.argtypes = [vp, i]
    lib.rd_kafka_mock_cluster_destroy.restype = None
    lib.rd_kafka_mock_cluster_destroy.argtypes = [vp]
    lib.rd_kafka_mock_cluster_bootstraps.restype = cp
    lib.rd_kafka_mock_cluster_bootstraps.argtypes = [vp]
    lib.rd_kafka_mock_topic_create.restype = i
    lib.rd_kafka_mock_topic_create.argtypes = [vp, cp, i, i]
    return lib


def parse_topic(spec: str) -> tuple[str, int]:
    name, _, parts = spec.partition(":")
    if not name:
        raise argparse.ArgumentTypeError(f"bad topic spec {spec!r} (want NAME:PARTITIONS)")
    try:
        n = int(parts) if parts else 1
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad partition count in {spec!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"partition count must be >= 1 in {spec!r}")
    return name, n


def write_atomically(path: str, text: str) -> None:
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def check(bootstrap_file: str, topic: str, timeout: float) -> int:
    """Round trip through the cluster whose bootstrap string is in bootstrap_file; 0 if it works."""
    import time
    import uuid

    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient

    deadline = time.monotonic() + timeout
    with open(bootstrap_file) as f:
        bootstrap = f.read().strip()
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=timeout)
    if topic not in md.topics or md.topics[topic].error is not None:
        print(f"mock_kafka check: topic {topic} missing at {bootstrap}", file=sys.stderr)
        return 1
    payload = uuid.uuid4().hex.encode()
    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": int(timeout * 1000)})
    producer.produce(topic, payload)
    if producer.flush(max(0.1, deadline - time.monotonic())) != 0:
        print(f"mock_kafka check: produce to {topic} not acknowledged", file=sys.stderr)
        return 1
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"lakeconnect-selftest-{uuid.uuid4().hex}",
        "group.protocol": "consumer",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    })
    try:
        consumer.subscribe([topic])
        while time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None and msg.value() == payload:
                return 0
    finally:
        consumer.close()
    print(f"mock_kafka check: message not read back from {topic} within {timeout}s", file=sys.stderr)
    return 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("topics", nargs="*", type=parse_topic, metavar="NAME:PARTITIONS")
    ap.add_argument("--brokers", type=int, default=3)
    ap.add_argument("--replication-factor", type=int, default=None,
                    help="default: min(3, brokers)")
    ap.add_argument("--bootstrap-file", required=True)
    ap.add_argument("--pid-file")
    ap.add_argument("--check", action="store_true", help="check a running cluster, then exit")
    ap.add_argument("--check-topic", default="lakeconnect-selftest")
    ap.add_argument("--timeout", type=float, default=20.0)
    args = ap.parse_args(argv)
    if args.check:
        return check(args.bootstrap_file, args.check_topic, args.timeout)
    topics = args.topics or [parse_topic(t) for t in DEFAULT_TOPICS]
    rf = args.replication_factor or min(3, args.brokers)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    path = find_librdkafka()
    lib = load(path)

    conf = lib.rd_kafka_conf_new()
    errstr = ctypes.create_string_buffer(512)
    for key, value in (("client.id", "lakeconnect-mock-kafka"), ("log_level", "3")):
        if lib.rd_kafka_conf_set(conf, key.encode(), value.encode(), errstr, len(errstr)) != 0:
            raise SystemExit(f"mock_kafka: rd_kafka_conf_set({key}): {errstr.value.decode()}")
    rk = lib.rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, len(errstr))  # takes ownership of conf
    if not rk:
        raise SystemExit(f"mock_kafka: rd_kafka_new failed: {errstr.value.decode()}")

    mcluster = lib.rd_kafka_mock_cluster_new(rk, args.brokers)
    if not mcluster:
        lib.rd_kafka_destroy(rk)
        raise SystemExit("mock_kafka: rd_kafka_mock_cluster_new failed")
    for name, parts in topics:
        err = lib.rd_kafka_mock_topic_create(mcluster, name.encode(), parts, rf)
        if err != 0:
            raise SystemExit(
                f"mock_kafka: creating topic {name}: {lib.rd_kafka_err2str(err).decode()}"
            )
    bootstraps = lib.rd_kafka_mock_cluster_bootstraps(mcluster).decode()

    if args.pid_file:
        write_atomically(args.pid_file, f"{os.getpid()}\n")
    write_atomically(args.bootstrap_file, bootstraps + "\n")
    print(
        f"mock_kafka: librdkafka {lib.rd_kafka_version_str().decode()} from {path}; "
        f"{args.brokers} brokers at {bootstraps}; topics "
        + ", ".join(f"{n}:{p}" for n, p in topics),
        flush=True,
    )

    try:
        while not stop.wait(3600):
            pass
    finally:
        for f, mine in ((args.bootstrap_file, bootstraps), (args.pid_file, str(os.getpid()))):
            try:  # only remove the files if they are still ours (not a newer instance's)
                if f and open(f).read().strip() == mine:
                    os.unlink(f)
            except FileNotFoundError:
                pass
        lib.rd_kafka_mock_cluster_destroy(mcluster)
        lib.rd_kafka_destroy(rk)
        print("mock_kafka: stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
