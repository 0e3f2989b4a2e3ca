"""A schema registry in the lake: the Delta table `<lake_root>/_schemas`.

Confluent's model: a schema gets one global id, the same wherever it is registered; each subject
keeps versions 1, 2, ... of the schemas registered under it. Registering a schema again (same
canonical JSON) under the same subject returns its id and adds nothing. Schemas are JSON text here
(`ConnectSchema.to_json()` or any JSON), compared by a fingerprint of their canonical form.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from ingest.cache import BoundedCache
from ingest.delta import append_arrow, read_arrow
from ingest.delta._table import is_local, normalize_uri, open_table
from ingest.errors import DataError, RetriableError, StateError
from ingest.topics._lock import lake_lock

SCHEMAS_TABLE = "_schemas"
REGISTRY_SCHEMA = pa.schema(
    [
        ("id", pa.int32()),
        ("subject", pa.string()),
        ("version", pa.int32()),
        ("fingerprint", pa.string()),
        ("schema", pa.string()),
    ]
)
REGISTER_ATTEMPTS = 5
# What a process keeps of one registry, the least recently used first out (a dropped entry is read from the
# table again, 20-25 ms): (subject, fingerprint) -> id, small keys, for sixteen 1,000-table sources (key and
# value subjects); id -> schema text (1 to 10 KB for a table), for the ids registered or asked lately.
KNOWN_KEPT = 32_768
SCHEMAS_KEPT = 4096
# uri -> (identity of its first commit, known ids, schemas by id): local registries as this process knows them.
# A worker has one lake, a test process many: the least recently used of 64 go first.
_SHARED: BoundedCache[str, tuple[tuple[int, int, int], BoundedCache, BoundedCache]] = BoundedCache(64)
_SHARED_LOCK = threading.Lock()  # held to look an entry up and replace it as one step


@dataclass(frozen=True)
class RegisteredSchema:
    id: int
    subject: str
    version: int
    schema: str


def fingerprint(schema_json: str) -> str:
    """sha256 of the schema's canonical JSON (sorted keys, no whitespace)."""
    try:
        canonical = json.dumps(json.loads(schema_json), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as e:
        raise DataError(f"schema is not valid JSON: {e}") from e
    return hashlib.sha256(canonical.encode()).hexdigest()


class SchemaRegistry:
    def __init__(self, lake_root: str, storage_options: Mapping[str, str] | None = None):
        self.lake_root = normalize_uri(lake_root)
        self.uri = f"{self.lake_root}/{SCHEMAS_TABLE}"
        self.storage_options = dict(storage_options) if storage_options else None
        self._by_id: BoundedCache[int, str] = BoundedCache(SCHEMAS_KEPT)  # ids never change meaning: safe to cache
        # (subject, fingerprint) -> id: a registration is never undone, so once seen it holds. A batch of a
        # 1,000-table source registers 2,000 subjects; each would otherwise read the whole registry.
        self._known: BoundedCache[tuple[str, str], int] = BoundedCache(KNOWN_KEPT)
        self._identity: tuple[int, int, int] | None = None

    def _share(self) -> None:
        """Use what this process learnt of the same local registry before (a connector's earlier batches each
        make a registry of their own: reading the table again cost 20-25 ms a batch). A registry deleted and
        created again is another one: its first commit is another file."""
        if self._identity is not None or not is_local(self.uri):
            return
        try:
            st = os.stat(os.path.join(self.uri, "_delta_log", f"{0:020d}.json"))
        except OSError:  # no registry yet, or its first commits were cleaned up: nothing to share
            return
        self._identity = (st.st_ino, st.st_mtime_ns, st.st_size)
        with _SHARED_LOCK:
            shared = _SHARED.get(self.uri)
            if shared is None or shared[0] != self._identity:
                shared = (self._identity, self._known, self._by_id)
                _SHARED.put(self.uri, shared)
        _, known, by_id = shared
        known.update(self._known.items())
        by_id.update(self._by_id.items())
        self._known, self._by_id = known, by_id

    def _rows(self) -> tuple[pa.Table, int | None]:
        dt = open_table(self.uri, self.storage_options)
        if dt is None:
            return REGISTRY_SCHEMA.empty_table(), None
        version = dt.version()
        table = read_arrow(self.uri, version=version, storage_options=self.storage_options)
        return table, version

    def register(self, subject: str, schema_json: str) -> int:
        """The global id of `schema_json`, registering it under `subject` if it is new there."""
        return self.register_many([(subject, schema_json)])[0]

    def register_many(self, items: Sequence[tuple[str, str]]) -> list[int]:
        """The global ids of `(subject, schema_json)` pairs, in order, registering the new ones in ONE commit:
        a batch of a 1,000-table source has 2,000 subjects, and a read and a commit for each would be most
        of its conversion time."""
        fps = []
        for subject, schema_json in items:
            if not subject:
                raise ValueError("subject must be a non-empty string")
            fps.append((subject, fingerprint(schema_json)))
        self._share()
        known = [self._known.get(k) for k in fps]
        if None not in known:
            return known
        text = {k: schema_json for k, (_, schema_json) in zip(fps, items)}
        for _ in range(REGISTER_ATTEMPTS):
            with lake_lock(self.lake_root, "schemas"):
                rows, table_version = self._rows()
                columns = [rows.column(c).to_pylist() for c in ("id", "subject", "version", "fingerprint")]
                # what the table holds decides, not the cache: a bounded cache may have dropped any of it
                registered: dict[tuple[str, str], int] = {}
                ids_by_fp: dict[str, int] = {}
                last_version: dict[str, int] = {}
                for schema_id, subject, version, fp in zip(*columns):
                    registered[(subject, fp)] = schema_id
                    ids_by_fp.setdefault(fp, schema_id)
                    last_version[subject] = max(version, last_version.get(subject, 0))
                next_id = max(columns[0], default=0) + 1
                new: list[dict] = []
                for key in dict.fromkeys(fps):  # each new pair once, in the order first asked
                    if key in registered:
                        continue
                    subject, fp = key
                    schema_id = ids_by_fp.get(fp)
                    if schema_id is None:
                        schema_id = ids_by_fp[fp] = next_id
                        next_id += 1
                    last_version[subject] = last_version.get(subject, 0) + 1
                    new.append({"id": schema_id, "subject": subject, "version": last_version[subject],
                                "fingerprint": fp, "schema": text[key]})
                if new:
                    try:
                        append_arrow(self.uri, pa.Table.from_pylist(new, schema=REGISTRY_SCHEMA),
                                     storage_options=self.storage_options,
                                     expected_version=-1 if table_version is None else table_version)
                    except RetriableError:
                        self._known.update(registered.items())
                        continue  # another registration won the race (remote lakes): look again
                    self._by_id.update((row["id"], row["schema"]) for row in new)
                    registered.update(((row["subject"], row["fingerprint"]), row["id"]) for row in new)
                # the pairs asked last: the most recently used, whatever the table's size
                self._known.update([*registered.items(), *((k, registered[k]) for k in fps)])
                if new:
                    self._share()  # the first registration made the table: share what this one knows from now on
                return [registered[k] for k in fps]
        subjects = sorted({s for s, _ in fps})
        raise RetriableError(f"could not register schemas under {subjects[:3]}{'...' if len(subjects) > 3 else ''} "
                             f"in {self.uri}: too many concurrent registrations")

    def get(self, schema_id: int) -> str:
        """The schema JSON with `schema_id`; StateError if no such id."""
        self._share()
        cached = self._by_id.get(schema_id)
        if cached is not None:
            return cached
        rows, _ = self._rows()
        hit = rows.filter(pc.equal(rows.column("id"), schema_id))
        if not hit.num_rows:
            raise StateError(f"no schema with id {schema_id} in the registry at {self.uri}")
        found = hit.column("schema")[0].as_py()
        self._by_id.put(schema_id, found)
        return found

    def latest(self, subject: str) -> RegisteredSchema | None:
        """The latest version registered under `subject`, or None."""
        rows, _ = self._rows()
        mine = rows.filter(pc.equal(rows.column("subject"), subject))
        if not mine.num_rows:
            return None
        top = mine.sort_by([("version", "descending")]).slice(0, 1).to_pylist()[0]
        return RegisteredSchema(top["id"], top["subject"], top["version"], top["schema"])

    def versions(self, subject: str) -> list[RegisteredSchema]:
        rows, _ = self._rows()
        mine = rows.filter(pc.equal(rows.column("subject"), subject)).sort_by("version")
        return [RegisteredSchema(r["id"], r["subject"], r["version"], r["schema"]) for r in mine.to_pylist()]
