"""Compositional MQAR read as a person would (a dictionary of compound keys), its floor by the
readers (one key token's values: 1/sqrt(D)), and its refusals."""
import math

import pytest
import torch
from hypothesis import given, settings, strategies as st

from evalsuite import tasks
from evalsuite.tasks.readers import floor


@settings(max_examples=25, deadline=None)
@given(side=st.integers(1, 4), extra=st.integers(0, 10), seed=st.integers(0, 2**31))
def test_every_query_answers_its_compound_key(side, extra, seed):
    D = side * side
    V, T = 3 * D + 12, 6 * D + 2 * extra
    batch = tasks.get("compositional_recall", vocab_size=V, seq_len=T, num_kv_pairs=D).generate(16, seed)
    third = V // 3
    for seq, tgt, ans in zip(batch.inputs.tolist(), batch.targets.tolist(), batch.answers.tolist()):
        memory, where = {}, {}
        for j in range(0, 3 * D, 3):
            a, b, v = seq[j:j + 3]
            assert 1 <= a < third <= b < 2 * third <= v < V
            assert (a, b) not in memory
            memory[a, b], where[a, b] = v, j + 2
        firsts, seconds = {a for a, _ in memory}, {b for _, b in memory}
        assert len(firsts) == len(seconds) == side and set(memory) == {(a, b) for a in firsts for b in seconds}
        assert len(set(memory.values())) == D, "every value distinct: no key token alone names one"
        asked = []
        for t in range(3 * D, T):
            if tgt[t] != -100:
                key = (seq[t - 1], seq[t])
                assert tgt[t] == memory[key] and ans[t] == where[key] and seq[ans[t]] == tgt[t]
                asked.append(key)
        assert sorted(asked) == sorted(memory), "each compound key queried once"


@pytest.mark.parametrize("D", [4, 16])
def test_the_floor_is_one_key_tokens_values(D):
    task = tasks.get("compositional_recall", vocab_size=256, seq_len=8 * D, num_kv_pairs=D)
    test, train = task.generate(400, 1), task.generate(400, 2)
    value, reader, scores = floor(task, test, train)
    assert reader == "one_key" and value == pytest.approx(1 / math.sqrt(D), abs=1e-9)
    assert scores["random_context"] < value and scores["chance_rule"] == pytest.approx(1 / D)


def test_compositional_recall_refuses_what_it_cannot_lay_out():
    for params, message in [(dict(num_kv_pairs=6), "perfect square"), (dict(num_kv_pairs=16, seq_len=64), "6 x num_kv_pairs"),
                            (dict(seq_len=63), "even seq_len"), (dict(vocab_size=12, num_kv_pairs=9, seq_len=64), "too few")]:
        with pytest.raises(ValueError, match=message):
            tasks.get("compositional_recall", **params)
