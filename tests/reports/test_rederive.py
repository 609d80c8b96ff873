"""A compact reproduction report re-derives its own verdicts: judging the runs and probes embedded
in it gives the verdicts it shows, for every experiment's synthetic cases (sharpness reads
analyses, induction eval segments: a compact report keeps both)."""
from pathlib import Path

import pytest

from evalsuite import reproduce as rep
from evalsuite.reports import builder
from tests.reproduce.synthetic import CASES, NO_PROBES, as_stored


@pytest.mark.parametrize("name", ["sharpness", "induction-extrapolation", "delta-vs-linear", "listops-order"])
def test_a_compact_report_rederives_its_verdicts(tmp_path, name):
    good, bad, *_ = CASES[name]
    for i, runs in enumerate((as_stored(good, name), as_stored(bad, name))):
        verdicts = [rep.get(name).judge(runs, NO_PROBES, "cpu")]
        path = builder.write(runs, tmp_path / f"r{i}.html", verdicts=verdicts, compact=True)
        data = builder.read_embedded(path)
        again = rep.get(name).judge(data["runs"], data["probes"], "cpu")
        assert again.status == data["verdicts"][0].status == verdicts[0].status
        assert again.figures == data["verdicts"][0].figures and again.why == data["verdicts"][0].why


@pytest.fixture(scope="module")
def published():
    """docs/reproduce-cpu.html's embedded data, read once for the tests of the published report."""
    return builder.read_embedded(Path(__file__).resolve().parents[2] / "docs" / "reproduce-cpu.html")


# experiments added since docs/reproduce-cpu.html was written (they join it when it is regenerated)
NEW = {"capacity-argmax", "capacity-trained"}
# experiments whose CPU design was re-set since (issue 62: where the state binds): the report's runs of
# them are of the earlier design, so none is a member and each is judged "no finished run" again
RESET = {"linear-width", "delta-vs-linear", "hybrid-recovery", "jrt", "frontier-delta", "frontier-swa", "frontier-based"}


def rejudged(repo_root) -> dict[str, str]:
    """Experiment -> its outcome in docs/REJUDGED.md (`reproduce --verdicts-from docs/reproduce-cpu.html
    --results docs/REJUDGED.md`: the published runs judged by this version's rules)."""
    import re

    text = (repo_root / "docs" / "REJUDGED.md").read_text()
    return {m.group(1): m.group(2) for m in re.finditer(r"^\| \[([a-z0-9-]+)\]\(#[a-z0-9-]+\)(?: \((?:control|retired)\))? \| ([a-z ]+) \|",
                                                        text, re.M)}


@pytest.mark.parametrize("path, names, shows", [
    ("subset-25/reproduce-subset.html", {"softmax-mqar", "copy"}, "3 of 3 seeds learned"),
    ("induction-25/reproduce-induction.html", {"induction-extrapolation"}, "3 of 3 seeds learned"),
    ("capacity-law-26/reproduce-capacity-law.html", {"capacity-law"}, "softmax (control) at 0.95 or above at every D: yes"),
    ("capacity-argmax/report.html", {"capacity-argmax", "capacity-trained"}, "n*"),
    # issue 62's store, carried between machines by this report (docs/reset-62.md)
    ("reset-62.html", {"capacity-argmax", "capacity-trained", "linear-width", "delta-vs-linear", "hybrid-recovery",
                       "jrt"}, ""),
    ("reproduce-cpu.html", {e.name for e in rep.all_experiments()} - NEW, "")])  # every experiment, each by its own runs
def test_the_committed_reports_import_and_are_judged_again_by_todays_rules(repo_root, path, names, shows):
    """The committed reports (real runs, written under earlier rules) still import, every run checked,
    and each experiment they judged is judged again from the runs the report embeds for it. The
    protocol changed since (issue 60: the ladder, orderings judged at every rung, the rate tie), so
    the outcomes are today's: for docs/reproduce-cpu.html, docs/REJUDGED.md lists them beside the
    published ones (and must be regenerated when the rules change); for the older checkpoints, no
    outcome changed."""
    data = builder.read_embedded(repo_root / "docs" / path)
    assert {v.name for v in data["verdicts"]} == names
    expected = rejudged(repo_root) if path == "reproduce-cpu.html" else {v.name: v.status.value for v in data["verdicts"]}
    for shown in data["verdicts"]:
        ids = data["members"].get(shown.name)  # the runs its store judged it from, where the report says
        ids = None if ids is None else set(ids)
        runs = data["runs"] if ids is None else [r for r in data["runs"] if r.run_id in ids]
        again = rep.get(shown.name).judge(runs, data["probes"], "cpu")
        assert again.status.value == expected[shown.name], (shown.name, again.why)
        assert all(len(f) for f in again.figures) and shows in " ".join(again.figures) + again.why


def test_the_published_report_gives_each_experiment_only_runs_of_its_own_points(published):
    """Whose each run is, as docs/reproduce-cpu.html embeds it: every run an experiment lists is
    one of its members (``Experiment.members``: a setting of its design at a rung of the ladder).
    The store it was first published from had been merged, before reports said whose each run is,
    so that capacity-law listed DeltaProduct's 106 word-problem runs and DeltaProduct capacity-law's
    262 recall runs (no verdict read them: their cells match on the task; the membership was still
    wrong). And the other way round: every member the report holds is listed. The one difference:
    the report, listed by its store's sweeps, also lists DeltaProduct's 28 runs of its first design
    (2 epochs, below its base budget of 8: read by no cell), which are not members of its design."""
    data = published
    runs = {r.run_id: r for r in data["runs"]}
    for name, ids in data["members"].items():
        exp = rep.get(name)
        listed = [runs[i] for i in ids]
        mine = {r.run_id for r in exp.members(listed, "cpu")}
        if name in RESET:
            assert listed and not mine, name
            continue
        assert {r.run_id for r in exp.members(data["runs"], "cpu")} == mine, name
        others = [r for r in listed if r.run_id not in mine]
        assert not exp.own_runs(others, "cpu"), (name, len(others))  # below the base budget: unread
        assert len(others) == (28 if name == "deltaproduct-state-tracking" else 0), name


def test_no_cell_of_the_published_report_pools_two_configurations(published):
    """A cell is one configuration at every seed, rate and budget: in docs/reproduce-cpu.html the
    runs of every cell a verdict reads share one ``setting_key``. Cell filters name only the keys
    their experiment varies, so this holds them to the data: a filter that let another setting in
    (a width, a layer count, a feature map's options) would pool it into a figure."""
    from evalsuite.protocol import setting_key

    data = published
    runs = {r.run_id: r for r in data["runs"]}
    checked = 0
    for name, ids in data["members"].items():
        for cell in rep.get(name).judged_cells([runs[i] for i in ids], "cpu"):
            keys = {setting_key(r.config) for r in cell.runs}
            assert len(keys) <= 1, (name, cell.label, len(keys))
            checked += bool(keys)
    assert checked >= 50  # the re-set experiments (RESET) read none of its runs


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
    for i, runs in enumerate((as_stored(good, name), as_stored(bad, name))):
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


def test_a_reproduction_report_rederives_each_experiment_from_its_own_runs(tmp_path):
    """One store holds several experiments; a cell's filter can match another experiment's runs of
    a configuration it does not pin (sharpness's elu+1 at D = 4 matched linear-width's feature_dim 4
    runs, which carry no sharpness analysis: re-derived, it read "inconclusive" where its store read
    "reproduced"). The report embeds which runs each experiment was judged from, and
    `--verdicts-from` and a rebuilt store judge each from exactly those."""
    from click.testing import CliRunner

    from evalsuite.cli import main

    good = as_stored(CASES["sharpness"][0], "sharpness")
    from evalsuite.config import run_id

    # elu+1 at feature_dim 4: another experiment's configuration, which sharpness's cell filter does not pin
    intruder = []
    for r in good:
        if r.config["model"]["name"] == "linear":
            config = {**r.config, "model": {**r.config["model"], "feature_dim": 4}}
            intruder.append(r.model_copy(update={"run_id": run_id(config), "config": config,
                                                 "metrics": {**r.metrics, "analysis": {}}}))
    shown = rep.get("sharpness").judge(good, NO_PROBES, "cpu")
    assert rep.get("sharpness").judge(good + intruder, NO_PROBES, "cpu").status != shown.status  # the trap
    report = builder.write(good + intruder, tmp_path / "r.html", verdicts=[shown], compact=True,
                           members={"sharpness": [r.run_id for r in good]})
    res = CliRunner().invoke(main, ["reproduce", "sharpness", "--verdicts-from", str(report)])
    assert res.exit_code == 0 and _judged(res.output, {"sharpness"}) == {"sharpness": shown.status.value}, res.output
    store = tmp_path / "s" / "evalsuite.db"
    assert CliRunner().invoke(main, ["reproduce", "sharpness", "--verdicts-from", str(report),
                                     "--rebuild-store", str(store)]).exit_code == 0
    again = CliRunner().invoke(main, ["reproduce", "sharpness", "--verdicts-only", "--store", str(store)])
    assert _judged(again.output, {"sharpness"}) == {"sharpness": shown.status.value}, again.output


def test_the_published_capacity_table_reads_the_verdicts_figures(published):
    """The report's capacity table (``sections.capacity_law``) and the capacity-law verdict's "probe
    and trained models" line read one figure per map: in docs/reproduce-cpu.html the table had read
    elu+1's plateau as 11.1 beside the verdict's 11.5, its D = 16 point pooled with linear-width's
    elu+1 at width 128 (same map and d', another experiment's setting)."""
    import re

    import pandas as pd

    from evalsuite.reports.sections import ReportData
    from evalsuite.reports.sections.capacity_law import CapacityLaw

    data = published
    runs = [r for r in data["runs"] if r.config["task"]["name"] == "recall"]
    table = CapacityLaw().build(ReportData(runs, builder.summarize(runs), pd.DataFrame(), data["probes"]), "png")["table"]
    line = next(f for v in data["verdicts"] if v.name == "capacity-law" for f in v.figures
                if f.startswith("probe and trained models"))
    verdict = {(int(d), round(float(t), 1)) for d, t in re.findall(r"\(d' = (\d+)\) trained ([\d.]+)", line)}
    assert len(verdict) == 5 and verdict == {(r["d_prime"], round(r["trained"], 1)) for r in table}


def test_the_published_report_shows_every_4x_configuration_on_three_or_more_seeds(published):
    """Issue 30's evidence in docs/reproduce-cpu.html's own data: every cell a verdict reads has
    three or more reported seeds, and every 4x configuration it reads (a cell at one of its two 4x
    rates) ran on every reported seed. A 4x rerun on one seed, which an earlier method published, or
    a seed added later without its 4x rerun, fails here."""
    data = published
    short = []
    for e in rep.all_experiments():
        ids = data["members"].get(e.name)
        own = data["runs"] if ids is None else [r for r in data["runs"] if r.run_id in set(ids)]
        for c in e.judged_cells(own, "cpu"):
            if not c.present:
                continue
            if len(c.seeds) < 3:
                short.append(f"{e.name}: {c.label}: {len(c.seeds)} reported seeds")
            for lr in c.long_rates:
                seeds = {r.seed for r in c._long(lr)}
                if seeds and not set(c.seeds) <= seeds:
                    short.append(f"{e.name}: {c.label}: 4x at lr {lr} on seeds {sorted(seeds)} of {c.seeds}")
    assert not short, short


def test_a_compact_report_rederives_a_mixed_d_verdict_with_each_ds_own_floor(tmp_path):
    """A compact report keeps each eval segment's accuracy and its floor: capacity-trained judged
    from the report's runs reads the floor of each D (it read the mixture's headline floor at every
    D when the per-D floors were dropped)."""
    from tests.reproduce.synthetic import capacity_trained, judge

    runs, probes = capacity_trained()
    shown = judge("capacity-trained", runs, probes)
    path = builder.write(runs, tmp_path / "c.html", probes=probes, verdicts=[shown], compact=True)
    data = builder.read_embedded(path)
    again = rep.get("capacity-trained").judge(data["runs"], data["probes"], "cpu")
    assert again.figures == shown.figures and again.status == shown.status
    assert "D=32 " in " ".join(again.figures) and "(floor 0.031)" in " ".join(again.figures)  # 1/32


def test_issue_62s_committed_report_carries_its_segments(repo_root):
    """docs/reset-62.html is how issue 62's store goes from one machine to the next
    (`--rebuild-store`): it holds the segments it was run in, each ended, with its wall time."""
    segments = builder.read_embedded(repo_root / "docs" / "reset-62.html")["segments"]
    assert segments and all(s.ended_at is not None and s.minutes > 0 for s in segments)
    assert [s.segment_id for s in segments] == list(range(1, len(segments) + 1))
