#!/usr/bin/env bash
# The prepared GPU check (issue 17): run it whenever a machine with an NVIDIA GPU is lent, then put
# its table in the README. Aimed at about five minutes on an H200 (never run yet: no GPU has been
# lent); prints one table at the end.
#   bash benchmarks/gpu_check.sh [OUT_DIR]
set -uo pipefail
OUT=${1:-${OUT:-results/gpu-check}}
mkdir -p "$OUT"
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
"$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available())" | tee -a "$OUT/gpu.txt"

echo "== tests on CUDA (tests/core/test_cuda.py) and the suite's model tests with CUDA visible"
timeout 240 "$PY" -m pytest -q -p no:cacheprovider tests/core/test_cuda.py tests/models/ 2>&1 | tail -5 | tee "$OUT/tests.txt"

echo "== kernels"
timeout 120 "$PY" -m evalsuite.cli bench kernels --device cuda --lengths 1024,4096,16384 2>&1 | tee "$OUT/kernels.txt" | tail -15

echo "== training throughput"
timeout 120 "$PY" benchmarks/train_throughput.py --device cuda --steps 300 --rounds 3 2>&1 | tee "$OUT/train.txt" | tail -8

echo "== grouped against one-at-a-time sweep throughput: 8 default runs (4 rates x 2 seeds, 3 epochs), 1 worker"
timeout 300 "$PY" benchmarks/grouped_sweep.py --spec examples/sweeps/gpu-check.yaml --device cuda --workers 1 \
    --out "$OUT/grouped" 2>&1 | tee "$OUT/grouped.txt" | tail -14

echo
echo "== summary"
cat "$OUT/gpu.txt"; tail -1 "$OUT/tests.txt"; grep -E "^ +(softmax|linear)" "$OUT/train.txt"; tail -3 "$OUT/grouped.txt"
