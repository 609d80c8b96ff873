"""Floors no trivial reader beats (tasks.readers): the stored floor is at least every reader's
accuracy, each checked against a reader written here from the token layout alone, and below 1 (at
most 0.9 for every default preset) wherever the task can be learned."""
import numpy as np
import pytest

from evalsuite import tasks
from evalsuite.tasks.base import FLOOR_WARNING
from evalsuite.tasks.readers import READERS, accuracy, fit, floor

PRESETS = [(name, preset) for name in tasks.names() for preset in tasks.TASKS.get(name).presets
           if preset in ("default", "tiny")]


def build(name, preset):
    cls = tasks.TASKS.get(name)
    params = {k: v for k, v in cls.presets[preset].items() if k not in ("segments", "eval_segments")}
    return cls(**params)


@pytest.mark.parametrize("name, preset", PRESETS, ids=[f"{n}-{p}" for n, p in PRESETS])
def test_floor_is_the_best_reader_and_leaves_room_to_learn(name, preset):
    task = build(name, preset)
    test, train = task.generate(200, 2), task.generate(400, 0)
    value, reader, scores = floor(task, test, train)
    assert value == max(scores.values()) and scores[reader] == value
    if "chance_rule" in scores:  # a rule that reads the context (a majority rule counts test labels: left out)
        assert value >= task.context_chance(test) - 1e-12
    if preset == "default":
        assert value <= FLOOR_WARNING, f"{name} default: floor {value:.3f} ({reader}) leaves too little to learn"
    assert value < 1.0


def test_mqar_floor_is_above_one_over_d_and_matches_a_brute_force_order_reader():
    """Under the default MQAR layout queries come roughly in the order their pairs were written
    (gaps drawn with p(g) ~ g^(a-1), most small), so answering the j-th value of the context at the
    j-th query beats 1/D. Written here from the tokens alone: values are [V/2, V)."""
    task = build("recall", "default")
    test = task.generate(300, 5)
    V = task.params.vocab_size
    hits = total = 0
    for x, y in zip(test.inputs.tolist(), test.targets.tolist()):
        values = []
        for t, tok in enumerate(x):
            if tok >= V // 2 and tok not in values:
                values.append(tok)
            if y[t] != -100:
                j = sum(1 for s in range(t) if y[s] != -100)
                hits += j < len(values) and values[j] == y[t]
                total += 1
    mine = hits / total
    value, reader, scores = floor(task, test, task.generate(300, 0))
    assert scores["order"] == pytest.approx(mine)
    assert value >= mine and value > 1 / task.params.num_kv_pairs + 0.01


def test_flipflop_last_bit_reader_by_hand():
    """Echo the last bit seen (written, read or ignored): checked against a loop over the tokens."""
    task = build("flipflop", "default")
    test = task.generate(100, 3)
    hits = total = 0
    for x, y in zip(test.inputs.tolist(), test.targets.tolist()):
        last = None
        for t, tok in enumerate(x):
            if tok in (0, 1):
                last = tok
            if y[t] != -100:
                hits += last == y[t]
                total += 1
    span = task.answer_tokens()
    assert accuracy("last", test, span, fit(None)) == pytest.approx(hits / total)
    assert floor(task, test, task.generate(100, 0))[0] >= hits / total > 0.5


def test_readers_read_only_tokens():
    """A reader's answers depend on the inputs and where answers are asked, never on the targets:
    scrambling the targets (keeping their positions) leaves every reader's candidates unchanged."""
    task = build("recall", "tiny")
    test = task.generate(50, 1)
    fitted = fit(task.generate(100, 0))
    x = test.inputs.numpy()
    pos = [np.flatnonzero(test.score_mask.numpy()[i]) for i in range(len(x))]
    for name, fn in READERS.items():
        first = [fn(x[i], pos[i], task.answer_tokens(), fitted) for i in range(len(x))]
        again = [fn(x[i].copy(), pos[i].copy(), task.answer_tokens(), fitted) for i in range(len(x))]
        assert first == again, name


def test_a_solution_is_not_a_floor():
    """Readers that would solve what a task tests are left out of its floor: the bigram map is
    memorize's solution, emitting the word in order is the copy itself."""
    memorize = build("memorize", "default")
    assert "bigram" not in memorize.readers
    train, test = memorize.generate(500, 0), memorize.generate(200, 2)
    assert accuracy("bigram", test, (0, memorize.vocab_size), fit(train)) > 0.9  # it would set the floor at ~1
    assert floor(memorize, test, train)[0] < 0.1
    assert "order" not in build("copy", "default").readers


def test_copy_length_reader_closes_the_copy():
    """Copy's own reader knows where the copy ends from where the first separator stands."""
    task = build("copy", "default")
    test = task.generate(100, 4)
    scores = floor(task, test, task.generate(100, 0))[2]
    assert scores["length"] > task.context_chance(test)


def test_a_setting_with_a_floor_above_the_warning_level_warns_in_its_record(tmp_path):
    import evalsuite

    result = evalsuite.run("needle", "linear", preset="tiny", store=tmp_path / "s.db",
                           **{"task.num_distractors": 0, "train.epochs": 0.125})  # one step
    assert result.metrics["floor"] == pytest.approx(1.0)
    assert any("leaves little to learn" in w for w in result.warnings)
