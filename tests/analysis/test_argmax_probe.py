"""The argmax probe against independent references: the law's closed form, the interpolated
capacity by hand, the calibration memory against a naive float64 loop over the pairs, the trained
probe's read against M = sum v k^T written out, and its convergence rule."""
import math

import pytest
import torch

from evalsuite.analysis import argmax_probe as ap


@pytest.mark.parametrize("dk, dv", [(4, 4), (16, 16), (8, 32), (256, 256)])
def test_the_law_solves_n_ln_n_equal_to_half_the_state(dk, dv):
    n = ap.law_capacity(dk, dv)
    assert n >= 1 and (n == 1 or math.isclose(n * math.log(n), dk * dv / 2, rel_tol=1e-9))


def test_capacity_interpolates_on_log_n_between_the_points_either_side_of_the_level():
    # 0.95 at n = 8, 0.85 at n = 16: the level 0.9 halfway, so n* = 8 x 2^(1/2)
    assert math.isclose(ap.capacity([4, 8, 16], [1.0, 0.95, 0.85]), 8 * math.sqrt(2))
    assert ap.capacity([4, 8], [0.5, 0.2]) == 0.0          # the smallest n already fails
    assert ap.capacity([4, 8], [1.0, 0.95]) == math.inf    # no n fails: a lower bound, not a figure
    assert ap.capacity([8, 4, 16], [0.95, 1.0, 0.85]) == ap.capacity([4, 8, 16], [1.0, 0.95, 0.85])  # any order


def naive_calibration(d_key, d_value, n, trials, seed):
    """Top-1 retrieval from M = sum_i y_i x_i^T, pair by pair in float64, on the same draws."""
    gen = torch.Generator().manual_seed(seed)
    xs = torch.randn(trials, n, d_key, generator=gen).double()   # drawn as the probe draws them
    ys = torch.randn(trials, n, d_value, generator=gen).double()
    right = 0
    for x, y in zip(xs, ys):
        M = torch.zeros(d_value, d_key, dtype=torch.float64)
        for i in range(n):
            M += torch.outer(y[i], x[i])
        for j in range(n):
            scores = [float(y[i] @ (M @ x[j])) for i in range(n)]
            right += max(range(n), key=scores.__getitem__) == j
    return right / (trials * n)


@pytest.mark.parametrize("dk, dv, n", [(4, 4, 3), (8, 4, 12), (16, 16, 40)], ids=["4x4-n3", "8x4-n12", "16x16-n40"])
def test_the_calibration_memory_is_the_theorems_correlation_matrix(dk, dv, n):
    """Our linear memory with the identity map and no denominator, read by argmax over the n targets,
    is M = sum y x^T: its accuracy equals the naive float64 loop's on the same Gaussian draws."""
    trials = 6
    ours = float(ap.calibration(dk, dv, [n], trials=trials, seed=3).accuracy.iloc[0])
    want = naive_calibration(dk, dv, n, trials, 3)
    assert abs(ours - want) < 1e-6, (ours, want)  # the same hits: the float32 mean of them


def test_the_calibration_capacity_is_where_its_accuracy_crosses_the_level():
    cap, df = ap.calibration_capacity(16, 16)
    below = df[df.pairs > cap]
    above = df[df.pairs < cap]
    assert (above.accuracy >= ap.SUCCESS).all() and (below.accuracy < ap.SUCCESS).any()
    assert 4 < cap < ap.law_capacity(16, 16)   # the measured n* sits below the sharp law at small d


def test_the_trained_probes_signed_memory_reads_m_times_the_key():
    """The trained probe's read for the signed linear memory (identity map, no denominator) is
    M k_j with M = sum_i v_i k_i^T, written out here in float64, decoded over every value codeword."""
    torch.manual_seed(0)
    probe = ap.CodebookProbe("linear", 6, 5, n_keys=20, n_values=24, feature_map="identity",
                             memory_options={"normalize": "none"}).double()
    keys, values = ap._batch(3, 7, 20, 24, torch.Generator().manual_seed(1))
    scores = probe(keys, values)                                      # [3, 7, 24]
    K, V, C = probe.keys.weight, probe.values.weight, probe.values.weight
    for b in range(3):
        M = sum(torch.outer(V[values[b, i]], K[keys[b, i]]) for i in range(7))
        for j in range(7):
            want = (C @ (M @ K[keys[b, j]])) * probe.log_temperature.exp()
            torch.testing.assert_close(scores[b, j], want, rtol=1e-9, atol=1e-9)


def test_a_sequences_pairs_are_distinct_keys_and_values():
    keys, values = ap._batch(50, 9, 12, 10, torch.Generator().manual_seed(0))
    assert all(len(set(r.tolist())) == 9 for r in keys) and all(len(set(r.tolist())) == 9 for r in values)
    assert keys.max() < 12 and values.max() < 10


def test_the_trained_probe_doubles_its_steps_until_the_capacity_holds_still():
    df = ap.trained_argmax_probe("linear", 8, 8, [1, 2, 4, 8], n_keys=32, n_values=32, steps=100, max_steps=3200,
                                 feature_map="identity", memory_options={"normalize": "none"}, lr=0.03)
    budgets = sorted(df.max_steps.unique())
    assert budgets == [100 * 2 ** i for i in range(len(budgets))]      # each budget twice the last
    last = df[df.max_steps == budgets[-1]]
    if last.converged.iloc[0]:
        prev = df[df.max_steps == budgets[-2]]
        assert ap._close(prev.capacity.iloc[0], last.capacity.iloc[0])
        assert abs(prev.accuracy.mean() - last.accuracy.mean()) < ap.STILL
    else:
        assert budgets[-1] * 2 > 3200                                   # it ran out, and says so
    assert (df.state_floats == 64).all() and last.capacity.iloc[0] >= 1  # an 8 x 8 state holds a pair at least


def test_bad_inputs_are_refused_before_training():
    with pytest.raises(ValueError, match="d_value"):
        ap.trained_argmax_probe("linear", 4, 0, [1])
    with pytest.raises(ValueError, match="at most min"):
        ap.trained_argmax_probe("linear", 4, 4, [64], n_keys=32, n_values=32)
    with pytest.raises(ValueError, match="steps"):
        ap.trained_argmax_probe("linear", 4, 4, [1], steps=10, max_steps=5)
