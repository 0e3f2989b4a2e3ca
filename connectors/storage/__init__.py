"""Partitioners and formats of the Confluent storage connectors (the S3 sink)."""
