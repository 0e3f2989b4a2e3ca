import pytest


@pytest.fixture(scope="session")
def spark():
    from ingest.spark import stop_spark
    from tests.conftest import spark_session

    yield spark_session()
    stop_spark()
