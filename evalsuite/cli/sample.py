"""`evalsuite sample`: print or export examples of a task."""
from __future__ import annotations

from pathlib import Path

import click

from evalsuite.cli import common
from evalsuite.cli.app import main


@main.command()
@click.option("--task", required=True, help="task name (see `evalsuite list tasks`)")
@click.option("--preset", default="default", show_default=True, help="the task's preset")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="override a task parameter")
@click.option("-n", "count", default=3, show_default=True, type=click.IntRange(min=1), help="examples")
@common.seed_option
@click.option("--out", default=None, type=click.Path(),
              help="export the examples to FILE.jsonl or FILE.npz instead of printing them")
@common.overwrite_option
def sample(task, preset, overrides, count, seed, out, overwrite):
    """Print examples of a task with the graded positions marked [input => target], or export them.
    Writes nothing but ``--out`` (no cache)."""
    from evalsuite import files
    from evalsuite.resolve import resolve_task
    from evalsuite.resources import check_memory
    from evalsuite.store_file import default_path

    if out is not None:
        if Path(out).suffix not in (".jsonl", ".npz"):
            raise common.BadInput(f"--out: the file must end in .jsonl or .npz, got {out!r}")
        files.check_output(out, "--out", store=default_path(), overwrite=overwrite)
    section, task_obj = resolve_task(task, preset=preset, overrides=overrides)
    check_memory([(task_obj, count)], what="-n")
    batch = task_obj.generate(count, seed, cache_dir=False)
    if out is not None:
        _export(batch, Path(out), section)
        click.echo(f"wrote {count} examples of {task} to {out}")
        return
    click.echo(f"# {task}: {', '.join(f'{k}={v}' for k, v in section.items() if k != 'name')}")
    mask = batch.score_mask
    for i in range(len(batch)):
        names = task_obj.decode(batch.inputs[i])
        answers = task_obj.decode(batch.targets[i].clamp(min=0))
        shown = [f"[{tok} => {ans}]" if mask[i, j] else tok for j, (tok, ans) in enumerate(zip(names, answers))]
        meta = ", ".join(f"{k}={v[i].item():.3g}" if v.dtype.is_floating_point else f"{k}={v[i].item()}"
                         for k, v in batch.meta.items() if v[i].numel() == 1)  # a table (an automaton): in exports
        click.echo(f"\n## example {i} ({meta})\n" + " ".join(shown))


def _export(batch, path: Path, section: dict) -> None:
    """Write atomically: a failed export leaves no partial file."""
    import json

    import numpy as np

    from evalsuite import files

    scored = batch.score_mask
    if path.suffix == ".npz":
        files.atomic_write(path, lambda f: np.savez_compressed(
            f, inputs=batch.inputs.numpy(), targets=batch.targets.numpy(), scored=scored.numpy(),
            task=json.dumps(section), **{f"meta_{k}": v.numpy() for k, v in batch.meta.items()}))
        return
    lines = [json.dumps({"inputs": batch.inputs[i].tolist(), "targets": batch.targets[i].tolist(),
                         "scored": scored[i].nonzero()[:, 0].tolist(),
                         "meta": {k: v[i].tolist() for k, v in batch.meta.items()}, "task": section})
             for i in range(len(batch))]
    files.write_text(path, "\n".join(lines) + "\n")
