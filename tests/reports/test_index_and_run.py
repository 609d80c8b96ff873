"""reports/index.html (every report of a reports folder, with its title, runs and verdicts) and the
one-run report that leads with the run."""
from evalsuite import reproduce as rep
from evalsuite.reports import builder
from tests.reproduce.synthetic import CASES, NO_PROBES


def test_the_index_lists_each_report_with_runs_and_verdicts(tmp_path):
    folder = tmp_path / "reports"
    good = CASES["copy"][0]
    builder.write(good, folder / "a.html", title="first report", compact=True)
    builder.write(good, folder / "b.html", title="a reproduction", compact=True,
                  verdicts=[rep.get("copy").judge(good, NO_PROBES, "cpu")])
    index = (folder / "index.html").read_text()
    assert "first report" in index and "a reproduction" in index and "1 reproduced" in index
    assert f">{len(good)}</td>" in index and 'href="a.html"' in index
    builder.write(good, tmp_path / "docs" / "c.html", compact=True)
    assert not (tmp_path / "docs" / "index.html").exists()  # only the suite's own reports folders


def test_a_one_run_report_leads_with_the_run_its_floor_and_target():
    from evalsuite.records import RunRecord
    from evalsuite.reports.sections import ReportData
    from evalsuite.reports.sections.run import Run

    history = [{"step": s, "val_accuracy": a, "train_loss": 2 - a, "val_loss": 2 - a} for s, a in ((50, 0.1), (100, 0.99))]
    r = RunRecord(run_id="x1", status="done", history=history,
                  config={"task": {"name": "recall"}, "model": {"name": "softmax", "d_model": 64, "n_layers": 2}, "train": {"target_accuracy": 0.99, "lr": 0.003, "epochs": 3.0}, "seed": 0},
                  metrics={"accuracy": 0.98, "val_accuracy": 0.99, "floor": 0.16, "floor_reader": "order", "steps": 100,
                           "budget_steps": 1875, "best_step": 100, "stopped": "target"})
    s = Run().build(ReportData([r], [], None, None), "png")
    assert s["floor"] == 0.16 and s["target"] == 0.99 and abs(s["above_floor"] - 0.82) < 1e-9
    assert s["curve"].startswith("data:image/png") and "reached the target" in s["note"]
    assert Run().build(ReportData([r, r.model_copy(update={"run_id": "x2"})], [], None, None), "png") is None
    html = builder.render([r], "one run")
    assert html.index('id="run"') < html.index('id="summary"')


def test_the_index_tells_reports_of_one_title_apart(tmp_path):
    """Two reports that share a title (the same model on the same task, two seeds) are told apart
    by their file; a run report's title names its size, preset, rate and seed."""
    from evalsuite.cli.run import run_title

    folder = tmp_path / "reports"
    good = CASES["copy"][0]
    for name in ("a.html", "b.html"):
        builder.write(good, folder / name, title="evalsuite: softmax on copy", compact=True)
    index = (folder / "index.html").read_text()
    assert "evalsuite: softmax on copy (a.html)" in index and "evalsuite: softmax on copy (b.html)" in index
    title = run_title(good[0], "default")
    assert "preset default" in title and f"seed {good[0].seed}" in title and "lr " in title
