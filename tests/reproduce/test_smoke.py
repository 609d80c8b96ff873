"""`evalsuite reproduce --smoke`: the experiments' own points at a few steps, judged apart."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from evalsuite import reproduce as rep
from evalsuite import sweep as sweeps
from evalsuite.cli import main
from evalsuite.records import RunRecord
from evalsuite.reproduce import smoke

SHRUNK = {"epochs", "num_val", "num_test", "eval_every", "warmup_steps", "patience"}


@pytest.mark.parametrize("name", ["capacity-law", "deltaproduct-state-tracking", "mad", "jrt"])
def test_a_smoke_point_is_its_experiments_point_at_a_few_steps(name, monkeypatch):
    monkeypatch.setenv("EVALSUITE_MEMORY_CHECK", "off")
    exp = rep.get(name)
    originals = sweeps.expand(exp.spec("cpu"))
    shrunk = smoke.smoke_points([exp], "cpu")[name]
    assert len(shrunk) == len(originals)
    for before, after in zip(originals, shrunk):
        b, a = before.config.as_dict(), after.config.as_dict()
        batches = max(1, b["train"]["num_train"] // b["train"]["batch_size"])
        assert round(a["train"]["epochs"] * batches) == smoke.STEPS  # as the trainer counts its steps
        assert a["train"]["num_val"] <= smoke.EXAMPLES and a["train"]["num_test"] <= smoke.EXAMPLES
        # everything the finding is about stays: the model, the rate, the seed, the task but for test-set sizes
        assert {k: v for k, v in a["train"].items() if k not in SHRUNK} == \
               {k: v for k, v in b["train"].items() if k not in SHRUNK}
        assert a["model"] == b["model"] and a["seed"] == b["seed"]
        strip = lambda t: {**t, "eval_segments": [{k: v for k, v in s.items() if k != "num_test"}
                                                  for s in t.get("eval_segments", [])]}
        assert strip(a["task"]) == strip(b["task"])
        assert all(s.get("num_test", 0) <= smoke.EXAMPLES for s in a["task"].get("eval_segments", []))
        assert after.run_id != before.run_id  # a smoke run never stands in for a reproduction's run


def test_smoke_trains_each_shared_point_once_and_judges_each_experiment_from_its_own(tmp_path):
    from evalsuite.store import Store

    store = Store(tmp_path / "s.db")
    exps = rep.select(["softmax-mqar", "copy", "capacity-knee", "mad"])
    calls = []

    def run(points, name, spec):  # stands in for the executor
        calls.append((name, len(points)))
        for p in points:
            store.finish(RunRecord(run_id=p.run_id, config=p.config.as_dict(), status="done",
                                   metrics={"accuracy": 0.0, "val_accuracy": 0.0, "context_chance": 0.25,
                                            "steps": smoke.STEPS, "best_step": smoke.STEPS}))
        return {}

    said = []
    verdicts, runs = smoke.run_smoke(exps, "cpu", store, run, echo=said.append)
    want = {e.name: len(sweeps.expand(e.spec("cpu"))) if e.spec("cpu") else 0 for e in exps}
    assert calls == [("reproduce-cpu-smoke", sum(want.values()))] and len(runs) == calls[0][1]
    for exp in exps:  # every cell a verdict reads finds its smoke runs (MAD's levels differ by num_train)
        assert all(c.present for c in exp.cells(runs, "cpu", every_budget=True).values()), exp.name
    assert [v.name for v in verdicts] == [e.name for e in exps]
    assert any("capacity-knee: no training sweep" in line for line in said)  # probes only: said, not skipped silently
    # every smoke run at the floor: softmax-mqar's positive control fails, so it is inconclusive, not "not reproduced"
    assert verdicts[0].status.value == "inconclusive" and "positive control failed" in verdicts[0].why


@pytest.mark.parametrize("flag", [["--results", "r.md"], ["--verdicts-only"], ["--segment-minutes", "5"]])
def test_smoke_refuses_what_it_does_not_do_before_any_work(flag, tmp_path):
    res = CliRunner().invoke(main, ["reproduce", "copy", "--smoke", "--store", str(tmp_path / "s.db"), *flag])
    assert res.exit_code == 2 and f"Error: {flag[0]}: not with --smoke" in res.output
    assert not list(tmp_path.iterdir())
