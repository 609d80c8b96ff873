"""Each verdict on synthetic run sets (``synthetic.CASES``): one that reproduces the finding, one
that contradicts it, one whose failure is not settled (inconclusive), and one where every model
sits at chance (inconclusive for every verdict); then the rules comparisons follow."""
import pandas as pd
import pytest

from evalsuite.records import Outcome, Status, Verdict
from tests.reproduce.synthetic import (CASES, NO_PROBES, cell, delta, hybrid, induction, judge, jrt, linear_width,
                                       parity, probes, two)


@pytest.mark.parametrize("name", CASES)
def test_verdict_returns_every_outcome(name):
    good, bad, unsettled, chance = CASES[name]
    v = judge(name, good)
    assert isinstance(v, Verdict) and v.name == name and v.source
    assert v.status is Outcome.REPRODUCED, (v.figures, v.why)
    assert v.figures and v.finding and all(x is True for x in v.checks.values())
    w = judge(name, bad)
    assert w.status is Outcome.NOT_REPRODUCED, (w.figures, w.why)
    assert w.why and False in w.checks.values()
    u = judge(name, unsettled)
    assert u.status is Outcome.INCONCLUSIVE, (u.figures, u.why)
    assert u.why
    assert judge(name, []).status is Outcome.INCONCLUSIVE  # nothing measured, nothing claimed


@pytest.mark.parametrize("name", CASES)
def test_everything_at_chance_is_inconclusive(name):
    good, bad, unsettled, chance = CASES[name]
    v = judge(name, chance)
    assert v.status is Outcome.INCONCLUSIVE, (v.figures, v.why)


def test_every_experiment_with_runs_has_synthetic_cases():
    """A new experiment that reads runs must bring its four synthetic run sets here."""
    from evalsuite import reproduce

    assert {e.name for e in reproduce.all_experiments() if e.specs} == set(CASES)


def test_jrt_needs_one_pass_to_fall_short():
    """Where one pass already reaches softmax there is nothing for a second pass to raise."""
    v = judge("jrt", jrt(0.99, 0.99, 0.99, 0.99))
    assert v.status is Outcome.NOT_REPRODUCED and "one pass falls short" in v.why


def test_parity_without_the_positive_control_is_inconclusive():
    v = judge("parity-negative-eigenvalues", parity(0.55, 0.5, 0.5))
    assert v.status is Outcome.INCONCLUSIVE and "positive control" in v.why
    figures = " ".join(judge("parity-negative-eigenvalues", parity(1.0, 0.55, 0.5)).figures)
    assert "Grazzi" in figures


def test_induction_reports_every_test_length():
    v = judge("induction-extrapolation", induction(1.0, [1.0, 0.3, 0.07], 1.0, [1.0, 0.9, 0.8]))
    text = " ".join(v.figures)
    assert "T=1024 0.070" in text and "T=1024 0.800" in text and "Deviations" in text


def test_capacity_verdict_every_outcome():
    good = probes({"linear/elu1": 12, "linear/dpfp(nu=1)": 24, "linear/dpfp(nu=2)": 48, "linear/dpfp(nu=3)": 64, "softmax": 64})
    bad = probes({"linear/elu1": 4, "linear/dpfp(nu=1)": 24, "linear/dpfp(nu=2)": 16, "linear/dpfp(nu=3)": 8, "softmax": 32})
    assert judge("capacity-knee", [], good).status is Outcome.REPRODUCED
    v = judge("capacity-knee", [], bad)
    assert v.status is Outcome.NOT_REPRODUCED and "DPFP" in v.why and "softmax" in v.why
    assert judge("capacity-knee", [], NO_PROBES).status is Outcome.INCONCLUSIVE
    at_chance = probes({m: 0 for m in ("linear/elu1", "linear/dpfp(nu=1)", "linear/dpfp(nu=2)", "linear/dpfp(nu=3)", "softmax")})
    assert judge("capacity-knee", [], at_chance).status is Outcome.INCONCLUSIVE
    other_dkey = good.assign(d_key=64)  # probes of another d_key are not pooled in
    assert judge("capacity-knee", [], other_dkey).status is Outcome.INCONCLUSIVE
    tied = good.assign(variant="tied")  # nor rows of the earlier probe
    assert judge("capacity-knee", [], tied).status is Outcome.INCONCLUSIVE
    # nu=1 no further out than elu+1: contradicted when settled, undecided while its failing S ran out of steps
    flat = {"linear/elu1": 12, "linear/dpfp(nu=1)": 12, "linear/dpfp(nu=2)": 48, "linear/dpfp(nu=3)": 64, "softmax": 64}
    assert judge("capacity-knee", [], probes(flat)).status is Outcome.NOT_REPRODUCED
    open_ = judge("capacity-knee", [], probes(flat, ran_out=("linear/dpfp(nu=1)",)))
    assert open_.status is Outcome.INCONCLUSIVE and "4x the steps" in open_.why
    longer = probes({"linear/dpfp(nu=1)": 24}, ran_out=("linear/dpfp(nu=1)",), max_steps=16000)
    settled = pd.concat([probes(flat, ran_out=("linear/dpfp(nu=1)",)), longer])  # the 4x probe decides
    assert judge("capacity-knee", [], settled).status is Outcome.REPRODUCED
    one_seed = judge("capacity-knee", [], probes(flat, seeds=(0,)))  # a failure on one seed is not settled
    assert one_seed.status is Outcome.INCONCLUSIVE and "a second seed" in one_seed.why


def test_delta_verdict_tests_the_small_width_clause():
    wider_gap = delta(0.6, 0.1, 0.99, 0.1)  # delta wins, but by more at the larger width
    v = judge("delta-vs-linear", wider_gap)
    assert v.status is Outcome.NOT_REPRODUCED and "gap at d_model 32" in v.why


def test_linear_width_drop_needs_the_small_d_learned():
    # 1/4 vs 1/16 is a "drop" between two models at chance: it must not count
    v = judge("linear-width", linear_width(0.07, 0.3, 0.9, 0.25))
    assert v.checks["drops from D=4 to D=16"] is None
    assert "drops from D=4 to D=16: undecided" in v.figures[-1]


def test_failed_runs_do_not_count():
    good = CASES["softmax-mqar"][0]
    failed = [r.model_copy(update=dict(status=Status.FAILED, metrics={})) for r in good]
    assert judge("softmax-mqar", failed).status is Outcome.INCONCLUSIVE


def test_a_comparison_does_not_rest_on_a_figure_more_budget_still_moves():
    # elu+1 gains 0.3 at 4x: still far below delta, but its figure is not settled (the one rule), so
    # "beats" is undecided; with a 4x gain within the margin it holds
    v = judge("delta-vs-linear", delta(0.99, 0.3, 0.99, 0.3, gain=0.3))
    assert v.checks["delta above elu+1 at equal or smaller state"] is None
    assert v.status is Outcome.INCONCLUSIVE and "gained" in v.why
    assert judge("delta-vs-linear", delta(0.99, 0.3, 0.99, 0.3)).checks["delta above elu+1 at equal or smaller state"]
    # at 4x elu+1 catches up with delta at both widths: the finding is contradicted
    closed = judge("delta-vs-linear", delta(0.99, 0.3, 0.99, 0.3, gain=0.69))
    assert closed.checks["delta above elu+1 at equal or smaller state"] is False
    assert closed.status is Outcome.NOT_REPRODUCED


def test_an_ordering_reversed_is_contradicted_only_when_both_figures_are_settled():
    settled = two("listops", 0.39, 0.41, s={"long": True}, l={})
    v = judge("listops-order", settled)
    assert v.status is Outcome.NOT_REPRODUCED, (v.figures, v.why)
    # neither figure settled (both gain > 0.05 at 4x), though elu+1 stays above softmax at both budgets
    runs = two("listops", 0.39, 0.41, s={"long": True, "gain": 0.066}, l={"gain": 0.08})
    assert judge("listops-order", runs).status is Outcome.INCONCLUSIVE
    flipped = two("listops", 0.39, 0.41, s={"long": True, "gain": 0.3}, l={"gain": 0.0})  # softmax pulls ahead at 4x
    assert judge("listops-order", flipped).status is Outcome.INCONCLUSIVE


def test_a_shortfall_that_4x_the_budget_closes_is_contradicted():
    # elu+1 at d64, D=16 reaches softmax when given 4x the budget: it does not "fall short"
    runs = linear_width(0.07, 0.38, 0.99, 0.99)
    runs = [r for r in runs if not (r.config["model"]["d_model"] == 64 and r.config["task"]["num_kv_pairs"] == 16
                                    and r.config["model"]["name"] == "linear")]
    runs += cell("linear", 0.38, gain=0.6)
    v = judge("linear-width", runs)
    assert v.status is Outcome.NOT_REPRODUCED and "falls short of softmax" in v.why
    h = judge("hybrid-recovery", hybrid(1.0, 0.38, 0.99, 0.1, gain=0.6))
    assert h.status is Outcome.INCONCLUSIVE and "nothing to recover" in h.why


def test_runs_of_another_model_than_the_claim_say_not_tested():
    """Softmax without positions cannot test a claim about attention with positions; ListOps at
    length 64 cannot test LRA's gap at 2,000: "not tested", never "not reproduced"."""
    from tests.reproduce.synthetic import retask

    good, bad, *_ = CASES["induction-extrapolation"]
    for runs in (good, bad):
        v = judge("induction-extrapolation", retask(runs, "np", model={"positions": "none"}))
        assert v.status is Outcome.NOT_TESTED and "positional" in v.why and v.checks
    good, bad, *_ = CASES["listops-order"]
    v = judge("listops-order", retask(bad, "short", task={"max_length": 64}))
    assert v.status is Outcome.NOT_TESTED and "2,000" in v.why
    assert judge("listops-order", retask(bad, "long", task={"max_length": 2000})).status is Outcome.NOT_REPRODUCED
