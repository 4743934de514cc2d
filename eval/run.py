"""`python -m eval.run`: run one method on one dataset with one LM, score it, log it to MLflow.

The command line makes a `RunConfig` (eval/runs/config.py) from its flags and hands it to `run`,
which eval.grid and a notebook call directly: `run(RunConfig(method="direct", ...))`.

Why not dspy.Evaluate: each finished question must be written to disk at once (resume), each
question needs its own LM copy (exact per-call accounting), and a failed question must keep its
error in the record. A small thread pool over `run_question` does exactly that.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

import dspy
import mlflow
from tqdm import tqdm

from eir_dspy.corpus_environment import DEFAULT_FUTILE_SEARCHES, FUTILE_SEARCHES
from eir_dspy.corpus_index import CorpusIndex, CorpusIndexError
from eir_dspy.lm import DecodingAdapter, build_lm
from eir_dspy.lm.embedded_server import EMBEDDED_THREADS, EngineError, stop_shared_server
from eir_dspy.lm.engine_lock import EngineBusy
from eir_dspy.lm.local_models import ModelFetchError
from eir_dspy.state import INVALID_UPDATE_RULES
from eval.compile.program_file import ProgramFileError, load_program, sha256
from eval.data.corpus import BUILD_FULL_INDEX, FULL, corpus_name, default_index_dir
from eval.data.loaders import DATASETS, DataError, load_questions, resolve_data_file
from eval.index import build_default_index
from eval.runs import provenance, traces, tracking
from eval.runs.config import (
    DEFAULT_BUDGET,
    RunConfig,
    add_lm_flags,
    compiled_program,
    method_options,
    positive_int,
)
from eval.runs.execute import run_question
from eval.runs.records import ResultsFile, ResultsFileError, RunBusy, describe_bad_lines, wall_time
from eval.runs.scheduler import run_all
from eval.scoring import health
from eval.scoring.summary import format_table, summarize
from programs import names
from programs.eir_policy import ABLATIONS
from programs.registry import CORPUS_METHODS, DEFAULT_TRIALS, DEFAULT_VOTES, METHODS
from programs.setting import SETTINGS

__all__ = ["DEFAULT_EXPERIMENT", "DEFAULT_OUT", "SETTINGS", "RunConfig", "compiled_program", "flag_defaults", "main",
           "method_options", "parse_args", "run"]

DEFAULT_EXPERIMENT = "eir-dspy"
DEFAULT_OUT = "runs"
SKIP_BAD_LINES = "--skip-bad-lines"
RESUME_ONLY = ("skip_bad_lines",)  # how one resume reads its results file: not a flag a grid file names


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m eval.run", description=__doc__.splitlines()[0])
    p.add_argument("--method", default=names.EIR, choices=sorted(METHODS))
    p.add_argument("--setting", default="pool", choices=SETTINGS,
                   help="pool: each question's given paragraphs; corpus: search a BM25 index (HotpotQA only)")
    p.add_argument("--index", default=None, help="corpus: an index directory from `python -m eval.index build` "
                   "(else $EIR_INDEX_DIR, else runs/corpus/hotpotqa-abstracts-index, built from --data if missing)")
    p.add_argument("--futile-searches", default=DEFAULT_FUTILE_SEARCHES, choices=FUTILE_SEARCHES,
                   help="corpus: a search repeating an earlier one's indexed terms, or with no indexed word, runs "
                        "(the paper, H.1: the same hits again, or none found) or is rejected (the project's earlier "
                        "rule). docs/methods.md: Fidelity 6")
    p.add_argument("--dataset", default="hotpotqa", choices=DATASETS)
    p.add_argument("--data", default=None, help="a data file or directory (else $EIR_DATA_DIR, else the hub)")
    p.add_argument("--limit", type=positive_int, default=5, help="number of questions (default 5)")
    p.add_argument("--seed", type=int, default=0, help="seed of the question sample (stable order)")
    add_lm_flags(p)
    p.add_argument("--budget", type=positive_int, default=DEFAULT_BUDGET, help="H: paragraph reads per question")
    p.add_argument("--ablation", default=None, choices=ABLATIONS,
                   help="eir: no-list-feedback (the lists are kept but never shown again, E.2); repair / "
                        "repair-unapplied (dependency repair with its changes applied / discarded, E.3). docs/methods.md: Ablations")  # noqa: E501
    p.add_argument("--invalid-updates", default=None, choices=INVALID_UPDATE_RULES,
                   help="eir: what invalid list updates do to their turn: discard (lists unchanged, the action "
                        "runs; the paper's pool rule, 3.2/B.1) or reject (the turn, action included; the corpus "
                        "rule, H.1). Default: the paper's rule for --setting. docs/methods.md: Fidelity")
    p.add_argument("--verifier-temperature", type=float, default=None,
                   help="ssr: temperature of the verifier votes (default 0.7 in the pool, 0.0 in the corpus)")
    p.add_argument("--votes", type=positive_int, default=DEFAULT_VOTES, help="ssr: verifier judgments per step")
    p.add_argument("--trials", type=positive_int, default=DEFAULT_TRIALS, help="reflexion: most trials per question")
    p.add_argument("--threads", type=positive_int, default=None,
                   help=f"questions in flight; the embedded model decodes them together in one batch (default "
                        f"{EMBEDDED_THREADS} for the embedded model, by measurement: docs/lm.md, Throughput; else 1)")
    p.add_argument("--program", default=None, metavar="FILE",
                   help="a compiled program (`python -m eval.compile`) for --method: its demos and instructions "
                        "replace the zero-shot prompts; the run's variant names it (eir compiled=NAME)")
    p.add_argument("--experiment", default=DEFAULT_EXPERIMENT)
    p.add_argument("--out", default=DEFAULT_OUT, help="where per-question results are written as they finish")
    p.add_argument("--resume", metavar="RUN_ID", default=None,
                   help="continue a killed, interrupted or failed run, in its own experiment")
    p.add_argument(SKIP_BAD_LINES, action="store_true",
                   help="with --resume: skip the lines of the run's results file that are not its records "
                        "(not JSON, not a valid record, another run's), reporting each; they stay in the file")
    p.add_argument("--trace", action="store_true",
                   help="one MLflow trace per question (DSPy's calls nested by mlflow.dspy.autolog), tagged with "
                        "the run and question ids and scored: answer_f1, answer_em, support_f1 as feedback")
    return p


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def flag_defaults() -> dict:
    """Every eval.run flag (by argparse dest) and its default: what a grid file may name."""
    return {k: v for k, v in vars(parse_args([])).items() if k not in RESUME_ONLY}


def main(argv: list[str] | None = None, *, tags: dict | None = None) -> dict:
    """The command line: flags -> RunConfig -> `run`. With --resume the run's own config, experiment
    and results file are used (the other flags, but --out, --trace and --skip-bad-lines, are ignored)."""
    args = parse_args(argv)
    config = None if args.resume else RunConfig.from_args(args)
    return run(config, experiment=args.experiment, out=args.out, resume=args.resume, trace=args.trace, tags=tags,
               skip_bad_lines=args.skip_bad_lines)


def run(config: RunConfig | None, *, experiment: str = DEFAULT_EXPERIMENT, out: str = DEFAULT_OUT,
        resume: str | None = None, trace: bool = False, tags: dict | None = None,
        skip_bad_lines: bool = False) -> dict:
    """Run `config` (or, with `resume`, continue that run with its own config in its own experiment):
    every question, each record saved as it finishes, then scored and logged to MLflow in `experiment`.
    `out`: where the per-question results go (and the offline corpus index is looked for); `trace`: one
    scored MLflow trace per question; `tags`: set on the run as it is created (eval.grid finds its cells
    by them); `skip_bad_lines`: on resume, leave out the results file's lines that are not the run's
    records instead of stopping. The process holds the run's lock while it runs it.
    Returns {"run_id", "metrics", "records"}. Exits (SystemExit) on a bad input, when another process
    is running the run, 130 on Ctrl-C, and with the cause when the run failed."""
    resume_id = None
    if resume:
        tracking.use_tracking_uri()
        resume_id = tracking.resumable_run(resume)
        experiment = own_experiment(resume_id, experiment)
    uri = tracking.setup(experiment)
    with ExitStack() as held:
        return _run(config, held, uri, experiment=experiment, out=out, resume_id=resume_id, trace=trace, tags=tags,
                    skip_bad_lines=skip_bad_lines)


def _run(config: RunConfig | None, held: ExitStack, uri: str, *, experiment: str, out: str, resume_id: str | None,
         trace: bool, tags: dict | None, skip_bad_lines: bool) -> dict:
    """`run` once its experiment is set; the run's lock is entered on `held`."""
    done: dict[str, dict] = {}
    if resume_id:
        # Held before the run is reopened or its file read: a second process resuming it stops here,
        # and leaves the run's status and results as they are.
        results = ResultsFile(Path(mlflow.get_run(resume_id).data.tags[tracking.RESULTS_TAG]))
        hold(held, results, resume_id)
        done = load_done(results, resume_id, resume_command(resume_id, experiment), skip_bad_lines)
        config = tracking.saved_config(resume_id)
    elif config is None:
        raise ValueError("run() needs a RunConfig, or a run id to resume")
    else:
        try:
            data_file = resolve_data_file(config.dataset, config.data_file)
        except DataError as exc:
            raise SystemExit(f"error: {exc}") from None
        config = replace(config, data_file=data_file and str(data_file))
    try:
        questions = load_questions(config.dataset, config.data_file, limit=config.n, seed=config.seed)
    except DataError as exc:
        raise SystemExit(f"error: {exc}") from None
    corpus = None
    if config.setting == "corpus":
        corpus, config = open_corpus(config, out)
    if config.threads is None:  # chosen per LM and engine, so a resumed run keeps what it ran with
        config = replace(config, threads=config.lm.default_threads)
    try:
        lm = build_lm(config.lm.spec(config.threads))
    except (FileNotFoundError, ModelFetchError, ValueError, EngineBusy, EngineError) as exc:
        raise SystemExit(f"error: {exc}") from None
    config = replace(config.with_lm(lm), n=len(questions))
    dspy.configure(lm=lm, adapter=DecodingAdapter(config.lm.decoding))
    traces.use_autolog(trace)  # off for a run that did not ask, whatever an earlier run in this process did
    method = METHODS[config.method]
    program = method.build(config.budget, config.options)
    if config.program:
        load_compiled(program, config)
    config = config.with_label(method.main_label)

    run_id = tracking.start_run(config, resume_id, out, tags)  # eval.grid finds its cells by these tags
    if not resume_id:
        results = ResultsFile(Path(mlflow.get_run(run_id).data.tags[tracking.RESULTS_TAG]))
        hold(held, results, run_id)
    try:
        provenance.log_provenance(program, questions, config)
        records, metrics = run_questions(program, lm, questions, corpus, config, run_id, results,
                                         resume_command(run_id, experiment), trace=trace, done=done)
    except KeyboardInterrupt:  # Ctrl-C outside the question loop (e.g. while logging the results)
        tracking.end_run_if_active("KILLED")
        raise
    except BaseException:
        tracking.end_run_if_active("FAILED")  # a crash; an interrupt or a failing run ended its run already
        raise
    finally:
        if trace:  # autolog is process-wide: the next run in this process (an eval.grid cell) starts untraced
            traces.flush()
            traces.use_autolog(False)
    print()
    print(format_table(metrics, f"{config.label}/{config.dataset}"))
    print(health.render(run_warnings(config, records)), end="")
    for name in sorted(records[0].get("variants") or {}):
        variant = config.with_label(name)
        print(format_table(log_variant(variant, run_id, name, records, results.path),
                           f"{variant.label}/{config.dataset}"))
        print(health.render(run_warnings(variant, variant_records(records, name))), end="")
    failed = int(metrics["failed_questions"])
    if failed:
        print(f"{failed} question(s) failed; their errors are in {results.path} "
              f"(--resume {run_id} runs them again)", file=sys.stderr)
    print(f"\nMLflow run {run_id} in {uri}. Open the UI with:\n  mlflow ui --backend-store-uri {uri}")
    return {"run_id": run_id, "metrics": metrics, "records": records}


def own_experiment(run_id: str, asked: str) -> str:
    """The experiment a resumed run continues in: its own, whatever `asked` (--experiment) names."""
    own = mlflow.get_experiment(mlflow.get_run(run_id).info.experiment_id).name
    if own != asked:
        print(f"note: run {run_id} is in experiment {own!r}; it continues there (not in {asked!r})", file=sys.stderr)
    return own


def hold(held: ExitStack, results: ResultsFile, run_id: str) -> None:
    """Hold the run's lock until `held` closes; exit, naming the holder, when another process has it."""
    try:
        held.enter_context(results.hold(run_id))
    except RunBusy as exc:
        raise SystemExit(f"error: {exc}. Two processes must not run one run's questions; wait for it to "
                         "finish (or stop it), then resume.") from None


def load_done(results: ResultsFile, run_id: str, resume: str, skip_bad_lines: bool) -> dict[str, dict]:
    """The records an earlier part of the run wrote, by question id. A line that is not one of the
    run's records stops the resume, naming it, unless `skip_bad_lines` (then each is reported)."""
    try:
        done = results.load_records(run_id, skip_bad_lines=skip_bad_lines)
    except ResultsFileError as exc:
        raise SystemExit(f"error: {exc}Nothing was run. Remove or fix these lines, or skip them (they stay in the "
                         f"file, left out of the run and its logged results) with:\n  {resume} {SKIP_BAD_LINES}") from None
    if results.skipped:
        print(f"skipping {len(results.skipped)} line(s) of {results.path} that are not records of run {run_id} "
              f"({SKIP_BAD_LINES}; they stay in the file):\n" + describe_bad_lines(str(results.path), results.skipped),
              end="", file=sys.stderr)
    return done


def log_variant(config: RunConfig, parent_id: str, name: str, records: list[dict], results_path: Path) -> dict:
    """A second result from the same trajectories (Reflexion's first trial) as its own MLflow run;
    `config` is labelled as the variant. Its lines carry `parent_id`, the run that ran the questions."""
    variant = variant_records(records, name)
    metrics = summarize(variant)
    metrics["wall_time_s"] = sum(r["seconds"] for r in variant)
    path = results_path.with_name(f"{name}.jsonl")
    path.write_text("".join(json.dumps({**r, "run_id": parent_id}, default=str) + "\n" for r in variant))
    tracking.log_variant(config, parent_id, variant, metrics, str(path), run_warnings(config, variant))
    return metrics


def variant_records(records: list[dict], name: str) -> list[dict]:
    """The variant's record of each question. A question that failed outright has no variant; its
    failed record scores 0 for both."""
    return [r.get("variants", {}).get(name, r) for r in records]


def run_warnings(config: RunConfig, records: list[dict]) -> list[health.RunWarning]:
    """Why the run's scores may say little (eval.scoring.health); none for a healthy run."""
    return health.warnings_for(config.label, records, method=config.method, max_tokens=config.lm.max_tokens)


def open_corpus(config: RunConfig, out_root: str) -> tuple[CorpusIndex, RunConfig]:
    """The corpus index of a corpus-setting run (the offline default is built on first use), and the
    config with the index, corpus and its size it logs."""
    if config.dataset != "hotpotqa":
        raise SystemExit(f"error: the corpus setting searches HotpotQA's Wikipedia corpus; got --dataset {config.dataset}")
    if config.method not in CORPUS_METHODS:
        raise SystemExit(f"error: --method {config.method} has no corpus setting; use one of {', '.join(CORPUS_METHODS)}")
    index_dir = Path(config.index) if config.index else default_index_dir(out_root)
    if not (index_dir / "corpus.json").exists() and not config.index:
        source = config.data_file and Path(config.data_file).parent
        if not source:
            raise SystemExit(f"error: no corpus index at {index_dir}; build one with `python -m eval.index build` "
                             "or give --data so the offline HotpotQA corpus can be built")
        print(f"building the offline HotpotQA corpus index at {index_dir} from {source}", file=sys.stderr)
        build_default_index(source, index_dir)
    try:
        index = CorpusIndex(index_dir)
    except CorpusIndexError as exc:
        raise SystemExit(f"error: {exc}") from None
    config = replace(config, index=str(index_dir), corpus=corpus_name(index_dir), corpus_paragraphs=len(index))
    if config.corpus != FULL:
        print(f"note: searching the {config.corpus} corpus ({len(index):,} paragraphs), not the paper's "
              f"5.23M-paragraph one (build it with `{BUILD_FULL_INDEX}`)", file=sys.stderr)
    return index, config


def load_compiled(program, config: RunConfig) -> None:
    """Load the run's program file into `program`; the file must be the one the run started with."""
    saved = config.program
    try:
        if sha256(saved.path) != saved.sha256:
            raise ProgramFileError(f"--program {saved.path} changed since the run started "
                                   f"(sha256 {saved.sha256[:12]}...); compile it under a new name instead")
        load_program(program, saved.path, config.method, dict(config.options))
    except (ProgramFileError, OSError) as exc:
        raise SystemExit(f"error: {exc}") from None


def resume_command(run_id: str, experiment: str = DEFAULT_EXPERIMENT) -> str:
    flags = "" if experiment == DEFAULT_EXPERIMENT else f" --experiment {experiment}"
    return f"python -m eval.run --resume {run_id}{flags}"


def run_questions(program, lm, questions, corpus, config: RunConfig, run_id: str, results: ResultsFile,
                  resume: str, *, trace: bool = False, done: dict[str, dict] | None = None) -> tuple[list[dict], dict]:
    """Run every question not yet done (or that failed with an error), keeping each record as it
    finishes; then score the run. Ends the MLflow run: FINISHED, KILLED (Ctrl-C) or FAILED.
    `trace`: each question in its own scored MLflow trace (eval.runs.traces); `done`: the records an
    earlier part wrote (`load_done`), in the current record form."""
    done = dict(done or {})
    todo = [q for q in questions if q.id not in done or done[q.id].get("error") is not None]
    part_started = time.time()

    def run_one(q):
        with dspy.context(futile_searches=config.futile_searches):  # read by programs/setting.py
            record = run_question(program, lm, q, corpus)
        record.update(part_started_at=part_started, finished_at=time.time(), run_id=run_id)
        return record

    if trace:
        run_one = traces.traced(run_one, run_id)
    label = config.run_name
    with tqdm(total=len(questions), initial=len(questions) - len(todo), desc=label) as bar:
        def keep(record: dict) -> None:
            results.append(record)  # written now: a killed run resumes from here
            done[record["id"]] = record
            bar.update(1)

        stop = run_all(todo, run_one, keep, config.threads, total=len(todo),
                       on_abort=lambda: (tracking.end_run_if_active("KILLED", run_id), stop_shared_server()))
    finished = [done[q.id] for q in questions if q.id in done]
    if stop.interrupted:
        tracking.end_run_if_active("KILLED")
        if finished:
            print(format_table(summarize(finished), f"{label} (partial: {len(finished)} of {len(questions)})"),
                  file=sys.stderr)
            print(health.render(run_warnings(config, finished)), end="", file=sys.stderr)
        print(f"\nInterrupted: {len(finished)} of {len(questions)} questions are saved in {results.path}.\n"
              f"Continue with:\n  {resume}", file=sys.stderr)
        raise SystemExit(130)
    message = stop.message  # counted now: questions still running when the run was found failing included
    if message is None and len(finished) == len(questions) and all(r.get("error") is not None for r in finished):
        message = f"every question failed; the first with: {finished[0]['error']}"
    if message:
        tracking.mark_failed(message)
        raise SystemExit(f"error: run {run_id} failed: {message}\n"
                         f"Fix the cause, then run it again with: {resume}")
    records = [done[q.id] for q in questions]  # question order, whatever order they finished in
    metrics = summarize(records)
    metrics["wall_time_s"] = wall_time(records)
    with results.loggable() as path:  # without the lines a resume skipped
        tracking.log_results(records, metrics, str(path))
    tracking.log_warnings(run_warnings(config, records))
    tracking.end_run_if_active("FINISHED")
    return records, metrics


if __name__ == "__main__":
    main()
