"""evalsuite: does your sequence mixer actually remember?

Public names: ``evalsuite.run`` (one run end to end), ``evalsuite.store.load`` (all runs as a
DataFrame), ``evalsuite.tasks`` and ``evalsuite.models``.
"""
from __future__ import annotations

from evalsuite.version import __version__


def run(task: str, model: str, **kwargs):
    """Train and evaluate one model on one task; see ``evalsuite.pipeline.run``."""
    from evalsuite.pipeline import run as _run

    return _run(task, model, **kwargs)


__all__ = ["run", "__version__"]
