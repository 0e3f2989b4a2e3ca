"""Java's hashing as Spark column expressions, for output that follows the iteration order of a
`java.util.HashMap` (Debezium's transaction `data_collections`, the maps Confluent's AvroData writes)."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F


def string_hash(text: Column) -> Column:
    """`String.hashCode()` over the UTF-16 code units, as an unsigned 32-bit value (a long)."""
    units = F.hex(F.encode(text, "UTF-16BE"))
    n = F.length(units) / 4
    unit = lambda i: F.conv(F.substring(units, i * 4 + 1, 4), 16, 10).cast("long")  # noqa: E731
    return F.aggregate(F.sequence(F.lit(0), (n - 1).cast("int")), F.lit(0).cast("long"),
                       lambda h, i: (h * 31 + unit(i)).bitwiseAND(0xFFFFFFFF))


def hashmap_capacity(size: Column) -> Column:
    """The table size of a `new HashMap<>()` after `size` puts: 16, doubled while more than 3/4 full."""
    return F.greatest(F.lit(16), F.pow(F.lit(2), F.ceil(F.log2(F.ceil(size / 0.75)))).cast("long"))


def hashmap_bucket(key: Column, capacity: Column) -> Column:
    """The bucket of a String key: HashMap.hash (the hash's high half spread into the low) masked by the size."""
    h = string_hash(key)
    return h.bitwiseXOR(F.shiftright(h, 16)).bitwiseAND(capacity - 1)


def hashmap_order(map_col: Column) -> Column:
    """A map with String keys, its entries in the order a `new HashMap<>()` filled in the map's own order
    iterates them: by bucket, then in insertion order within one. (A bucket of 8 or more would become a tree:
    not modelled.)"""
    entries = F.map_entries(map_col)
    capacity = hashmap_capacity(F.size(entries))
    keyed = F.transform(entries, lambda e, i: F.struct(hashmap_bucket(e["key"], capacity).alias("bucket"),
                                                       i.alias("at"), e.alias("entry")))
    return F.map_from_entries(F.transform(F.array_sort(keyed), lambda x: x["entry"]))
