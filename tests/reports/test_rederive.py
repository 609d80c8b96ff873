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


@pytest.mark.parametrize("path, names, shows", [
    ("subset-25/reproduce-subset.html", {"softmax-mqar", "copy"}, "3 of 3 seeds learned"),
    ("induction-25/reproduce-induction.html", {"induction-extrapolation"}, "3 of 3 seeds learned"),
    ("capacity-law-26/reproduce-capacity-law.html", {"capacity-law"}, "softmax (control) at 0.95 or above at every D: yes")])
def test_the_committed_subset_report_rederives_its_verdicts(repo_root, path, names, shows):
    """docs/subset-25/reproduce-subset.html (softmax-mqar and copy under the evidence method) and
    docs/induction-25 (the first run with positional encodings), real runs: judging the runs each
    embeds gives exactly the verdicts it embeds."""
    data = builder.read_embedded(repo_root / "docs" / path)
    assert {v.name for v in data["verdicts"]} == names
    for shown in data["verdicts"]:
        again = rep.get(shown.name).judge(data["runs"], data["probes"], "cpu")
        assert again.status == shown.status and again.figures == shown.figures and again.why == shown.why
        assert all(len(f) for f in again.figures) and shows in " ".join(again.figures) + again.why


def _judged(output: str, names) -> dict[str, str]:
    """Experiment name -> the outcome `reproduce` printed for it."""
    import re

    out = {}
    for line in output.splitlines():
        m = re.match(r"(\S+)\s+([A-Z][A-Z ]*?)(?:\s\s\(|$)", line)
        if m and m.group(1) in names:
            out[m.group(1)] = m.group(2).lower()
    return out


@pytest.mark.parametrize("name", ["induction-extrapolation", "delta-vs-linear"])
def test_a_store_rebuilt_from_a_report_gives_its_verdicts(tmp_path, name):
    """`--verdicts-from REPORT --rebuild-store S`, then `--verdicts-only --store S`: the verdicts
    the report shows, with the store judged through the same path as any reproduction's."""
    from click.testing import CliRunner

    from evalsuite.cli import main

    good, bad, *_ = CASES[name]
    for i, runs in enumerate((good, bad)):
        shown = rep.get(name).judge(runs, NO_PROBES, "cpu")
        report = builder.write(runs, tmp_path / f"r{i}.html", verdicts=[shown], compact=True)
        store = tmp_path / f"s{i}" / "evalsuite.db"
        res = CliRunner().invoke(main, ["reproduce", name, "--verdicts-from", str(report), "--rebuild-store", str(store)])
        assert res.exit_code == 0, res.output
        again = CliRunner().invoke(main, ["reproduce", name, "--verdicts-only", "--store", str(store)])
        assert again.exit_code == 0, again.output
        assert _judged(again.output, {name}) == {name: shown.status.value}
        refused = CliRunner().invoke(main, ["reproduce", name, "--verdicts-from", str(report), "--rebuild-store", str(store)])
        assert refused.exit_code == 2 and "exists" in refused.output  # never written over


def test_the_committed_subset_rebuilt_as_a_store_gives_its_verdicts(repo_root, tmp_path):
    from click.testing import CliRunner

    from evalsuite.cli import main

    report = repo_root / "docs" / "subset-25" / "reproduce-subset.html"
    shown = {v.name: v.status.value for v in builder.read_embedded(report)["verdicts"]}
    store = tmp_path / "rebuilt.db"
    res = CliRunner().invoke(main, ["reproduce", *shown, "--verdicts-from", str(report), "--rebuild-store", str(store)])
    assert res.exit_code == 0, res.output
    again = CliRunner().invoke(main, ["reproduce", *shown, "--verdicts-only", "--store", str(store)])
    assert again.exit_code == 0, again.output
    assert _judged(again.output, set(shown)) == shown
