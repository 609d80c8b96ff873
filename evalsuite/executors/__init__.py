"""Executors behind one small interface: ``run(configs, incoming) -> iterator of results``."""
from __future__ import annotations

EXECUTORS = ("local", "ray")


def get_executor(name: str, *, workers: int | None = None, device: str = "auto", address: str | None = None):
    if name == "local":
        if address:
            raise ValueError("--address is for --executor ray")
        from .local import LocalExecutor

        return LocalExecutor(workers=workers, device=device)
    if name == "ray":
        from .ray import RayExecutor

        return RayExecutor(workers=workers, device=device, address=address)
    raise ValueError(f"--executor must be one of {', '.join(EXECUTORS)}, got {name!r}")
