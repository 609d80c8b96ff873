"""Results store: one SQLite file (WAL mode) with a row per run and its per-step metrics.

The default path is ``results/evalsuite.db`` under the working directory, or ``$EVALSUITE_STORE``.
Nothing is created until the first write, so refused input leaves no file behind. A store is
marked as evalsuite's (SQLite ``application_id`` and ``user_version``); any other file is refused
before anything reads or writes it, and reading (reports, verdicts, analyses) opens it read-only.

A run's row says who runs it (``pid``, ``host``, ``heartbeat``): a ``running`` row whose process
is gone on this host, or whose claimer on another host stopped refreshing its heartbeat for
``HEARTBEAT_TTL`` seconds (a pid on another host cannot be checked), reads as ``stale`` and is
rerun like an ``interrupted`` one. Claiming runs is one ``BEGIN IMMEDIATE`` transaction that skips
every run held by a live claimer (``claim``), so two drivers on one store never train one run
twice; ``interrupt`` touches only the caller's own claims.
"""
from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pandas as pd

from evalsuite import weights
from evalsuite.files import atomic_write
from evalsuite.weights import WeightsError, sha256_of  # noqa: F401 - re-exported
from evalsuite.records import RunRecord, Status
from evalsuite.store_file import SCHEMA, StoreError, check_path, dumps, finite_or_none, migrate, read_only

# a probe row is identified by every setting that can change it: a later probe with other settings
# adds rows instead of overwriting the reproduction's
PROBE_KEY = ("memory", "d_key", "pairs", "setting", "trained", "seed", "variant", "max_steps", "lr", "batch_size", "trials",
             "d_value", "objective", "n_keys", "n_values", "call")


HOST = socket.gethostname()
HEARTBEAT_S = 30.0     # a driver refreshes its claims this often (``Heartbeat``)
HEARTBEAT_TTL = 300.0  # a claim from another host not refreshed for this long is stale


class Store:
    claimed_any = False  # whether this process has claimed a run in any store (what an interruption leaves)
    def __init__(self, path: str | os.PathLike | None = None, option: str = "--store"):
        self.path = check_path(path, option)

    def find(self, prefix: str) -> str:
        """The full run id starting with ``prefix`` (compared as text, never as a pattern);
        ``KeyError`` when none or several match."""
        if not prefix:
            raise KeyError("run id: empty; give the id or a unique prefix of it")
        with self.connect(create=False) as conn:
            ids = [r[0] for r in conn.execute("SELECT run_id FROM runs WHERE substr(run_id, 1, length(?)) = ? LIMIT 5",
                                              (prefix, prefix))]
        if len(ids) != 1:
            raise KeyError(f"run id {prefix!r} matches {'no run' if not ids else 'several runs: ' + ', '.join(ids)} "
                           f"in {self.path}")
        return ids[0]

    def runs(self, run_ids: list[str] | None = None) -> list[RunRecord]:
        """Every run (or those in ``run_ids``) with its history, oldest first: what the reports read."""
        with self.connect(create=False) as conn:
            conn.row_factory = sqlite3.Row
            rows = [dict(r) for r in conn.execute("SELECT * FROM runs ORDER BY started_at")]
            steps = conn.execute("SELECT run_id, step, name, value FROM steps ORDER BY run_id, step").fetchall()
        history: dict[str, dict[int, dict]] = {}
        for run_id, step, name, value in steps:
            history.setdefault(run_id, {}).setdefault(step, {"step": step})[name] = value
        wanted = set(run_ids) if run_ids is not None else None
        return [_decode(r, list(history.get(r["run_id"], {}).values()))
                for r in rows if wanted is None or r["run_id"] in wanted]

    def timings(self) -> list[tuple[dict, float, int, int | None]]:
        """(config, wall_time_s, steps, budget_steps) of every done run that recorded them, without
        histories: what a segment's deadline estimates run times from (``sweep.expected_seconds``)."""
        with self.connect(create=False) as conn:
            rows = conn.execute("SELECT config, json_extract(metrics, '$.wall_time_s'), json_extract(metrics, '$.steps'), "
                                "json_extract(metrics, '$.budget_steps') FROM runs WHERE status = ? "
                                "AND json_valid(metrics)", (Status.DONE.value,)).fetchall()
            # a row written before metrics were stored as strict JSON may hold NaN, which SQLite's JSON
            # functions refuse: such rows are read in Python
            for c, m in conn.execute("SELECT config, metrics FROM runs WHERE status = ? AND NOT json_valid(metrics)",
                                     (Status.DONE.value,)):
                m = json.loads(m)
                rows.append((c, m.get("wall_time_s"), m.get("steps"), m.get("budget_steps")))
        return [(json.loads(c), float(w), int(n), None if b is None else int(b)) for c, w, n, b in rows
                if w is not None and n]

    def statuses(self, run_ids: list[str]) -> list[dict]:
        """``[{"run_id", "status"}]`` of the stored ones among ``run_ids`` (``stale`` as ``_decode`` reads it)."""
        with self.connect(create=False) as conn:
            cols = _claim_columns(conn)
            out = []
            for lo in range(0, len(run_ids), 500):
                chunk = run_ids[lo:lo + 500]
                out += [{"run_id": r["run_id"], "status": _status(dict(r)), "pid": dict(r).get("pid")} for r in _rows(conn,
                        f"SELECT {cols} FROM runs WHERE run_id IN ({','.join('?' * len(chunk))})", chunk)]
            return out

    def add_sweep(self, sweep_id: str, name: str, spec: dict, run_ids: list[str]) -> None:
        with self.connect() as conn:
            conn.execute("INSERT OR IGNORE INTO sweeps (sweep_id, name, spec, created) VALUES (?, ?, ?, ?)",
                         (sweep_id, name, json.dumps(spec, sort_keys=True, default=str), time.time()))
            conn.executemany("INSERT OR IGNORE INTO sweep_runs (sweep_id, run_id) VALUES (?, ?)",
                             [(sweep_id, r) for r in run_ids])

    def sweeps(self) -> list[dict]:
        if not self.path.exists():
            return []
        with self.connect(create=False) as conn:
            return [{"sweep_id": a, "name": b, "runs": n} for a, b, n in conn.execute(
                "SELECT s.sweep_id, s.name, COUNT(r.run_id) FROM sweeps s LEFT JOIN sweep_runs r USING (sweep_id) "
                "GROUP BY s.sweep_id ORDER BY s.created")]

    def sweep_runs(self, sweep_id: str) -> tuple[str, list[str]]:
        """``(full sweep id, its run ids)`` for an id or unique prefix; ``KeyError`` otherwise."""
        if not sweep_id:
            raise KeyError("sweep: empty; give its id or a unique prefix of it")
        with self.connect(create=False) as conn:
            ids = [r[0] for r in conn.execute("SELECT sweep_id FROM sweeps WHERE substr(sweep_id, 1, length(?)) = ?",
                                              (sweep_id, sweep_id))]
            if len(ids) != 1:
                known = ", ".join(s["sweep_id"] + " (" + s["name"] + ")" for s in self.sweeps()) or "none"
                raise KeyError(f"sweep {sweep_id!r} matches {len(ids)} sweeps in {self.path}; known: {known}")
            return ids[0], [r[0] for r in conn.execute("SELECT run_id FROM sweep_runs WHERE sweep_id = ?", (ids[0],))]

    def add_probes(self, df: pd.DataFrame) -> None:
        """Capacity-probe rows (``evalsuite.analysis.capacity_probe``); a row with the same settings
        (every field of ``PROBE_KEY``) replaces the old one."""
        records = json.loads(df.to_json(orient="records"))
        with self.connect() as conn:
            conn.executemany("INSERT OR REPLACE INTO probes (key, created, data) VALUES (?, ?, ?)",
                             [(json.dumps([r.get(k) for k in PROBE_KEY]), time.time(), json.dumps(r)) for r in records])

    def probes(self) -> pd.DataFrame:
        if not self.path.exists():
            return pd.DataFrame()
        with self.connect(create=False) as conn:
            return pd.DataFrame([json.loads(r[0]) for r in conn.execute("SELECT data FROM probes ORDER BY created")])

    @property
    def cache_dir(self) -> Path:
        """Generated data that is slow to make (ListOps) is cached beside the store, unless
        ``$EVALSUITE_CACHE`` names another folder."""
        return Path(os.environ.get("EVALSUITE_CACHE") or self.path.parent / "cache")

    def weights_path(self, run_id: str) -> Path:
        """Trained weights of a run live beside the store: ``<store dir>/weights/<run_id>.pt``."""
        return self.path.parent / "weights" / f"{run_id}.pt"

    def save_weights(self, run_id: str, state_dict: dict) -> Path:
        import torch

        state = {k: v.detach().cpu() for k, v in state_dict.items()}
        return atomic_write(self.weights_path(run_id), lambda f: torch.save(state, f))

    def record_weights_hash(self, run_id: str) -> str:
        """SHA-256 of the run's weights file, recorded in its metrics (``weights_sha256``) so that a
        later load can tell its own weights from damaged or another run's."""
        digest = sha256_of(self.weights_path(run_id))
        with self.connect() as conn:
            (metrics,) = conn.execute("SELECT metrics FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            metrics = {**json.loads(metrics or "{}"), "weights_sha256": digest}
            conn.execute("UPDATE runs SET metrics = ? WHERE run_id = ?", (dumps(metrics), run_id))
        return digest

    def load_weights(self, run_id: str, expected_sha256: str | None = None) -> dict:
        """The run's saved weights, checked (``weights.load``: ``WeightsError`` naming the file)."""
        return weights.load(self.weights_path(run_id), run_id, expected_sha256)

    @contextmanager
    def connect(self, create: bool = True) -> Iterator[sqlite3.Connection]:
        """A transaction. ``create=False``: read-only, the file is never modified (nor created), and
        no ``-wal`` or ``-shm`` file that the reading made is left beside it."""
        if not create:
            if not self.path.exists():
                raise StoreError(f"--store: no results store at {self.path}")
            if self.path.stat().st_size == 0:
                raise StoreError(f"--store: {self.path} is an empty file (0 bytes), not a results store yet; "
                                 "`evalsuite run` creates one, or give another path")
            with read_only(self.path) as conn:
                yield conn
            return
        check_path(self.path)  # another program may have put something there since
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=60)
        try:
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA busy_timeout=60000")
                conn.executescript(SCHEMA)
                migrate(conn)
            except sqlite3.OperationalError as exc:
                raise StoreError(f"--store: cannot write to {self.path}: {exc}") from None
            with conn:  # one transaction
                yield conn
        finally:
            conn.close()

    def start(self, run_id: str, config: dict, env: dict) -> None:
        """Mark a run running under this process, whoever held it (``claim`` is the checked form)."""
        Store.claimed_any = True
        with self.connect() as conn:
            _start(conn, run_id, config, env)

    def claim(self, configs: dict[str, dict], env: dict | None = None, *, redo_done: bool = False) -> dict[str, list[str]]:
        """Claim runs for this process in one transaction (``BEGIN IMMEDIATE``: no other writer
        between reading a row and taking it): ``{"claimed": [...], "held": [...], "done": [...]}``.
        A run held by a live claimer (this host: its pid runs; another host: a fresh heartbeat) is
        ``held`` and left alone; a done one is left unless ``redo_done``; the rest are claimed."""
        out: dict[str, list[str]] = {"claimed": [], "held": [], "done": []}
        with self.connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            ids = list(configs)
            rows = {}
            for lo in range(0, len(ids), 500):
                chunk = ids[lo:lo + 500]
                rows.update({r["run_id"]: dict(r) for r in _rows(
                    conn, f"SELECT run_id, status, pid, host, heartbeat FROM runs WHERE run_id IN "
                          f"({','.join('?' * len(chunk))})", chunk)})
            for run_id in ids:
                row = rows.get(run_id)
                if row is not None and row["status"] == Status.DONE and not redo_done:
                    out["done"].append(run_id)
                elif row is not None and row["status"] == Status.RUNNING and _held_elsewhere(row):
                    out["held"].append(run_id)
                else:
                    _start(conn, run_id, configs[run_id], env or {})
                    out["claimed"].append(run_id)
                    Store.claimed_any = True
        return out

    def holder(self, run_id: str) -> dict | None:
        """``{"pid", "host", "heartbeat"}`` of a running run's live claimer (not this process), else None."""
        if not self.path.exists():
            return None
        with self.connect(create=False) as conn:
            rows = _rows(conn, f"SELECT {_claim_columns(conn)} FROM runs WHERE run_id = ?", (run_id,))
        row = dict(rows[0]) if rows else None
        if row and row["status"] == Status.RUNNING and _held_elsewhere(row):
            return {"pid": row["pid"], "host": row["host"], "heartbeat": row.get("heartbeat")}
        return None

    def beat(self, run_ids: list[str]) -> None:
        """Refresh this process's claims among ``run_ids`` (they are still being run)."""
        with self.connect() as conn:
            conn.executemany("UPDATE runs SET heartbeat = ? WHERE run_id = ? AND status = ? AND pid = ? AND host = ?",
                             [(time.time(), r, Status.RUNNING.value, os.getpid(), HOST) for r in run_ids])

    def finish(self, record: RunRecord) -> None:
        """Record how a run ended (a row is started first when there is none); its ``env`` (what
        it ran on) replaces the one given at start when it has one."""
        if record.status is Status.STALE:
            raise ValueError("stale is read, never written")
        rows = [(record.run_id, int(h["step"]), k, finite_or_none(v))
                for h in record.history for k, v in h.items() if k != "step"]
        if self.get(record.run_id) is None:
            self.start(record.run_id, record.config, record.env)
        with self.connect() as conn:
            conn.execute("UPDATE runs SET status = ?, metrics = ?, error = ?, warnings = ?, finished_at = ?, "
                         "env = COALESCE(?, env) WHERE run_id = ?",
                         (record.status.value, dumps(record.metrics), record.error,
                          dumps(record.warnings) if record.warnings else None, time.time(),
                          dumps(record.env) if record.env else None, record.run_id))
            conn.executemany("INSERT OR REPLACE INTO steps VALUES (?, ?, ?, ?)", rows)

    def interrupt(self, run_ids: list[str], why: str) -> None:
        """Mark those of ``run_ids`` still running under this process as interrupted (Ctrl-C,
        SIGTERM, a segment's end); another process's claims are never touched."""
        with self.connect() as conn:
            conn.executemany("UPDATE runs SET status = ?, error = ?, finished_at = ? "
                             "WHERE run_id = ? AND status = ? AND pid = ? AND host = ?",
                             [(Status.INTERRUPTED.value, why, time.time(), r, Status.RUNNING.value, os.getpid(), HOST)
                              for r in run_ids])

    def warn(self, run_id: str, message: str) -> None:
        """Add a warning to a finished run (its weights could not be saved, ...); the run stands."""
        row = self.get(run_id)
        warnings = row.warnings if row is not None else []
        with self.connect() as conn:
            conn.execute("UPDATE runs SET warnings = ? WHERE run_id = ?", (dumps(warnings + [message]), run_id))

    def get(self, run_id: str, with_history: bool = False) -> RunRecord | None:
        """The run (with its per-step history when asked), or None."""
        if not self.path.exists():
            return None
        with self.connect(create=False) as conn:
            conn.row_factory = sqlite3.Row
            row = conn.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            return None
        history = self.history(run_id).to_dict("records") if with_history else []
        return _decode(dict(row), [{k: v for k, v in h.items() if v == v} for h in history])  # drop NaN fill

    def history(self, run_id: str) -> pd.DataFrame:
        """Per-step metrics of one run, one row per step."""
        if not self.path.exists():
            return pd.DataFrame()
        with self.connect(create=False) as conn:
            df = pd.read_sql_query("SELECT step, name, value FROM steps WHERE run_id = ? ORDER BY step", conn,
                                   params=(run_id,))
        if df.empty:
            return df
        return df.pivot(index="step", columns="name", values="value").reset_index()

    def load(self) -> pd.DataFrame:
        """One row per run; metrics become columns (``accuracy``, ``loss``, ...)."""
        columns = ["run_id", "task", "model", "feature_map", "seed", "status", "error", "started_at",
                   "finished_at", "config", "env"]
        if not self.path.exists():
            return pd.DataFrame(columns=columns)
        with self.connect(create=False) as conn:
            conn.row_factory = sqlite3.Row
            records = [_decode(dict(r)) for r in conn.execute("SELECT * FROM runs ORDER BY started_at")]
        if not records:
            return pd.DataFrame(columns=columns)
        metrics = pd.DataFrame([r.metrics for r in records])
        base = pd.DataFrame([{**r.model_dump(exclude={"metrics", "history"}), "status": r.status.value, "task": r.task,
                              "model": r.model, "feature_map": r.config["model"].get("feature_map"), "seed": r.seed}
                             for r in records])[columns]
        return pd.concat([base, metrics.drop(columns=[c for c in metrics if c in base], errors="ignore")], axis=1)


RECORD_COLUMNS = ("run_id", "config", "status", "metrics", "error", "warnings", "env", "started_at", "finished_at",
                  "pid", "host")  # task, model, feature_map and seed are copies of config fields, for SQL


def _start(conn: sqlite3.Connection, run_id: str, config: dict, env: dict) -> None:
    now = time.time()
    conn.execute(
        "INSERT OR REPLACE INTO runs (run_id, task, model, feature_map, seed, status, config, env, started_at, "
        "pid, host, heartbeat) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (run_id, config["task"]["name"], config["model"]["name"], config["model"].get("feature_map"),
         config["seed"], Status.RUNNING.value, dumps(config, sort_keys=True), dumps(env), now, os.getpid(), HOST, now))
    conn.execute("DELETE FROM steps WHERE run_id = ?", (run_id,))


def _claim_columns(conn: sqlite3.Connection) -> str:
    """The columns that say who holds a run, as far as this store's schema has them."""
    have = {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
    return ", ".join(c for c in ("run_id", "status", "pid", "host", "heartbeat") if c in have)


def _held_elsewhere(row: dict) -> bool:
    """A running row claimed by another live process (not this one)."""
    if row.get("pid") == os.getpid() and row.get("host") == HOST:
        return False
    return process_alive(row.get("pid"), row.get("host"), row.get("heartbeat"))


def _decode(row: dict, history: list[dict] | None = None) -> RunRecord:
    """A stored row as a record (a store of schema 1 lacks pid, host and warnings: None)."""
    values = {k: row.get(k) for k in RECORD_COLUMNS}
    for key in ("config", "metrics", "env", "warnings"):
        if isinstance(values[key], str):
            values[key] = json.loads(values[key])
    values["warnings"] = values["warnings"] or []
    values["status"] = _status(row)
    return RunRecord(**{k: v for k, v in values.items() if v is not None or k in ("error",)}, history=history or [])


def _status(row: dict) -> Status:
    if row.get("status") == Status.RUNNING and not process_alive(row.get("pid"), row.get("host"), row.get("heartbeat")):
        return Status.STALE
    return Status(row["status"])


def _rows(conn: sqlite3.Connection, sql: str, params=()) -> list[sqlite3.Row]:
    conn.row_factory = sqlite3.Row
    return conn.execute(sql, params).fetchall()


def process_alive(pid: int | None, host: str | None, heartbeat: float | None = None) -> bool:
    """Whether the process that claimed a run may still run it: a claim whose heartbeat is older
    than ``HEARTBEAT_TTL`` is dead on any host (on this one whatever its pid says: after a restart,
    or in a container where every driver is pid 1, the pid may belong to another process); else, on
    another host, alive; on this one, alive while its pid runs. No heartbeat recorded (a store from
    before heartbeats): the pid alone decides, and on another host it is assumed alive."""
    if pid is None:
        return True
    if heartbeat is not None and time.time() - heartbeat >= HEARTBEAT_TTL:
        return False
    if host != HOST:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def load(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """All runs in the store at ``path`` (default: ``results/evalsuite.db``) as a DataFrame."""
    return Store(path).load()

