"""The project installs the ordinary way: build the wheel, install it (not editable) into a fresh
virtual environment, and drive the console script from there."""
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
SKIP = shutil.ignore_patterns(".venv", ".git", "results", "test-artifacts", "build", "dist", "*.egg-info",
                              "__pycache__", ".pytest_cache", ".hypothesis")


def _run(cmd, **kwargs):
    out = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600, **kwargs)
    assert out.returncode == 0, f"{cmd}\n{out.stdout}\n{out.stderr}"
    return out.stdout


def test_wheel_installs_and_runs(repo_root, tmp_path):
    src = tmp_path / "src"
    shutil.copytree(repo_root, src, ignore=SKIP)  # build from a copy: the checkout stays clean
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", tmp_path / "dist",
          src])
    wheel = next((tmp_path / "dist").glob("evalsuite-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    # the checkout's tasks/, models/ and reports/ ship as evalsuite/tasks/, ...: every package and template
    roots = {"evalsuite": "evalsuite", "tasks": "evalsuite/tasks", "models": "evalsuite/models", "reports": "evalsuite/reports"}
    for folder, installed in roots.items():
        for path in (repo_root / folder).rglob("*"):
            if path.name == "__init__.py" or path.suffix == ".j2":
                shipped = f"{installed}/{path.relative_to(repo_root / folder).as_posix()}"
                assert shipped in names, shipped
    assert not any(n.split("/")[0] in ("tasks", "models", "reports") for n in names), "no generic top-level package"

    # a fresh environment; its dependencies come from this one (a .pth line), evalsuite only from the wheel
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", venv])
    py = venv / "bin" / "python"
    site = Path(_run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).strip())
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run([py, "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel])
    where = _run([py, "-c", "import evalsuite, evalsuite.tasks, evalsuite.models, evalsuite.reports.sections, "
                            "evalsuite.reproduce.experiments; print(evalsuite.__file__, evalsuite.tasks.__file__)"])
    assert all(w.startswith(str(site)) for w in where.split()), where

    cli = venv / "bin" / "evalsuite"
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("EVALSUITE_STORE", None)
    assert "recall" in _run([cli, "list"], cwd=work, env=env)
    bad = subprocess.run([str(cli), "run", "--task", "recal", "--model", "linear"], capture_output=True, text=True,
                         cwd=work, env=env, timeout=120)
    assert bad.returncode == 2 and "Did you mean 'recall'" in bad.stderr and "Traceback" not in bad.stderr
    assert list(work.iterdir()) == []  # refused before anything was written
    _run([cli, "run", "--task", "recall", "--model", "linear", "--preset", "tiny", "--device", "cpu"], cwd=work, env=env)
    _run([cli, "report"], cwd=work, env=env)
    assert (work / "results" / "evalsuite.db").exists() and (work / "results" / "report.html").stat().st_size > 10_000
    assert "softmax-mqar" in _run([cli, "reproduce", "--list"], cwd=work, env=env)  # experiments are discovered
