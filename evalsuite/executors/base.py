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

    if threads:
        torch.set_num_threads(threads)
    dev = environment.resolve_device(device)
    cache = os.environ.get("EVALSUITE_CACHE") or (str(Path(incoming).parent / "cache") if incoming else None)
    records = []
    for trained in run_unit(configs, dev, progress=False, cache_dir=cache, decide=decide):
        record = trained.record
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
