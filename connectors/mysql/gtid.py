"""MySQL GTID sets, and where Debezium's MySQL connector resumes by them.

A GTID names one transaction: the uuid of the server that first committed it (its source) and the
transaction's number there (`3e11fa47-71ca-11e1-9e33-c80aa9429562:23`). A GTID set is, per source, the
numbers' closed intervals: MySQL's text form `uuid:1-5:7-9,uuid2:1-3` (`@@gtid_executed`, `@@gtid_purged`,
the `gtids` of Debezium's offsets). `GtidSet` is that set as a value with MySQL's semantics (a set of
(uuid, number) pairs), printed as Debezium prints it (`MySqlGtidSet.toString`).

Debezium's rules, from io.debezium.connector.mysql (Debezium 2.3 and 3.x agree on all of them):

- `source_filter`: gtid.source.includes / gtid.source.excludes (MySqlConnectorConfig, Predicates.includesUuids).
- `resume_set`: the GTID set the connector sends to the server on connect (MySqlConnection.filterGtidSet).
- `purged_needed` and `position_available`: whether the offset's position is still on the server
  (BinlogConnectorConnection.isBinlogPositionAvailable).
- `Tracker`: the set as the binlog is read, advanced by each transaction's GTID event
  (MySqlStreamingChangeEventSource.handleGtidEvent, BinlogOffsetContext.startGtid/commitTransaction).

MySQL 8.4's tagged GTIDs (`uuid:tag:1-5`) are refused: this module does not model them.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Mapping, Sequence

Predicate = Callable[[str], bool]
Interval = tuple[int, int]  # first and last transaction number, both included

MAX_GNO = 2**63 - 2  # MySQL refuses LLONG_MAX (rpl_gtid_set.cc, parse_gno)

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I | re.A)
_NUMBER = re.compile(r"[0-9]+", re.A)
_MEMBER = re.compile(r"\s*([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\s*"
                     r"((?::\s*[0-9]{1,19}\s*(?:-\s*[0-9]{1,19}\s*)?)+)", re.I | re.A)
_INTERVAL = re.compile(r":\s*([0-9]+)\s*(?:-\s*([0-9]+))?", re.A)
_TAG = re.compile(r"[a-z_][a-z0-9_]{0,31}", re.I | re.A)  # MySQL 8.4's tag syntax
_SPACE = " \t\r\n\f\v"
_SHOWN = 100  # at most this much of a bad member is shown in an error


def _shown(member: str) -> str:
    member = member.strip(_SPACE)
    return repr(member if len(member) <= _SHOWN else member[:_SHOWN] + "...")


def _uuid(text: str) -> str:
    if not _UUID.fullmatch(text):
        raise ValueError(f"not a server uuid: {_shown(text)}")
    return text.lower()


def _gno(gno: int) -> int:
    if isinstance(gno, bool) or not isinstance(gno, int) or not 1 <= gno <= MAX_GNO:
        raise ValueError(f"a transaction number is an integer from 1 to {MAX_GNO}, not {gno!r}")
    return gno


def _normal(intervals: Iterable[Interval]) -> tuple[Interval, ...]:
    """The intervals sorted, overlapping and adjacent ones merged."""
    out: list[list[int]] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return tuple((s, e) for s, e in out)


def _minus(a: tuple[Interval, ...], b: tuple[Interval, ...]) -> tuple[Interval, ...]:
    out: list[Interval] = []
    j = 0
    for start, end in a:
        while j < len(b) and b[j][1] < start:
            j += 1
        k = j
        while k < len(b) and b[k][0] <= end:
            if b[k][0] > start:
                out.append((start, b[k][0] - 1))
            start = b[k][1] + 1
            if start > end:
                break
            k += 1
        if start <= end:
            out.append((start, end))
    return tuple(out)


def _within(a: tuple[Interval, ...], b: tuple[Interval, ...]) -> bool:
    """Every number of `a` is in `b` (both normal)."""
    starts = [s for s, _ in b]
    for start, end in a:
        i = bisect.bisect_right(starts, start) - 1
        if i < 0 or b[i][1] < end:
            return False
    return True


class GtidSet:
    """An immutable set of MySQL GTIDs: per source uuid (lower case), its transaction numbers' intervals."""

    __slots__ = ("_sets", "_key")

    _sets: dict[str, tuple[Interval, ...]]
    _key: tuple[tuple[str, tuple[Interval, ...]], ...]

    def __init__(self, sets: Mapping[str, Iterable[Interval]] | None = None):
        """The set of the given intervals (first, last) per source uuid; uuids in any case."""
        merged: dict[str, list[Interval]] = {}
        for uuid, intervals in (sets or {}).items():
            for start, end in intervals:
                if _gno(start) > _gno(end):
                    raise ValueError(f"interval {start}-{end} of {uuid} ends before it starts")
                merged.setdefault(_uuid(uuid), []).append((start, end))
        self._init({u: _normal(ivs) for u, ivs in merged.items() if ivs})

    def _init(self, sets: dict[str, tuple[Interval, ...]]) -> None:
        key = tuple(sorted(sets.items()))
        object.__setattr__(self, "_sets", dict(key))
        object.__setattr__(self, "_key", key)

    @classmethod
    def _of(cls, sets: dict[str, tuple[Interval, ...]]) -> GtidSet:
        out = cls.__new__(cls)
        out._init({u: ivs for u, ivs in sets.items() if ivs})
        return out

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("GtidSet is immutable")

    def __reduce__(self) -> tuple[Callable[[str], GtidSet], tuple[str]]:
        return GtidSet.parse, (str(self),)

    # --- text ---------------------------------------------------------------------------------------------

    @classmethod
    def parse(cls, text: str | None) -> GtidSet:
        """The set MySQL's text form writes (None and blank text: the empty set).

        As MySQL reads it: whitespace (newlines too, as `@@gtid_executed` prints them) around members and their
        parts, uuids in any case, `N` for `N-N`, a source in several members or intervals that overlap. Also as
        MySQL, empty members (`a:1,,b:2`) are skipped. Refused with a ValueError naming the member: anything
        else, a reversed interval, 0, numbers past MAX_GNO, MySQL 8.4's tagged GTIDs.
        """
        if text is None:
            return cls._of({})
        if not isinstance(text, str):
            raise TypeError(f"a GTID set is text, not {type(text).__name__}")
        sets: dict[str, list[Interval]] = {}
        for member in text.split(","):
            if not member.strip(_SPACE):
                continue
            uuid, intervals = _parse_member(member)
            sets.setdefault(uuid, []).extend(intervals)
        return cls._of({u: _normal(ivs) for u, ivs in sets.items()})

    def __str__(self) -> str:
        """Debezium's form (MySqlGtidSet.toString): uuids sorted, each interval as `first-last` (`7-7` too)."""
        return ",".join(u + ":" + ":".join(f"{s}-{e}" for s, e in ivs) for u, ivs in self._key)

    def to_mysql(self, separator: str = ",") -> str:
        """MySQL's form: as str() but one transaction as `N`; MySQL itself separates members with ",\\n"."""
        return separator.join(u + ":" + ":".join(str(s) if s == e else f"{s}-{e}" for s, e in ivs)
                              for u, ivs in self._key)

    def __repr__(self) -> str:
        return f"GtidSet.parse({str(self)!r})"

    # --- queries ------------------------------------------------------------------------------------------

    @property
    def is_empty(self) -> bool:
        """No transaction at all."""
        return not self._key

    def __bool__(self) -> bool:
        return bool(self._key)

    def sources(self) -> tuple[str, ...]:
        """The source uuids with transactions here, sorted."""
        return tuple(u for u, _ in self._key)

    def intervals(self, uuid: str) -> tuple[Interval, ...]:
        """The source's intervals, sorted and merged (none: empty)."""
        return self._sets.get(uuid.lower(), ())

    def contains(self, other: GtidSet | str) -> bool:
        """Every transaction of `other` (a set, or the text of a set or of one GTID) is in this set."""
        if isinstance(other, str):
            other = GtidSet.parse(other)
        return all(_within(ivs, self._sets.get(u, ())) for u, ivs in other._key)

    __contains__ = contains

    def is_contained_within(self, other: GtidSet) -> bool:
        """Every transaction of this set is in `other` (Debezium's GtidSet.isContainedWithin)."""
        return other.contains(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GtidSet) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    # --- new sets -----------------------------------------------------------------------------------------

    def union(self, other: GtidSet) -> GtidSet:
        """The transactions of either set (MySQL's union: a source in both gets both's numbers)."""
        sets = dict(self._sets)
        for u, ivs in other._key:
            sets[u] = _normal(sets.get(u, ()) + ivs)
        return GtidSet._of(sets)

    __or__ = union

    def with_(self, other: GtidSet) -> GtidSet:
        """Debezium's GtidSet.with: this set, each source of `other` replaced by its intervals there.

        Not a union: `a:1-20` with `a:1-2` is `a:1-2`. Debezium's resume set depends on that (`resume_set`).
        """
        return GtidSet._of({**self._sets, **other._sets})

    def subtract(self, other: GtidSet) -> GtidSet:
        """The transactions of this set not in `other` (MySQL's GTID_SUBTRACT)."""
        return GtidSet._of({u: _minus(ivs, other._sets[u]) if u in other._sets else ivs for u, ivs in self._key})

    __sub__ = subtract

    def add(self, uuid: str, gno: int) -> GtidSet:
        """This set and the transaction `uuid:gno`."""
        uuid, gno = _uuid(uuid), _gno(gno)
        if _within(((gno, gno),), self._sets.get(uuid, ())):
            return self
        return GtidSet._of({**self._sets, uuid: _normal(self._sets.get(uuid, ()) + ((gno, gno),))})

    def retain(self, predicate: Predicate | None) -> GtidSet:
        """Only the sources the predicate accepts (given lower-case uuids); None keeps all (Debezium's retainAll)."""
        if predicate is None:
            return self
        return GtidSet._of({u: ivs for u, ivs in self._key if predicate(u)})


def _parse_member(member: str) -> tuple[str, list[Interval]]:
    m = _MEMBER.fullmatch(member)
    if m:
        intervals = [(int(a), int(b or a)) for a, b in _INTERVAL.findall(m[2])]
        if all(1 <= a <= b <= MAX_GNO for a, b in intervals):
            return m[1].lower(), intervals
    # Not a well-formed member: find out what is wrong with it.
    parts = [p.strip(_SPACE) for p in member.split(":")]
    if not _UUID.fullmatch(parts[0]):
        raise ValueError(f"malformed GTID set member {_shown(member)}: it does not start with a server uuid")
    if len(parts) < 2:
        raise ValueError(f"malformed GTID set member {_shown(member)}: no transaction numbers")
    intervals: list[Interval] = []
    for part in parts[1:]:
        if _TAG.fullmatch(part):
            raise ValueError(f"GTID set member {_shown(member)} has a tag: MySQL 8.4's tagged GTIDs are "
                             "not supported")
        bounds = [b.strip(_SPACE) for b in part.split("-")]
        if len(bounds) > 2 or not all(_NUMBER.fullmatch(b) for b in bounds):
            raise ValueError(f"malformed GTID set member {_shown(member)}: transaction numbers are N or N-M")
        start, end = (int(b) if len(b) <= 19 else MAX_GNO + 1 for b in (bounds[0], bounds[-1]))
        if not 1 <= start <= end <= MAX_GNO:
            raise ValueError(f"malformed GTID set member {_shown(member)}: an interval N-M needs "
                             f"1 <= N <= M <= {MAX_GNO}")
        intervals.append((start, end))
    return parts[0].lower(), intervals


def parse_gtid(gtid: str) -> tuple[str, int]:
    """One transaction's GTID, `uuid:gno` (pymysqlreplication's GtidEvent.gtid): its source uuid (lower case)
    and number."""
    parts = [p.strip(_SPACE) for p in gtid.split(":")]
    if len(parts) == 3 and _TAG.fullmatch(parts[1]):
        raise ValueError(f"GTID {_shown(gtid)} has a tag: MySQL 8.4's tagged GTIDs are not supported")
    if len(parts) != 2 or not _UUID.fullmatch(parts[0]) or not _NUMBER.fullmatch(parts[1]):
        raise ValueError(f"malformed GTID {_shown(gtid)}: expected uuid:number")
    gno = int(parts[1]) if len(parts[1]) <= 19 else MAX_GNO + 1
    if not 1 <= gno <= MAX_GNO:
        raise ValueError(f"malformed GTID {_shown(gtid)}: the number is from 1 to {MAX_GNO}")
    return parts[0].lower(), gno


# --- Debezium's rules -------------------------------------------------------------------------------------

GTID_FILTER_CONFLICT = "Cannot specify GTID excludes when includes are provided."  # BinlogConnectorConfig


_PYTHON_ONLY = ("(?P<", "(?P=", "(?#", "(?(", "{,")
"""Constructs Python's regular expressions take and Java's refuse (named groups as (?P<n>), their references,
comments, conditionals, {,n}): a pattern with one is refused before it reaches Spark's (Java) matcher."""


def source_filter(includes: Sequence[str] = (), excludes: Sequence[str] = ()) -> Predicate:
    """gtid.source.includes / gtid.source.excludes as a predicate on a source uuid (both empty: every source).

    Each entry is a regular expression that must match the whole uuid, in any case (a uuid literal matches
    itself); entries are used as given (the config's list). Both lists given: ValueError with Debezium's
    validation message; an entry that is no regular expression: ValueError naming it.
    """
    if includes and excludes:
        raise ValueError(GTID_FILTER_CONFLICT)
    entries, key = (includes, "gtid.source.includes") if includes else (excludes, "gtid.source.excludes")
    if not entries:
        return lambda uuid: True
    patterns = []
    for entry in entries:
        try:
            patterns.append(re.compile(entry, re.I))
        except re.error as e:
            raise ValueError(f"{key}: {entry!r} is not a regular expression ({e})") from None
        python_only = next((c for c in _PYTHON_ONLY if c in entry), None)
        if python_only:
            raise ValueError(f"{key}: {entry!r} uses {python_only!r}, which Java's regular expressions (Debezium's, "
                             "and Spark's, which applies the filter here) do not have; write it as Java reads it")

    def matched(uuid: str) -> bool:
        return any(p.fullmatch(uuid) for p in patterns)

    if includes:
        return matched
    return lambda uuid: not matched(uuid)


def resume_set(offset: GtidSet, server_available: GtidSet, server_purged: GtidSet,
               predicate: Predicate | None = None) -> GtidSet:
    """The GTID set Debezium sends to the server on connect (MySqlConnection.filterGtidSet); the server then
    sends every transaction it still has that is not in the set.

    `offset`: the offset's `gtids`; `server_available`, `server_purged`: the server's `@@gtid_executed` (SHOW
    MASTER / BINARY LOG STATUS) and `@@gtid_purged`; `predicate`: `source_filter`'s. The set holds only the
    purged GTIDs of the sources the filter excludes, so the server sends their other transactions too: their
    DML is skipped while reading (`Tracker.begin`). An offset without `gtids` is Debezium's other branch:
    2.3 resumes by binlog file and position there, 3.x sends `server_purged`.
    """
    filtered = offset.retain(predicate)  # the offset's GTIDs of the sources the filter keeps
    relevant = server_available.retain(predicate)  # the server's GTIDs of the sources the filter keeps ...
    known = relevant.retain(set(filtered.sources()).__contains__)  # ... the offset knows: all replaced below
    floor = known.with_(server_purged)  # other sources (new, or filtered out): from the server's first GTID
    return floor.with_(filtered)  # the offset's sources: the offset's GTIDs, replacing (not joining) the above


def purged_needed(offset: GtidSet, server_purged: GtidSet, predicate: Predicate | None = None) -> GtidSet:
    """The GTIDs the server purged that the connector has not read, of the filter's sources (empty: resuming
    loses nothing).

    BinlogConnectorConnection.isBinlogPositionAvailable finds them as (executed - offset) - ((executed -
    offset) - purged), of the filter's sources; the server's purged GTIDs being among its executed ones, that
    is purged - offset (`position_available` computes it Debezium's way).
    """
    return server_purged.retain(predicate).subtract(offset.retain(predicate))


def position_available(offset: GtidSet, server_available: GtidSet, server_purged: GtidSet,
                       predicate: Predicate | None = None) -> bool:
    """Whether the server can resume at the offset's GTID position (isBinlogPositionAvailable's GTID branch);
    if not, snapshot.mode decides (when_needed: a new snapshot; otherwise the connector fails)."""
    # An offset with empty gtids starts at the beginning.
    if offset.is_empty:
        return True
    # The server has no GTIDs (GTID mode off, or reset): the offset's cannot be found.
    if server_available.is_empty:
        return False
    # The offset has transactions (of the filter's sources) the server never executed: another server.
    if not server_available.contains(offset.retain(predicate)):
        return False
    # The server's GTIDs of the filter's sources the connector has not read ...
    to_replicate = server_available.retain(predicate).subtract(offset.retain(predicate))
    # ... must all be still on the server.
    return to_replicate.subtract(server_purged) == to_replicate


class Tracker:
    """The GTID set as Debezium keeps it while reading the binlog: the set it connected with, and the GTID of
    every transaction read since (of every source: gtid.source.* decide only whose DML is emitted)."""

    def __init__(self, start: GtidSet, dml_filter: Predicate | None = None):
        """`start`: the set sent on connect; `dml_filter`: `source_filter`'s predicate when
        gtid.source.filter.dml.events (Debezium's default) is true, else None."""
        self._sets: dict[str, list[Interval]] = {u: list(ivs) for u, ivs in start._key}
        self._dml_filter = dml_filter
        self._current: GtidSet | None = start
        self._pending: GtidSet | None = None  # the open transaction, if the set did not have it already
        self.gtid: str | None = None  # the transaction read last (Debezium's source.gtid)

    def begin(self, gtid: str) -> bool:
        """A transaction's GTID event (`uuid:gno`, as GtidEvent.gtid gives it): the transaction is in the set
        from now on (and the one before it over); returns whether its DML events are emitted."""
        uuid, gno = parse_gtid(gtid)
        self.gtid, self._pending = f"{uuid}:{gno}", None
        ivs = self._sets.setdefault(uuid, [])
        i = bisect.bisect_right(ivs, (gno, MAX_GNO + 1)) - 1  # the last interval starting at or before gno
        if i < 0 or ivs[i][1] < gno:
            i += 1
            ivs.insert(i, (gno, gno))
            if i + 1 < len(ivs) and ivs[i + 1][0] == gno + 1:
                ivs[i:i + 2] = [(gno, ivs[i + 1][1])]
            if i > 0 and ivs[i - 1][1] + 1 == gno:
                ivs[i - 1:i + 1] = [(ivs[i - 1][0], ivs[i][1])]
            self._current = None
            self._pending = GtidSet._of({uuid: ((gno, gno),)})
        return self._dml_filter is None or self._dml_filter(uuid)

    def commit(self) -> None:
        """The transaction's end (its XID event, or COMMIT): a restart no longer reads it again."""
        self._pending = None

    @property
    def gtids(self) -> GtidSet:
        """Every transaction begun so far (Debezium's currentGtidSet)."""
        if self._current is None:
            self._current = GtidSet._of({u: tuple(ivs) for u, ivs in self._sets.items()})
        return self._current

    @property
    def restart(self) -> GtidSet:
        """The set to resume from: without a transaction begun and not committed (Debezium's restartGtidSet;
        Debezium counts the open transaction in when the set it connected with was empty)."""
        return self.gtids if self._pending is None else self.gtids - self._pending
