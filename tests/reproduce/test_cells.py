"""The rules a cell applies to stored runs: the rate chosen by validation, learned and settled,
and what escalation runs next, in order."""
import pytest

from evalsuite.config import run_id
from evalsuite.records import RunRecord
from evalsuite.reproduce import frontier
from evalsuite.reproduce.cells import Cell
from evalsuite.resolve import resolve
from tests.reproduce.synthetic import BEST, cell, frontier_runs


def test_selection_is_by_validation_not_test():
    runs = cell("softmax", 0.9, pairs=4)
    runs[0].metrics["accuracy"] = 1.0  # the test-best run has the worst validation accuracy
    runs[0].metrics["val_accuracy"] = 0.1
    c = Cell.of(runs, "x", model__name="softmax")
    assert c.best_lr == BEST


def test_escalation_order_edge_then_seed_then_4x():
    c = Cell.of(cell("linear", 0.07, settled=False), "x", model__name="linear")
    (nxt,) = c.next_changes()  # one rate: extend the grid first
    assert set(nxt) == {"lr"} and nxt["lr"] != BEST
    three = [r.model_copy(deep=True) for r in cell("linear", 0.07, long=False)][:3]
    three[1].metrics["val_accuracy"] = 0.0
    three[0].metrics["val_accuracy"] = 0.2  # best at the low edge
    (nxt,) = Cell.of(three, "x", model__name="linear").next_changes()
    assert nxt == {"lr": pytest.approx(0.001 / 3, rel=1e-2)}
    assert Cell.of(cell("linear", 0.07, long=False)[:3], "x", model__name="linear").next_changes() == [{"seed": 1}]
    assert Cell.of(cell("linear", 0.07, long=False), "x", model__name="linear").next_changes() == [{"epochs": 12.0}]
    settled = Cell.of(cell("linear", 0.07), "x", model__name="linear")
    assert settled.settled and not settled.next_changes()
    short = Cell.of(cell("linear", 0.9, long=False), "x", model__name="linear")  # learned, but below 0.95
    assert short.learned and short.next_changes() == [{"epochs": 12.0}]  # a shortfall is settled too
    overturned = Cell.of(cell("linear", 0.07, gain=0.5), "x", model__name="linear")
    assert not overturned.settled and "4x rerun gained" in "; ".join(overturned.missing_for_settled())


def test_next_configs_are_the_stored_run_with_one_change():
    """What escalation runs: the best run's stored configuration with the rate, seed or budget
    changed, hashed as the store would hash that edited dict (so earlier escalations are found)."""
    config = resolve("recall", "linear", preset="tiny", overrides={"train.lr": 0.003})
    stored = config.as_dict()
    runs = [RunRecord(run_id=config.run_id, config=stored, status="done",
                      metrics={"accuracy": 0.1, "val_accuracy": 0.1, "context_chance": 1 / 8})]
    (nxt,) = Cell.of(runs, "x", model__name="linear").next_configs()  # one rate: a rate past it
    expected = {**stored, "train": {**stored["train"], "lr": nxt.train.lr}}
    assert nxt.train.lr != 0.003 and nxt.run_id == run_id(expected) and nxt.seed == 0
    assert nxt.as_dict()["task"] == stored["task"] and nxt.as_dict()["model"] == stored["model"]


def test_smallest_state_and_never_reaches():
    fam = frontier.cells(frontier_runs(), "cpu", {"task.seq_len": 64, "task.num_kv_pairs": 16})
    assert frontier.smallest_state(fam["delta"]) == 600 and frontier.smallest_state(fam["RetNet"]) is None
    assert frontier.never_reaches(fam["RetNet"]) and not frontier.never_reaches(fam["GLA"])
