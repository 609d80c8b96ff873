"""Command line: ``evalsuite run | sample | list | runs | show | compare | export | report | sweep |
reproduce | scorecard | bench | analyze``,
one module per command; ``common`` holds the options and helpers they share.

Exit status: 0 success, 1 a run that failed, diverged or was interrupted (the store says why), 2
bad input (one ``Error:`` line naming the parameter, before any work starts). Every error the
suite raises on purpose (``evalsuite.errors``) and every OS error becomes one ``Error:`` line;
``--debug`` (or ``EVALSUITE_DEBUG=1``) shows the traceback instead.
"""
from __future__ import annotations

from evalsuite.cli.app import main

from . import analyze, bench, compare, export, list_, report, reproduce, run, runs, sample, scorecard, show, sweep  # noqa: E402,F401 - each adds its command

__all__ = ["main"]
