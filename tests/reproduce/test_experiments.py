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
def test_every_experiment_spec_is_valid(scale):
    for exp in rep.all_experiments():
        spec = exp.spec(scale)
        if spec is not None:
            assert sweeps.expand(spec)
        assert spec is not None or exp.probes.get(scale), exp.name
        assert exp.params[scale] is not None


def test_paper_scale_verdicts_read_the_papers_widths():
    exp = rep.get("linear-width")
    assert exp.params["paper"]["widths"] == [64, 128, 256, 512]
    spec_widths = {pt.config.model.base.d_model for pt in sweeps.expand(exp.spec("paper"))}
    assert set(exp.params["paper"]["widths"]) <= spec_widths


def test_cli_list_groups_and_unknown_name():
    res = CliRunner().invoke(main, ["reproduce", "--list"])
    assert res.exit_code == 0 and all(e.name in res.output for e in rep.all_experiments())
    assert [e.name for e in rep.select(["frontier"])] == ["frontier-delta", "frontier-swa", "frontier-based"]
    bad = CliRunner().invoke(main, ["reproduce", "sharpnes"])
    assert bad.exit_code == 2 and "did you mean 'sharpness'" in bad.output


THROWAWAY = '''
from evalsuite.reproduce.experiment import Experiment, register
from evalsuite.reproduce.verdict import INCONCLUSIVE


def verdict(runs, probes, p, judge):
    return judge.verdict(INCONCLUSIVE, [f"{len(runs)} runs"], "a throwaway experiment judges nothing")


register(Experiment("throwaway-finding", "A finding that one new file adds.", "a test", verdict,
                    params={"cpu": {}, "paper": {}}, minutes={"cpu": 1, "paper": 1}))
'''


def test_an_experiment_is_one_new_file(tmp_path):
    """A module dropped into the experiments package (here: a folder added to its path, so the
    checkout stays untouched) appears in `reproduce --list` and is judged, with nothing else edited."""
    (tmp_path / "throwaway_finding.py").write_text(THROWAWAY)
    script = textwrap.dedent(f"""
        import sys
        import evalsuite.reproduce.experiments as package
        package.__path__.append({str(tmp_path)!r})
        from evalsuite.cli import main
        main(sys.argv[1:], standalone_mode=False)
    """)
    listed = subprocess.run([sys.executable, "-c", script, "reproduce", "--list"], capture_output=True, text=True,
                            timeout=120, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "throwaway-finding  (a test)" in listed.stdout and "A finding that one new file adds." in listed.stdout
    judged = subprocess.run([sys.executable, "-c", script, "reproduce", "throwaway-finding", "--store",
                             str(tmp_path / "s.db")], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert judged.returncode == 0, judged.stderr
    assert "throwaway-finding INCONCLUSIVE  (a throwaway experiment judges nothing)" in judged.stdout
    assert "throwaway-finding" not in CliRunner().invoke(main, ["reproduce", "--list"]).output  # only where added


def test_escalation_runs_shared_by_two_experiments_count_for_both(tmp_path):
    """Two experiments that need the same extra run both record it (else the second one would ask
    for it again forever)."""
    from evalsuite.store import Store

    store = Store(tmp_path / "s.db")
    point = sweeps.expand(sweeps.SweepSpec(base={"task": "recall", "model": "softmax", "preset": "tiny"}))[0]
    store.finish(RunRecord(run_id=point.run_id, config=point.config.as_dict(), status="done", metrics={"accuracy": 1.0}))
    for name in ("reproduce-a-cpu-escalation", "reproduce-b-cpu-escalation"):
        out = sweeps.run_configs([point.config], name=name, store=store, echo=lambda *_: None)
        assert out["ran"] == 0
    names = {s["name"] for s in store.sweeps()}
    assert {"reproduce-a-cpu-escalation", "reproduce-b-cpu-escalation"} <= names
    for s in store.sweeps():
        assert store.sweep_runs(s["sweep_id"])[1] == [point.run_id]


def test_frontier_sweep_file_is_the_experiments_sweep(repo_root):
    """examples/sweeps/frontier-cpu.yaml runs exactly what `reproduce frontier` runs first."""
    in_file = {p.run_id for p in sweeps.expand(sweeps.load_spec(repo_root / "examples/sweeps/frontier-cpu.yaml"))}
    assert in_file == {p.run_id for p in sweeps.expand(rep.get("frontier-delta").spec("cpu"))}
    assert len(in_file) == 54
