"""The store's file: its SQLite schema and marks (``application_id``, ``user_version``), the
checks that refuse any other file before it is read or written, read-only opening, and the
migration of older stores, and the strict JSON its rows hold."""
from __future__ import annotations

import json
import os
import sqlite3
from contextlib import contextmanager
from pathlib import Path

from evalsuite.errors import UserError
from evalsuite.files import SQLITE_MAGIC

APPLICATION_ID = 0x45564C53  # "EVLS"
SCHEMA_VERSION = 4  # 1: before pid, host and warnings; 2: before heartbeat; 3: before plug-in workers were
# isolated (4 marks the runs that may have shared a worker with one) and before snapshots were kept in the
# store; migrated on the first write

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id      TEXT PRIMARY KEY,
    task        TEXT NOT NULL,
    model       TEXT NOT NULL,
    feature_map TEXT,
    seed        INTEGER NOT NULL,
    status      TEXT NOT NULL,
    config      TEXT NOT NULL,
    metrics     TEXT NOT NULL DEFAULT '{}',
    error       TEXT,
    env         TEXT NOT NULL DEFAULT '{}',
    started_at  REAL NOT NULL,
    finished_at REAL,
    pid         INTEGER,
    host        TEXT,
    warnings    TEXT,
    heartbeat   REAL
);
CREATE TABLE IF NOT EXISTS steps (
    run_id TEXT NOT NULL,
    step   INTEGER NOT NULL,
    name   TEXT NOT NULL,
    value  REAL,
    PRIMARY KEY (run_id, step, name)
);
CREATE TABLE IF NOT EXISTS sweeps (
    sweep_id TEXT PRIMARY KEY,
    name     TEXT NOT NULL,
    spec     TEXT NOT NULL,
    created  REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS sweep_runs (
    sweep_id TEXT NOT NULL,
    run_id   TEXT NOT NULL,
    PRIMARY KEY (sweep_id, run_id)
);
CREATE TABLE IF NOT EXISTS probes (
    key     TEXT PRIMARY KEY,
    created REAL NOT NULL,
    data    TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS snapshots (
    kind    TEXT NOT NULL,
    key     TEXT NOT NULL,
    step    INTEGER NOT NULL,
    run_id  TEXT,
    created REAL NOT NULL,
    sha256  TEXT NOT NULL,
    data    BLOB NOT NULL,
    PRIMARY KEY (kind, key, step)
);
CREATE TABLE IF NOT EXISTS segments (
    segment_id    INTEGER PRIMARY KEY AUTOINCREMENT,
    command       TEXT NOT NULL,
    version       TEXT,
    git_commit    TEXT,
    host          TEXT,
    pid           INTEGER,
    started_at    REAL NOT NULL,
    heartbeat     REAL,
    ended_at      REAL,
    status        TEXT NOT NULL,
    limit_minutes REAL
);
"""

ADDED_COLUMNS = {"pid": "INTEGER", "host": "TEXT", "warnings": "TEXT", "heartbeat": "REAL"}  # since schema 1
TABLES = {"runs", "steps", "sweeps", "sweep_runs", "probes", "snapshots", "segments", "sqlite_sequence"}
# (segments: added without a schema version, since a store that lacks it reads as having none; an older
# evalsuite ignores it)


class StoreError(UserError):
    """A store path that is not (or cannot be) an evalsuite store."""


def default_path() -> Path:
    return Path(os.environ.get("EVALSUITE_STORE", "results/evalsuite.db"))


def check_path(path: str | os.PathLike | None, option: str = "--store") -> Path:
    """The store path, or ``StoreError`` when it cannot be one (empty, a folder, not a store)."""
    if path is None:
        option = "$EVALSUITE_STORE" if "EVALSUITE_STORE" in os.environ else option
        path = default_path()
    if not str(path).strip():
        raise StoreError(f"{option}: empty path; give a file such as results/evalsuite.db")
    path = Path(path).expanduser()
    if path.is_dir():
        raise StoreError(f"{option}: {path} is a folder; give a file such as {path / 'evalsuite.db'}")
    if path.exists() and not path.is_file():  # a FIFO would block the first read forever; a device never ends
        raise StoreError(f"{option}: {path} is not a regular file (a pipe, socket or device); give a file such as "
                         "results/evalsuite.db")
    parent = next((p for p in path.parents if p.exists()), None)
    if parent is not None and not parent.is_dir():
        raise StoreError(f"{option}: {parent} is a file, not a folder, so {path} cannot be created there")
    if path.exists():
        with open(path, "rb") as f:
            head = f.read(16)
        if head and head != SQLITE_MAGIC:
            raise StoreError(f"{option}: {path} is not an evalsuite store (not an SQLite database); "
                             f"evalsuite will not read or write it")
        if head:
            check_schema(path, option)
    return path


def open_read_only(path: Path) -> sqlite3.Connection:
    """Open without ever writing the database (a WAL store in a read-only folder: as immutable)."""
    uri = path.resolve().as_uri()
    try:
        conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=60)
        conn.execute("PRAGMA busy_timeout=60000")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError:
        return sqlite3.connect(f"{uri}?immutable=1", uri=True)


@contextmanager
def read_only(path: Path):
    """A read-only connection (``open_read_only``). Where reading it fails (a damaged store), the
    ``-wal`` and ``-shm`` files that opening it made are removed on close, so a reading command
    leaves a damaged store as it found it; a healthy store's are SQLite's to manage (another process
    may be writing it)."""
    siblings = [Path(f"{path}{suffix}") for suffix in ("-wal", "-shm")]
    before = {p for p in siblings if p.exists()}

    def clean():
        for p in siblings:
            if p not in before and p.exists() and not (p.name.endswith("-wal") and p.stat().st_size):
                p.unlink(missing_ok=True)
    try:
        conn = open_read_only(path)
    except sqlite3.DatabaseError:
        clean()
        raise
    try:
        yield conn
    except sqlite3.DatabaseError:
        conn.close()
        clean()
        raise
    finally:
        conn.close()


def check_schema(path: Path, option: str) -> None:
    try:
        with read_only(path) as conn:
            app, version = conn.execute("PRAGMA application_id").fetchone()[0], conn.execute("PRAGMA user_version").fetchone()[0]
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{option}: {path} cannot be read as an SQLite database ({exc})") from None
    if app == APPLICATION_ID:
        if version > SCHEMA_VERSION:
            raise StoreError(f"{option}: {path} was written by a newer evalsuite (schema {version}; this one reads "
                             f"up to {SCHEMA_VERSION}); upgrade evalsuite")
        return
    if app == 0 and tables <= TABLES:
        return  # empty, an evalsuite store from before the schema was marked (version 1), or one that
        # another evalsuite process is creating right now (its tables appear one by one)
    raise StoreError(f"{option}: {path} is an SQLite database of another program "
                     f"(tables: {', '.join(sorted(tables)) or 'none'}); evalsuite will not read or write it")


def migrate(conn: sqlite3.Connection) -> None:
    """Bring a store written by an older evalsuite up to ``SCHEMA_VERSION`` (columns added since)."""
    if conn.execute("PRAGMA user_version").fetchone()[0] >= SCHEMA_VERSION:
        return
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    have = {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
    for name, kind in ADDED_COLUMNS.items():
        if name not in have:
            conn.execute(f"ALTER TABLE runs ADD COLUMN {name} {kind}")
    if version < 4:
        mark_plugin_neighbours(conn)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    conn.commit()


PLUGIN_NEIGHBOUR = ("ran in a sweep beside plug-in run {plugin}, before evalsuite ran each plug-in in a worker of its "
                    "own: it may have shared a worker process with it, whose state a plug-in can change; rerun it "
                    "(evalsuite run ... --force) to be sure of its figures")


def _is_plugin(config: dict) -> bool:
    refs = (config.get("task", {}).get("name"), config.get("model", {}).get("name"), config.get("model", {}).get("feature_map"))
    return bool(config.get("plugins")) or any(isinstance(r, str) and ":" in r for r in refs)


def mark_plugin_neighbours(conn: sqlite3.Connection) -> None:
    """Warn on every run stored before plug-in workers were isolated that started, in a sweep,
    after a plug-in run of that sweep: its worker may have been the plug-in's (a built-in run
    stored done at 0.0273 where a clean run of it gives 0.0195). Runs that record their worker
    (``env.worker_pid``) were isolated and are left alone."""
    rows = {r[0]: r for r in conn.execute("SELECT run_id, config, env, started_at, warnings FROM runs")}
    sweeps: dict[str, list[str]] = {}
    for sweep_id, run_id in conn.execute("SELECT sweep_id, run_id FROM sweep_runs"):
        if run_id in rows:
            sweeps.setdefault(sweep_id, []).append(run_id)
    marked: dict[str, list[str]] = {}
    for ids in sweeps.values():
        configs = {i: json.loads(rows[i][1]) for i in ids}
        plugins = sorted((rows[i][3], i) for i in ids if _is_plugin(configs[i]))
        if not plugins:
            continue
        for i in ids:
            env = json.loads(rows[i][2] or "{}")
            later = [p for t, p in plugins if t <= rows[i][3] and p != i]
            if later and "worker_pid" not in env and not _is_plugin(configs[i]):
                marked.setdefault(i, []).append(later[0])
    for run_id, plugins in marked.items():
        warnings = json.loads(rows[run_id][4] or "[]")
        text = PLUGIN_NEIGHBOUR.format(plugin=plugins[0])
        if text not in warnings:
            conn.execute("UPDATE runs SET warnings = ? WHERE run_id = ?", (json.dumps(warnings + [text]), run_id))


def finite_or_none(value) -> float | None:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if value == value and abs(value) != float("inf") else None


def dumps(value, **kw) -> str:
    """Strict JSON (RFC 8259): a non-finite float (a NaN median of no wrong answers, a diverged
    loss) is written as null, as pydantic writes a record, so that SQLite's JSON functions and
    other tools read every row; Python's default would write the bare word NaN."""
    def strict(v):
        if isinstance(v, float):
            return finite_or_none(v)
        if isinstance(v, dict):
            return {k: strict(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [strict(x) for x in v]
        return v
    return json.dumps(strict(value), allow_nan=False, **kw)
