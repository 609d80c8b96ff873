"""Every generator checked against an independent reader written here, on random parameters."""
import json
import re

import numpy as np
import pytest
import torch
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from evalsuite.errors import ConfigError
from evalsuite.resolve import resolve
from evalsuite import tasks
from evalsuite.cli import main
from evalsuite.train import make_data

SETTINGS = settings(max_examples=20, deadline=None)
IGN = -100


def graded(batch, i):
    return [(j, t) for j, t in enumerate(batch.targets[i].tolist()) if t != IGN]


@SETTINGS
@given(symbols=st.integers(1, 12), lo=st.integers(1, 8), span=st.integers(0, 8), extra=st.integers(0, 6),
       seed=st.integers(0, 10**6))
def test_copy_targets_equal_the_source(symbols, lo, span, extra, seed):
    hi = lo + span
    task = tasks.get("copy", num_symbols=symbols, min_len=lo, max_len=hi, seq_len=2 * hi + 2 + extra)
    batch = task.generate(8, seed)
    for i in range(8):
        seq = batch.inputs[i].tolist()
        L = seq.index(0)  # the first separator ends the word
        word = seq[:L]
        assert lo <= L <= hi == task.params.max_len and L == batch.meta["length"][i]
        assert all(1 <= w <= symbols for w in word)
        assert [t for _, t in graded(batch, i)] == word + [0]  # the copy, then its separator
        assert seq[L + 1:2 * L + 1][:L - 1] == word[:L - 1]  # the copy is teacher-forced
        assert [j for j, _ in graded(batch, i)] == list(range(L, 2 * L + 1))


@SETTINGS
@given(V=st.integers(3, 20), N=st.integers(1, 10), extra=st.integers(0, 30), seed=st.integers(0, 10**6))
def test_selective_copy_targets_are_the_data_tokens_in_order(V, N, extra, seed):
    T = 2 * N + 1 + extra
    batch = tasks.get("selective_copy", vocab_size=V, seq_len=T, num_tokens=N).generate(8, seed)
    for i in range(8):
        seq = batch.inputs[i].tolist()
        copy_at = seq.index(V - 1)
        assert copy_at == T - N - 1
        data = [t for t in seq[:copy_at] if t != V - 2]
        assert len(data) == N
        assert [t for _, t in graded(batch, i)] == data
        assert all(t == V - 2 for t in seq[copy_at + 1:])


@SETTINGS
@given(T=st.integers(24, 90), depth=st.one_of(st.none(), st.floats(0, 1)), hay=st.sampled_from(["random", "repeat"]),
       distractors=st.integers(0, 3), values=st.integers(1, 3), queries=st.integers(1, 2), seed=st.integers(0, 10**6))
def test_needle_answers_follow_their_key_after_a_marker(T, depth, hay, distractors, values, queries, seed):
    params = dict(seq_len=T, depth=depth, haystack=hay, num_keys=8, num_values=8, filler_vocab=8,
                  num_distractors=distractors, values_per_key=values, num_queries=queries)
    try:
        task = tasks.get("needle", **params)
    except ValueError:
        return  # too short for this many needles: refused, which another test checks
    MARK = 1
    batch = task.generate(6, seed)
    tail = queries * (values + 1)
    for i in range(6):
        seq = batch.inputs[i].tolist()
        hay_part = seq[:T - tail]
        needles = [(hay_part[j + 1], hay_part[j + 2]) for j in range(len(hay_part) - 2) if hay_part[j] == MARK]
        assert len(needles) == queries * values + distractors
        assert hay_part.count(MARK) == len(needles)
        marks = [j for j in range(T - tail, T) if seq[j] == MARK]
        assert len(marks) == queries
        answers = dict(graded(batch, i))
        for j in marks:
            key = seq[j + 1]
            expected = [v for k, v in needles if k == key]
            assert len(expected) == values  # each (key, value) needle occurs exactly once
            assert [answers[j + 1 + m] for m in range(values)] == expected
        if depth is not None and hay == "repeat" and distractors == 0 and values == 1 and queries == 1:
            start = hay_part.index(MARK)
            assert abs(start - round(depth * (len(hay_part) - 3))) <= 1


def lra_evaluate(tokens):
    """A separate ListOps evaluator: a stack machine over the decoded tokens."""
    stack = [[]]
    for tok in tokens:
        if tok.startswith("["):
            stack.append([tok])
        elif tok == "]":
            op, *args = stack.pop()
            value = {"[MIN": min, "[MAX": max, "[MED": lambda a: int(np.median(a)), "[SM": lambda a: sum(a) % 10}[op](args)
            stack[-1].append(value)
        else:
            stack[-1].append(int(tok))
    (value,) = stack[0]
    return value


@settings(max_examples=8, deadline=None)
@given(depth=st.integers(3, 5), args=st.integers(2, 4), seed=st.integers(0, 10**6))
def test_listops_labels_match_a_separate_evaluator(depth, args, seed):
    task = tasks.get("listops", max_depth=depth, max_args=args, min_length=4, max_length=40)
    batch = task.generate(30, seed)
    exprs = set()
    for i in range(30):
        tokens = [t for t in task.decode(batch.inputs[i]) if t != "_"]
        assert tokens[-1] == "="
        expr = tokens[:-1]
        assert 4 < len(expr) < 40 and len(expr) == batch.meta["length"][i]
        exprs.add(tuple(expr))
        ((pos, label),) = graded(batch, i)
        assert pos == len(expr)
        assert task.decode([label]) == [str(lra_evaluate(expr))]
    assert len(exprs) == 30  # duplicates removed


def test_listops_set_is_cached_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALSUITE_CACHE", str(tmp_path / "cache"))
    task = tasks.get("listops", **tasks.TASKS.get("listops").presets["tiny"])
    first = task.generate(20, 3)
    files = list((tmp_path / "cache" / "listops").glob("*.npz"))
    assert len(files) == 1
    again = task.generate(20, 3)
    assert torch.equal(first.inputs, again.inputs) and torch.equal(first.targets, again.targets)


@SETTINGS
@given(V=st.sampled_from([8, 16, 32]), T=st.sampled_from([8, 32, 64]), noise=st.sampled_from([0.0, 0.3]),
       seed=st.integers(0, 10**6))
def test_mad_recall_scores_only_recallable_values(V, T, noise, seed):
    task = tasks.get("recall_mad", vocab_size=V, seq_len=T, noise_fraction=noise)
    batch = task.generate(8, seed)
    half = V // 2
    for i in range(8):
        seq = batch.inputs[i].tolist()
        memory, expected_scored = {}, []
        for j in range(0, T, 2):
            k, v = seq[j], seq[j + 1]
            if k >= V:  # noise item
                assert v >= V
                continue
            assert 0 <= k < half <= v < V
            if k in memory:
                assert memory[k] == v, "a key keeps its value"
                expected_scored.append(j)
            memory[k] = v
        assert batch.score_mask[i].nonzero()[:, 0].tolist() == expected_scored
        assert T - 2 in expected_scored, "the final item probes a key seen before"
        assert batch.targets[i, :-1].tolist() == seq[1:], "trained on every next token"


def test_recall_filler_options():
    V = 64
    disjoint = tasks.get("recall", vocab_size=V, seq_len=64, num_kv_pairs=4, random_non_queries=True, filler_vocab=16)
    assert disjoint.vocab_size == V + 16
    b = disjoint.generate(50, 0)
    body = b.inputs[:, 8:][b.targets[:, 8:] == IGN]
    assert (body >= V).all() and (b.meta["filler_collisions"] == 0).all()

    mixed = tasks.get("recall", vocab_size=V, seq_len=64, num_kv_pairs=4, random_non_queries=True)
    b = mixed.generate(200, 0)
    for i in range(200):
        seq, tgt = b.inputs[i].tolist(), b.targets[i].tolist()
        keys = set(seq[0:8:2])
        count = sum(1 for j in range(8, 64) if tgt[j] == IGN and seq[j] in keys)
        assert b.meta["filler_collisions"][i] == count
    assert b.meta["filler_collisions"].sum() > 0


@pytest.mark.parametrize("name, params, message", [
    ("copy", dict(min_len=10, max_len=5), "min_len <= max_len"),
    ("copy", dict(max_len=62, seq_len=100), "seq_len >= 2 x max_len + 2"),
    ("selective_copy", dict(seq_len=20, num_tokens=16), "seq_len >= 2 x num_tokens + 1"),
    ("needle", dict(seq_len=10, num_distractors=3), "needle needs seq_len >="),
    ("needle", dict(depth=1.5), "depth"),
    ("needle", dict(num_keys=2, num_distractors=2), "num_keys >= num_queries + num_distractors"),
    ("listops", dict(max_depth=2, max_args=3, min_length=50, max_length=80), "never longer than min_length"),
    ("recall_mad", dict(seq_len=15), "even seq_len"),
    ("fuzzy_recall_mad", dict(vocab_size=7, k_motif_size=4), "k_motif_size <= 3"),
    ("fuzzy_recall_mad", dict(seq_len=20), "seq_len >= 4 x (k_motif_size + v_motif_size) = 24"),
    ("recall", dict(vocab_size=8, num_kv_pairs=4, seq_len=16), "too few for num_kv_pairs"),
])
def test_impossible_parameters_are_refused(name, params, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        resolve(name, "softmax", overrides={f"task.{k}": v for k, v in params.items()})


def test_every_task_is_deterministic_and_decodes():
    for name in tasks.names():
        cls = tasks.TASKS.get(name)
        task = tasks.get(name, **cls.presets["tiny"])
        a, b = task.generate(4, 11), task.generate(4, 11)
        assert torch.equal(a.inputs, b.inputs) and torch.equal(a.targets, b.targets), name
        assert a.inputs.dtype == torch.long and a.targets.dtype == torch.long
        assert int(a.inputs.max()) < task.vocab_size
        assert len(task.decode(a.inputs[0])) == a.inputs.shape[1]
        assert {"published", "cpu"} & set(cls.presets) or len(cls.presets) >= 3


def test_mixture_and_eval_segments():
    config = resolve("recall", "softmax", preset="tiny", overrides={
        "task.segments": [{"seq_len": 16, "num_kv_pairs": 2, "share": 3}, {"seq_len": 32, "num_kv_pairs": 4}],
        "task.eval_segments": [{"seq_len": 32, "num_kv_pairs": 8}], "model.max_len": 32, "train.num_train": 400})
    data, evals = make_data(config.task, config.train, 0)
    pairs = data["train"].meta["num_kv_pairs"]
    assert (pairs == 2).sum() == 300 and (pairs == 4).sum() == 100
    assert data["train"].inputs.shape[1] == 32  # padded to the longest segment
    assert (evals[0].meta["num_kv_pairs"] == 8).all()

    with pytest.raises(ConfigError, match="exceeds the model's 32 learned positions"):
        resolve("recall", "softmax", preset="tiny", overrides={"task.eval_segments": [{"seq_len": 64, "num_kv_pairs": 8}]})
    with pytest.raises(ConfigError, match=r"task.segments\[0\].share"):
        resolve("recall", "softmax", preset="tiny", overrides={"task.segments": [{"share": -1}]})


def test_sample_prints_and_exports(tmp_path):
    res = CliRunner().invoke(main, ["sample", "--task", "recall", "--preset", "tiny", "-n", "2"])
    assert res.exit_code == 0 and res.output.count("## example") == 2 and "=>" in res.output
    out = tmp_path / "d.jsonl"
    assert CliRunner().invoke(main, ["sample", "--task", "needle", "-n", "3", "--out", str(out)]).exit_code == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 3 and len(rows[0]["inputs"]) == 128 and rows[0]["task"]["name"] == "needle"
    npz = tmp_path / "d.npz"
    assert CliRunner().invoke(main, ["sample", "--task", "copy", "-n", "3", "--out", str(npz)]).exit_code == 0
    assert np.load(npz)["inputs"].shape == (3, 32)
    bad = CliRunner().invoke(main, ["sample", "--task", "copy", "--out", str(tmp_path / "d.csv")])
    assert bad.exit_code == 2 and "--out" in bad.output
    assert CliRunner().invoke(main, ["sample", "--task", "needle", "--set", "depth=2"]).exit_code == 2


def _mad_items(tokens, half, pad):
    """A fuzzy MAD sequence parsed into (key, value, start of the value): maximal runs of key
    tokens, then of value tokens (the two vocabularies are disjoint, so the parse is exact)."""
    out, j = [], 0
    while j < len(tokens) and tokens[j] == pad:
        j += 1
    while j < len(tokens):
        k = j
        while k < len(tokens) and tokens[k] < half:
            k += 1
        v = k
        while v < len(tokens) and half <= tokens[v] < pad:
            v += 1
        assert k > j and v > k, "every item is a key run, then a value run"
        out.append((tuple(tokens[j:k]), tuple(tokens[k:v]), k))
        j = v
    return out


@SETTINGS
@given(V=st.sampled_from([10, 16, 33]), T=st.sampled_from([24, 64, 128]), km=st.integers(1, 3), vm=st.integers(1, 3),
       longest=st.booleans(), seed=st.integers(0, 10**6))
def test_mad_fuzzy_recall_grades_the_values_of_keys_seen_before(V, T, km, vm, longest, seed):
    task = tasks.get("fuzzy_recall_mad", vocab_size=V, seq_len=T, k_motif_size=km, v_motif_size=vm,
                     longest_keys=longest)
    batch = task.generate(6, seed)
    half, pad = (V - 1) // 2, V - 1
    assert task.answer_tokens() == (half, pad)
    for i in range(6):
        assert batch.targets[i, :-1].tolist() == batch.inputs[i, 1:].tolist(), "trained on every next token"
        tokens = batch.inputs[i].tolist() + [int(batch.targets[i, -1])]  # the whole sequence, shifted back
        items = _mad_items(tokens, half, pad)
        seen, expected = {}, []
        for n, (key, value, start) in enumerate(items):
            assert 1 <= len(value) <= vm and len(set(value)) == len(value)
            assert len(key) == km if longest else 1 <= len(key) <= km
            assert len(set(key)) == len(key), "a motif's tokens are distinct"
            last = n == len(items) - 1
            if key in seen:
                assert seen[key] == value, "a key keeps its value"
            if key in seen or last:
                expected += [start + m - 1 for m in range(len(value))]  # graded at the token before
            seen.setdefault(key, value)
        probe = items[-1][:2]
        assert bool(batch.meta["probe_planted"][i]) == (probe in [it[:2] for it in items[:-1]])
        assert batch.score_mask[i].nonzero()[:, 0].tolist() == expected


def test_mad_fuzzy_recall_baseline_is_mad_config():
    """configs/tasks/fuzzy-in-context-recall.yml: vocabulary 16, T 128, motifs of up to 3 tokens;
    keys [0, 7), values [7, 15), pad 15 (multi-query)."""
    task = tasks.get("fuzzy_recall_mad", **tasks.TASKS.get("fuzzy_recall_mad").presets["mad"])
    p = task.params
    assert (p.vocab_size, p.seq_len, p.k_motif_size, p.v_motif_size) == (16, 128, 3, 3)
    assert task.answer_tokens() == (7, 15) and task.vocab_size == 16
    batch = task.generate(400, 0)
    planted = batch.meta["probe_planted"].float().mean().item()
    assert 0.95 < planted < 1.0  # MAD's planted position can fall past the stream's end (the docstring's 2%)


def test_mad_fuzzy_recall_trains_on_its_tiny_preset_and_stores_its_floor():
    import evalsuite
    result = evalsuite.run("fuzzy_recall_mad", "softmax", preset="tiny", store=False)
    assert result.status == "done"
    floor = result.metrics["floor"]
    assert 0.0 < floor < 1.0 and 0.0 <= result.metrics["accuracy"] <= 1.0
