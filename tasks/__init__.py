"""Task generators. ``names()`` lists them, ``get(name, **params)`` builds one."""
from __future__ import annotations

if __name__ != "evalsuite.tasks":  # the checkout's tasks/ folder imported by its bare name (from the repository root)
    raise ImportError(f"import evalsuite.tasks, not {__name__}: tasks/ installs as evalsuite.tasks, and a second copy "
                      "under another name would keep a registry of its own")

from evalsuite.registry import Registry

TASKS = Registry("task", builtin_package=__name__)  # every module here; a new task is one new file

from .base import IGNORE, Batch, Task, TaskParams  # noqa: E402


def names() -> list[str]:
    return TASKS.names()


def get(name: str, **params) -> Task:
    """Build a task from a name or reference, validating ``params``."""
    cls = TASKS.get(name)
    if not (isinstance(cls, type) and issubclass(cls, Task)):
        raise TypeError(f"{name!r} is not a Task subclass")
    return cls(**params)


__all__ = ["TASKS", "Batch", "IGNORE", "Task", "TaskParams", "get", "names"]
