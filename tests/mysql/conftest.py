"""The book's `inventory` database for the CDC tests of this directory."""

from tests.mysql._cdc import inventory  # noqa: F401 (a fixture, registered by being here)
