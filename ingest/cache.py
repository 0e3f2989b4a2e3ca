"""Bounded, thread-safe caches for what a process keeps between batches.

A worker process runs batch after batch of many connectors, several at once on threads: anything kept at
module level lives as long as the process, so it must have a size limit and take concurrent use.
`BoundedCache` is a mapping of at most `maxsize` entries, the least recently used going first;
`BoundedSet` is the same for keys alone. Every lookup (`get`, `in`, a hit of `get_or_build`) counts as a use.

This module imports nothing of lakeconnect: any module may keep its caches here.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Any, Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_MISSING: Any = object()


class BoundedCache(Generic[K, V]):
    """At most `maxsize` entries; putting one more drops the least recently used. One lock guards every
    operation, so threads may share it; `get_or_build` builds outside the lock (see there)."""

    def __init__(self, maxsize: int):
        if maxsize < 1:
            raise ValueError(f"maxsize must be at least 1, got {maxsize}")
        self.maxsize = maxsize
        self._data: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"BoundedCache({len(self)}/{self.maxsize})"

    def get(self, key: K, default: Any = None) -> Any:
        """The value of `key` (now the most recently used), else `default`."""
        with self._lock:
            value = self._data.get(key, _MISSING)
            if value is _MISSING:
                return default
            self._data.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        """`key` -> `value`, as the most recently used; the least recently used go while over `maxsize`."""
        with self._lock:
            self._put(key, value)

    def update(self, items: Iterable[tuple[K, V]]) -> None:
        """`put` of each pair, in order, under one hold of the lock (the last ones end most recent)."""
        pairs = list(items)  # outside the lock: `items` may be another cache's (or this one's) `items()`
        with self._lock:
            for key, value in pairs:
                self._put(key, value)

    def get_or_build(self, key: K, build: Callable[[], V]) -> V:
        """The value of `key`, made by `build()` when absent. `build` runs outside the lock, so a slow one (an
        HTTP call, a JVM round trip) holds up no other key; two threads missing the same key at once may both
        build it, and both get the value stored first. An exception from `build` stores nothing."""
        found = self.get(key, _MISSING)
        if found is not _MISSING:
            return found
        value = build()
        with self._lock:
            stored = self._data.get(key, _MISSING)
            if stored is not _MISSING:
                self._data.move_to_end(key)
                return stored
            self._put(key, value)
            return value

    def pop(self, key: K, default: Any = None) -> Any:
        with self._lock:
            return self._data.pop(key, default)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def items(self) -> list[tuple[K, V]]:
        """A copy of the entries, least recently used first."""
        with self._lock:
            return list(self._data.items())

    def __getitem__(self, key: K) -> V:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __setitem__(self, key: K, value: V) -> None:
        self.put(key, value)

    def __contains__(self, key: object) -> bool:
        return self.get(key, _MISSING) is not _MISSING  # type: ignore[arg-type]

    def __len__(self) -> int:
        with self._lock:  # not between a put's insertion and its eviction
            return len(self._data)

    def _put(self, key: K, value: V) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self.maxsize:
            self._data.popitem(last=False)


class BoundedSet(Generic[K]):
    """A set of at most `maxsize` keys, the least recently added or tested going first; thread-safe."""

    def __init__(self, maxsize: int):
        self._keys: BoundedCache[K, None] = BoundedCache(maxsize)

    @property
    def maxsize(self) -> int:
        return self._keys.maxsize

    def __repr__(self) -> str:
        return f"BoundedSet({len(self)}/{self.maxsize})"

    def add(self, key: K) -> None:
        self._keys.put(key, None)

    def discard(self, key: K) -> None:
        self._keys.pop(key)

    def clear(self) -> None:
        self._keys.clear()

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[K]:
        return iter([key for key, _ in self._keys.items()])
