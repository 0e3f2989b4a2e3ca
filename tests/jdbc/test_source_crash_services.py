"""The JDBC source on MariaDB and PostgreSQL, killed after every step of a batch (compared with a run that
never crashed), and names that carry SQL.

Each crash test costs about a dozen CLI runs (one Spark start each): the second batch is killed after
each step in turn, each run resuming the batch the previous one left, rather than one test per step.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from tests.conftest import cli
from tests.jdbc._books import (
    CRASH_CONNECTOR, INJECTING_CONFIGS, ODD_CONFIG, Books, check_crash_at_every_step, check_odd_copy,
    check_refused, create_books, create_connector, create_odd_table, execute, odd_names, run,
)


# Each mode is killed at every step on one database: bulk, incrementing and timestamp on SQLite
# (test_source_sqlite.py), timestamp+incrementing on MariaDB, incrementing also on PostgreSQL. A crash
# chain costs about a dozen Spark starts (~2 min), and the whole matrix on every database (12 chains) did
# not fit CI's time with the other connectors' chains; the batch's staging and offsets do not depend on
# the database, and each dialect's bulk and timestamp+incrementing SQL (whose WHERE clauses the other
# modes use in part) runs uncrashed in test_source_services.py and test_source_extras.py.
SERVER_MODES = [("mariadb", "timestamp+incrementing"), ("postgres", "incrementing")]


@pytest.mark.parametrize(("database", "mode"), SERVER_MODES, indirect=["database"])
def test_crash_at_every_step_of_a_batch(tmp_path, database, mode):
    kind, _, engine, _, _ = database

    def start(tag: str, config: dict[str, str]) -> Books:
        create_books(engine, kind)
        worker = create_connector(tmp_path / tag, database, CRASH_CONNECTOR, config)
        return Books(tmp_path / tag / "lake", worker, lambda statements: execute(engine, *statements))

    check_crash_at_every_step(start, mode)


def test_names_with_quotes_and_sql_are_copied_and_settings_with_sql_refused(tmp_path, database):
    kind, _, engine, _, _ = database
    quote = "`" if kind == "mariadb" else '"'
    table, ident, _, _ = odd_names(quote)
    create_odd_table(lambda statements: execute(engine, *statements), quote, "INT")

    def check_tables() -> None:
        assert {"kafka_books", table} <= set(sa.inspect(engine).get_table_names())
        with engine.connect() as c:
            assert c.exec_driver_sql("SELECT count(*) FROM kafka_books").scalar() == 2

    for name, config, key in INJECTING_CONFIGS:
        create_connector(tmp_path / name, database, name, {"topic.prefix": "bad-", **config})
        check_refused(cli("run", name, worker=tmp_path / name / "worker.properties"), key)
    check_tables()

    worker = create_connector(tmp_path / "odd", database, "odd", {
        **ODD_CONFIG, "table.whitelist": table, "incrementing.column.name": ident})
    run(worker, "odd")
    check_odd_copy(tmp_path / "odd" / "lake", quote)
    check_tables()
