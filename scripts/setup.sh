#!/usr/bin/env bash
# One-time set-up on a fresh machine: Python dependencies, llama-cpp-python (a source build,
# about 7 minutes the first time; pip caches the wheel) and the project itself.
set -euo pipefail
cd "$(dirname "$0")/.."
CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
  python -m pip install --quiet -e ".[local,test]"
python -c "import dspy, llama_cpp, mlflow; print('dspy', dspy.__version__, '| llama-cpp-python', llama_cpp.__version__, '| mlflow', mlflow.__version__)"
