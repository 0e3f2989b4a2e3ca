"""Kafka's built-in config providers: environment variables, properties files, files in a directory."""
