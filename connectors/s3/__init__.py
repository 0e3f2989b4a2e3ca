"""Confluent's S3 sink connector (kafka-connect-s3 10.5) as a batch job."""
