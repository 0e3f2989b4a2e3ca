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

    def validate(self) -> list[str]:
        return [str(p) for p in C.check(self.config)]

    def warnings(self) -> list[str]:
        unused = C.history_keys_unused(self.config)
        if not unused:
            return []
        return [f"{', '.join(unused)}: not used; the schema history is kept in the lake's state, not in Kafka"]

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{}]  # the binlog is one ordered stream: one task, whatever tasks.max says (as Debezium)


from connectors.mysql.task import MySqlSourceTask  # noqa: E402

MySqlConnector.task_class = MySqlSourceTask
