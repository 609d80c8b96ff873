from pathlib import Path

import pytest
from click.testing import CliRunner

from evalsuite.cli import main
from evalsuite.store import load


def invoke(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_run_prints_summary_records_and_reports(tmp_path, store_path):
    res = invoke("run", "--task", "recall", "--model", "linear", "--preset", "tiny", "--store", str(store_path),
                 "--out", str(tmp_path / "reports"), "--device", "cpu")
    assert res.exit_code == 0, res.output
    assert "test accuracy" in res.output and "state size" in res.output
    df = load(store_path)
    assert list(df.status) == ["done"]
    report = tmp_path / "reports" / f"{df.run_id[0]}.html"
    assert report.exists() and str(report) in res.output
    html = report.read_text()
    assert "<h1>evalsuite: linear/elu1 on recall (T 32, D 4), preset tiny, lr 0.003, seed 0</h1>" in html
    assert 'src="http' not in html and 'href="http' not in html  # self-contained

    res = invoke("run", "--task", "recall", "--model", "linear", "--preset", "tiny", "--store", str(store_path),
                 "--out", str(tmp_path / "reports"))
    assert res.exit_code == 0 and "cached" in res.output


@pytest.mark.parametrize("args, message", [
    (["--task", "recal", "--model", "linear"], "Did you mean 'recall'"),
    (["--task", "recall", "--model", "linear", "--set", "num_kv_pairs=40"], "4 x num_kv_pairs <= seq_len"),
    (["--task", "recall", "--model", "linear", "--set", "d_model=-1"], "model.d_model"),
    (["--task", "recall", "--model", "linear", "--set", "lr=fast"], "train.lr"),
    (["--task", "recall", "--model", "linear", "--set", "train.bogus=1"], "unknown key 'bogus'"),
    (["--task", "recall", "--model", "linear", "--feature-map", "eluu"], "unknown feature map 'eluu'"),
    (["--task", "recall", "--model", "linear", "--seed", "-3"], "--seed"),
    (["--task", "recall", "--model", "linear", "--device", "tpu"], "--device"),
    (["--task", "recall", "--model", "linear", "--set", "model.positions=rope"], "positions='rope' rotates"),
    (["--task", "recall", "--model", "linear", "--set", "model.positions=alibi"], "model.positions"),
    (["--task", "recall", "--model", "linear", "--preset", "tny"], "Did you mean 'tiny'?"),
    (["--task", "recall", "--model", "linear", "--set", "num_kv_pair=4"], "Did you mean 'num_kv_pairs'"),
])
def test_bad_input_exits_2_and_writes_nothing(store_path, args, message):
    res = CliRunner().invoke(main, ["run", *args, "--store", str(store_path)])
    assert res.exit_code == 2, res.output
    assert message in res.output
    assert "Traceback" not in res.output
    assert not store_path.exists()
    assert not Path("results").exists()


def test_list_shows_everything():
    res = invoke("list")
    assert "num_kv_pairs=8*" in res.output  # the default preset's value, not the generator's 4
    assert res.exit_code == 0
    for word in ("recall", "softmax", "linear", "elu1", "default", "tiny"):
        assert word in res.output
    assert invoke("list", "presets").output.startswith("presets:")


def test_report_over_store(tmp_path, store_path):
    invoke("run", "--task", "recall", "--model", "softmax", "--preset", "tiny", "--store", str(store_path),
           "--no-report")
    out = tmp_path / "r.html"
    res = invoke("report", "--store", str(store_path), "-o", str(out))
    assert res.exit_code == 0 and out.exists()
    assert CliRunner().invoke(main, ["report", "--store", str(tmp_path / "none.db")]).exit_code == 2


def test_every_option_of_every_command_has_help():
    import click

    missing = [(name, p.opts) for name, cmd in main.commands.items() for p in cmd.params
               if isinstance(p, click.Option) and not p.help and p.name != "help"]
    assert not missing
