"""`evalsuite analyze`: capacity probes, and sharpness and interference of stored runs."""
from __future__ import annotations

import click

from evalsuite.cli import common
from evalsuite.cli.app import main
from evalsuite.records import TARGET_ACCURACY


@main.group()
def analyze() -> None:
    """Why recall fails: memory capacity, key interference, attention sharpness."""


def _stored_run_options(command):
    for option in reversed([
            click.option("--run", "run", required=True, help="run id (or a unique prefix) from the store"),
            common.store_option,
            click.option("--examples", default=256, show_default=True, type=click.IntRange(min=1))]):
        command = option(command)
    return command


def _load_run(store_path, run):
    from evalsuite.pipeline import load_trained

    store = common.open_store(store_path, must_exist=True)
    try:
        return load_trained(store, store.find(run))
    except (KeyError, FileNotFoundError) as exc:
        raise common.BadInput(f"--run: {exc.args[0]}") from None


@analyze.command(name="capacity")
@click.option("--memory", default="linear", show_default=True, type=click.Choice(["softmax", "linear", "delta"]))
@click.option("--feature-map", default=None, help="feature map of a linear memory (default elu1)")
@click.option("--option", "map_options", multiple=True, metavar="KEY=VALUE", help="feature-map option, e.g. nu=2")
@click.option("--d-key", default=16, show_default=True, type=click.IntRange(1, 1024))
@click.option("--pairs", default="4,8,12,16,24,32,48,64", show_default=True, help="numbers of stored pairs S")
@click.option("--trained/--analytic", default=False, show_default=True,
              help="train the one-layer probe per S (Schlag et al. 6.1) or write random pairs without training")
@click.option("--setting", default=1, show_default=True, type=click.Choice(["1", "2"]),
              help="trained probe: 1 each key written once, 2 keys recur and the latest value counts")
@click.option("--steps", default=4000, show_default=True, type=click.IntRange(min=1), help="trained probe: steps per S")
@click.option("--d-value", default=None, type=click.IntRange(1, 4096),
              help="the state's value side d_v (default: d_key; schlag and schlag-ce: the paper's one-hot values, d_v = S)")
@click.option("--variant", default="schlag", show_default=True,
              type=click.Choice(["schlag", "schlag-ce", "tied", "argmax"]),
              help="trained probe: schlag = Schlag et al. 6.1 (one-hot values, own query projection, held-out knee); "
                   "schlag-ce = the same trained with cross-entropy through a learned temperature (a language "
                   "model's objective, not the paper's); tied = random unit values, query through the key projection; "
                   "argmax = learned key and value codebooks, cross-entropy over every value token, one probe for every S, "
                   "its steps doubled from --steps until the capacity (pairs read back at >= 0.9) moves by < 5%")
@click.option("--lr", default=None, type=click.FloatRange(min=0, min_open=True),
              help="trained probe: learning rate (default: the variant's own; argmax 0.01, and capacity-argmax "
                   "sweeps 0.003, 0.01, 0.03 on seed 0)")
@click.option("--threshold", default=TARGET_ACCURACY, show_default=True, type=click.FloatRange(0, 1))
@common.seed_option
@common.device_option
@click.option("--csv", "csv_path", default=None, type=click.Path(), help="also write the table as CSV")
@common.overwrite_option
@click.option("--save", is_flag=True, help="record the rows in the store (the report's capacity section shows them)")
@common.store_option
def analyze_capacity(memory, feature_map, map_options, d_key, pairs, trained, setting, steps, d_value, variant, lr, threshold,
                     seed, device, csv_path, overwrite, save, store_path):
    """Retrieval accuracy of one memory as the number of stored pairs grows; prints the knee."""
    from evalsuite import analysis, files
    from evalsuite.overrides import parse_value

    from evalsuite.environment import resolve_device

    try:
        device = resolve_device(device)
    except ValueError as exc:
        raise common.BadInput(str(exc)) from None
    store = common.open_store(store_path) if save else None
    if csv_path:
        from evalsuite.store_file import check_path

        files.check_output(csv_path, "--csv", store=check_path(store_path), overwrite=overwrite)
    pair_counts = common.lengths(pairs, "pairs")
    if max(pair_counts) > common.MAX_PAIRS:
        raise common.BadInput(f"--pairs: at most {common.MAX_PAIRS} pairs, got {max(pair_counts)}")
    options = {}
    for item in map_options:
        key, sep, value = item.partition("=")
        if not sep:
            raise common.BadInput(f"--option {item!r}: expected KEY=VALUE, e.g. --option nu=2")
        options[key.strip()] = parse_value(value.strip())
    if variant == "argmax" and not trained:
        raise common.BadInput("--variant argmax: a trained probe; add --trained")
    if variant == "argmax" and setting != "1":
        raise common.BadInput("--setting: the argmax probe writes each key once (setting 1)")
    extra = dict(setting=int(setting), steps=steps, variant=variant, echo=click.echo, device=str(device)) if trained else {}
    if d_value is not None:
        extra["d_value"] = d_value
    if lr is not None:
        if not trained:
            raise common.BadInput("--lr: only a trained probe has a learning rate; add --trained")
        extra["lr"] = lr
    try:
        if variant == "argmax" and trained:
            from evalsuite.analysis import argmax_probe

            df = argmax_probe.trained_argmax_probe(memory, d_key, d_value or d_key, pair_counts, feature_map=feature_map,
                                                   feature_map_options=options or None, steps=steps, max_steps=16 * steps,
                                                   lr=lr or 0.01, seed=seed, echo=click.echo, device=device)
        else:
            df = analysis.capacity_probe(memory, feature_map=feature_map, d_key=d_key, pairs=pair_counts,
                                         trained=trained, seed=seed, feature_map_options=options or None, **extra)
    except (ValueError, TypeError) as exc:  # a feature-map option it does not take, a bad value
        raise common.BadInput(str(exc)) from None
    if variant == "argmax" and trained:
        last = df[df.max_steps == df.max_steps.max()]
        click.echo(common.table(last[["memory", "d_key", "d_value", "pairs", "accuracy", "every_pair", "steps"]]))
        click.echo(f"capacity (pairs read back at >= {argmax_probe.SUCCESS} each): {last.capacity.iloc[0]:.1f}"
                   + ("" if last.converged.iloc[0] else f" (not converged within {int(last.max_steps.iloc[0]):,} steps)"))
    else:
        click.echo(common.table(df[["memory", "pairs", "accuracy", "loss", "state_floats"]]))
        click.echo(f"knee (largest S at >= {threshold}): {analysis.knee(df, threshold)}; "
                   f"50% point: {analysis.half_point(df):.1f}")
    if csv_path:
        files.write_text(csv_path, df.to_csv(index=False))
    if store is not None:
        store.add_probes(df)


@analyze.command(name="sharpness")
@_stored_run_options
def analyze_sharpness(run, store_path, examples):
    """Entropy, largest weight, top-k mass and answer mass per layer and head of a stored run."""
    from evalsuite.analysis import sharpness as sharp_mod

    config, model, test = _load_run(store_path, run)
    test = test[:examples]
    df = sharp_mod.attention_sharpness(model, test.inputs, test.targets, test.answers)
    if df.empty:
        raise common.BadInput("--run: the test set has no graded positions")
    click.echo(f"{config['model']['name']} on {config['task']['name']}, {examples} test examples")
    click.echo(common.table(df.groupby(["layer", "head", "mixer"])[sharp_mod.COLUMNS].mean().reset_index()))
    click.echo("\nagainst context length:")
    click.echo(common.table(sharp_mod.by_context(df)))


@analyze.command(name="interference")
@_stored_run_options
def analyze_interference(run, store_path, examples):
    """Key coherence, effective rank and cross-talk per layer and head of a stored run."""
    import pandas as pd

    from evalsuite.analysis import classify_errors
    from evalsuite.analysis import interference as inter_mod

    config, model, test = _load_run(store_path, run)
    test = test[:examples]
    x, y = test.inputs, test.targets
    queries, ex = inter_mod.key_interference(model, x, y, test.answers)
    click.echo(f"{config['model']['name']} on {config['task']['name']}, {examples} test examples")
    click.echo(common.table(pd.DataFrame(inter_mod.summarize(queries, ex))))
    click.echo("\nagainst the number of stored keys:")
    click.echo(common.table(inter_mod.by_keys(ex)))
    import torch

    with torch.no_grad():
        errors = classify_errors(x, y, model(x).argmax(-1))
    click.echo(f"\nanswers: {errors['correct']} right, {errors['other_value']} another value of the context "
               f"(interference), {errors['not_a_value']} not a value there")
