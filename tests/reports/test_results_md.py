"""RESULTS.md's table: each finding's outcome and how many of its clauses are shown, contradicted
and undecided (a verdict that stopped before its clauses says so)."""
from evalsuite.records import Outcome, Verdict
from evalsuite.reports.results_md import results_markdown


def test_the_table_counts_each_verdicts_clauses():
    vs = [Verdict(name="a", finding="f", status=Outcome.REPRODUCED, checks={"x": True, "y": True}),
          Verdict(name="b", finding="f", status=Outcome.INCONCLUSIVE, checks={"x": True, "y": False, "z": None}),
          Verdict(name="c", finding="f", status=Outcome.INCONCLUSIVE, why="no finished run")]
    text = results_markdown(vs, scale="cpu", command="evalsuite reproduce a b c")
    assert "| [a](#a) | reproduced | 2 / 0 / 0 |" in text
    assert "| [b](#b) | inconclusive | 1 / 1 / 1 |" in text
    assert "| [c](#c) | inconclusive | none judged |" in text
    assert "Outcomes: 2 inconclusive, 1 reproduced." in text
