"""Fixtures of other directories the Kafka backend's tests share: the book's `inventory` database (CDC)
and a fresh bucket on the S3 server."""

from tests.mysql._cdc import inventory  # noqa: F401 (fixtures, registered by being here)
from tests.s3.test_book import bucket  # noqa: F401
