"""A standalone Kafka-protocol test cluster: librdkafka's mock cluster, driven through ctypes.

The librdkafka shared library bundled inside the confluent-kafka wheel exports the mock-cluster C API
(rd_kafka_mock_cluster_new / rd_kafka_mock_cluster_bootstraps / rd_kafka_mock_topic_create). This script
loads that library, creates a producer handle (the mock cluster needs an rd_kafka_t to hang off), starts
a cluster of --brokers brokers on 127.0.0.1 (random ports), creates the topics given as NAME:PARTITIONS,
writes the bootstrap string to --bootstrap-file (atomically) and then sleeps until SIGTERM/SIGINT, when
it destroys the cluster and removes the bootstrap, control and pid files.

Topic control server: the mock cannot create topics through the admin API (CreateTopics waits for a
controller that never answers) and producing to an unknown topic auto-creates it with 4 partitions, so
tests that need a topic with a chosen partition count ask this process instead. With --control-file F it
listens on 127.0.0.1 (random port) and writes HOST:PORT to F (atomically, before the bootstrap file, so
whoever waits for the bootstrap file finds F too). One request per line, any number per connection:
    create <topic> <partitions>\n  ->  ok\n                created
                                    exists <n>\n          already there with n partitions
                                    error <message>\n     bad request, or the mock refused
<topic> must be Kafka-legal ([a-zA-Z0-9._-], at most 249 characters, not "." or ".."); <partitions> is
1..MAX_PARTITIONS. Topics get the replication factor of the start-up ones. rd_kafka_mock_topic_create may
be called from any thread: it posts an op to the cluster's own thread and waits for its answer.

Limits of the mock (see DESIGN.md section 4): it does not enforce transactions, topics cannot be created
through the admin API, partitions are capped at a few MiB, and all data lives in memory in this process.

Usage: python tests/services/mock_kafka.py --brokers 3 --bootstrap-file F [--control-file C]
           [--pid-file P] [TOPIC:PARTS ...]
Default topics: orders:5 topic-to-export:1 connect-batch-markers:1
       python tests/services/mock_kafka.py --check --bootstrap-file F [--control-file C]
           [--check-topic T] [--timeout S]
  (used by up.sh) checks a running cluster with confluent_kafka: metadata, then produce + flush one
  message to T and read it back with a `group.protocol=consumer` consumer, within S seconds; with C,
  also that the control server answers `create T 1` with `exists 1`.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import glob
import importlib.util
import os
import re
import signal
import socket
import socketserver
import sys
import threading

DEFAULT_TOPICS = ["orders:5", "topic-to-export:1", "connect-batch-markers:1"]
RD_KAFKA_PRODUCER = 0
RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS = 36
LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")
MAX_PARTITIONS = 1000
MAX_REQUEST_BYTES = 1024


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


def topic_problem(name: str, partitions: int) -> str | None:
    """Why Kafka would refuse this topic (the mock itself accepts any name and count), or None."""
    if not LEGAL_TOPIC.fullmatch(name) or name in (".", ".."):
        return f"illegal topic name {name!r} (want 1-249 of [a-zA-Z0-9._-], not '.' or '..')"
    if not 1 <= partitions <= MAX_PARTITIONS:
        return f"partition count {partitions} out of range 1..{MAX_PARTITIONS}"
    return None


def parse_topic(spec: str) -> tuple[str, int]:
    name, _, parts = spec.partition(":")
    if not name:
        raise argparse.ArgumentTypeError(f"bad topic spec {spec!r} (want NAME:PARTITIONS)")
    try:
        n = int(parts) if parts else 1
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad partition count in {spec!r}") from None
    problem = topic_problem(name, n)
    if problem:
        raise argparse.ArgumentTypeError(f"{problem} in {spec!r}")
    return name, n


def write_atomically(path: str, text: str) -> None:
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


class ControlServer(socketserver.ThreadingTCPServer):
    """The topic control server (protocol in the module docstring), one thread per connection."""

    daemon_threads = True  # an idle client must not hold up shutdown

    def __init__(self, lib: ctypes.CDLL, mcluster: int, bootstraps: str, replication_factor: int):
        super().__init__(("127.0.0.1", 0), ControlHandler)
        self.lib, self.mcluster = lib, mcluster
        self.bootstraps, self.replication_factor = bootstraps, replication_factor
        # Connection threads are not joined at shutdown (see daemon_threads), so a create still under
        # way then must finish, and none may start, before the cluster is destroyed: close() takes this.
        self.cluster_lock = threading.Lock()
        self.closed = False

    def close(self) -> None:
        """Stop serving; afterwards no request reaches the cluster, which may then be destroyed."""
        self.shutdown()
        with self.cluster_lock:
            self.closed = True
        self.server_close()

    @property
    def address(self) -> str:
        host, port = self.server_address[:2]
        return f"{host}:{port}"

    def create(self, name: str, partitions: int) -> str:
        """The answer line (without newline) to `create name partitions`."""
        problem = topic_problem(name, partitions)
        if problem:
            return f"error {problem}"
        with self.cluster_lock:
            if self.closed:
                return "error shutting down"
            err = self.lib.rd_kafka_mock_topic_create(
                self.mcluster, name.encode(), partitions, self.replication_factor
            )
        if err == 0:
            return "ok"
        if err == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS:
            return self.exists(name)
        return f"error creating topic {name}: {self.lib.rd_kafka_err2str(err).decode()}"

    def exists(self, name: str) -> str:
        """`exists <n>`, n read back through the cluster's metadata: the mock API cannot tell it, and the
        topic may have been auto-created by a producer rather than through this server."""
        from confluent_kafka.admin import AdminClient

        md = AdminClient({"bootstrap.servers": self.bootstraps}).list_topics(topic=name, timeout=5)
        topic = md.topics.get(name)
        if topic is None or topic.error is not None:
            return "exists"
        return f"exists {len(topic.partitions)}"


class ControlHandler(socketserver.StreamRequestHandler):
    """One connection: answers each request line with one line."""

    server: ControlServer

    def handle(self) -> None:
        while line := self.rfile.readline(MAX_REQUEST_BYTES + 1):
            if len(line) > MAX_REQUEST_BYTES:  # the rest of it would read as more requests: hang up
                self.wfile.write(f"error request longer than {MAX_REQUEST_BYTES} bytes\n".encode())
                return
            self.wfile.write((self.answer(line) + "\n").encode())

    def answer(self, line: bytes) -> str:
        words = line.decode(errors="replace").split()
        if len(words) != 3 or words[0] != "create":
            return "error bad request (want: create <topic> <partitions>)"
        if not re.fullmatch(r"[0-9]{1,9}", words[2]):  # int() would take "+7", "7_0", other digits
            return f"error bad partition count {words[2]!r}"
        try:
            return self.server.create(words[1], int(words[2]))
        except Exception as exc:  # noqa: BLE001 -- reported to the client, the server keeps serving
            return f"error {type(exc).__name__}: {exc}"


def check_control(control_file: str, topic: str, timeout: float) -> bool:
    """Whether the control server named in control_file answers `create topic 1` with `exists 1`."""
    with open(control_file) as f:
        host, _, port = f.read().strip().rpartition(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as conn:
        conn.sendall(f"create {topic} 1\n".encode())
        answer = conn.makefile("rb").readline().decode().strip()
    if answer != "exists 1":
        print(f"mock_kafka check: control server at {host}:{port} answered {answer!r} "
              f"to `create {topic} 1` (want 'exists 1')", file=sys.stderr)
        return False
    return True


def check(bootstrap_file: str, control_file: str | None, topic: str, timeout: float) -> int:
    """Round trip through the cluster whose bootstrap string is in bootstrap_file (and a question to its
    control server if control_file is given); 0 if it works."""
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
                return 0 if control_file is None or check_control(control_file, topic, timeout) else 1
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
    ap.add_argument("--control-file", help="where to write HOST:PORT of the topic control server")
    ap.add_argument("--pid-file")
    ap.add_argument("--check", action="store_true", help="check a running cluster, then exit")
    ap.add_argument("--check-topic", default="lakeconnect-selftest")
    ap.add_argument("--timeout", type=float, default=20.0)
    args = ap.parse_args(argv)
    if args.check:
        return check(args.bootstrap_file, args.control_file, args.check_topic, args.timeout)
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
    control = None
    if args.control_file:
        control = ControlServer(lib, mcluster, bootstraps, rf)
        threading.Thread(target=control.serve_forever, name="control", daemon=True).start()
        write_atomically(args.control_file, control.address + "\n")

    if args.pid_file:
        write_atomically(args.pid_file, f"{os.getpid()}\n")
    write_atomically(args.bootstrap_file, bootstraps + "\n")
    print(
        f"mock_kafka: librdkafka {lib.rd_kafka_version_str().decode()} from {path}; "
        f"{args.brokers} brokers at {bootstraps}; topics "
        + ", ".join(f"{n}:{p}" for n, p in topics)
        + (f"; control server at {control.address}" if control else ""),
        flush=True,
    )

    try:
        while not stop.wait(3600):
            pass
    finally:
        if control:
            control.close()
        for f, mine in (
            (args.bootstrap_file, bootstraps),
            (args.control_file, control.address if control else None),
            (args.pid_file, str(os.getpid())),
        ):
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
