"""The two ways a row reaches a CDC topic give the same canonical text (real MariaDB with binlog): the
binlog decoder over a real binlog range, and the snapshot's SQL over the same row. Then Spark turns that
text into Debezium's values and schemas."""

from __future__ import annotations

import datetime as dt
import uuid

import pymysql
import pytest

from connectors.mysql import binlog, catalog
from connectors.mysql.types import Column, from_catalog, zoned

# Decoded at the server's default binlog_row_metadata (NO_LOG: columns from the schema history's model)
# and at FULL (the binlog's own names, checked against it).
pytestmark = pytest.mark.both_row_metadata

DDL = """CREATE TABLE {t} (
  id INT UNSIGNED NOT NULL AUTO_INCREMENT, title VARCHAR(150) NOT NULL, d DATE, dt3 DATETIME(3), dt6 DATETIME(6),
  ts TIMESTAMP(6) NULL, tm TIME(6), money DECIMAL(10,2), raw BLOB, vb VARBINARY(4), e ENUM('a','b'),
  s SET('x','y','z'), j JSON, b1 BIT(1), b3 BIT(10), y YEAR, f FLOAT, db DOUBLE, ti TINYINT, si SMALLINT UNSIGNED,
  bi BIGINT UNSIGNED, txt TEXT, PRIMARY KEY (id))"""
ROWS = [
    "('Kafka Connect','2023-10-01','2020-01-02 03:04:05.123','1969-12-31 23:59:59.999999','2020-01-02 03:04:05.5',"
    "'-01:02:03.25','-12.34',x'00ff10',x'0a0b','b','z,x','{\"a\": 1}',b'1',b'1000000101',2023,1.5,2.25,-7,65535,"
    "18446744073709551615,'héllo \"q\"')",
    "('Kafka The Definitive Guide','2017-07-07',NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,"
    "NULL,NULL,NULL,NULL,NULL,NULL,NULL)",
] + [f"('t','2017-07-07',NULL,NULL,NULL,'{tm}',NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,"
     "NULL)" for tm in ("-00:00:00.5", "-10:00:00.000001", "-838:59:58.999999", "00:00:01.75", "-00:00:02")]


@pytest.fixture
def table(services):
    settings = dict(host=services["LAKECONNECT_TEST_MARIADB_HOST"], port=int(services["LAKECONNECT_TEST_MARIADB_PORT"]),
                    user=services["LAKECONNECT_TEST_MARIADB_USER"], password=services["LAKECONNECT_TEST_MARIADB_PASSWORD"])
    db = "cdc_types_" + uuid.uuid4().hex[:8]
    conn = pymysql.connect(**settings, autocommit=True)
    cur = conn.cursor()
    cur.execute(f"CREATE DATABASE {db}")
    cur.execute(DDL.format(t=f"{db}.t"))
    start = binlog.master_position(cur)
    cur.execute(f"INSERT INTO {db}.t (title,d,dt3,dt6,ts,tm,money,raw,vb,e,s,j,b1,b3,y,f,db,ti,si,bi,txt) VALUES "
                + ",".join(ROWS))
    end = binlog.master_position(cur)
    yield settings, cur, db, start, end
    cur.execute(f"DROP DATABASE {db}")
    conn.close()


def _model(cur, db: str, table: str) -> str:
    """The schema history's model of one table as the catalog has it now (a snapshot's schema read)."""
    return catalog.read_catalog(cur, [(db, table)], mariadb=True).to_json()


def _decoded(settings, cur, db, start, end):
    segs = binlog.segments(binlog.binary_logs(pymysql.connect(**settings).cursor()), start, end)
    out = []
    for seg in segs:
        out += list(binlog.decode(settings, 7000, seg, {(db, "t")}, False, _model(cur, db, "t")))
    return out


def test_binlog_and_snapshot_sql_give_the_same_text(table, row_metadata):
    settings, cur, db, start, end = table
    events = _decoded(settings, cur, db, start, end)
    maps = [e for e in events if e[1] == "tablemap"]
    rows = [e for e in events if e[1] == "row"]
    assert len(maps) == 1 and [r[5] for r in rows] == ["c"] * 7
    import json
    layout = json.loads(maps[0][15])
    columns = [Column.from_json(c) for c in layout["columns"]]
    assert layout["pk"] == [0]
    assert layout["from"] == ("binlog" if row_metadata == "FULL" else "history") and "note" not in layout
    # The catalog's view of the same table is the table map's.
    cur.execute("SELECT * FROM information_schema.COLUMNS WHERE TABLE_SCHEMA=%s AND TABLE_NAME='t' "
                "ORDER BY ORDINAL_POSITION", (db,))
    names = [d[0] for d in cur.description]
    catalog = [from_catalog(dict(zip(names, r))) for r in cur.fetchall()]
    assert catalog == columns
    select = ", ".join(c.sql_text(f"`{c.name}`") for c in columns)
    cur.execute(f"SELECT {select} FROM {db}.t ORDER BY id")
    snapshot = [list(r) for r in cur.fetchall()]
    assert [r[7] for r in rows] == snapshot
    first = dict(zip([c.name for c in columns], snapshot[0]))
    assert first["d"] == str((dt.date(2023, 10, 1) - dt.date(1970, 1, 1)).days)
    assert first["dt6"] == "-1"  # one microsecond before the epoch
    assert first["tm"] == str(-(3723 * 1_000_000 + 250_000))
    assert first["s"] == "x,z" and first["e"] == "b"
    assert first["bi"] == "-1"  # BIGINT UNSIGNED max, as Debezium's long mode
    assert first["b3"] == (0b1000000101).to_bytes(2, "little").hex()
    assert first["raw"] == "00ff10" and first["txt"] == 'héllo "q"'


def test_spark_turns_the_text_into_debeziums_values(spark):
    cols = [Column("d", "date"), Column("ts", "timestamp", fsp=6), Column("ts0", "timestamp"),
            Column("dt3", "datetime", fsp=3), Column("money", "decimal", precision=10, scale=2),
            Column("raw", "blob", binary=True), Column("b1", "bit", bits=1), Column("e", "enum", labels=("a", "b"))]
    when = dt.datetime(2020, 1, 2, 3, 4, 5, 120000)
    texts = [cols[0].text(dt.date(2017, 7, 7)), cols[1].text(when), cols[2].text(when.replace(microsecond=0)),
             cols[3].text(when), cols[4].text(__import__("decimal").Decimal("-12.34")), cols[5].text(b"\x00\xff"),
             cols[6].text("1"), cols[7].text("b")]
    df = spark.createDataFrame([tuple(texts)], [c.name for c in cols])
    from pyspark.sql import functions as F
    row = df.select([c.spark_value(F.col(c.name)).alias(c.name) for c in cols]).collect()[0]
    assert row["d"] == 17354  # the book's 2017-07-07
    # a column's fractional digits are all printed, zeros too, as Debezium's ZonedTimestamp prints them
    assert row["ts"] == zoned(when, 6) == "2020-01-02T03:04:05.120000Z"
    assert zoned(when) == "2020-01-02T03:04:05.12Z" and zoned(when, 3) == "2020-01-02T03:04:05.120Z"
    assert row["ts0"] == "2020-01-02T03:04:05Z"
    assert row["dt3"] == 1577934245120
    assert str(row["money"]) == "-12.34" and bytes(row["raw"]) == b"\x00\xff"
    assert row["b1"] is True and row["e"] == "b"
    schemas = {c.name: c.connect_schema().to_json() for c in cols}
    assert schemas["d"] == {"type": "int32", "optional": True, "name": "io.debezium.time.Date", "version": 1}
    assert schemas["e"]["parameters"] == {"allowed": "a,b"}
    assert Column("id", "int", unsigned=True, nullable=False).connect_schema().to_json() == \
        {"type": "int64", "optional": False}  # the book's key: INT UNSIGNED -> int64


def test_catalog_defaults_become_debeziums_schema_defaults():
    """COLUMN_DEFAULT as MariaDB keeps it -> the default Debezium 2.3 puts in the column's schema (what
    test_debezium_oracle.py checks against the real Debezium, here without services)."""
    def column(data_type: str, column_type: str, default: str | None, **more) -> Column:
        return from_catalog({"COLUMN_NAME": "c", "DATA_TYPE": data_type, "COLUMN_TYPE": column_type,
                             "IS_NULLABLE": "YES", "COLUMN_DEFAULT": default, "EXTRA": "", **more})

    def default(c: Column):
        return c.connect_schema().to_json().get("default")

    assert default(column("tinyint", "tinyint(4)", "-5")) == -5
    assert default(column("decimal", "decimal(10,2)", "3.25", NUMERIC_PRECISION=10, NUMERIC_SCALE=2)) == "AUU="
    assert default(column("bit", "bit(1)", "b'1'", NUMERIC_PRECISION=1)) is True
    assert default(column("varchar", "varchar(20)", "'né'")) == "né"
    assert default(column("set", "set('a','b','c')", "'c,a'")) == "a,c"
    assert default(column("date", "date", "'2020-02-29'")) == 18321
    assert default(column("time", "time(6)", "'-12:34:56.789012'", DATETIME_PRECISION=6)) == -45296789012
    assert default(column("timestamp", "timestamp(3)", "current_timestamp(3)", DATETIME_PRECISION=3)) == \
        "1970-01-01T00:00:00Z"  # Debezium's default for a clock: the epoch
    assert default(column("datetime", "datetime", "'0000-00-00 00:00:00'")) is None  # a zero date: none
    assert default(column("int", "int(11)", "NULL")) is None and default(column("int", "int(11)", None)) is None
    assert column("float", "float(7,3)", None).connect_schema().type == "float64"  # FLOAT(M,D): a double
    point = column("point", "point", None).connect_schema()
    assert point.name == "io.debezium.data.geometry.Point"
    assert [f.name for f in point.fields] == ["x", "y", "wkb", "srid"]
    assert column("binary", "binary(4)", None, CHARACTER_OCTET_LENGTH=4).length == 4


def test_segments_follow_the_binlog_files():
    logs = [("bin.000001", 900), ("bin.000002", 500), ("bin.000003", 300)]
    segs = binlog.segments(logs, binlog.Position("bin.000001", 400), binlog.Position("bin.000003", 200))
    assert [(s.index, s.file, s.start, s.end) for s in segs] == [
        (0, "bin.000001", 400, None), (1, "bin.000002", 4, None), (2, "bin.000003", 4, 200)]
    with pytest.raises(LookupError):
        binlog.segments(logs, binlog.Position("bin.000000", 4), binlog.Position("bin.000003", 200))


def test_gtid_start_is_located_on_a_binlog_of_tens_of_mb(table):
    """Resuming by GTID on MariaDB: the library's GTID start packet is one byte short, which on a large
    binlog makes the server drop the connection; ours is right, and finds where each GTID continues."""
    settings, cur, db, _, _ = table
    cur.execute(f"CREATE TABLE {db}.big (id INT PRIMARY KEY, pad VARCHAR(1000))")
    before = binlog.master_position(cur)
    gtid_before = binlog.gtid_at(cur, before, True)
    for chunk in range(3):  # 3 transactions of ~8 MB each
        cur.execute(f"INSERT INTO {db}.big SELECT seq, REPEAT('x', 1000) FROM {db}.seq_{chunk * 8000 + 1}_to_{(chunk + 1) * 8000}")
    after = binlog.master_position(cur)
    assert after.pos - before.pos > 20_000_000 or after.file != before.file
    gtid_after = binlog.gtid_at(cur, after, True)
    cur.execute(f"INSERT INTO {db}.big VALUES (0, 'last')")
    assert binlog.locate_gtid(settings, 7200, gtid_before) == before
    assert binlog.locate_gtid(settings, 7201, gtid_after) == after
    # Streamed from the GTID over all 24 MB: each transaction once (the library's own packet makes the
    # server drop the connection here, and the library re-reads the same transactions forever).
    stream = binlog._MariadbGtidStream(connection_settings=settings, server_id=7203, auto_position=gtid_before,
                                       is_mariadb=True, blocking=False, resume_stream=True)
    try:
        seen = [e.gtid for e in stream if type(e).__name__ == "MariadbGtidEvent"]
    finally:
        stream.close()
    domain, server, number = gtid_before.split("-")
    assert seen == [f"{domain}-{server}-{int(number) + i}" for i in range(1, 5)]
    cur.execute("SELECT @@gtid_binlog_pos")
    assert binlog.locate_gtid(settings, 7202, cur.fetchone()[0]) is None  # nothing after the newest yet


def test_server_problems_name_the_setting_and_the_grants(table):
    settings, cur, db, _, _ = table
    assert binlog.server_problems(cur) == []  # root on the project's MariaDB
    cur.execute("SET GLOBAL binlog_row_image='MINIMAL'")
    try:
        problems = binlog.server_problems(cur)
    finally:
        cur.execute("SET GLOBAL binlog_row_image='FULL'")
    assert problems == ["binlog_row_image is MINIMAL, change events need FULL: SET GLOBAL binlog_row_image='FULL' "
                        "(and in the server's configuration)"]
    user = "cdc_" + db[-8:]
    cur.execute(f"CREATE USER '{user}'@'%' IDENTIFIED BY 'pw'")
    try:
        cur.execute(f"GRANT SELECT, RELOAD ON *.* TO '{user}'@'%'")
        limited = pymysql.connect(**{**settings, "user": user, "password": "pw"})
        try:
            assert binlog.missing_grants(limited.cursor()) == ["SHOW DATABASES", "REPLICATION SLAVE",
                                                               "REPLICATION CLIENT"]
        finally:
            limited.close()
    finally:
        cur.execute(f"DROP USER '{user}'@'%'")


FAST_DDL = """CREATE TABLE {t} (
  id BIGINT NOT NULL, ti TINYINT, tu TINYINT UNSIGNED, si SMALLINT, su SMALLINT UNSIGNED, mi MEDIUMINT,
  mu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED, bu BIGINT UNSIGNED, y YEAR, f FLOAT, db DOUBLE,
  d1 DECIMAL(2,2), d2 DECIMAL(10,2), d3 DECIMAL(65,30), d4 DECIMAL(20,0), d DATE, dt0 DATETIME, dt1 DATETIME(1),
  dt3 DATETIME(3), dt6 DATETIME(6), ts0 TIMESTAMP NULL, ts3 TIMESTAMP(3) NULL, ts5 TIMESTAMP(5) NULL,
  c CHAR(3), v VARCHAR(20), vl VARCHAR(300), l1 VARCHAR(10) CHARACTER SET latin1, txt TEXT, mt MEDIUMTEXT,
  PRIMARY KEY (id)) DEFAULT CHARSET=utf8mb4"""
FAST_ROWS = [
    "(1, -128, 255, -32768, 65535, -8388608, 16777215, -2147483648, 4294967295, 18446744073709551615, 1901, "
    "-1.5, 3.141592653589793, -0.99, -12345678.91, -12345678901234567890123456789012345.123456789012345678901234567891, "
    "-99999999999999999999, '1000-01-01', '1969-12-31 23:59:59', '2020-01-02 03:04:05.9', '1969-12-31 23:59:59.999', "
    "'9999-12-31 23:59:59.999999', '1970-01-01 00:00:01', '2038-01-19 03:14:07.999', '2001-02-03 04:05:06.12345', "
    "'a', 'ü€', REPEAT('é', 300), 'caf\xe9', 'héllo \"q\" 😀', REPEAT('x', 70000))",
    "(2, 127, 0, 32767, 0, 8388607, 0, 2147483647, 0, 0, 2155, 0, -0.0, 0.01, 0.00, 0, 0, '2017-07-07', "
    "'2017-07-07 00:00:00', '2017-07-07 00:00:00.0', '2017-07-07 00:00:00.001', '2017-07-07 00:00:00.000001', "
    "NULL, NULL, NULL, '', '', '', '', '', '')",
    "(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
    "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
    "(4, 0, 1, 0, 1, 0, 1, 0, 1, 9223372036854775808, 0, 1e-30, 1e300, 0.5, 99999999.99, 0.000000000000000000000000000001, "
    "1, '0000-00-00', '0000-00-00 00:00:00', '2020-00-00 00:00:00.0', '2020-02-00 00:00:00', '0000-00-00 00:00:00', "
    "'0000-00-00 00:00:00', NULL, NULL, 'abc', 'x', 'y', 'z', 'w', 'v')",
]


def test_fast_row_decoder_gives_the_librarys_texts(table, monkeypatch):
    """The row decoder compiled per table (connectors/mysql/rowcodec.py) gives exactly the texts of
    python-mysql-replication's values through Column.text, for inserts, updates and deletes of every type
    it reads; the snapshot's SQL agrees too. Tables with other types keep the library's decoding."""
    from connectors.mysql import rowcodec

    settings, cur, db, _, _ = table
    cur.execute("SET SESSION sql_mode='ALLOW_INVALID_DATES'")  # zero dates and zero-month datetimes allowed
    cur.execute(FAST_DDL.format(t=f"{db}.f"))
    model = _model(cur, db, "f")  # before the ALTERs below, which the decoder applies to it on its way
    start = binlog.master_position(cur)
    cur.execute(f"INSERT INTO {db}.f VALUES " + ",".join(FAST_ROWS))
    cur.execute(f"UPDATE {db}.f SET v = CONCAT(v, '!'), d2 = -d2, ts0 = '2001-01-01 00:00:00' WHERE id IN (1, 2)")
    cur.execute(f"UPDATE {db}.f SET i = 5 WHERE id = 3")
    cur.execute(f"DELETE FROM {db}.f WHERE id IN (2, 4)")
    # A VARCHAR widened past 255 characters: same columns to the layout, a two-byte length in the rows.
    cur.execute(f"ALTER TABLE {db}.f MODIFY v VARCHAR(200)")
    cur.execute(f"UPDATE {db}.f SET v = 'narrow' WHERE id = 1")
    cur.execute(f"ALTER TABLE {db}.f MODIFY v VARCHAR(300)")
    cur.execute(f"UPDATE {db}.f SET v = REPEAT('w', 280) WHERE id = 1")
    end = binlog.master_position(cur)
    segs = binlog.segments(binlog.binary_logs(cur), start, end)

    compiled, fast_events = [], []
    real_compile, real_decode = rowcodec.compile_row, rowcodec.decode_rows
    monkeypatch.setattr(rowcodec, "compile_row", lambda *a: compiled.append(real_compile(*a)) or compiled[-1])
    monkeypatch.setattr(rowcodec, "decode_rows", lambda *a: fast_events.append(real_decode(*a)) or fast_events[-1])
    fast = [e for seg in segs for e in binlog.decode(settings, 7010, seg, {(db, "f")}, False, model)]
    assert len(compiled) == 3 and None not in compiled  # one per row format: VARCHAR(20), (200), (300)
    assert len(fast_events) >= 7 and all(images is not None for images in fast_events)  # every event, fast

    monkeypatch.setattr(rowcodec, "decode_rows", lambda *a: None)  # the library reads every event
    slow = [e for seg in segs for e in binlog.decode(settings, 7011, seg, {(db, "f")}, False, model)]
    rows = [e for e in fast if e[1] == "row"]
    assert [r[5] for r in rows] == ["c"] * 4 + ["u"] * 3 + ["d"] * 2 + ["u"] * 2
    assert fast == slow
    assert rows[-1][6][26] == "narrow" and rows[-1][7][26] == "w" * 280

    import json
    columns = [Column.from_json(c) for c in json.loads([e for e in fast if e[1] == "tablemap"][0][15])["columns"]]
    cur.execute(f"SELECT {', '.join(c.sql_text(f'`{c.name}`') for c in columns)} FROM {db}.f ORDER BY id")
    snapshot = [list(r) for r in cur.fetchall()]  # rows 1 and 3 remain, as the last update left them
    assert [rows[-1][7], rows[6][7]] == snapshot
    first = dict(zip([c.name for c in columns], rows[0][7]))
    assert first["bu"] == "-1" and first["d3"] == "-12345678901234567890123456789012345.123456789012345678901234567891"
    assert first["d1"] == "-0.99" and first["dt3"] == "-1" and first["l1"] == "café" and first["mt"] == "x" * 70000
    zero = dict(zip([c.name for c in columns], rows[3][7]))
    assert zero["d"] is None and zero["dt0"] is None and zero["dt1"] is None and zero["ts0"] == "0"

    # A table with a TIME column is read by the library (the first table's test above shows its texts).
    assert rowcodec.compile_row([type("C", (), {"type": 19, "fsp": 0})()], [Column("tm", "time")]) is None
