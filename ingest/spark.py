"""The Spark session: one per process, local by default, tuned for Arrow hand-offs to Python.

`get_spark(settings)` takes the worker's `spark.*` settings verbatim (`spark.master` included) over
local defaults chosen for these jobs: UTC session time, Arrow between the JVM and Python with large
batches, reused Python workers, a modest shuffle width, no UI. JDBC drivers installed from Debian
packages (/usr/share/java) are put on the class path when present.
"""

from __future__ import annotations

import glob
import os
import socket
import sys
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ingest.cache import BoundedCache
from ingest.errors import ConfigError, Problem, RetriableError
from ingest.jvm import jar_path, session_key
from ingest.runtime import faults

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
JAVA_SHARE = "/usr/share/java"
# Debian's names, with or without a version in the file name.
JDBC_DRIVER_JARS = ("mariadb-java-client", "postgresql", "sqlite-jdbc")

LOCAL_DEFAULTS: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # Fewer, larger Arrow batches: per-batch overhead dominates Python-side writers at 10k rows.
    "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
    "spark.python.worker.reuse": "true",
    # PySpark's DataFrame debugging records the Python call site of every Column and function call in the
    # JVM: about six bridge round trips each, two thirds of a 100-table batch's (175k calls, 62k without).
    # Our errors name the connector, table and record themselves.
    "spark.python.sql.dataFrameDebugging.enabled": "false",
    # Delta stores timestamps as microseconds; Spark's Parquet default (INT96) is not readable as such.
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    # HotSpot leaves methods over 8,000 bytes of bytecode interpreted. Whole-stage code generation writes
    # one such method for a stage that builds Debezium envelopes or JSON records with schemas, so the
    # stage's per-row loop never got compiled: with the flag a CDC batch's write step took 15-20% less and
    # a 1M-row snapshot 30% (tests/bench/bench_mysql.py, docs/benchmarks.md).
    "spark.driver.extraJavaOptions": "-Duser.timezone=UTC -XX:-DontCompileHugeMethods",
    "spark.executor.extraJavaOptions": "-Duser.timezone=UTC -XX:-DontCompileHugeMethods",
}

_lock = threading.Lock()
_session: SparkSession | None = None


def jdbc_driver_jars(share: str = JAVA_SHARE) -> list[str]:
    """Paths of the installed JDBC driver jars (each at most once; missing drivers are skipped)."""
    found: list[str] = []
    for name in JDBC_DRIVER_JARS:
        exact = os.path.join(share, f"{name}.jar")
        if os.path.isfile(exact):
            found.append(exact)
            continue
        versioned = sorted(glob.glob(os.path.join(share, f"{name}-[0-9]*.jar")))
        if versioned:
            found.append(versioned[-1])
    return found


def spark_avro_jar() -> str | None:
    """Spark's Avro functions (the AvroConverter's), fetched by `make setup` into `.jars/spark-avro/`
    (`$LAKECONNECT_JARS/spark-avro/`), when its version is the running pyspark's."""
    import pyspark

    root = os.environ.get("LAKECONNECT_JARS") or os.path.join(os.path.dirname(os.path.dirname(__file__)), ".jars")
    exact = os.path.join(root, "spark-avro", f"spark-avro_2.13-{pyspark.__version__}.jar")
    return exact if os.path.isfile(exact) else None


def spark_conf(settings: Mapping[str, str] | None = None) -> dict[str, str]:
    """The effective `spark.*` configuration: local defaults, then `settings`, jars merged."""
    conf = dict(LOCAL_DEFAULTS)
    conf["spark.master"] = DEFAULT_MASTER
    given = {k: str(v) for k, v in (settings or {}).items() if k.startswith("spark.")}
    conf.update(given)
    conf.update(faults.executor_env())
    if conf["spark.master"].startswith("local") and "spark.driver.memory" not in given:
        conf["spark.driver.memory"] = local_driver_memory()
    jars = jdbc_driver_jars()
    own = jar_path()
    if own is not None:  # lakeconnect's Java functions (Kafka's partitioner), when built
        jars.append(str(own))
    avro = spark_avro_jar()
    if avro is not None and "spark-avro" not in given.get("spark.jars.packages", ""):
        jars.append(avro)
    extra = [j.strip() for j in given.get("spark.jars", "").split(",") if j.strip()]
    all_jars = list(dict.fromkeys(jars + extra))
    if all_jars:
        conf["spark.jars"] = ",".join(all_jars)
    else:
        conf.pop("spark.jars", None)
    return conf


def local_driver_memory() -> str:
    """The driver heap of a local session: a quarter of the machine's memory, from 1 to 4 GiB. In local mode
    the driver JVM is also the executor, and Spark's default 1 GiB holds neither a batch over a thousand
    tables (their plans) nor much data per task; `spark.driver.memory` in the worker config overrides it."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return "1g"
    return f"{min(4096, max(1024, total // 4 // (1 << 20)))}m"


def get_spark(settings: Mapping[str, str] | None = None, app_name: str = "lakeconnect") -> SparkSession:
    """The process's Spark session, created on first use with `settings` over the local defaults.

    Later calls return the same session whatever their arguments (Spark allows one SparkContext per
    process, and its static settings — master, jars, memory — are fixed when it starts).
    """
    global _session
    from pyspark.sql import SparkSession

    with _lock:
        if _session is not None and _alive(_session):
            return _session
        active = SparkSession.getActiveSession()
        if active is not None:  # started by someone else (a notebook, a test harness): use it
            _session = active
            return active
        # Python workers must run this interpreter (the venv), not whatever `python3` is on PATH.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        conf = spark_conf(settings)
        master = conf.get("spark.master", DEFAULT_MASTER)
        check_master(master)
        builder = SparkSession.builder.appName(app_name)
        for key, value in conf.items():
            builder = builder.config(key, value)
        try:
            _session = builder.getOrCreate()
        except Exception as e:  # Py4J's error: the JVM's reason is in its first line
            reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise RetriableError(f"Spark could not start with spark.master={master} ({reason}); check the "
                                 "master is running and the worker config's spark.* settings") from e
        _session.sparkContext.setLogLevel("WARN")
        return _session


MASTER_CONNECT_TIMEOUT_S = 5.0


def check_master(master: str) -> None:
    """A standalone master (`spark://host:port[,host:port…]`, several with ZooKeeper HA) must answer
    before Spark starts: Spark itself retries registration for about a minute and then fails with a
    Java trace. RetriableError naming the addresses when none accepts a connection."""
    if not master.startswith("spark://"):
        return
    failures = []
    for address in master[len("spark://"):].split(","):
        host, _, port = address.strip().rpartition(":")
        if not host or not port.isdigit():
            raise ConfigError([Problem("spark.master", f"'{master}' is not spark://HOST:PORT[,HOST:PORT…]")])
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=MASTER_CONNECT_TIMEOUT_S):
                return
        except OSError as e:
            failures.append(f"{host}:{port}: {e.strerror or e}")
    raise RetriableError(f"the Spark master {master} (spark.master in the worker config) is unreachable "
                         f"({'; '.join(failures)}); start the master or fix spark.master. No record was read or written: the next run starts this batch again")


def _alive(session: SparkSession) -> bool:
    sc = session.sparkContext
    return getattr(sc, "_jsc", None) is not None


def current_session() -> SparkSession | None:
    """The process's Spark session if it has been started and is alive; never starts one."""
    session = _session
    return session if session is not None and _alive(session) else None


def jvm_exited() -> int | None:
    """The exit status of this process's Spark JVM if it was started here and has stopped (an
    OutOfMemoryError in local mode ends it), else None."""
    session = _session
    proc = getattr(getattr(session.sparkContext, "_gateway", None), "proc", None) if session is not None else None
    return proc.poll() if proc is not None else None


def stop_spark() -> None:
    """Stop the process's Spark session, if one is running."""
    global _session
    from pyspark.sql import SparkSession

    with _lock:
        session = _session or SparkSession.getActiveSession()
        _session = None
        if session is not None:
            session.stop()


class SessionCache:
    """Values built for a Spark session, kept for its later batches. Building a column expression costs a
    Py4J round trip per node (a JSON envelope's or a topic's staging columns: 30 to 80 ms a batch); the
    same expression is valid for every query of the session, so a connector's next batch takes it from
    here. Keys must hold everything the value depends on. At most `size` entries, the least recently used
    going first (a value holds its expression's objects in the JVM); threads may share it."""

    def __init__(self, size: int = 256):
        self.size = size
        self._values: BoundedCache[tuple, object] = BoundedCache(size)

    def get(self, spark: SparkSession, key: tuple, build):
        return self._values.get_or_build((session_key(spark), *key), build)
