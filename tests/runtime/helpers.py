"""Reading topic and state tables straight from Delta (no Spark) to compare end states."""

from __future__ import annotations

import json
from pathlib import Path

from deltalake import DeltaTable


def topic_rows(lake: Path, topic: str) -> list[tuple]:
    table = DeltaTable(str(lake / "topics" / topic)).to_pyarrow_table(
        columns=["partition", "offset", "key", "value", "headers"])
    rows = [(r["partition"], r["offset"], r["key"], r["value"], json.dumps(r["headers"], default=str))
            for r in table.to_pylist()]
    return sorted(rows)


def topic_commits(lake: Path, topic: str) -> int:
    return len([h for h in DeltaTable(str(lake / "topics" / topic)).history() if h.get("operation") != "CREATE TABLE"])
