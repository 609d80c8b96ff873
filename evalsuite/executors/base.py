"""What every executor shares: run one unit (a configuration, or a group trained together) in a
worker, hand the records back, and leave a copy in ``incoming/`` (written then renamed) so that a
driver that died can ingest it later."""
from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Iterator, Protocol

from evalsuite.config import RunConfig
from evalsuite.files import atomic_write, write_text
from evalsuite.records import RunRecord, Status


class Executor(Protocol):
    def run(self, configs: list[RunConfig], incoming: Path) -> Iterator[RunRecord]:
        """Yield one record per config, in completion order (the points of a group together)."""


def failed_result(config: RunConfig, error: str) -> RunRecord:
    return RunRecord(run_id=config.run_id, config=config.as_dict(), status=Status.FAILED, error=error)


def uses_plugin(config: RunConfig) -> bool:
    """Whether a configuration loads user code: a plug-in file (its digest is part of the
    configuration) or a ``module:Attr`` model, task or feature map. Such code can change the
    worker's global state (torch's default dtype, grad mode, a monkeypatch) in ways no reset undoes,
    so the worker that ran it is never reused (``max_tasks_per_child=1``; Ray: ``max_calls=1``)."""
    if config.plugins:
        return True
    section = config.as_dict()
    refs = (section["task"].get("name"), section["model"].get("name"), section["model"].get("feature_map"))
    return any(isinstance(r, str) and ":" in r for r in refs)


# what this worker process ran before the unit it runs now (``worker_history`` in each record's env)
_RAN: list[str] = []


def die_with_parent() -> None:
    """End this worker when the process that started it ends (a driver killed with SIGKILL would
    otherwise leave it training a run the store reads as stale, which a rerun then trains again).
    Linux: the kernel sends SIGKILL (``PR_SET_PDEATHSIG``); elsewhere, and as a backstop, a daemon
    thread checks every second whether the parent is gone (the worker is then re-parented). The
    parent is the one that spawned this process (``multiprocessing.parent_process``, known from the
    start), not the parent at the time of the call: a driver killed while the worker was still
    importing torch has already handed it to another parent by then, which must not be taken for its own."""
    import multiprocessing
    import signal
    import threading
    import time

    if getattr(die_with_parent, "armed", False):
        return
    die_with_parent.armed = True
    spawner = multiprocessing.parent_process()  # None outside a multiprocessing child (a Ray worker)
    parent = spawner.pid if spawner is not None else os.getppid()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass

    def watch():
        while True:
            if os.getppid() != parent:
                os._exit(1)
            time.sleep(1.0)
    threading.Thread(target=watch, name="evalsuite-parent-watch", daemon=True).start()
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)


def run_unit_in_worker(configs: list[RunConfig], device: str, threads: int | None, incoming: str | None,
                       decide: bool = False) -> list[RunRecord]:
    """Run one configuration, or a group of them (``pipeline.run_unit``), in this (worker) process;
    never raises for a failed run. The driver persists the records (``persist.persist``). With
    ``incoming`` (a folder on the driver's machine: the local executor), each record and its
    weights are also left there as files, the crash journal; without it (Ray, whose workers may
    run on other machines), ``weights_of(record)`` holds the weights as bytes that travel back with
    the record."""
    import torch

    from evalsuite import environment
    from evalsuite.pipeline import run_unit

    die_with_parent()
    before = list(_RAN)
    _RAN.extend(f"{c.run_id}{' (plug-in)' if uses_plugin(c) else ''}" for c in configs)
    if threads:
        torch.set_num_threads(threads)
    dev = environment.resolve_device(device)
    cache = os.environ.get("EVALSUITE_CACHE") or (str(Path(incoming).parent / "cache") if incoming else None)
    records = []
    for trained in run_unit(configs, dev, progress=False, cache_dir=cache, decide=decide):
        record = trained.record
        # which runs this worker process ran before (a plug-in among them is said: its state could leak)
        record.env = {**record.env, "worker_pid": os.getpid(), "worker_ran_before": before}
        if not incoming and record.ok and trained.model is not None:
            buf = io.BytesIO()
            torch.save({k: v.detach().cpu() for k, v in trained.model.state_dict().items()}, buf)
            record._weights = buf.getvalue()
        if incoming:
            folder = Path(incoming)
            try:
                folder.mkdir(parents=True, exist_ok=True)
                if record.ok and trained.model is not None:
                    state = {k: v.detach().cpu() for k, v in trained.model.state_dict().items()}
                    atomic_write(folder / f"{record.run_id}.pt", lambda f: torch.save(state, f))
                write_text(folder / f"{record.run_id}.json", record.model_dump_json())
            except OSError:
                pass  # the driver still gets the record it is waiting for
        records.append(record)
    return records
