"""What every executor shares: run one point in a worker, hand the result back, and leave a copy
in ``incoming/`` (written then renamed) so that a driver that died can ingest it later."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterator, Protocol

from evalsuite.files import atomic_write, write_text


class Executor(Protocol):
    def run(self, configs: list[dict], incoming: Path) -> Iterator[dict]:
        """Yield one result dict per config, in completion order."""


def incoming_dir(store) -> Path:
    return store.path.parent / "incoming"


def read_result(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None  # a file being renamed into place, or unreadable: left for the next ingest


def failed_result(config: dict, error: str) -> dict:
    from evalsuite import config as cfg

    return {"run_id": cfg.run_id(config), "config": config, "status": "failed", "metrics": {}, "error": error,
            "history": [], "env": {}}


def execute_point(config: dict, device: str, threads: int | None, incoming: str | None) -> dict:
    """Train one validated config in this (worker) process; never raises for a failed run."""
    import torch

    from evalsuite import environment
    from evalsuite.train import train_run

    if threads:
        torch.set_num_threads(threads)
    dev = environment.resolve_device(device)
    cache = os.environ.get("EVALSUITE_CACHE") or (str(Path(incoming).parent / "cache") if incoming else None)
    result = train_run(config, dev, progress=False, cache_dir=cache)
    out = {"run_id": result.run_id, "config": config, "status": result.status, "metrics": result.metrics,
           "error": result.error, "history": result.history, "env": environment.describe(dev)}
    if incoming:
        folder = Path(incoming)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            if result.ok and result.model is not None:
                state = {k: v.detach().cpu() for k, v in result.model.state_dict().items()}
                atomic_write(folder / f"{result.run_id}.pt", lambda f: torch.save(state, f))
            write_text(folder / f"{result.run_id}.json", json.dumps(out, default=str))
        except OSError:
            pass  # the driver still gets the result it is waiting for
    return out
