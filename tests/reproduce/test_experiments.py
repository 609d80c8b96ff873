"""The experiments as a registry: every spec expands, the list shows each one, a new experiment is
one new file, and the frontier's sweep file is the frontier experiments' sweep."""
import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner

from evalsuite import reproduce as rep
from evalsuite import sweep as sweeps
from evalsuite.cli import main
from evalsuite.records import RunRecord


@pytest.mark.parametrize("scale", rep.SCALES)
def test_every_experiment_spec_is_valid(scale, monkeypatch):
    # the specs, not this machine: the paper scale needs about 20 GiB a run, more than a busy
    # 24 GiB machine has free (the memory check is tested on its own in tests/core)
    monkeypatch.setenv("EVALSUITE_MEMORY_CHECK", "off")
    for exp in rep.all_experiments():
        spec = exp.spec(scale)
        if spec is not None:
            assert sweeps.expand(spec)
        assert spec is not None or exp.probes.get(scale), exp.name
        assert exp.params(scale) is not None


def test_paper_scale_verdicts_read_the_papers_widths():
    exp = rep.get("linear-width")
    assert exp.params("paper")["widths"] == [64, 128, 256, 512]
    spec_widths = {pt.config.model.base.d_model for pt in sweeps.expand(exp.spec("paper"))}
    assert set(exp.params("paper")["widths"]) <= spec_widths


def test_cli_list_groups_and_unknown_name():
    res = CliRunner().invoke(main, ["reproduce", "--list"])
    assert res.exit_code == 0 and all(e.name in res.output for e in rep.all_experiments())
    assert [e.name for e in rep.select(["frontier"])] == ["frontier-delta", "frontier-swa", "frontier-based"]
    bad = CliRunner().invoke(main, ["reproduce", "sharpnes"])
    assert bad.exit_code == 2 and "did you mean 'sharpness'" in bad.output


THROWAWAY = '''
from evalsuite.reproduce.experiment import Design, Experiment, register
from evalsuite.reproduce.verdict import INCONCLUSIVE


def verdict(cells, probes, p, judge):
    return judge.verdict(INCONCLUSIVE, [f"{len(cells.runs)} runs"], "a throwaway experiment judges nothing")


register(Experiment("throwaway-finding", "A finding that one new file adds.", "a test", verdict,
                    designs={"cpu": Design(), "paper": Design()}, minutes={"cpu": 1, "paper": 1}))
'''


def test_an_experiment_is_one_new_file(tmp_path):
    """A module dropped into the experiments package (here: a folder added to its path, so the
    checkout stays untouched) appears in `reproduce --list` and is judged, with nothing else edited."""
    (tmp_path / "throwaway_finding.py").write_text(THROWAWAY)
    script = textwrap.dedent(f"""
        import evalsuite.reproduce.experiments as package
        package.__path__.append({str(tmp_path)!r})
        from evalsuite.cli import main
        for args in (["reproduce", "--list"], ["reproduce", "throwaway-finding", "--store", {str(tmp_path / "s.db")!r}]):
            main(args, standalone_mode=False)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "throwaway-finding  (a test)" in out.stdout and "A finding that one new file adds." in out.stdout
    assert "throwaway-finding INCONCLUSIVE  (a throwaway experiment judges nothing)" in out.stdout
    assert "throwaway-finding" not in CliRunner().invoke(main, ["reproduce", "--list"]).output  # only where added


def test_experiments_escalate_together_and_a_shared_run_counts_for_both(tmp_path):
    """Two experiments whose cells need the same reported seeds: one escalation round runs it once
    (the invocation's experiments escalate together), and each experiment's runs include it."""
    from evalsuite.reproduce.experiment import CellSpec, Design, Experiment
    from evalsuite.reproduce.runner import experiment_runs, run_experiments
    from evalsuite.store import Store

    store = Store(tmp_path / "s.db")
    design = Design({"task": "recall", "preset": "tiny"}, [CellSpec("softmax", "softmax", {"model": "softmax"})],
                    (1e-3, 3e-3, 1e-2))

    def verdict(cells, probes, p, judge):
        return judge.inconclusive([], "")

    a, b = (Experiment(name, "x", "a test", verdict, {"cpu": design, "paper": design}, {"cpu": 1, "paper": 1})
            for name in ("exp-a", "exp-b"))
    calls = []

    def run(points, name, spec_):  # stands in for the executor: records the runs as done at chance
        calls.append((name, sorted(p.run_id for p in points)))
        for p in points:
            store.finish(RunRecord(run_id=p.run_id, config=p.config.as_dict(), status="done",
                                   metrics={"accuracy": 1.0, "val_accuracy": 1.0, "context_chance": 0.25}))
        return {}

    said = []
    run_experiments([a, b], "cpu", store, run, echo=said.append)
    assert [name for name, _ in calls] == ["reproduce-cpu", "reproduce-cpu-escalation-1"]
    assert "  exp-a, escalation round 1: 3 runs for softmax (learned)" in said
    assert "  exp-b, escalation round 1: the same 3 runs as exp-a" in said  # not the cell list again
    assert len(calls[0][1]) == 3 and len(calls[1][1]) == 3  # the three reported seeds at the best rate, once
    second_seed = calls[1][1][0]  # one of them
    for exp in (a, b):
        assert second_seed in {r.run_id for r in experiment_runs(exp, "cpu", store)}
    calls.clear()
    run_experiments([a, b], "cpu", store, run, echo=lambda *_: None)  # resumed: nothing left to escalate
    assert [name for name, _ in calls] == ["reproduce-cpu"]


def test_probes_run_after_the_sweep_and_before_the_escalation(tmp_path, monkeypatch):
    """A verdict that reads a probe (capacity-trained) cannot tell which cells its clauses depend on
    until the probe has run: the probe calls come between the sweep and the first escalation round."""
    from evalsuite.reproduce import runner
    from evalsuite.reproduce.experiment import CellSpec, Design, Experiment
    from evalsuite.store import Store

    store = Store(tmp_path / "s.db")
    design = Design({"task": "recall", "preset": "tiny"}, [CellSpec("softmax", "softmax", {"model": "softmax"})],
                    (1e-3, 3e-3, 1e-2))
    exp = Experiment("exp-p", "x", "a test", lambda cells, probes, p, judge: judge.inconclusive([], ""),
                     {"cpu": design, "paper": design}, {"cpu": 1, "paper": 1},
                     probes={"cpu": [{"probe": "argmax", "memory": "elu+1", "d_key": 4}]})
    calls = []

    def run(points, name, spec_):
        calls.append(name)
        for p in points:
            store.finish(RunRecord(run_id=p.run_id, config=p.config.as_dict(), status="done",
                                   metrics={"accuracy": 1.0, "val_accuracy": 1.0, "context_chance": 0.25}))
        return {}

    def probe(top1, store_, **kw):
        calls.append(f"argmax probes: {len(top1)} call(s)")
        return True

    monkeypatch.setattr(runner.argmax, "run", probe)
    runner.run_experiments([exp], "cpu", store, run, echo=lambda *_: None)
    assert calls == ["reproduce-cpu", "argmax probes: 1 call(s)", "reproduce-cpu-escalation-1"]


def test_a_run_that_serves_a_cell_per_d_is_listed_once(tmp_path):
    """A mixed-D run is read by one cell per D: the escalation's listing counts it once (capacity-trained
    said "83 runs" for the 19 it ran)."""
    from evalsuite.reproduce.experiment import CellSpec, Design, Experiment
    from evalsuite.reproduce.runner import run_experiments
    from evalsuite.store import Store

    store = Store(tmp_path / "s.db")
    design = Design({"task": "recall", "preset": "tiny"},
                    [CellSpec(("softmax", D), f"softmax D={D}", {"model": "softmax"}, metric=m)
                     for D, m in ((2, "accuracy"), (4, "val_accuracy"))], (1e-3, 3e-3, 1e-2))
    exp = Experiment("exp-d", "x", "a test", lambda cells, probes, p, judge: judge.inconclusive([], ""),
                     {"cpu": design, "paper": design}, {"cpu": 1, "paper": 1})
    ran = []

    def run(points, name, spec_):
        ran.append(len(points))
        for p in points:
            store.finish(RunRecord(run_id=p.run_id, config=p.config.as_dict(), status="done",
                                   metrics={"accuracy": 1.0, "val_accuracy": 1.0, "context_chance": 0.25}))
        return {}

    said = []
    run_experiments([exp], "cpu", store, run, echo=said.append)
    assert ran == [3, 3]  # the sweep's three rates, then the three reported seeds at the best rate
    listing = next(s for s in said if "escalation round 1" in s)
    assert listing.startswith(f"  exp-d, escalation round 1: {ran[1]} runs for softmax D=2")


def test_frontier_sweep_file_is_the_experiments_sweep(repo_root):
    """examples/sweeps/frontier-cpu.yaml runs exactly what `reproduce frontier` runs first."""
    in_file = {p.run_id for p in sweeps.expand(sweeps.load_spec(repo_root / "examples/sweeps/frontier-cpu.yaml"))}
    assert in_file == {p.run_id for p in sweeps.expand(rep.get("frontier-delta").spec("cpu"))}
    assert len(in_file) == 63


@pytest.mark.parametrize("scale", rep.SCALES)
def test_every_cell_a_verdict_reads_is_one_its_sweep_trains(scale, monkeypatch):
    """A dry run of each experiment's sweep: records made from its expanded points (each as if
    trained) fill every cell its verdict reads, so a setting changed in the spec but not in the
    cells (or the other way round) fails here, not hours into a reproduction."""
    monkeypatch.setenv("EVALSUITE_MEMORY_CHECK", "off")
    for exp in rep.all_experiments():
        spec = exp.spec(scale)
        if spec is None:
            continue
        runs = [RunRecord(run_id=p.run_id, config=p.config.as_dict(), status="done",
                          metrics={"accuracy": 0.5, "val_accuracy": 0.5, "floor": 0.1, "state_size": 1000})
                for p in sweeps.expand(spec)]
        cells = list(exp.cells(runs, scale).values())
        empty = [c.label for c in cells if not c.present]
        assert cells and not empty, f"{exp.name} ({scale}): no run of its sweep fills {empty}"


def test_escalation_runs_its_cheapest_points_first():
    """A segment that ends early has run the missing seeds (base budget) before the 4x reruns,
    and shorter contexts before longer ones at one budget."""
    from evalsuite.reproduce.runner import cheapest_first
    from evalsuite.resolve import resolve

    def config(seed, seq_len=64, epochs=1):
        return resolve("recall", "softmax", preset="tiny", overrides={
            "task.seq_len": seq_len, "task.num_kv_pairs": 4, "train.epochs": epochs}).replace(seed=seed)

    long4x, long_, short = config(1, epochs=4), config(3), config(2, seq_len=32)
    order = cheapest_first([sweeps.Point({}, c) for c in (long4x, long_, short)])
    assert [p.config.seed for p in order] == [2, 3, 1]
    # at one budget, the expected time decides before the context (unknown times last)
    dear, cheap, unknown, four = config(4, seq_len=32), config(5), config(6, seq_len=16), config(7, epochs=4)
    order = cheapest_first([sweeps.Point({}, c) for c in (four, unknown, dear, cheap)], [1.0, None, 300.0, 20.0])
    assert [p.config.seed for p in order] == [5, 4, 6, 7]


def test_a_segment_that_held_runs_back_is_over_before_its_deadline(tmp_path):
    """When a sweep holds runs back (they would end past the deadline: its result's ``left``), the
    reproduction starts no escalation round and says the segment ended, although the clock has time."""
    import time

    from evalsuite.reproduce import runner
    from evalsuite.store import Store

    calls = []

    def run(points, name, spec):
        calls.append(name)
        return {"ran": 0, "left": len(points)}

    exp = rep.EXPERIMENTS.get("copy")
    done = runner.run_experiments([exp], "cpu", Store(tmp_path / "s.db"), run=run, echo=lambda *_: None,
                                  deadline=time.monotonic() + 3600)
    assert done is False and calls == ["reproduce-cpu"]


def test_mad_paper_score_covers_its_six_tasks_and_fuzzy_recall_has_mads_levels():
    from types import SimpleNamespace

    from evalsuite.reproduce.experiments import mad as m
    p = m.PAPER
    tasks = {lv["task_label"] for lv in p["levels"]}
    assert tasks == {"in-context recall", "noisy recall", "fuzzy recall", "memorization", "compression",
                     "selective copying"}
    fuzzy = [lv for lv in p["levels"] if lv["task_label"] == "fuzzy recall"]
    # configs/tasks/fuzzy-in-context-recall.yml: the baseline, then one change at a time
    assert [lv["name"] for lv in fuzzy] == ["V16 T128", "V32 T128", "V64 T128", "V128 T128", "V16 T256", "V16 T512",
                                            "V16 T1024", "V16 n6400", "V16 n3200", "V16 n1600", "V16 n800"]
    assert {lv["task"] for lv in fuzzy} == {"fuzzy_recall_mad"}
    # levels of different tasks share names ("V16 T128" is a recall, a fuzzy recall and a compression level):
    # every one is a cell of its own (they once overwrote each other's)
    assert len({(lv["task_label"], lv["name"]) for lv in p["levels"]}) == len(p["levels"]) > len({lv["name"] for lv in p["levels"]})
    assert len(rep.get("mad").designs["paper"].cells) == len(p["models"]) * len(p["levels"]) * len(p["weight_decays"])
    cells = {(model, lv["task_label"], lv["name"], wd):
             SimpleNamespace(val=0.5, acc=0.25 if lv["task_label"] == "fuzzy recall" else 1.0)
             for model in p["models"] for lv in p["levels"] for wd in p["weight_decays"]}
    score = m.scores(cells, p)["softmax"]
    assert set(score) == tasks | {"mean"}
    assert score["fuzzy recall"] == 0.25 and score["mean"] == (5 * 1.0 + 0.25) / 6
    assert "fuzzy recall" not in {lv["task_label"] for lv in m.CPU["levels"]}  # the CPU cut leaves it out (named)


def test_plan_says_what_the_next_invocation_runs_and_why_without_running_or_writing(tmp_path):
    """`reproduce --plan`: with no store, every sweep point (and a note that escalation follows);
    with the sweep done, the first escalation round with the settledness rule's reason for each
    run. The store is only read: no file appears, none changes."""
    from evalsuite.store import Store

    missing = tmp_path / "none" / "evalsuite.db"
    res = CliRunner().invoke(main, ["reproduce", "softmax-mqar", "--plan", "--store", str(missing)])
    assert res.exit_code == 0, res.output
    assert res.output.count("sweep point of softmax d64 (T=64, D=4)") == 3 and "plan     6 run(s)" in res.output
    assert "escalate once their sweep points above finish" in res.output and not missing.parent.exists()
    store = Store(tmp_path / "s.db")
    for p in sweeps.expand(rep.get("softmax-mqar").spec("cpu")):  # the sweep, done: the middle rate validates best
        acc = 1.0 if p.config.train.lr == 0.003 else 0.9
        store.finish(RunRecord(run_id=p.run_id, config=p.config.as_dict(), status="done",
                               metrics={"accuracy": acc, "val_accuracy": acc, "floor": 0.2}))
    before = (tmp_path / "s.db").read_bytes()
    res = CliRunner().invoke(main, ["reproduce", "softmax-mqar", "--plan", "--store", str(tmp_path / "s.db"), "--workers", "2"])
    assert res.exit_code == 0, res.output
    lines = [ln for ln in res.output.splitlines() if "escalation of" in ln]
    assert len(lines) == 6 and all("lr 0.003" in ln and "needs 3 reported seeds" in ln for ln in lines), res.output
    assert {ln.split("seed ")[1].split()[0] for ln in lines} == {"1", "2", "3"}
    assert (tmp_path / "s.db").read_bytes() == before
    bad = CliRunner().invoke(main, ["reproduce", "softmax-mqar", "--plan", "--smoke"])
    assert bad.exit_code == 2 and "--smoke: not with --plan" in bad.output


def test_the_guides_worked_example_is_one_file_that_plans_and_smokes(repo_root, tmp_path):
    """docs/guide/layout.md's worked experiment, dropped into the experiments package as its one
    file (the package's path extended, so the checkout stays untouched): `--plan` lists its nine
    sweep points and `--smoke` trains each and judges it, with nothing else edited. The CPU base is
    swapped for the tiny preset so the smoke takes seconds."""
    import re

    text = (repo_root / "docs" / "guide" / "layout.md").read_text()
    code = re.search(r"## Worked example: an experiment in one declaration.*?```python\n(.*?)```", text, re.S).group(1)
    (tmp_path / "delta_beats_linear_d8.py").write_text(code)
    script = textwrap.dedent(f"""
        import evalsuite.reproduce.settings as settings
        settings.CPU_BASE = {{"task": "recall", "model": "softmax", "preset": "tiny", "task.vocab_size": 256, "train.epochs": 1}}
        import evalsuite.reproduce.experiments as package
        package.__path__.append({str(tmp_path)!r})
        from evalsuite.cli import main
        for args in (["reproduce", "delta-beats-linear-d8", "--plan", "--store", {str(tmp_path / "p.db")!r}],
                     ["reproduce", "delta-beats-linear-d8", "--smoke", "--workers", "1", "--store", {str(tmp_path / "s.db")!r}]):
            main(args, standalone_mode=False)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                         env={**__import__("os").environ, "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert "plan     9 run(s)" in out.stdout and out.stdout.count("sweep point of delta d'8") == 3
    assert "smoke    " in out.stdout and "9 runs, 0 not done" in out.stdout, out.stdout[-2000:]
    assert re.search(r"delta-beats-linear-d8 [A-Z ]+ \[smoke", out.stdout), out.stdout[-2000:]


def test_the_ladder_climbs_past_4x_only_for_cells_a_clause_depends_on():
    """linear-width: elu+1 at (16, 16) and softmax at D = 4 both moved at 4x. The clause "falls short
    of softmax" reads elu+1 at D = 16, so it climbs to 16x on every reported seed (continuing its 4x
    rung: the same warm-up in steps, a plateau stop only past the 4x budget); no clause reads softmax
    at D = 4 (its D = 16, the control, sits at the ceiling), so it stays at 4x, whatever it would show."""
    from evalsuite.config import RunConfig
    from evalsuite.reproduce.runner import escalation_configs
    from tests.reproduce.synthetic import NO_PROBES, bound, linear_width

    exp = rep.get("linear-width")
    moved = [r for r in linear_width(0.07, 0.3, 0.9, 0.99, gain=0.2) if r.config["model"]["name"] != "softmax"]
    moved += bound("linear-width", ("softmax", 4), {4: 0.6, 16: 1.0}, gain=0.2, long=True)
    runs = [r.model_copy(update={"metrics": {**r.metrics, "budget_steps": int(100 * r.config["train"]["epochs"] / 4)}})
            for r in moved]
    cells = exp.cells(runs, "cpu")
    lin, soft4 = cells["elu+1", 16, 16], cells["softmax", 4]
    assert "needs 16x reruns" in "; ".join(lin.unsettled()) and "needs 16x reruns" in "; ".join(soft4.unsettled())
    up = escalation_configs(exp, runs, NO_PROBES, "cpu", lin)
    assert sorted(c.seed for c in up) == [1, 2, 3] and all(c.train.epochs == 16 * 4 for c in up)
    warmup = RunConfig.from_dict(lin.best_runs[0].config).train.warmup(100)
    assert all(c.train.warmup_steps == warmup and c.train.plateau_after == 400 and c.train.plateau_window for c in up)
    assert escalation_configs(exp, runs, NO_PROBES, "cpu", soft4) == []
