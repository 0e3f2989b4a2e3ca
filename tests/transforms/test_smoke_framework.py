from connectors.predicates import RecordIsTombstone
from connectors.transforms.regex_router import RegexRouter
from tests.transforms.helpers import SCHEMALESS, apply, batch_of, make, records


def test_scoped_transform_one_pass_with_predicate(spark):
    b = batch_of(spark, [{"value": {"a": 1}}, {"value": None}], value_schema=SCHEMALESS)
    t = make(RegexRouter, {"regex": "(.*)", "replacement": "$1-x"})
    out = apply(t, b, make(RecordIsTombstone, {}), negate=True)
    assert len(out) == 1
    assert [r["topic"] for r in records(out[0])] == ["test-x", "test"]
    assert records(out[0])[0]["value"] == {"a": 1}
