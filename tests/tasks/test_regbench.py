"""RegBench: the automata as seq_icl draws them, the true next-token distribution against a
brute-force walk, validity-graded accuracy and TVD, the n-gram floors."""
import numpy as np
import pytest
import torch

from evalsuite import tasks
from evalsuite.tasks import readers
from evalsuite.train.evaluate import evaluate


def _walk(x, trans, longest):
    """Brute force, one example, float64: the distribution after each input position."""
    V = trans.shape[1]
    out, state, length = [], 0, 0
    for tok in x:
        if tok == 1:
            state, length = 0, 0
        else:
            state, length = int(trans[state, tok]), length + 1
        allowed = [v for v in range(V) if trans[state, v] >= 0]
        end = 1.0 / (longest - length)
        p = np.zeros(V)
        for v in allowed:
            p[v] = (1 - end) / len(allowed)
        p[1] = end
        out.append(p)
    return np.array(out)


def test_automata_are_drawn_as_seq_icl_draws_them():
    task = tasks.get("regbench", max_states=8, max_out_edges=4, vocab_size=16)
    b = task.generate(400, 0)
    trans = b.meta["transitions"].numpy()
    for i in range(400):
        k = int(b.meta["states"][i])
        assert 2 <= k < 8
        used = trans[i] >= 0
        assert not used[k:].any()                                          # only its own states
        degree = used[:k].sum(1)
        assert (degree >= 1).all() and (degree < min(4, k)).all() if k > 2 else (degree == 1).all()
        assert len(set(np.flatnonzero(used.any(0)))) <= k                   # an alphabet of k symbols
        assert (trans[i][used] < k).all() and not used[:, :2].any()         # to its states; never pad or |


def test_next_distribution_is_the_brute_force_walk_and_every_sampled_token_is_possible():
    task = tasks.get("regbench", seq_len=64, max_word_len=6)
    b = task.generate(50, 3)
    dist = task.next_distribution(b).double().numpy()
    for i in range(50):
        ref = _walk(b.inputs[i].tolist(), b.meta["transitions"][i].numpy(), 6)
        np.testing.assert_allclose(dist[i], ref, atol=1e-6)
    p = np.take_along_axis(dist, b.targets.numpy()[..., None], 2)[..., 0]
    assert (p > 0).all()                                                   # the sampler only takes allowed steps
    np.testing.assert_allclose(dist.sum(-1), 1, atol=1e-6)


def test_string_lengths_are_uniform_below_max_word_len():
    b = tasks.get("regbench", seq_len=512, max_word_len=5).generate(200, 1)
    tokens = torch.cat([b.inputs, b.targets[:, -1:]], 1).tolist()
    lengths = []
    for row in tokens:
        seps = [t for t, tok in enumerate(row) if tok == 1]
        lengths += [b - a - 1 for a, b in zip(seps, seps[1:])]             # whole strings between separators
    counts = np.bincount(lengths, minlength=5)
    assert len(counts) == 5 and np.allclose(counts / counts.sum(), 0.2, atol=0.03)


def test_graded_where_a_symbol_comes_next_and_the_separator_is_never_right():
    task = tasks.get("regbench")
    b = task.generate(100, 0)
    assert torch.equal(b.score_mask, b.targets >= 2)
    valid = task.valid_tokens(b)
    assert not valid[..., 1].any() and valid.gather(2, b.targets[..., None])[..., 0][b.score_mask].all()
    always_sep = readers.accuracy("first", b, (0, task.vocab_size), {}, {"first": lambda x, pos, s, f: [{1}] * len(pos)},
                                  valid.numpy())
    assert always_sep == 0


def test_the_in_context_ngram_reader_reads_what_followed():
    read = tasks.get("regbench").own_readers()["ngram2"]
    x = np.array([2, 3, 1, 2, 4, 1, 2, 3, 1, 2])
    # after the last 2: 3 followed it twice, 4 once
    assert read(x, np.array([9]), (0, 8), {}) == [{3}]
    assert read(x, np.array([0]), (0, 8), {}) == [{2}]                      # nothing followed yet: any symbol seen


class _Oracle(torch.nn.Module):
    """Logits log(p) of the true distribution (or uniform): evaluate's references."""

    def __init__(self, task, data, uniform=False):
        super().__init__()
        self.task, self.data, self.uniform = task, data, uniform

    def hidden(self, x):
        rows = [int((self.data.inputs == r).all(1).nonzero()[0]) for r in x]
        p = self.task.next_distribution(self.data[rows])
        return torch.ones_like(p) if self.uniform else p.clamp_min(1e-12).log()

    def head(self, h):
        return h


def test_evaluate_grades_validity_and_tvd_against_oracles():
    task = tasks.get("regbench", seq_len=32, max_word_len=6)
    data = task.generate(40, 2)
    exact = evaluate(_Oracle(task, data), data, torch.device("cpu"), "fp32", task=task)
    assert exact["accuracy"] == 1.0 and exact["tvd"] == pytest.approx(0, abs=1e-5)
    flat = evaluate(_Oracle(task, data, uniform=True), data, torch.device("cpu"), "fp32", task=task)
    dist = task.next_distribution(data)[data.score_mask].double()
    assert flat["tvd"] == pytest.approx(float(0.5 * (dist - 1 / task.vocab_size).abs().sum(-1).mean()), rel=1e-4)
    assert task.ngram_tvd(data, 2) < flat["tvd"]                            # the n-gram floor beats knowing nothing


def test_refuses_an_alphabet_smaller_than_its_automata():
    with pytest.raises(ValueError, match="max_states"):
        tasks.get("regbench", vocab_size=8, max_states=10)
