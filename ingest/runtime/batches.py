"""The batch protocol (DESIGN §3), in one place. Every batch — a source task's, a sink task's, a sink's
offset reset, an S3 sink's compaction — goes through it:

    lease the task -> next batch (a new id, or the PLANNED one an interrupted run left: same id, same plan)
    -> a PLANNED row holding the plan, before anything is written -> the work, every write idempotent by
    the app transaction (app id, batch id) -> the offsets, committed in that same app transaction ->
    the COMMITTED row.

A process killed at any step converges on the state of a run that never crashed: the next run finds the
PLANNED row, repeats the work (whatever was written is skipped by its app transaction) and commits. A person
moving offsets abandons a planned batch (`abandon_pending`): its plan was made from the old ones.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ingest.runtime.lease import Lease
from ingest.state.stores import ABANDONED, COMMITTED, EMPTY, PLANNED, OffsetStore, RunStore
from ingest.state.tables import now


def sink_group(connector: str) -> str:
    """A sink connector's consumer group, as Kafka Connect names it: its offsets' key."""
    return f"connect-{connector}"


def task_app_id(connector: str, task_id: int, *, sink: bool) -> str:
    """The app transaction of a task's writes and offset commits: `<connector>:task-<n>` for a source,
    `connect-<connector>:task-<n>` (its group's name) for a sink."""
    return f"{sink_group(connector) if sink else connector}:task-{task_id}"


def task_lease(lake_root: str, connector: str, task_id: int, locks_dir: str | None) -> Lease:
    """The lease a task's batches run under (not yet acquired): one batch of a task at a time."""
    return Lease(lake_root, f"{connector}.task-{task_id}", locks_dir)


IDLE_RECORD_EVERY = timedelta(hours=1)
"""How often a run of idle polls is recorded: its first, then one an hour."""


@dataclass(frozen=True)
class Batch:
    id: int
    plan: dict[str, Any] | None
    """The plan an interrupted run recorded (this batch resumes it), else None (a new batch)."""
    started: datetime

    @property
    def resumed(self) -> bool:
        return self.plan is not None


class BatchLog:
    """One task's batches in the runs table."""

    def __init__(self, runs: RunStore, connector: str, task_id: int, app_id: str = ""):
        self.runs = runs
        self.connector = connector
        self.task_id = task_id
        self.app_id = app_id

    def next(self) -> Batch:
        """The batch to run: the planned one a crashed run left (to finish, with its plan), else a new one."""
        last = self.runs.last(self.connector, self.task_id)
        if last is not None and last["state"] == PLANNED:
            return Batch(int(last["batch_id"]), json.loads(last["plan"]), now())
        return Batch(int(last["batch_id"]) + 1 if last else 1, None, now())

    def empty(self, batch: Batch) -> None:
        """Nothing to do: recorded, so a schedule's idle polls show in the run history. Of consecutive idle
        polls, one an IDLE_RECORD_EVERY: a connector polled every minute for a quiet week would otherwise
        commit 10,000 rows that say nothing, and every later read of the table (each batch's, a worker's
        memory) would pay for them."""
        rows = self.runs.history(self.connector, self.task_id)
        last = rows[-1] if rows else None
        if (last is not None and last["state"] == EMPTY and int(last["batch_id"]) == batch.id
                and batch.started - last["written_at"] < IDLE_RECORD_EVERY):
            return
        self.runs.record(self.connector, self.task_id, batch.id, EMPTY)

    def planned(self, batch: Batch, plan: Mapping[str, Any]) -> None:
        """The intent, persisted before any write: what a resumed run repeats exactly."""
        self.runs.record(self.connector, self.task_id, batch.id, PLANNED, plan=dict(plan))

    def commit_offsets(self, batch: Batch, offsets: OffsetStore, key: str, ends: Mapping[str, Any]) -> None:
        """The batch's positions, committed under `key` in its app transaction: a resumed batch that got this far
        before is skipped. The data's writes come first; the COMMITTED row (`committed`) after."""
        offsets.commit(key, dict(ends), task=self.task_id, batch_id=batch.id, app_id=self.app_id)

    def committed(self, batch: Batch, stats: Mapping[str, Any], plan: Mapping[str, Any] | None = None) -> None:
        """The batch's end: the next run starts a new batch."""
        self.runs.record(self.connector, self.task_id, batch.id, COMMITTED, stats=dict(stats),
                         plan=None if plan is None else dict(plan), started_at=batch.started)


def abandon_pending(runs: RunStore, connector: str, reason: str) -> None:
    """Planned batches of the connector's tasks are not to be resumed (their plans came from offsets a person
    changed). Only tasks' batches: negative tasks (an S3 sink's compaction) do not plan from offsets and must
    be finished."""
    for task in {row["task"] for row in runs.history(connector) if row["task"] >= 0}:
        last = runs.last(connector, task)
        if last and last["state"] == PLANNED:
            runs.record(connector, task, last["batch_id"], ABANDONED, plan=json.loads(last["plan"]), error=reason)
