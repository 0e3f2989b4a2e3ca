"""What a process keeps between batches is bounded and safe to share between threads (`ingest.cache`): a
worker runs batch after batch of many connectors, several at once, in one process."""

from __future__ import annotations

import dataclasses
import random
import sys
import threading

import pytest

from ingest.cache import BoundedCache, BoundedSet


def test_the_least_recently_used_entry_goes_first():
    cache: BoundedCache[str, int] = BoundedCache(3)
    for i, key in enumerate("abc"):
        cache.put(key, i)
    assert cache.get("a") == 0  # a is now the most recently used: b goes next
    cache.put("d", 3)
    assert [k for k, _ in cache.items()] == ["c", "a", "d"]
    assert "b" not in cache and cache.get("b", "gone") == "gone"
    assert "c" in cache  # a lookup is a use: a goes next
    cache["e"] = 4
    assert [k for k, _ in cache.items()] == ["d", "c", "e"] and len(cache) == 3
    with pytest.raises(KeyError):
        cache["a"]
    cache.put("c", 20)  # a new value: most recent, nothing else goes
    assert cache.items() == [("d", 3), ("e", 4), ("c", 20)]
    cache.update([("f", 5), ("g", 6)])
    assert cache.items() == [("c", 20), ("f", 5), ("g", 6)]
    assert cache.pop("f") == 5 and cache.pop("f", "none") == "none" and len(cache) == 2
    cache.clear()
    assert len(cache) == 0
    with pytest.raises(ValueError):
        BoundedCache(0)


def test_get_or_build_builds_once_and_keeps_nothing_of_a_failed_build():
    cache: BoundedCache[str, object] = BoundedCache(2)
    built = []
    first = cache.get_or_build("k", lambda: built.append(1) or object())
    assert cache.get_or_build("k", lambda: built.append(2) or object()) is first and built == [1]

    def fail():
        raise RuntimeError("no")

    with pytest.raises(RuntimeError):
        cache.get_or_build("x", fail)
    assert "x" not in cache and len(cache) == 1
    cache.put("none", None)  # None is a value like any other
    assert cache.get_or_build("none", lambda: "built") is None


def test_a_set_keeps_its_most_recently_added_or_tested_keys():
    keys: BoundedSet[int] = BoundedSet(2)
    keys.add(1)
    keys.add(2)
    assert 1 in keys  # tested: 2 goes next
    keys.add(3)
    assert list(keys) == [1, 3] and len(keys) == 2 and 2 not in keys
    keys.discard(1)
    keys.discard(1)
    assert list(keys) == [3]


def test_many_threads_sharing_one_cache_keep_its_bound_and_its_values():
    # Few entries for many keys: nearly every put evicts. Threads switch every microsecond, so one that loses
    # the interpreter between two steps of an operation meets another thread's half-done one; without the lock
    # this failed four runs in five (a KeyError of an entry evicted in between, a size over the bound).
    cache: BoundedCache[int, tuple[int, int]] = BoundedCache(8)
    errors, over = [], []
    start = threading.Barrier(8)

    def hammer(seed: int) -> None:
        rng = random.Random(seed)
        start.wait()
        try:
            for _ in range(20_000):
                key = rng.randrange(32)
                op = rng.randrange(4)
                if op == 0:
                    cache.put(key, (key, key * key))
                elif op == 1:
                    got = cache.get(key)
                    assert got is None or got == (key, key * key), (key, got)
                elif op == 2:
                    assert cache.get_or_build(key, lambda: (key, key * key)) == (key, key * key)
                else:
                    cache.update([(key, (key, key * key)), (key + 1, (key + 1, (key + 1) ** 2))])
                if len(cache) > cache.maxsize:
                    over.append(len(cache))
        except Exception as e:  # collected, asserted on below
            errors.append(e)

    threads = [threading.Thread(target=hammer, args=(seed,)) for seed in range(8)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors and not over
    items = cache.items()
    assert len(items) == 8 and all(v == (k, k * k) for k, v in items)


def test_threads_that_build_the_same_key_at_once_all_get_the_value_stored_first():
    cache: BoundedCache[str, object] = BoundedCache(4)
    inside = threading.Barrier(6)
    got, built = [], []

    def build():
        value = object()
        built.append(value)
        inside.wait()  # every thread has missed and is building
        return value

    threads = [threading.Thread(target=lambda: got.append(cache.get_or_build("k", build))) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(built) == 6 and len(got) == 6
    assert all(g is got[0] for g in got) and cache.get("k") is got[0]


# --- the process's caches ------------------------------------------------------------------------------


def _process_sets():
    from connectors.converters import avro_converter
    from ingest import jvm
    from ingest.runtime import runner

    return {"runner._DECLINED": runner._DECLINED, "runner._DECLINED_READS": runner._DECLINED_READS,
            "jvm._known": jvm._known, "jvm._unavailable": jvm._unavailable,
            "avro_converter._CHECKED": avro_converter._CHECKED}


@pytest.mark.parametrize("name", sorted(_process_sets()))
def test_the_process_sets_are_bounded(name, monkeypatch):
    keys = _process_sets()[name]
    assert isinstance(keys, BoundedSet) and keys.maxsize <= 4096
    fresh = BoundedSet(keys.maxsize)  # the same bound, without touching what this process keeps
    for i in range(keys.maxsize + 100):
        fresh.add(("connector", i))
    assert len(fresh) == keys.maxsize and ("connector", keys.maxsize + 99) in fresh


def test_joda_symbols_are_kept_for_at_most_256_locales():
    from connectors.storage import joda

    assert joda._tz_ids.cache_info().maxsize == 1 and joda._tz_links.cache_info().maxsize == 1
    for i in range(300):
        joda._symbols(f"x{i}-y")  # a language Java does not know: the root locale's names
    info = joda._symbols.cache_info()
    assert info.maxsize == 256 and info.currsize == 256


def test_registry_answers_are_kept_up_to_the_bound_and_asked_again_when_dropped(monkeypatch):
    from connectors.converters import _registry_client as rc

    assert rc._CACHE.maxsize == 8192
    monkeypatch.setattr(rc, "_CACHE", BoundedCache(5))
    asked = []

    def call(self, method, path, body=None):
        asked.append(path)
        return {"schema": f"schema of {path}"}

    monkeypatch.setattr(rc.RegistryClient, "_call", call)
    client = rc.RegistryClient.of(["http://registry.invalid:8081"], "URL", "", "basic.auth.user.info")
    for i in range(20):
        assert client.schema(i) == f"schema of /schemas/ids/{i}"
    assert len(rc._CACHE) == 5 and len(asked) == 20
    client.schema(19)  # kept
    client.schema(0)  # dropped: asked again
    assert asked[20:] == ["/schemas/ids/0"]


def test_s3_clients_are_kept_for_at_most_the_bound(monkeypatch):
    from connectors.storage import s3store

    assert s3store._clients.maxsize == 16
    monkeypatch.setattr(s3store, "_clients", BoundedCache(3))
    built = []
    monkeypatch.setattr(s3store, "_new_client", lambda s: built.append(s.region) or object())
    base = s3store.S3Settings(
        bucket="b", region="us-east-1", endpoint=None, access_key_id=None, secret_access_key=None,
        credentials_provider="DefaultAWSCredentialsProviderChain", sse=None, sse_customer_key=None,
        sse_kms_key_id=None, acl=None, proxy_url=None, proxy_user=None, proxy_password=None, part_size=5 << 20,
        part_retries=3, retry_backoff_s=0.2, compression_level=None, expect_continue=True, path_style=False,
        read_timeout=30.0)
    stores = [s3store.S3Store(dataclasses.replace(base, region=f"r-{i}")) for i in range(6)]
    clients = [s._client() for s in stores]
    assert len(s3store._clients) == 3 and len(built) == 6
    assert stores[5]._client() is clients[5]  # kept
    assert stores[0]._client() is not clients[0]  # dropped, built again
    assert s3store.S3Store(dataclasses.replace(base, region="r-5", bucket="other"))._client() is clients[5]


def test_the_lakes_schema_registry_keeps_a_bounded_part_and_still_registers_each_pair_once(tmp_path, monkeypatch):
    from deltalake import DeltaTable

    from ingest.topics import schemas

    assert schemas._SHARED.maxsize == 64
    monkeypatch.setattr(schemas, "KNOWN_KEPT", 4)
    monkeypatch.setattr(schemas, "SCHEMAS_KEPT", 2)
    monkeypatch.setattr(schemas, "_SHARED", BoundedCache(2))
    pairs = [(f"t{i}-value", f'{{"type": "struct", "n": {i % 7}}}') for i in range(12)]
    ids = schemas.SchemaRegistry(str(tmp_path)).register_many(pairs)
    assert ids == [i % 7 + 1 for i in range(12)]
    version = DeltaTable(str(tmp_path / "_schemas")).version()
    again = schemas.SchemaRegistry(str(tmp_path))
    # twelve pairs through a cache of four: most are read from the table again, and none is registered twice
    assert again.register_many(pairs) == ids and again.register_many(list(reversed(pairs))) == ids[::-1]
    assert DeltaTable(str(tmp_path / "_schemas")).version() == version
    assert len(again._known) == 4 and len(again._by_id) <= 2
    assert [again.get(i) for i in (1, 7)] == [pairs[0][1], pairs[6][1]]
    assert [(s.id, s.version) for s in again.versions("t3-value")] == [(4, 1)]
    for lake in ("a", "b", "c"):
        schemas.SchemaRegistry(str(tmp_path / lake)).register("s", '{"type": "int32"}')
    assert len(schemas._SHARED) == 2


def test_session_values_are_kept_for_at_most_the_bound(spark):
    from ingest.spark import SessionCache

    cache = SessionCache(size=4)
    for i in range(10):
        cache.get(spark, (i,), lambda: i)
    assert len(cache._values) == 4 and cache.get(spark, (9,), lambda: "rebuilt") == 9
    assert cache.get(spark, (0,), lambda: "rebuilt") == "rebuilt"


def test_registered_functions_are_remembered_for_at_most_the_bound(spark, monkeypatch):
    from ingest import jvm

    monkeypatch.setattr(jvm, "_known", BoundedSet(3))
    registered = []
    for i in range(6):  # names no session has: each is "registered" (by a stand-in) and remembered
        assert jvm._registered(spark, f"lc_bounded_{i}", "NoSuchClass", lambda i=i: registered.append(i))
    assert len(jvm._known) == 3 and registered == list(range(6))
    assert jvm._registered(spark, "lc_bounded_5", "NoSuchClass", lambda: registered.append("again"))
    assert jvm._registered(spark, "lc_bounded_0", "NoSuchClass", lambda: registered.append("again"))
    assert registered[6:] == ["again"]  # only the dropped one was asked of the catalog and registered again
