"""A test double of a Kafka cluster that enforces transactions, with confluent-kafka's client API.

Why it exists: the Kafka-protocol cluster the tests can run (librdkafka's mock cluster) does not
enforce transactions. Records of an aborted transaction stay visible to read_committed consumers, and
a producer whose transactional.id a newer producer has taken over is not fenced. Exactly-once
production cannot be proved against it, so this module stands in for both the broker and the client
library. Code that loads its Kafka client classes from the module named by
LAKECONNECT_KAFKA_CLIENT_MODULE gets these classes when a test sets that variable to
"tests.kafka.fake_cluster".

The cluster's state lives in the directory named by LAKECONNECT_FAKE_KAFKA_DIR, so every process that
inherits the environment sees the same cluster (the Spark driver and Spark's Python workers, for
example). Each operation runs under one fcntl.flock on `<dir>/lock`: `state.json` holds the topics,
the transactional ids and the consumer groups, and `logs/<topic id>/<partition>.jsonl` holds each
partition's log, one line per offset.

What it reproduces, as a broker and confluent-kafka 2.x (librdkafka) do:

- Logs: offsets are contiguous, and the record at offset n is line n of the log. A transactional
  record takes its offset when it is produced, even though read_committed consumers do not see it
  yet. Each commit or abort writes a control marker to each partition the transaction wrote to, and
  each marker takes one offset. Consumers never see markers or aborted records, so those offsets are
  gaps.
- Transactions: `init_transactions()` bumps the epoch of the transactional.id and aborts the
  transaction that an older instance left open (abort markers). An instance with an older epoch is
  fenced. It finds out at its next produce, commit or abort. A commit or abort then raises a fatal
  `KafkaError._FENCED` (librdkafka reports PRODUCER_FENCED and INVALID_PRODUCER_EPOCH from the
  broker as _FENCED). The produce that discovers the fencing does not raise: its delivery report
  fails with _FENCED and error_cb gets the fatal error at the next poll/flush. Any later produce
  raises `KafkaError._FATAL`, as `rd_kafka_producev` does after a fatal error. Producing outside a
  transaction raises _STATE. A failed delivery inside a transaction makes it abortable, so
  `commit_transaction()` raises an error whose txn_requires_abort() is True. An open transaction
  that lasts longer than the producer's transaction.timeout.ms (default 60000) is aborted by the
  "broker" and its epoch is bumped, as Kafka's coordinator does.
- Producing: records of a non-transactional producer are appended at poll()/flush(), and every
  producer's delivery callbacks fire there (and in commit_transaction). produce() checks message.max.bytes itself, counting key + value + header names and
  values without the record overhead that librdkafka adds. The topic's max.message.bytes is
  checked at delivery. An unknown topic fails delivery with UNKNOWN_TOPIC_OR_PART, and an unknown
  partition fails it with _UNKNOWN_PARTITION. The queue is bounded by
  queue.buffering.max.messages (BufferError). With partition=-1 the producer picks the partition as
  librdkafka's default partitioner does: CRC-32 of the key, or random for a null key.
- Consuming (assign only): under read_committed (the default) a consumer reads up to the last
  stable offset, the first offset of the earliest open transaction. It returns non-transactional
  records and records of committed transactions, and skips aborted records and markers. Under
  read_uncommitted it reads up to the log end and returns the records of open and aborted
  transactions too. position() stays OFFSET_INVALID until something was consumed, then moves past
  the skipped offsets, as librdkafka moves past control records. A partition EOF event
  (enable.partition.eof) comes once each time the position reaches the end, which is the LSO under
  read_committed. An offset outside [log start, log end] follows auto.offset.reset: "error" returns
  one _AUTO_OFFSET_RESET event. get_watermark_offsets() gives (log start, LSO) under read_committed
  and (log start, log end) otherwise, because ListOffsets carries the consumer's isolation level.
- Consumer groups: committed() and commit() are stored per group.id. close() commits the
  positions when enable.auto.commit is on (librdkafka's default).
- Metadata and admin: list_topics() returns confluent-kafka's own metadata classes. A named topic
  that does not exist comes back with an UNKNOWN_TOPIC_OR_PART error and is never created
  (auto-creation is off). create_topics() and delete_topics() return futures.
- Configuration: every client's config is first given to a real confluent-kafka client of the same
  kind, with no brokers, so a key or value that librdkafka rejects is rejected here too. A consumer
  without group.id raises the same ValueError.

The module re-exports confluent-kafka's own KafkaError, KafkaException, TopicPartition, Message and
constants, so code that compares error codes works the same with either module. `admin` is a
submodule-like attribute holding AdminClient and NewTopic.

What it does not do: consumer subscriptions and rebalances, send_offsets_to_transaction,
compaction and retention (see `delete_records` for moving a log start by hand), replication,
quotas, and real latencies. poll() does not block when there is nothing to serve, and consume()
returns as soon as it has something, whereas librdkafka's consume() waits its whole timeout unless
the batch fills.

Test helpers: `create_topic`, `records`, `transactional_ids`, `group_offsets`, `delete_records` and
`reset` all take the cluster's directory, or None to use the environment variable.
"""

from __future__ import annotations

import base64
import fcntl
import json
import logging
import os
import random
import sys
import threading
import time
import types
import uuid
import zlib
from collections import deque
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable

import confluent_kafka as _ck
import confluent_kafka.admin as _ck_admin
from confluent_kafka import (  # noqa: F401 -- re-exported: the same objects as confluent_kafka's
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    OFFSET_STORED,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    TIMESTAMP_NOT_AVAILABLE,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
    libversion,
    version,
)
from confluent_kafka.admin import (  # noqa: F401 -- re-exported through `admin`
    BrokerMetadata,
    ClusterMetadata,
    NewTopic,
    PartitionMetadata,
    TopicMetadata,
)

DIR_ENV = "LAKECONNECT_FAKE_KAFKA_DIR"
BROKER_ID = 1
BROKER_HOST, BROKER_PORT = "fake-kafka", 9092
DEFAULT_PARTITIONS = 1  # the broker's num.partitions, for NewTopic(num_partitions=-1)
DEFAULT_MAX_MESSAGE_BYTES = 1048588  # the broker's message.max.bytes, a topic's max.message.bytes default
POLL_INTERVAL_S = 0.02  # how often a waiting consume() looks at the shared state again

# Transactional producer states (librdkafka's names, for messages).
_INIT, _READY, _IN_TXN, _ABORTABLE, _FATAL_STATE = "Init", "Ready", "InTransaction", "AbortableError", "FatalError"

# Status of each offset of a partition log.
_PLAIN, _OPEN, _COMMITTED, _ABORTED, _MARKER = "n", "o", "c", "a", "m"
_STATE_NAMES = {_PLAIN: "plain", _OPEN: "open", _COMMITTED: "committed", _ABORTED: "aborted"}

_NULL_LOG = logging.getLogger(__name__ + ".librdkafka")
_NULL_LOG.addHandler(logging.NullHandler())
_NULL_LOG.propagate = False

_LOCAL = threading.local()  # the session a thread is in, so nested use does not flock twice
_PROCESS_LOCK = threading.RLock()
_LOGS: dict[tuple[str, str, int], _PartitionLog] = {}  # per-process cache of parsed partition logs


# --- storage -------------------------------------------------------------------------------------


def _now_ms() -> int:
    return int(time.time() * 1000)


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def _directory(directory: str | os.PathLike | None) -> Path:
    if directory is None:
        directory = os.environ.get(DIR_ENV)
        if not directory:
            raise RuntimeError(f"the fake Kafka cluster needs its directory: set {DIR_ENV} (every process using "
                               "tests.kafka.fake_cluster must see the same directory)")
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    return path


class _PartitionLog:
    """One partition's log as this process last read it: records by offset and each offset's status."""

    def __init__(self, path: Path):
        self.path = path
        self.size = 0  # bytes of the file parsed so far
        self.records: list[tuple] = []  # (key, value, headers, timestamp, timestamp type, pid, control)
        self.status: list[str] = []
        self.pending: dict[int, list[int]] = {}  # producer id -> offsets of its open transaction

    @property
    def end(self) -> int:
        return len(self.records)

    def stable(self) -> int:
        """The last stable offset: the first offset of the earliest open transaction, else the end."""
        firsts = [offsets[0] for offsets in self.pending.values() if offsets]
        return min(firsts) if firsts else self.end

    def refresh(self) -> _PartitionLog:
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            size = 0
        if size < self.size:  # cannot happen while the cluster lives; be safe
            self.__init__(self.path)
        if size == self.size:
            return self
        with open(self.path, "rb") as f:
            f.seek(self.size)
            data = f.read(size - self.size)
        complete = data.rfind(b"\n") + 1  # every write is a whole line under the lock; be safe anyway
        for line in data[:complete].splitlines():
            self._add(json.loads(line))
        self.size += complete
        return self

    def _add(self, d: dict) -> None:
        offset = len(self.records)
        headers = None if d["h"] is None else [(name, _unb64(value)) for name, value in d["h"]]
        pid, control = d["pid"], d["c"]
        self.records.append((_unb64(d["k"]), _unb64(d["v"]), headers, d["ts"], d["tt"], pid, control))
        if control is not None:
            self.status.append(_MARKER)
            outcome = _COMMITTED if control == "commit" else _ABORTED
            for o in self.pending.pop(pid, []):
                self.status[o] = outcome
        elif pid is None:
            self.status.append(_PLAIN)
        else:
            self.status.append(_OPEN)
            self.pending.setdefault(pid, []).append(offset)


class _Session:
    """The cluster while this process holds its lock."""

    def __init__(self, root: Path, state: dict):
        self.root = root
        self.state = state
        self.dirty = False

    # topics

    def topic(self, name: str) -> dict | None:
        return self.state["topics"].get(name)

    def partitions(self, name: str) -> int | None:
        t = self.topic(name)
        return None if t is None else t["partitions"]

    def has(self, topic: str, partition: int) -> bool:
        n = self.partitions(topic)
        return n is not None and 0 <= partition < n

    def log_start(self, topic: str, partition: int) -> int:
        return self.state["topics"][topic]["log_start"][partition]

    def log(self, topic: str, partition: int) -> _PartitionLog:
        t = self.state["topics"][topic]
        key = (self.state["cluster_id"], t["id"], partition)
        log = _LOGS.get(key)
        if log is None:
            log = _LOGS[key] = _PartitionLog(self.root / "logs" / t["id"] / f"{partition}.jsonl")
        return log.refresh()

    def create_topic(self, name: str, partitions: int, config: dict | None = None) -> None:
        self.state["topics"][name] = {"id": uuid.uuid4().hex, "partitions": partitions,
                                      "config": {str(k): str(v) for k, v in (config or {}).items()},
                                      "log_start": [0] * partitions}
        (self.root / "logs" / self.state["topics"][name]["id"]).mkdir(parents=True, exist_ok=True)
        self.dirty = True

    def append(self, topic: str, partition: int, key: bytes | None, value: bytes | None,
               headers: list | None, timestamp: int, timestamp_type: int, pid: int | None = None,
               control: str | None = None) -> int:
        log = self.log(topic, partition)
        line = json.dumps({"k": _b64(key), "v": _b64(value),
                           "h": None if headers is None else [[n, _b64(v)] for n, v in headers],
                           "ts": timestamp, "tt": timestamp_type, "pid": pid, "c": control})
        with open(log.path, "ab") as f:
            f.write(line.encode() + b"\n")
        offset = log.end
        log.refresh()
        return offset

    def end_transaction(self, tid: str, kind: str) -> None:
        """Write `kind` (commit | abort) markers for the open transaction of `tid` and close it."""
        producer = self.state["producers"][tid]
        txn = producer["txn"]
        if txn is None:
            return
        for topic, partition in txn["partitions"]:
            if self.has(topic, partition):
                self.append(topic, partition, None, None, None, _now_ms(), TIMESTAMP_CREATE_TIME,
                            producer["pid"], kind)
        producer["txn"] = None
        self.dirty = True

    def expire_transactions(self) -> None:
        """Abort transactions open longer than their timeout and fence their producers, as Kafka's
        transaction coordinator does."""
        now = _now_ms()
        for tid, producer in self.state["producers"].items():
            txn = producer["txn"]
            if txn is not None and now - txn["started"] > txn["timeout_ms"]:
                self.end_transaction(tid, "abort")
                producer["epoch"] += 1

    # consumer groups

    def group_offset(self, group: str, topic: str, partition: int) -> int | None:
        return self.state["groups"].get(group, {}).get(f"{topic}:{partition}")

    def commit_group(self, group: str, topic: str, partition: int, offset: int) -> None:
        self.state["groups"].setdefault(group, {})[f"{topic}:{partition}"] = offset
        self.dirty = True


def _fresh_state() -> dict:
    return {"cluster_id": uuid.uuid4().hex, "topics": {}, "producers": {}, "groups": {}, "next_pid": 1000}


@contextmanager
def _session(directory: str | os.PathLike | None = None):
    """Hold the cluster's lock: every read-modify-write of the shared state happens in one session."""
    root = _directory(directory)
    current = getattr(_LOCAL, "session", None)
    if current is not None and current.root == root:
        yield current
        return
    with _PROCESS_LOCK:
        fd = os.open(root / "lock", os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            state_path = root / "state.json"
            if state_path.exists():
                state = json.loads(state_path.read_text())
            else:
                state = _fresh_state()
            session = _Session(root, state)
            session.dirty = not state_path.exists()
            _LOCAL.session = session
            try:
                session.expire_transactions()
                yield session
            finally:  # saved even when the body raised: the logs may already hold its appends
                _LOCAL.session = None
                if session.dirty:
                    tmp = root / f"state.json.{os.getpid()}.{threading.get_ident()}.tmp"
                    tmp.write_text(json.dumps(session.state))
                    os.replace(tmp, state_path)
        finally:
            os.close(fd)  # releases the flock


# --- configuration -----------------------------------------------------------------------------


def _validate(kind: str, config: dict) -> None:
    """Have a real confluent-kafka client of the same kind check `config` (without connecting)."""
    probe = {k: v for k, v in config.items() if not k.startswith("test.mock.")}
    probe.update({"bootstrap.servers": "", "logger": _NULL_LOG})
    if kind == "producer":
        _ck.Producer(probe).close()
    elif kind == "consumer":
        _ck.Consumer(probe).close()
    else:
        client = _ck_admin.AdminClient(probe)
        del client


def _flag(config: dict, key: str, default: bool) -> bool:
    value = config.get(key)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("true", "t", "1")


def _int(config: dict, key: str, default: int) -> int:
    value = config.get(key)
    return default if value is None else int(value)


def _as_bytes(value: Any, what: str) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"{what} must be str, bytes or None, not {type(value).__name__}")


def _as_headers(headers: Any) -> list[tuple[str, bytes | None]] | None:
    if headers is None:
        return None
    items = headers.items() if isinstance(headers, dict) else headers
    out = []
    for item in items:
        name, value = item
        if isinstance(name, bytes):
            name = name.decode("utf-8")
        if not isinstance(name, str):
            raise TypeError(f"header names must be str, not {type(name).__name__}")
        out.append((name, _as_bytes(value, f"header {name!r}")))
    return out or None


def _metadata(session: _Session, topic: str | None) -> ClusterMetadata:
    md = ClusterMetadata()
    md.cluster_id = session.state["cluster_id"]
    md.controller_id = BROKER_ID
    md.orig_broker_id = BROKER_ID
    md.orig_broker_name = f"{BROKER_HOST}:{BROKER_PORT}/{BROKER_ID}"
    broker = BrokerMetadata()
    broker.id, broker.host, broker.port = BROKER_ID, BROKER_HOST, BROKER_PORT
    md.brokers = {BROKER_ID: broker}
    names = [topic] if topic is not None else sorted(session.state["topics"])
    for name in names:
        t = TopicMetadata()
        t.topic = name
        n = session.partitions(name)
        if n is None:
            t.error = KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)
        else:
            for p in range(n):
                pm = PartitionMetadata()
                pm.id, pm.leader, pm.replicas, pm.isrs = p, BROKER_ID, [BROKER_ID], [BROKER_ID]
                t.partitions[p] = pm
        md.topics[name] = t
    return md


class _Client:
    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata:
        with _session(self._dir) as s:
            return _metadata(s, topic)


# --- producer ----------------------------------------------------------------------------------


def _fenced_error() -> KafkaError:
    reason = KafkaError(KafkaError.PRODUCER_FENCED).str()
    return KafkaError(KafkaError._FENCED, f"Producer fenced by newer instance: {reason}", fatal=True)


class Producer(_Client):
    """confluent_kafka.Producer against the fake cluster (see the module's docstring)."""

    def __init__(self, config: dict | None = None, **kwargs: Any):
        config = {**(config or {}), **kwargs}
        _validate("producer", config)
        self._dir = _directory(None)
        self._error_cb = config.get("error_cb")
        self._default_dr = config.get("on_delivery")
        self._max_bytes = _int(config, "message.max.bytes", 1000000)
        self._queue_max = _int(config, "queue.buffering.max.messages", 100000)
        self._tid = config.get("transactional.id") or None
        self._txn_timeout_ms = _int(config, "transaction.timeout.ms", 60000)
        self._state = _INIT
        self._pid: int | None = None
        self._epoch: int | None = None
        self._fatal: KafkaError | None = None
        self._txn_error: KafkaError | None = None
        self._buffer: deque = deque()  # non-transactional records not yet appended
        self._events: deque = deque()  # ("dr", callback, error, message) | ("error", KafkaError)
        self._closed = False

    # produce

    def produce(self, topic: str, value: Any = None, key: Any = None, partition: int = -1, callback: Any = None,
                on_delivery: Any = None, timestamp: int = 0, headers: Any = None) -> None:
        self._check_open()
        value, key = _as_bytes(value, "value"), _as_bytes(key, "key")
        headers = _as_headers(headers)
        callback = on_delivery or callback or self._default_dr
        if self._fatal is not None:
            raise KafkaException(KafkaError(KafkaError._FATAL, "Unable to produce message: "
                                            + KafkaError(KafkaError._FATAL).str()))
        if self._tid is not None and self._state != _IN_TXN:
            raise KafkaException(KafkaError(KafkaError._STATE, "Unable to produce message: "
                                            + KafkaError(KafkaError._STATE).str()))
        size = len(key or b"") + len(value or b"") + sum(len(n.encode()) + len(v or b"") for n, v in headers or ())
        if size > self._max_bytes:
            raise KafkaException(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, "Unable to produce message: "
                                            + KafkaError(KafkaError.MSG_SIZE_TOO_LARGE).str()))
        if len(self) >= self._queue_max:
            raise BufferError(KafkaError(KafkaError._QUEUE_FULL).str())
        ts = int(timestamp) if timestamp else _now_ms()
        record = (topic, int(partition), key, value, headers, ts, callback)
        if self._tid is None:
            self._buffer.append(record)
            return
        with _session(self._dir) as s:
            if not self._is_current(s):
                self._set_fatal(_fenced_error())
                self._events.append(("dr", callback, self._fatal, _message(topic, partition, key, value, headers)))
                return
            error, message = self._append(s, record)
        if error is not None and self._state == _IN_TXN:
            self._state, self._txn_error = _ABORTABLE, error
        self._events.append(("dr", callback, error, message))

    def _append(self, s: _Session, record: tuple) -> tuple[KafkaError | None, Message]:
        """Write one record to its partition's log: (delivery error or None, the delivery report)."""
        topic, partition, key, value, headers, ts, _ = record
        n = s.partitions(topic)
        if n is None:
            return KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART), _message(topic, partition, key, value, headers)
        if partition < 0:
            partition = zlib.crc32(key) % n if key is not None else random.randrange(n)
        if partition >= n:
            return KafkaError(KafkaError._UNKNOWN_PARTITION), _message(topic, partition, key, value, headers)
        config = s.topic(topic)["config"]
        size = len(key or b"") + len(value or b"")
        if size > int(config.get("max.message.bytes", DEFAULT_MAX_MESSAGE_BYTES)):
            return KafkaError(KafkaError.MSG_SIZE_TOO_LARGE), _message(topic, partition, key, value, headers)
        kind = TIMESTAMP_CREATE_TIME
        if config.get("message.timestamp.type") == "LogAppendTime":
            kind, ts = TIMESTAMP_LOG_APPEND_TIME, _now_ms()
        pid = None
        if self._tid is not None:
            producer = s.state["producers"][self._tid]
            pid = producer["pid"]
            if producer["txn"] is None:  # the broker's transaction starts with its first partition
                producer["txn"] = {"partitions": [], "started": _now_ms(), "timeout_ms": self._txn_timeout_ms}
                s.dirty = True
            if [topic, partition] not in producer["txn"]["partitions"]:
                producer["txn"]["partitions"].append([topic, partition])
                s.dirty = True
        offset = s.append(topic, partition, key, value, headers, ts, kind, pid)
        return None, _message(topic, partition, key, value, headers, offset, (kind, ts))

    def _deliver(self) -> None:
        if not self._buffer:
            return
        with _session(self._dir) as s:
            while self._buffer:
                record = self._buffer.popleft()
                error, message = self._append(s, record)
                self._events.append(("dr", record[6], error, message))

    def _serve(self) -> int:
        served = 0
        while self._events:
            event = self._events.popleft()
            served += 1
            if event[0] == "dr":
                _, callback, error, message = event
                if callback is not None:
                    callback(error, message)
            elif self._error_cb is not None:
                self._error_cb(event[1])
        return served

    def poll(self, timeout: float = -1) -> int:
        self._check_open()
        self._deliver()
        return self._serve()

    def flush(self, timeout: float = -1) -> int:
        self._check_open()
        self._deliver()
        self._serve()
        return len(self)

    def __len__(self) -> int:
        return len(self._buffer) + len(self._events)

    def close(self, timeout: float = -1) -> bool:
        if self._closed:
            return True
        if self._tid is not None and self._state in (_IN_TXN, _ABORTABLE) and self._fatal is None:
            try:
                self.abort_transaction()
            except KafkaException:
                pass
        self.flush()
        self._closed = True
        return True

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("Producer has been closed")

    # transactions

    def _set_fatal(self, error: KafkaError) -> None:
        if self._fatal is None:
            self._fatal, self._state = error, _FATAL_STATE
            self._events.append(("error", error))

    def _require(self, *states: str) -> None:
        self._check_open()
        if self._tid is None:
            raise KafkaException(KafkaError(KafkaError._NOT_CONFIGURED,
                                            "The Transactional API requires transactional.id to be configured"))
        if self._fatal is not None:
            raise KafkaException(KafkaError(self._fatal.code(), self._fatal.str(), fatal=True))
        if self._state == _ABORTABLE and _ABORTABLE not in states:
            raise KafkaException(KafkaError(self._txn_error.code(), self._txn_error.str(), txn_requires_abort=True))
        if self._state not in states:
            raise KafkaException(KafkaError(KafkaError._STATE, f"Operation not valid in state {self._state}"))

    def _is_current(self, s: _Session) -> bool:
        producer = s.state["producers"].get(self._tid)  # None: the cluster was reset
        return producer is not None and producer["epoch"] == self._epoch

    def _current(self, s: _Session) -> None:
        """Raise the fatal fencing error when a newer instance took over this transactional id."""
        if not self._is_current(s):
            self._set_fatal(_fenced_error())
            raise KafkaException(KafkaError(self._fatal.code(), self._fatal.str(), fatal=True))

    def init_transactions(self, timeout: float = -1) -> None:
        self._require(_INIT)
        with _session(self._dir) as s:
            producers = s.state["producers"]
            if self._tid not in producers:
                producers[self._tid] = {"pid": s.state["next_pid"], "epoch": -1, "txn": None}
                s.state["next_pid"] += 1
            s.end_transaction(self._tid, "abort")  # what an older instance left open
            producers[self._tid]["epoch"] += 1
            s.dirty = True
            self._pid, self._epoch = producers[self._tid]["pid"], producers[self._tid]["epoch"]
        self._state = _READY

    def begin_transaction(self) -> None:
        self._require(_READY)  # local only, as in librdkafka: the broker hears of it at the first produce
        self._state, self._txn_error = _IN_TXN, None

    def commit_transaction(self, timeout: float = -1) -> None:
        self._require(_IN_TXN)
        self.flush()  # delivery callbacks fire here, as librdkafka's commit flushes first
        self._require(_IN_TXN)  # again: a callback may have ended the transaction
        with _session(self._dir) as s:
            self._current(s)
            s.end_transaction(self._tid, "commit")
        self._state = _READY

    def abort_transaction(self, timeout: float = -1) -> None:
        self._require(_IN_TXN, _ABORTABLE)
        self.flush()
        with _session(self._dir) as s:
            self._current(s)
            s.end_transaction(self._tid, "abort")
        self._state, self._txn_error = _READY, None

    def send_offsets_to_transaction(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError("the fake Kafka cluster does not support send_offsets_to_transaction")


def _message(topic: str, partition: int, key: bytes | None, value: bytes | None, headers: list | None,
             offset: int = OFFSET_INVALID, timestamp: tuple[int, int] = (TIMESTAMP_NOT_AVAILABLE, -1),
             error: KafkaError | None = None) -> Message:
    return Message(topic=topic, partition=partition, offset=offset, key=key, value=value, headers=headers,
                   error=error, timestamp=timestamp)


# --- consumer ----------------------------------------------------------------------------------


class _Assigned:
    """One assigned partition: where fetching continues and what was reported."""

    def __init__(self, offset: int):
        self.spec = offset  # as assigned, until resolved
        self.fetch: int | None = None  # next offset to look at
        self.position: int | None = None  # the application's position (None: OFFSET_INVALID)
        self.eof_at: int | None = None  # the end offset an EOF event was last given for
        self.failed = False  # an error event was given; nothing more is fetched
        self.missing_reported = False


_RESETS = {"smallest": "earliest", "earliest": "earliest", "beginning": "earliest",
           "largest": "latest", "latest": "latest", "end": "latest", "error": "error"}


class Consumer(_Client):
    """confluent_kafka.Consumer against the fake cluster, for assigned partitions (see the module's
    docstring)."""

    def __init__(self, config: dict | None = None, **kwargs: Any):
        config = {**(config or {}), **kwargs}
        _validate("consumer", config)  # raises ValueError without group.id, as the real client does
        self._dir = _directory(None)
        self._group = str(config["group.id"])
        self._committed_only = str(config.get("isolation.level", "read_committed")) != "read_uncommitted"
        self._eof = _flag(config, "enable.partition.eof", False)
        self._reset = _RESETS[str(config.get("auto.offset.reset", "largest")).lower()]
        self._auto_commit = _flag(config, "enable.auto.commit", True)
        self._assigned: dict[tuple[str, int], _Assigned] = {}
        self._turn = 0
        self._closed = False

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("Consumer closed")

    # assignment

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        self._check_open()
        self._assigned = {(tp.topic, tp.partition): _Assigned(tp.offset) for tp in partitions}

    def incremental_assign(self, partitions: Iterable[TopicPartition]) -> None:
        self._check_open()
        for tp in partitions:
            self._assigned[(tp.topic, tp.partition)] = _Assigned(tp.offset)

    def incremental_unassign(self, partitions: Iterable[TopicPartition]) -> None:
        self._check_open()
        for tp in partitions:
            self._assigned.pop((tp.topic, tp.partition), None)

    def unassign(self) -> None:
        self._check_open()
        self._assigned = {}

    def assignment(self) -> list[TopicPartition]:
        self._check_open()
        return [TopicPartition(t, p, OFFSET_STORED if a.spec == OFFSET_INVALID else a.spec)
                for (t, p), a in self._assigned.items()]

    def seek(self, partition: TopicPartition) -> None:
        self._check_open()
        a = self._assigned.get((partition.topic, partition.partition))
        if a is None:
            raise KafkaException(KafkaError(KafkaError._UNKNOWN_PARTITION))
        a.spec, a.fetch, a.eof_at, a.failed = partition.offset, None, None, False

    def subscribe(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError("the fake Kafka cluster supports assign(), not subscriptions")

    # reading

    def _end(self, log: _PartitionLog) -> int:
        return log.stable() if self._committed_only else log.end

    def _resolve(self, s: _Session, topic: str, partition: int, a: _Assigned, log: _PartitionLog) -> Message | None:
        """Settle where fetching starts; an _AUTO_OFFSET_RESET event when it cannot."""
        low, high = s.log_start(topic, partition), log.end
        offset = a.spec
        if offset == OFFSET_BEGINNING:
            offset = low
        elif offset == OFFSET_END:
            offset = self._end(log)
        elif offset < 0:  # OFFSET_STORED / OFFSET_INVALID: the group's committed offset
            committed = s.group_offset(self._group, topic, partition)
            offset = committed if committed is not None else None
        if offset is None or not low <= offset <= high:
            if self._reset == "earliest":
                offset = low
            elif self._reset == "latest":
                offset = self._end(log)
            else:
                a.failed = True
                reason = ("no previously committed offset available" if offset is None else
                          "fetch failed due to requested offset not available on the broker: "
                          f"{KafkaError(KafkaError.OFFSET_OUT_OF_RANGE).str()} (broker {BROKER_ID})")
                return _message(topic, partition, None, None, None,
                                offset if offset is not None else OFFSET_INVALID,
                                error=KafkaError(KafkaError._AUTO_OFFSET_RESET, reason))
        a.fetch = offset
        return None

    def _fetch(self, s: _Session, topic: str, partition: int, a: _Assigned, room: int) -> list[Message]:
        if a.failed:
            return []
        if not s.has(topic, partition):
            if a.missing_reported:
                return []
            a.missing_reported = True
            return [_message(topic, partition, None, None, None, error=KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART))]
        log = s.log(topic, partition)
        if a.fetch is None or a.fetch < s.log_start(topic, partition):
            if a.fetch is not None:  # the records were deleted under the consumer: out of range
                a.spec = a.fetch
            event = self._resolve(s, topic, partition, a, log)
            if event is not None:
                return [event]
        end = self._end(log)
        out: list[Message] = []
        offset = a.fetch
        while offset < end and len(out) < room:
            status = log.status[offset]
            if status == _PLAIN or status == _COMMITTED or (not self._committed_only and status in (_OPEN, _ABORTED)):
                key, value, headers, ts, kind, _, _ = log.records[offset]
                out.append(_message(topic, partition, key, value, headers, offset, (kind, ts)))
            offset += 1
        if offset > a.fetch:
            a.fetch = a.position = offset
        if self._eof and offset == end and a.eof_at != end and len(out) < room:
            a.eof_at = end
            text = (f"Fetch from broker {BROKER_ID} reached end of partition at offset {end} "
                    f"(HighwaterMark {log.end})")
            out.append(_message(topic, partition, None, text.encode(), None, end,
                                error=KafkaError(KafkaError._PARTITION_EOF, text)))
        return out

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        self._check_open()
        if not 0 <= num_messages <= 1000000:
            raise ValueError("num_messages must be between 0 and 1000000 (1M)")
        if timeout is None:
            timeout = -1
        deadline = None if timeout < 0 else time.monotonic() + timeout
        while True:
            out: list[Message] = []
            with _session(self._dir) as s:
                keys = list(self._assigned)
                if keys:
                    self._turn = (self._turn + 1) % len(keys)
                    for key in keys[self._turn:] + keys[:self._turn]:
                        if len(out) >= num_messages:
                            break
                        out += self._fetch(s, key[0], key[1], self._assigned[key], num_messages - len(out))
            if out or num_messages == 0:
                return out
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return []
            time.sleep(POLL_INTERVAL_S if left is None else min(POLL_INTERVAL_S, left))

    def poll(self, timeout: float = -1) -> Message | None:
        got = self.consume(1, timeout)
        return got[0] if got else None

    def position(self, partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
        self._check_open()
        out = []
        for tp in partitions:
            a = self._assigned.get((tp.topic, tp.partition))
            offset = a.position if a is not None and a.position is not None else OFFSET_INVALID
            out.append(TopicPartition(tp.topic, tp.partition, offset))
        return out

    def get_watermark_offsets(self, partition: TopicPartition, timeout: float | None = None,
                              cached: bool = False) -> tuple[int, int]:
        self._check_open()
        with _session(self._dir) as s:
            n = s.partitions(partition.topic)
            if n is None:
                raise KafkaException(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART))
            if not 0 <= partition.partition < n:
                raise KafkaException(KafkaError(KafkaError._UNKNOWN_PARTITION))
            log = s.log(partition.topic, partition.partition)
            return s.log_start(partition.topic, partition.partition), self._end(log)

    # consumer group offsets

    def committed(self, partitions: Iterable[TopicPartition], timeout: float = -1) -> list[TopicPartition]:
        self._check_open()
        with _session(self._dir) as s:
            out = []
            for tp in partitions:
                offset = s.group_offset(self._group, tp.topic, tp.partition)
                out.append(TopicPartition(tp.topic, tp.partition, OFFSET_INVALID if offset is None else offset))
            return out

    def commit(self, message: Message | None = None, offsets: Iterable[TopicPartition] | None = None,
               asynchronous: bool = True) -> list[TopicPartition] | None:
        self._check_open()
        if message is not None and offsets is not None:
            raise ValueError("Commit takes either message or offsets, not both")
        if message is not None:
            offsets = [TopicPartition(message.topic(), message.partition(), message.offset() + 1)]
        elif offsets is None:
            offsets = [TopicPartition(t, p, a.position) for (t, p), a in self._assigned.items()
                       if a.position is not None]
        offsets = [tp for tp in offsets if tp.offset >= 0]
        if not offsets:
            raise KafkaException(KafkaError(KafkaError._NO_OFFSET))
        with _session(self._dir) as s:
            for tp in offsets:
                if not s.has(tp.topic, tp.partition):
                    raise KafkaException(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART,
                                                    f"committing {tp.topic} [{tp.partition}]: "
                                                    f"{KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART).str()}"))
            for tp in offsets:
                s.commit_group(self._group, tp.topic, tp.partition, tp.offset)
        if asynchronous:
            return None
        return [TopicPartition(tp.topic, tp.partition, tp.offset) for tp in offsets]

    def close(self) -> None:
        if self._closed:
            return
        if self._auto_commit and any(a.position is not None for a in self._assigned.values()):
            try:
                self.commit(asynchronous=False)
            except KafkaException:
                pass
        self._closed = True


# --- admin -------------------------------------------------------------------------------------


def _done(error: KafkaError | None) -> Future:
    future: Future = Future()
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(KafkaException(error))
    return future


class AdminClient(_Client):
    """confluent_kafka.admin.AdminClient's topic calls against the fake cluster."""

    def __init__(self, config: dict | None = None, **kwargs: Any):
        config = {**(config or {}), **kwargs}
        _validate("admin", config)
        self._dir = _directory(None)

    def create_topics(self, new_topics: list[NewTopic], operation_timeout: float = 0, request_timeout: float = -1,
                      validate_only: bool = False) -> dict[str, Future]:
        futures = {}
        with _session(self._dir) as s:
            for nt in new_topics:
                name = nt.topic
                n = DEFAULT_PARTITIONS if nt.num_partitions in (None, -1) else nt.num_partitions
                if s.topic(name) is not None:
                    error = KafkaError(KafkaError.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
                elif not _valid_topic(name):
                    error = KafkaError(KafkaError.TOPIC_EXCEPTION, f"Topic name \"{name}\" is illegal")
                elif n < 1:
                    error = KafkaError(KafkaError.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
                else:
                    error = None
                    if not validate_only:
                        s.create_topic(name, n, nt.config)
                futures[name] = _done(error)
        return futures

    def delete_topics(self, topics: list[str], operation_timeout: float = 0,
                      request_timeout: float = -1) -> dict[str, Future]:
        futures = {}
        with _session(self._dir) as s:
            for name in topics:
                if s.state["topics"].pop(name, None) is None:
                    futures[name] = _done(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART))
                else:
                    s.dirty = True
                    futures[name] = _done(None)
        return futures


def _valid_topic(name: str) -> bool:
    return (isinstance(name, str) and 0 < len(name) <= 249 and name not in (".", "..")
            and all(c.isascii() and (c.isalnum() or c in "._-") for c in name))


admin = types.ModuleType(__name__ + ".admin", "AdminClient and NewTopic of the fake Kafka cluster, "
                                              "as confluent_kafka.admin has them.")
for _name in ("AdminClient", "NewTopic", "ClusterMetadata", "TopicMetadata", "PartitionMetadata", "BrokerMetadata"):
    setattr(admin, _name, globals()[_name])
sys.modules.setdefault(admin.__name__, admin)


# --- helpers for tests -------------------------------------------------------------------------


def create_topic(directory: str | os.PathLike | None, name: str, partitions: int,
                 config: dict | None = None) -> None:
    """Create a topic (an error when it exists)."""
    with _session(directory) as s:
        if s.topic(name) is not None:
            raise KafkaException(KafkaError(KafkaError.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists."))
        s.create_topic(name, partitions, config)


def records(directory: str | os.PathLike | None, topic: str, committed_only: bool = True,
            markers: bool = False) -> list[dict]:
    """Every record of `topic` from each partition's log start, partition by partition:
    {partition, offset, key, value, headers, timestamp, state}, where state is "plain" (produced
    outside a transaction), "committed", "aborted" or "open". With `committed_only`, only what a
    read_committed consumer would ever see (plain and committed records, also past the LSO); with
    `markers`, transaction markers too (state "commit-marker" / "abort-marker")."""
    out = []
    with _session(directory) as s:
        n = s.partitions(topic)
        if n is None:
            raise KafkaException(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART, f"topic {topic!r} does not exist"))
        for p in range(n):
            log = s.log(topic, p)
            for offset in range(s.log_start(topic, p), log.end):
                status = log.status[offset]
                key, value, headers, ts, _, _, control = log.records[offset]
                if status == _MARKER:
                    if markers:
                        out.append({"partition": p, "offset": offset, "key": None, "value": None, "headers": None,
                                    "timestamp": ts, "state": f"{control}-marker"})
                    continue
                if committed_only and status not in (_PLAIN, _COMMITTED):
                    continue
                out.append({"partition": p, "offset": offset, "key": key, "value": value, "headers": headers,
                            "timestamp": ts, "state": _STATE_NAMES[status]})
    return out


def transactional_ids(directory: str | os.PathLike | None = None) -> dict[str, dict]:
    """{transactional.id: {"producer_id", "epoch", "open": [(topic, partition), ...] or None}}."""
    with _session(directory) as s:
        return {tid: {"producer_id": p["pid"], "epoch": p["epoch"],
                      "open": None if p["txn"] is None else [tuple(x) for x in p["txn"]["partitions"]]}
                for tid, p in s.state["producers"].items()}


def group_offsets(directory: str | os.PathLike | None, group: str) -> dict[tuple[str, int], int]:
    """The consumer group's committed offsets."""
    with _session(directory) as s:
        out = {}
        for k, v in s.state["groups"].get(group, {}).items():
            topic, partition = k.rsplit(":", 1)
            out[(topic, int(partition))] = v
        return out


def delete_records(directory: str | os.PathLike | None, topic: str, partition: int, before: int) -> None:
    """Move the partition's log start to `before`, as retention or AdminClient.delete_records would."""
    with _session(directory) as s:
        log = s.log(topic, partition)
        starts = s.state["topics"][topic]["log_start"]
        starts[partition] = max(starts[partition], min(before, log.end))
        s.dirty = True


def reset(directory: str | os.PathLike | None = None) -> None:
    """Forget every topic, transactional id and group: an empty cluster."""
    with _session(directory) as s:
        for t in s.state["topics"].values():
            folder = s.root / "logs" / t["id"]
            for f in folder.glob("*.jsonl"):
                f.unlink()
            if folder.exists():
                folder.rmdir()
        s.state = _fresh_state()
        s.dirty = True
