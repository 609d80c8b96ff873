"""Branch snapshots and mid-run checkpoints, kept in the store as well as in its cache.

A worker saves them as files in the cache (``train.branch``): a run's state at its branch point,
which a longer run of the same trajectory continues from (a rung of the ladder), and a long run's
own checkpoints, from which it resumes after a segment ended inside it. The cache is a folder that
a fresh checkout or another machine does not have, so the driver copies each file into the store's
``snapshots`` table as it appears (``absorb``), writes the ones a run it is about to start can use
back into the cache (``materialize``), and drops them once used (``release``). So a rung continues
its run wherever the store goes, and deleting the cache costs nothing.
"""
from __future__ import annotations

import hashlib
import time
from pathlib import Path

from evalsuite.config import RunConfig
from evalsuite.files import atomic_write
from evalsuite.records import RunRecord, Status
from evalsuite.train import branch

KINDS = {"branch": branch.FOLDER, "checkpoint": branch.CHECKPOINTS}


def total_steps(config: RunConfig) -> int:
    """The steps a run's budget gives (as ``TrainingState.prepare`` counts them, for a training
    split of ``train.num_train`` examples)."""
    batches = max(1, config.train.num_train // config.train.batch_size)
    return max(1, int(round(config.train.epochs * batches)))


def _files(cache_dir) -> list[tuple[str, str, int, Path]]:
    out = []
    for kind, folder in KINDS.items():
        root = Path(cache_dir) / folder
        if root.is_dir():
            out += [(kind, p.parent.name, int(p.stem), p) for p in root.glob("*/*.pt") if p.stem.isdigit()]
    return out


def absorb(store, cache_dir) -> int:
    """Copy every snapshot and checkpoint file of the cache that the store lacks into it."""
    if not cache_dir or not Path(cache_dir).is_dir():
        return 0
    files = _files(cache_dir)
    if not files:
        return 0
    with store.connect() as conn:
        have = set(conn.execute("SELECT kind, key, step FROM snapshots").fetchall())
        added = 0
        for kind, key, step, path in files:
            if (kind, key, step) in have:
                continue
            try:
                data = path.read_bytes()
            except OSError:
                continue  # deleted meanwhile (a run branched from it and finished)
            conn.execute("INSERT OR REPLACE INTO snapshots VALUES (?, ?, ?, ?, ?, ?, ?)",
                         (kind, key, step, None, time.time(), hashlib.sha256(data).hexdigest(), data))
            added += 1
    return added


def materialize(store, cache_dir, configs: list[RunConfig]) -> int:
    """Write into the cache the stored snapshot each run of ``configs`` can start from (its
    trajectory's latest up to its branch point) and its own latest checkpoint, where the cache
    lacks them; returns how many were written."""
    if not cache_dir or not store.path.exists():
        return 0
    wanted = []
    for c in configs:
        steps = total_steps(c)
        if c.train.branch_step(steps) is not None:
            wanted.append(("branch", branch.trajectory(c, steps), c.train.branch_step(steps)))
        wanted.append(("checkpoint", c.run_id, steps))
    written = 0
    with store.connect(create=False) as conn:
        for kind, key, up_to in wanted:
            row = conn.execute("SELECT step, sha256, data FROM snapshots WHERE kind = ? AND key = ? AND step <= ? "
                               "ORDER BY step DESC LIMIT 1", (kind, key, up_to)).fetchone()
            if row is None:
                continue
            step, sha, data = row
            target = Path(cache_dir) / KINDS[kind] / key / f"{step}.pt"
            if target.exists() or hashlib.sha256(data).hexdigest() != sha:
                continue  # there already, or damaged in the store: the run trains those steps again
            atomic_write(target, lambda f, d=data: f.write(d))
            written += 1
    return written


def release(store, record: RunRecord) -> None:
    """After ``record`` finished: its own checkpoints are done with, and the snapshot it branched
    from too (one longer run continues each)."""
    if record.status not in (Status.DONE, Status.FAILED, Status.DIVERGED):
        return  # interrupted: its checkpoint is what resumes it
    config = RunConfig.from_dict(record.config)
    with store.connect() as conn:
        conn.execute("DELETE FROM snapshots WHERE kind = 'checkpoint' AND key = ?", (record.run_id,))
        step = record.metrics.get("branched_from_step")
        if record.ok and step is not None:
            key = branch.trajectory(config, record.metrics.get("budget_steps") or total_steps(config))
            conn.execute("DELETE FROM snapshots WHERE kind = 'branch' AND key = ? AND step = ?", (key, step))
