from ingest.cli import run

run()
