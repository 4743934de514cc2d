#!/usr/bin/env bash
# One-time set-up on a fresh machine: Python dependencies, llama.cpp's server for the embedded
# model (scripts/build_llama_server.sh: its CPU variant and why), the project itself, and Debian's
# Chromium for the MLflow UI test. No llama-cpp-python: the embedded model runs in llama-server,
# which converts JSON schemas itself (docs/lm.md).
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet -e ".[test,bench]"
bash scripts/build_llama_server.sh
if ! command -v chromium >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "warning: Debian's chromium is not installed and this is not root; the MLflow UI test will fail" >&2
  fi
fi
python -c "import dspy, mlflow; from eir_dspy.lm.embedded_server import server_binary
print('dspy', dspy.__version__, '| mlflow', mlflow.__version__, '| llama-server', server_binary())"
