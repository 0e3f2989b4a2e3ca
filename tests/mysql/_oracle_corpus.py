"""The history test_debezium_oracle.py feeds both Debezium and lakeconnect: tables and rows the snapshot
reads (SETUP), then statements the binlog carries (HISTORY), ending with a marker row whose event says a
connector has read everything. Every MariaDB 10.11 column type Debezium's MySQL connector 2.3 parses
(not MariaDB's own UUID and INET6, which its DDL grammar does not know), NULLs, defaults and column comments."""

from __future__ import annotations

TYPES = """CREATE TABLE types (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY COMMENT 'the key',
  ti TINYINT DEFAULT -5, tiu TINYINT UNSIGNED, bo BOOLEAN DEFAULT TRUE, si SMALLINT, siu SMALLINT UNSIGNED DEFAULT 7,
  mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT DEFAULT 42, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED,
  f FLOAT, f2 FLOAT(7,3), db DOUBLE DEFAULT 1.5, de DECIMAL(10,2) DEFAULT 3.25 COMMENT 'price, in euros',
  de0 DECIMAL(5,0), de30 DECIMAL(30,10),
  b1 BIT(1) DEFAULT b'1', b10 BIT(10), b64 BIT(64),
  c CHAR(5) DEFAULT 'abc', vc VARCHAR(20) NOT NULL DEFAULT 'né' COMMENT 'the row''s name',
  tt TINYTEXT, tx TEXT, mt MEDIUMTEXT, lt LONGTEXT,
  bn BINARY(4), vb VARBINARY(10), tb TINYBLOB, bl BLOB, mb MEDIUMBLOB, lb LONGBLOB,
  e ENUM('small','medium','large') DEFAULT 'medium', st SET('a','b','c') DEFAULT 'a,c', j JSON,
  d DATE DEFAULT '2020-02-29', tm TIME, tm3 TIME(3), tm6 TIME(6) DEFAULT '12:34:56.789012',
  dt DATETIME DEFAULT '2021-03-04 05:06:07', dt3 DATETIME(3) COMMENT 'a back\\\\slash', dt6 DATETIME(6),
  ts TIMESTAMP NULL DEFAULT '2022-01-01 00:00:00', ts6 TIMESTAMP(6) NULL, y YEAR DEFAULT 2024,
  g GEOMETRY, pt POINT, ls LINESTRING, pg POLYGON, mp MULTIPOINT, gc GEOMETRYCOLLECTION,
  l1 VARCHAR(10) CHARACTER SET latin1, u8 VARCHAR(10) CHARACTER SET utf8mb3, u4 TEXT CHARACTER SET utf8mb4,
  asc_ CHAR(3) CHARACTER SET ascii)"""

TYPE_COLUMNS = ("ti, tiu, bo, si, siu, mi, miu, i, iu, bi, biu, f, f2, db, de, de0, de30, b1, b10, b64, c, vc, tt, tx, "
                "mt, lt, bn, vb, tb, bl, mb, lb, e, st, j, d, tm, tm3, tm6, dt, dt3, dt6, ts, ts6, y, g, pt, ls, pg, "
                "mp, gc, l1, u8, u4, asc_")
TYPE_ROW_MAX = ("(127, 255, FALSE, 32767, 65535, 8388607, 16777215, 2147483647, 4294967295, 9223372036854775807, "
                "18446744073709551615, 3.5, 1234.567, 2.718281828459045, 99999999.99, 12345, "
                "12345678901234567890.0123456789, b'0', b'1010101010', b'" + "1" * 64 + "', "
                "'xy', 'héllo \"q\" \\\\', 'tiny', 'text', 'medium', 'long', x'00ff1000', x'0a0b', x'01', x'deadbeef', "
                "x'', x'00', 'large', 'b,c', '{\"k\": [1, 2.5, null, \"x\"]}', '1970-01-01', '838:59:59', "
                "'-01:02:03.250', '00:00:00.000001', '9999-12-31 23:59:59', '1969-12-31 23:59:59.999', "
                "'2000-02-29 12:00:00.000001', '2038-01-19 03:14:07', '1970-01-01 00:00:01.000001', 2155, "
                "ST_GeomFromText('POINT(1 2)'), ST_PointFromText('POINT(-1.5 2.25)', 4326), "
                "ST_GeomFromText('LINESTRING(0 0, 1 1, 2 0)'), ST_GeomFromText('POLYGON((0 0, 4 0, 4 4, 0 4, 0 0))'), "
                "ST_GeomFromText('MULTIPOINT(1 1, 2 2)'), "
                "ST_GeomFromText('GEOMETRYCOLLECTION(POINT(1 1), LINESTRING(0 0, 1 1))'), "
                "'café', 'ß€', 'emoji 🎉', 'abc')")
TYPE_ROW_MIN = ("(-128, 0, TRUE, -32768, 0, -8388608, 0, -2147483648, 0, -9223372036854775808, 0, -0.25, -0.001, "
                "-1e300, -0.01, -99999, -0.0000000001, b'1', b'0', b'0', '', '', '', '', '', '', x'', x'', x'', x'', "
                "x'', x'', 'small', '', '[]', '1000-01-01', '-838:59:59', '00:00:00', '-00:00:00.5', "
                "'1000-01-01 00:00:00', '1970-01-01 00:00:00.001', '1900-06-15 23:59:59.5', '1970-01-01 00:00:01', "
                "'2001-09-09 01:46:40.123456', 1901, NULL, NULL, NULL, NULL, NULL, NULL, '', '', '', '')")
TYPE_ROW_NULLS = "(" + ", ".join("''" if c == "vc" else "NULL" for c in TYPE_COLUMNS.split(", ")) + ")"

SETUP = [
    """CREATE TABLE kafka_books (id INT unsigned NOT NULL AUTO_INCREMENT, title VARCHAR(150) NOT NULL,
       subtitle VARCHAR(150) NOT NULL, published DATE NOT NULL, PRIMARY KEY (id))""",
    """INSERT INTO kafka_books (title, subtitle, published) VALUES
       ('Kafka Connect', 'Build and Run Data Pipelines', '2023-10-01'),
       ('Kafka The Definitive Guide', 'Real-time Data and Stream Processing at Scale', '2017-07-07')""",
    TYPES,
    f"INSERT INTO types ({TYPE_COLUMNS}) VALUES {TYPE_ROW_MAX}, {TYPE_ROW_MIN}, {TYPE_ROW_NULLS}",
    "INSERT INTO types () VALUES ()",
    "CREATE TABLE composite (a INT NOT NULL, b VARCHAR(10) NOT NULL, v BIGINT, PRIMARY KEY (b, a))",
    "INSERT INTO composite VALUES (1, 'x', 10), (2, 'y', NULL)",
    "CREATE TABLE keyless (n INT, s VARCHAR(20) DEFAULT 'none')",
    "INSERT INTO keyless VALUES (1, 'one'), (1, 'one'), (NULL, NULL)",
    "CREATE TABLE alter_me (id SMALLINT PRIMARY KEY, a VARCHAR(10), b INT)",
    "INSERT INTO alter_me VALUES (1, 'a', 1)",
    "CREATE TABLE renamed_from (id BIGINT UNSIGNED PRIMARY KEY, v VARCHAR(5))",
    "INSERT INTO renamed_from VALUES (1, 'r1')",
    "CREATE TABLE trunc (id INT PRIMARY KEY, v TEXT)",
    "INSERT INTO trunc VALUES (1, 't1'), (2, 't2')",
    # Clock defaults: Debezium's schema default for CURRENT_TIMESTAMP is the epoch.
    """CREATE TABLE clocked (id INT PRIMARY KEY, ts TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)
       ON UPDATE CURRENT_TIMESTAMP(3), dt DATETIME DEFAULT NOW(), big DECIMAL(38,10) DEFAULT -1.5,
       n NUMERIC(4,1) NOT NULL DEFAULT 0)""",
    "INSERT INTO clocked (id, ts, dt) VALUES (1, '2001-02-03 04:05:06.789', '2001-02-03 04:05:06')",
    "CREATE TABLE marker (id INT PRIMARY KEY, what VARCHAR(20))",
    "INSERT INTO marker VALUES (0, 'snapshot')",
]

HISTORY = [
    # The book's walk-through, then more of the same.
    "UPDATE kafka_books SET published = '2022-09-23' WHERE id = 2",
    "DELETE FROM kafka_books WHERE id = 1",
    "INSERT INTO kafka_books (title, subtitle, published) VALUES ('a', 'b', '1999-12-31'), ('c', 'd', '1970-01-01')",
    "UPDATE kafka_books SET title = 'several' WHERE id > 2",
    # Primary-key changes: a delete of the old key, its tombstone, a create of the new one.
    "UPDATE kafka_books SET id = 100 WHERE id = 2",
    "UPDATE composite SET a = 5 WHERE a = 1",
    "UPDATE composite SET b = 'z', v = 11 WHERE a = 2",
    "REPLACE INTO composite VALUES (2, 'z', 12)",
    "INSERT INTO composite VALUES (2, 'z', 0) ON DUPLICATE KEY UPDATE v = v + 1",
    "DELETE FROM composite WHERE a = 5",
    # Every type, in the binlog.
    f"INSERT INTO types ({TYPE_COLUMNS}) VALUES {TYPE_ROW_MAX}, {TYPE_ROW_MIN}, {TYPE_ROW_NULLS}",
    "INSERT INTO types () VALUES ()",
    "UPDATE types SET de = -de, vc = CONCAT(vc, '!'), tm6 = '-00:00:01', j = '{\"a\": {\"b\": true}}', "
    "st = 'a,b,c', b10 = b'11', pt = ST_GeomFromText('POINT(3 4)') WHERE id IN (1, 5)",
    "UPDATE types SET d = NULL, e = NULL, bl = NULL WHERE id = 2",
    "DELETE FROM types WHERE id IN (3, 6)",
    # Without a key: no key, updates and deletes of duplicate rows.
    "INSERT INTO keyless VALUES (2, 'two')",
    "UPDATE keyless SET s = 'uno' WHERE n = 1",
    "DELETE FROM keyless WHERE n IS NULL",
    # A transaction over several tables.
    "START TRANSACTION",
    "INSERT INTO composite VALUES (7, 'tx', 70)",
    "UPDATE alter_me SET a = 'tx' WHERE id = 1",
    "DELETE FROM trunc WHERE id = 2",
    "COMMIT",
    # Schema changes, each followed by rows of the new shape.
    "ALTER TABLE alter_me ADD COLUMN c VARCHAR(10) DEFAULT 'dflt', ADD COLUMN d DECIMAL(6,3) NOT NULL DEFAULT 1.5",
    "INSERT INTO alter_me (id, a, b) VALUES (2, 'b', 2)",
    "UPDATE alter_me SET c = 'set' WHERE id = 1",
    "ALTER TABLE alter_me DROP COLUMN b, MODIFY a VARCHAR(40) NOT NULL DEFAULT 'wide'",
    "INSERT INTO alter_me (id) VALUES (3)",
    "ALTER TABLE alter_me CHANGE c cc TEXT, ADD COLUMN t TIMESTAMP(3) NULL",
    "UPDATE alter_me SET cc = 'renamed column', t = '2024-05-06 07:08:09.123' WHERE id = 2",
    "RENAME TABLE renamed_from TO renamed_to",
    "INSERT INTO renamed_to VALUES (2, 'r2')",
    "UPDATE renamed_to SET v = 'r1b' WHERE id = 1",
    "INSERT INTO renamed_to VALUES (18446744073709551615, 'max')",
    "UPDATE clocked SET big = -1234567890123456789012345678.0123456789, n = -999.9",
    "INSERT INTO clocked (id, ts) VALUES (2, '2038-01-19 03:14:07.999')",
    "TRUNCATE TABLE trunc",
    "INSERT INTO trunc VALUES (3, 'after truncate')",
    "ALTER TABLE composite DROP PRIMARY KEY, ADD PRIMARY KEY (a)",
    "INSERT INTO composite VALUES (8, 'pk a', 80)",
    "CREATE TABLE created_later (id INT PRIMARY KEY, ts DATETIME(6) DEFAULT '2000-01-01 00:00:00')",
    "INSERT INTO created_later (id) VALUES (1)",
    "DROP TABLE keyless",
    # Zero dates, which a server without NO_ZERO_DATE keeps and Debezium reads as null.
    "SET SESSION sql_mode = ''",
    "INSERT INTO created_later VALUES (2, '0000-00-00 00:00:00')",
    "SET SESSION sql_mode = DEFAULT",
    "INSERT INTO marker VALUES (1, 'end')",
]
