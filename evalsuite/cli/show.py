"""`evalsuite show RUN`: one run's configuration, metrics, floor and convergence."""
from __future__ import annotations

import json

import click

from evalsuite.cli import common
from evalsuite.cli.app import main


@main.command("show")
@click.argument("run_id")
@common.store_option
@click.option("--json", "as_json", is_flag=True, help="print the whole run record (history included) as JSON")
def show(run_id, store_path, as_json):
    """Show one run (RUN_ID: its id or a unique prefix). Reads the store without modifying it."""
    from evalsuite.labels import model_label
    from evalsuite.records import against_floor, convergence_note, floor_of

    store = common.open_store(store_path, must_exist=True)
    try:
        record = store.get(store.find(run_id), with_history=as_json)
    except KeyError as exc:
        raise common.BadInput(f"RUN_ID: {exc.args[0]}") from None
    if as_json:
        click.echo(json.dumps(record.model_dump(mode="json"), indent=1, sort_keys=True))
        return
    m, cfg = record.metrics, record.config
    floor = floor_of(m)
    lines = [("run", record.run_id), ("status", record.status.value + (f": {record.first_error_line()}" if record.error else "")),
             ("task / model", f"{cfg['task']['name']} / {model_label(cfg)}"),
             ("preset", record.preset or "not recorded (a run stored before presets were)"), ("seed", cfg.get("seed"))]
    size = ", ".join(f"{k} {cfg['task'][key]}" for k, key in (("T", "seq_len"), ("D", "num_kv_pairs"))
                     if cfg["task"].get(key) is not None)
    if size:
        lines.append(("task size", size))
    if m.get("accuracy") is not None:
        lines.append(("test accuracy", f"{m['accuracy']:.4f}" + (f"  ({against_floor(m['accuracy'], floor)} {floor:.4f}: "
                                                                  f"{m.get('floor_reader') or 'chance rule'})"
                                                                  if floor is not None else "")))
    units = {"state_size": ("state size", "{:,} floats per sequence"), "wall_time_s": ("wall time", "{:.1f} s")}
    for key in ("val_accuracy", "loss", "steps", "budget_steps", "best_step", "state_size", "parameters", "wall_time_s"):
        if m.get(key) is not None:
            value = m[key]
            name, form = units.get(key, (key.replace("_", " "), "{:.4f}" if isinstance(value, float) else "{:,}"))
            lines.append((name, form.format(value)))
    for i, seg in enumerate(cfg["task"].get("eval_segments") or []):
        if m.get(f"eval_{i}_accuracy") is not None:
            lines.append((f"eval {i} accuracy", f"{m[f'eval_{i}_accuracy']:.4f}  (T={seg.get('seq_len')})"))
    if (note := convergence_note(m)):
        lines.append(("convergence", note))
    lines += [("warning", w) for w in record.warnings]
    width = max(len(k) for k, _ in lines) + 2
    for key, value in lines:
        click.echo(f"{key:<{width}}{value}")
    for section in ("task", "model", "train"):
        click.echo(f"{section + ':':<{width}}" + ", ".join(f"{k}={v}" for k, v in cfg.get(section, {}).items()))
