#!/usr/bin/env bash
# Compile every method with gold demonstrations at one budget: k training questions (default 2),
# the same ones for every method (eval.compile --k). No model call; writes
# runs/compiled/<method>/gold-k<k>.json, the files grids/compiled.toml names.
#   EIR_DATA_DIR=../shared/data/raw bash scripts/compile_gold.sh [k]
set -euo pipefail
k="${1:-2}"
data="${EIR_DATA_DIR:?set EIR_DATA_DIR to the benchmark files (../shared/data/raw)}/hotpotqa"
for method in eir direct full_pool ssr reflexion; do
  python -m eval.compile --method "$method" --optimizer none --demos gold --score none --k "$k" \
    --train "$data/hotpot_dev_distractor.rpt_sample300_seed2.jsonl" \
    --dev "$data/hotpot_dev_distractor.rpt_sample500_seed1.jsonl" \
    --name "gold-k$k" --out "runs/compiled/$method" --experiment compiled
done
