"""A compact reproduction report re-derives its own verdicts: judging the runs and probes embedded
in it gives the verdicts it shows, for every experiment's synthetic cases (sharpness reads
analyses, induction eval segments: a compact report keeps both)."""
import pytest

from evalsuite import reproduce as rep
from evalsuite.reports import builder
from tests.reproduce.synthetic import CASES, NO_PROBES


@pytest.mark.parametrize("name", ["sharpness", "induction-extrapolation", "delta-vs-linear", "listops-order"])
def test_a_compact_report_rederives_its_verdicts(tmp_path, name):
    good, bad, *_ = CASES[name]
    for i, runs in enumerate((good, bad)):
        verdicts = [rep.get(name).judge(runs, NO_PROBES, "cpu")]
        path = builder.write(runs, tmp_path / f"r{i}.html", verdicts=verdicts, compact=True)
        data = builder.read_embedded(path)
        again = rep.get(name).judge(data["runs"], data["probes"], "cpu")
        assert again.status == data["verdicts"][0].status == verdicts[0].status
        assert again.figures == data["verdicts"][0].figures and again.why == data["verdicts"][0].why


def test_the_committed_subset_report_rederives_its_verdicts(repo_root):
    """docs/subset-25/reproduce-subset.html (softmax-mqar and copy under the evidence method, real
    runs): judging the runs it embeds gives exactly the verdicts it embeds."""
    data = builder.read_embedded(repo_root / "docs" / "subset-25" / "reproduce-subset.html")
    assert {v.name for v in data["verdicts"]} == {"softmax-mqar", "copy"}
    for shown in data["verdicts"]:
        again = rep.get(shown.name).judge(data["runs"], data["probes"], "cpu")
        assert again.status == shown.status and again.figures == shown.figures and again.why == shown.why
        assert all(len(f) for f in again.figures) and "3 of 3 seeds learned" in " ".join(again.figures)
