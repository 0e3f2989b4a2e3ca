"""lakeconnect plugins: connectors, converters, transforms … implementing the contracts in `ingest`.

Found through entry points (see `ingest.registry`); nothing here registers itself on import.
"""
