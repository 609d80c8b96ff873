"""A long command's segments, recorded in the store: each invocation of `evalsuite reproduce` that
runs something is one (its start, a heartbeat, its end and how it ended), so that a reproduction's
wall time per segment is read from the store (`evalsuite reproduce --segments`), not kept by hand;
one killed outright (SIGKILL, a machine gone) still reads as killed at its last heartbeat."""
from __future__ import annotations

import json
import os
import sqlite3
import sys
import threading
import time

from pydantic import BaseModel, ConfigDict, Field

from evalsuite.errors import Interrupted
from evalsuite.store import HEARTBEAT_S, HOST, Store, process_alive
from evalsuite.store_file import StoreError

# what a run held back at a segment's end (never started in it) is marked with: the segment that held
# it back does not count it among the runs that finished in it (the one that runs it does)
HELD_BACK = "not started: the segment ended (--segment-minutes); the next invocation runs it"


class SegmentRecord(BaseModel):
    """One invocation of a long command (``evalsuite reproduce``) against a store: when it ran, how
    it ended, what it was. ``status``: running, done (nothing left to run), ended at its limit
    (``--segment-minutes``), interrupted (Ctrl-C, SIGTERM), failed, or killed: it stopped beating
    without recording an end (SIGKILL, a machine gone), its end then being its last heartbeat.
    ``runs``: the store's runs that finished while it ran, by status (another driver's included; not
    those it held back at its end without starting them, ``HELD_BACK``)."""

    model_config = ConfigDict(extra="forbid")

    segment_id: int
    command: str
    version: str | None = None
    git_commit: str | None = None
    host: str | None = None
    started_at: float
    ended_at: float | None = None  # None while running
    status: str
    limit_minutes: float | None = None
    runs: dict[str, int] = Field(default_factory=dict)

    @property
    def minutes(self) -> float | None:
        return None if self.ended_at is None else (self.ended_at - self.started_at) / 60

    def line(self) -> str:
        """``segment 3: 2026-12-07 16:00-17:45 UTC, 105 min wall, ended at its limit (105 min), 32 runs
        finished (30 done, 2 failed); evalsuite 0.1.0 (commit abc), on vm: evalsuite reproduce ...``"""
        day = time.strftime("%Y-%m-%d %H:%M", time.gmtime(self.started_at))
        end = "now" if self.ended_at is None else time.strftime(
            "%H:%M" if time.gmtime(self.ended_at)[:3] == time.gmtime(self.started_at)[:3] else "%Y-%m-%d %H:%M",
            time.gmtime(self.ended_at))
        wall = "" if self.minutes is None else f", {self.minutes:.0f} min wall"
        limit = f" (limit {self.limit_minutes:g} min)" if self.limit_minutes else ""
        n = sum(self.runs.values())
        runs = f", {n} run{'s' * (n != 1)} finished" + (f" ({', '.join(f'{c} {s}' for s, c in sorted(self.runs.items()))})" if n else "")
        made = f"evalsuite {self.version}" + (f" (commit {self.git_commit})" if self.git_commit else "")
        return (f"segment {self.segment_id}: {day}-{end} UTC{wall}, {self.status}{limit}{runs}; {made}"
                + (f", on {self.host}" if self.host else "") + f": {self.command}")


def start(store: Store, command: str, limit_minutes: float | None, version: str | None, git_commit: str | None) -> int:
    """Record that a segment starts now under this process; its id."""
    now = time.time()
    with store.connect() as conn:
        return conn.execute("INSERT INTO segments (command, version, git_commit, host, pid, started_at, heartbeat, "
                            "status, limit_minutes) VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?)",
                            (command, version, git_commit, HOST, os.getpid(), now, now, limit_minutes)).lastrowid


def beat(store: Store, segment_id: int) -> None:
    with store.connect() as conn:
        conn.execute("UPDATE segments SET heartbeat = ? WHERE segment_id = ?", (time.time(), segment_id))


def end(store: Store, segment_id: int, status: str) -> None:
    with store.connect() as conn:
        conn.execute("UPDATE segments SET status = ?, ended_at = ?, heartbeat = ? WHERE segment_id = ?",
                     (status, time.time(), time.time(), segment_id))


def restore(store: Store, records: list[SegmentRecord]) -> None:
    """Write segments that another store recorded (a report's embedded ``segments``: ``evalsuite
    reproduce --verdicts-from REPORT --rebuild-store STORE``) into ``store`` under their own ids, so
    that a reproduction carried from one machine to the next by its committed report lists every
    segment it ran and the next one continues the numbering. Their run counts are kept as recorded
    (column ``runs``, added here when missing: an older evalsuite ignores it), since the imported
    runs carry the time of the import, not of their end. (A report ends a segment still running
    when it was written at that time, and says so in its status.)"""
    with store.connect() as conn:
        if "runs" not in {r[1] for r in conn.execute("PRAGMA table_info(segments)")}:
            conn.execute("ALTER TABLE segments ADD COLUMN runs TEXT")
        conn.executemany(
            "INSERT INTO segments (segment_id, command, version, git_commit, host, pid, started_at, heartbeat, ended_at, "
            "status, limit_minutes, runs) VALUES (?, ?, ?, ?, ?, NULL, ?, ?, ?, ?, ?, ?)",
            [(s.segment_id, s.command, s.version, s.git_commit, s.host, s.started_at, s.ended_at or s.started_at,
              s.ended_at, "killed" if s.status == "running" else s.status, s.limit_minutes, json.dumps(s.runs))
             for s in records])


def read(store: Store) -> list[SegmentRecord]:
    """Every segment the store records, oldest first; one that stopped beating without an end reads
    as killed, ended at its last heartbeat (as a run's claim reads stale). A segment restored from a
    report (``restore``) keeps the run counts it recorded."""
    if not store.path.exists():
        return []
    with store.connect(create=False) as conn:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'segments'").fetchone():
            return []  # a store from before segments were recorded
        conn.row_factory = sqlite3.Row
        out = []
        for row in map(dict, conn.execute("SELECT * FROM segments ORDER BY segment_id").fetchall()):
            stop, status = row["ended_at"], row["status"]
            if status == "running" and not process_alive(row["pid"], row["host"], row["heartbeat"]):
                stop, status = row["heartbeat"], "killed"
            counts = json.loads(row["runs"]).items() if row.get("runs") else conn.execute(
                "SELECT status, COUNT(*) FROM runs WHERE finished_at >= ? AND finished_at <= ? "
                "AND NOT (status = 'interrupted' AND COALESCE(error, '') = ?) GROUP BY status",
                (row["started_at"], stop or time.time(), HELD_BACK)).fetchall()
            out.append(SegmentRecord(segment_id=row["segment_id"], command=row["command"], version=row["version"],
                                     git_commit=row["git_commit"], host=row["host"], started_at=row["started_at"],
                                     ended_at=stop, status=status, limit_minutes=row["limit_minutes"],
                                     runs={k: n for k, n in counts}))
        return out


class Segment:
    """``with Segment(store, limit_minutes) as seg: ... seg.left_work = True``: recorded as done, or
    as ended at its limit where work was left, interrupted (Ctrl-C, SIGTERM) or failed."""

    def __init__(self, store: Store, limit_minutes: float | None, every: float = HEARTBEAT_S):
        self.store, self.limit, self.every = store, limit_minutes, every
        self.left_work = False
        self._stop = threading.Event()
        self.segment_id: int | None = None

    def _beat(self) -> None:
        while not self._stop.wait(self.every):
            try:
                beat(self.store, self.segment_id)
            except (sqlite3.Error, OSError, StoreError):
                pass  # a busy store: the next beat tries again

    def __enter__(self) -> "Segment":
        from evalsuite.environment import git_commit
        from evalsuite.version import __version__

        command = "evalsuite " + " ".join(sys.argv[1:])
        self.segment_id = start(self.store, command, self.limit, __version__, git_commit())
        self._thread = threading.Thread(target=self._beat, name="evalsuite-segment", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind, exc, tb) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        if kind is None:
            status = "ended at its limit" if self.left_work else "done"
        elif issubclass(kind, (KeyboardInterrupt, Interrupted)):
            status = "interrupted"
        else:
            status = "failed"
        try:
            end(self.store, self.segment_id, status)
        except (sqlite3.Error, OSError, StoreError):
            pass  # the end is then read from the last heartbeat
