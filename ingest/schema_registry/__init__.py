"""The lake as a Confluent Schema Registry: its REST API (`api.py`, served by the REST server under
`/registry`), its state in the `_schemas` Delta table (`store.py`) and Avro's schema rules (`avro_schemas.py`)."""
