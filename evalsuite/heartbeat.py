"""The heartbeat of a driver's claims: a reader on another host cannot check a pid, so a claim
lives as long as its claimer refreshes it (``store.HEARTBEAT_TTL``)."""
from __future__ import annotations

import sqlite3

from evalsuite.store import HEARTBEAT_S, Store
from evalsuite.store_file import StoreError


class Heartbeat:
    """Refreshes this process's claims on ``run_ids`` every ``HEARTBEAT_S`` seconds in a daemon
    thread while the block runs (``with Heartbeat(store, ids) as beat: ... beat.done(run_id)``), so
    that a reader on another host can tell a live claim from a dead one."""

    def __init__(self, store: Store, run_ids: list[str], every: float = HEARTBEAT_S):
        import threading

        self.store, self.ids, self.every = store, set(run_ids), every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="evalsuite-heartbeat", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self.store.beat(sorted(self.ids))
            except (sqlite3.Error, OSError, StoreError):
                pass  # a busy or full store: the next beat tries again

    def done(self, run_id: str) -> None:
        self.ids.discard(run_id)

    def __enter__(self) -> "Heartbeat":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
