"""The probe tasks of issue 16, each checked against an independent reader written here."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalsuite.errors import ConfigError
from evalsuite.resolve import resolve
from evalsuite import tasks

SETTINGS = settings(max_examples=20, deadline=None)
IGN = -100


def graded(batch, i):
    return [(j, t) for j, t in enumerate(batch.targets[i].tolist()) if t != IGN]


@SETTINGS
@given(D=st.integers(1, 6), P=st.integers(1, 4), extra=st.integers(0, 20), seed=st.integers(0, 10**6))
def test_repeated_context_writes_every_pass_the_same_and_queries_once(D, P, extra, seed):
    T = 2 * D * (P + 1) + extra
    task = tasks.get("recall", vocab_size=4 * D + 4, seq_len=T, num_kv_pairs=D, num_passes=P)
    b = task.generate(6, seed)
    for i in range(6):
        seq = b.inputs[i].tolist()
        passes = [seq[2 * D * j:2 * D * (j + 1)] for j in range(P)]
        assert all(p == passes[0] for p in passes)
        pairs = dict(zip(passes[0][0::2], passes[0][1::2]))
        hits = graded(b, i)
        assert len(hits) == D and all(j >= 2 * D * P for j, _ in hits)
        assert [t for _, t in hits] == [pairs[seq[j]] for j, _ in hits]
        for j, _ in hits:  # answers point at the value in the last pass
            a = int(b.answers[i, j])
            assert 2 * D * (P - 1) < a < 2 * D * P and seq[a] == pairs[seq[j]]
    assert task.context_chance(b) == pytest.approx(1 / D)


def test_one_pass_keeps_the_run_ids_of_existing_recall_runs():
    """num_passes joined the task after runs were stored: at its default it is left out of the config."""
    section = resolve("recall", "softmax").as_dict()["task"]
    assert "num_passes" not in section and resolve("recall", "softmax").run_id == resolve(
        "recall", "softmax", overrides={"task.num_passes": 1}).run_id
    assert resolve("recall", "softmax", preset="jrt").as_dict()["task"]["num_passes"] == 2
    model = resolve("recall", "delta").as_dict()["model"]
    assert "negative_eigenvalues" not in model
    assert resolve("recall", "delta", overrides={"model.negative_eigenvalues": True}).model.mixer.negative_eigenvalues


@SETTINGS
@given(V=st.integers(3, 20), T=st.integers(4, 80), seed=st.integers(0, 10**6))
def test_induction_target_is_the_token_after_the_earlier_trigger(V, T, seed):
    b = tasks.get("induction", vocab_size=V, seq_len=T).generate(8, seed)
    for i in range(8):
        seq = b.inputs[i].tolist()
        triggers = [j for j, x in enumerate(seq) if x == V - 1]
        assert len(triggers) == 2 and triggers[1] == T - 1
        assert graded(b, i) == [(T - 1, seq[triggers[0] + 1])]
        assert b.meta["distance_bin"][i] == int(np.log2(T - 1 - triggers[0]))


def read_chains(tokens, task):
    """Parse ``VAR name = rhs`` statements left to right; return name -> (value, hops)."""
    v0 = task.value0
    bound = {}
    for j in range(len(tokens) - 3):
        if tokens[j] == 1 and tokens[j + 2] == 2:
            name, rhs = tokens[j + 1], tokens[j + 3]
            bound[name] = (rhs, 0) if v0 <= rhs < v0 + task.params.num_values else (bound[rhs][0], bound[rhs][1] + 1)
    return bound


@SETTINGS
@given(C=st.integers(1, 4), H=st.integers(0, 4), extra=st.integers(0, 40), seed=st.integers(0, 10**6))
def test_multihop_answer_is_the_value_reached_by_following_the_links(C, H, extra, seed):
    T = 4 * C * (H + 1) + 2 + extra
    task = tasks.get("multihop", seq_len=T, num_chains=C, hops=H, num_names=C * (H + 1) + 3, num_values=C + 2,
                     filler_vocab=3)
    b = task.generate(8, seed)
    for i in range(8):
        seq = b.inputs[i].tolist()
        assert seq[-2] == 3
        bound = read_chains(seq[:-2], task)
        value, hops = bound[seq[-1]]
        assert graded(b, i) == [(T - 1, value)]
        assert b.meta["hop"][i] == hops and seq[int(b.answers[i, -1])] == value
        values = {v for v, _ in bound.values()}
        assert len(values) == C  # distinct chain values: the floor is 1/C
    assert task.context_chance(b) == pytest.approx(1 / C)


def items(tokens, K):
    """Split a padded sequence into (key tuple, value tuple) items by token kind."""
    out, j = [], 0
    tokens = [t for t in tokens if t != 0]
    while j < len(tokens):
        k = j
        while k < len(tokens) and tokens[k] <= K:
            k += 1
        v = k
        while v < len(tokens) and tokens[v] > K:
            v += 1
        out.append((tuple(tokens[j:k]), tuple(tokens[k:v]), j))
        j = v
    return out


@SETTINGS
@given(P=st.integers(1, 6), Q=st.integers(1, 6), kl=st.integers(1, 3), vl=st.integers(1, 3), extra=st.integers(0, 9),
       seed=st.integers(0, 10**6))
def test_fuzzy_recall_targets_are_the_queried_keys_values(P, Q, kl, vl, extra, seed):
    Q = min(P, Q)
    T = (P + Q) * (kl + vl) + extra
    K = 6
    b = tasks.get("fuzzy_recall", num_key_tokens=K, num_value_tokens=5, num_pairs=P, num_queries=Q, max_key_len=kl,
                  max_value_len=vl, seq_len=T).generate(6, seed)
    for i in range(6):
        its = items(b.inputs[i].tolist(), K)
        assert len(its) == P + Q
        context = {key: (val, start) for key, val, start in its[:P]}
        keys = list(context)
        assert not any(a != c and a == c[:len(a)] for a in keys for c in keys)  # no key begins another
        expect = []
        for key, val, start in its[P:]:
            assert context[key][0] == val
            expect += [(start + len(key) - 1 + m, t) for m, t in enumerate(val)]
        assert graded(b, i) == expect


def test_memorize_map_is_fixed_and_never_in_the_context():
    task = tasks.get("memorize", vocab_size=32, seq_len=16)
    seen = {}
    for seed in (0, 1, 2):
        b = task.generate(20, seed)
        for row, tgt in zip(b.inputs.tolist(), b.targets.tolist()):
            keys = row[0::2]
            assert len(set(keys)) == len(keys)  # distinct keys: the context never answers a query
            for j, k in enumerate(keys):
                assert tgt[2 * j] == row[2 * j + 1]
                assert seen.setdefault(k, row[2 * j + 1]) == row[2 * j + 1]  # one map across seeds and splits
    other = tasks.get("memorize", vocab_size=32, seq_len=16, map_seed=1).mapping()
    assert (other != task.mapping()).any()


def compose(a, b):
    return tuple(a[i] for i in b)


@SETTINGS
@given(group=st.sampled_from(["Z2", "S3", "A5", "S5"]), T=st.integers(1, 40), seed=st.integers(0, 10**6))
def test_word_problem_targets_are_running_products(group, T, seed):
    n = {"Z2": 2, "S3": 3, "A5": 5, "S5": 5}[group]
    perms = sorted(itertools.permutations(range(n)))
    if group == "A5":
        perms = [p for p in perms if sum(1 for i in range(n) for j in range(i) if p[j] > p[i]) % 2 == 0]
    task = tasks.get("word_problem", group=group, seq_len=T)
    assert task.vocab_size == {"Z2": 2, "S3": 6, "A5": 60, "S5": 120}[group]
    b = task.generate(4, seed)
    for i in range(4):
        acc = tuple(range(n))
        for t, g in enumerate(b.inputs[i].tolist()):
            acc = compose(acc, perms[g])
            assert perms[int(b.targets[i, t])] == acc
    if group == "Z2":
        x = b.inputs.numpy()
        assert (b.targets.numpy() == np.cumsum(x, axis=1) % 2).all()  # parity


@SETTINGS
@given(T=st.integers(2, 60).map(lambda x: 2 * x), p=st.sampled_from([0.0, 0.5, 0.8, 0.98]), seed=st.integers(0, 10**6))
def test_flipflop_reads_return_the_last_written_bit(T, p, seed):
    b = tasks.get("flipflop", seq_len=T, p_ignore=p).generate(6, seed)
    names = ["0", "1", "w", "i", "r"]
    for i in range(6):
        seq = [names[x] for x in b.inputs[i].tolist()]
        assert seq[0] == "w" and seq[-2] == "r"
        register, expect, last_write = None, [], None
        for j in range(0, T, 2):
            op, bit = seq[j], int(seq[j + 1])
            if op == "w":
                register, last_write = bit, j
            elif op == "r":
                assert bit == register
                expect.append((j, register))
        assert graded(b, i) == expect
        assert b.meta["distance_bin"][i] == int(np.log2(T - 2 - last_write))


@pytest.mark.parametrize("name, params, message", [
    ("recall", dict(num_kv_pairs=8, seq_len=64, num_passes=4), "2 x (num_passes + 1) x num_kv_pairs = 80"),
    ("multihop", dict(num_chains=4, hops=3, num_names=10), "num_names >= num_chains x (hops + 1) = 16"),
    ("multihop", dict(seq_len=20), "seq_len >= 26"),
    ("fuzzy_recall", dict(num_queries=9, num_pairs=8), "num_queries <= num_pairs"),
    ("fuzzy_recall", dict(seq_len=40), "seq_len >= (num_pairs + num_queries)"),
    ("fuzzy_recall", dict(num_pairs=9, num_key_tokens=8), "num_pairs <= num_key_tokens"),
    ("memorize", dict(seq_len=15), "even seq_len"),
    ("flipflop", dict(seq_len=15), "even seq_len"),
    ("word_problem", dict(group="S4"), "task.group"),
])
def test_impossible_probe_parameters_are_refused(name, params, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)").replace("+", r"\+")):
        resolve(name, "softmax", overrides={f"task.{k}": v for k, v in params.items()})


def test_eval_segment_test_sizes_and_extrapolation_presets():
    config = resolve("induction", "delta").as_dict()
    assert config["model"]["positions"] == "none"  # test lengths exceed training: no learned positions
    assert [s.get("num_test") for s in config["task"]["eval_segments"]] == [None, None, 200]
    from evalsuite.train import make_data
    small = resolve("induction", "softmax", overrides={"task.eval_segments": [{"seq_len": 128, "num_test": 7}],
                                                            "train.num_train": 64, "train.num_val": 8, "train.num_test": 9})
    data, evals = make_data(small.task, small.train, 0, splits=("test",))
    assert len(data["test"]) == 9 and len(evals[0]) == 7 and evals[0].inputs.shape[1] == 128
    for bad in (0, 1.5, True):
        with pytest.raises(ConfigError, match=r"task.eval_segments\[0\].num_test"):
            resolve("induction", "softmax", overrides={"task.eval_segments": [{"seq_len": 128, "num_test": bad}]})
    with pytest.raises(ConfigError, match="learned positions"):
        resolve("induction", "softmax", overrides={"model.positions": "learned"})
