"""`${airflow:conn_id:field}`: a field of an Airflow connection, for connectors scheduled by Airflow.

Fields: `login`, `password`, `host`, `port`, `schema`, `conn_type`, `uri`, and any key of the connection's
extra. The connection is looked up as Airflow's own components look it up: its secrets backends, the
`AIRFLOW_CONN_<ID>` environment variables, then the metadata database of the `AIRFLOW_HOME` configured.
Needs the `airflow` extra. Declare it in the worker: `config.providers=airflow`,
`config.providers.airflow.class=AirflowConnectionConfigProvider`.
"""

from __future__ import annotations

from typing import Any

from ingest.config.providers import ConfigProvider
from ingest.errors import ConfigError, Problem

_FIELDS = ("login", "password", "host", "port", "schema", "conn_type")


class AirflowConnectionConfigProvider(ConfigProvider):
    aliases = ("io.lakeconnect.config.AirflowConnectionConfigProvider",)

    def get(self, path: str, keys: set[str]) -> dict[str, str]:
        connection = self._connection(path)
        values: dict[str, Any] = {f: getattr(connection, f, None) for f in _FIELDS}
        values["uri"] = connection.get_uri()
        extra = connection.extra_dejson if connection.extra else {}
        values.update({k: v for k, v in extra.items() if k not in values})
        return {k: str(values[k]) for k in keys if values.get(k) not in (None, "")}

    @staticmethod
    def _connection(conn_id: str):
        if not conn_id:
            raise ConfigError([Problem(None, "name the connection: ${airflow:<conn_id>:<field>}")])
        try:
            from airflow.exceptions import AirflowNotFoundException
            from airflow.models.connection import Connection
        except ImportError:
            raise ConfigError([Problem(None, "Airflow is not installed here: install the `airflow` extra "
                                             "(pip install 'lakeconnect[airflow]')")]) from None
        try:
            return Connection.get_connection_from_secrets(conn_id)
        except AirflowNotFoundException:
            raise ConfigError([Problem(None, f"Airflow has no connection '{conn_id}': add it (UI: Admin > "
                                             f"Connections, or AIRFLOW_CONN_{conn_id.upper()})")]) from None
