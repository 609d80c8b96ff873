"""Recording finished runs: ``persist`` puts a record (then its weights) into the store; the crash
journal (``incoming/`` beside the store, an absolute path) keeps what the store could not take yet
or what a worker finished (``keep``, ``journal``), and ``ingest_incoming`` records it later. Every
command that runs training reads the journal first, so a finished run is never lost."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import torch

from evalsuite.files import atomic_write, write_text
from evalsuite.records import RunRecord
from evalsuite.store import Store


def incoming_dir(store) -> Path:
    return store.path.parent / "incoming"


def read_result(path: Path) -> RunRecord | None:
    try:
        return RunRecord.model_validate_json(path.read_text())
    except (OSError, ValueError):
        return None  # a file being renamed into place, or unreadable: left for the next ingest


def weights_of(record: RunRecord) -> bytes | None:
    """The weights that travelled back with a record from a worker (bytes of ``torch.save``), if any."""
    return getattr(record, "_weights", None)


def journal(record: RunRecord, incoming: Path) -> None:
    """Leave a record that came back from a remote worker, and its weights, in the driver's local
    crash journal, where ``sweep.record`` persists them from."""
    blob = weights_of(record)
    if blob is not None:
        atomic_write(incoming / f"{record.run_id}.pt", lambda f: f.write(blob))
    write_text(incoming / f"{record.run_id}.json", record.model_dump_json())


def persist(store: Store, record: RunRecord, weights: dict | Path | None) -> RunRecord:
    """Record a finished run: the record first, then its weights (a state dict, or a file a worker
    wrote to move into place). A weights failure is a warning on a done run, never a lost run."""
    if record.ok and weights is None:
        record.warnings.append("no weights came back with this run (the worker could not write them); "
                               "`evalsuite analyze --run` needs them: rerun with --force")
    store.finish(record)
    if record.ok and weights is not None:
        try:
            if isinstance(weights, Path):
                target = store.weights_path(record.run_id)
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(weights, target)
            else:
                store.save_weights(record.run_id, weights)  # for `evalsuite analyze --run`
            record.metrics["weights_sha256"] = store.record_weights_hash(record.run_id)
        except OSError as exc:
            message = f"weights not saved ({exc}); `evalsuite analyze --run` needs them: rerun with --force"
            store.warn(record.run_id, message)
            record.warnings.append(message)
    return record


def keep(store: Store, record: RunRecord, state: dict | None) -> Path:
    """Write a finished run to the crash journal (``incoming/`` beside the store, else the system's
    temporary folder when that cannot take it either); returns the folder. ``ingest_incoming`` records it."""
    for folder in (incoming_dir(store), Path(tempfile.gettempdir()) / "evalsuite-incoming"):
        try:
            if state is not None:
                cpu = {k: v.detach().cpu() for k, v in state.items()}
                atomic_write(folder / f"{record.run_id}.pt", lambda f: torch.save(cpu, f))
            write_text(folder / f"{record.run_id}.json", record.model_dump_json())
            return folder
        except OSError:
            continue
    raise OSError(f"neither {incoming_dir(store)} nor the temporary folder could take the result of run {record.run_id}")


def ingest_incoming(store: Store) -> int:
    """Record results that workers left in ``incoming/`` (a driver died before it could)."""
    count = 0
    for path in sorted(incoming_dir(store).glob("*.json")):
        result = read_result(path)
        if result is None:
            continue
        record(store, result)
        count += 1
    return count


def record(store: Store, result: RunRecord) -> None:
    """Persist one finished record (driver only), then drop its incoming files."""
    weights = incoming_dir(store) / f"{result.run_id}.pt"
    row = store.get(result.run_id)
    if not (row is not None and row.ok and result.ok and not weights.exists() and store.weights_path(result.run_id).exists()):
        persist(store, result, weights if weights.exists() else None)  # (else another driver ingested it already)
    (incoming_dir(store) / f"{result.run_id}.json").unlink(missing_ok=True)
    weights.unlink(missing_ok=True)
