"""Debezium's MySQL connector (`io.debezium.connector.mysql.MySqlConnector`) as batch jobs: change events
from MySQL or MariaDB's binlog, with snapshots, in Debezium 2.3's shapes. One task, as Debezium has."""

from __future__ import annotations

from connectors.mysql import config as C
from ingest.api import SourceConnector
from ingest.config.configdef import ConfigDef


class MySqlConnector(SourceConnector):
    """Captures row changes of MySQL/MariaDB tables from the binlog, after an optional snapshot."""

    aliases = ("io.debezium.connector.mysql.MySqlConnector", "MySqlCdcSource", "MySqlCdc")

    def __init__(self, config):
        super().__init__(config)

    @classmethod
    def config_def(cls) -> ConfigDef:
        return C.mysql_config_def()

    def paths(self) -> list[tuple[str, str]]:
        return [(key, self.config[key]) for key in (C.SSL_TRUSTSTORE, C.SSL_KEYSTORE) if self.config[key]]

    def validate(self) -> list[str]:
        return [str(p) for p in C.check(self.config)]

    def warnings(self) -> list[str]:
        unused = C.history_keys_unused(self.config)
        if not unused:
            return []
        return [f"{', '.join(unused)}: not used; the schema history is kept in the lake's state, not in Kafka"]

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{}]  # the binlog is one ordered stream: one task, whatever tasks.max says (as Debezium)

    def send_signal(self, kind: str, collections: list[str]) -> str:
        """Write a Debezium signal row (`lakeconnect signal`); the batch whose binlog range holds it applies
        it. Every name must be a captured `<db>.<table>`: a typo is refused here, not ignored later."""
        import json
        import uuid

        from connectors.mysql import binlog
        from ingest.errors import ConfigError, Problem, RetriableError

        table = self.config[C.SIGNAL_DATA_COLLECTION]
        if not table:
            raise ConfigError([Problem(C.SIGNAL_DATA_COLLECTION, "is not set, so this connector reads no signals: "
                                       "set it to <db>.<table> of Debezium's signalling table (columns id, type, "
                                       "data) and update the connector")])
        captured = C.TableFilter.of(self.config)
        bad = [c for c in collections if c.count(".") != 1 or not captured.captures(*c.split("."))]
        if bad:
            raise ConfigError([Problem(None, f"not captured <db>.<table> names: {', '.join(bad)}; an incremental "
                                       "snapshot reads tables the connector captures (table.include.list, ...)")])
        signal_id = f"lakeconnect-{uuid.uuid4().hex[:12]}"
        db, name = table.split(".")
        settings = {"host": self.config[C.HOSTNAME], "port": int(self.config[C.PORT]), "user": self.config[C.USER],
                    "password": self.config.secret(C.PASSWORD) or "",
                    "connect_timeout": max(1, int(self.config[C.CONNECT_TIMEOUT_MS]) // 1000)}
        import pymysql

        try:
            conn = binlog.connect(settings)
            try:
                with conn.cursor() as cur:
                    cur.execute(f"INSERT INTO {binlog.quote(db)}.{binlog.quote(name)} (id, type, data) "
                                "VALUES (%s, %s, %s)",
                                (signal_id, kind, json.dumps({"data-collections": collections,
                                                              "type": "incremental"})))
            finally:
                conn.close()
        except pymysql.err.OperationalError as e:
            if not e.args or e.args[0] not in (2003, 2006, 2013):  # not "unreachable" or "connection lost"
                raise ConfigError([Problem(C.SIGNAL_DATA_COLLECTION, f"cannot write the signal into {table}: "
                                           f"{e.args[-1] if e.args else e}")]) from None
            raise RetriableError(f"cannot write the signal into {table} at {settings['host']}:{settings['port']}: "
                                 f"{e.args[-1] if e.args else e}") from None
        except pymysql.MySQLError as e:
            raise ConfigError([Problem(C.SIGNAL_DATA_COLLECTION, f"cannot write the signal into {table}: "
                                       f"{e.args[-1] if e.args else e}")]) from None
        return signal_id


from connectors.mysql.task import MySqlSourceTask  # noqa: E402

MySqlConnector.task_class = MySqlSourceTask
