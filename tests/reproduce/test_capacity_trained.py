"""capacity-trained's verdict on synthetic run sets (``synthetic.capacity_trained``): every outcome
it can return, including the world where everything sits at its floor, and the plateau reading of
a learning curve (left, persists, never reached, passed through)."""
import math

import pytest

from evalsuite.records import RunRecord
from evalsuite.reproduce.verdict import Outcome
from tests.reproduce.synthetic import capacity_trained, judge

NAME = "capacity-trained"


def test_trained_models_that_hold_what_the_probe_holds_reproduce_it():
    v = judge(NAME, *capacity_trained())
    assert v.status is Outcome.REPRODUCED, v.why
    assert any("ratio per seed 1.00" in f for f in v.figures)
    assert any("probe n* " in f and "(floor 0.500)" in f for f in v.figures)  # each D beside its floor


def test_trained_models_far_above_the_probe_contradict_it():
    v = judge(NAME, *capacity_trained(probe={("elu+1", 16, 16): 3.0}))  # the probe holds 3, the models about 15
    assert v.status is Outcome.NOT_REPRODUCED
    assert "elu+1 (d_k 16, d_v 16), 2 layers: trained n* within x2" in v.why


def test_a_state_that_holds_more_than_every_d_is_censored_and_still_judged():
    v = judge(NAME, *capacity_trained(world={("delta", 16, 16, 2): 64.0}, probe={("delta", 16, 16): 5.0}))
    assert v.status is Outcome.NOT_REPRODUCED and "> 32" in " ".join(v.figures)


def test_an_unconverged_probe_is_inconclusive():
    v = judge(NAME, *capacity_trained(converged=False))
    assert v.status is Outcome.INCONCLUSIVE and "not converged" in " ".join(v.figures)


def test_a_probe_short_of_seeds_is_inconclusive():
    v = judge(NAME, *capacity_trained(probe_seeds=(1,)))
    assert v.status is Outcome.INCONCLUSIVE and "not probed on every reported seed" in " ".join(v.figures)


def test_figures_that_4x_still_moves_are_not_settled():
    v = judge(NAME, *capacity_trained(moving=0.2))
    assert v.status is Outcome.INCONCLUSIVE and "a D is not settled" in " ".join(v.figures)


def test_a_configuration_run_once_is_not_judged():
    v = judge(NAME, *capacity_trained(unsettled=(("elu+1", 8, 8, 1),)))
    assert v.status is Outcome.INCONCLUSIVE
    assert v.checks["elu+1 (d_k 8, d_v 8), 1 layer: trained n* within x2 of the probe's on every seed"] is None


def test_everything_at_the_floor_is_a_failed_control_not_a_finding():
    floor = {k: 0.0 for k in [("elu+1", 8, 8, 2), ("elu+1", 8, 8, 1), ("delta", 8, 8, 2), ("elu+1", 16, 16, 2),
                              ("delta", 16, 16, 2), ("elu+1", 8, 32, 2)]}
    v = judge(NAME, *capacity_trained(world=floor, soft=0.03))
    assert v.status is Outcome.INCONCLUSIVE and "positive control failed" in v.why


@pytest.mark.parametrize("curve, says", [
    ([(100, 2), (500, 7), (1000, 8), (2000, 9)], "persists: near d' from step 500"),
    ([(100, 2), (500, 7), (1000, 8), (2000, 20)], "left at step 2,000 after 1,500 steps near d'"),
], ids=["persists", "left"])
def test_the_plateau_is_reported_per_seed_and_does_not_decide_the_verdict(curve, says):
    """A plateau near d' that lasts to the end of every seed's curve is an outcome the verdict reports
    (the capacity clause is read from the settled figures either way)."""
    v = judge(NAME, *capacity_trained(curve=curve))
    line = next(f for f in v.figures if f.startswith("elu+1 (d_k 8, d_v 32), 2 layers: plateau near d' = 8"))
    assert line.count(says) == 3  # seeds 1-3, each from its own curve
    assert v.status is Outcome.REPRODUCED


def test_no_runs_is_inconclusive():
    import pandas as pd

    v = judge(NAME, [], pd.DataFrame())
    assert v.status is Outcome.INCONCLUSIVE and "no finished run" in v.why


def curve(points, total=None):
    """A run whose history at D = 32 reads ``points``: (step, pairs retrieved)."""
    history = [{"step": s, "val_accuracy": p / 32, "val_accuracy@num_kv_pairs=32,seq_len=128": p / 32} for s, p in points]
    return RunRecord(run_id="x", config={}, status="done", metrics={}, history=history)


@pytest.mark.parametrize("points, says", [
    ([(100, 2), (200, 7), (300, 8), (400, 9), (500, 20)], "left at step 500 after 300 steps near d'"),
    ([(100, 2), (200, 7), (300, 8), (400, 9)], "persists: near d' from step 200 to the end"),
    ([(100, 1), (200, 3), (300, 4)], "never near d' (at most 4.0 pairs)"),
    ([(100, 1), (200, 20), (300, 30)], "passed d' at step 200 without a plateau"),
    ([], "no curve recorded"),
], ids=["left", "persists", "never", "passed", "no-curve"])
def test_the_plateau_near_d_prime_is_read_from_the_curve(points, says):
    from evalsuite.reproduce.experiments.capacity_trained import plateau

    assert plateau(curve(points), 8).startswith(says)


def test_within_reads_censored_capacities_by_their_bounds():
    from evalsuite.reproduce.experiments.capacity_trained import within

    assert within({1: 3.0, 2: 5.0}, 4.0) is True
    assert within({1: 0.0, 2: 0.0}, 10.0) is False and within({1: 0.0}, 3.0) is None   # below 2: outside only past 4
    assert within({1: math.inf}, 10.0) is False and within({1: math.inf}, 20.0) is None  # above 32: outside below 16
    assert within({1: 3.0, 2: 30.0}, 4.0) is None and within(None, 4.0) is None
