"""Do a run's tokens and cost depend on how its calls were served? The same questions run three
ways against one served model, each through `python -m eval.run`:

  fresh    a new DSPy cache: every call reaches the server;
  cached   the same cache again: every call is answered from it;
  resumed  another new cache, killed with SIGKILL in the middle of question k+1, then `--resume`d:
           the interrupted question's finished calls replay from the cache, the rest are made.

    python benchmarks/replay_accounting.py --lm openai/smol --api-base http://127.0.0.1:8012/v1 \\
        [--method eir] [--limit 10] [--kill-after 4] [--price-in 0.1 --price-out 0.4] [-- EXTRA eval.run FLAGS]

Prints, per question, prompt + completion tokens and cache hits of each run, whether the three
agree, and the runs' paid / replayed calls and tokens and cost as logged to MLflow. A question
whose tokens differ in the resumed run is one whose calls were made again (the call in flight at
the kill, and everything after it): greedy decoding usually repeats them exactly, but nothing
forces a server to. Runs are logged to the experiment `replay-accounting` of $MLFLOW_TRACKING_URI
(default: the project's store); results go to a temporary directory, which is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENT = "replay-accounting"


def eval_run(args: list[str], cache: Path, out: Path) -> subprocess.Popen:
    env = {**os.environ, "DSPY_CACHEDIR": str(cache), "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    env.setdefault("OPENAI_API_KEY", "local")
    return subprocess.Popen([sys.executable, "-m", "eval.run", *args, "--experiment", EXPERIMENT, "--out", str(out)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finished(proc: subprocess.Popen) -> str:
    out, err = proc.communicate()
    if proc.returncode != 0:
        sys.exit(f"eval.run failed ({proc.returncode}):\n{err[-3000:]}")
    return re.search(r"MLflow run (\w+)", out).group(1)


def records(out: Path, run_id: str) -> dict[str, dict]:
    lines = (out / run_id / "results.jsonl").read_text().splitlines()
    return {r["id"]: r for r in map(json.loads, lines)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lm", required=True)
    p.add_argument("--api-base", required=True)
    p.add_argument("--method", default="eir")
    p.add_argument("--limit", type=int, default=10)
    p.add_argument("--kill-after", type=int, default=4, help="questions saved before the kill")
    p.add_argument("--price-in", default="0.1")
    p.add_argument("--price-out", default="0.4")
    p.add_argument("extra", nargs="*", help="more eval.run flags (after --)")
    args = p.parse_args()

    # The subprocesses run in the project root, whose default store is its mlflow.db.
    os.environ.setdefault("MLFLOW_TRACKING_URI", f"sqlite:///{ROOT / 'mlflow.db'}")
    work = Path(tempfile.mkdtemp(prefix="replay-accounting-"))
    out = work / "runs"
    flags = ["--method", args.method, "--lm", args.lm, "--api-base", args.api_base, "--limit", str(args.limit),
             "--price-in", args.price_in, "--price-out", args.price_out, *args.extra]
    print(f"working in {work}", flush=True)

    fresh = finished(eval_run(flags, work / "cache-a", out))
    per_question = sum(r["seconds"] for r in records(out, fresh).values()) / args.limit
    cached = finished(eval_run(flags, work / "cache-a", out))

    before = set(out.iterdir())
    proc = eval_run(flags, work / "cache-b", out)
    while True:
        made = [d for d in set(out.iterdir()) - before if (d / "results.jsonl").exists()]
        if made and len((made[0] / "results.jsonl").read_text().splitlines()) >= args.kill_after:
            break
        if proc.poll() is not None:
            sys.exit("the run to kill ended before --kill-after questions were saved")
        time.sleep(0.2)
    time.sleep(per_question / 2)  # into the next question
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    resumed = made[0].name
    saved = len((made[0] / "results.jsonl").read_text().splitlines())
    if saved >= args.limit:
        sys.exit("every question was saved before the kill: raise --limit or lower --kill-after")
    finished(eval_run(["--resume", resumed], work / "cache-b", out))

    runs = {"fresh": fresh, "cached": cached, "resumed": resumed}
    recs = {name: records(out, run_id) for name, run_id in runs.items()}
    print(f"\nkilled after {saved} saved questions; the resumed run replays the interrupted one's finished calls\n")
    print(f"{'question':26s} {'fresh tokens':>13s} {'cached':>8s} {'resumed':>8s} {'hits c/r':>9s}  same")
    same = 0
    for qid in recs["fresh"]:
        tokens = [recs[n][qid]["prompt_tokens"] + recs[n][qid]["completion_tokens"] for n in runs]
        hits = [sum(c["cache_hit"] for c in recs[n][qid]["lm_calls"]) for n in ("cached", "resumed")]
        agree = len(set(tokens)) == 1
        same += agree
        print(f"{qid:26s} {tokens[0]:13,d} {tokens[1]:8,d} {tokens[2]:8,d} "
              f"{hits[0]:4d}/{hits[1]:<4d}  {'yes' if agree else 'NO'}")
    print(f"\n{same} of {len(recs['fresh'])} questions report the same tokens in all three runs\n")

    import mlflow

    mlflow.set_tracking_uri(os.environ["MLFLOW_TRACKING_URI"])
    keys = ["tokens_per_question", "cost_usd", "paid_calls", "replayed_calls", "paid_tokens", "replayed_tokens",
            "calls_per_question"]
    print(f"{'run':8s} {'id':34s} " + " ".join(f"{k:>20s}" for k in keys))
    for name, run_id in runs.items():
        m = mlflow.get_run(run_id).data.metrics
        print(f"{name:8s} {run_id:34s} " + " ".join(f"{m.get(k, float('nan')):20.6g}" for k in keys))


if __name__ == "__main__":
    main()
