import pytest


@pytest.fixture(scope="session")
def spark():
    from ingest.spark import get_spark, stop_spark

    session = get_spark({"spark.sql.shuffle.partitions": "4"}, app_name="lakeconnect-tests")
    yield session
    stop_spark()
