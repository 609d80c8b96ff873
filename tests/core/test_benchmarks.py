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
                                    "short_conv.py"])
def test_the_others_parse_their_options(repo_root, script):
    out = subprocess.run([sys.executable, f"benchmarks/{script}", "--help"], cwd=repo_root, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr


def test_report_scale_runs_at_a_tiny_size(repo_root):
    out = subprocess.run([sys.executable, "benchmarks/report_scale.py", "--runs", "12", "--full-runs", "3"],
                         cwd=repo_root, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("report ") == 2 and "12 runs, compact" in out.stdout
