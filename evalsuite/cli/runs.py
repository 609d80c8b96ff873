"""`evalsuite runs`: the runs a store holds, one line each, filtered; `--json` or `--csv` for tools;
`--pivot ROWS,COLS` for a sweep's answer (accuracy mean +- sd over seeds per cell, beside the floor)."""
from __future__ import annotations

import json
import sys

import click

from evalsuite.cli import common
from evalsuite.cli.app import main
from evalsuite.records import Status

COLUMNS = ["run_id", "status", "task", "model", "preset", "T", "D", "seed", "lr", "epochs", "accuracy", "floor", "steps"]
# what a pivot can put on its rows or columns (the listing's settings, and the model's sizes)
PIVOTABLE = ("task", "model", "T", "D", "lr", "epochs", "d_model", "n_layers", "feature_dim", "value_dim")
STATUSES = [s.value for s in Status]


def listing(store, task=None, model=None, status=None, sweep_id=None) -> list[dict]:
    """The runs of ``store`` (of one sweep) matching the filters, as rows of ``COLUMNS``."""
    from evalsuite.labels import model_label
    from evalsuite.records import floor_of

    run_ids = common.sweep_run_ids(store, sweep_id)
    rows = []
    for r in store.runs(run_ids):
        label = model_label(r.config)
        if (task and r.config["task"]["name"] != task) or (model and model not in (r.config["model"]["name"], label)) \
                or (status and r.status.value != status):
            continue
        rows.append({"run_id": r.run_id, "status": r.status.value, "task": r.config["task"]["name"], "model": label,
                     "preset": r.preset, "T": r.config["task"].get("seq_len"), "D": r.config["task"].get("num_kv_pairs"),
                     "seed": r.config.get("seed"), "lr": r.config["train"].get("lr"), "epochs": r.config["train"].get("epochs"),
                     "accuracy": r.metrics.get("accuracy"), "floor": floor_of(r.metrics), "steps": r.metrics.get("steps")})
    return rows


def pivot(store, axes: tuple[str, str], task=None, model=None, sweep_id=None):
    """The finished runs as a ROWS x COLS table: in each cell, test accuracy mean +- sd over seeds
    with the floor beside it. Runs that differ in a setting other than the two axes and the seed
    (another rate, say) are different settings: a cell shows the one with the best validation
    accuracy on the seeds they all have (a sweep's seed 0: the suite's rule), and says of how many
    it was chosen. Returns ``(table, cells)``: the
    printable frame and one dict per cell (for ``--json``)."""
    import json as json_

    import pandas as pd

    from evalsuite.labels import model_label
    from evalsuite.records import floor_of

    def value(r, axis):
        if axis == "task":
            return r.config["task"]["name"]
        if axis == "model":
            return model_label(r.config)
        if axis in ("T", "D"):
            return r.config["task"].get("seq_len" if axis == "T" else "num_kv_pairs")
        if axis in ("lr", "epochs"):
            return r.config["train"].get(axis)
        return r.config["model"].get(axis)

    groups: dict[tuple, dict[str, list]] = {}
    for r in store.runs(common.sweep_run_ids(store, sweep_id)):
        if not r.ok or r.metrics.get("accuracy") is None or (task and r.task != task) \
                or (model and model not in (r.model, model_label(r.config))):
            continue
        setting = json_.dumps({k: v for k, v in r.config.items() if k != "seed"}, sort_keys=True, default=str)
        groups.setdefault((value(r, axes[0]), value(r, axes[1])), {}).setdefault(setting, []).append(r)
    cells = []
    for (row, col), settings in groups.items():
        common_seeds = set.intersection(*({x.seed for x in runs} for runs in settings.values()))

        def score(runs):  # validation on the seeds every setting has (seed 0 of a sweep), then more seeds
            vals = [x.metrics.get("val_accuracy") for x in runs if x.metrics.get("val_accuracy") is not None
                    and (not common_seeds or x.seed in common_seeds)]
            return (sum(vals) / len(vals) if vals else -1.0, len(runs))
        best = max(settings.values(), key=score)
        accs = [x.metrics["accuracy"] for x in best]
        floors = [f for x in best if (f := floor_of(x.metrics)) is not None]
        mean = sum(accs) / len(accs)
        sd = (sum((a - mean) ** 2 for a in accs) / (len(accs) - 1)) ** 0.5 if len(accs) > 1 else None
        cells.append({axes[0]: row, axes[1]: col, "accuracy": mean, "sd": sd, "seeds": len(accs),
                      "floor": sum(floors) / len(floors) if floors else None, "settings": len(settings)})
    if not cells:
        return pd.DataFrame(), cells

    def text(c):
        out = f"{c['accuracy']:.3f}" + (f" +- {c['sd']:.3f}" if c["sd"] is not None else "") + f" (n={c['seeds']}"
        out += f"; floor {c['floor']:.3f})" if c["floor"] is not None else ")"
        return out + (f" [best of {c['settings']}]" if c["settings"] > 1 else "")

    frame = pd.DataFrame([{axes[0]: c[axes[0]], axes[1]: c[axes[1]], "cell": text(c)} for c in cells])
    table = frame.pivot(index=axes[0], columns=axes[1], values="cell").fillna("-")
    return table, cells


@main.command("runs")
@common.store_option
@click.option("--task", default=None, help="only runs of this task (e.g. recall)")
@click.option("--model", default=None, help="only runs of this model: a registered name or a label such as linear/dpfp(nu=2)")
@click.option("--status", default=None, type=click.Choice(STATUSES), help="only runs that ended so")
@click.option("--sweep", "sweep_id", default=None, help="only the runs of this sweep (id or unique prefix)")
@click.option("--json", "as_json", is_flag=True, help="print a JSON list of rows instead of a table")
@click.option("--csv", "as_csv", is_flag=True, help="print CSV instead of a table")
@click.option("--pivot", "pivot_axes", default=None, metavar="ROWS,COLS",
              help=f"a table of the finished runs' test accuracy (mean +- sd over seeds, beside the floor) with ROWS "
                   f"down and COLS across, each one of: {', '.join(PIVOTABLE)} (e.g. --pivot model,D)")
def runs(store_path, task, model, status, sweep_id, as_json, as_csv, pivot_axes):
    """List the runs in a store (`list` names what can be run). Reads the store without modifying it."""
    if as_json and as_csv:
        raise common.BadInput("--json, --csv: choose one")
    axes = _axes(pivot_axes) if pivot_axes is not None else None
    if axes is not None and (as_csv or status):
        raise common.BadInput("--pivot: reads finished runs as a table; it takes --json, not --csv or --status")
    store = common.open_store(store_path, must_exist=True)
    if axes is not None:
        table, cells = pivot(store, axes, task, model, sweep_id)
        if as_json:
            click.echo(json.dumps(cells, indent=1))
        elif table.empty:
            click.echo(f"no finished runs match in {store.path}")
        else:
            click.echo(table.to_string())
            click.echo(f"test accuracy, mean +- sd over seeds (n), beside the floor; [best of k]: k settings share the "
                       f"cell and the one with the best validation accuracy is shown; {store.path}")
        return
    rows = listing(store, task, model, status, sweep_id)
    if as_json:
        click.echo(json.dumps(rows, indent=1))
        return
    import pandas as pd

    frame = pd.DataFrame(rows, columns=COLUMNS)
    if as_csv:
        frame.to_csv(sys.stdout, index=False)
        return
    if frame.empty:
        click.echo(f"no runs match in {store.path}")
        return
    frame["preset"] = frame["preset"].fillna("-")  # runs stored before presets were recorded
    click.echo(frame.to_string(index=False, float_format=lambda x: f"{x:.4g}", na_rep="-"))
    click.echo(f"{len(frame)} run{'s' * (len(frame) != 1)} in {store.path}")


def _axes(text: str) -> tuple[str, str]:
    from evalsuite.errors import did_you_mean

    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or parts[0] == parts[1]:
        raise common.BadInput(f"--pivot: two different axes as ROWS,COLS, each one of {', '.join(PIVOTABLE)}; got {text!r}")
    for p in parts:
        if p not in PIVOTABLE:
            raise common.BadInput(f"--pivot: unknown axis {p!r}.{did_you_mean(p, PIVOTABLE)} Allowed: {', '.join(PIVOTABLE)}")
    return parts[0], parts[1]


# a sweep grid's key (its first part, for a joint key such as "model,model.feature_map") -> its pivot axis
GRID_AXES = {"task": "task", "model": "model", "model.feature_map": "model", "feature_map": "model",
             "task.seq_len": "T", "task.num_kv_pairs": "D", "train.lr": "lr", "train.epochs": "epochs",
             "model.d_model": "d_model", "model.n_layers": "n_layers", "model.feature_dim": "feature_dim",
             "model.value_dim": "value_dim"}


def sweep_axes(grid_keys) -> tuple[str, str] | None:
    """The pivot that answers a sweep's question: its swept variables (the model down where it is
    swept), the rate left to the choice by validation; a sweep of one variable puts it across the
    tasks. None where nothing swept is pivotable."""
    swept = list(dict.fromkeys(a for k in grid_keys if (a := GRID_AXES.get(k.split(",")[0].strip())) and a != "lr"))
    swept.sort(key=lambda a: a != "model")
    if len(swept) >= 2:
        return swept[0], swept[1]
    if len(swept) == 1 and swept[0] != "task":
        return swept[0], "task"
    return None
