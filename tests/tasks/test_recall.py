"""MQAR checked against an independent brute-force reader of the token stream."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from evalsuite import tasks


def brute_force_check(inputs: torch.Tensor, targets: torch.Tensor, V: int, D: int, random_filler: bool):
    """Read each sequence token by token, as a person would, and check every graded answer."""
    for seq, tgt in zip(inputs.tolist(), targets.tolist()):
        memory = {}
        for j in range(0, 2 * D, 2):
            key, value = seq[j], seq[j + 1]
            assert 1 <= key < V // 2, "keys come from [1, V/2)"
            assert V // 2 <= value < V, "values come from [V/2, V)"
            assert key not in memory, "keys are distinct"
            memory[key] = value
        assert len(set(memory.values())) == D, "values are distinct"
        assert all(t == -100 for t in tgt[:2 * D]), "nothing graded inside the pairs"
        queried = []
        for i in range(2 * D, len(seq)):
            if tgt[i] != -100:
                assert (i - 2 * D) % 2 == 0, "queries sit at even offsets after the pairs"
                assert seq[i] in memory, "a query is a key that was written"
                assert tgt[i] == memory[seq[i]], "the answer is the value that followed the key"
                queried.append(seq[i])
            elif not random_filler:
                assert seq[i] == 0, "non-query positions are filler 0"
        assert sorted(queried) == sorted(memory), "each key is queried exactly once"


@settings(max_examples=25, deadline=None)
@given(D=st.integers(1, 12), extra=st.integers(0, 40), half=st.integers(0, 200), seed=st.integers(0, 2**31),
       random_filler=st.booleans())
def test_generator_matches_brute_force_reader(D, extra, half, seed, random_filler):
    T = 4 * D + 2 * (extra // 2)
    V = 2 * (D + 1) + 2 * half
    task = tasks.get("recall", vocab_size=V, seq_len=T, num_kv_pairs=D, random_non_queries=random_filler)
    batch = task.generate(16, seed)
    assert batch.inputs.dtype == torch.long and batch.inputs.shape == (16, T) == batch.targets.shape
    assert (batch.meta["num_kv_pairs"] == D).all()
    brute_force_check(batch.inputs, batch.targets, V, D, random_filler)


def test_same_seed_same_data_and_different_seed_different_data():
    task = tasks.get("recall", vocab_size=256, seq_len=64, num_kv_pairs=8)
    a, b, c = task.generate(100, 7), task.generate(100, 7), task.generate(100, 8)
    assert torch.equal(a.inputs, b.inputs) and torch.equal(a.targets, b.targets)
    assert not torch.equal(a.inputs, c.inputs)


def test_dense_key_sampling_path():
    # D close to the key range exercises the permutation path of sample_distinct
    task = tasks.get("recall", vocab_size=20, seq_len=40, num_kv_pairs=9)
    batch = task.generate(50, 0)
    brute_force_check(batch.inputs, batch.targets, 20, 9, False)


def test_query_gaps_follow_zoology_distribution():
    """Gap law p(g) ~ g^(a-1), drawn without replacement: compare with numpy's sequential sampler."""
    T, D, a = 64, 4, 0.01
    batch = tasks.get("recall", vocab_size=256, seq_len=T, num_kv_pairs=D, power_a=a).generate(4000, 0)
    pos = (batch.targets != -100).nonzero()[:, 1].numpy()
    ours = np.bincount((pos - 2 * D) // 2, minlength=(T - 2 * D) // 2) / pos.size
    space = (T - 2 * D) // 2
    p = a * np.arange(1, space + 1) ** (a - 1)
    p /= p.sum()
    rng = np.random.default_rng(0)
    ref = np.concatenate([rng.choice(space, size=D, replace=False, p=p) for _ in range(4000)])
    expected = np.bincount(ref, minlength=space) / ref.size
    assert np.abs(ours - expected).max() < 0.02
    assert ours[0] > ours[-1]  # most queries come early


def test_speed_target_is_reachable():
    """Not timed (no flaky timing tests): only that the published size generates without a per-token loop."""
    batch = tasks.get("recall", vocab_size=8192, seq_len=256, num_kv_pairs=16).generate(2000, 0)
    assert batch.inputs.shape == (2000, 256)


def test_bad_n():
    with pytest.raises(ValueError, match="n must be a positive"):
        tasks.get("recall").generate(0, 0)


@settings(max_examples=25, deadline=None)
@given(D=st.integers(1, 10), R=st.integers(0, 10), extra=st.integers(0, 20), seed=st.integers(0, 2**31))
def test_forgetting_mqar_answers_the_latest_binding(D, R, extra, seed):
    """Forgetting MQAR (``rebind``), read as a person would: every write in the context binds its key
    (a later write replaces the value), each key of the pairs is queried once, and the answer is the
    key's latest value; ``answers`` points at that value's position; R = 0 is plain MQAR."""
    R = min(R, D)
    V, T = 2 * (D + R + 1) + 10, 4 * D + 2 * R + 2 * (extra // 2)
    batch = tasks.get("recall", vocab_size=V, seq_len=T, num_kv_pairs=D, rebind=R).generate(16, seed)
    context = 2 * (D + R)
    for seq, tgt, ans in zip(batch.inputs.tolist(), batch.targets.tolist(), batch.answers.tolist()):
        memory, where, first = {}, {}, {}
        for j in range(0, context, 2):
            key, value = seq[j], seq[j + 1]
            assert 1 <= key < V // 2 <= value < V
            assert (key in memory) == (j >= 2 * D), "the first D writes are new keys, the rest rebind old ones"
            first.setdefault(key, value)
            memory[key], where[key] = value, j + 1
        values = seq[1:context:2]
        assert len(set(values)) == D + R, "every written value is distinct"
        assert sum(memory[k] != first[k] for k in memory) == R, "R keys were bound again"
        queried = []
        for i in range(context, T):
            if tgt[i] != -100:
                assert tgt[i] == memory[seq[i]] and ans[i] == where[seq[i]] and seq[ans[i]] == tgt[i]
                queried.append(seq[i])
            else:
                assert seq[i] == 0
        assert sorted(queried) == sorted(memory)
    if R == 0:  # the same examples as plain MQAR: existing runs keep their data
        plain = tasks.get("recall", vocab_size=V, seq_len=T, num_kv_pairs=D).generate(16, seed)
        assert torch.equal(plain.inputs, batch.inputs) and torch.equal(plain.targets, batch.targets)


def test_forgetting_mqar_refuses_what_it_cannot_lay_out():
    for params, message in [(dict(num_kv_pairs=4, rebind=5, seq_len=64), "at most num_kv_pairs"),
                            (dict(num_kv_pairs=8, rebind=4, seq_len=32), r"4 x num_kv_pairs \+ 2 x rebind"),
                            (dict(num_kv_pairs=4, rebind=2, num_passes=2, seq_len=64), "num_passes 1 only")]:
        with pytest.raises(ValueError, match=message):
            tasks.get("recall", vocab_size=64, **params)


def test_one_long_training_length_warns_and_the_mixture_presets_do_not():
    """Zoology issue 24: recall trained only on very long sequences learned nothing; the mixture
    presets (CPU and Zoology scale) train on short and long lengths and test on longer ones."""
    from evalsuite.resolve import resolve
    from evalsuite.tasks.base import long_only_warning

    assert "issue 24" in long_only_warning([tasks.get("recall", vocab_size=1024, seq_len=1024, num_kv_pairs=64)])
    assert long_only_warning([tasks.get("recall", seq_len=64)]) is None
    for preset, longest in (("mixture", 512), ("zoology-mixture", 1024)):
        spec = resolve("recall", "linear", preset=preset).task
        assert len(spec.train_tasks) > 1 and long_only_warning(spec.train_tasks) is None
        trained = max(t.params.seq_len for t in spec.train_tasks)
        assert max(t.params.seq_len for t, _ in spec.evals) == longest >= 4 * trained
