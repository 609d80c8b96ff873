"""Readers with no memory of what a task tests: the floor a model's accuracy stands beside.

A model "learned" a task only if it beats every reader that knows the task's format but keeps no
memory of what the task tests (for recall: which value went with which key). Each reader here
reads only the tokens of one example, left to right, and at each scored position names a set of
candidates it answers from uniformly; its accuracy is the mean over scored positions of
``[target in C] / |C|`` (a deterministic reader names one token). Three readers are fitted on the
training split (``majority``, ``bigram``, ``position``); none sees test targets. The readers never
call a task's generator: they are written from the token layout alone, so a generator bug cannot
hide in its own floor.

``floor(task, test, train)`` runs the task's ``readers`` (``Task.readers``: every generic reader
that keeps no memory of what that task tests, plus the task's own) by brute force on the test
split and returns the best, with its name and every reader's accuracy; the task's own stated
chance rule (``Task.context_chance``, named ``chance_rule``) is one more candidate where it reads
the context, so the floor is never below what the task documents; a majority-class rule (which
counts the test split's labels) is replaced by ``majority`` fitted on the training split.

Generic readers (``span`` is the task's answer tokens, ``Task.answer_tokens``; all tokens when
it has none):

- ``majority``: the most common scored target of the training split, always.
- ``bigram``: the most common target after the current token, fitted on the training split.
- ``position``: the most common target at this position, fitted on the training split.
- ``random_context``: a random distinct span token seen so far (MQAR: 1/D).
- ``most_frequent``: the span token seen most often so far (ties: a random one of them).
- ``last``: the span token seen most recently (flip-flop: the last bit, read, written or ignored).
- ``current`` / ``previous`` / ``first``: the token at this position, the one before it, the
  example's first token.
- ``elimination``: a random span token seen so far that was not already answered: under teacher
  forcing the token after each earlier scored position is the answer given there, and a task
  whose answers are distinct (multi-value needles, several queries) never asks for it again.
- ``order``: the j-th scored position of an example answers the j-th distinct span token of the
  context (queries that come in the order their pairs were written).
"""
from __future__ import annotations

from collections import Counter
from typing import Callable

import numpy as np

from .base import Batch

# name -> reader(x, scored positions, span, fitted) -> one candidate set per scored position
Reader = Callable[[np.ndarray, np.ndarray, tuple[int, int], dict], list[set[int]]]
READERS: dict[str, Reader] = {}


def reader(name: str):
    def add(fn: Reader) -> Reader:
        READERS[name] = fn
        return fn
    return add


def _in(span, token) -> bool:
    return span[0] <= token < span[1]


@reader("majority")
def _majority(x, pos, span, fit):
    return [{fit["majority"]}] * len(pos)


@reader("bigram")
def _bigram(x, pos, span, fit):
    return [{fit["bigram"].get(int(x[t]), fit["majority"])} for t in pos]


@reader("position")
def _position(x, pos, span, fit):
    return [{fit["position"].get(int(t), fit["majority"])} for t in pos]


def _scan(x, pos, span, choose):
    """Walk the example once; at each scored position t, ``choose(state, t)`` over the span tokens
    seen in x[:t+1] (``seen``: first-appearance order, ``counts``, ``last``)."""
    out, seen, counts, last, k = [], [], Counter(), None, 0
    for t, token in enumerate(x.tolist()):
        if _in(span, token):
            if token not in counts:
                seen.append(token)
            counts[token] += 1
            last = token
        while k < len(pos) and pos[k] == t:
            out.append(choose(seen, counts, last, k, t))
            k += 1
        if k == len(pos):
            break
    return out


@reader("random_context")
def _random_context(x, pos, span, fit):
    return _scan(x, pos, span, lambda seen, counts, last, k, t: set(seen))


@reader("most_frequent")
def _most_frequent(x, pos, span, fit):
    def choose(seen, counts, last, k, t):
        top = max(counts.values(), default=0)
        return {v for v, c in counts.items() if c == top}
    return _scan(x, pos, span, choose)


@reader("last")
def _last(x, pos, span, fit):
    return _scan(x, pos, span, lambda seen, counts, last, k, t: set() if last is None else {last})


@reader("current")
def _current(x, pos, span, fit):
    return [{int(x[t])} for t in pos]


@reader("previous")
def _previous(x, pos, span, fit):
    return [{int(x[t - 1])} if t > 0 else set() for t in pos]


@reader("first")
def _first(x, pos, span, fit):
    return [{int(x[0])}] * len(pos)


@reader("elimination")
def _elimination(x, pos, span, fit):
    def choose(seen, counts, last, k, t):
        answered = {int(x[s + 1]) for s in pos[:k] if s + 1 <= t}
        left = set(seen) - answered
        return left or set(seen)
    return _scan(x, pos, span, choose)


@reader("order")
def _order(x, pos, span, fit):
    return _scan(x, pos, span, lambda seen, counts, last, k, t: {seen[k]} if k < len(seen) else set())


def fit(train: Batch | None) -> dict:
    """What the fitted readers learn from the training split: the majority target, the most
    common target after each token and at each position."""
    if train is None or not int(train.score_mask.sum()):
        return {"majority": -1, "bigram": {}, "position": {}}
    mask = train.score_mask.numpy()
    x, y = train.inputs.numpy(), train.targets.numpy()
    rows, cols = np.nonzero(mask)
    targets = y[rows, cols]
    majority = int(np.bincount(targets).argmax())

    def most_common(keys):
        table: dict[int, Counter] = {}
        for key, target in zip(keys.tolist(), targets.tolist()):
            table.setdefault(key, Counter())[target] += 1
        return {k: c.most_common(1)[0][0] for k, c in table.items()}
    return {"majority": majority, "bigram": most_common(x[rows, cols]), "position": most_common(cols)}


def accuracy(name: str, test: Batch, span: tuple[int, int], fitted: dict, extra: dict | None = None,
             valid: np.ndarray | None = None) -> float:
    """One reader's accuracy on ``test`` (mean over scored positions of [target in C] / |C|; with
    ``valid`` ``[n, T, V]``, a task accepting several answers, of |C & valid| / |C|)."""
    fn = (extra or {}).get(name) or READERS[name]
    mask = test.score_mask.numpy()
    x, y = test.inputs.numpy(), test.targets.numpy()
    hits, total = 0.0, 0
    for i in range(len(x)):
        pos = np.flatnonzero(mask[i])
        if not pos.size:
            continue
        for t, candidates in zip(pos.tolist(), fn(x[i], pos, span, fitted)):
            if not candidates:
                continue
            if valid is None:
                hits += (int(y[i, t]) in candidates) / len(candidates)
            else:
                hits += sum(bool(valid[i, t, c]) for c in candidates if 0 <= c < valid.shape[2]) / len(candidates)
        total += pos.size
    return hits / total if total else 0.0


def floor(task, test: Batch, train: Batch | None, fitted: dict | None = None) -> tuple[float, str, dict[str, float]]:
    """``(floor, reader, {reader: accuracy})``: the best of ``task``'s readers on ``test``
    (``fitted``: ``fit(train)`` already made, when several test subsets are read)."""
    span = task.answer_tokens() or (0, task.vocab_size)
    fitted = fit(train) if fitted is None else fitted
    extra = task.own_readers()
    names = [n for n in task.readers if n in READERS] + [n for n in extra if n not in task.readers]
    # the task's stated rule (``Task.chance_rule``) is one more, where it reads the context: a majority-class
    # rule counts test labels, and the ``majority`` reader fitted on the training split stands for it
    scores = {"chance_rule": task.context_chance(test)} if task.answer_tokens() is not None else {}
    valid = task.valid_tokens(test).numpy() if hasattr(task, "valid_tokens") else None
    scores.update({n: accuracy(n, test, span, fitted, extra, valid) for n in names})
    order = list(scores)
    best = max(order, key=lambda n: (scores[n], -order.index(n)))  # a tie goes to the stated rule, then the list's order
    return scores[best], best, scores
