"""JDBC URLs, credentials and identifier quoting (no database needed)."""

from __future__ import annotations

import pytest

from connectors.jdbc.dialects import MYSQL, POSTGRES, SQLITE, parse_jdbc_url, quote_identifier, redact
from ingest.errors import ConfigError


def test_book_url_is_mysql_for_spark_and_sqlalchemy():
    url = parse_jdbc_url("jdbc:mysql://localhost:3306/inventory")
    assert (url.dialect, url.host, url.port, url.database) == (MYSQL, "localhost", 3306, "inventory")
    assert url.spark_url() == "jdbc:mysql://localhost:3306/inventory"
    assert parse_jdbc_url("jdbc:mariadb://db/inv").spark_url() == "jdbc:mysql://db/inv"  # Spark's MySQL dialect
    assert str(url.sqlalchemy_url("bob", "s3cret")).startswith("mysql+pymysql://bob:")


def test_postgres_and_sqlite_urls():
    pg = parse_jdbc_url("jdbc:postgresql://127.0.0.1:5432/shop?sslmode=disable")
    assert (pg.dialect, pg.database, pg.params) == (POSTGRES, "shop", {"sslmode": "disable"})
    assert pg.spark_url() == "jdbc:postgresql://127.0.0.1:5432/shop?sslmode=disable"
    lite = parse_jdbc_url("jdbc:sqlite:/data/inventory.db")
    assert (lite.dialect, lite.database) == (SQLITE, "/data/inventory.db")
    assert lite.spark_url() == "jdbc:sqlite:/data/inventory.db"


def test_credentials_from_url_parameters_never_reach_spark_url_or_repr():
    url = parse_jdbc_url("jdbc:mysql://db:3306/inv?user=app&password=hunter2&useSSL=false")
    assert url.credentials(None, None) == ("app", "hunter2")
    assert url.credentials("other", "pw") == ("other", "pw")  # connection.user/password win
    assert "hunter2" not in url.spark_url() and "user=" not in url.spark_url()
    assert "hunter2" not in repr(url)
    assert redact("jdbc:postgresql://app:hunter2@db/inv") == "jdbc:postgresql://app:[hidden]@db/inv"


@pytest.mark.parametrize("url,expected", [
    ("mysql://localhost/inv", "is not a JDBC URL"),
    ("jdbc:oracle:thin:@//db:1521/x", "no dialect for 'jdbc:oracle:'"),
    ("jdbc:sqlite::memory:", "needs a database file"),
    ("jdbc:mysql:localhost/inv", "has no host"),
    ("jdbc:mysql://h:99999999/inv?password=topsecret", "invalid port"),
])
def test_bad_urls_name_the_key_and_hide_the_password(url, expected):
    with pytest.raises(ConfigError) as e:
        parse_jdbc_url(url)
    assert "connection.url" in str(e.value) and expected in str(e.value)
    assert "topsecret" not in str(e.value)


def test_identifiers_are_always_quoted_so_names_cannot_carry_sql():
    evil = "books`; DROP TABLE users; --"
    assert quote_identifier(evil, MYSQL) == "`books``; DROP TABLE users; --`"
    assert quote_identifier('a"b', POSTGRES) == '"a""b"'
    assert quote_identifier("books", MYSQL, "NEVER") == "books"
    with pytest.raises(ConfigError, match="quote.sql.identifiers"):
        quote_identifier(evil, MYSQL, "NEVER")


def test_only_the_dialects_know_which_database_they_are():
    """What differs between databases is asked of the dialect (its attributes and methods): no module of the
    connector but dialects.py names a database's dialect, so no branch on which database it is."""
    import re
    from pathlib import Path

    package = Path(__file__).resolve().parents[2] / "connectors" / "jdbc"
    named = {p.name: sorted(set(re.findall(r"\b(?:MYSQL|POSTGRES|SQLITE)\b", p.read_text(encoding="utf-8"))))
             for p in sorted(package.glob("*.py")) if p.name != "dialects.py"}
    assert not {f: n for f, n in named.items() if n}, named
