"""MySQL / MariaDB binlog CDC, shaped as Debezium's MySQL connector (work in progress: not registered yet)."""
