"""Pytest fixtures for the real test services started by tests/services/up.sh.

Load with ``pytest_plugins = ["tests.services.fixtures"]`` in tests/conftest.py.

``services`` (session) reads .services/services.env (or the file named by $LAKECONNECT_SERVICES_ENV)
into a dict and checks that every service answers; if the file is missing or a service is down the
test FAILS (never skips): the services are part of the test suite, not optional extras.
The other fixtures hand out one address each; ``s3_endpoint`` also sets the fake AWS credentials and
region moto expects for the rest of the session. ``kafka`` also creates topics through the broker's
admin API (the broker does not create topics on first use).
"""

from __future__ import annotations

import os
import socket
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SERVICES_ENV = Path(os.environ.get("LAKECONNECT_SERVICES_ENV", REPO_ROOT / ".services" / "services.env"))
NOT_RUNNING = "test services are not running: run `make services-up` (or `make test`)"

REQUIRED_KEYS = (
    "LAKECONNECT_TEST_MARIADB_URL",
    "LAKECONNECT_TEST_MARIADB_JDBC",
    "LAKECONNECT_TEST_POSTGRES_URL",
    "LAKECONNECT_TEST_POSTGRES_JDBC",
    "LAKECONNECT_TEST_S3_ENDPOINT",
    "LAKECONNECT_TEST_KAFKA_BOOTSTRAP",
)


def read_env_file(path: Path) -> dict[str, str]:
    """KEY=value lines (shell style; comments, blank lines, `export ` and quotes allowed)."""
    env: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export "):].lstrip()
        key, sep, value = line.partition("=")
        if not sep:
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        env[key.strip()] = value
    return env


def _tcp(host: str, port: int, timeout: float = 2.0) -> None:
    with socket.create_connection((host, port), timeout=timeout):
        pass


def _check_mariadb(env: dict[str, str]) -> None:
    import pymysql

    u = urlsplit(env["LAKECONNECT_TEST_MARIADB_URL"])
    conn = pymysql.connect(host=u.hostname, port=u.port or 3306, user=u.username or "root",
                           password=u.password or "", database=u.path.lstrip("/") or None,
                           connect_timeout=3)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT 1")
    finally:
        conn.close()


def _check_postgres(env: dict[str, str]) -> None:
    import psycopg

    u = urlsplit(env["LAKECONNECT_TEST_POSTGRES_URL"])
    with psycopg.connect(host=u.hostname, port=u.port or 5432, user=u.username or "postgres",
                         password=u.password or None, dbname=u.path.lstrip("/"),
                         connect_timeout=3) as conn:
        conn.execute("SELECT 1")


def _check_s3(env: dict[str, str]) -> None:
    try:
        urllib.request.urlopen(env["LAKECONNECT_TEST_S3_ENDPOINT"] + "/", timeout=3)
    except urllib.error.HTTPError:
        pass  # any HTTP answer will do


def _check_kafka(env: dict[str, str]) -> None:
    bootstrap = env["LAKECONNECT_TEST_KAFKA_BOOTSTRAP"]
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    _tcp(host, int(port))  # fail fast: the admin client would retry for the whole timeout
    from confluent_kafka.admin import AdminClient

    AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=5)


_CHECKS = {
    "mariadb": _check_mariadb,
    "postgres": _check_postgres,
    "s3": _check_s3,
    "kafka": _check_kafka,
}


# tests/services/pytest.sh sets this for the MySQL CDC tests, which it runs on two pytest workers: each
# worker then has a private MariaDB of its own (up.sh starts one per worker), as every CDC batch reads
# its server's binlog up to the end and some tests restart the server or purge its binlogs.
PER_WORKER = "LAKECONNECT_TEST_MARIADB_PER_WORKER"


def _worker_mariadb(env: dict[str, str]) -> dict[str, str]:
    """`env` with the MariaDB addresses of this pytest-xdist worker's own instance (gw0: the first)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    ports = env.get("LAKECONNECT_TEST_MARIADB_PORTS", "").split()
    sockets = env.get("LAKECONNECT_TEST_MARIADB_SOCKETS", "").split()
    n = int(worker.removeprefix("gw") or 0)
    if n >= len(ports) or len(sockets) != len(ports):
        pytest.fail(f"{PER_WORKER}: pytest worker {worker} has no MariaDB of its own ({SERVICES_ENV} lists "
                    f"ports {ports}): start more with LAKECONNECT_MARIADB_INSTANCES or run fewer workers",
                    pytrace=False)
    port, first = ports[n], env["LAKECONNECT_TEST_MARIADB_PORT"]
    out = dict(env, LAKECONNECT_TEST_MARIADB_PORT=port, LAKECONNECT_TEST_MARIADB_SOCKET=sockets[n])
    for key in ("LAKECONNECT_TEST_MARIADB_URL", "LAKECONNECT_TEST_MARIADB_JDBC"):
        out[key] = env[key].replace(f"127.0.0.1:{first}/", f"127.0.0.1:{port}/")
    return out


@pytest.fixture(scope="session")
def services() -> dict[str, str]:
    """All LAKECONNECT_TEST_* addresses from .services/services.env, after checking each service answers."""
    if not SERVICES_ENV.is_file():
        pytest.fail(f"{NOT_RUNNING} ({SERVICES_ENV} is missing)", pytrace=False)
    env = read_env_file(SERVICES_ENV)
    if os.environ.get(PER_WORKER):
        env = _worker_mariadb(env)
    missing = [k for k in REQUIRED_KEYS if not env.get(k)]
    if missing:
        pytest.fail(f"{NOT_RUNNING} ({SERVICES_ENV} lacks {', '.join(missing)})", pytrace=False)
    down = []
    for name, check in _CHECKS.items():
        try:
            check(env)
        except Exception as exc:  # noqa: BLE001 -- any failure means "not answering"
            down.append(f"{name}: {type(exc).__name__}: {exc}")
    if down:
        pytest.fail(f"{NOT_RUNNING} (not answering: {'; '.join(down)})", pytrace=False)
    return env


@pytest.fixture(scope="session")
def mariadb_url(services: dict[str, str]) -> str:
    """SQLAlchemy URL of the private binlog MariaDB, e.g. mysql+pymysql://root@127.0.0.1:3316/lakeconnect_test."""
    return services["LAKECONNECT_TEST_MARIADB_URL"]


@pytest.fixture(scope="session")
def mariadb_jdbc(services: dict[str, str]) -> str:
    """JDBC URL of the private MariaDB (user root, empty password), e.g. jdbc:mysql://127.0.0.1:3316/lakeconnect_test."""
    return services["LAKECONNECT_TEST_MARIADB_JDBC"]


@pytest.fixture(scope="session")
def postgres_url(services: dict[str, str]) -> str:
    """SQLAlchemy URL of PostgreSQL, e.g. postgresql+psycopg://postgres@127.0.0.1:5432/lakeconnect_test."""
    return services["LAKECONNECT_TEST_POSTGRES_URL"]


@pytest.fixture(scope="session")
def postgres_jdbc(services: dict[str, str]) -> str:
    """JDBC URL of PostgreSQL (user/password in LAKECONNECT_TEST_POSTGRES_USER/_PASSWORD of `services`)."""
    return services["LAKECONNECT_TEST_POSTGRES_JDBC"]


@pytest.fixture(scope="session")
def s3_endpoint(services: dict[str, str]):
    """moto's endpoint URL, e.g. http://127.0.0.1:5055; sets fake AWS credentials + us-east-1 meanwhile."""
    with pytest.MonkeyPatch.context() as mp:
        for key in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
            mp.delenv(key, raising=False)
        mp.setenv("AWS_ACCESS_KEY_ID", "testing")
        mp.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        mp.setenv("AWS_DEFAULT_REGION", "us-east-1")
        mp.setenv("AWS_REGION", "us-east-1")
        yield services["LAKECONNECT_TEST_S3_ENDPOINT"]


@pytest.fixture(scope="session")
def kafka_bootstrap(services: dict[str, str]) -> str:
    """bootstrap.servers of the test bed's Kafka broker (topics orders:5, topic-to-export:1)."""
    return services["LAKECONNECT_TEST_KAFKA_BOOTSTRAP"]


@dataclass(frozen=True)
class KafkaService:
    """A Kafka cluster for tests: the test bed's broker, or the one KAFKA_BOOTSTRAP_SERVERS names."""

    bootstrap: str

    def admin(self):
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": self.bootstrap})

    def create_topic(self, name: str, partitions: int, configs: dict[str, str] | None = None) -> None:
        """Create topic `name` through the admin API; fine if it already has exactly that many partitions."""
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import NewTopic

        admin = self.admin()
        future = admin.create_topics([NewTopic(name, partitions, 1, config=dict(configs or {}))])[name]
        try:
            future.result(30)
        except KafkaException as e:
            if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
            have = len(admin.list_topics(name, timeout=10).topics[name].partitions)
            if have != partitions:
                raise RuntimeError(f"topic {name} already exists with {have} partitions, not {partitions}") from e
        # The controller answers before the broker's metadata has the topic: wait as the backend's create does.
        from ingest.topics.kafka import KafkaClients, KafkaTopic

        KafkaTopic(KafkaClients.from_configs({"kafka.bootstrap.servers": self.bootstrap}), name).await_listed()

    @staticmethod
    def unique_topic(prefix: str) -> str:
        """A topic name no other test uses: the broker lives for the whole session."""
        return f"{prefix}-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def kafka(services: dict[str, str]) -> KafkaService:
    """The test bed's Kafka broker: ``.bootstrap``, ``.create_topic(name, partitions)``,
    ``.unique_topic(prefix)``; or, when KAFKA_BOOTSTRAP_SERVERS names another cluster, that one (it must
    allow transactions and topic creation through the admin API)."""
    return KafkaService(bootstrap=os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
                        or services["LAKECONNECT_TEST_KAFKA_BOOTSTRAP"])
