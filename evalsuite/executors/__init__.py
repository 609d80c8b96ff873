"""Executors behind one small interface: ``run(configs, incoming) -> iterator of results``."""
from __future__ import annotations

from typing import TYPE_CHECKING

from evalsuite.errors import UserError

if TYPE_CHECKING:
    from .base import Executor

EXECUTORS = ("local", "ray")


def get_executor(name: str, *, workers: int | None = None, device: str = "auto", address: str | None = None,
                 threads: int | None = None, group: str = "auto") -> "Executor":
    """``threads``: CPU threads per run; None keeps ``$OMP_NUM_THREADS`` when set, else divides the cores.
    ``group``: auto, on or off (``grouping.plan``)."""
    from .grouping import GROUP_MODES

    if group not in GROUP_MODES:
        raise UserError(f"--group must be one of {', '.join(GROUP_MODES)}, got {group!r}")
    if name == "local":
        if address:
            raise UserError("--address is for --executor ray")
        from .local import LocalExecutor

        return LocalExecutor(workers=workers, device=device, threads=threads, group=group)
    if name == "ray":
        from .ray import RayExecutor

        return RayExecutor(workers=workers, device=device, address=address, threads=threads, group=group)
    raise UserError(f"--executor must be one of {', '.join(EXECUTORS)}, got {name!r}")
