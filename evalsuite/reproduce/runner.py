"""Running an experiment: its sweep, the escalation that makes each cell its verdict rests on
citable (rates past an edge, a second seed, 4x the budget), its capacity probes, and the
verdicts judged from what the store holds."""
from __future__ import annotations

from typing import Callable

from evalsuite.config import RunConfig
from evalsuite.records import RunRecord, Verdict

from .experiment import Experiment, members
from .probes import run_probes

MAX_ROUNDS = 5


def escalation_name(name: str, scale: str) -> str:
    return f"reproduce-{name}-{scale}-escalation"


def experiment_runs(exp: Experiment, scale: str, store) -> list[RunRecord]:
    """The experiment's stored runs: its sweep's points plus what escalation added (experiments
    that share one sweep share what each one's escalation added)."""
    from evalsuite.sweep import expand

    if not store.path.exists():
        return []
    spec = exp.spec(scale)
    ids = {p.run_id for p in expand(spec)} if spec is not None else set()
    wanted = {escalation_name(e.name, scale) for e in members(exp)}
    for sweep in store.sweeps():
        if sweep["name"] in wanted:
            ids |= set(store.sweep_runs(sweep["sweep_id"])[1])
    return store.runs(sorted(ids)) if ids else []


def escalate(exp: Experiment, scale: str, store, run_configs: Callable[[str, list[RunConfig]], None], echo=print) -> None:
    """Make every cell the verdict rests on citable: extend the rate grid past an edge where a
    cell did not learn, add a second seed at the best rate, rerun at 4x the budget where it still
    did not learn (``Cell.next_configs``). Rounds until nothing is missing; resumable."""
    if exp.cells is None:
        return
    for round_ in range(1, MAX_ROUNDS + 1):
        runs = experiment_runs(exp, scale, store)
        todo, why = [], []
        for cell in exp.cells(runs, exp.params[scale]):
            configs = cell.next_configs()
            if configs:
                todo += configs
                why.append(f"{cell.label} ({cell.status_word()})")
        if not todo:
            return
        echo(f"  escalation round {round_}: {len(todo)} runs for {', '.join(why)}")
        run_configs(escalation_name(exp.name, scale), todo)
    echo(f"  escalation stopped after {MAX_ROUNDS} rounds; the verdict says what is still missing")


def run_experiment(exp: Experiment, scale: str, store, run_spec: Callable, run_configs: Callable, echo=print) -> None:
    """The sweep (``run_spec(spec)``), the escalation (``run_configs(name, configs)``) and the probes."""
    spec = exp.spec(scale)
    if spec is not None:
        run_spec(spec)
        escalate(exp, scale, store, run_configs, echo=echo)
    run_probes(exp.probes.get(scale, []), store, echo=echo)


def verdicts(experiments: list[Experiment], store, scale: str = "cpu") -> list[Verdict]:
    """Judge each experiment from what the store holds for its points and escalations."""
    probes = store.probes()
    return [e.judge(experiment_runs(e, scale, store), probes, scale) for e in experiments]
