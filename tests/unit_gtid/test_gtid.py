"""connectors.mysql.gtid against python-mysql-replication's own GtidSet and GtidEvent, a brute-force model (a set
of (uuid, number) pairs), and the cases of Debezium's unit tests. No server needed."""

from __future__ import annotations

import pickle
import random
import struct
import uuid as uuidlib
import zlib

import pytest
from pymysql.protocol import MysqlPacket
from pymysqlreplication import constants
from pymysqlreplication import gtid as lib
from pymysqlreplication.event import GtidEvent
from pymysqlreplication.packet import BinLogPacketWrapper

from connectors.mysql.gtid import (GTID_FILTER_CONFLICT, MAX_GNO, GtidSet, Tracker, parse_gtid, position_available,
                                   purged_needed, resume_set, source_filter)

# The uuids of Debezium's MySqlGtidSetTest and MySqlTaskContextTest.
A = "036d85a9-64e5-11e6-9b48-42010af0000c"
B = "7145bf69-d1ca-11e5-a588-0242ac110004"
C = "7c1de3f2-3fd2-11e6-9cdc-42010af000bc"
D = "123e4567-e89b-12d3-a456-426655440000"
E = "24bc7850-2c16-11e6-a073-0242ac110002"
POOL = [A, B, C, D]
TOP = 30  # random transaction numbers are 1..TOP

Model = frozenset  # of (uuid, gno)


# --- helpers ------------------------------------------------------------------------------------------------

def model_of(s: GtidSet) -> Model:
    """The set's transactions, one by one; also checks the set is in normal form."""
    out = set()
    for u in s.sources():
        ivs = s.intervals(u)
        assert ivs, s
        assert u == u.lower()
        for (s1, e1), (s2, _) in zip(ivs, ivs[1:]):
            assert e1 + 1 < s2, s  # sorted, disjoint, not adjacent
        for start, end in ivs:
            assert 1 <= start <= end
            out.update((u, g) for g in range(start, end + 1))
    return Model(out)


def runs(gnos: list[int]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for g in sorted(gnos):
        if out and g == out[-1][1] + 1:
            out[-1][1] = g
        else:
            out.append([g, g])
    return [(s, e) for s, e in out]


def text_of(model: Model, rng: random.Random, overlapping: bool, mixed_case: bool = False) -> str:
    """MySQL text for the model, written in one of the many ways MySQL accepts: runs split at random into
    adjacent pieces, pieces in random order, `N` or `N-N` for one transaction, and (when `overlapping`)
    pieces repeated or overlapping, a source split over several members, spaces and newlines."""
    members = []
    for u in sorted({u for u, _ in model}):
        pieces = []
        for s, e in runs([g for v, g in model if v == u]):
            while s <= e:
                cut = rng.randint(s, e)
                pieces.append((s, cut))
                s = cut + 1
        if overlapping:
            for s, e in list(pieces):
                if rng.random() < 0.3:
                    a = rng.randint(s, e)
                    pieces.append((a, rng.randint(a, e)))
        rng.shuffle(pieces)
        words = [str(s) if s == e and rng.random() < 0.5 else f"{s}-{e}" for s, e in pieces]
        name = u.upper() if mixed_case and rng.random() < 0.5 else u
        if overlapping and len(words) > 1 and rng.random() < 0.3:  # the source in two members
            k = rng.randint(1, len(words) - 1)
            members += [name + ":" + ":".join(words[:k]), name + ":" + ":".join(words[k:])]
        else:
            members.append(name + ":" + ":".join(words))
    rng.shuffle(members)
    return (", \n" if overlapping else ",").join(members)


def random_model(rng: random.Random, density: float | None = None) -> Model:
    out = set()
    for u in rng.sample(POOL, rng.randint(0, len(POOL))):
        p = density if density is not None else rng.choice([0.1, 0.4, 0.8])
        out.update((u, g) for g in range(1, TOP + 1) if rng.random() < p)
    return Model(out)


def from_model(model: Model) -> GtidSet:
    by: dict[str, list[int]] = {}
    for u, g in model:
        by.setdefault(u, []).append(g)
    return GtidSet({u: runs(gs) for u, gs in by.items()})


def lib_text(s: lib.GtidSet) -> str:
    """The library's set in MySQL's canonical order (it keeps members in insertion order), empty members dropped
    (its subtraction leaves `uuid:`)."""
    return ",".join(sorted(str(g) for g in s.gtids if g.intervals))


# --- parse and print ----------------------------------------------------------------------------------------

# MySqlGtidSetTest: shouldCreateSetWithSingleInterval, shouldCollapseAdjacentIntervals,
# shouldNotCollapseNonAdjacentIntervals, shouldCreateWithMultipleIntervals,
# shouldCreateWithMultipleIntervalsThatMayBeAdjacent: the text, and Debezium's toString of it.
@pytest.mark.parametrize(("text", "printed"), [
    (E + ":1-191", E + ":1-191"),
    (E + ":1-191:192-199", E + ":1-199"),
    (E + ":1-191:193-199", E + ":1-191:193-199"),
    (E + ":1-191:193-199:1000-1033", E + ":1-191:193-199:1000-1033"),
    (E + ":1-191:192-199:1000-1033:1035-1036:1038-1039", E + ":1-199:1000-1033:1035-1036:1038-1039"),
])
def test_debeziums_gtid_set_texts_print_as_debezium_prints_them(text, printed):
    assert str(GtidSet.parse(text)) == printed


def test_gtid_executed_text_with_newlines_several_uuids_and_mixed_case():
    text = (f"{C.upper()}:1-41,\n{A}:1-2,\r\n  {B}:1-3200:3202 ,\n")
    s = GtidSet.parse(text)
    assert s.sources() == (A, B, C)  # lower case, sorted
    assert str(s) == f"{A}:1-2,{B}:1-3200:3202-3202,{C}:1-41"
    assert s.to_mysql() == f"{A}:1-2,{B}:1-3200:3202,{C}:1-41"
    assert GtidSet.parse(s.to_mysql(",\n")) == s == GtidSet.parse(str(s))
    assert GtidSet.parse(f"{A}:7") == GtidSet.parse(f"{A}:7-7") == GtidSet({A.upper(): [(7, 7)]})


def test_overlapping_and_adjacent_intervals_merge():
    # The library merges adjacent intervals but refuses overlapping ones: the model is the reference there.
    assert lib_text(lib.GtidSet(f"{A}:1-3:4-6")) == GtidSet.parse(f"{A}:1-3:4-6").to_mysql() == f"{A}:1-6"
    with pytest.raises(Exception, match="Overlapping"):
        lib.GtidSet(f"{A}:1-5:3-7")
    s = GtidSet.parse(f"{A}:3-7:1-5, {A}:9:8, {A}:20-30:21-22")
    assert model_of(s) == {(A, g) for g in [*range(1, 10), *range(20, 31)]}
    assert str(s) == f"{A}:1-9:20-30"


def test_empty_texts_are_the_empty_set():
    for text in (None, "", "  \n", ",", " , ,\n,"):  # MySQL skips empty members
        s = GtidSet.parse(text)
        assert s.is_empty and not s and str(s) == "" and s == GtidSet() and hash(s) == hash(GtidSet())
    assert GtidSet.parse(f",{A}:1,,") == GtidSet.parse(f"{A}:1")


def test_random_texts_round_trip_and_match_the_model():
    rng = random.Random(20240611)
    for _ in range(200):
        model = random_model(rng)
        s = GtidSet.parse(text_of(model, rng, overlapping=True, mixed_case=True))
        assert model_of(s) == model
        assert GtidSet.parse(str(s)) == s == GtidSet.parse(s.to_mysql(",\n")) == from_model(model)
        assert hash(s) == hash(from_model(model))
        assert eval(repr(s), {"GtidSet": GtidSet}) == s == pickle.loads(pickle.dumps(s))


def test_random_texts_parse_as_the_library_parses_them():
    rng = random.Random(7)
    for _ in range(200):
        text = text_of(random_model(rng), rng, overlapping=False)  # the library refuses overlaps
        assert GtidSet.parse(text).to_mysql() == lib_text(lib.GtidSet(text)), text


def test_the_largest_numbers():
    s = GtidSet.parse(f"{A}:{MAX_GNO - 1}-{MAX_GNO}")
    assert s.intervals(A) == ((MAX_GNO - 1, MAX_GNO),)
    assert GtidSet.parse(str(s)) == s


# --- errors -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("member", "why"), [
    ("3e11fa47-71ca-11e1-9e33-c80aa942956:1-5", "uuid"),  # one digit short
    ("3e11fa47-71ca-11e1-9e33-c80aa9429562", "no transaction numbers"),
    ("3e11fa47-71ca-11e1-9e33-c80aa9429562:", "N or N-M"),
    ("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-x", "N or N-M"),
    ("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-2-3", "N or N-M"),
    ("3e11fa47-71ca-11e1-9e33-c80aa9429562:+5", "N or N-M"),
    ("3e11fa47-71ca-11e1-9e33-c80aa9429562:0x10", "N or N-M"),
    ("3e11fa47-71ca-11e1-9e33-c80aa9429562:0-5", "1 <= N <= M"),
    ("3e11fa47-71ca-11e1-9e33-c80aa9429562:9-3", "1 <= N <= M"),
    (f"3e11fa47-71ca-11e1-9e33-c80aa9429562:1-{MAX_GNO + 1}", "1 <= N <= M"),
    ("3e11fa47-71ca-11e1-9e33-c80aa9429562:debezium_test:1-191", "tagged GTIDs are not supported"),
    ("0-1-342", "uuid"),  # a MariaDB GTID
])
def test_a_bad_member_is_named_and_nothing_else_is_echoed(member, why):
    text = f"{A}:1-5,\n{member},{B}:7"
    with pytest.raises(ValueError) as e:
        GtidSet.parse(text)
    message = str(e.value)
    assert repr(member) in message and why in message, message
    assert A not in message and B not in message, message


def test_a_long_bad_member_is_shown_shortened():
    with pytest.raises(ValueError) as e:
        GtidSet.parse(f"{A}:" + "1" * 5000)
    assert A in str(e.value) and "1 <= N <= M" in str(e.value) and len(str(e.value)) < 250
    with pytest.raises(ValueError, match="the number is from 1"):
        parse_gtid(f"{A}:" + "1" * 5000)


def test_bad_values_elsewhere():
    with pytest.raises(TypeError):
        GtidSet.parse(b"x")  # type: ignore[arg-type]
    for bad in ("x", f"{A}:0", f"{A}:1-2", f"{A}:t:5", "0-1-342", f"{A}:{MAX_GNO + 1}"):
        with pytest.raises(ValueError):
            parse_gtid(bad)
    with pytest.raises(ValueError):
        GtidSet({A: [(5, 3)]})
    with pytest.raises(ValueError):
        GtidSet({"nope": [(1, 3)]})
    with pytest.raises(ValueError):
        GtidSet.parse(f"{A}:1").add(A, 0)
    with pytest.raises(AttributeError):
        GtidSet.parse(f"{A}:1")._key = ()  # type: ignore[misc]


# --- the library's operations -------------------------------------------------------------------------------

def test_union_contains_and_subtract_agree_with_the_library():
    # Texts in lower case, as servers print them: the library compares uuids case-sensitively (A:1 and a:2 are two
    # sources to it, one to MySQL), so mixed case is checked against the model only (test_set_operations_...).
    rng = random.Random(42)
    counts = {"union": 0, "union_overlapping": 0, "contains_true": 0, "contains_false": 0}
    for _ in range(200):
        ma = random_model(rng)
        mb = random_model(rng) if rng.random() < 0.5 else Model(p for p in ma if rng.random() < 0.6)
        ta, tb = text_of(ma, rng, overlapping=False), text_of(mb, rng, overlapping=False)
        a, b = GtidSet.parse(ta), GtidSet.parse(tb)
        la, lb = lib.GtidSet(ta), lib.GtidSet(tb)

        # Union: the library's `+` (merge_gtid per source) raises on any transaction in both sets ("Overlapping
        # interval") where MySQL's union just has it once: the model is the reference for those pairs.
        if ma & mb:
            counts["union_overlapping"] += 1
            with pytest.raises(Exception, match="Overlapping"):
                la + lb
            assert model_of(a | b) == ma | mb
        else:
            counts["union"] += 1
            assert (a | b).to_mysql() == lib_text(la + lb)
            merged = lib.GtidSet(ta)
            for g in lb.gtids:
                merged.merge_gtid(g)
            assert (a | b).to_mysql() == lib_text(merged)

        # Containment: `gtid in gtid_set` for one source's Gtid is right; `gtid_set in gtid_set` is not (it asks
        # for each source's intervals to be equal: test_the_librarys_set_containment_is_equality), so not used.
        theirs = all(g in la for g in lb.gtids)
        assert a.contains(b) == theirs == (mb <= ma)
        counts["contains_true" if theirs else "contains_false"] += 1

        # Subtraction: the library has it per source (Gtid.__sub__), not for sets.
        by_sid = {g.sid: g for g in lb.gtids}
        diff = lib.GtidSet([g - by_sid[g.sid] if g.sid in by_sid else g for g in la.gtids])
        assert (a - b).to_mysql() == lib_text(diff)
    assert min(counts.values()) >= 30, counts  # every branch was exercised


def test_the_librarys_set_containment_is_equality():
    # MySQL: A:2-3 is a subset of A:1-10. The library's GtidSet.__contains__(GtidSet) compares each source's
    # Gtid with == (list membership), so it says no; ours follows MySQL (and the model).
    big, small = f"{A}:1-10", f"{A}:2-3"
    assert (lib.GtidSet(small) in lib.GtidSet(big)) is False
    assert lib.Gtid(small) in lib.Gtid(big)
    assert GtidSet.parse(big).contains(GtidSet.parse(small))
    assert model_of(GtidSet.parse(small)) <= model_of(GtidSet.parse(big))


def test_set_operations_match_the_model():
    rng = random.Random(1234)
    for _ in range(200):
        ma, mb = random_model(rng), random_model(rng)
        if rng.random() < 0.3:
            mb = Model(p for p in ma if rng.random() < 0.7)
        a = GtidSet.parse(text_of(ma, rng, overlapping=True, mixed_case=True))
        b = GtidSet.parse(text_of(mb, rng, overlapping=True, mixed_case=True))
        assert model_of(a | b) == model_of(a.union(b)) == ma | mb
        assert model_of(a - b) == model_of(a.subtract(b)) == ma - mb
        assert a.contains(b) == (b in a) == b.is_contained_within(a) == (mb <= ma)
        assert (a == b) == (ma == mb)
        # Debezium's with: each source of b replaces a's.
        assert model_of(a.with_(b)) == {p for p in ma if p[0] not in {u for u, _ in mb}} | mb
        keep = set(rng.sample(POOL, 2))
        assert model_of(a.retain(keep.__contains__)) == {p for p in ma if p[0] in keep}
        assert a.retain(None) is a
        u, g = rng.choice(POOL), rng.randint(1, TOP + 2)
        assert model_of(a.add(u.upper(), g)) == ma | {(u, g)}
        assert a.contains(f"{u}:{g}") == ((u, g) in ma) == (f"{u.upper()}:{g}" in a)
        assert set(a.sources()) == {v for v, _ in ma}


# --- GTID events --------------------------------------------------------------------------------------------

class _CtlConnection:
    # As pymysqlreplication's own tests/test_event.py builds events from bytes.
    charset = "utf8"

    def _get_dbms(self):
        return "mysql"


def gtid_log_event(sid: str, gno: int, last_committed: int, sequence_number: int) -> GtidEvent:
    """A MySQL 8.0 GTID_LOG_EVENT as the server writes it, read by pymysqlreplication's GtidEvent."""
    body = (b"\x00"  # GTID_FLAGS: commit flag clear (row-based transaction)
            + uuidlib.UUID(sid).bytes  # SID
            + struct.pack("<q", gno)  # GNO
            + b"\x02"  # LOGICAL_TIMESTAMP_TYPECODE
            + struct.pack("<qq", last_committed, sequence_number)
            + (1718000000123456).to_bytes(7, "little")  # immediate_commit_timestamp (no original one)
            + b"\xc8"  # transaction_length, a packed integer (200)
            + struct.pack("<I", 80036))  # immediate_server_version (no original one)
    size = 19 + len(body) + 4
    header = struct.pack("<IBIIIH", 1718000000, constants.GTID_LOG_EVENT, 1, size, 4 + size, 0)
    checksum = struct.pack("<I", zlib.crc32(header + body))
    packet = MysqlPacket(b"\x00" + header + body + checksum, 0)
    wrapper = BinLogPacketWrapper(packet, {}, _CtlConnection(), (8, 0, 36), True, frozenset([GtidEvent]),
                                  None, None, None, None, False, False, True, False, False)
    return wrapper.event


def test_gtid_events_advance_the_tracker():
    rng = random.Random(99)
    start_model = random_model(rng, density=0.3)
    start = from_model(start_model)
    new = rng.sample(sorted({(u, g) for u in POOL for g in range(1, TOP + 1)} - start_model), 60)
    new += [(rng.choice(POOL), rng.randint(2**40, 2**62)) for _ in range(5)]
    tracker, expected = Tracker(start), set(start_model)
    theirs = lib.GtidSet(start.to_mysql())
    for n, (u, g) in enumerate(new):
        event = gtid_log_event(u, g, n, n + 1)
        assert isinstance(event, GtidEvent) and event._is_event_valid and event.gno == g
        assert tracker.begin(event.gtid) is True
        tracker.commit()
        expected.add((u, g))
        theirs = theirs + lib.Gtid(event.gtid)
        assert tracker.gtid == f"{u}:{g}"
    assert tracker.gtids == tracker.restart == start.union(from_model(Model(expected)))
    assert tracker.gtids.to_mysql() == lib_text(theirs)
    # Read again (a resume), each GTID leaves the set as it is.
    again = Tracker(tracker.gtids)
    for u, g in new[:10]:
        again.begin(gtid_log_event(u, g, 0, 1).gtid)
        assert again.restart == again.gtids == tracker.gtids


def test_the_tracker_restarts_before_an_open_transaction_and_skips_excluded_sources_dml():
    start = GtidSet.parse(f"{A}:1-5,{B}:1-3")
    tracker = Tracker(start, source_filter(excludes=[B]))
    assert tracker.begin(gtid_log_event(A, 6, 0, 1).gtid) is True
    assert tracker.gtids == GtidSet.parse(f"{A}:1-6,{B}:1-3") and tracker.restart == start
    tracker.commit()
    assert tracker.restart == tracker.gtids
    assert tracker.begin(gtid_log_event(B, 4, 1, 2).gtid) is False  # tracked, its DML not emitted
    assert tracker.restart == GtidSet.parse(f"{A}:1-6,{B}:1-3")
    assert tracker.begin(gtid_log_event(C, 1, 2, 3).gtid) is True  # a DDL (no XID) ended the one before
    assert tracker.restart == GtidSet.parse(f"{A}:1-6,{B}:1-4")
    tracker.commit()
    assert str(tracker.restart) == f"{A}:1-6,{B}:1-4,{C}:1-1"
    # Out of order and filling a gap: intervals still merge.
    t = Tracker(GtidSet.parse(f"{A}:1-3:7-9"))
    for g in (5, 4, 6, 12, 11):
        t.begin(f"{A}:{g}")
    assert str(t.gtids) == f"{A}:1-9:11-12"


# --- Debezium's cases ---------------------------------------------------------------------------------------

def test_debeziums_containment_cases():
    # MySqlGtidSetTest.shouldCorrectlyDetermineIfSimpleGtidSetIsContainedWithinAnother
    gtids = GtidSet.parse(f"{C}:1-41")
    assert gtids.is_contained_within(GtidSet.parse(f"{C}:1-41"))
    assert gtids.is_contained_within(GtidSet.parse(f"{C}:1-42"))
    assert not gtids.is_contained_within(GtidSet.parse(f"{C}:2-41"))
    assert not gtids.is_contained_within(GtidSet.parse(f"{B}:1"))
    # shouldCorrectlyDetermineIfComplexGtidSetIsContainedWithinAnother, and ...WithVariousLineSeparators...
    connector = GtidSet.parse(f"{A}:1-2,{B}:1-3200,{C}:1-41")
    for sep in ("", "\r\n", "\n", "\r"):
        server = GtidSet.parse(f"{A}:1-2,{sep}{B}:1-3202,{sep}{C}:1-41")
        assert connector.is_contained_within(server)


def test_debeziums_filter_and_subtract_cases():
    # MySqlGtidSetTest.shouldFilterServerUuids
    original = GtidSet.parse(f"{A}:1-2,{B}:1-3200,{C}:1-41")
    keepers = {A, C, "wont-be-found"}
    filtered = original.retain(keepers.__contains__)
    assert set(filtered.sources()) <= keepers and filtered.intervals(B) == ()
    # MySqlGtidSetTest.subtract
    one = GtidSet.parse(f"{A}:1-20,{B}:1-3200:3400-3800:3900-3990,{C}:5-8:12-18:25-55:60-65")
    two = GtidSet.parse(f"{A}:1-21,{B}:1-3200:3400-3800:4500,{C}:1-49:62-70:80-100")
    assert two - one == GtidSet.parse(f"{A}:21,{B}:4500,{C}:1-4:9-11:19-24:66-70:80-100")
    # MySqlGtidSetTest.shouldSubtractOnlyGTIDSetsInLeftOperand
    one = GtidSet.parse(f"{A}:1-20,{C}:5-8:12-18:25-55:60-65")
    two = GtidSet.parse(f"{A}:1-21,{B}:1-3200:3400-3800:4500")
    assert two - one == GtidSet.parse(f"{A}:21,{B}:1-3200:3400-3800:4500")
    # MySqlGtidSetTest.removeInterval and removeAllIntervals, as sets of one source.
    def iv(s: int, e: int) -> GtidSet:
        return GtidSet({A: [(s, e)]}) if s <= e else GtidSet()
    assert iv(3, 7) - iv(2, 5) == iv(6, 7)
    assert iv(2, 5) - iv(3, 7) == iv(2, 2)
    assert iv(3, 7) - iv(4, 5) == GtidSet({A: [(3, 3), (6, 7)]})
    assert iv(3, 7) - iv(9, 12) == iv(3, 7)
    assert iv(3, 7) - GtidSet({A: [(1, 2)]}) == iv(3, 7)  # Debezium's (0, 2): MySQL has no transaction 0
    assert iv(4, 5) - iv(3, 7) == GtidSet() == iv(4, 5) - iv(4, 5)
    assert iv(1, 49) - GtidSet({A: [(5, 8), (12, 18), (25, 55), (60, 65)]}) == GtidSet({A: [(1, 4), (9, 11),
                                                                                          (19, 24)]})


def test_debeziums_tagged_gtid_case_is_refused():
    # MySqlGtidSetTest.shouldCreateSetWithTaggedInterval: Debezium 3.x reads MySQL 8.4's tags; this module not.
    with pytest.raises(ValueError, match="tagged GTIDs are not supported"):
        GtidSet.parse(E + ":debezium_test:1-191")


def test_with_replaces_a_source_rather_than_joining_it():
    # Debezium 1.x's MySqlTaskContextTest.shouldFilterAndMergeGtidSet (gtid.new.channel.position=latest, an option
    # Debezium 2.0 removed: DBZ-5045) merged as available.with(offset filtered): the offset's A:1-2 replaces
    # the server's A:1-20 rather than joining it, every other source of the server is kept.
    offset = GtidSet.parse(f"{A}:1-2,{C}:5-41")
    available = GtidSet.parse(f"{A}:1-20,{B}:1-3200,{D}:1-41")
    merged = available.with_(offset.retain(source_filter(includes=[A])))
    assert merged.intervals(A) == ((1, 2),) and merged.intervals(B) == ((1, 3200),)
    assert merged.intervals(D) == ((1, 41),) and merged.intervals(C) == ()
    assert (available | offset).intervals(A) == ((1, 20),)  # a union would not resend A:3-20


def test_resume_set_of_debeziums_test():
    # Debezium 1.x's MySqlTaskContextTest.shouldMergeToFirstAvailableGtidSetPositions (DBZ-923): the only way
    # Debezium merges since 2.0 (MySqlConnection.filterGtidSet).
    offset = GtidSet.parse(f"{A}:1-2,{C}:5-41")
    available = GtidSet.parse(f"{A}:1-20,{B}:1-3200,{D}:1-41")
    purged = GtidSet.parse(f"{B}:1-1234")
    merged = resume_set(offset, available, purged, source_filter(includes=[A]))
    assert merged.intervals(A) == ((1, 2),)
    assert merged.intervals(B) == ((1, 1234),)
    assert merged.intervals(D) == ()
    assert merged.intervals(C) == ()
    # The same inputs, legacy shouldFilterAndMergeGtidSet's: no purged GTIDs, so only the offset's source.
    assert resume_set(offset, available, GtidSet(), source_filter(includes=[A])) == GtidSet.parse(f"{A}:1-2")


def test_resume_set_follows_debeziums_rule_per_source():
    rng = random.Random(5)
    for _ in range(200):
        offset, available = random_model(rng), random_model(rng)
        cut = {u: rng.randint(0, TOP) for u in POOL}
        purged = Model(p for p in available if p[1] <= cut[p[0]])  # the server's oldest GTIDs
        kept = set(rng.sample(POOL, rng.randint(0, len(POOL))))
        predicate = None if rng.random() < 0.2 else kept.__contains__
        got = model_of(resume_set(from_model(offset), from_model(available), from_model(purged), predicate))
        offset_sources = {u for u, _ in offset if predicate is None or predicate(u)}
        # Per source: the offset's numbers if the filter keeps it and the offset has it, else the purged ones.
        expected = {p for p in offset if p[0] in offset_sources} | {p for p in purged if p[0] not in offset_sources}
        assert got == expected
        # So the server sends, of a source the offset has, what the offset lacks; of any other, all it still has.
        sent = set(available) - got
        assert sent == {p for p in available if (p not in offset if p[0] in offset_sources else p not in purged)}


def test_purged_needed_and_position_available():
    # Modelled on ZZZGtidSetIT.shouldProcessPurgedLogsWhenDownAndSnapshotNeeded (DBZ-1244), worked by hand:
    # the connector read A:1-20; the server ran A:21-22 while it was down, then purged its binlogs.
    offset = GtidSet.parse(f"{A}:1-20")
    executed = GtidSet.parse(f"{A}:1-22")
    assert purged_needed(offset, GtidSet.parse(f"{A}:1-20"), None).is_empty
    assert position_available(offset, executed, GtidSet.parse(f"{A}:1-20"))
    assert purged_needed(offset, GtidSet.parse(f"{A}:1-22"), None) == GtidSet.parse(f"{A}:21-22")
    assert not position_available(offset, executed, GtidSet.parse(f"{A}:1-22"))  # when_needed: a new snapshot
    # A source the filter excludes: its purged transactions are not needed.
    executed2 = GtidSet.parse(f"{A}:1-22,{B}:1-9")
    excl = source_filter(excludes=[B])
    assert purged_needed(offset, GtidSet.parse(f"{A}:1-20,{B}:1-9"), excl).is_empty
    assert position_available(offset, executed2, GtidSet.parse(f"{A}:1-20,{B}:1-9"), excl)
    assert not position_available(offset, executed2, GtidSet.parse(f"{A}:1-20,{B}:1-9"))
    # Empty offset gtids: the beginning; a server without GTIDs; an offset from another server.
    assert position_available(GtidSet(), GtidSet(), GtidSet())
    assert not position_available(offset, GtidSet(), GtidSet())
    assert not position_available(GtidSet.parse(f"{A}:1-30"), executed, GtidSet())
    assert position_available(GtidSet.parse(f"{A}:1-20,{B}:1-5"), executed, GtidSet(), source_filter(includes=[A]))

    # Random: Debezium's way (position_available) and purged - offset agree on servers whose purged GTIDs are
    # among their executed ones and know the offset's; the model gives purged_needed's GTIDs.
    rng = random.Random(11)
    for _ in range(200):
        available = random_model(rng)
        purged = Model(p for p in available if rng.random() < 0.5)
        offset = Model(p for p in available if rng.random() < 0.7) if rng.random() < 0.9 else random_model(rng)
        kept = set(rng.sample(POOL, 2))
        predicate = rng.choice([None, kept.__contains__])
        need = purged_needed(from_model(offset), from_model(purged), predicate)
        assert model_of(need) == {p for p in purged - offset if predicate is None or predicate(p[0])}
        ok = position_available(from_model(offset), from_model(available), from_model(purged), predicate)
        known = {p for p in offset if predicate is None or predicate(p[0])} <= available
        if offset and available and known:
            assert ok == need.is_empty


def test_source_filter_as_debezium():
    # Predicates' PredicatesTest.shouldMatchCommaSeparatedRegexIncludes: whole-string matches.
    p = source_filter(includes=["1.*5", "30"])
    assert [p(s) for s in ("30", "1005", "105", "15")] == [True] * 4
    assert [p(s) for s in ("215", "150", "015", "5")] == [False] * 4
    # PredicatesTest.shouldMatchCommaSeparatedUuidLiterals (uuids from a fixed seed), and in any case.
    rng = random.Random(3)
    u1, u2, u3, u4 = (str(uuidlib.UUID(int=rng.getrandbits(128), version=4)) for _ in range(4))
    prefix = u4[:10] + ".*"
    for includes, matches in (([u1, u2], (True, True, False, False)),
                              ([u1.upper(), u2, prefix.upper()], (True, True, False, True))):
        inc, exc = source_filter(includes=includes), source_filter(excludes=includes)
        assert tuple(inc(u) for u in (u1, u2, u3, u4)) == matches
        assert tuple(exc(u) for u in (u1, u2, u3, u4)) == tuple(not m for m in matches)
    everything = source_filter([], [])
    assert everything(u1) and everything("anything")
    with pytest.raises(ValueError, match=GTID_FILTER_CONFLICT):
        source_filter(includes=[u1], excludes=[u2])
    with pytest.raises(ValueError, match=r"gtid.source.excludes: '\[' is not a regular expression"):
        source_filter(excludes=["["])
    # valid in Python, refused by Java's matcher (Debezium's, and Spark's rlike that applies the filter)
    for python_only in ("(?P<u>[0-9a-f-]+)", "3e11fa47-.{,40}", "(?#the primary)3e11fa47.*"):
        with pytest.raises(ValueError, match="which Java's regular expressions"):
            source_filter(includes=[python_only])
