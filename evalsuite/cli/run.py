"""`evalsuite run`: train one configuration, print its summary, record it, write its report."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from evalsuite.cli import common
from evalsuite.cli.app import main


@main.command()
@click.option("--task", required=True, help="task name (see `evalsuite list tasks`)")
@click.option("--model", required=True, help="model name (see `evalsuite list models`)")
@click.option("--feature-map", default=None, help="feature map for linear models: name, package.module:Attr or file.py:Attr")
@click.option("--preset", default="default", show_default=True, help="named preset (see `evalsuite list presets`)")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="override a config value, e.g. --set train.lr=0.001 (a bare key works when unambiguous)")
@common.seed_option
@common.device_option
@common.store_option
@common.threads_option
@click.option("--out", default=None, type=click.Path(file_okay=False),
              help="folder for the HTML report [default: reports/ beside the store, results/reports for the default store]")
@click.option("--force", is_flag=True, help="train again even if the store holds this run")
@click.option("--no-report", is_flag=True, help="skip the HTML report")
@click.option("--wait", is_flag=True,
              help="when another live process is training this very run, wait for it and show its result "
                   "(default: say so and exit 2)")
@click.option("--wait-minutes", default=120.0, show_default=True, type=click.FloatRange(min=0, max=7 * 24 * 60),
              help="with --wait: give up (exit 2) after this long")
def run(task, model, feature_map, preset, overrides, seed, device, store_path, threads, out, force, no_report, wait,
        wait_minutes):
    """Train MODEL on TASK, print a summary, record it in the store and write its report."""
    from evalsuite import environment, files
    from evalsuite.pipeline import run_one
    from evalsuite.resolve import resolve

    config = resolve(task=task, model=model, preset=preset, overrides=overrides, feature_map=feature_map,
                         seed=seed)
    dev = environment.resolve_device(device)
    store = common.open_store(store_path)
    folder = Path(out).expanduser() if out else store.path.parent / "reports"  # as a sweep writes beside its store
    report = None if no_report else files.check_output(folder / f"{config.run_id}.html", "--out", store=store.path)
    common.set_threads(threads)
    t = config.train
    budget = max(1, round(t.epochs * max(1, t.num_train // t.batch_size)))
    click.echo(f"evalsuite run: {model} on {task} (preset {preset}, seed {seed}, device {dev}, "
               f"{_threads()} thread{'s' if _threads() != 1 else ''}; budget {budget:,} steps, the expected time "
               f"is measured and printed after the first 100)", err=True)
    if preset == SMOKE_PRESET:
        click.echo(SMOKE_NOTE, err=True)
    result = run_one(config, device=device, store=store, force=force, wait=wait, wait_minutes=wait_minutes,
                     echo=lambda m: click.echo(m, err=True))
    if report is not None:
        from evalsuite.reports import builder

        try:
            builder.write([result], report, title=run_title(result, preset))
        except OSError as exc:  # the run is recorded; say so and go on
            result.warnings.append(f"report not written: {common.os_message(exc)}")
            report = None
    click.echo(_summary(result, store.path, report) + (f"\n{SMOKE_NOTE}" if preset == SMOKE_PRESET else ""))
    if not result.ok:
        sys.exit(1)


def run_title(record, preset: str) -> str:
    """A run report's title: what sets this run apart from the runs beside it in ``reports/``
    (its model label, task size, preset, rate and seed), so that ``index.html`` tells them apart."""
    from evalsuite.labels import model_label

    task = record.config["task"]
    size = ", ".join(f"{k} {task[key]}" for k, key in (("T", "seq_len"), ("D", "num_kv_pairs")) if task.get(key) is not None)
    return (f"evalsuite: {model_label(record.config)} on {task['name']}" + (f" ({size})" if size else "")
            + f", preset {preset}, lr {record.config['train']['lr']:g}, seed {record.config['seed']}")


SMOKE_PRESET = "tiny"
SMOKE_NOTE = ("note: the tiny preset is a smoke test (a few steps on 256 examples): its accuracies say the code runs, "
              "not what the model can learn; they often sit below the floor")


def _threads() -> int:
    import torch

    return torch.get_num_threads()


def _summary(result, store_path, report) -> str:
    from evalsuite.records import against_floor, convergence_note

    m = result.metrics
    model = result.config["model"]
    name = model["name"] + (f" ({model['feature_map']})" if model.get("feature_map") else "")
    rows = [("run", result.run_id + ("  (cached: already in the store; --force retrains)" if result.cached else "")),
            ("task / model", f"{result.config['task']['name']} / {name}"),
            ("status", result.status.value)]
    if result.error:
        rows.append(("error", result.first_error_line()))
    if "accuracy" in m:
        floor = ""
        if "context_chance" in m:
            floor = (f"  ({against_floor(m['accuracy'], m['floor'])} {m['floor']:.4f}: {m['floor_reader']}, the best "
                     "reader with no memory of the task; " if "floor" in m else "  (") + \
                f"chance {m['context_chance']:.4f}: {m.get('chance_rule', '')}; majority class {m['majority_rate']:.4f})"
        budget = f" of {m['budget_steps']}, best at step {m['best_step']}" if "budget_steps" in m else ""
        rows += [("test accuracy", f"{m['accuracy']:.4f}{floor}"), ("val accuracy", f"{m['val_accuracy']:.4f}"),
                 ("test loss", f"{m['loss']:.4f}")]
        if m.get("tvd") is not None:
            rows.append(("test tvd", f"{m['tvd']:.4f}  (lower is better; floor {m['tvd_floor']:.4f}: the best in-context "
                                     f"n-gram model)"))
        rows += [("steps", f"{m['steps']}{budget} ({m['steps_per_s']:.0f} steps/s)")]
        if convergence_note(m):
            rows.append(("convergence", convergence_note(m)))
    if "wall_time_s" in m:
        rows.append(("wall time", f"{m['wall_time_s']:.1f} s"))
    if "parameters" in m:
        rows += [("parameters", f"{m['parameters']:,}"),
                 ("state size", f"{m['state_size']:,} floats per sequence at T={m['seq_len']} "
                                f"({m['state_size'] * 4 / 1024:.1f} KiB in fp32)")]
    rows += [("warning", w) for w in result.warnings]
    rows.append(("store", str(store_path)))
    if report is not None:
        rows.append(("report", str(report)))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)
