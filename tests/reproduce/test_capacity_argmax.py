"""capacity-argmax's verdict on synthetic probe rows: every outcome it can return, from worlds
whose capacities are set by hand (``synthetic.argmax_probes``), including the one where every
probe holds nothing."""
import math

import pandas as pd
import pytest

from evalsuite.analysis.argmax_probe import law_capacity
from evalsuite.reproduce.verdict import Outcome
from tests.reproduce.synthetic import NO_PROBES, argmax_probes, judge

NAME = "capacity-argmax"


def like_d(label, dk, dv, seed):
    return 0.6 * math.sqrt(dk * dv)  # grows like d along the diagonal, like sqrt(side) along a side


def test_the_law_holds_in_its_own_world():
    v = judge(NAME, [], argmax_probes())
    assert v.status is Outcome.REPRODUCED, v.why
    assert all(v.checks.values())
    assert any("calibration slope" in f for f in v.figures) and any("control slope" in f for f in v.figures)


def test_growth_like_d_contradicts_it():
    v = judge(NAME, [], argmax_probes(trained=like_d))
    assert v.status is Outcome.NOT_REPRODUCED
    assert "signed linear: n* grows faster than d" in v.why and "delta: n* grows faster than d" in v.why


def test_one_memory_growing_like_d_is_enough_to_contradict_it():
    v = judge(NAME, [], argmax_probes(trained=lambda label, dk, dv, seed: like_d(label, dk, dv, seed) if label == "delta"
                                      else 0.5 * law_capacity(dk, dv)))
    assert v.status is Outcome.NOT_REPRODUCED and "delta" in v.why and "elu+1: n*" not in v.why


def test_a_side_that_does_not_count_contradicts_it():
    def key_side_only(label, dk, dv, seed):
        return 0.5 * law_capacity(dk, 16) if (dk, dv) != (dk, dk) else 0.5 * law_capacity(dk, dv)
    v = judge(NAME, [], argmax_probes(trained=key_side_only))
    assert v.status is Outcome.NOT_REPRODUCED and "the d_v side counts" in v.why
    assert v.checks[next(k for k in v.checks if "the d_k side counts" in k)] is True


def test_seeds_that_disagree_leave_it_open():
    def split(label, dk, dv, seed):
        return 0.5 * law_capacity(dk, dv) if seed != 2 else like_d(label, dk, dv, seed)
    v = judge(NAME, [], argmax_probes(trained=split))
    assert v.status is Outcome.INCONCLUSIVE and "undecided" in v.why


def test_probes_that_did_not_converge_are_inconclusive_and_say_so():
    v = judge(NAME, [], argmax_probes(converged=False))
    assert v.status is Outcome.INCONCLUSIVE and "not converged" in v.why


def test_a_failed_control_is_inconclusive_not_a_finding():
    v = judge(NAME, [], argmax_probes(control=lambda d: d * d / 8))  # squared error growing like d^2
    assert v.status is Outcome.INCONCLUSIVE and "the control failed" in v.why


def test_a_control_short_of_seeds_leaves_it_open():
    v = judge(NAME, [], argmax_probes(control_seeds=(0,)))
    assert v.status is Outcome.INCONCLUSIVE and "unsettled at d_key" in " ".join(v.figures)


def test_a_failed_calibration_questions_the_code_not_the_finding():
    v = judge(NAME, [], argmax_probes(calibration=lambda d: float(d)))
    assert v.status is Outcome.INCONCLUSIVE and "the calibration failed" in v.why


@pytest.mark.parametrize("rows", ["none", "at-the-floor"])
def test_nothing_measured_or_nothing_held_is_inconclusive(rows):
    probes = NO_PROBES if rows == "none" else argmax_probes(trained=lambda *a: 0.0, calibration=lambda d: 0.0,
                                                            control=lambda d: 0.0)
    v = judge(NAME, [], probes)
    assert v.status is Outcome.INCONCLUSIVE
    assert not any(v.checks.values()) if v.checks else True


def test_the_calls_sweep_seed_zero_and_report_three_seeds():
    from evalsuite.reproduce import argmax
    from evalsuite.reproduce.experiments import capacity_argmax as exp
    from evalsuite.reproduce.runner import split_probes

    control, calls = split_probes(exp.calls())
    assert sorted(c["d_key"] for c in control) == list(exp.CONTROL)
    sweeps = [c for c in calls if c.get("sweep")]
    assert {c["lr"] for c in sweeps} == set(argmax.RATES) and {c["seed"] for c in sweeps} == {0}
    reported = [c for c in calls if c.get("probe") == "argmax" and not c.get("sweep")]
    assert {c["seed"] for c in reported} == set(argmax.REPORTED)
    # before any sweep has run only the sweeps and calibrations are pending; afterwards, the seeds at the chosen rate
    first = argmax.pending(calls, pd.DataFrame())
    assert all(c.get("sweep") or c["probe"] == "calibration" for c in first)
    world = argmax_probes()  # every reported seed done at lr 0.01, the sweeps not: the sweeps are what is left
    assert {argmax.key(c) for c in argmax.pending(calls, world)} == {argmax.key(c) for c in sweeps}


def test_a_configuration_whose_rate_is_chosen_runs_its_seeds_before_another_sweeps():
    from evalsuite.reproduce import argmax
    from evalsuite.reproduce.experiments import capacity_argmax as exp

    calls = [exp.call(label, 8, 8, 0, lr=lr, sweep=True) for label in ("signed linear", "delta") for lr in argmax.RATES]
    calls += [exp.call(label, 8, 8, s) for label in ("signed linear", "delta") for s in argmax.REPORTED]
    rows = pd.DataFrame([{"call": argmax.key(c), "capacity": cap, "converged": True, "max_steps": 4000}
                         for c, cap in zip(calls[:3], (2.0, 2.2, 2.1))])  # signed linear's sweep done: lr 0.01 wins
    todo = argmax.pending(calls, rows)
    assert [(c["label"], c["seed"], c["lr"]) for c in todo] == \
        [("signed linear", s, 0.01) for s in argmax.REPORTED] + [("delta", 0, lr) for lr in argmax.RATES]


def _sweep_world(caps_by_lr: dict[float, float]):
    """One configuration's seed-0 sweep calls and rows where rate ``lr`` reached ``caps_by_lr[lr]``."""
    from evalsuite.reproduce import argmax
    from evalsuite.reproduce.experiments import capacity_argmax as exp

    calls = [exp.call("signed linear", 8, 8, 0, lr=lr, sweep=True) for lr in argmax.RATES]
    rows = pd.DataFrame([{"call": argmax.key({**calls[0], "lr": lr}), "capacity": cap, "converged": True, "max_steps": 4000}
                         for lr, cap in caps_by_lr.items()])
    return calls, rows


@pytest.mark.parametrize("caps, chosen, grows_to", [
    ({0.003: 2.0, 0.01: 2.2, 0.03: 2.1}, 0.01, None),           # an inner best: chosen
    ({0.003: 10.2, 0.01: 10.1, 0.03: 9.9}, 0.003, None),        # at the edge by 1%: a tie, chosen
    ({0.003: 12.0, 0.01: 10.0, 0.03: 9.0}, None, 0.001),        # at the edge by 20%: the grid grows down
    ({0.003: 1.0, 0.01: 2.0, 0.03: 3.0}, None, 0.1),            # ... or up
    ({0.003: 1.0, 0.01: 2.0, 0.03: 3.0, 0.1: 2.9}, 0.03, None),  # grown, and the best is inner now
    ({0.003: 0.0, 0.01: 0.0, 0.03: 0.0}, 0.003, None),          # nothing learned anywhere: the smallest, no growth
], ids=["inner", "edge-tie", "edge-grows-down", "edge-grows-up", "grown-then-inner", "all-zero"])
def test_a_sweep_grows_past_an_edge_that_wins_clearly(caps, chosen, grows_to):
    from evalsuite.reproduce import argmax

    calls, rows = _sweep_world(caps)
    (lr, todo), = argmax.sweep_state(calls, rows).values()
    assert lr == chosen
    assert [c["lr"] for c in todo] == ([grows_to] if grows_to else [])
    assert [c["lr"] for c in argmax.pending(calls, rows)] == [c["lr"] for c in todo]


def test_a_probe_stops_at_its_segments_deadline():
    import time

    from evalsuite.analysis.argmax_probe import Stopped, trained_argmax_probe

    with pytest.raises(Stopped, match="the segment ended at step 50"):
        trained_argmax_probe("linear", 4, 4, [1, 2], steps=100, max_steps=100, deadline=time.time() - 1)


def test_a_segment_starts_no_call_its_like_says_will_not_finish(tmp_path):
    """A call whose like (same memory and state) took longer than the time left stays pending, and
    the runner says the segment ended (False); with time enough it runs."""
    import time

    from evalsuite.reproduce import argmax
    from evalsuite.store import Store

    store = Store(tmp_path / "s.db")
    c = {"probe": "argmax", "memory": "linear", "feature_map": "identity", "memory_options": {"normalize": "none"},
         "d_key": 4, "d_value": 4, "pairs": [1, 2], "n_keys": 8, "n_values": 8, "lr": 0.01, "seed": 0, "steps": 20,
         "max_steps": 40, "sweep": True}
    like = {**c, "seed": 2}
    store.add_probes(pd.DataFrame([{"call": argmax.key(like), "kind": "linear", "d_key": 4, "d_value": 4, "seconds": 600.0,
                                    "capacity": 1.0, "max_steps": 40, "variant": "trained", "seed": 2, "pairs": 1}]))
    assert argmax.expected_seconds(c, store.probes()) == 600.0
    lines = []
    assert argmax.run([c], store, deadline=time.monotonic() + 60, echo=lines.append) is False
    assert any("left for the next segment" in line for line in lines)
    assert argmax.key(c) not in argmax.done_calls(store.probes())
    assert argmax.run([c], store, deadline=time.monotonic() + 3600, echo=lines.append) is True
    assert argmax.key(c) in argmax.done_calls(store.probes())
