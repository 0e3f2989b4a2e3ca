"""Kafka's single message transforms, as column expressions over whole batches."""
