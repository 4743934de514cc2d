"""`python -m eval.compile`: compile a method's program with a DSPy optimizer, save it, log it to MLflow.

What the compile logs, and which compiles start no engine: docs/experiments.md, "Compiling a program".
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import dspy
import mlflow

from eir_dspy.accounting import Ledger, recording
from eir_dspy.lm import DecodingAdapter
from eval.compile import track
from eval.compile.lm import add_lm_flags, lm_from_args
from eval.compile.metric import METRICS, combine, example_of
from eval.compile.optimizers import DEMOS, GEPA_AUTO, OPTIMIZERS, Settings, check_choice, compile_program, default_name
from eval.compile.splits import SplitError, load_splits
from eval.data.loaders import DATASETS
from eval.files.program_file import NAME, load_program, save_program
from eval.runs import tracking
from eval.runs.config import options_for
from eval.runs.errors import RunError
from eval.runs.execute import run_question
from eval.runs.flags import positive_int
from eval.scoring.run_metrics import summarize
from programs import names
from programs.registry import METHODS
from programs.run_context import RunContext
from programs.setting import DEFAULT_BUDGET

SCORES = ("train+dev", "dev", "none")
MODEL_FREE = ("none", "labeled")  # optimizers that make their demos without calling the model


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m eval.compile", description=__doc__.splitlines()[0])
    p.add_argument("--method", default=names.EIR, choices=sorted(METHODS),
                   help="reflexion (oracle-stopped: it takes the gold answer's verdict at run time, which no "
                        "optimizer passes) compiles with --optimizer none --demos gold only")
    p.add_argument("--optimizer", required=True, choices=OPTIMIZERS,
                   help="labeled: dspy.LabeledFewShot; bootstrap: dspy.BootstrapFewShot; gepa: dspy.GEPA "
                        "(instructions); none: no optimizer (with --demos gold)")
    p.add_argument("--demos", default="bootstrap", choices=DEMOS,
                   help="bootstrap: the optimizer's own demos; gold: gold episodes built from the supporting facts "
                        "(no model call; every method: eval/compile/gold_scripts.py); both: gold, then the optimizer's")
    p.add_argument("--train", required=True, metavar="FILE",
                   help="training questions: hotpot_dev_distractor.rpt_sample300_seed2.jsonl")
    p.add_argument("--dev", required=True, metavar="FILE",
                   help="selection questions: hotpot_dev_distractor.rpt_sample500_seed1.jsonl")
    p.add_argument("--dataset", default="hotpotqa", choices=DATASETS)
    p.add_argument("--n-train", type=positive_int, default=20, metavar="K", help="training questions used (default 20)")
    p.add_argument("--n-dev", type=positive_int, default=20, metavar="K", help="dev questions used (default 20)")
    p.add_argument("--seed", type=int, default=0, help="seed of both question samples, as eval.run --seed")
    p.add_argument("--metric", default="f1", choices=METRICS,
                   help="f1: answer F1; f1+support: the mean of answer F1 and support F1")
    p.add_argument("--score", default="train+dev", choices=SCORES,
                   help="splits scored before and after compiling (default train+dev); none: score with "
                        "eval.run runs of the zero-shot and the compiled program instead (paired in eval.compare)")
    p.add_argument("--budget", type=positive_int, default=DEFAULT_BUDGET, help="H: paragraph reads per question")
    p.add_argument("--max-bootstrapped-demos", type=int, default=Settings.max_bootstrapped_demos)
    p.add_argument("--max-labeled-demos", type=int, default=Settings.max_labeled_demos,
                   help="LabeledFewShot's k; BootstrapFewShot's labeled demos")
    p.add_argument("--metric-threshold", type=float, default=Settings.metric_threshold,
                   help="BootstrapFewShot keeps a question's trace as demos when its metric reaches this")
    p.add_argument("--k", "--gold-episodes", dest="k", type=positive_int, default=Settings.k,
                   help="--demos gold/both: the demonstration budget, in training questions whose gold episodes "
                        "become demos: the first k that give one for every method, so every method compiled at "
                        "one k is taught on the same questions (default %(default)s)")
    p.add_argument("--gepa-auto", default=Settings.gepa_auto, choices=GEPA_AUTO, help="GEPA's budget preset")
    p.add_argument("--gepa-max-metric-calls", type=positive_int, default=None,
                   help="GEPA's budget in program runs (replaces --gepa-auto)")
    add_lm_flags(p)
    p.add_argument("--name", default=None, help="the program's name in variants: eir compiled=NAME "
                                                "(default: the optimizer, with -gold for gold demos)")
    p.add_argument("--out", default="runs/compiled", help="where NAME.json is written")
    p.add_argument("--experiment", default="eir-dspy")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    name = args.name or default_name(args.optimizer, args.demos)
    path = Path(args.out) / f"{name}.json"
    try:
        check_choice(args.optimizer, args.demos)
        if METHODS[args.method].needs_oracle and (args.optimizer, args.demos) != ("none", "gold"):
            raise ValueError(f"--method {args.method} takes the gold answer's verdict at run time, which no optimizer "
                             "passes: compile it with --optimizer none --demos gold")
        if not NAME.match(name):
            raise ValueError(f"--name {name!r}: use letters, digits, '.', '_' or '-'")
        if path.exists():
            raise ValueError(f"{path} exists: a name stands for one program; choose another --name")
        train, dev = load_splits(args.dataset, args.train, args.dev, args.n_train, args.n_dev, args.seed)
        needs_model = args.score != "none" or args.optimizer not in MODEL_FREE
        lm, lm_name, decoding, default_decoding = lm_from_args(args, start=needs_model)
    except (ValueError, SplitError, RunError) as exc:
        raise SystemExit(f"error: {exc}") from None
    dspy.configure(lm=lm, adapter=DecodingAdapter(decoding))
    settings = Settings(metric=args.metric, max_bootstrapped_demos=args.max_bootstrapped_demos,
                        max_labeled_demos=args.max_labeled_demos, metric_threshold=args.metric_threshold,
                        k=args.k, gepa_auto=args.gepa_auto,
                        gepa_max_metric_calls=args.gepa_max_metric_calls)
    options = options_for(args.method)  # as eval.run resolves them with no option flags (what --program checks)
    context = RunContext(decoding)  # the pool setting's: the compile's questions run over their pools

    def fresh() -> dspy.Module:
        return METHODS[args.method].build(args.budget, options, context)

    params = {"name": name, "method": args.method, "optimizer": args.optimizer, "demos": args.demos,
              "metric": args.metric, "dataset": args.dataset, "train_file": args.train, "dev_file": args.dev,
              "n_train": len(train), "n_dev": len(dev), "seed": args.seed, "lm": lm_name, "decoding": decoding, "score": args.score,  # noqa: E501
              "temperature": args.temperature, "max_tokens": args.max_tokens, "H": args.budget,
              "threads": args.threads, "optimizer_threads": 1, **options,
              **settings.params(args.optimizer, args.demos, args.method)}
    uri = tracking.setup(args.experiment)
    run_id = track.start(f"compile {name} / {args.dataset} / {lm_name}", params)
    t0 = time.perf_counter()
    try:
        before = _score("before", fresh(), lm, train, dev, args)
        ledger, info, c0 = Ledger(), {}, time.perf_counter()
        with recording(ledger):
            compiled = compile_program(fresh(), args.optimizer, args.demos, [example_of(q) for q in train],
                                       [example_of(q) for q in dev], settings, args.budget, ledger, info=info)
        cost = track.log_ledger("compile", ledger, time.perf_counter() - c0)
        track.log_demos(compiled)
        track.log_info(info)
        meta = {"name": name, "method": args.method, "options": options, "budget": args.budget,
                "optimizer": args.optimizer, "demos": args.demos, "metric": args.metric, "lm": lm_name,
                "decoding": decoding, "default_decoding": default_decoding, "train_file": Path(args.train).name,
                "dev_file": Path(args.dev).name, "n_train": len(train), "compile_run_id": run_id,
                "settings": settings.params(args.optimizer, args.demos, args.method),
                "demo_questions": info.get("demo_questions")}
        sha = save_program(compiled, path, meta)
        track.log_program(str(path), sha)
        loaded = fresh()
        load_program(loaded, path, args.method, options)  # scored as eval.run --program will run it
        after = _score("after", loaded, lm, train, dev, args)
        mlflow.log_metric("wall_time_s", time.perf_counter() - t0)
    except KeyboardInterrupt:
        tracking.end_run_if_active("KILLED")
        raise
    except BaseException:
        tracking.end_run_if_active("FAILED")
        raise
    tracking.end_run_if_active("FINISHED")
    print(f"\ncompiled {args.method} with {args.optimizer} (demos: {args.demos}) -> {path}\n"
          + "".join(f"  {args.metric} on {len(qs)} {split} questions: {before[split]:.1f} before, "
                    f"{after[split]:.1f} after\n" for split, qs in (("dev", dev), ("train", train)) if split in before)
          + f"  compile calls {cost['compile_calls']} ({', '.join(f'{r} {n}' for r, n in ledger.by_role().items())})\n"
          f"MLflow run {run_id} in {uri}. Run it: python -m eval.run --method {args.method} --program {path}",
          file=sys.stderr)
    return {"run_id": run_id, "path": str(path), "sha256": sha, "program": compiled, "ledger": ledger,
            "before": before, "after": after}


def _score(phase: str, program: dspy.Module, lm, train, dev, args) -> dict[str, float]:
    """Each split of --score run exactly as eval.run runs it (run_question per question, summarize over
    them), plus `score`: the compile's metric's mean × 100."""
    out = {}
    for split, questions in (("train", train), ("dev", dev)):
        if split not in args.score.split("+"):
            continue
        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=max(1, args.threads)) as pool:
            records = list(pool.map(lambda q: run_question(program, lm, q), questions))
        metrics = summarize(records)
        metrics["score"] = 100 * sum(combine(r, args.metric) for r in records) / len(records)
        metrics["wall_time_s"] = time.perf_counter() - t0
        track.log_scores(phase, split, metrics, records)
        out[split] = metrics["score"]
    return out


if __name__ == "__main__":
    main()
