"""A long command's segments, recorded in the store: each invocation of `evalsuite reproduce` that
runs something is one (its start, a heartbeat, its end and how it ended), so that a reproduction's
wall time per segment is read from the store (`evalsuite reproduce --segments`), not kept by hand;
one killed outright (SIGKILL, a machine gone) still reads as killed at its last heartbeat."""
from __future__ import annotations

import sqlite3
import sys
import threading

from evalsuite.errors import Interrupted
from evalsuite.store import HEARTBEAT_S, Store
from evalsuite.store_file import StoreError


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
                self.store.beat_segment(self.segment_id)
            except (sqlite3.Error, OSError, StoreError):
                pass  # a busy store: the next beat tries again

    def __enter__(self) -> "Segment":
        from evalsuite.environment import git_commit
        from evalsuite.version import __version__

        command = "evalsuite " + " ".join(sys.argv[1:])
        self.segment_id = self.store.start_segment(command, self.limit, __version__, git_commit())
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
            self.store.end_segment(self.segment_id, status)
        except (sqlite3.Error, OSError, StoreError):
            pass  # the end is then read from the last heartbeat
