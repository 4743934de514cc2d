#!/usr/bin/env bash
# One-time set-up on a fresh machine: the project with its Python dependencies (llama.cpp's server for
# the embedded model comes prebuilt in the xllamacpp wheel: no compiler, no cmake) and Debian's
# Chromium for the MLflow UI test. The AVX-512 llama-server build is an opt-in speed-up on top:
# `bash scripts/build_llama_server.sh` (docs/lm.md, "Engines"). Prints how long each step took.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
python -m pip install --quiet -e ".[test,bench]"
pip_s=$((SECONDS - start))
if ! command -v chromium >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
  else
    echo "warning: Debian's chromium is not installed and this is not root; the MLflow UI test will fail" >&2
  fi
fi
chromium_s=$((SECONDS - start - pip_s))
python -c "import dspy, mlflow; from eir_dspy.lm.server_program import server_program
print('dspy', dspy.__version__, '| mlflow', mlflow.__version__, '| embedded LM engine:', server_program().describe())"
echo "set-up: $((SECONDS - start)) s (pip $pip_s s, chromium $chromium_s s)"
