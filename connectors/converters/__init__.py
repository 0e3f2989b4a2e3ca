"""Kafka Connect's built-in converters as Spark column expressions, one module per Kafka class.

JsonConverter, StringConverter, ByteArrayConverter, BooleanConverter, the number converters (Short, Integer,
Long, Float, Double) and SimpleHeaderConverter. Each produces exactly the bytes Kafka's own class produces.
"""
