"""`evalsuite bench`: benchmarks that print figures."""
from __future__ import annotations

import click

from evalsuite.cli import common
from evalsuite.cli.app import main


@main.group()
def bench() -> None:
    """Benchmarks that print figures (kernels, decoding)."""


@bench.command(name="kernels")
@click.option("--lengths", default="256,512,1024,2048,4096,8192,16384", show_default=True, help="sequence lengths T")
@click.option("--dim", default=64, show_default=True, type=click.IntRange(min=1), help="head size d")
@click.option("--heads", default=4, show_default=True, type=click.IntRange(min=1))
@click.option("--batch", default=1, show_default=True, type=click.IntRange(min=1))
@click.option("--recurrent-max", default=8192, show_default=True, type=click.IntRange(min=1),
              help="skip the recurrent loops beyond this length")
@common.device_option
def bench_kernels(lengths, dim, heads, batch, recurrent_max, device):
    """Forward+backward time of SDPA, linear and delta kernels against T, with the crossover."""
    from evalsuite import bench as benchmarks
    from evalsuite.resources import require_memory

    longest = max(common.lengths(lengths, "lengths"))
    # q, k, v, outputs, their gradients and the chunked intermediates: about 64 floats per element
    require_memory(64 * 4 * batch * heads * longest * dim, "--lengths",
                   f"T={longest:,} x {heads} heads x d {dim} x batch {batch}")
    benchmarks.kernels(common.lengths(lengths, "lengths"), batch=batch, heads=heads, dim=dim, device=common.device_name(device), recurrent_max=recurrent_max, echo=click.echo)


@bench.command(name="decode")
@click.option("--contexts", default="1024,4096,16384,65536", show_default=True, help="context lengths")
@click.option("--d-model", default=256, show_default=True, type=click.IntRange(min=1))
@click.option("--layers", default=2, show_default=True, type=click.IntRange(min=1))
@click.option("--heads", default=4, show_default=True, type=click.IntRange(min=1))
@common.device_option
def bench_decode(contexts, d_model, layers, heads, device):
    """Per-token decode time and state bytes: softmax's KV cache against linear/delta's fixed state."""
    from evalsuite import bench as benchmarks

    from evalsuite.resources import require_memory

    if d_model % heads:
        raise common.BadInput(f"--d-model ({d_model}) must be divisible by --heads ({heads})")
    longest = max(common.lengths(contexts, "contexts"))
    require_memory(4 * 2 * layers * longest * d_model * 4, "--contexts",  # softmax's KV cache, twice over
                   f"a KV cache of {longest:,} tokens x {layers} layers x d_model {d_model}")
    benchmarks.decode(common.lengths(contexts, "contexts"), d_model=d_model, n_layers=layers, n_heads=heads,
                      device=common.device_name(device), echo=click.echo)
