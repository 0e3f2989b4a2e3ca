"""`${secretManager:secret-id:key}` against the S3-compatible test server's Secrets Manager endpoint
(moto, over HTTP), declared in the worker as MSK Connect declares it; and a JDBC source whose MariaDB
login comes from a secret, run end to end without the password showing anywhere."""

from __future__ import annotations

import json
import uuid

import boto3
import pytest
import sqlalchemy as sa
from deltalake import DeltaTable

from ingest.config.providers import ConfigResolver
from ingest.errors import ConfigError
from ingest.registry import default_registry
from tests.conftest import cli, write_worker
from tests.jdbc._books import MARIADB_BOOKS, ROWS


def _msk_worker(endpoint: str, **extra: str) -> dict[str, str]:
    """The worker lines of MSK Connect's docs, plus the endpoint of the local server."""
    return {"config.providers": "secretManager",
            "config.providers.secretManager.class":
                "com.github.jcustenborder.kafka.config.aws.SecretsManagerConfigProvider",
            "config.providers.secretManager.param.aws.region": "us-east-1",
            "config.providers.secretManager.param.aws.endpoint.url": endpoint, **extra}


def _secret(endpoint: str, name: str, value: str) -> None:
    client = boto3.client("secretsmanager", endpoint_url=endpoint, region_name="us-east-1")
    client.create_secret(Name=name, SecretString=value)


def test_resolves_keys_of_json_secrets(s3_endpoint):
    name = f"rds-staging-{uuid.uuid4().hex[:8]}"
    _secret(s3_endpoint, name, json.dumps({"username": "debezium", "password": "dbz-Pa55", "port": 3306}))
    _secret(s3_endpoint, f"staging/{name}", json.dumps({"username": "prefixed"}))
    _secret(s3_endpoint, f"{name}-plain", "not-json-S3cr3t")
    resolver = ConfigResolver(default_registry(), _msk_worker(s3_endpoint))
    resolved = resolver.resolve({"database.user": f"${{secretManager:{name}:username}}",
                                 "database.password": f"${{secretManager:{name}:password}}",
                                 "database.port": f"${{secretManager:{name}:port}}", "plain": "x"})
    assert resolved == {"database.user": "debezium", "database.password": "dbz-Pa55", "database.port": "3306",
                        "plain": "x"}
    prefixed = ConfigResolver(default_registry(), _msk_worker(
        s3_endpoint, **{"config.providers.secretManager.param.secret.prefix": "staging"}))
    assert prefixed.resolve({"u": f"${{secretManager:{name}:username}}"}) == {"u": "prefixed"}

    with pytest.raises(ConfigError) as e:
        resolver.resolve({"a": "${secretManager:no-such-secret:password}",
                          "b": f"${{secretManager:{name}:nokey}}",
                          "c": f"${{secretManager:{name}-plain:password}}"})
    assert [p.key for p in e.value.problems] == ["a", "b", "c"]
    text = str(e.value)
    assert "Could not find secret 'no-such-secret'" in text and "no key 'nokey'" in text
    assert "is not a JSON object" in text and "not-json-S3cr3t" not in text


def test_jdbc_login_from_a_secret(tmp_path, services, s3_endpoint):
    suffix = uuid.uuid4().hex[:8]
    database, user, password = f"lc_sm_{suffix}", f"lc_sm_{suffix}", f"Sm-{suffix}-Pa55"
    admin = sa.create_engine(services["LAKECONNECT_TEST_MARIADB_URL"])
    with admin.begin() as c:
        c.exec_driver_sql(f"CREATE DATABASE {database}")
        c.exec_driver_sql(f"CREATE USER '{user}'@'127.0.0.1' IDENTIFIED BY '{password}'")
        c.exec_driver_sql(f"GRANT SELECT ON {database}.* TO '{user}'@'127.0.0.1'")
        c.exec_driver_sql(f"USE {database}")
        c.exec_driver_sql(MARIADB_BOOKS)
        c.exec_driver_sql(ROWS)
    secret = f"mariadb-{suffix}"
    _secret(s3_endpoint, secret, json.dumps({"username": user, "password": password}))
    try:
        lake = tmp_path / "lake"
        lake.mkdir()
        worker = write_worker(tmp_path / "worker.properties", lake, **_msk_worker(s3_endpoint))
        base = services["LAKECONNECT_TEST_MARIADB_JDBC"].rsplit("/", 1)[0]
        config = tmp_path / "source.json"
        config.write_text(json.dumps({"name": "books", "config": {
            "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector", "mode": "bulk",
            "connection.url": f"{base}/{database}", "table.whitelist": "kafka_books", "topic.prefix": "sm-",
            "connection.user": f"${{secretManager:{secret}:username}}",
            "connection.password": f"${{secretManager:{secret}:password}}"}}))
        results = [cli("connectors", "create", str(config), worker=worker),
                   cli("run", "books", worker=worker, env={"LAKECONNECT_DEBUG": "1"}),
                   cli("connectors", "get", "books", worker=worker),
                   cli("connectors", "status", "books", worker=worker)]
        assert all(r.returncode == 0 for r in results), [r.stderr for r in results]
        assert DeltaTable(str(lake / "topics" / "sm-kafka_books")).to_pyarrow_table().num_rows == 2
        shown = "".join(r.stdout + r.stderr for r in results)
        assert f"${{secretManager:{secret}:password}}" in shown  # stored and shown as the reference
        state = "".join(json.dumps(DeltaTable(str(t)).to_pyarrow_table().to_pylist(), default=str)
                        for t in (lake / "_connect").iterdir())
        assert password not in shown and password not in state
    finally:
        with admin.begin() as c:
            c.exec_driver_sql(f"DROP DATABASE {database}")
            c.exec_driver_sql(f"DROP USER '{user}'@'127.0.0.1'")
        admin.dispose()
