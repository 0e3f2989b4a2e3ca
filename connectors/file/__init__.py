"""FileStreamSource and FileStreamSink: Kafka's example connectors, used by the book in ch. 3 and 7.

Not loadable unless the worker sets `file.connectors.enable=true`: they read and write arbitrary files.
"""
