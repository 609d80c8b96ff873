"""The HTML report opened in a real browser (Debian's Chromium driven by Playwright)."""
import copy
import json
import re
import textwrap
from pathlib import Path

import pytest

import evalsuite
from evalsuite import analysis
from evalsuite import config as cfg
from evalsuite.models import feature_maps
from evalsuite.reports import builder
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


@pytest.fixture(scope="module")
def report_store(tmp_path_factory):
    """Runs of several tasks and models, a failed run, a capacity probe, a hostile plug-in name.

    Two tiny models are trained (recall with eval segments, needle) for the real shape of every
    metric; the other records are derived from them, and the failed one comes from a broken plug-in."""
    root = tmp_path_factory.mktemp("report")
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
    _variant(store, base, name="linear", feature_map=HOSTILE, accuracy=0.2)
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
    return out


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


def test_render_refuses_unknown_plot_format():
    with pytest.raises(ValueError, match="plot_format"):
        builder.render([], plot_format="gif")


def test_svg_plots(report_store, tmp_path):
    runs = Store(report_store.parent / "store.db").runs()
    html = builder.render(runs, plot_format="svg")
    assert "data:image/svg+xml;base64," in html


@pytest.fixture(autouse=True, scope="module")
def _unregister_hostile():
    yield
    feature_maps.FEATURE_MAPS._entries.pop(HOSTILE, None)


def test_frontier_section_leads_and_marks_the_pareto_frontier():
    from evalsuite.records import RunRecord

    def run(model, d_model, acc, state, **opts):
        config = {"task": {"name": "recall", "seq_len": 64, "num_kv_pairs": 16},
                  "model": {"name": model, "d_model": d_model, "n_layers": 2, **opts},
                  "train": {"lr": 0.003, "epochs": 3}, "seed": 0}
        return RunRecord(run_id=f"{model}{d_model}{opts}", config=config, status="done",
                         metrics={"accuracy": acc, "val_accuracy": acc, "state_size": state})

    runs = [run("delta", 16, 0.9, 600), run("delta", 32, 0.99, 2200), run("linear", 16, 0.3, 700, feature_map="elu1"),
            run("linear", 32, 0.95, 2300, feature_map="elu1"), run("swa", 32, 0.5, 2048, window=16)]
    html = builder.render(runs)
    assert html.index('id="frontier"') < html.index('id="summary"')  # the headline figure leads
    frontier_part = html[html.index('id="frontier"'):html.index('id="runs"')]
    table = frontier_part[:frontier_part.index("<details>")]  # the per-model table, before the points
    assert "Pareto frontier" in frontier_part and "least state reaching 0.9" in frontier_part
    # delta reaches 0.9 at 600 floats; elu+1 only at 2,300; the sliding window never
    rows = re.findall(r"<tr><td>recall, T=64, D=16</td><td>([^<]+)</td><td class=\"num\">\d+</td><td class=\"num\">[^<]*</td>\s*"
                      r"<td class=\"num\">([^<]+)</td>", table)
    assert dict(rows) == {"delta": "600", "linear/elu1": "2300", "swa": "never"}


def test_compact_report_keeps_each_run_and_what_verdicts_read_but_not_curves_or_other_analyses(report_store):
    runs = Store(report_store.parent / "store.db").runs()
    full, compact = builder.render(runs), builder.render(runs, compact=True)
    assert len(compact) < len(full)
    assert "training curves of" in full and "training curves of" not in compact
    for r in runs:
        assert f'id="run-{r.run_id}"' in compact  # every point of a plot still links to its run
    data = json.loads(compact[compact.index('id="evalsuite-data">') + 20:compact.index("</script>", compact.index('id="evalsuite-data">'))])
    done = [r for r in data["runs"] if r["status"] == "done"]
    # of the analyses, only what a verdict reads stays (builder.VERDICT_ANALYSES); slices go
    assert all("accuracy" in r["metrics"] and "slices" not in r["metrics"]
               and set(r["metrics"].get("analysis", {})) <= set(builder.VERDICT_ANALYSES) for r in done)
    assert any(r["metrics"].get("analysis") for r in done)


def test_a_large_full_report_draws_each_runs_curve_when_its_row_is_opened():
    """Above INLINE_CURVES_MAX runs a full report embeds no curve images: each run's validation
    curve travels as numbers (thinned to CURVE_POINTS, the last kept, with its floor) and the page
    draws it when the row is opened; at or below it, the images stay."""
    from evalsuite.records import RunRecord
    from evalsuite.reports import builder

    def run(i, points=300):
        history = [{"step": 10 * (k + 1), "val_accuracy": k / (points - 1)} for k in range(points)]
        return RunRecord(run_id=f"r{i:04d}", config={"task": {"name": "recall", "num_kv_pairs": 8},
                                                    "model": {"name": "linear", "d_model": 64, "n_layers": 2, "i": i}, "train": {"lr": 1e-3, "epochs": 1.0},
                                                    "seed": 0},
                         status="done", metrics={"accuracy": 0.5, "floor": 0.125}, history=history)

    many = builder.render([run(i) for i in range(builder.INLINE_CURVES_MAX + 1)], compact=False)
    assert 'alt="training curves of' not in many and many.count('<div class="curve" data-run=') == builder.INLINE_CURVES_MAX + 1
    start = many.index('id="evalsuite-curves">') + len('id="evalsuite-curves">')
    curves = json.loads(many[start:many.index("</script>", start)])
    c = curves["r0007"]
    assert len(c["step"]) <= builder.CURVE_POINTS + 1 and c["step"][-1] == 3000 and c["val"][-1] == 1.0
    assert c["floor"] == 0.125 and c["step"] == sorted(c["step"])
    few = builder.render([run(i) for i in range(3)], compact=False)
    assert few.count('alt="training curves of') == 3 and "evalsuite-curves" not in few.split("<script>")[0]
