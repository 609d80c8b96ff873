"""The benchmark scripts still run against the code they measure (they print figures and assert
nothing, so without this an API change would break them silently); sizes here are tiny."""
import subprocess
import sys

import pytest


def test_train_throughput_runs(repo_root):
    out = subprocess.run([sys.executable, "benchmarks/train_throughput.py", "--steps", "1", "--rounds", "1",
                          "--generation-examples", "200", "--device", "cpu"], cwd=repo_root, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count(" steps/s") == 1 and "MQAR generation" in out.stdout


@pytest.mark.parametrize("script", ["reproduce_profile.py", "grouped_sweep.py", "kernels.py", "decode.py",
                                    "short_conv.py", "rung_saving.py"])
def test_the_others_parse_their_options(repo_root, script):
    out = subprocess.run([sys.executable, f"benchmarks/{script}", "--help"], cwd=repo_root, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr


def test_report_scale_runs_at_a_tiny_size(repo_root):
    out = subprocess.run([sys.executable, "benchmarks/report_scale.py", "--runs", "12", "--full-runs", "3"],
                         cwd=repo_root, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("report ") == 2 and "12 runs, compact" in out.stdout


def test_reproduce_projection_counts_the_evidence_methods_runs(monkeypatch):
    """benchmarks/project_reproduce.py at a fixed step time of 1 s: a cell costs its base runs, 3
    reported seeds and, below the ceiling, 3 runs at its 4x rung, each continuing its base run's
    snapshot (3.2x a base run; counted by hand here for `copy`)."""
    import importlib.util
    from pathlib import Path

    from evalsuite import reproduce
    from evalsuite.sweep import expand

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "project_reproduce.py"
    spec = importlib.util.spec_from_file_location("project_reproduce", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "step_seconds", lambda config, steps: 1.0)
    points = expand(reproduce.get("copy").spec("cpu"))
    steps = [module.total_steps(p.config) for p in points]
    cells = list(reproduce.get("copy").cells([module.fake_run(p) for p in points], "cpu").values())
    per_cell = [module.total_steps(next(p.config for p in points if p.run_id == c.runs[0].run_id)) for c in cells]
    learned = (sum(steps) + 3 * sum(per_cell)) * 1.1 / 60
    below = learned + 3 * 3.2 * sum(per_cell) * 1.1 / 60
    row = next(line for line in module.project(["copy"], 2, 1, 0.10) if line.startswith("| copy "))
    cols = [c.strip() for c in row.split("|")]
    assert cols[2] == f"{len(points)} ({len(points)})" and cols[3] == str(len(cells)) == "2"
    assert cols[4] == f"{learned:,.0f}" and cols[5] == f"{below:,.0f}"
    top = below + 3 * 12.8 * sum(per_cell) * 1.1 / 60  # every reported seed's 16x rung, from its 4x run's decay
    assert cols[7] == f"{top / 2:,.0f}"
    # a point another experiment pays for costs nothing here: copy's sweep, paid for by copy itself
    paid = next(line for line in module.project(["copy"], 2, 1, 0.10, paid=["copy"]) if line.startswith("| copy "))
    assert "(0: shared above)" in paid
