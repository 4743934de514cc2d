#!/usr/bin/env bash
# Old runs migrate and then compare and analyze as before (issue 33 item 3).
#
#   git worktree add --detach /work/wt-old 9bec502      # once: a checkout of the old code
#   scripts/check_migration.sh                           # from this checkout's root
#
# 1. With the old checkout's code, log a few runs (every method in the pool, an ablation, EIR in the
#    corpus setting; 3 questions each) against the behaviour snapshot's fake LM into $OLD
#    (its own sqlite store, artifacts and runs/), then run the old eval.compare and eval.analyze
#    on them into $OLD/outputs. Skipped when $OLD/mlflow.db exists (FRESH=1 logs them again).
# 2. Copy $OLD to $MIG, point the copy's store at its own files, and run scripts/migrate_runs.py on
#    it (--dry-run first, then for real, with a backup).
# 3. With BEFORE_TREE set (a checkout whose readers still read old runs), run its eval.compare and
#    eval.analyze on $MIG before migrating, and this checkout's after: they must be equal (else exit 1).
# 4. Diff the old code's outputs against this checkout's on the migrated runs, normalised: paths, the
#    timestamped compare folder, table padding, and the option names today's rules add to the old runs'
#    variants (` invalid_updates=reject`, ` futile_searches=reject`: those runs ran under these rules, and
#    the reference is given as `eir invalid_updates=reject`). What remains is printed (code changes since).
set -euo pipefail

NEW=$(cd "$(dirname "$0")/.." && pwd)
OLD_TREE=${OLD_TREE:-/work/wt-old}
OLD=${OLD:-/work/old-runs}
MIG=${MIG:-/work/old-runs-migrated}
DATA=${EIR_DATA_DIR:-/work/shared/data/raw}
DEV=$DATA/hotpotqa/hotpot_dev_distractor.rpt_sample500_seed1.jsonl
EXPERIMENT=old-runs
ANALYSES="availability final-vs-submitted totals calls-after-support rejections parse-failures support"

# The caller's MLflow / DSPy / EIR settings never reach these commands.
clean_env() {
  env -u MLFLOW_TRACKING_URI -u DSPY_CACHEDIR -u EIR_INDEX_DIR -u PYTHONPATH \
    OPENAI_API_KEY=sk-fake EIR_DATA_DIR="$DATA" PYTHONHASHSEED=0 TQDM_DISABLE=1 LITELLM_LOCAL_MODEL_COST_MAP=True \
    "$@"
}

# `in_store ROOT TREE cmd...`: run `python -m cmd...` with TREE's code on ROOT's store, cwd ROOT.
in_store() {
  local root=$1 tree=$2; shift 2
  (cd "$root" && clean_env PYTHONPATH="$tree" MLFLOW_TRACKING_URI="sqlite:///$root/mlflow.db" \
     _MLFLOW_SERVER_ARTIFACT_ROOT="$root/artifacts" DSPY_CACHEDIR="$root/dspy-cache" python -m "$@")
}

outputs() {  # `outputs ROOT TREE OUT [ARGS]`: eval.compare (with ARGS) and the LM-free analyses, into OUT
  local root=$1 tree=$2 out=$3; shift 3
  rm -rf "$out" && mkdir -p "$out"
  in_store "$root" "$tree" eval.compare --experiment $EXPERIMENT --out "$out/compare" --no-log "$@" \
    > "$out/compare.txt" 2>&1 || echo "eval.compare exited $? (see $out/compare.txt)"
  for name in $ANALYSES; do
    in_store "$root" "$tree" eval.analyze "$name" --experiment $EXPERIMENT --out "$out/analyze-$name" --no-log \
      > "$out/analyze-$name.txt" 2>&1 || echo "eval.analyze $name exited $? (see $out/analyze-$name.txt)"
  done
}

if [[ ! -f $OLD/mlflow.db || ${FRESH:-0} == 1 ]]; then
  [[ -d $OLD_TREE/eval ]] || { echo "no old checkout at $OLD_TREE (git worktree add --detach $OLD_TREE 9bec502)"; exit 2; }
  rm -rf "$OLD" && mkdir -p "$OLD/lm/old"
  # The behaviour snapshot's fake LM (it imports nothing of the project): a plausible, sometimes careless agent.
  PYTHONPATH="$NEW/scripts" python -c "
import sys, time
from pathlib import Path
from behaviour_snapshot_lm import FakeLM
fake = FakeLM(Path(sys.argv[1]))
print(fake.url('old'), flush=True)
time.sleep(10**6)" "$OLD/lm" > "$OLD/lm/url" &
  LM_PID=$!
  trap 'kill $LM_PID 2>/dev/null || true' EXIT
  for _ in $(seq 50); do [[ -s $OLD/lm/url ]] && break; sleep 0.2; done
  URL=$(cat "$OLD/lm/url")
  run() { in_store "$OLD" "$OLD_TREE" eval.run --experiment $EXPERIMENT --data "$DEV" --limit 3 \
            --lm openai/fake --api-base "$URL" --out "$OLD/runs" "$@" > "$OLD/lm/run-$(echo "$*" | tr ' /' '__').log" 2>&1; }
  run --method eir --price-in 0.1 --price-out 0.4
  run --method direct
  run --method full_pool --price-in 0.1 --price-out 0.4
  run --method ssr
  run --method reflexion --trials 2
  run --method eir --ablation no-list-feedback
  in_store "$OLD" "$OLD_TREE" eval.index hotpot-corpus --data "$DEV" --out "$OLD/corpus/abstracts.tar.bz2" > "$OLD/lm/index.log" 2>&1
  in_store "$OLD" "$OLD_TREE" eval.index build --source "$OLD/corpus/abstracts.tar.bz2" --out "$OLD/corpus/index" >> "$OLD/lm/index.log" 2>&1
  run --method eir --setting corpus --index "$OLD/corpus/index"
  kill $LM_PID; trap - EXIT
  echo "old runs logged in $OLD; old outputs:"
  outputs "$OLD" "$OLD_TREE" "$OLD/outputs"
fi

rm -rf "$MIG" && cp -a "$OLD" "$MIG" && rm -rf "$MIG/outputs"
REFERENCE=(--reference "eir invalid_updates=reject")
# The copy's store still names the original's artifact and results paths: point it at its own.
python - "$MIG/mlflow.db" "$OLD/" "$MIG/" <<'EOF'
import sqlite3, sys
db, old, new = sys.argv[1:]
with sqlite3.connect(db) as c:
    c.execute("UPDATE experiments SET artifact_location = REPLACE(artifact_location, ?, ?)", (old, new))
    c.execute("UPDATE runs SET artifact_uri = REPLACE(artifact_uri, ?, ?)", (old, new))
    c.execute("UPDATE tags SET value = REPLACE(value, ?, ?) WHERE key = 'eir.results_path'", (old, new))
EOF

migrate() { (cd "$NEW" && clean_env MLFLOW_TRACKING_URI="sqlite:///$MIG/mlflow.db" python scripts/migrate_runs.py "$@"); }
# BEFORE_TREE: a checkout whose readers still read the old runs (e.g. main at cdba56a): its outputs on the
# copy before the migration must equal this checkout's after it.
[[ -z ${BEFORE_TREE:-} ]] || outputs "$MIG" "$BEFORE_TREE" "$MIG/outputs-unmigrated" "${REFERENCE[@]}"
migrate --dry-run | tee "$MIG/migration-dry-run.txt"
migrate --backup "$MIG/migration-backup" | tee "$MIG/migration.txt"
migrate --dry-run | tee "$MIG/migration-again.txt"  # a second pass finds nothing to change
outputs "$MIG" "$NEW" "$MIG/outputs" "${REFERENCE[@]}"

# `norm IN OUT [SUFFIXES]`: a copy of an output tree with paths and the compare folder's time stamp
# normalised; with SUFFIXES also table padding and today's option names of the old runs' variants.
norm() {
  rm -rf "$2" && cp -a "$1" "$2"
  find "$2" -depth -type d -regextype egrep -regex '.*/[0-9]{8}-[0-9]{6}' -execdir mv {} TIME \;
  grep -rlI . "$2" | xargs -r sed -i -E -e "s#$1#<OUT>#g" -e "s#$MIG#<ROOT>#g" -e "s#$OLD#<ROOT>#g" -e "s#[0-9]{8}-[0-9]{6}#TIME#g"
  [[ -z ${3:-} ]] && return
  grep -rlI . "$2" | xargs -r sed -i -E \
    -e "s/ (invalid_updates|futile_searches)=reject//g" -e "s/ +\|/ |/g" -e "s/-{2,}/--/g"
  find "$2" -type f \( -name '*_updates-reject*' -o -name '*_searches-reject*' \) | while read -r f; do
    mv "$f" "$(dirname "$f")/$(basename "$f" | sed -E 's/-(invalid_updates|futile_searches)-reject//g')"; done
}
status=0
if [[ -s $MIG/outputs-unmigrated/compare.txt ]] && ! grep -q "^error" "$MIG/outputs-unmigrated/compare.txt"; then
  norm "$MIG/outputs-unmigrated" "$MIG/outputs-unmigrated.norm"
  norm "$MIG/outputs" "$MIG/outputs.norm"
  if diff -r "$MIG/outputs-unmigrated.norm" "$MIG/outputs.norm" > "$MIG/migration-effect.diff"; then
    echo "BEFORE_TREE's outputs on the old runs and this checkout's on the migrated runs: identical"
  else
    echo "BEFORE_TREE's outputs on the old runs and this checkout's on the migrated runs differ: $MIG/migration-effect.diff"
    status=1
  fi
fi
norm "$OLD/outputs" "$MIG/outputs-old.norm" suffixes
norm "$MIG/outputs" "$MIG/outputs-new.norm" suffixes
if diff -r "$MIG/outputs-old.norm" "$MIG/outputs-new.norm" > "$MIG/outputs.diff"; then
  echo "the old code's outputs and this checkout's on the migrated runs: identical (normalised)"
else
  echo "the old code's outputs and this checkout's on the migrated runs differ (normalised): $MIG/outputs.diff"
  echo "($(wc -l < "$MIG/outputs.diff") lines; files: $(grep -c '^diff\|^Only' "$MIG/outputs.diff"))"
fi
exit $status
