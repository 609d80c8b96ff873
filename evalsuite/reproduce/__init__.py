"""Reproduce the literature: each finding of docs/FINDINGS.md as a sweep (or probe) plus a verdict.

``experiment`` (what an experiment is, the registry), ``cells`` (what a verdict reads of stored
runs), ``verdict`` (the rules that turn cells into an outcome), ``runner`` (sweeps, escalation,
probes, judging), ``experiments/`` (one module per finding: adding one is one new file).

A verdict reads only stored results. It states the finding, the figures that bear on it, and
``reproduced``, ``not reproduced`` or ``inconclusive`` (with why); it never claims what was not
measured: a finding whose runs are missing or failed is inconclusive.
"""
from __future__ import annotations

import difflib

from evalsuite.errors import UserError

from .experiment import EXPERIMENTS, SCALES, CellSpec, Design, Experiment, all_experiments, register
from .runner import experiment_runs, run_experiments, stored_runs, verdicts


def get(name: str) -> Experiment:
    return EXPERIMENTS.get(name)


def select(names) -> list[Experiment]:
    """The experiments ``names`` ask for (a name or a group such as ``frontier``; for none, all but
    the retired ones), in listing order; ``UserError`` with a did-you-mean for a name that is
    neither."""
    everything = all_experiments()
    groups = {e.group for e in everything if e.group}
    known = [e.name for e in everything] + sorted(groups)
    unknown = [n for n in names if n not in known]
    if unknown:
        hints = [f"{n!r}" + (f" (did you mean {close[0]!r}?)" if (close := difflib.get_close_matches(n, known, 1)) else "")
                 for n in unknown]
        raise UserError(f"NAMES: unknown experiment {', '.join(hints)}; available: {', '.join(known)}")
    if not names:
        return [e for e in everything if not e.retired]
    wanted = set(names)
    return [e for e in everything if e.name in wanted or e.group in wanted]


__all__ = ["EXPERIMENTS", "SCALES", "CellSpec", "Design", "Experiment", "all_experiments", "experiment_runs", "get", "register",
           "run_experiments", "select", "stored_runs", "verdicts"]
