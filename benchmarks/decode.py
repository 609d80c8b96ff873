"""Per-token decode time and state bytes at contexts 1k-64k: softmax KV cache vs fixed states.

    python benchmarks/decode.py         # same as `evalsuite bench decode`; --help for options
"""
from evalsuite.cli.bench import bench_decode

if __name__ == "__main__":
    bench_decode()
