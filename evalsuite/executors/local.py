"""Local executor: a pool of worker processes on this machine (no extra dependency).

CPU: each worker gets ``threads`` torch threads when given; else ``$OMP_NUM_THREADS`` when set
(never overridden); else the cores divided among the workers. GPUs: worker i runs on
GPU i mod n; several workers may share a GPU. A worker killed mid-run (SIGKILL, out of memory)
breaks the pool: the unfinished points are resubmitted to a fresh pool, up to three attempts."""
from __future__ import annotations

import multiprocessing as mp
import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Iterator

from .base import execute_point, failed_result

MAX_ATTEMPTS = 3


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _stop(pool: ProcessPoolExecutor) -> None:
    """Terminate the pool's workers instead of waiting for their current runs to finish."""
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.terminate()
    pool.shutdown(wait=False, cancel_futures=True)


class LocalExecutor:
    def __init__(self, workers: int | None = None, device: str = "auto", threads: int | None = None):
        import torch

        self.device = device
        self.gpus = torch.cuda.device_count() if device != "cpu" else 0
        self.workers = workers or (self.gpus or 1)
        if threads is None and not self.gpus and not os.environ.get("OMP_NUM_THREADS"):
            threads = max(1, cpu_count() // self.workers)
        self.threads = threads

    def _device(self, slot: int) -> str:
        return f"cuda:{slot % self.gpus}" if self.gpus else "cpu"

    def run(self, configs: list[dict], incoming: Path) -> Iterator[dict]:
        pending = dict(enumerate(configs))
        attempts = {i: 0 for i in pending}
        ctx = mp.get_context("spawn")  # safe with CUDA and threads; workers import torch once
        while pending:
            finished: set[int] = set()
            with ProcessPoolExecutor(max_workers=min(self.workers, len(pending)), mp_context=ctx) as pool:
                futures = {pool.submit(execute_point, c, self._device(n), self.threads, str(incoming)): i
                           for n, (i, c) in enumerate(pending.items())}
                try:
                    for future in as_completed(futures):
                        i = futures[future]
                        try:
                            result = future.result()
                        except BrokenProcessPool:
                            continue
                        except Exception as exc:  # noqa: BLE001 - a result, not a crash of the sweep
                            result = failed_result(pending[i], f"{type(exc).__name__}: {exc}")
                        finished.add(i)
                        yield result
                except BaseException:  # Ctrl-C, SIGTERM, or the driver stopped: stop the workers now
                    _stop(pool)
                    raise
            for i in list(pending):
                if i in finished:
                    del pending[i]
                    continue
                attempts[i] += 1
                if attempts[i] >= MAX_ATTEMPTS:
                    yield failed_result(pending.pop(i), f"worker process died {MAX_ATTEMPTS} times running this "
                                                        f"point (killed, or out of memory)")
