"""Small helpers shared by the converter tests."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame


def column_bytes(df: DataFrame, column: str = "value") -> list[bytes | None]:
    """The values of a binary column, in row order, as bytes."""
    return [None if r[column] is None else bytes(r[column]) for r in df.select(column).collect()]


def values(df: DataFrame, column: str = "value") -> list[Any]:
    return [r[column] for r in df.select(column).collect()]


def executed_plan(df: DataFrame) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


PYTHON_NODES = ("BatchEvalPython", "ArrowEvalPython", "PythonUDF", "MapInArrow", "MapInPandas")


def assert_no_python(df: DataFrame) -> None:
    plan = executed_plan(df)
    assert not any(node in plan for node in PYTHON_NODES), plan
