"""Local executor: a pool of worker processes on this machine (no extra dependency).

CPU: each worker gets ``threads`` torch threads when given; else ``$OMP_NUM_THREADS`` when set
(never overridden); else the cores divided among the workers. GPUs: worker i runs on
GPU i mod n; several workers may share a GPU. ``group`` (``grouping.plan``): points that differ
only in learning rate and seed train together in one worker. A worker killed mid-run (SIGKILL,
out of memory) breaks the pool: the unfinished units are resubmitted to a fresh pool (a group's
runs then one at a time), up to three attempts. A sweep that loads user code (a plug-in file or a
``module:Attr`` reference) runs every unit in a fresh worker (``base.uses_plugin``), and every worker
ends when its driver does (``base.die_with_parent``)."""
from __future__ import annotations

import multiprocessing as mp
import os
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Iterator

from evalsuite.config import RunConfig
from evalsuite.errors import UserError
from evalsuite.records import RunRecord

from .base import failed_result, run_unit_in_worker, uses_plugin
from .grouping import plan

MAX_ATTEMPTS = 3
LONGEST_SEGMENT_S = 2 * 3600  # a unit expected to take longer than a whole segment runs in pieces (checkpoints)


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
    def __init__(self, workers: int | None = None, device: str = "auto", threads: int | None = None,
                 group: str = "auto"):
        import torch

        self.device, self.group = device, group
        self.gpus = torch.cuda.device_count() if device != "cpu" else 0
        self.workers = workers or (self.gpus or 1)
        if not self.gpus and self.workers > cpu_count():
            raise UserError(f"--workers {self.workers}: this machine gives this process {cpu_count()} cores, and more "
                            f"CPU workers than cores only slow every run down; use at most {cpu_count()}")
        if threads is None and not self.gpus and not os.environ.get("OMP_NUM_THREADS"):
            threads = max(1, cpu_count() // self.workers)
        self.threads = threads

    _ended = False  # the last ``run`` held back a unit that would not have ended by the deadline

    def _over(self) -> bool:
        return self._ended or (self.deadline is not None and time.monotonic() >= self.deadline)

    def _device(self, slot: int) -> str:
        return f"cuda:{slot % self.gpus}" if self.gpus else "cpu"

    deadline: float | None = None  # time.monotonic(): no run starts after it (a segment's end); runs in flight checkpoint and stop
    # expected seconds per config (None: unknown), aligned with ``run``'s configs: with a deadline, a
    # unit starts only if its expected time (its members' sum) ends by then, so a segment keeps its length
    estimates: list[float | None] | None = None

    def _fits(self, unit: list[int]) -> bool:
        """Whether a unit may start before the deadline: it is expected to end by then, or it is
        longer than any segment (a 16x rung): then it starts anyway, checkpoints as it goes, and is
        stopped at the deadline to resume in the next segment."""
        if self.deadline is None or not self.estimates:
            return True
        known = [self.estimates[i] for i in unit if self.estimates[i] is not None]
        return (not known or time.monotonic() + sum(known) <= self.deadline or sum(known) > LONGEST_SEGMENT_S)

    def run(self, configs: list[RunConfig], incoming: Path) -> Iterator[RunRecord]:
        self._ended = False
        pending = {u[0]: u for u in plan(configs, self.group, slots=self.workers, cuda=bool(self.gpus))}  # first point -> unit
        attempts = {k: 0 for k in pending}
        ctx = mp.get_context("spawn")  # safe with CUDA and threads; workers import torch once
        # user code can change a process's global state beyond repair: a sweep that loads any runs
        # each unit in a fresh worker, so no configuration shares a process with a plug-in
        one_shot = 1 if any(uses_plugin(c) for c in configs) else None
        if self.deadline is not None:  # workers stop at the segment's end, their runs checkpointed (train.loop)
            os.environ["EVALSUITE_DEADLINE"] = str(time.time() + self.deadline - time.monotonic())
        try:
            yield from self._run(configs, incoming, pending, attempts, ctx, one_shot)
        finally:
            os.environ.pop("EVALSUITE_DEADLINE", None)

    def _run(self, configs, incoming, pending, attempts, ctx, one_shot) -> Iterator[RunRecord]:
        while pending:
            finished: set[int] = set()
            slots = min(self.workers, len(pending))
            with ProcessPoolExecutor(max_workers=slots, mp_context=ctx, max_tasks_per_child=one_shot) as pool:
                # at most one unit per worker in flight, so that a segment's deadline holds back
                # every unit not yet started (a queued future could no longer be cancelled), and
                # each unit takes the slot (GPU) the unit before it freed
                waiting, running, free = list(pending.items()), {}, list(range(slots))
                try:
                    while waiting or running:
                        while waiting and free and not self._over():
                            fits = next((j for j, (_, u) in enumerate(waiting) if self._fits(u)), None)
                            if fits is None:  # none would end by the deadline: the segment ends with these in flight
                                self._ended = True
                                break
                            k, unit = waiting.pop(fits)
                            slot = free.pop(0)
                            try:
                                future = pool.submit(run_unit_in_worker, [configs[i] for i in unit], self._device(slot),
                                                     self.threads, str(Path(incoming).resolve()), self.group == "auto")
                            except BrokenProcessPool:
                                waiting.clear()  # a worker died: the rest go to a fresh pool
                                break
                            running[future] = (k, slot)
                        if not running:
                            break
                        done, _ = wait(running, return_when=FIRST_COMPLETED)
                        for future in done:
                            k, slot = running.pop(future)
                            free.append(slot)
                            try:
                                results = future.result()
                            except BrokenProcessPool:
                                waiting.clear()
                                continue
                            except Exception as exc:  # noqa: BLE001 - results, not a crash of the sweep
                                results = [failed_result(configs[i], f"{type(exc).__name__}: {exc}") for i in pending[k]]
                            finished.add(k)
                            yield from results
                except BaseException:  # Ctrl-C, SIGTERM, or the driver stopped: stop the workers now
                    _stop(pool)
                    raise
            if self._over():
                return  # the segment is over: what did not finish is the store's to resume
            for k, unit in list(pending.items()):
                del pending[k]
                if k in finished:
                    continue
                tries = attempts.pop(k) + 1
                if tries >= MAX_ATTEMPTS:
                    for i in unit:
                        yield failed_result(configs[i], f"worker process died {MAX_ATTEMPTS} times running this "
                                                        f"point (killed, or out of memory)")
                    continue
                for i in unit:  # a group whose worker died (out of memory?) is retried one run at a time
                    pending[i], attempts[i] = [i], tries
