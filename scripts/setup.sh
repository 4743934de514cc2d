#!/usr/bin/env bash
# One-time set-up on a fresh machine: Python dependencies, llama-cpp-python (a source build,
# about 7 minutes the first time; pip caches the wheel), llama.cpp's server for the embedded
# model (scripts/build_llama_server.sh: its CPU variant and why), the project itself, and
# Debian's Chromium for the MLflow UI test.
set -euo pipefail
cd "$(dirname "$0")/.."
# Not -march=native: on CPUs with AMX (Sapphire Rapids and later) a native build segfaults in
# ggml_backend_amx_mul_mat under this sandbox's kernel. AVX2/FMA is portable and nearly as fast
# on two cores. Set CMAKE_ARGS yourself to override.
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON}"
CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
  python -m pip install --quiet -e ".[local,test,bench]"
bash scripts/build_llama_server.sh
if ! command -v chromium >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "warning: Debian's chromium is not installed and this is not root; the MLflow UI test will fail" >&2
  fi
fi
python -c "import dspy, llama_cpp, mlflow; print('dspy', dspy.__version__, '| llama-cpp-python', llama_cpp.__version__, '| mlflow', mlflow.__version__)"
