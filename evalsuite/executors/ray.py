"""Ray executor (the ``ray`` extra): plain Ray tasks, fractional GPUs.

``address`` joins a running cluster (``ray start --head`` elsewhere); without it a local Ray
instance is started with ``workers`` CPUs. Workers return results to the driver, the only process
that writes the SQLite store; each also leaves a copy in ``incoming/`` when it can write there."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

from evalsuite.errors import UserError

from .base import execute_point, failed_result


class RayExecutor:
    def __init__(self, workers: int | None = None, device: str = "auto", address: str | None = None,
                 gpu_fraction: float = 0.25, threads: int | None = None):
        try:
            import ray  # noqa: F401
        except ImportError:
            raise UserError("--executor ray needs Ray: pip install 'evalsuite[ray]'") from None
        self.workers, self.device, self.address, self.gpu_fraction = workers, device, address, gpu_fraction
        self.threads = threads or 1

    def run(self, configs: list[dict], incoming: Path) -> Iterator[dict]:
        import ray

        started_here = not ray.is_initialized()
        if started_here:
            if self.address:
                ray.init(address=self.address, log_to_driver=False)
            else:
                ray.init(num_cpus=self.workers * self.threads if self.workers else None, include_dashboard=False,
                         log_to_driver=False)
        try:
            gpus = ray.cluster_resources().get("GPU", 0) if self.device != "cpu" else 0
            task = ray.remote(num_cpus=self.threads, num_gpus=self.gpu_fraction if gpus else 0)(execute_point)
            device = "cuda" if gpus else "cpu"
            refs = {task.remote(c, device, self.threads, str(incoming)): c for c in configs}
            while refs:
                ready, _ = ray.wait(list(refs), num_returns=1)
                for ref in ready:
                    config = refs.pop(ref)
                    try:
                        yield ray.get(ref)
                    except Exception as exc:  # noqa: BLE001 - a worker crash is a failed run
                        yield failed_result(config, f"ray task failed: {type(exc).__name__}: {exc}")
        finally:
            if started_here:
                ray.shutdown()
