"""`evalsuite list` reads its listing from ``evalsuite/cli/catalogue.json`` (no torch import) while the
sources it was made from are unchanged, and lists live otherwise (``evalsuite.cli.catalogue``)."""
import json
import subprocess
import sys

from click.testing import CliRunner

from evalsuite.cli import catalogue
from evalsuite.cli import main


def invoke(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_the_shipped_catalogue_is_what_a_live_listing_prints():
    data = json.loads(catalogue.PATH.read_text())
    assert data["sources"] == catalogue.fingerprint(), (
        "a task, model, feature map or preset changed since evalsuite/cli/catalogue.json was made: "
        "run `python -m evalsuite.cli.catalogue` and commit it")
    assert data["listing"] == catalogue.live()
    assert catalogue.read() == data["listing"]


def test_a_changed_source_lists_live(monkeypatch):
    monkeypatch.setattr(catalogue, "fingerprint", lambda: "0" * 64)
    assert catalogue.read() is None
    called, real = [], catalogue.live_listing
    monkeypatch.setattr(catalogue, "live_listing", lambda kind: called.append(kind) or real(kind))
    res = invoke("list", "presets")
    assert res.exit_code == 0 and called == ["presets"] and "tiny" in res.output


def test_list_imports_no_torch():
    code = ("import runpy, sys\nsys.argv = ['evalsuite', 'list']\n"
            "try:\n    runpy.run_module('evalsuite.cli', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "print('torch imported' if 'torch' in sys.modules else 'no torch', file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "recall" in out.stdout and out.stderr.strip().endswith("no torch"), out.stderr[-500:]
