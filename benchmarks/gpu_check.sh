#!/usr/bin/env bash
# The prepared GPU check: run it whenever a machine with an NVIDIA GPU is lent, then put its table
# in the README. Its steps' timeouts add up to 560 s, under the device tool's 10 minutes a command
# (never run yet: no GPU has been lent); prints one table at the end.
#   bash benchmarks/gpu_check.sh [OUT_DIR]
set -uo pipefail
OUT=${1:-${OUT:-results/gpu-check}}
mkdir -p "$OUT"
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
"$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available())" | tee -a "$OUT/gpu.txt"

echo "== tests on CUDA (tests/core/test_cuda.py) and the suite's model tests with CUDA visible"
timeout 150 "$PY" -m pytest -q -p no:cacheprovider tests/core/test_cuda.py tests/models/ 2>&1 | tail -5 | tee "$OUT/tests.txt"

echo "== kernels"
timeout 40 "$PY" -m evalsuite.cli bench kernels --device cuda --lengths 1024,4096,16384 2>&1 | tee "$OUT/kernels.txt" | tail -15

echo "== training throughput"
timeout 90 "$PY" benchmarks/train_throughput.py --device cuda --steps 300 --rounds 3 2>&1 | tee "$OUT/train.txt" | tail -8

echo "== grouped against one-at-a-time sweep throughput: 8 default runs (4 rates x 2 seeds, 3 epochs), 1 worker"
timeout 120 "$PY" benchmarks/grouped_sweep.py --spec examples/sweeps/gpu-check.yaml --device cuda --workers 1 \
    --out "$OUT/grouped" 2>&1 | tee "$OUT/grouped.txt" | tail -14

echo "== where a reproduce invocation's time goes on the GPU (softmax-mqar and copy, one worker, grouped)"
timeout 100 "$PY" benchmarks/reproduce_profile.py softmax-mqar copy --workers 1 --device cuda --group on \
    --store "$OUT/profile/evalsuite.db" --out "$OUT/profile.md" 2>&1 | tail -20 | tee "$OUT/profile.txt"

echo "== the CPU-scale frontier, grouped, on the GPU (as far as 60 s get; rerunning the command resumes it)"
timeout 60 "$PY" -m evalsuite.cli reproduce frontier --device cuda --group on --workers 1 \
    --store "$OUT/frontier/evalsuite.db" 2>&1 | tail -12 | tee "$OUT/frontier.txt"

echo
echo "== summary"
cat "$OUT/gpu.txt"; tail -1 "$OUT/tests.txt"; grep -E "^ +(softmax|linear)" "$OUT/train.txt"; tail -3 "$OUT/grouped.txt"
