"""Kernel forward+backward time against T (SDPA, linear chunk/recurrent, delta chunk/recurrent).

    python benchmarks/kernels.py        # same as `evalsuite bench kernels`; --help for options
"""
from evalsuite.cli.bench import bench_kernels

if __name__ == "__main__":
    bench_kernels()
