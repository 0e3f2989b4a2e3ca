"""lakeconnect runtime: contracts, configuration, Delta state, the batch runner and the CLI.

`ingest` owns every contract and never imports `connectors` (plugins are found through entry points).
"""

__version__ = "0.1.0"
