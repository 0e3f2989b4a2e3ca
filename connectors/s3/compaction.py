"""Opt-in compaction of an S3 sink's objects (`lakeconnect compact <connector>`): in every directory that
stopped receiving objects (its newest one older than `min_age_ms`: a closed time partition), the small
objects of each Kafka partition are merged, in offset order, into fewer objects of up to `target_bytes`.

The naming contract holds: a merged object takes the name of the first object it merges (the same
topic, partition and start offset), so a reader that lists a directory still finds every record once,
in objects named by their first offset; the merged ones are then deleted. Keys and headers objects
are merged the same way beside their values.

Exactly once: the plan (each group's objects and sizes) is recorded before anything changes, and a run
killed halfway finishes the recorded plan first: a group whose first object already has the merged size
only has its other objects deleted. Only objects below the sink's committed offsets are touched (a
crashed sink batch may still rewrite its own), under the leases of all the connector's tasks (no sink batch
runs meanwhile). Offsets altered or reset meanwhile do not abandon a planned compaction, which is finished
whatever the offsets say: planned anew, it would merge over a merged object whose sources still exist.
"""

from __future__ import annotations

import contextlib
import io
import re
import time
from dataclasses import dataclass
from typing import Any

from connectors.s3 import config as C
from connectors.storage.avro import read_long, write_long
from connectors.storage.store import from_config
from ingest.config.connector import TASKS_MAX
from ingest.config.worker import LOCKS_DIR
from ingest.errors import ConfigError, Problem
from ingest.runtime.faults import point as crash_point
from ingest.runtime.batches import BatchLog, task_lease

COMPACTION_TASK = -1  # the run history row of the compaction job, beside the sink's tasks
MAGIC = b"Obj\x01"


@dataclass(frozen=True)
class Group:
    """Objects of one directory and Kafka partition, consecutive by offset, merged into the first: the
    value objects first, then each kind of companion (keys, headers), each with its objects' sizes."""

    kinds: tuple[tuple[tuple[str, ...], tuple[int, ...]], ...]

    @property
    def keys(self) -> tuple[str, ...]:
        return self.kinds[0][0]

    def to_json(self) -> dict[str, Any]:
        return {"kinds": [[list(keys), list(sizes)] for keys, sizes in self.kinds]}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Group:
        return cls(tuple((tuple(keys), tuple(sizes)) for keys, sizes in d["kinds"]))


def compact(worker, name: str, sink_class: type, *, min_age_ms: int = 3_600_000, target_bytes: int = 128 * 2**20,
            dry_run: bool = False) -> dict[str, Any]:
    """Compact connector `name`'s objects; a summary of what was (or, with `dry_run`, would be) merged.

    `sink_class`: the S3 sink's connector class (connectors/s3/sink.py passes it, so that this module need not
    import the sink, which imports it); only connectors of that class are compacted."""
    found = worker.stores.configs.require(name)
    setup = worker.validate(found["config"])
    if not issubclass(setup.info.cls, sink_class):
        raise ConfigError([Problem("connector.class", f"connector '{name}' is not an S3 sink: only S3 sink "
                                                      "objects are compacted")])
    config = setup.config
    # Raw bytes in, raw bytes out: a gzip object is merged as concatenated gzip members (valid gzip).
    store = from_config({**dict(config), "s3.compression.type": "none"})
    store.check()
    # Every task's lease, in order (as runs take theirs): no sink batch of any task runs while objects merge.
    with contextlib.ExitStack() as held:
        for task in range(config[TASKS_MAX]):
            held.enter_context(task_lease(worker.lake_root, name, task, worker.config[LOCKS_DIR]).acquire(
                f"connector '{name}' task {task} (for compaction)"))
        log = BatchLog(worker.stores.runs, name, COMPACTION_TASK)
        current = log.next()
        if current.resumed and not dry_run:
            plan = [Group.from_json(g) for g in current.plan["groups"]]
        else:
            plan = _plan(worker, name, config, store, min_age_ms, target_bytes)
            if dry_run or not plan:
                return _summary(plan, dry_run=True)
            log.planned(current, {"groups": [g.to_json() for g in plan]})
        crash_point("plan")
        for group in plan:
            _merge(store, group, C.S3SinkSettings.from_config(config).directory_delim)
        crash_point("merge")
        summary = _summary(plan, dry_run=False)
        log.committed(current, summary)
        return summary


def _summary(plan: list[Group], *, dry_run: bool) -> dict[str, Any]:
    return {"groups": len(plan), "objects_merged": sum(len(g.keys) for g in plan),
            "objects_after": len(plan), "bytes": sum(sum(g.kinds[0][1]) for g in plan), "dry_run": dry_run}


def _plan(worker, name: str, config, store, min_age_ms: int, target_bytes: int) -> list[Group]:
    """The groups to merge: per directory (closed) and Kafka partition, runs of objects below the
    committed offset, each run up to `target_bytes`."""
    committed = {(e.partition["kafka_topic"], e.partition["kafka_partition"]): e.offset["kafka_offset"]
                 for e in worker.stores.offsets.committed(f"connect-{name}").values()}
    settings = C.S3SinkSettings.from_config(config)
    d, f = settings.directory_delim, settings.file_delim
    now = int(time.time() * 1000)
    listed = store.list_info(settings.topics_dir + d)
    by_dir: dict[str, list[tuple[str, int, int]]] = {}
    for key, size, modified in listed:
        directory, _, _ = key.rpartition(d)
        by_dir.setdefault(directory, []).append((key, size, modified))
    groups: list[Group] = []
    for directory, objects in sorted(by_dir.items()):
        if now - max(m for _, _, m in objects) < min_age_ms:
            continue  # still receiving objects: not closed
        names = {key.rpartition(d)[2]: (key, size) for key, size, _ in objects}
        values: dict[tuple[str, int], list[tuple[int, str, str, int]]] = {}
        pattern = re.compile(rf"^(?P<topic>.+){re.escape(f)}(?P<partition>\d+){re.escape(f)}(?P<offset>\d+)"
                             r"(?P<ext>\..+)$")
        for base, (key, size) in names.items():
            m = pattern.match(base)
            if m is None or m["ext"].startswith((".keys.", ".headers.")):
                continue
            topic, partition, offset = m["topic"], int(m["partition"]), int(m["offset"])
            if offset >= committed.get((topic, partition), 0):
                continue  # a sink batch that was not committed may still write it again
            values.setdefault((topic, partition), []).append((offset, key, m["ext"], size))
        for (topic, partition), entries in sorted(values.items()):
            entries.sort()
            run: list[tuple[int, str, str, int]] = []
            for entry in entries + [None]:
                if entry is not None and (not run or sum(e[3] for e in run) + entry[3] <= target_bytes):
                    run.append(entry)
                    continue
                if len(run) > 1:
                    groups.append(_group(run, names, d))
                run = [entry] if entry is not None else []
    return groups


def _group(run, names, d) -> Group:
    kinds = [(tuple(key for _, key, _, _ in run), tuple(size for _, _, _, size in run))]
    for suffix in (".keys", ".headers"):
        found = []
        for _, key, ext, _ in run:
            base = key.rpartition(d)[2]
            stem = base[: len(base) - len(ext)]
            found.append(next((names[n] for n in names if n.startswith(stem + suffix + ".")), None))
        if all(found):
            kinds.append((tuple(k for k, _ in found), tuple(size for _, size in found)))
    return Group(tuple(kinds))


def _merge(store, group: Group, d: str) -> None:
    """Merge each kind's objects into its first (unless a killed run did already: the first then has
    another size than planned), then delete the rest."""
    existing = {key: size for key, size, _ in store.list_info(group.keys[0].rpartition(d)[0] + d)}
    for keys, sizes in group.kinds:
        if existing.get(keys[0]) == sizes[0] and all(k in existing for k in keys):
            _write_merged(store, keys, _format_of(keys[0]))
            crash_point("merged-object")
    # Every first object now holds its group's records: the others go.
    store.delete([k for keys, _ in group.kinds for k in keys[1:]])


def _format_of(key: str) -> str:
    name = key.rsplit("/", 1)[-1]
    return "avro" if name.endswith(".avro") else "parquet" if name.endswith(".parquet") else "bytes"


def _write_merged(store, keys: tuple[str, ...], kind: str) -> None:
    upload = store.upload(keys[0])
    try:
        if kind == "bytes":
            for key in keys:
                upload.write(store.read(key))
        elif kind == "avro":
            _merge_avro(store, keys, upload)
        else:
            _merge_parquet(store, keys, upload)
    except BaseException:
        upload.abort()
        raise
    upload.commit()


def _merge_avro(store, keys, upload) -> None:
    """The first file as it is, then the blocks of the others, re-framed with the first file's sync marker
    (the same schema and codec; records are not decoded)."""
    first = store.read(keys[0])
    header_end, meta, sync = _avro_header(first)
    upload.write(first)
    for key in keys[1:]:
        data = store.read(key)
        end, other_meta, other_sync = _avro_header(data)
        if (other_meta.get("avro.schema") != meta.get("avro.schema")
                or other_meta.get("avro.codec") != meta.get("avro.codec")):
            raise ConfigError([Problem(None, f"{key} has another Avro schema or codec than {keys[0]}; "
                                             "it cannot be merged into it")])
        pos = end
        while pos < len(data):
            count, pos = read_long(data, pos)
            size, pos = read_long(data, pos)
            block = data[pos:pos + size]
            pos += size
            if data[pos:pos + 16] != other_sync:
                raise ConfigError([Problem(None, f"{key} is not a well-formed Avro file (a block without its sync "
                                                 "marker)")])
            pos += 16
            upload.write(write_long(count) + write_long(size) + block + sync)


def _merge_parquet(store, keys, upload) -> None:
    import pyarrow.parquet as pq

    from connectors.storage.parquet import PositionSink

    first = pq.ParquetFile(io.BytesIO(store.read(keys[0])))
    codec = first.metadata.row_group(0).column(0).compression if first.metadata.num_row_groups else "SNAPPY"
    codec = {"UNCOMPRESSED": "none", "LZ4_RAW": "lz4"}.get(codec, codec.lower())
    writer = pq.ParquetWriter(PositionSink(upload), first.schema_arrow, compression=codec)
    try:
        for key in keys:
            source = first if key == keys[0] else pq.ParquetFile(io.BytesIO(store.read(key)))
            for i in range(source.metadata.num_row_groups):
                writer.write_table(source.read_row_group(i))
    finally:
        writer.close()


def _avro_header(data: bytes) -> tuple[int, dict[str, str], bytes]:
    """(where the first block starts, the metadata, the sync marker) of an Avro object container file."""
    if data[:4] != MAGIC:
        raise ConfigError([Problem(None, "an object is not an Avro file; check format.class")])
    pos, meta = 4, {}
    while True:
        count, pos = read_long(data, pos)
        if count == 0:
            break
        if count < 0:
            _, pos = read_long(data, pos)
            count = -count
        for _ in range(count):
            n, pos = read_long(data, pos)
            k = data[pos:pos + n].decode()
            pos += n
            n, pos = read_long(data, pos)
            meta[k] = data[pos:pos + n].decode("latin-1")
            pos += n
    return pos + 16, meta, data[pos:pos + 16]
