"""What the commands share: option decorators (store, device, threads, executor, overwrite),
the one bad-input error, and small helpers."""
from __future__ import annotations

import click

from evalsuite.params import MAX_SEED

MAX_PAIRS = 65_536


class BadInput(click.ClickException):
    """Bad usage or input: one message, exit status 2, no traceback."""

    exit_code = 2


def os_message(exc: OSError) -> str:
    if exc.strerror is None:  # raised without an errno (a template not found, ...): say what it is
        return f"{type(exc).__name__}: {exc}"
    where = f": {exc.filename}" if exc.filename else ""
    return f"{exc.strerror}{where}"


def device_option(command):
    return click.option("--device", default="auto", show_default=True, type=click.Choice(["auto", "cpu", "cuda"]),
                        help="auto: CUDA when present")(command)


def seed_option(command):
    return click.option("--seed", default=0, show_default=True, type=click.IntRange(0, MAX_SEED),
                        help="the run's seed (data, initialisation, order)")(command)


def store_option(command):
    return click.option("--store", "store_path", default=None, type=click.Path(),
                        help="SQLite results store [default: $EVALSUITE_STORE or results/evalsuite.db]")(command)


def threads_option(command):
    return click.option("--threads", default=None, type=click.IntRange(min=1),
                        help="CPU threads per run [default: $OMP_NUM_THREADS if set; else all cores for one run, "
                             "the cores divided among sweep workers]")(command)


def compact_option(command):
    return click.option("--compact", is_flag=True,
                        help="a smaller report to commit or share: no per-run training curves, and the embedded data "
                             "without each run's analyses and slices")(command)


def overwrite_option(command):
    return click.option("--overwrite", is_flag=True, help="replace an existing output file")(command)


def set_threads(threads: int | None) -> None:
    if threads:
        import torch

        torch.set_num_threads(threads)


def open_store(store_path, must_exist: bool = False):
    from evalsuite.store import Store

    store = Store(store_path)
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.find_root().meta["store"] = store.path  # what an error from the store names (cli.Main)
    if must_exist and not store.path.exists():
        raise BadInput(f"--store: no results store at {store.path}; run `evalsuite run ...` first")
    return store


def sweep_run_ids(store, sweep_id: str | None) -> list[str] | None:
    """The run ids of ``--sweep`` (an id or unique prefix) in ``store``; None for every run."""
    if not sweep_id:
        return None
    try:
        return store.sweep_runs(sweep_id)[1]
    except KeyError as exc:
        raise BadInput(f"--sweep: {exc.args[0]}") from None


def group_option(command):
    return click.option("--group", default="auto", show_default=True, type=click.Choice(["auto", "on", "off"]),
                        help="train points that differ only in learning rate and seed together, as one batched model "
                             "(each keeps its own optimizer, schedule, early stopping and record); auto: where a few "
                             "timed steps say the batched step is faster")(command)


def executor_options(command):
    for option in reversed([
            click.option("--executor", default="local", show_default=True, type=click.Choice(["local", "ray"]),
                         help="local: worker processes on this machine; ray: tasks on a Ray cluster (--address)"),
            click.option("--workers", default=None, type=click.IntRange(min=1),
                         help="parallel runs [default: 1 on CPU (all cores), one per GPU]"),
            click.option("--address", default=None, help="Ray: join the cluster at this address instead of starting one"),
            device_option, store_option, threads_option, group_option]):
        command = option(command)
    return command


def device_name(device: str) -> str:
    from evalsuite import environment

    try:
        return str(environment.resolve_device(device))
    except ValueError as exc:
        raise BadInput(str(exc)) from None


def lengths(text: str, name: str) -> tuple[int, ...]:
    try:
        values = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise BadInput(f"--{name}: expected comma-separated positive integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise BadInput(f"--{name}: expected comma-separated positive integers, got {text!r}")
    return values


def table(df, floatfmt: str = "{:.3f}") -> str:
    return df.to_string(index=False, float_format=lambda x: floatfmt.format(x))


