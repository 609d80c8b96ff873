"""reports/index.html: every report of a reports folder, with its title, runs and verdicts."""
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
