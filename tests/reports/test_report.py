"""The HTML report opened in a real browser (Debian's Chromium driven by Playwright)."""
import contextlib
import copy
import fcntl
import html
import json
import os
import re
import shutil
import textwrap
from pathlib import Path

import pytest

import evalsuite
from evalsuite import analysis
from evalsuite import config as cfg
from evalsuite.labels import model_label
from evalsuite.models import feature_maps
from evalsuite.reports import builder
from evalsuite.reports.sections import setting_label
from evalsuite.store import Store

CHROMIUM = "/usr/bin/chromium"
HOSTILE = "<script>alert(1)</script>"
BROKEN = textwrap.dedent('''
    from evalsuite.models import Mixer

    class BrokenMixer(Mixer):
        """Raises: recorded as failed, with its error text (which is hostile too)."""
        def forward(self, x):
            raise RuntimeError("kaboom <img src=x onerror=alert(2)>")
        def state_size(self, seq_len):
            return 0
''')


def _variant(store: Store, base, *, seed=None, lr=None, accuracy=None, **model) -> None:
    """A synthetic record: a trained run's record with another model, seed or rate (no training)."""
    config = copy.deepcopy(base.config)
    config["model"].update(model)
    if seed is not None:
        config["seed"] = seed
    if lr is not None:
        config["train"]["lr"] = lr
    metrics = copy.deepcopy(base.metrics)
    if accuracy is not None:
        metrics["accuracy"] = accuracy
        for s in metrics.get("slices", []):
            s["accuracy"] = max(0.0, min(1.0, s["accuracy"] + accuracy - base.metrics["accuracy"]))
    store.finish(base.model_copy(update=dict(run_id=cfg.run_id(config), config=config, metrics=metrics)))


@contextlib.contextmanager
def _shared(tmp_path_factory, name: str):
    """A folder that the xdist workers of one pytest run share, held under a lock: the first worker
    that needs it fills it, the others wait and read it (a run without xdist has it to itself)."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name  # parent: this run's, not older runs'
    with open(folder.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield folder
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def report_store(tmp_path_factory):
    """The report of the store ``_build_report_store`` makes, built once per test run."""
    with _shared(tmp_path_factory, "report-store") as root:
        if not (root / "report.html").exists():
            work = root.with_name(root.name + ".building")
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir()
            _build_report_store(work)
            work.rename(root)  # whole or absent: a worker that died building leaves no half a store
    return root / "report.html"


def _build_report_store(root: Path) -> None:
    """Runs of several tasks and models, a failed run, a capacity probe, a hostile plug-in name.

    Two tiny models are trained (recall with eval segments, needle) for the real shape of every
    metric; the other records are derived from them, and the failed one comes from a broken plug-in."""
    store = Store(root / "store.db")
    mixture = {"task.eval_segments": [{"num_kv_pairs": 2}, {"num_kv_pairs": 6}]}
    evalsuite.run("recall", "softmax", preset="tiny", store=store.path, **mixture)
    evalsuite.run("needle", "softmax", preset="tiny", store=store.path)
    (base,) = [r for r in store.runs() if r.task == "recall"]
    _variant(store, base, name="linear", feature_map="elu1", accuracy=0.4)
    _variant(store, base, name="delta", feature_map=None, accuracy=0.7)
    _variant(store, base, name="hybrid", feature_map="elu1", pattern="SL", accuracy=0.8)
    _variant(store, base, seed=1, accuracy=0.9)
    _variant(store, base, lr=0.01, accuracy=0.3)
    feature_maps.register(HOSTILE)(type("Hostile", (feature_maps.Elu1,), {}))
    try:  # registered only while its record is made: the report reads the name as a string
        _variant(store, base, name="linear", feature_map=HOSTILE, accuracy=0.2)
    finally:
        feature_maps.FEATURE_MAPS._entries.pop(HOSTILE, None)
    (root / "broken.py").write_text(BROKEN)
    failed = evalsuite.run("recall", f"{root / 'broken.py'}:BrokenMixer", preset="tiny", store=store.path)
    assert failed.status == "failed"
    store.add_probes(analysis.capacity_probe("linear", d_key=8, pairs=[2, 8, 32]))
    store.add_probes(analysis.capacity_probe("softmax", d_key=8, pairs=[2, 8, 32]))
    from click.testing import CliRunner
    from evalsuite.cli import main

    out = root / "report.html"
    res = CliRunner().invoke(main, ["report", "--store", str(store.path), "-o", str(out)])
    assert res.exit_code == 0, res.output


@pytest.fixture(scope="session")
def rendered(report_store, tmp_path_factory):
    """builder.render of the report store's runs, each form rendered once per test run (a render
    draws every plot): rendered(compact=True) is the compact report; ``rendered.runs`` the records."""
    runs = Store(report_store.parent / "store.db").runs()

    def render(compact: bool = False) -> str:
        with _shared(tmp_path_factory, "report-renders") as folder:
            path = folder / ("compact.html" if compact else "full.html")
            if not path.exists():
                folder.mkdir(exist_ok=True)
                html = builder.render(runs, compact=compact)
                path.with_suffix(".part").write_text(html)
                path.with_suffix(".part").rename(path)
            return path.read_text()
    render.runs = runs
    return render


def test_report_has_every_section_and_escapes_hostile_names(report_store):
    html = report_store.read_text()
    for section in ("summary", "failures", "scaling", "needle", "capacity", "interference", "sharpness", "state_rank",
                    "runs"):
        assert f'id="{section}"' in html, section
    assert HOSTILE not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<img src=x" not in html and "kaboom &lt;img src=x" in html
    assert not re.search(r"(src|href)=\"(https?:)?//", html)  # no external URL anywhere
    for run_id in re.findall(r'href="#run-([0-9a-f]{16})"', html):
        assert f'id="run-{run_id}"' in html  # every summary link has its section
    assert report_store.stat().st_size < 10 * 2**20


def test_report_in_headless_chromium(report_store, repo_root):
    playwright = pytest.importorskip("playwright.sync_api", reason="install the dev extra (make test does)")
    assert Path(CHROMIUM).exists(), "Debian's chromium is missing: `make test` installs it (apt-get install chromium)"
    artifacts = repo_root / "test-artifacts"
    artifacts.mkdir(exist_ok=True)
    console, requests, dialogs = [], [], []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--no-first-run", "--disable-quic", "--disable-sync"])
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: console.append(str(e)))
        page.on("request", lambda r: requests.append(r.url))
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(report_store.as_uri())
        page.wait_for_load_state("load")
        assert page.evaluate("document.images.length") > 10
        broken = page.evaluate("Array.from(document.images).filter(i => !i.complete || i.naturalWidth === 0).map(i => i.alt)")
        assert broken == []

        def column(name):
            idx = page.evaluate(f"Array.from(document.querySelectorAll('#summary-table thead th')).findIndex(th => th.textContent === '{name}')")
            return page.evaluate(f"Array.from(document.querySelectorAll('#summary-table tbody tr')).map(r => r.cells[{idx}].textContent.trim())")

        page.click("#summary-table thead th:text-is('model')")
        models = column("model")
        assert models == sorted(models)
        page.click("#summary-table thead th:text-is('model')")
        assert column("model") == sorted(models, reverse=True)
        page.fill("#filter", "needle")
        assert page.evaluate("Array.from(document.querySelectorAll('#summary-table tbody tr')).filter(r => r.style.display !== 'none').length") == 1
        page.fill("#filter", "")
        assert page.get_by_text(HOSTILE).count() >= 1  # shown as text, not run
        page.screenshot(path=str(artifacts / "report.png"), full_page=True)
        page.click("#runs-table tbody tr:first-child summary")  # a run opens on demand
        assert page.evaluate("document.querySelector('#runs-table tbody tr details').open")
        for width in (1400, 390):
            page.set_viewport_size({"width": width, "height": 900})
            page.goto(report_store.as_uri())
            page.wait_for_load_state("load")
            # no page-level horizontal overflow: wide tables scroll inside their own box
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"), width
            # no two sibling blocks of the page overlap (figures, tables, headings, text)
            overlaps = page.evaluate("""() => {
                const out = [];
                const blocks = Array.from(document.body.children).filter(e => e.offsetParent !== null && e.tagName !== 'SCRIPT');
                for (let i = 0; i + 1 < blocks.length; i++) {
                    const a = blocks[i].getBoundingClientRect(), b = blocks[i + 1].getBoundingClientRect();
                    if (a.height && b.height && b.top < a.bottom - 1) out.push(blocks[i].tagName + '/' + blocks[i + 1].tagName);
                }
                return out; }""")
            assert overlaps == [], (width, overlaps)
            height = page.evaluate("document.documentElement.scrollHeight")
            assert height < 900 * 60, (width, height)  # a small store's report: the runs are one table, not a page each
            page.screenshot(path=str(artifacts / f"report-{width}.png"), full_page=False)
        browser.close()
    assert console == []
    assert dialogs == []
    assert all(u.startswith(("file://", "data:")) for u in requests), [u for u in requests if not u.startswith("file")]


def test_compact_report_builds_a_runs_details_in_headless_chromium(rendered, tmp_path):
    """A compact report's row holds no static detail: opening it (or a #run- link) builds the run's
    metrics and configuration from the compressed embedded data, hostile strings as text."""
    playwright = pytest.importorskip("playwright.sync_api", reason="install the dev extra (make test does)")
    assert Path(CHROMIUM).exists(), "Debian's chromium is missing: `make test` installs it (apt-get install chromium)"
    runs = rendered.runs
    path = tmp_path / "compact.html"
    path.write_text(rendered(compact=True))
    hostile = next(r for r in runs if r.config["model"].get("feature_map") == HOSTILE)
    console, dialogs = [], []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: console.append(str(e)))
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(path.as_uri() + f"#run-{hostile.run_id}")  # a link to a run opens and fills its row
        page.wait_for_load_state("load")
        box = f"#run-{hostile.run_id} div.run-detail"
        page.wait_for_selector(f"{box} table", timeout=10_000)
        text = page.inner_text(box)
        assert f"Test accuracy {hostile.metrics['accuracy']:.4g}" in text and "floor_reader" in text
        assert page.evaluate(f"document.querySelector('{box} pre').textContent").count(HOSTILE) == 1  # as text
        first = runs[0].run_id
        page.click(f"#run-{first} summary")
        page.wait_for_selector(f"#run-{first} div.run-detail table", timeout=10_000)
        steps = page.evaluate(f"""Array.from(document.querySelectorAll('#run-{first} div.run-detail tr'))
            .filter(r => r.cells[0].textContent === 'steps').map(r => r.cells[1].textContent)""")
        assert steps == [str(runs[0].metrics["steps"])]
        # its learning curve, drawn from the embedded history: validation accuracy and training loss
        lines = page.evaluate(f"document.querySelectorAll('#run-{first} div.run-detail svg polyline').length")
        assert lines == 2, lines
        browser.close()
    assert console == [] and dialogs == []


def test_a_verdict_draws_the_learning_curves_of_its_cells_in_headless_chromium(tmp_path):
    """Beside each verdict, its cells' seeds as learning curves (4x reruns dashed), drawn from the
    runs' embedded histories when opened: did each plateau, when did it escape."""
    playwright = pytest.importorskip("playwright.sync_api", reason="install the dev extra (make test does)")
    assert Path(CHROMIUM).exists(), "Debian's chromium is missing: `make test` installs it (apt-get install chromium)"
    from evalsuite import reproduce as rep
    from tests.reproduce.synthetic import CASES, NO_PROBES

    runs = [r.model_copy(update={"history": [{"step": 50 * k, "val_accuracy": min(1.0, 0.1 + 0.1 * k), "train_loss": 1.0}
                                             for k in range(12)]}) for r in CASES["delta-vs-linear"][0]]
    verdict = rep.get("delta-vs-linear").judge(runs, NO_PROBES, "cpu")
    path = tmp_path / "v.html"
    path.write_text(builder.render(runs, verdicts=[verdict], compact=True))
    console = []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.on("pageerror", lambda e: console.append(str(e)))
        page.goto(path.as_uri())
        page.click("details.verdict-curves summary")
        page.wait_for_selector("div.cell-curves svg", timeout=10_000)
        panels = page.evaluate("document.querySelectorAll('div.cell-curves svg').length")
        dashed = page.evaluate("document.querySelectorAll('div.cell-curves polyline[stroke-dasharray=\"4 2\"]').length")
        browser.close()
    assert console == []
    assert panels == len(verdict.cells) and dashed == sum(len(c.long) for c in verdict.cells) > 0


def test_render_refuses_unknown_plot_format():
    with pytest.raises(ValueError, match="plot_format"):
        builder.render([], plot_format="gif")


def test_svg_plots(report_store, tmp_path):
    runs = Store(report_store.parent / "store.db").runs()
    html = builder.render(runs, plot_format="svg")
    assert "data:image/svg+xml;base64," in html




def _frontier_run(model, d_model, acc, state, epochs=3, seed=0, **opts):
    from evalsuite.records import RunRecord

    config = {"task": {"name": "recall", "seq_len": 64, "num_kv_pairs": 16},
              "model": {"name": model, "d_model": d_model, "n_layers": 2, **opts},
              "train": {"lr": 0.003, "epochs": epochs}, "seed": seed}
    return RunRecord(run_id=f"{model}{d_model}{opts}{epochs}", config=config, status="done",
                     metrics={"accuracy": acc, "val_accuracy": acc, "state_size": state, "floor": 0.11})


def test_frontier_section_leads_and_marks_the_pareto_frontier():
    run = _frontier_run
    runs = [run("delta", 16, 0.9, 600), run("delta", 32, 0.99, 2200), run("linear", 16, 0.3, 700, feature_map="elu1"),
            run("linear", 32, 0.95, 2300, feature_map="elu1"), run("swa", 32, 0.5, 2048, window=16)]
    html = builder.render(runs)
    assert html.index('id="frontier"') < html.index('id="summary"')  # the headline figure leads
    frontier_part = html[html.index('id="frontier"'):html.index('id="runs"')]
    table = frontier_part[:frontier_part.index("<details>")]  # the per-model table, before the points
    assert "Pareto frontier" in frontier_part and "least state reaching 0.9" in frontier_part
    # delta reaches 0.9 at 600 floats; elu+1 only at 2,300; the sliding window never
    rows = re.findall(r"<tr><td>recall, T=64, D=16, 3 epochs</td><td>([^<]+)</td><td class=\"num\">\d+</td>"
                      r"<td class=\"num\">[^<]*</td><td class=\"num\">[^<]*</td>\s*<td class=\"num\">([^<]+)</td>", table)
    assert dict(rows) == {"delta": "600", "linear/elu1": "2300", "swa": "never"}


def test_frontier_keeps_budgets_apart_and_draws_a_4x_rerun_on_its_base_point():
    """Runs of another base budget (another experiment's) make their own plot and frontier, a 4x
    rerun is its base point's hollow twin (not a point of its own line), and lines of another
    width never join: the picture a reviewer reads never mixes budgets or settings."""
    from evalsuite.reports.builder import _slices, summarize
    from evalsuite.reports.sections import ReportData
    from evalsuite.reports.sections.frontier import Frontier

    run = _frontier_run
    runs = [run("delta", 64, 0.14, 900, feature_dim=4), run("delta", 64, 0.70, 900, epochs=12, feature_dim=4),
            run("delta", 64, 0.95, 1400, feature_dim=8), run("delta", 64, 0.99, 2400, feature_dim=16),
            run("delta", 32, 0.10, 450, feature_dim=4),  # another width: its own line
            run("linear", 64, 0.2, 900, feature_dim=4, feature_map="elu1"),
            run("linear", 64, 0.5, 1400, feature_dim=8, feature_map="elu1"),
            # another experiment's budget: 32 epochs is 4x no budget these points ran, so a plot of its own
            run("linear", 64, 0.98, 1400, epochs=32, feature_dim=8, feature_map="elu1"),
            run("delta", 64, 0.97, 1400, epochs=32, feature_dim=8), run("softmax", 64, 0.99, 16000, epochs=32),
            run("linear", 64, 0.9, 700, epochs=32, feature_dim=4, feature_map="elu1")]
    summary = summarize(runs)
    out = Frontier().build(ReportData(runs, summary, _slices(runs, {r["anchor"] for r in summary}), None), "svg")
    assert [p["name"] for p in out["plots"]] == ["recall-T64-D16-3ep", "recall-T64-D16-32ep"]  # most points first
    by = {(p["setting"], p["series"], p["state"], p["budget"]): p["accuracy"] for p in out["points"]}
    three = "recall, T=64, D=16, 3 epochs"
    assert by[(three, "delta, width 64", 900, "base")] == 0.14 and by[(three, "delta, width 64", 900, "4x")] == 0.70
    assert (three, "delta, width 32", 450, "base") in by
    assert not any(k[0] == three and k[2] == 700 for k in by)  # the 32-epoch elu+1 point is not on the 3-epoch plot
    table = {(r["setting"], r["model"]): r for r in out["table"]}
    d = table[(three, "delta, width 64")]
    assert (d["points"], d["best"], d["best_4x"], d["state_0.9"], d["state_4x"]) == (3, 0.99, 0.70, 1400, 1400)
    assert table[("recall, T=64, D=16, 32 epochs", "linear/elu1")]["state_0.9"] == 700
    front = {(p["series"], p["state"], p["budget"]) for p in out["points"] if p["frontier"] and p["setting"] == three}
    assert ("delta, width 64", 900, "4x") in front and ("delta, width 64", 900, "base") not in front


def test_a_run_trained_on_mixed_d_is_shown_as_its_mixture_not_as_the_tasks_top_level_shape():
    """A run trained on segments of several D and T (capacity-trained's mixed-D runs) was trained at no
    one shape: the summary, the frontier and the analysis tables name its mixture, never the task's
    top-level seq_len and num_kv_pairs (which it never trained on)."""
    from evalsuite.reports.builder import _slices, summarize
    from evalsuite.reports.sections import ReportData
    from evalsuite.reports.sections.frontier import Frontier

    segments = [{"seq_len": 4 * D, "num_kv_pairs": D, "share": 1.0} for D in (2, 8, 32)]
    runs = []
    for model, state, acc, opts in [("delta", 500, 0.4, {"feature_dim": 8}), ("delta", 900, 0.6, {"feature_dim": 16}),
                                    ("linear", 500, 0.2, {"feature_dim": 8, "feature_map": "elu1"}),
                                    ("linear", 900, 0.3, {"feature_dim": 16, "feature_map": "elu1"})]:
        r = _frontier_run(model, 64, acc, state, **opts)
        r.config["task"]["segments"] = segments
        runs.append(r)
    runs.append(_frontier_run("delta", 64, 0.9, 500, feature_dim=8))  # one shape: T 64, D 16
    summary = summarize(runs)
    mixed = [r for r in summary if r["mixture"]]
    assert len(mixed) == 4 and all((r["seq_len"], r["pairs"], r["mixture"]) == (None, None, {"T": "8-128", "D": "2-32"})
                                   for r in mixed)
    assert [(r["seq_len"], r["pairs"]) for r in summary if not r["mixture"]] == [(64, 16)]
    out = Frontier().build(ReportData(runs, summary, _slices(runs, {r["anchor"] for r in summary}), None), "svg")
    assert [p["name"] for p in out["plots"]] == ["recall-mixed-3ep"]
    assert {p["setting"] for p in out["points"]} == {"recall, trained on mixed D 2-32 (T 8-128), 3 epochs"}
    assert setting_label(runs[0].config) == "mixed T 8-128, D 2-32, width 64, 2 layers, feature_dim 8"
    assert setting_label(runs[-1].config) == "T 64, D 16, width 64, 2 layers, feature_dim 8"
    html = builder.render(runs)
    assert "<td class=\"num\">mixed 8-128</td><td class=\"num\">mixed 2-32</td>" in html


def test_compact_report_keeps_each_run_and_what_verdicts_read_but_not_curves_or_other_analyses(rendered):
    runs = rendered.runs
    full, compact = rendered(), rendered(compact=True)
    assert len(compact) < len(full)
    assert "training curves of" in full and "training curves of" not in compact
    for r in runs:
        assert f'id="run-{r.run_id}"' in compact  # every point of a plot still links to its run
    assert '<script type="application/gzip" id="evalsuite-data" data-encoding="base64">' in compact
    data = builder.embedded_json(compact)
    assert [r["run_id"] for r in data["runs"]] == [r.run_id for r in runs]
    assert builder.embedded_json(full)["runs"][0]["config"] == data["runs"][0]["config"]  # the same data, compressed
    done = [r for r in data["runs"] if r["status"] == "done"]
    # of the analyses, only what a verdict reads stays (builder.VERDICT_ANALYSES); slices go
    assert all("accuracy" in r["metrics"] and "slices" not in r["metrics"]
               and set(r["metrics"].get("analysis", {})) <= set(builder.VERDICT_ANALYSES) for r in done)
    assert any(r["metrics"].get("analysis") for r in done)
    # given what each run's verdicts read (a reproduction passes Experiment.analyses), only that stays
    first = done[0]["run_id"]
    named = builder.embedded_runs(runs, compact=True, analyses={first: ["retrieval_layer"]})  # what render embeds
    assert builder.embedded_runs(runs, compact=True) == data["runs"]
    kept = {r["run_id"]: r["metrics"].get("analysis") for r in named if r["status"] == "done"}
    assert set(kept[first]) == {"retrieval_layer"} and all(a is None for k, a in kept.items() if k != first)


def test_a_compact_reports_analysis_tables_are_means_per_head(rendered):
    """In a compact report the sharpness and interference tables hold one row per model, task, setting,
    layer and head: the mean of the runs' rows (a brute-force mean over the store's records), with their count."""
    runs = rendered.runs
    compact = rendered(compact=True)
    table = compact[compact.index('id="sharpness"'):]
    table = table[table.index("<tbody>"):table.index("</tbody>")]
    rows = re.findall(r"<tr><td>mean of (\d+)</td><td>([^<]+)</td><td>([^<]+)</td><td>([^<]+)</td><td class=\"num\">(\d+)</td>"
                      r"<td class=\"num\">(\d+)</td>\s*<td class=\"num\">([^<]+)</td>", table)
    expected: dict = {}
    for r in runs:
        for row in ((r.metrics.get("analysis") or {}).get("sharpness") or []) if r.ok else []:
            key = (model_label(r.config), r.config["task"]["name"], setting_label(r.config), row["layer"], row["head"])
            expected.setdefault(key, []).append(row["entropy"])
    assert rows and len(rows) == len(expected)
    for n, model, task, setting, layer, head, entropy in rows:
        values = expected[html.unescape(model), task, setting, int(layer), int(head)]
        assert int(n) == len(values) and float(entropy) == pytest.approx(sum(values) / len(values), rel=1e-3)
    assert 'href="#run-' not in table and "href=\"#run-" in rendered()  # the full report keeps a row per run


def test_a_compact_report_stays_small_per_run():
    """The committed reproduction holds thousands of runs in under 5 MB: a compact report's cost per run
    (its row and its embedded data) stays under 700 bytes for runs that differ as a sweep's do."""
    from evalsuite.records import RunRecord

    def run(i):
        config = {"task": {"name": "recall", "seq_len": 64, "num_kv_pairs": 4 * (1 + i % 8), "vocab_size": 8192},
                  "model": {"name": "linear", "d_model": 64, "n_layers": 2, "feature_map": "elu1", "feature_dim": 8 * (1 + i % 4)},
                  "train": {"lr": [1e-3, 3e-3, 1e-2][i % 3], "epochs": 6.0, "batch_size": 64}, "seed": i % 5}
        sharp = [{"layer": l, "head": 0, "entropy": 0.1 * i + l, "norm_entropy": 0.2, "max_weight": 0.7, "topk_mass": 0.9,
                  "answer_mass": 0.5} for l in range(2)]
        return RunRecord(run_id=f"{i:016x}", config=config, status="done", metrics={
            "accuracy": (i % 997) / 1000, "val_accuracy": (i % 991) / 1000, "floor": 0.125, "loss": 1 / (i + 3),
            "steps": 100 * i, "wall_time_s": 1.2345678 * i, "analysis": {"sharpness": sharp, "sharpness_by_context": [
                {"layer": 0, "head": 0, "context": c, "entropy": c / (i + 7), "norm_entropy": 0.3} for c in range(2, 40)]}})

    sizes = {n: len(builder.render([run(i) for i in range(n)], compact=True, analyses={})) for n in (50, 250)}
    per_run = (sizes[250] - sizes[50]) / 200
    print(f"compact report: {per_run:.0f} bytes a run")
    assert per_run < 700, per_run


def _curve_run(i, points=300, val=None):
    from evalsuite.records import RunRecord

    history = [{"step": 10 * (k + 1), "val_accuracy": (val or (lambda k: k / (points - 1)))(k), "train_loss": 2.0 - k / points,
                "val_loss": 1.0} for k in range(points)]
    return RunRecord(run_id=f"r{i:04d}", config={"task": {"name": "recall", "num_kv_pairs": 8},
                                                "model": {"name": "linear", "d_model": 64, "n_layers": 2, "i": i},
                                                "train": {"lr": 1e-3, "epochs": 1.0}, "seed": 0},
                     status="done", metrics={"accuracy": 0.5, "floor": 0.125}, history=history)


def test_every_report_embeds_each_runs_learning_curve_and_a_large_one_draws_it_when_its_row_is_opened():
    """Every report, compact or full, embeds each run's learning curve with the run (validation
    accuracy and training loss against step, at most 64 points, the first, last and best kept);
    above INLINE_CURVES_MAX runs a full report embeds no curve images and the page draws each run's
    curve from that when its row is opened; at or below it, the images stay."""
    from evalsuite.records import CURVE_POINTS
    from evalsuite.reports import builder

    many = builder.render([_curve_run(i) for i in range(builder.INLINE_CURVES_MAX + 1)], compact=False)
    assert 'alt="training curves of' not in many and many.count('<div class="curve" data-run=') == builder.INLINE_CURVES_MAX + 1
    for compact in (False, True):
        html = builder.render([_curve_run(i) for i in range(3)], compact=compact)
        history = {r["run_id"]: r["history"] for r in builder.embedded_json(html)["runs"]}["r0001"]
        steps = [h["step"] for h in history]
        assert len(history) <= CURVE_POINTS and steps == sorted(steps) and steps[0] == 10 and steps[-1] == 3000
        assert history[-1]["val_accuracy"] == 1.0 and history[0]["train_loss"] == 2.0
        assert "drawCurves" in html
    few = builder.render([_curve_run(i) for i in range(3)], compact=False)
    assert few.count('alt="training curves of') == 3


def test_a_thinned_curve_keeps_the_jump_it_is_read_for():
    """A plateau, then a jump at a seed-dependent step: the thinned curve keeps its first and last
    points and the best one, and shows where it left the plateau to within its spacing."""
    from evalsuite.records import thin_history

    jump = 1234  # of 3,000 validation passes
    history = [{"step": k, "val_accuracy": 0.1 if k < jump else 0.99, "train_loss": 1.0} for k in range(3000)]
    thin = thin_history(history, points=64)
    assert len(thin) <= 64 and thin[0]["step"] == 0 and thin[-1]["step"] == 2999
    left = max(h["step"] for h in thin if h["val_accuracy"] == 0.1)
    escaped = min(h["step"] for h in thin if h["val_accuracy"] == 0.99)
    assert left < jump <= escaped and escaped - left <= 3000 / 62 + 1
    assert thin_history([{"step": 1, "train_loss": 2.0}]) == []  # no validation pass: no curve


def test_the_summary_says_where_each_accuracy_stands_against_its_floor(report_store):
    """Words that match the numbers: the tiny runs sit below their floor and say so ("at floor"
    was printed for any accuracy at or under it, 0.41 against 0.63 included)."""
    html = report_store.read_text()
    assert "(below the floor)" in html and "(at floor)" not in html


def test_a_big_reports_tables_start_closed_and_a_link_opens_them_in_headless_chromium(tmp_path):
    """A report opens on its verdicts, not on a wall of rows: the summary and runs tables of more
    than 40 rows start closed (their summary line counts the rows), each verdict's figures are one
    click away, images load eagerly (a print or full-page capture has them), and a #run- link or
    the runs filter opens the table it points into. The page stays within a height bound at 1,400
    and 390 px with everything closed."""
    playwright = pytest.importorskip("playwright.sync_api", reason="install the dev extra (make test does)")
    assert Path(CHROMIUM).exists(), "Debian's chromium is missing: `make test` installs it (apt-get install chromium)"
    from evalsuite import reproduce as rep
    from tests.reproduce.synthetic import CASES, NO_PROBES, as_stored, retask

    runs = as_stored(CASES["frontier-delta"][0], "frontier-delta")  # ids as a store has them (hex)
    verdicts = [rep.get(n).judge(runs, NO_PROBES, "cpu") for n in ("frontier-delta", "frontier-swa")]
    runs += retask(runs, "k4", model={"conv_kernel": 4}) + retask(runs, "k2", model={"conv_kernel": 2})  # > 40 rows
    assert len(runs) > 40
    path = builder.write(runs, tmp_path / "big.html", compact=True, verdicts=verdicts)
    html_text = path.read_text()
    assert 'loading="lazy"' not in html_text and "the runs table: " in html_text and "the summary table: " in html_text
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        for width, bound in ((1400, 12_000), (390, 24_000)):
            page = browser.new_page(viewport={"width": width, "height": 900})
            page.goto(path.as_uri())
            page.wait_for_load_state("load")
            assert page.evaluate("Array.from(document.querySelectorAll('details.big-table')).every(d => !d.open)")
            assert page.evaluate("Array.from(document.querySelectorAll('details.verdict-detail')).every(d => !d.open)")
            height = page.evaluate("document.documentElement.scrollHeight")
            assert height < bound, (width, height)
            page.close()
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(path.as_uri() + f"#run-{runs[-1].run_id}")
        page.wait_for_load_state("load")
        assert page.evaluate("id => document.getElementById(id).closest('details.big-table').open", f"run-{runs[-1].run_id}")
        page.goto(path.as_uri())
        page.fill("input.filter[data-table=runs-table]", runs[0].run_id[:6])
        assert page.evaluate("document.getElementById('runs-table').closest('details.big-table').open")
        browser.close()
