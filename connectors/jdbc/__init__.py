"""Confluent's JDBC source connector on Spark: connector, task, dialects, discovery and type mapping."""
