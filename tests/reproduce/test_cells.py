"""The rules a cell applies to stored runs: the rate chosen by validation, learned and settled,
and what escalation runs next, in order."""
import pytest

from evalsuite.reproduce.clauses import learned_at_4x
from evalsuite.config import run_id
from evalsuite.records import RunRecord
from evalsuite import reproduce as rep
from evalsuite.reproduce import frontier
from evalsuite.reproduce.cells import Cell
from evalsuite.reproduce.escalation import next_changes, next_configs
from evalsuite.resolve import resolve
from tests.reproduce.synthetic import BEST, cell, frontier_runs


def test_selection_is_by_validation_not_test():
    runs = cell("softmax", 0.9, pairs=4)
    runs[0].metrics["accuracy"] = 1.0  # the test-best run has the worst validation accuracy
    runs[0].metrics["val_accuracy"] = 0.1
    c = Cell.of(runs, "x", {"model.name": "softmax"})
    assert c.best_lr == BEST


def lin(acc, **kw):
    return Cell.of(cell("linear", acc, **kw), "x", {"model.name": "linear"})


def test_escalation_order_edge_then_seeds_then_4x_on_every_seed():
    c = Cell.of(cell("linear", 0.07, settled=False), "x", {"model.name": "linear"})
    (nxt,) = next_changes(c)  # one rate: extend the grid first, on the seed that chooses the rate
    assert set(nxt) == {"lr", "seed"} and nxt["lr"] != BEST and nxt["seed"] == 0
    three = [r.model_copy(deep=True) for r in cell("linear", 0.07, long=False)][:3]
    three[1].metrics["val_accuracy"] = 0.0
    three[0].metrics["val_accuracy"] = 0.2  # best at the low edge
    (nxt,) = next_changes(Cell.of(three, "x", {"model.name": "linear"}))
    assert nxt == {"lr": pytest.approx(0.001 / 3, rel=1e-2), "seed": 0}
    # seed 0 chose the rate: three other seeds are reported
    assert next_changes(Cell.of(cell("linear", 0.07, long=False)[:3], "x", {"model.name": "linear"})) == [
        {"seed": 1}, {"seed": 2}, {"seed": 3}]
    # then the first rung (4x) on every reported seed, at the chosen rate (its runner-up is 0.02 behind)
    assert next_changes(lin(0.07, long=False)) == [{"seed": s, "lr": BEST, "epochs": 12.0, "rung": 1} for s in (1, 2, 3)]
    settled = lin(0.07)
    assert settled.settled and not next_changes(settled) and settled.unsettled() == []
    short = lin(0.9, long=False)  # learned, but below the ceiling: a shortfall is settled too
    assert short.learned and len(next_changes(short)) == 3  # the chosen rate on each reported seed
    assert lin(0.97, long=False).stable and not next_changes(lin(0.97, long=False))  # at the ceiling: no 4x


@pytest.mark.parametrize("case, kw, words", [
    ("4x gain on one seed", dict(seed_accs=[0.07, 0.07, 0.07], gain=0.2), "gained"),
    ("4x fall (collapse)", dict(acc=0.7, gain=-0.6), "unstable"),
    ("single-seed 4x rerun", dict(long_seeds=(1,)), "has none"),
    ("4x still undertrained", dict(long_undertrained=True), "undertrained"),
    ("two seeds", dict(seeds=(1, 2)), "needs 3 reported seeds"),
    ("seeds disagree", dict(seed_accs=[0.9, 0.07, 0.9], acc=0.62), "needs 5 reported seeds"),
])
def test_every_branch_of_the_settledness_rule(case, kw, words):
    kw = {"acc": 0.07, **kw}
    c = lin(kw.pop("acc"), **kw)
    assert not c.stable and not c.settled and not c.settled_below(0.99), case
    assert words in "; ".join(c.unsettled()), (case, c.unsettled())


def test_a_negative_gain_within_the_margin_is_settled_and_one_beyond_it_is_not():
    assert lin(0.07, gain=-0.03).settled
    assert not lin(0.5, gain=-0.2).stable


def test_a_runner_up_rate_within_the_tie_climbs_too_and_no_other_does():
    """The rate choice cannot turn on noise: where the runner-up's validation is within RATE_TIE
    of the best, both climb the ladder (a cell with 4x runs at the chosen rate only is unsettled),
    and each rung's figure is read at the rate that validates best there; the half rate, which
    the earlier protocol always reran, is not asked for."""
    runs = [r.model_copy(deep=True) for r in cell("linear", 0.07)]
    assert Cell.of(runs, "x", {"model.name": "linear"}).settled  # runner-up 0.02 behind: the chosen rate alone
    for r in runs:
        if r.seed == 0 and r.lr == 0.01:
            r.metrics["val_accuracy"] = 0.065  # 0.005 behind the best
    c = Cell.of(runs, "x", {"model.name": "linear"})
    assert c.long_rates == [BEST, 0.01] and not c.settled and "4x reruns at lr 0.003, 0.01" in "; ".join(c.unsettled())
    assert {(x["lr"], x["seed"]) for x in next_changes(c)} == {(0.01, s) for s in (1, 2, 3)}


def test_disagreeing_seeds_ask_for_more_seeds_and_say_k_of_n():
    c = lin(0.62, seed_accs=[0.9, 0.07, 0.9])
    assert c.seeds_learned == (2, 3) and c.seeds_disagree
    assert next_changes(c) == [{"seed": 4}, {"seed": 5}]
    assert "2 of 3 seeds learned" in c.figure()


def test_a_best_rate_at_the_edge_is_unsettled():
    runs = [r.model_copy(deep=True) for r in cell("linear", 0.07)]
    for r in runs:
        if r.lr == 0.01 and r.seed == 0:
            r.metrics["val_accuracy"] = 0.5
    c = Cell.of(runs, "x", {"model.name": "linear"})
    assert c.at_edge and not c.settled and "beyond the best one" in "; ".join(c.unsettled())


def test_comparisons_need_the_spreads_and_every_seed():
    from evalsuite.reproduce.verdict import above, contradicted, higher, not_higher

    strong = Cell.of(cell("softmax", 0.99), "s", {"model.name": "softmax"})
    weak = lin(0.3)
    assert higher(strong, weak) and above(strong, weak) is True and not contradicted(strong, weak)
    # the mean gap is large but one paired seed goes the other way: not "higher"
    mixed = Cell.of(cell("softmax", 0.0, seed_accs=[0.2, 0.99, 0.99]), "s", {"model.name": "softmax"})
    weak_seeds = lin(0.0, seed_accs=[0.3, 0.3, 0.3])
    assert not higher(mixed, weak_seeds)
    # equal means but wide spreads: neither higher nor (confidently) not higher
    wide = lin(0.3, spread=0.1)
    assert not higher(wide, weak) and not not_higher(wide, weak)
    assert not_higher(lin(0.3), weak) and contradicted(lin(0.3), weak)


def test_everything_at_the_floor_is_settled_and_learns_nothing():
    c = lin(1 / 16)
    assert c.settled and not c.learned and c.seeds_learned == (0, 3)


def test_next_configs_are_the_stored_run_with_one_change():
    """What escalation runs: the best run's stored configuration with the rate, seed or budget
    changed, hashed as the store would hash that edited dict (so earlier escalations are found)."""
    config = resolve("recall", "linear", preset="tiny", overrides={"train.lr": 0.003})
    stored = config.as_dict()
    runs = [RunRecord(run_id=config.run_id, config=stored, status="done",
                      metrics={"accuracy": 0.1, "val_accuracy": 0.1, "context_chance": 1 / 8})]
    (nxt,) = next_configs(Cell.of(runs, "x", {"model.name": "linear"}))  # one rate: a rate past it
    expected = {**stored, "train": {**stored["train"], "lr": nxt.train.lr}}
    assert nxt.train.lr != 0.003 and nxt.run_id == run_id(expected) and nxt.seed == 0
    assert nxt.as_dict()["task"] == stored["task"] and nxt.as_dict()["model"] == stored["model"]


def test_smallest_state_and_never_reaches():
    fam = frontier.by_family(rep.get("frontier-delta").cells(frontier_runs(), "cpu"), "cpu")
    assert frontier.smallest_state(fam["delta"]) == 600 and frontier.smallest_state(fam["RetNet"]) is None
    assert frontier.never_reaches(fam["RetNet"]) and not frontier.never_reaches(fam["elu+1"])


def test_reported_seeds_at_an_earlier_designs_rates_do_not_stop_the_choice():
    """Seed 0 swept three rates; seeds 1-5 ran two rates of an earlier design, one of them (half
    of the chosen one) outside seed 0's grid, so no seed ran every rate (DeltaProduct's 8-epoch
    base, segment 21: the choice was None and the figure's text raised). Seed 0 votes over its
    grid, the figure is read from the other seeds at the chosen rate, and the rate beside it that
    only they ran is neither a candidate nor an edge."""
    base = [r.model_copy(deep=True) for r in cell("linear", 0.3, long=False, seeds=(1, 2, 3, 4, 5))]
    half = [r.model_copy(update={"run_id": r.run_id + "half", "metrics": {**r.metrics, "val_accuracy": 0.99},
                                 "config": {**r.config, "train": {**r.config["train"], "lr": BEST / 2}}}, deep=True)
            for r in base if r.seed > 0]  # validates best of all, but seed 0 never ran it
    c = Cell.of(base + half, "x", {"model.name": "linear"})
    assert c.best_lr == BEST and c.rates == [0.001, 0.003, 0.01] and not c.at_edge
    assert c.seeds == [1, 2, 3, 4, 5] and c.accuracy.n == 5
    assert "lr 0.003 of [0.001, 0.003, 0.01] chosen by validation on seed 0" in c.figure()
    # the best rate is at seed 0's low edge: one rate below it on seed 0, not new seeds
    for r in base:
        if r.seed == 0:
            r.metrics["val_accuracy"] = 0.5 if r.lr == 0.001 else 0.1
    c = Cell.of(base + half, "x", {"model.name": "linear"})
    assert c.best_lr == 0.001 and c.at_edge and c.seeds == [0]
    assert next_changes(c) == [{"lr": pytest.approx(0.001 / 3, rel=1e-2), "seed": 0}]


def test_a_seed_that_ran_only_other_rates_reports_at_the_chosen_one():
    """A reported seed that never ran the chosen rate did not vote: it is asked for there before
    a new seed is."""
    runs = [r.model_copy(deep=True) for r in cell("linear", 0.07, long=False)]
    moved = [r.model_copy(update={"config": {**r.config, "train": {**r.config["train"], "lr": 0.01}}}, deep=True)
             if r.seed == 3 else r for r in runs]  # seed 3 ran only the high rate
    c = Cell.of(moved, "x", {"model.name": "linear"})
    assert c.seeds == [1, 2] and next_changes(c) == [{"seed": 3}]


def test_a_cell_without_validation_accuracy_states_no_rate_and_does_not_raise():
    runs = [r.model_copy(update={"metrics": {k: v for k, v in r.metrics.items() if k != "val_accuracy"}}, deep=True)
            for r in cell("linear", 0.07)]
    c = Cell.of(runs, "x", {"model.name": "linear"})
    assert c.best_lr is None and "lr none of" in c.figure()


@pytest.mark.parametrize("gain, works", [(0.6, True), (0.1, False)], ids=["learns-at-4x", "still-below-at-4x"])
def test_a_control_that_learns_only_at_4x_on_every_seed_is_a_working_control(gain, works):
    """Softmax at 0.3 (floor 1/16) at the base budget: a control that failed, unless 4x the
    budget on every reported seed takes it past the learned level (then it is a late learner, and
    the verdict goes on to its clauses); one seed's 4x rerun alone is not enough."""
    from evalsuite.reproduce.verdict import Judge

    judge = Judge("x", "a finding", "a source")
    soft = Cell.of(cell("softmax", 0.3, long=True, gain=gain), "softmax", {"model.name": "softmax"})
    assert not soft.learned and learned_at_4x(soft) is works
    assert (judge.control(soft, []) is None) is works
    one = Cell.of(cell("softmax", 0.3, long=True, gain=gain, long_seeds=(1,)), "softmax", {"model.name": "softmax"})
    assert not learned_at_4x(one) and judge.control(one, []) is not None


@pytest.mark.parametrize("case, kw, reached", [
    ("at 0.9 on three seeds", dict(acc=0.92, long=False), True),
    ("late learner, 4x on every seed", dict(acc=0.5, gain=0.45), True),
    ("one seed's 4x rerun alone", dict(acc=0.5, gain=0.45, long_seeds=(1,)), False),
    ("two seeds", dict(acc=0.92, long=False, seeds=(1, 2)), False),
], ids=lambda x: x if isinstance(x, str) else "")
def test_the_frontier_reads_reaching_as_every_capability_clause_does(case, kw, reached):
    """The frontier's least state reaching 0.9 counts a cell only as a verdict's capability clause
    would (three or more seeds; a late learner by 4x on every seed), so its orderings and the
    other verdicts read one rule."""
    from evalsuite.reproduce.clauses import reaches

    c = Cell.of(cell("delta", **kw), "x", {"model.name": "delta"})
    assert frontier.reaches(c, 0.9) is reached is reaches(c, 0.9), case


@pytest.mark.parametrize("case, stop, val, counts", [
    ("16x stopped on a plateau at 0.55 (the rule before issue 62)", "plateau", 0.55, False),
    ("16x stopped on a plateau at 0.96 (the rule as it stands)", "plateau", 0.96, True),
    ("16x spent its budget at 0.55", "budget", 0.55, True),
])
def test_a_rung_run_an_older_plateau_rule_cut_short_does_not_count_and_runs_again(case, stop, val, counts):
    """A rung stopped on a plateau below ``PLATEAU_ABOVE`` (0.5 was the level before issue 62, and
    MQAR models sit near 0.55 before a jump) measured the rung only up to its stop: the cell leaves
    it out, its seed lacks the rung, and the escalation runs it again under the rule as it stands."""
    runs = cell("linear", 0.3, seed_accs=[0.3, 0.3, 0.3], gain=0.25, gain16=0.0)  # moved at 4x: 16x decides
    cut = next(r for r in runs if r.seed == 2 and r.config["train"]["epochs"] == 48.0)
    cut.metrics.update(stopped=stop, val_accuracy=val)
    c = Cell.of(runs, "x", {"model.name": "linear"})
    assert (cut in c.runs) is counts, case
    assert c.top_rung == (2 if counts else 1), case
    again = next_changes(c, climb=True)
    assert again == ([] if counts else [{"seed": 2, "lr": BEST, "epochs": 48.0, "rung": 2}]), case
    assert ("seed 2 ran it, but a plateau stop below the ceiling" in " ".join(c.unsettled())) is not counts, case


def test_a_rung_stops_on_a_plateau_only_at_the_ceiling():
    """A rung's plateau stop needs the ceiling (where the protocol asks for no longer budget), so no
    stop ends a run on MQAR's mid plateau; escalation writes that level into the rung's config."""
    from evalsuite.protocol import CEILING, PLATEAU_ABOVE, cut_short
    assert PLATEAU_ABOVE == CEILING
    assert cut_short({"stopped": "plateau", "val_accuracy": PLATEAU_ABOVE - 1e-3})
    assert not cut_short({"stopped": "plateau", "val_accuracy": PLATEAU_ABOVE})
    assert not cut_short({"stopped": "budget", "val_accuracy": 0.1}) and not cut_short({})
    config = resolve("recall", "linear", preset="tiny", overrides={"train.lr": 0.003})
    runs = [RunRecord(run_id=f"r{s}{lr}", config={**config.as_dict(), "seed": s, "train": {**config.as_dict()["train"],
                                                                                          "lr": lr}},
                      status="done", metrics={"accuracy": 0.3, "val_accuracy": 0.3 + (lr == 0.003) * 0.01,
                                              "context_chance": 1 / 8, "budget_steps": 1000})
            for s in range(4) for lr in ((0.001, 0.003, 0.01) if s == 0 else (0.003,))]
    up = next_configs(Cell.of(runs, "x", {"model.name": "linear"}))
    assert len(up) == 3 and all(c.train.plateau_above == PLATEAU_ABOVE and c.train.plateau_window for c in up)


def test_a_cut_short_run_says_so_where_its_ending_is_shown():
    from evalsuite.records import convergence_note
    cut = convergence_note({"stopped": "plateau", "val_accuracy": 0.55, "best_step": 900})
    kept = convergence_note({"stopped": "plateau", "val_accuracy": 0.97, "best_step": 900})
    assert "cut short" in cut and "runs it again" in cut and "cut short" not in kept
