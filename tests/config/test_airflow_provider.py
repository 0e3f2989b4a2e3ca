"""`${airflow:conn_id:field}` through Airflow's own connection lookup (its AIRFLOW_CONN_<ID> variables here;
the same call reads secrets backends and the metadata database)."""

from __future__ import annotations

import json

import pytest

from ingest.config.providers import ConfigResolver
from ingest.errors import ConfigError
from ingest.registry import default_registry

WORKER = {"config.providers": "airflow", "config.providers.airflow.class": "AirflowConnectionConfigProvider"}


def test_fields_of_an_airflow_connection(monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_INVENTORY_DB", json.dumps({
        "conn_type": "mysql", "login": "debezium", "password": "dbz-Airflow-5ecret", "host": "db.internal",
        "port": 3306, "schema": "inventory", "extra": {"server_id": "184054"}}))
    resolver = ConfigResolver(default_registry(), WORKER)
    assert resolver.resolve({
        "database.hostname": "${airflow:inventory_db:host}", "database.port": "${airflow:inventory_db:port}",
        "database.user": "${airflow:inventory_db:login}", "database.password": "${airflow:inventory_db:password}",
        "database.server.id": "${airflow:inventory_db:server_id}",
    }) == {"database.hostname": "db.internal", "database.port": "3306", "database.user": "debezium",
           "database.password": "dbz-Airflow-5ecret", "database.server.id": "184054"}

    with pytest.raises(ConfigError) as e:
        resolver.resolve({"a": "${airflow:no_such_conn:password}", "b": "${airflow:inventory_db:nofield}"})
    text = str(e.value)
    assert "Airflow has no connection 'no_such_conn'" in text and "no key 'nofield'" in text
    assert "dbz-Airflow-5ecret" not in text
