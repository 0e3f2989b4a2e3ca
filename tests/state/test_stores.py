import pytest

from ingest.errors import StateError
from ingest.state.stores import COMMITTED, PLANNED, RUNNING, STOPPED, Stores


@pytest.fixture
def stores(tmp_path):
    return Stores.open(str(tmp_path / "lake"), configs="c", offsets="o", status="s", runs="r")


def test_offsets_latest_wins_and_history_is_kept(stores):
    p = '{"filename":"/tmp/a"}'
    for i in range(1, 4):
        assert stores.offsets.commit("src", {p: {"position": i * 10}}, task=0, batch_id=i, app_id="src:task-0")
    assert stores.offsets.committed("src")[p].offset == {"position": 30}
    assert stores.offsets.read().num_rows == 3


def test_offset_commit_is_idempotent_per_batch(stores):
    p = '{"filename":"/tmp/a"}'
    assert stores.offsets.commit("src", {p: {"position": 5}}, task=0, batch_id=1, app_id="src:task-0")
    assert not stores.offsets.commit("src", {p: {"position": 5}}, task=0, batch_id=1, app_id="src:task-0")
    assert stores.offsets.read().num_rows == 1


def test_reset_is_a_null_offset(stores):
    p = '{"filename":"/tmp/a"}'
    stores.offsets.commit("src", {p: {"position": 5}}, task=0, batch_id=1)
    stores.offsets.commit("src", {p: None}, task=-1, batch_id=0)
    assert stores.offsets.committed("src") == {}


def test_configs_are_versioned_and_deletable(stores):
    assert stores.configs.put("a", {"name": "a"}) == 1
    assert stores.configs.put("a", {"name": "a", "x": "1"}) == 2
    stores.configs.set_target_state("a", STOPPED)
    assert stores.configs.get("a")["target_state"] == STOPPED
    assert stores.configs.get("a")["config"] == {"name": "a", "x": "1"}
    stores.configs.delete("a")
    assert stores.configs.get("a") is None
    with pytest.raises(StateError, match="connector 'a' not found"):
        stores.configs.require("a")


def test_runs_show_pending_batch(stores):
    stores.runs.record("a", 0, 1, PLANNED, plan={"ranges": []})
    assert stores.runs.last("a", 0)["state"] == PLANNED
    stores.runs.record("a", 0, 1, COMMITTED, plan={"ranges": []}, stats={"records_written": 3})
    assert stores.runs.last("a", 0)["state"] == COMMITTED
    assert len(stores.runs.history("a")) == 1


def test_status_latest_per_task(stores):
    stores.status.set("a", 0, RUNNING)
    stores.status.set("a", 0, "FAILED", "boom")
    assert stores.status.get("a")[0]["trace"] == "boom"


def test_corrupt_state_table_is_a_clear_error(stores, tmp_path):
    stores.offsets.commit("src", {"p": {"position": 1}}, task=0, batch_id=1)
    log = tmp_path / "lake" / "_connect" / "o" / "_delta_log" / "00000000000000000000.json"
    log.write_text("{not json")
    fresh = Stores.open(str(tmp_path / "lake"), configs="c", offsets="o", status="s", runs="r")
    with pytest.raises(StateError, match="cannot be read"):
        fresh.offsets.committed("src")


@pytest.mark.parametrize("length", [31, 32, 33, 80])
def test_long_connector_names_find_their_offsets(stores, length):
    """A name longer than the 32 characters string statistics keep: the file holding it must not be
    pruned from the lookup (delta-rs prunes a file with a min and no max as if the max were null)."""
    name = "c" * (length - 1) + "x"
    p = '{"filename":"/tmp/a"}'
    stores.offsets.commit(name, {p: {"position": 7}}, task=0, batch_id=1, app_id=f"{name}:task-0")
    stores.offsets.commit("other", {p: {"position": 1}}, task=0, batch_id=1, app_id="other:task-0")
    assert stores.offsets.committed(name)[p].offset == {"position": 7}
    assert stores.runs.last(name, 0) is None


def test_a_read_reads_only_the_files_added_since_the_last(stores):
    """A state table keeps the rows of the files it read: the next read reads only newer files, so a batch
    does not slow down as the table gathers files between maintenance runs."""
    for i in range(1, 4):
        stores.offsets.commit("src", {'"p"': {"position": i}}, task=0, batch_id=i, app_id="src:task-0")
    assert stores.offsets.committed("src")['"p"'].offset == {"position": 3}
    kept = dict(stores.offsets._files)
    assert len(kept) == 3
    stores.offsets.commit("src", {'"p"': {"position": 4}, '"q"': {"position": 1}}, task=0, batch_id=4,
                           app_id="src:task-0")
    committed = stores.offsets.committed("src")
    assert {k: e.offset for k, e in committed.items()} == {'"p"': {"position": 4}, '"q"': {"position": 1}}
    assert len(stores.offsets._files) == 4
    assert all(stores.offsets._files[path] is rows for path, rows in kept.items())  # not read again
    assert sorted(stores.offsets.read(columns=["batch_id"]).column("batch_id").to_pylist()) == [1, 2, 3, 4, 4]


def test_a_state_table_moved_aside_and_created_again_is_written_where_its_log_goes_on(stores, tmp_path):
    """The stores keep their Delta table open between batches; one moved aside (to start afresh) and
    created again by another process must not get a commit that continues the old log."""
    import os
    import shutil

    from deltalake import DeltaTable

    for i in range(1, 4):
        stores.offsets.commit("src", {'"p"': {"n": i}}, task=0, batch_id=i)
    assert stores.offsets.committed("src")['"p"'].offset == {"n": 3}
    shutil.move(stores.offsets.uri, str(tmp_path / "aside"))
    other = Stores.open(str(tmp_path / "lake"), configs="c", offsets="o", status="s", runs="r")
    other.offsets.commit("src", {'"q"': {"n": 1}}, task=0, batch_id=1)
    stores.offsets.commit("src", {'"q"': {"n": 2}}, task=0, batch_id=2)
    assert sorted(os.listdir(os.path.join(stores.offsets.uri, "_delta_log"))) == [
        "00000000000000000000.json", "00000000000000000001.json"]
    assert DeltaTable(stores.offsets.uri).version() == 1
    for s in (stores, Stores.open(str(tmp_path / "lake"), configs="c", offsets="o", status="s", runs="r")):
        assert {k: e.offset for k, e in s.offsets.committed("src").items()} == {'"q"': {"n": 2}}


def test_consecutive_idle_polls_are_recorded_once_an_hour(stores):
    """A quiet connector polled every minute commits one EMPTY row, not one per poll: its runs table (read by
    every batch, held by a worker) stays the size of its batches. An hour on, the next idle poll is recorded
    again, and a batch with records starts the count anew."""
    from ingest.runtime.batches import IDLE_RECORD_EVERY, Batch, BatchLog

    log = BatchLog(stores.runs, "quiet", 0)
    files = lambda: len(stores.runs._load().file_uris())  # noqa: E731
    for _ in range(5):
        batch = log.next()
        assert batch.id == 1
        log.empty(batch)
    assert files() == 1
    [row] = stores.runs.history("quiet", 0)
    assert row["state"] == "EMPTY"
    log.empty(Batch(1, None, row["written_at"] + IDLE_RECORD_EVERY))
    assert files() == 2
    batch = log.next()
    log.planned(batch, {"ranges": []})
    log.committed(batch, {"records_written": 3})
    log.empty(log.next())
    assert [(r["batch_id"], r["state"]) for r in stores.runs.history("quiet", 0)] == [(1, "COMMITTED"), (2, "EMPTY")]
    assert files() == 5
