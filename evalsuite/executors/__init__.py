"""Executors behind one small interface: ``run(configs, incoming) -> iterator of results``."""
from __future__ import annotations

from evalsuite.errors import UserError

EXECUTORS = ("local", "ray")


def get_executor(name: str, *, workers: int | None = None, device: str = "auto", address: str | None = None,
                 threads: int | None = None):
    """``threads``: CPU threads per run; None keeps ``$OMP_NUM_THREADS`` when set, else divides the cores."""
    if name == "local":
        if address:
            raise UserError("--address is for --executor ray")
        from .local import LocalExecutor

        return LocalExecutor(workers=workers, device=device, threads=threads)
    if name == "ray":
        from .ray import RayExecutor

        return RayExecutor(workers=workers, device=device, address=address, threads=threads)
    raise UserError(f"--executor must be one of {', '.join(EXECUTORS)}, got {name!r}")
