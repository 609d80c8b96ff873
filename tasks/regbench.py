r"""RegBench (Akyurek et al. 2024, "In-context language learning"; their generator is
``berlino/seq_icl``, ``src/dataloaders/dfa.py``): strings from a random automaton, a new one per
sequence, so the language must be learned in context.

Each example draws a probabilistic finite automaton as seq_icl does: k states from [2,
max_states), an alphabet of k symbols drawn from the vocabulary, and at each state [1, min(max_out_
edges, k)) distinct outgoing symbols, each to a uniformly drawn state; every state accepts. A
string starts at state 0, has a length drawn from [0, max_word_len), and takes each step uniformly
among the state's outgoing symbols. Strings are joined by the separator ``|`` until the sequence
is full::

    inputs   a c c | a b | | a c b c | a ...
    scored   .   x . . x . . .   x   x . .      (positions whose next token is a symbol)

The model trains on every next token. It is graded where the next token is a symbol: greedy
accuracy is the argmax being a symbol the automaton allows from its current state (the
separator, allowed everywhere since every state accepts, would make "always |" perfect; so the
argmax is taken among the symbols: given that a symbol comes next, which), and
``tvd`` is the total variation distance between the model's next-token distribution and the true
one (a string of length >= l ends after l symbols with probability 1 / (max_word_len - l); the
rest is spread uniformly over the allowed symbols), both as the paper reports them.
``next_distribution`` computes that distribution by walking the automaton over the inputs,
independently of the sampler.

The floor: the generic readers and in-context n-gram readers (``ngram2``: the symbol that most
often followed the current token earlier in this sequence; ``ngram3``: after the last two tokens,
backing off to ``ngram2``, then to any symbol seen), the baselines the paper compares with, scored
by the same validity. Deviations from the paper: the sequence is filled to ``seq_len`` instead of
10-20 strings of up to 50 symbols padded to the longest (the ``paper`` preset keeps their string
lengths at T 512); train and test automata are drawn independently (the paper keeps them disjoint
by hash; with 10^5+ possible automata per size a repeat is rare, not excluded); the default preset
draws up to 15 states with up to 7 edges (the paper: 9 and 4), since at the paper's sizes an
in-context trigram is valid 0.915 of the time at T 128 and leaves greedy accuracy no room.
"""
from __future__ import annotations

from collections import Counter

import numpy as np
import torch
from pydantic import Field

from . import TASKS
from .base import GENERIC_READERS, IGNORE, Batch, Task, TaskParams

PAD, SEP = 0, 1  # then the alphabet's symbols 2 .. vocab_size - 1


class RegBenchParams(TaskParams):
    vocab_size: int = Field(20, ge=5, description="tokens: 0 pad, 1 the separator |, then the symbols (the paper: 20 "
                            "with its two specials)")
    seq_len: int = Field(128, ge=8, description="sequence length T: strings are joined until it is full")
    max_states: int = Field(10, ge=3, description="an automaton has [2, max_states) states and as many symbols")
    max_out_edges: int = Field(5, ge=2, description="a state has [1, min(max_out_edges, states)) outgoing symbols")
    max_word_len: int = Field(16, ge=1, description="a string's length is drawn from [0, max_word_len)")


def _context_ngram(order: int):
    def read(x, pos, span, fit):
        out, counts = [], {}
        symbols: set[int] = set()
        xs = x.tolist()
        k = 0
        for t in range(len(xs)):
            if xs[t] >= 2:   # a symbol: count the step into it under each context length that fits
                symbols.add(xs[t])
                for n in range(1, min(order, t + 1)):
                    counts.setdefault(tuple(xs[t - n:t]), Counter())[xs[t]] += 1
            while k < len(pos) and pos[k] == t:
                pick = set(symbols)
                for n in range(order - 1, 0, -1):  # the longest context seen before wins
                    if t - n + 1 >= 0 and (seen := counts.get(tuple(xs[t - n + 1:t + 1]))):
                        top = max(seen.values())
                        pick = {s for s, c in seen.items() if c == top}
                        break
                out.append(pick)
                k += 1
        return out
    return read


@TASKS.register()
class RegBench(Task):
    name = "regbench"
    description = "in-context language learning: strings of a new random automaton per sequence (RegBench)"
    Params = RegBenchParams
    presets = {
        # more states and edges than the paper's, so that its greedy accuracy has room above the n-gram floor
        # (at the paper's 10 states and 5 edges, ngram3 is valid 0.915 of the time at T 128; here 0.845)
        "default": dict(seq_len=128, max_states=16, max_out_edges=8, max_word_len=16),
        "tiny": dict(vocab_size=12, seq_len=48, max_states=6, max_out_edges=4, max_word_len=8),
        # seq_icl's icl_dfa.yaml: vocabulary 20, up to 10 states, 5 edges, strings up to 50 symbols
        "paper": dict(vocab_size=20, seq_len=512, max_states=10, max_out_edges=5, max_word_len=50),
    }
    preset_bases = {"paper": "default"}
    chance_rule = "a uniformly random symbol is one the automaton allows"
    readers = GENERIC_READERS

    def own_readers(self):
        return {"ngram2": _context_ngram(2), "ngram3": _context_ngram(3)}

    def answer_tokens(self):
        """The symbols: the argmax is taken among them (given that a symbol comes next, which)."""
        return 2, self.params.vocab_size

    def check(self) -> None:
        p = self.params
        if p.max_states - 1 > p.vocab_size - 2:
            raise ValueError(f"regbench: an automaton of up to max_states - 1 = {p.max_states - 1} states needs as many "
                             f"symbols; vocab_size={p.vocab_size} has {p.vocab_size - 2}: use vocab_size >= "
                             f"{p.max_states + 1}")

    def token_names(self) -> list[str]:
        return [".", "|"] + [chr(ord("a") + i) if i < 26 else f"s{i}" for i in range(self.params.vocab_size - 2)]

    def context_chance(self, batch: Batch) -> float:
        dist = self.next_distribution(batch)
        valid = (dist[..., 2:] > 0).sum(-1).double() / (self.params.vocab_size - 2)
        return float(valid[batch.score_mask].mean()) if int(batch.score_mask.sum()) else 0.0

    def valid_tokens(self, batch: Batch, dist: torch.Tensor | None = None) -> torch.Tensor:
        """``[n, T, V]`` bool: the answers a graded position accepts (the symbols allowed next);
        ``dist``: ``next_distribution(batch)`` when the caller has it already."""
        valid = (self.next_distribution(batch) if dist is None else dist) > 0
        valid[..., SEP] = False
        return valid

    def tvd_floor(self, batch: Batch) -> float:
        """The best TVD of an in-context bigram or trigram count model (``ngram_tvd``)."""
        return min(self.ngram_tvd(batch, n) for n in (2, 3))

    def ngram_tvd(self, batch: Batch, order: int = 3) -> float:
        """The TVD floor: mean over graded positions of the total variation distance between the
        true next-token distribution and an in-context n-gram model's (the counts of what followed
        the last ``order - 1`` tokens earlier in this sequence, backing off to shorter contexts,
        then to uniform over the tokens seen)."""
        truth = self.next_distribution(batch).numpy()
        mask = batch.score_mask.numpy()
        V, total, count = self.params.vocab_size, 0.0, 0
        for i, xs in enumerate(batch.inputs.tolist()):
            counts: dict[tuple, np.ndarray] = {}
            seen = np.zeros(V)
            for t, tok in enumerate(xs):
                for n in range(1, order):   # the step into x[t] under each context length
                    if t - n >= 0:
                        counts.setdefault(tuple(xs[t - n:t]), np.zeros(V))[tok] += 1
                seen[tok] = 1
                if not mask[i, t]:
                    continue
                guess = None
                for n in range(order - 1, 0, -1):
                    if t - n + 1 >= 0 and (c := counts.get(tuple(xs[t - n + 1:t + 1]))) is not None:
                        guess = c / c.sum()
                        break
                if guess is None:
                    guess = seen / seen.sum()
                total += 0.5 * np.abs(guess - truth[i, t]).sum()
                count += 1
        return total / max(count, 1)

    def next_distribution(self, batch: Batch) -> torch.Tensor:
        """``[n, T, V]``: the true distribution of the token after each input position, from the
        automaton (``meta["transitions"]``) walked over the inputs."""
        x = batch.inputs
        trans = batch.meta["transitions"].long()                               # [n, S, V]: next state, -1 none
        n, T = x.shape
        rows = torch.arange(n, device=x.device)
        state = torch.zeros(n, dtype=torch.long, device=x.device)
        length = torch.zeros(n, dtype=torch.long, device=x.device)
        states, lengths = torch.empty_like(x), torch.empty_like(x)
        for t in range(T):   # the state and string length after reading x[:t+1]
            tok = x[:, t]
            sep = tok == SEP
            state = torch.where(sep, 0, trans[rows, state, tok].clamp_min(0))
            length = torch.where(sep, 0, length + 1)
            states[:, t], lengths[:, t] = state, length
        allowed = trans[rows[:, None], states] >= 0                             # [n, T, V]
        longest = batch.meta["max_word_len"][:, None]                           # per example: mixtures differ
        end = 1.0 / (longest - lengths).clamp_min(1).double()                  # P(the string ends here)
        per_symbol = (1 - end) / allowed.sum(-1).clamp_min(1)
        dist = allowed.double() * per_symbol[..., None]
        dist[..., SEP] = end
        return dist.float()

    def _generate(self, n: int, rng: np.random.Generator) -> Batch:
        p = self.params
        V, T, S, A = p.vocab_size, p.seq_len, p.max_states, p.vocab_size - 2
        k = rng.integers(2, S, size=n)                                         # states (= symbols) per automaton
        alphabet = np.argsort(rng.random((n, A)), axis=1)[:, :S - 1] + 2       # [n, S-1]: the first k are used
        trans = np.full((n, S, V), -1, dtype=np.int8)
        for s in range(S - 1):
            live = np.flatnonzero(k > s)
            degree = rng.integers(1, np.minimum(p.max_out_edges, k[live]))     # [1, min(edges, k))
            order = rng.random((live.size, S - 1))
            order[np.arange(S - 1)[None, :] >= k[live, None]] = np.inf          # only the automaton's own symbols
            picks = np.argsort(order, axis=1)                                   # a random order of its symbols
            for j in range(S - 2):
                use = degree > j
                rows = live[use]
                symbol = alphabet[rows, picks[use, j]]
                trans[rows, s, symbol] = rng.integers(0, k[rows])
        tokens = np.zeros((n, T + 1), dtype=np.int64)
        rows = np.arange(n)
        state = np.zeros(n, dtype=np.int64)
        left = rng.integers(0, p.max_word_len, size=n)                          # symbols left in this string
        for t in range(T + 1):
            done = left == 0
            allowed = trans[rows, state] >= 0                                    # [n, V]
            scores = np.where(allowed, rng.random((n, V)), -1.0)
            symbol = scores.argmax(1)                                            # uniform among the allowed
            tokens[:, t] = np.where(done, SEP, symbol)
            nxt = trans[rows, state, symbol].astype(np.int64)
            state = np.where(done, 0, nxt)
            left = np.where(done, rng.integers(0, p.max_word_len, size=n), left - 1)
        inputs, targets = tokens[:, :-1], tokens[:, 1:].copy()
        scored = targets >= 2                                                    # graded where a symbol comes next
        return Batch(torch.from_numpy(np.ascontiguousarray(inputs)), torch.from_numpy(targets),
                     {"transitions": torch.from_numpy(trans), "states": torch.from_numpy(k),
                      "max_word_len": torch.full((n,), p.max_word_len, dtype=torch.long)},
                     scored=torch.from_numpy(scored))
