"""Chance floors against brute-force readers, answer positions from the generator, the learning-
rate schedule, and the undertrained rule on synthetic histories."""
import math

import numpy as np
import pytest
import torch

from evalsuite import tasks
from evalsuite.analysis import answer_positions
from evalsuite.tasks import IGNORE
from evalsuite.records import against_floor, convergence_note
from evalsuite.train import convergence, lr_factor


def brute_floor(batch, lo, hi):
    """Accuracy of answering a random distinct candidate from the context, one position at a time."""
    hits, total = 0.0, 0
    x, y, m = batch.inputs.tolist(), batch.targets.tolist(), batch.score_mask.tolist()
    for b in range(len(x)):
        for t in range(len(x[b])):
            if not m[b][t]:
                continue
            total += 1
            seen = {tok for tok in x[b][:t + 1] if lo <= tok < hi}
            if y[b][t] in seen:
                hits += 1 / len(seen)
    return hits / total


@pytest.mark.parametrize("D", [1, 4, 16])
def test_mqar_floor_is_one_over_d(D):
    task = tasks.get("recall", vocab_size=256, seq_len=128, num_kv_pairs=D)
    batch = task.generate(50, 0)
    assert task.context_chance(batch) == pytest.approx(1 / D)
    V = 256  # brute force: every value of the context is a candidate
    assert brute_floor(batch, V // 2, V) == pytest.approx(1 / D)


def test_mqar_floor_of_a_mixture_weights_each_query():
    from evalsuite.tasks.base import Batch
    a = tasks.get("recall", vocab_size=256, seq_len=64, num_kv_pairs=4).generate(10, 0)
    b = tasks.get("recall", vocab_size=256, seq_len=64, num_kv_pairs=16).generate(10, 1)
    mix = Batch.concat([a, b])
    expected = (40 * (1 / 4) + 160 * (1 / 16)) / 200
    assert tasks.get("recall").context_chance(mix) == pytest.approx(expected)


@pytest.mark.parametrize("name, params", [
    ("needle", dict(seq_len=64, num_distractors=3)), ("needle", dict(seq_len=64, values_per_key=2)),
    ("recall_mad", dict(vocab_size=16, seq_len=32)), ("selective_copy", dict(vocab_size=16, seq_len=48, num_tokens=8)),
    ("copy", dict()), ("fuzzy_recall_mad", dict(vocab_size=16, seq_len=64)),
], ids=["needle-multikey", "needle-multivalue", "mad", "selective-copy", "copy", "mad-fuzzy"])
def test_context_floors_match_a_brute_force_reader(name, params):
    task = tasks.get(name, **params)
    batch = task.generate(40, 3)
    lo, hi = task.answer_tokens()
    assert task.context_chance(batch) == pytest.approx(brute_floor(batch, lo, hi))


def test_single_needle_floor_is_one_and_listops_floor_is_the_majority_rate():
    task = tasks.get("needle", seq_len=64)
    assert task.context_chance(task.generate(30, 0)) == pytest.approx(1.0)  # the only value there is the answer
    listops = tasks.get("listops", **tasks.TASKS.get("listops").presets["tiny"])
    batch = listops.generate(200, 0)
    targets = batch.targets[batch.score_mask]
    assert listops.context_chance(batch) == pytest.approx(float(torch.bincount(targets).max()) / targets.numel())


@pytest.mark.parametrize("name, params", [
    ("recall", dict(vocab_size=64, seq_len=64, num_kv_pairs=8, random_non_queries=True)),
    ("needle", dict(seq_len=96, num_distractors=2, num_queries=2, values_per_key=2)),
], ids=["mqar-random-filler", "needle-multi"])
def test_answer_positions_come_from_the_generator(name, params):
    task = tasks.get(name, **params)
    batch = task.generate(64, 5)
    pos = answer_positions(batch.inputs, batch.targets, batch.answers)
    graded = batch.targets != IGNORE
    assert (pos[graded] >= 0).all() and (pos[~graded] == -1).all()
    # the recorded position holds the answer, and it is the queried pair's value: the token before is its key
    rows = graded.nonzero()
    assert torch.equal(batch.inputs[rows[:, 0], pos[graded]], batch.targets[graded])
    if name == "recall":
        assert torch.equal(batch.inputs[rows[:, 0], pos[graded] - 1], batch.inputs[rows[:, 0], rows[:, 1]])
        # with random filler, searching for the target token can pick a later copy; the generator's record does not
        searched = answer_positions(batch.inputs, batch.targets)
        assert (searched[graded] >= pos[graded]).all()


def test_wsd_schedule_holds_the_peak_until_the_decay():
    f = lr_factor(1000, 0.05, "wsd", 0.2)
    assert f(0) == pytest.approx(1 / 50) and f(49) == pytest.approx(1.0)
    assert all(f(s) == 1.0 for s in range(50, 800))
    assert f(900) == pytest.approx(1 - 0.9 * 0.5) and f(999) == pytest.approx(0.1, abs=0.01)
    cos = lr_factor(1000, 0.05, "cosine")
    assert cos(500) < 0.7  # cosine has annealed long before the end: what hid MQAR's late jumps
    assert lr_factor(1000, 0.05, "constant")(999) == 1.0


def history(vals, budget):
    steps = np.linspace(budget / len(vals), budget, len(vals)).round().astype(int)
    return [{"step": int(s), "val_accuracy": v} for s, v in zip(steps, vals)]


def test_undertrained_rule_on_synthetic_histories():
    # plateau at chance, then a late climb that the budget cut off: undertrained
    late = history([0.12] * 14 + [0.13, 0.2, 0.4, 0.6, 0.7, 0.8], 1000)
    c = convergence(late, 1000, 0.99)
    assert c["stopped"] == "budget" and c["undertrained"] and c["last_quarter_gain"] > 0.5
    assert "UNDERTRAINED" in convergence_note({"stopped": "budget", "undertrained": True, "last_quarter_gain": 0.6})
    # flat at chance: not undertrained by this rule (the 4x rerun of `reproduce` is what tests a plateau)
    flat = history([0.125] * 20, 1000)
    c = convergence(flat, 1000, 0.99)
    assert not c["undertrained"]
    note = convergence_note({"stopped": "budget", "undertrained": False, "last_quarter_gain": 0.0,
                             "accuracy": 0.126, "context_chance": 0.125})
    assert "at the floor (0.126 against 0.125)" in note and "4x" in note
    # reached the target early
    done = history([0.5, 0.9, 0.995], 300)
    assert convergence(done, 1000, 0.99) == {"stopped": "target", "undertrained": False, "last_quarter_gain": 0.0}
    # gains of less than the threshold at the end do not count
    assert not convergence(history([0.9] * 15 + [0.905] * 5, 1000), 1000, 0.99)["undertrained"]
    assert math.isnan(convergence([], 10, 0.99)["last_quarter_gain"])


@pytest.mark.parametrize("acc, floor, words", [
    (0.0195, 0.25, "below the floor"),   # the tiny preset's MQAR run against a chance rule of 1/4
    (0.4141, 0.625, "below the floor"),  # was tagged "(at floor)" in the runs table
    (0.60, 0.625, "at the floor"),       # within 0.05 either side
    (0.674, 0.625, "at the floor"),
    (0.676, 0.625, "above the floor"),
], ids=["far-below", "below", "just-under", "just-over", "above"])
def test_words_against_the_floor_match_the_numbers(acc, floor, words):
    assert against_floor(acc, floor) == words
    note = convergence_note({"stopped": "budget", "undertrained": False, "last_quarter_gain": 0.0, "accuracy": acc,
                             "floor": floor})
    assert (words in note) == (words != "above the floor")
