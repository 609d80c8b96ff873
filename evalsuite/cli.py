"""Command line: ``evalsuite run | sample | list | report | sweep | reproduce | bench | analyze``.

Exit status: 0 success, 1 a run that failed, diverged or was interrupted (the store says why), 2
bad input (one ``Error:`` line naming the parameter, before any work starts). Every error the
suite raises on purpose (``evalsuite.errors``) and every OS error becomes one ``Error:`` line;
``--debug`` (or ``EVALSUITE_DEBUG=1``) shows the traceback instead.
"""
from __future__ import annotations

import os
import re
import signal
import sqlite3
import sys
from pathlib import Path

import click

from evalsuite import __version__
from evalsuite.errors import EvalsuiteError, Interrupted
from evalsuite.records import TARGET_ACCURACY

MAX_SEED = 2**31 - 1
MAX_PAIRS = 65_536


class BadInput(click.ClickException):
    """Bad usage or input: one message, exit status 2, no traceback."""

    exit_code = 2


class Failure(click.ClickException):
    """One ``Error:`` line with the exit status of the error behind it."""

    def __init__(self, message: str, exit_code: int):
        super().__init__(message)
        self.exit_code = exit_code


def _os_message(exc: OSError) -> str:
    where = f": {exc.filename}" if exc.filename else ""
    return f"{exc.strerror or exc}{where}"


def _raise_interrupted(signum, frame):
    raise Interrupted()


class Main(click.Group):
    """The one error path: messages instead of tracebacks, at the boundary of every command."""

    def invoke(self, ctx):
        previous = None
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:  # SIGTERM ends a run like Ctrl-C: recorded
            try:
                previous = signal.signal(signal.SIGTERM, _raise_interrupted)
            except ValueError:  # not the main thread
                previous = None
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except (KeyboardInterrupt, Interrupted) as exc:
            what = "Ctrl-C" if isinstance(exc, KeyboardInterrupt) else "SIGTERM"
            click.echo(f"Error: interrupted by {what}; unfinished runs are recorded as interrupted "
                       f"(run the same command again to resume)", err=True)
            sys.exit(130)
        except Exception as exc:
            if ctx.meta.get("debug") or os.environ.get("EVALSUITE_DEBUG") == "1":
                raise
            if isinstance(exc, EvalsuiteError):
                raise Failure(str(exc), exc.exit_code) from None
            if isinstance(exc, OSError):
                raise Failure(_os_message(exc), 2) from None
            if isinstance(exc, sqlite3.DatabaseError):
                raise Failure(f"--store: the results store cannot be used: {exc}", 2) from None
            if isinstance(exc, MemoryError):
                raise Failure("out of memory; use smaller sizes (the message above names them)", 1) from None
            raise
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)


@click.group(cls=Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="evalsuite")
@click.option("--debug", is_flag=True, help="show tracebacks instead of one-line errors")
@click.pass_context
def main(ctx, debug) -> None:
    """evalsuite: does your sequence mixer actually remember?"""
    ctx.meta["debug"] = debug


# options shared by several commands
def device_option(command):
    return click.option("--device", default="auto", show_default=True, type=click.Choice(["auto", "cpu", "cuda"]),
                        help="auto: CUDA when present")(command)


def store_option(command):
    return click.option("--store", "store_path", default=None, type=click.Path(),
                        help="SQLite results store [default: $EVALSUITE_STORE or results/evalsuite.db]")(command)


def threads_option(command):
    return click.option("--threads", default=None, type=click.IntRange(min=1),
                        help="CPU threads per run [default: $OMP_NUM_THREADS if set; else all cores for one run, "
                             "the cores divided among sweep workers]")(command)


def overwrite_option(command):
    return click.option("--overwrite", is_flag=True, help="replace an existing output file")(command)


def _set_threads(threads: int | None) -> None:
    if threads:
        import torch

        torch.set_num_threads(threads)


def _open_store(store_path, must_exist: bool = False):
    from evalsuite.store import Store

    store = Store(store_path)
    if must_exist and not store.path.exists():
        raise BadInput(f"--store: no results store at {store.path}; run `evalsuite run ...` first")
    return store


@main.command()
@click.option("--task", required=True, help="task name (see `evalsuite list tasks`)")
@click.option("--model", required=True, help="model name (see `evalsuite list models`)")
@click.option("--feature-map", default=None, help="feature map for linear models: name, package.module:Attr or file.py:Attr")
@click.option("--preset", default="default", show_default=True, help="named preset (see `evalsuite list presets`)")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="override a config value, e.g. --set train.lr=0.001 (a bare key works when unambiguous)")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(0, MAX_SEED))
@device_option
@store_option
@threads_option
@click.option("--out", default="results/reports", show_default=True, type=click.Path(file_okay=False),
              help="folder for the HTML report")
@click.option("--force", is_flag=True, help="train again even if the store holds this run")
@click.option("--no-report", is_flag=True, help="skip the HTML report")
def run(task, model, feature_map, preset, overrides, seed, device, store_path, threads, out, force, no_report):
    """Train MODEL on TASK, print a summary, record it in the store and write its report."""
    from evalsuite import config as cfg
    from evalsuite import environment, files
    from evalsuite.pipeline import execute

    config = cfg.resolve(task=task, model=model, preset=preset, overrides=overrides, feature_map=feature_map,
                         seed=seed)
    dev = environment.resolve_device(device)
    store = _open_store(store_path)
    report = None if no_report else files.check_output(Path(out) / f"{cfg.run_id(config)}.html", "--out",
                                                       store=store.path)
    _set_threads(threads)
    click.echo(f"evalsuite run: {model} on {task} (preset {preset}, seed {seed}, device {dev}, "
               f"{_threads()} thread{'s' if _threads() != 1 else ''})", err=True)
    result = execute(config, device=device, store=store, force=force)
    if report is not None:
        from evalsuite.reports import builder

        try:
            builder.write([result], report, title=f"evalsuite: {model} on {task}")
        except OSError as exc:  # the run is recorded; say so and go on
            result.warnings.append(f"report not written: {_os_message(exc)}")
            report = None
    click.echo(_summary(result, store.path, report))
    if not result.ok:
        sys.exit(1)


def _threads() -> int:
    import torch

    return torch.get_num_threads()


def _summary(result, store_path, report) -> str:
    from evalsuite.train import convergence_note

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
            floor = f"  (chance {m['context_chance']:.4f}: {m.get('chance_rule', '')}; majority class {m['majority_rate']:.4f})"
        budget = f" of {m['budget_steps']}, best at step {m['best_step']}" if "budget_steps" in m else ""
        rows += [("test accuracy", f"{m['accuracy']:.4f}{floor}"), ("val accuracy", f"{m['val_accuracy']:.4f}"),
                 ("test loss", f"{m['loss']:.4f}"),
                 ("steps", f"{m['steps']}{budget} ({m['steps_per_s']:.0f} steps/s)")]
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


@main.command()
@click.option("--task", required=True, help="task name (see `evalsuite list tasks`)")
@click.option("--preset", default="default", show_default=True, help="the task's preset")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="override a task parameter")
@click.option("-n", "count", default=3, show_default=True, type=click.IntRange(min=1), help="examples")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(0, MAX_SEED))
@click.option("--out", default=None, type=click.Path(),
              help="export the examples to FILE.jsonl or FILE.npz instead of printing them")
@overwrite_option
def sample(task, preset, overrides, count, seed, out, overwrite):
    """Print examples of a task with the graded positions marked [input => target], or export them.
    Writes nothing but ``--out`` (no cache)."""
    from evalsuite import config as cfg
    from evalsuite import files
    from evalsuite.store import default_path

    if out is not None:
        if Path(out).suffix not in (".jsonl", ".npz"):
            raise BadInput(f"--out: the file must end in .jsonl or .npz, got {out!r}")
        files.check_output(out, "--out", store=default_path(), overwrite=overwrite)
    section, task_obj = cfg.resolve_task(task, preset=preset, overrides=overrides)
    cfg.check_memory([(task_obj, count)], what="-n")
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
                         for k, v in batch.meta.items())
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
                         "meta": {k: v[i].item() for k, v in batch.meta.items()}, "task": section})
             for i in range(len(batch))]
    files.write_text(path, "\n".join(lines) + "\n")


LISTABLE = ("tasks", "models", "feature-maps", "presets")


@main.command(name="list")
@click.argument("what", required=False, type=click.Choice(LISTABLE))
def list_(what):
    """List tasks, models, feature maps or presets (all of them when WHAT is omitted)."""
    for kind in ([what] if what else LISTABLE):
        click.echo(f"{kind}:")
        for line in _listing(kind):
            click.echo(f"  {line}")


def _fields(model_cls) -> str:
    return ", ".join(f"{name}={f.get_default(call_default_factory=True)!r}" for name, f in model_cls.model_fields.items())


def _first_line(obj, width: int = 100) -> str:
    """The docstring's first sentence (or paragraph), on one line."""
    paragraph = " ".join((obj.__doc__ or "").strip().split("\n\n")[0].split())
    sentence = re.split(r"\.\s+(?=[A-Z`])", paragraph)[0].rstrip(".")  # not at "et al. 2021"
    return sentence if len(sentence) <= width else sentence[:width - 3] + "..."


def _map_options(cls) -> str:
    import inspect

    params = list(inspect.signature(cls.__init__).parameters.values())[2:]
    shown = [f"{p.name}={p.default!r}" for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    return f"\n{'':<17}options: {', '.join(shown)}" if shown else ""


def _listing(kind: str) -> list[str]:
    from evalsuite import config as cfg
    from evalsuite import models, tasks
    from evalsuite.models import feature_maps

    if kind == "tasks":
        return [f"{name:<14} {cls.description}\n{'':<17}params: {_fields(cls.Params)}\n"
                f"{'':<17}presets: {', '.join(cls.presets) or '-'}" for name, cls in tasks.TASKS.items()]
    if kind == "models":
        return [f"{name:<14} {_first_line(cls)}"
                + (f"\n{'':<17}options: {_fields(cls.Options)}" if cls.Options.model_fields else "")
                for name, cls in models.MODELS.items()]
    if kind == "feature-maps":
        return [f"{name:<14} {_first_line(cls)}{_map_options(cls)}"
                for name, cls in feature_maps.FEATURE_MAPS.items()]
    return [f"{name:<14} {p['description']}" for name, p in cfg.PRESETS.items()]


@main.command()
@store_option
@click.option("-o", "--output", default="results/report.html", show_default=True, type=click.Path())
@click.option("--plot-format", default="png", show_default=True, type=click.Choice(["png", "svg"]),
              help="png (small) or svg (for publication) for the summary plots")
@click.option("--open", "open_after", is_flag=True, help="open the report in the default browser")
@click.option("--sweep", "sweep_id", default=None, help="only the runs of this sweep (id or unique prefix)")
def report(store_path, output, plot_format, open_after, sweep_id):
    """Write a self-contained HTML report of every run in the store (or one sweep). Reads the
    store without modifying it."""
    from evalsuite import files
    from evalsuite.reports import builder

    store = _open_store(store_path, must_exist=True)
    files.check_output(output, "--output", store=store.path)
    run_ids = None
    if sweep_id:
        try:
            sweep_id, run_ids = store.sweep_runs(sweep_id)
        except KeyError as exc:
            raise BadInput(f"--sweep: {exc.args[0]}") from None
    runs = store.runs(run_ids)
    path = builder.write(runs, output, title=f"evalsuite report: {len(runs)} runs", probes=store.probes(),
                         plot_format=plot_format)
    click.echo(f"report   {path} ({path.stat().st_size / 2**20:.1f} MiB, {len(runs)} runs)")
    if open_after:
        click.launch(str(path.resolve()))


def _executor_options(command):
    for option in reversed([
            click.option("--executor", default="local", show_default=True, type=click.Choice(["local", "ray"])),
            click.option("--workers", default=None, type=click.IntRange(min=1),
                         help="parallel runs [default: 1 on CPU (all cores), one per GPU]"),
            click.option("--address", default=None, help="Ray: join the cluster at this address instead of starting one"),
            device_option, store_option, threads_option]):
        command = option(command)
    return command


@main.command()
@click.argument("spec", type=click.Path(dir_okay=False))
@_executor_options
@click.option("--retry-failed", is_flag=True, help="run failed and diverged points again")
@click.option("--status", "show_status", is_flag=True, help="show done, running, interrupted, failed and left; run nothing")
@click.option("--report/--no-report", default=True, show_default=True, help="write the sweep's HTML report at the end")
def sweep(spec, executor, workers, address, device, store_path, threads, retry_failed, show_status, report):
    """Run the grid in SPEC (YAML or TOML); running it again resumes (finished runs are skipped)."""
    from evalsuite import sweep as sweeps
    from evalsuite.executors import get_executor

    store = _open_store(store_path)
    points = sweeps.expand(sweeps.load_spec(spec))
    if show_status:
        if store.path.exists():
            sweeps.ingest_incoming(store)
        state = sweeps.status(points, store)
        click.echo(f"{len(points)} runs: " + ", ".join(f"{len(v)} {k}" for k, v in state.items()))
        for p in state["failed"]:
            row = store.get(p.run_id)
            click.echo(f"  failed  {p.run_id}  {sweeps.describe(p.axes)}: {row.first_error_line(100)}")
        for p in state["running"]:
            click.echo(f"  running {p.run_id}  {sweeps.describe(p.axes)} (by a live process)")
        for p in state["interrupted"]:
            click.echo(f"  interrupted {p.run_id}  {sweeps.describe(p.axes)} (interrupted, or its process is gone: "
                       f"rerun the sweep to run it again)")
        return
    _device_name(device)
    get_executor(executor, workers=workers, device=device, address=address, threads=threads)  # refuse bad options first
    summary = sweeps.run_sweep(spec, store=store, executor=executor, workers=workers, device=device, threads=threads,
                               retry_failed=retry_failed, address=address, echo=click.echo)
    if report:
        from evalsuite.reports import builder

        _, run_ids = store.sweep_runs(summary["sweep_id"])
        runs = store.runs(run_ids)
        try:
            path = builder.write(runs, store.path.parent / "reports" / f"sweep-{summary['sweep_id']}.html",
                                 title=f"evalsuite sweep {Path(spec).stem}: {len(runs)} runs", probes=store.probes())
            click.echo(f"report   {path}")
        except OSError as exc:
            click.echo(f"warning  report not written: {_os_message(exc)}", err=True)
    if summary["failed"]:
        sys.exit(1)


@main.command()
@click.argument("names", nargs=-1)
@click.option("--scale", default="cpu", show_default=True, type=click.Choice(["cpu", "paper"]),
              help="cpu: sizes that run here in about an hour; paper: the published sizes (a GPU or a cluster)")
@click.option("--list", "list_only", is_flag=True, help="name each experiment, its source and expected run time")
@_executor_options
@click.option("--verdicts-only", is_flag=True, help="judge what the store holds; run nothing (the store is only read)")
@click.option("-o", "--output", default=None, type=click.Path(),
              help="reproduction report [default: reports/reproduce-SCALE.html beside the store]")
def reproduce(names, scale, list_only, executor, workers, address, device, store_path, threads, verdicts_only, output):
    """Run the experiments behind docs/FINDINGS.md (all, or NAMES) and judge each from the stored results."""
    from evalsuite import files
    from evalsuite import reproduce as rep
    from evalsuite import sweep as sweeps
    from evalsuite.executors import get_executor
    from evalsuite.reports import builder

    if list_only:
        for e in rep.EXPERIMENTS.values():
            click.echo(f"{e.name:<16} {e.source}\n{'':<17}{e.finding}\n{'':<17}expected: about {e.minutes['cpu']:g} min "
                       f"at cpu scale on 2 cores; about {e.minutes['paper']:g} GPU-min at paper scale")
        return
    names = rep.check_names(names)
    store = _open_store(store_path, must_exist=verdicts_only)
    output = files.check_output(output or store.path.parent / "reports" / f"reproduce-{scale}.html", "--output",
                                store=store.path)
    if not verdicts_only:
        _device_name(device)
        get_executor(executor, workers=workers, device=device, address=address, threads=threads)
    run_ids: list[str] = []
    for name in names:
        exp = rep.EXPERIMENTS[name]
        spec = exp.spec(scale)
        if spec is not None:
            run_ids += [p.run_id for p in sweeps.expand(spec)]
        if verdicts_only:
            continue
        click.echo(f"== {name}: {exp.finding}")
        options = dict(store=store, executor=executor, workers=workers, device=device, address=address, threads=threads,
                       echo=click.echo)
        if spec is not None:
            sweeps.run_sweep(spec, **options)
            rep.escalate(exp, scale, store, lambda sweep_name, configs: sweeps.run_configs(configs, name=sweep_name, **options),
                         echo=click.echo)
        rep.run_probes(exp, scale, store, echo=click.echo)
    if not store.path.exists():
        raise BadInput(f"--store: nothing stored at {store.path}; run without --verdicts-only first")
    verdicts = rep.verdicts(names, store, scale)
    for v in verdicts:
        click.echo(f"{v.name:<16} {v.status.upper()}" + (f"  ({v.why})" if v.why else ""))
        for f in v.figures:
            click.echo(f"{'':<17}{f}")
    runs = list({r.run_id: r for name in names for r in rep.experiment_runs(rep.EXPERIMENTS[name], scale, store)}.values())
    path = builder.write(runs, output, title=f"evalsuite: reproducing the literature ({scale} scale)",
                         probes=store.probes(), preamble=rep.verdict_html(verdicts))
    click.echo(f"report   {path}")


@main.group()
def bench() -> None:
    """Benchmarks that print figures (kernels, decoding)."""


def _device_name(device: str) -> str:
    from evalsuite import environment

    try:
        return str(environment.resolve_device(device))
    except ValueError as exc:
        raise BadInput(str(exc)) from None


def _lengths(text: str, name: str) -> tuple[int, ...]:
    try:
        values = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise BadInput(f"--{name}: expected comma-separated positive integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise BadInput(f"--{name}: expected comma-separated positive integers, got {text!r}")
    return values


@bench.command(name="kernels")
@click.option("--lengths", default="256,512,1024,2048,4096,8192,16384", show_default=True, help="sequence lengths T")
@click.option("--dim", default=64, show_default=True, type=click.IntRange(min=1), help="head size d")
@click.option("--heads", default=4, show_default=True, type=click.IntRange(min=1))
@click.option("--batch", default=1, show_default=True, type=click.IntRange(min=1))
@click.option("--recurrent-max", default=8192, show_default=True, type=click.IntRange(min=1),
              help="skip the recurrent loops beyond this length")
@click.option("--device", default="auto", show_default=True, type=click.Choice(["auto", "cpu", "cuda"]))
def bench_kernels(lengths, dim, heads, batch, recurrent_max, device):
    """Forward+backward time of SDPA, linear and delta kernels against T, with the crossover."""
    from evalsuite import bench as benchmarks
    from evalsuite.config import require_memory

    longest = max(_lengths(lengths, "lengths"))
    # q, k, v, outputs, their gradients and the chunked intermediates: about 64 floats per element
    require_memory(64 * 4 * batch * heads * longest * dim, "--lengths",
                   f"T={longest:,} x {heads} heads x d {dim} x batch {batch}")
    benchmarks.kernels(_lengths(lengths, "lengths"), batch=batch, heads=heads, dim=dim, device=_device_name(device), recurrent_max=recurrent_max, echo=click.echo)


@bench.command(name="decode")
@click.option("--contexts", default="1024,4096,16384,65536", show_default=True, help="context lengths")
@click.option("--d-model", default=256, show_default=True, type=click.IntRange(min=1))
@click.option("--layers", default=2, show_default=True, type=click.IntRange(min=1))
@click.option("--heads", default=4, show_default=True, type=click.IntRange(min=1))
@click.option("--device", default="auto", show_default=True, type=click.Choice(["auto", "cpu", "cuda"]))
def bench_decode(contexts, d_model, layers, heads, device):
    """Per-token decode time and state bytes: softmax's KV cache against linear/delta's fixed state."""
    from evalsuite import bench as benchmarks

    from evalsuite.config import require_memory

    if d_model % heads:
        raise BadInput(f"--d-model ({d_model}) must be divisible by --heads ({heads})")
    longest = max(_lengths(contexts, "contexts"))
    require_memory(4 * 2 * layers * longest * d_model * 4, "--contexts",  # softmax's KV cache, twice over
                   f"a KV cache of {longest:,} tokens x {layers} layers x d_model {d_model}")
    benchmarks.decode(_lengths(contexts, "contexts"), d_model=d_model, n_layers=layers, n_heads=heads,
                      device=_device_name(device), echo=click.echo)


@main.group()
def analyze() -> None:
    """Why recall fails: memory capacity, key interference, attention sharpness."""


def _stored_run_options(command):
    for option in reversed([
            click.option("--run", "run", required=True, help="run id (or a unique prefix) from the store"),
            click.option("--store", "store_path", default=None, type=click.Path(dir_okay=False)),
            click.option("--examples", default=256, show_default=True, type=click.IntRange(min=1))]):
        command = option(command)
    return command


def _load_run(store_path, run):
    from evalsuite.store import Store
    from evalsuite.pipeline import load_trained

    store = Store(store_path)
    if not store.path.exists():
        raise BadInput(f"--store: no results store at {store.path}")
    try:
        return load_trained(store, store.find(run))
    except (KeyError, FileNotFoundError) as exc:
        raise BadInput(f"--run: {exc.args[0]}") from None


def _table(df, floatfmt: str = "{:.3f}") -> str:
    return df.to_string(index=False, float_format=lambda x: floatfmt.format(x))


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
@click.option("--variant", default="schlag", show_default=True, type=click.Choice(["schlag", "tied"]),
              help="trained probe: schlag = Schlag et al. 6.1 (one-hot values, own query projection, held-out knee); "
                   "tied = random unit values, query through the key projection")
@click.option("--threshold", default=TARGET_ACCURACY, show_default=True, type=click.FloatRange(0, 1))
@click.option("--seed", default=0, show_default=True, type=click.IntRange(0, MAX_SEED))
@click.option("--csv", "csv_path", default=None, type=click.Path(), help="also write the table as CSV")
@overwrite_option
@click.option("--save", is_flag=True, help="record the rows in the store (the report's capacity section shows them)")
@store_option
def analyze_capacity(memory, feature_map, map_options, d_key, pairs, trained, setting, steps, variant, threshold, seed,
                     csv_path, overwrite, save, store_path):
    """Retrieval accuracy of one memory as the number of stored pairs grows; prints the knee."""
    from evalsuite import analysis, files
    from evalsuite.config import parse_value

    store = _open_store(store_path) if save else None
    if csv_path:
        from evalsuite.store import check_path

        files.check_output(csv_path, "--csv", store=check_path(store_path), overwrite=overwrite)
    pair_counts = _lengths(pairs, "pairs")
    if max(pair_counts) > MAX_PAIRS:
        raise BadInput(f"--pairs: at most {MAX_PAIRS} pairs, got {max(pair_counts)}")
    options = {}
    for item in map_options:
        key, sep, value = item.partition("=")
        if not sep:
            raise BadInput(f"--option {item!r}: expected KEY=VALUE, e.g. --option nu=2")
        options[key.strip()] = parse_value(value.strip())
    extra = dict(setting=int(setting), steps=steps, variant=variant, echo=click.echo) if trained else {}
    try:
        df = analysis.capacity_probe(memory, feature_map=feature_map, d_key=d_key, pairs=pair_counts,
                                     trained=trained, seed=seed, feature_map_options=options or None, **extra)
    except (ValueError, TypeError) as exc:  # a feature-map option it does not take, a bad value
        raise BadInput(str(exc)) from None
    click.echo(_table(df[["memory", "pairs", "accuracy", "loss", "state_floats"]]))
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
        raise BadInput("--run: the test set has no graded positions")
    click.echo(f"{config['model']['name']} on {config['task']['name']}, {examples} test examples")
    click.echo(_table(df.groupby(["layer", "head", "mixer"])[sharp_mod.COLUMNS].mean().reset_index()))
    click.echo("\nagainst context length:")
    click.echo(_table(sharp_mod.by_context(df)))


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
    click.echo(_table(pd.DataFrame(inter_mod.summarize(queries, ex))))
    click.echo("\nagainst the number of stored keys:")
    click.echo(_table(inter_mod.by_keys(ex)))
    import torch

    with torch.no_grad():
        errors = classify_errors(x, y, model(x).argmax(-1))
    click.echo(f"\nanswers: {errors['correct']} right, {errors['other_value']} another value of the context "
               f"(interference), {errors['not_a_value']} not a value there")


if __name__ == "__main__":
    main()
