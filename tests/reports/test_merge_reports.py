"""Several committed reports read as one (`reproduce --verdicts-from A --verdicts-from B`, with
`--rebuild-store`: one store seeded from several reports, as issue 65's regeneration is): every run
once, the copy with a learning curve kept, the verdicts of the union, the segments of both stores
numbered again in the order they ran, and the runs without a curve flagged in what is printed and
in the report."""
import calendar

from click.testing import CliRunner

from evalsuite import reproduce as rep
from evalsuite.cli import main
from evalsuite.imports import merge
from evalsuite.reports import builder
from evalsuite.segments import SegmentRecord
from evalsuite.segments import read as read_segments
from evalsuite.store import Store
from tests.reproduce.synthetic import CASES, NO_PROBES, as_stored

NAME = "delta-vs-linear"
DAY = calendar.timegm((2026, 12, 7, 0, 0, 0))


def _curve(r, top=None):
    acc = r.metrics["val_accuracy"] if top is None else top
    return r.model_copy(update={"history": [{"step": 50, "val_accuracy": 0.1, "train_loss": 3.0},
                                            {"step": 100, "val_accuracy": acc, "train_loss": 0.5}]})


def _segment(i, hour, command):
    return SegmentRecord(segment_id=i, command=command, started_at=DAY + hour * 3600,
                         ended_at=DAY + hour * 3600 + 600, status="ended at its limit", limit_minutes=10,
                         runs={"done": 2})


def _reports(tmp_path):
    """A: every run, none with a curve (a report from before reports carried them), one segment at
    10:00; B: the second half of the runs with curves, one run's figures different, and two segments,
    one before A's (09:00) and one after (11:00)."""
    runs = as_stored(CASES[NAME][0], NAME)
    half = len(runs) // 2
    later = [_curve(r) for r in runs[half:]]
    later[0] = later[0].model_copy(update={"metrics": {**later[0].metrics, "loss": 0.02}})  # another machine's copy
    verdict = rep.get(NAME).judge(runs, NO_PROBES, "cpu")
    a = builder.write(runs, tmp_path / "a.html", verdicts=[verdict], compact=True,
                      members={NAME: [r.run_id for r in runs]},
                      segments=[_segment(1, 10, "evalsuite reproduce (store A)")])
    b = builder.write(later, tmp_path / "b.html", compact=True,
                      segments=[_segment(1, 9, "evalsuite reproduce (store B)"),
                                _segment(2, 11, "evalsuite reproduce (store B, again)")])
    return runs, half, verdict, a, b


def test_merge_keeps_every_run_once_the_curved_copy_and_both_stores_segments(tmp_path):
    runs, half, verdict, a, b = _reports(tmp_path)
    data = merge([(str(a), builder.read_embedded(a)), (str(b), builder.read_embedded(b))])
    held = {r.run_id: r for r in data["runs"]}
    assert sorted(held) == sorted(r.run_id for r in runs)
    assert all(bool(held[r.run_id].history) == (i >= half) for i, r in enumerate(runs))  # curves from B
    assert data["conflicts"] == 1  # the copy whose loss differs; B's kept, for its curve
    assert held[runs[half].run_id].metrics["loss"] == 0.02
    assert [(s.segment_id, s.command) for s in data["segments"]] == [
        (1, "evalsuite reproduce (store B)"), (2, "evalsuite reproduce (store A)"),
        (3, "evalsuite reproduce (store B, again)")]
    assert data["members"][NAME] == [r.run_id for r in runs] and {v.name for v in data["verdicts"]} == {NAME}
    # one report is read as it is
    alone = merge([(str(a), builder.read_embedded(a))])
    assert alone["conflicts"] == 0 and [s.segment_id for s in alone["segments"]] == [1]
    # the same report twice: nothing doubled, no conflict
    twice = merge([(str(a), builder.read_embedded(a))] * 2)
    assert len(twice["runs"]) == len(runs) and twice["conflicts"] == 0 and len(twice["segments"]) == 1


def test_verdicts_from_several_reports_and_one_store_seeded_from_them(tmp_path):
    runs, half, verdict, a, b = _reports(tmp_path)
    store = tmp_path / "seeded" / "evalsuite.db"
    res = CliRunner().invoke(main, ["reproduce", NAME, "--verdicts-from", str(a), "--verdicts-from", str(b),
                                    "--rebuild-store", str(store)])
    assert res.exit_code == 0, res.output
    assert f"{NAME}" in res.output and verdict.status.value.upper() in res.output
    assert f"runs     {len(runs)} from {a} and {b}; {half} without a learning curve" in res.output
    assert "1 held by several reports with copies that differ" in res.output
    assert f"{len(runs)} runs and 3 segments from" in res.output
    seeded = Store(store)
    assert len(seeded.runs()) == len(runs)
    assert [s.segment_id for s in read_segments(seeded)] == [1, 2, 3]
    # the store judges as the reports did, and its report flags the runs without a curve
    out = tmp_path / "r.html"
    res = CliRunner().invoke(main, ["reproduce", NAME, "--verdicts-only", "--compact", "--store", str(store),
                                    "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert f"{NAME}" in res.output and verdict.status.value.upper() in res.output
    page = out.read_text()
    assert f'id="no-curve">{half} of {len(runs)} runs finished without a learning curve' in page


def test_a_report_whose_runs_all_have_curves_flags_none(tmp_path):
    runs = [_curve(r) for r in as_stored(CASES[NAME][0], NAME)]
    page = builder.render(runs, compact=True)
    assert 'id="no-curve"' not in page
