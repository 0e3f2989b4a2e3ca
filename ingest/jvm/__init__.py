"""Small Java classes that Spark calls inside its generated code, where Python would cost a round trip.

`python -m ingest.jvm` compiles `src/` against Spark's own jars into `lakeconnect-jvm.jar` beside this
file (the set-up script runs it; it needs a JDK's `javac`). A session from `ingest.spark.get_spark` has
the jar on its class path when it exists. Without it (no JDK, or a session started elsewhere) callers
use their Python implementation, which gives the same results more slowly.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from ingest.cache import BoundedSet

if TYPE_CHECKING:
    from pyspark.sql import Column, SparkSession
    from pyspark.sql.types import DataType

log = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
JAR = HERE / "lakeconnect-jvm.jar"
SOURCES = HERE / "src"

# (Spark application id, class) that application could not load: tried and logged once. A process runs one
# application at a time, and has a handful of classes.
_unavailable: BoundedSet[tuple[str, str]] = BoundedSet(256)
# (session, function name) known to be registered: asking the catalog is a JVM round trip (2 to 4 ms), several
# times a batch. A session's temporary functions stay until it stops. A dozen functions per session, a few
# sessions per process (newSession()); one dropped is only asked of the catalog again.
_known: BoundedSet[tuple[tuple[int, str], str]] = BoundedSet(1024)


def sources() -> list[Path]:
    return sorted(SOURCES.rglob("*.java"))


def jar_path() -> Path | None:
    """The built jar, when it exists and is newer than every source."""
    if not JAR.is_file():
        return None
    built = JAR.stat().st_mtime
    return JAR if all(src.stat().st_mtime <= built for src in sources()) else None


def build(force: bool = False) -> Path:
    """Compile the sources into the jar (nothing to do when it is up to date)."""
    if not force and jar_path() is not None:
        return JAR
    javac, jar = shutil.which("javac"), shutil.which("jar")
    if not javac or not jar:
        raise RuntimeError("building lakeconnect-jvm.jar needs a JDK (javac and jar on PATH), "
                           "e.g. apt-get install openjdk-17-jdk-headless")
    import pyspark

    spark_jars = Path(pyspark.__file__).resolve().parent / "jars"
    classpath = [str(p) for pattern in ("spark-sql-api_*.jar", "spark-catalyst_*.jar", "spark-unsafe_*.jar",
                                        "spark-common-utils_*.jar", "scala-library-*.jar", "kryo-shaded-*.jar")
                 for p in sorted(spark_jars.glob(pattern))]
    if not any("spark-sql-api" in p for p in classpath):
        raise RuntimeError(f"no spark-sql-api jar under {spark_jars}: is pyspark installed?")
    with tempfile.TemporaryDirectory(prefix="lakeconnect-jvm-") as out:
        subprocess.run([javac, "--release", "17", "-nowarn", "-cp", ":".join(classpath), "-d", out,
                        *map(str, sources())], check=True)
        tmp_jar = JAR.with_suffix(".jar.tmp")
        subprocess.run([jar, "cf", str(tmp_jar), "-C", out, "."], check=True)
        tmp_jar.replace(JAR)
    return JAR


def java_function(spark: SparkSession, name: str, class_name: str, return_type: DataType,
                  deterministic: bool = True) -> bool:
    """Make `class_name` (a Spark Java UDF) the SQL function `name` of this session, if not done yet.
    A nondeterministic one is called exactly once per row, in the order rows reach it (Spark neither
    repeats nor reorders it).

    False when the session cannot load the class (the jar was not on its class path at start-up); that
    is remembered per Spark application, so the attempt and its log line happen once.
    """
    def register() -> None:
        if deterministic:
            spark.udf.registerJavaFunction(name, class_name, return_type)
        else:
            session = spark._jsparkSession
            udf = _typed_udf(spark, _instance(spark, class_name), session.parseDataType(return_type.json()))
            session.udf().register(name, udf.asNondeterministic())

    return _registered(spark, name, class_name, register)


def java_expression(spark: SparkSession, name: str, builder_class: str) -> bool:
    """Make `builder_class` (a Java `Function1<Seq<Expression>, Expression>`) the SQL function `name` of this
    session, if not done yet: for Spark expressions of our own, which Spark code-generates inline (a UDF's
    arguments are converted to Java objects first). False, as for `java_function`, when the session
    cannot load the class."""
    def register() -> None:
        registry = spark._jsparkSession.sessionState().functionRegistry()
        registry.createOrReplaceTempFunction(name, _instance(spark, builder_class), "java_udf")

    return _registered(spark, name, builder_class, register)


BATCH_CONSTANT = "lakeconnect_batch_constant"


def batch_constant(value: Column) -> Column:
    """`value`, a constant that changes from batch to batch (a batch's timestamp), read from the query's
    reference objects instead of written into its generated code, so that the next batch's query reuses
    this one's compiled code (see BatchConstant.java). `value` itself where the jar is not loaded."""
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    spark = SparkSession.getActiveSession()
    if spark is not None and java_expression(spark, BATCH_CONSTANT, "io.lakeconnect.BatchConstantBuilder"):
        return F.call_function(BATCH_CONSTANT, value)
    return value


def _typed_udf(spark: SparkSession, instance, return_type):
    """`functions.udf(UDFn f, DataType)` for the Java UDF interface `instance` implements. Called by
    reflection: Py4J picks among `udf`'s overloads in the order the JVM lists them, which varies from run to
    run, and may take `udf(Object, DataType)`, the untyped Scala UDF that Spark refuses."""
    jvm, gateway = spark._jvm, spark.sparkContext._gateway
    interface = next((i for i in instance.getClass().getInterfaces()
                      if i.getName().startswith("org.apache.spark.sql.api.java.UDF")), None)
    if interface is None:
        raise TypeError(f"{instance.getClass().getName()} implements no org.apache.spark.sql.api.java.UDFn")
    types = gateway.new_array(jvm.java.lang.Class, 2)
    types[0], types[1] = interface, jvm.java.lang.Class.forName("org.apache.spark.sql.types.DataType")
    args = gateway.new_array(jvm.java.lang.Object, 2)
    args[0], args[1] = instance, return_type
    return jvm.java.lang.Class.forName("org.apache.spark.sql.functions").getMethod("udf", types).invoke(None, args)


def _instance(spark: SparkSession, class_name: str):
    jvm = spark._jvm
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    return jvm.java.lang.Class.forName(class_name, True, loader).newInstance()


def session_key(spark: SparkSession) -> tuple[int, str]:
    """Identifies one Spark session of this process (its JVM gateway and the session's object there): what
    was made in the JVM for a session (a registered function, a column expression) holds while it does."""
    return id(spark.sparkContext._gateway), spark._jsparkSession._target_id


def _registered(spark: SparkSession, name: str, class_name: str, register) -> bool:
    known = (session_key(spark), name)
    if known in _known:
        return True
    if spark.catalog.functionExists(name):
        _known.add(known)
        return True
    app = spark.sparkContext.applicationId
    if (app, class_name) in _unavailable:
        return False
    try:
        register()
        _known.add(known)
        return True
    except Exception as e:  # noqa: BLE001 - any failure to load means: use the Python implementation
        log.info("%s is not on this Spark session's class path (%s); using the Python implementation. "
                 "Start the session with spark.jars=%s for the faster one.", class_name,
                 str(e).splitlines()[0][:200], JAR)
        _unavailable.add((app, class_name))
        return False


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        path = build(force="--force" in args)
    except (RuntimeError, subprocess.CalledProcessError) as e:
        print(f"lakeconnect-jvm: {e}", file=sys.stderr)
        return 1
    print(f"lakeconnect-jvm: {path}")
    return 0
