#!/usr/bin/env bash
# One call on a GPU machine answers: do the CUDA kernels build, agree with the CPU path, and how
# fast are they?  (`make gpu-check`; about 5 minutes on a fresh machine with a warm pip cache.)
#   1. a CUDA device must be visible (else: exit 2, one line);
#   2. the gpu extra (cupy) is installed into the venv (created if missing);
#   3. pytest -m gpu (the CUDA kernels against the array code, the GPU engine against the host);
#   4. python -m minsep.gpu_check: same seed, same samples, max |loss| and |delta| differences
#      between the GPU and the CPU path for every registered loss model;
#   5. python -m minsep.bench --backend cupy: throughput of every model on the GPU.
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
PY="$VENV/bin/python"
fail() { echo "gpu-check: $1" >&2; exit "${2:-1}"; }

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q "GPU"; then
    fail "no NVIDIA GPU visible (nvidia-smi lists none); nothing to check" 2
fi
nvidia-smi -L
[ -x "$PY" ] || "$PYTHON" -m venv "$VENV" || fail "cannot create $VENV"
"$PY" -c "import cupy" 2>/dev/null \
    || "$PY" -m pip install -q -e ".[gpu,dev]" \
    || fail "pip install -e '.[gpu,dev]' failed (no network, or no cupy wheel for this CUDA)"
"$PY" -c "import cupy, sys; sys.exit(cupy.cuda.runtime.getDeviceCount() == 0)" \
    || fail "cupy is installed but sees no CUDA device" 2

status=0
echo "== pytest -m gpu"
timeout 300 "$PY" -m pytest -q -p no:cacheprovider -m gpu tests/gpu || status=1
echo "== GPU against CPU (same seed, same samples)"
timeout 180 "$PY" -m minsep.gpu_check || status=1
echo "== bench on cupy"
timeout 240 "$PY" -m minsep.bench --backend cupy --repeats 3 --no-engine || status=1
[ "$status" -eq 0 ] || fail "some GPU check failed (see above)"
echo "gpu-check: all passed"
