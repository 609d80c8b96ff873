"""`evalsuite reproduce --plan`: what the next invocation would run, and why, without running it.

The plan reads the store (never writes it) and lists, per experiment: the sweep points not done
yet (each with the cell it sets), then the first escalation round for the cells whose sweep points
are all done (``escalation.next_configs``: a rate past an edge, reported seeds, a longer rung, each
with the reason the settledness rule gives), then the capacity probes not yet stored. Later
escalation rounds depend on what these runs show, so the plan says where they may follow. Each
run's expected time is ``sweep.expected_seconds`` (the median seconds per step of finished runs of
its configuration, an upper estimate); a run of a configuration never run has none.
"""
from __future__ import annotations

from dataclasses import dataclass

from evalsuite.protocol import setting_key
from evalsuite.records import Status

from .experiment import CONTROL, TEST, Experiment
from .probes import _full, _probed, probe_name
from . import argmax
from .runner import escalation_configs, split_probes, stored_runs


@dataclass
class Planned:
    experiment: str
    run_id: str
    config: dict
    why: str
    seconds: float | None = None

    def line(self) -> str:
        c = self.config
        when = "?" if self.seconds is None else f"{self.seconds / 60:.1f}"
        return (f"  {self.run_id}  lr {c['train']['lr']:g}  seed {c['seed']}  {c['train']['epochs']:g} ep  "
                f"~{when} min  {self.why}")


def plan(experiments: list[Experiment], scale: str, store) -> tuple[list[Planned], list[str]]:
    """The runs the next ``reproduce`` of ``experiments`` would start first (each once, under the first
    experiment that needs it), and notes on what cannot be planned yet."""
    from evalsuite.sweep import expand, expected_seconds

    runs = stored_runs(store)
    done = {r.run_id for r in runs if r.status is Status.DONE}
    failed = {r.run_id for r in runs if r.status in (Status.FAILED, Status.DIVERGED)}
    out: dict[str, Planned] = {}
    notes: list[str] = []
    for exp in experiments:
        design = exp.designs[scale]
        spec = exp.spec(scale)
        labels = {setting_key(config): c.label for c in design.cells for config in [design._resolved[c.key]]}
        pending_settings = set()
        for p in (expand(spec) if spec is not None else []):
            config = p.config.as_dict()
            if p.run_id in out:  # another experiment of this invocation runs it (a shared sweep)
                pending_settings.add(setting_key(config))
            if p.run_id in done or p.run_id in out:
                continue
            if p.run_id in failed:
                notes.append(f"{exp.name}: {p.run_id} failed; a sweep reruns it only with --retry-failed")
                continue
            pending_settings.add(setting_key(config))
            out[p.run_id] = Planned(exp.name, p.run_id, config,
                                    f"sweep point of {labels.get(setting_key(config), 'the design')}")
        waiting = 0
        runs_of_exp = exp.members(runs, scale)
        probes = store.probes() if store.path.exists() else None
        cells = exp.cells(runs_of_exp, scale, roles=(TEST, CONTROL))
        for spec_ in design.cells:
            cell = cells.get(spec_.key)
            if cell is None:
                continue
            if setting_key(design._resolved[spec_.key]) in pending_settings:
                waiting += 1
                continue
            reason = "; ".join(cell.unsettled()) or "to settle it"
            for config in escalation_configs(exp, runs_of_exp, probes, scale, cell):
                if config.run_id not in out and config.run_id not in done:
                    out[config.run_id] = Planned(exp.name, config.run_id, config.as_dict(),
                                                 f"escalation of {cell.label}: {reason}")
        if waiting:
            notes.append(f"{exp.name}: {waiting} cell(s) escalate once their sweep points above finish "
                         "(the runs they need depend on the rates those points choose)")
        schlag, top1 = split_probes(exp.probes.get(scale, []))
        if top1:
            todo = argmax.pending(top1, probes)
            if todo:
                notes.append(f"{exp.name}: {len(todo)} argmax probe call(s) now (seed 0's rate sweeps and calibrations "
                             "first, then the reported seeds at the rates they choose)")
        for call in map(_full, schlag):
            have = set(_probed(probes, call, call["steps"]).pairs)
            missing = sorted(set(call["pairs"]) - have)
            if missing:
                notes.append(f"{exp.name}: capacity probe {probe_name(call)} (d_key {call['d_key']}) at S {missing}, "
                             "then more seeds or steps where its knee is not settled")
    planned = list(out.values())
    for p, s in zip(planned, expected_seconds(store, [p.config for p in planned])):
        p.seconds = s
    if planned:
        notes.append("later escalation rounds follow from what these runs show; run --plan again after them")
    return planned, notes


def render(planned: list[Planned], notes: list[str], workers: int) -> list[str]:
    """The plan as lines: each run grouped by experiment, then the totals and the notes."""
    lines = []
    for name in dict.fromkeys(p.experiment for p in planned):
        mine = [p for p in planned if p.experiment == name]
        lines.append(f"{name}: {len(mine)} run(s)")
        lines += [p.line() for p in mine]
    known = [p.seconds for p in planned if p.seconds is not None]
    unknown = len(planned) - len(known)
    total = sum(known) / 60
    lines.append(f"plan     {len(planned)} run(s); expected {total:.0f} run-min where known "
                 f"(about {total / max(1, workers):.0f} wall-min on {workers} worker(s); an upper estimate: early stops "
                 "shorten it)" + (f"; {unknown} run(s) of configurations never run have no estimate" if unknown else ""))
    lines += [f"note     {n}" for n in notes]
    if not planned and not notes:
        lines.append("plan     nothing to run: every cell these experiments read is settled or cannot be settled by an "
                     "added run (the verdicts say which)")
    return lines
