"""ingest.spark: the session factory the bridge runs on (kept beside the bridge's tests)."""

from __future__ import annotations

from ingest.spark import LOCAL_DEFAULTS, get_spark, jdbc_driver_jars, spark_conf


def test_conf_merges_settings_and_jars(tmp_path):
    (tmp_path / "postgresql-42.6.0.jar").write_text("")
    (tmp_path / "sqlite-jdbc.jar").write_text("")
    assert jdbc_driver_jars(str(tmp_path)) == [str(tmp_path / "postgresql-42.6.0.jar"), str(tmp_path / "sqlite-jdbc.jar")]
    conf = spark_conf({"spark.master": "local[2]", "spark.jars": "/opt/extra.jar", "not.spark": "x"})
    assert conf["spark.master"] == "local[2]" and "not.spark" not in conf
    assert conf["spark.jars"].split(",")[-1] == "/opt/extra.jar"
    assert conf["spark.sql.session.timeZone"] == "UTC"
    assert spark_conf({"spark.ui.enabled": "true"})["spark.ui.enabled"] == "true"
    assert spark_conf()["spark.master"] == "local[*]"


def test_one_session_per_process(spark):
    assert get_spark() is spark
    assert get_spark({"spark.master": "local[1]"}) is spark  # static settings are the first call's
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch") == LOCAL_DEFAULTS[
        "spark.sql.execution.arrow.maxRecordsPerBatch"
    ]
    assert spark.conf.get("spark.sql.parquet.outputTimestampType") == "TIMESTAMP_MICROS"


def test_a_local_driver_gets_a_quarter_of_the_memory_up_to_4g_unless_set(monkeypatch):
    import os

    from ingest import spark as S

    gib = 1 << 30
    for total, expected in ((24 * gib, "4096m"), (8 * gib, "2048m"), (2 * gib, "1024m")):
        monkeypatch.setattr(os, "sysconf", lambda name, t=total: 4096 if name == "SC_PAGE_SIZE" else t // 4096)
        assert spark_conf({"spark.master": "local[2]"})["spark.driver.memory"] == expected
    assert spark_conf({"spark.driver.memory": "3g"})["spark.driver.memory"] == "3g"
    assert "spark.driver.memory" not in spark_conf({"spark.master": "spark://127.0.0.1:7077"})
    assert S.local_driver_memory().endswith("m")
