"""Clauses judged as what they claim (``reproduce.compare``), on synthetic run sets for every
outcome: orderings at every rung both cells reached, speed claims with censored runs, and the
controls a decided failure of state needs."""
import pytest

from evalsuite.reproduce.cells import Cell
from evalsuite.reproduce.compare import failure_guard, faster, ordered, steps_to
from tests.reproduce.synthetic import cell


def of(model, acc, **kw):
    return Cell.of(cell(model, acc, **kw), model, {"model.name": model})


@pytest.mark.parametrize("a, b, expected", [
    (dict(acc=0.9, gain=0.0), dict(acc=0.3, gain=0.0), True),                      # above at the base and at 4x
    (dict(acc=0.9, long=False), dict(acc=0.3, gain=0.0), None),                    # a's 4x rung, always run, is to come
    (dict(acc=0.3, long=False), dict(acc=0.5, gain=0.0), None),                    # below at the base: its 4x may jump
    (dict(acc=0.99), dict(acc=0.3, gain=0.3), True),                               # a ceiling cell stands for 4x too
    (dict(acc=0.5, gain=0.0), dict(acc=0.5, gain=0.0), False),                     # level at every rung
    (dict(acc=0.4, gain=0.0), dict(acc=0.6, gain=0.0), False),                     # reversed at every rung
    (dict(acc=0.99), dict(acc=0.3, gain=0.69), None),                              # the gap closes at 4x: when, not whether
    (dict(acc=0.9, seed_accs=[0.9, 0.9, 0.32]), dict(acc=0.3, gain=0.0), None),  # a seed within the margin
    (dict(acc=0.9, long=False, settled=False), dict(acc=0.3, gain=0.0), None),     # one rate, one seed: no ordering
    (dict(acc=0.99), dict(acc=0.3, gain=0.4), None),                               # behind by 0.29 at 4x, rose 0.4 there
    (dict(acc=0.3, gain=0.25), dict(acc=0.6, gain=0.0), None),                     # not above, but a rose 0.25 at 4x
    (dict(acc=0.99), dict(acc=0.3, gain=0.06), True),                              # rose 0.06: still far behind
], ids=["above", "4x-to-come", "below-with-4x-to-come", "ceiling-carries", "level", "reversed", "closes-with-budget",
        "a-seed-within-margin", "incomplete", "behind-still-closing", "not-above-still-rising", "behind-rising-slowly"])
def test_an_ordering_at_every_rung_both_reached(a, b, expected):
    assert ordered(of("softmax", **a), of("linear", **b)) is expected


def _with_history(runs, reach_at: dict[int, int | None], budget=100):
    """Each base run's validation history: at 0.95 from step ``reach_at[seed]`` on (None: never)."""
    out = []
    for r in runs:
        at = reach_at.get(r.seed, None)
        history = [{"step": s, "val_accuracy": 0.95 if at is not None and s >= at else 0.1} for s in range(10, budget + 1, 10)]
        out.append(r.model_copy(update={"history": history, "metrics": {**r.metrics, "budget_steps": budget}}))
    return out


@pytest.mark.parametrize("fast, slow, expected", [
    ({1: 20, 2: 30, 3: 20}, {1: 50, 2: 60, 3: 70}, True),
    ({1: 20, 2: 30, 3: 20}, {1: None, 2: None, 3: None}, True),        # never reached: censored past the budget
    ({1: 50, 2: 60, 3: 70}, {1: 20, 2: 30, 3: 20}, False),
    ({1: None, 2: None, 3: None}, {1: 20, 2: 30, 3: 20}, False),
    ({1: 20, 2: 80, 3: 20}, {1: 50, 2: 60, 3: 70}, None),              # one seed the other way
    ({1: None, 2: None, 3: None}, {1: None, 2: None, 3: None}, None),  # both censored: no order
], ids=["faster", "other-never", "slower", "never", "mixed", "both-censored"])
def test_a_speed_claim_reads_steps_to_a_level_with_censoring(fast, slow, expected):
    a = Cell.of(_with_history(cell("softmax", 0.9, long=False), fast), "a", {"model.name": "softmax"})
    b = Cell.of(_with_history(cell("linear", 0.9, long=False), slow), "b", {"model.name": "linear"})
    assert faster(a, b, 0.9) is expected
    assert steps_to(b.best_runs[0], 0.9) == ((slow[1], True) if slow[1] else (100, False))


@pytest.mark.parametrize("control, larger, failing, reason", [
    (dict(acc=1.0), dict(acc=0.95, state=40000), dict(acc=0.3, gain=0.0), None),
    (dict(acc=0.1, gain=0.0), dict(acc=0.95, state=40000), dict(acc=0.3, gain=0.0), "positive control"),
    (dict(acc=1.0), None, dict(acc=0.3, gain=0.0), "optimisation, not state"),
    (dict(acc=1.0), dict(acc=0.95, state=16000), dict(acc=0.3, gain=0.0), "not 4x or more"),
    (dict(acc=1.0), dict(acc=0.5, gain=0.0, state=40000), dict(acc=0.3, gain=0.0), "does not reach 0.9"),
    (dict(acc=1.0), dict(acc=0.95, state=40000), dict(acc=1 / 16, gain=0.0), "within 0.05 of its floor"),
], ids=["controls-hold", "control-failed", "no-larger-state", "larger-too-small", "larger-fails-too", "at-its-floor"])
def test_a_decided_failure_of_state_carries_its_controls(control, larger, failing, reason):
    failed = of("linear", state=8000, **failing)
    got = failure_guard(failed, of("softmax", **control), None if larger is None else of("delta", **larger))
    assert (got is None) if reason is None else (reason in got), got


@pytest.mark.parametrize("stopped, steps, level, expected", [
    ("target", 450, 0.99, (450, True)),      # stopped on reaching its target: the step it reached it
    ("budget", 3125, 0.99, (3125, False)),   # trained its whole budget with the stop on: never reached it
    ("target", 450, 0.9, None),              # another level: a run without its curve cannot say when
    ("diverged", 200, 0.99, None),
], ids=["stopped-at-target", "ran-its-budget", "other-level", "diverged"])
def test_a_run_stored_without_its_curve_is_read_from_how_it_stopped(stopped, steps, level, expected):
    """The committed reproduction's copy runs carry no curves; the speed figure read them as never
    reaching 0.9 (">3,125") though each stopped on reaching 0.99 at 450 to 1,100 steps."""
    run = cell("linear", 0.99, long=False)[3]
    run = run.model_copy(update={"history": None, "metrics": {**run.metrics, "stopped": stopped, "steps": steps,
                                                              "budget_steps": 3125}})
    assert steps_to(run, level) == expected


def test_a_speed_claim_over_runs_that_cannot_say_is_undecided():
    a = Cell.of([r.model_copy(update={"history": None}) for r in cell("softmax", 0.9, long=False)], "a", {"model.name": "softmax"})
    b = Cell.of(_with_history(cell("linear", 0.9, long=False), {1: 20, 2: 30, 3: 20}), "b", {"model.name": "linear"})
    assert faster(a, b, 0.9) is None and faster(b, a, 0.9) is None
