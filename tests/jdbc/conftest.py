"""The `database` fixture of the JDBC source tests on the test services: a fresh MariaDB database or
PostgreSQL schema holding the book's kafka_books table."""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa

from tests.jdbc._books import create_books


@pytest.fixture(params=["mariadb", "postgres"])
def database(request, services):
    """(kind, JDBC URL, SQLAlchemy engine, schema, services) of a fresh database holding the book's table."""
    kind = request.param
    name = f"lc_jdbc_{uuid.uuid4().hex[:10]}"
    if kind == "mariadb":
        admin = sa.create_engine(services["LAKECONNECT_TEST_MARIADB_URL"])
        with admin.begin() as c:
            c.exec_driver_sql(f"CREATE DATABASE {name}")
        base = services["LAKECONNECT_TEST_MARIADB_JDBC"].rsplit("/", 1)[0]
        jdbc, schema = f"{base}/{name}", None
        engine = sa.create_engine(services["LAKECONNECT_TEST_MARIADB_URL"].rsplit("/", 1)[0] + f"/{name}")
    else:
        admin = sa.create_engine(services["LAKECONNECT_TEST_POSTGRES_URL"])
        with admin.begin() as c:
            c.exec_driver_sql(f"CREATE SCHEMA {name}")
        jdbc, schema = services["LAKECONNECT_TEST_POSTGRES_JDBC"], name
        engine = sa.create_engine(services["LAKECONNECT_TEST_POSTGRES_URL"],
                                  connect_args={"options": f"-csearch_path={name}"})
    create_books(engine, kind)
    yield kind, jdbc, engine, schema, services
    engine.dispose()
    with admin.begin() as c:
        c.exec_driver_sql(f"DROP DATABASE {name}" if kind == "mariadb" else f"DROP SCHEMA {name} CASCADE")
    admin.dispose()
