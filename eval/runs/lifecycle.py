"""One whole run: `run(config)` starts it (or resumes a killed one), runs its questions, scores them and
logs it all to MLflow. `python -m eval.run` calls it with the config its flags make; eval.grid calls
it once per cell, and a notebook with a RunConfig of its own. Why a small thread pool over
`run_question` (eval/runs/scheduler.py), not dspy.Evaluate: docs/experiments.md, "Runs and MLflow".
"""

from __future__ import annotations

import json
import sys
import time
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

import dspy
import mlflow
from tqdm import tqdm

from eir_dspy.corpus_index import CorpusIndex, CorpusIndexError
from eir_dspy.lm import DecodingAdapter, build_lm
from eir_dspy.lm.embedded_server import EngineError, stop_shared_server
from eir_dspy.lm.engine_lock import EngineBusy
from eir_dspy.lm.local_models import ModelFetchError
from eir_dspy.lm.server_program import EngineBuild
from eval.data.corpus import BUILD_FULL_INDEX, FULL, build_default_index, corpus_name, default_index_dir
from eval.data.loaders import DataError, load_questions, resolve_data_file
from eval.files.program_file import ProgramFileError, load_program, sha256
from eval.files.results_file import ResultsFile, ResultsFileError, RunBusy, describe_bad_lines, wall_time
from eval.runs import provenance, traces, tracking
from eval.runs.config import RunConfig
from eval.runs.errors import RunError, RunInterrupted
from eval.runs.execute import run_question
from eval.runs.flags import DEFAULT_EXPERIMENT, DEFAULT_OUT, SKIP_BAD_LINES
from eval.runs.scheduler import run_all
from eval.scoring import health
from eval.scoring.run_metrics import format_table, summarize
from programs.registry import METHODS


def run(config: RunConfig | None, *, experiment: str = DEFAULT_EXPERIMENT, out: str = DEFAULT_OUT,
        resume: str | None = None, trace: bool = False, tags: dict | None = None,
        skip_bad_lines: bool = False) -> dict:
    """Run `config` (or, with `resume`, continue that run with its own config in its own experiment):
    every question, each record saved as it finishes, then scored and logged to MLflow in `experiment`.
    `out`: where the per-question results go (and the offline corpus index is looked for); `trace`: one
    scored MLflow trace per question; `tags`: set on the run as it is created (eval.grid finds its cells
    by them); `skip_bad_lines`: on resume, leave out the results file's lines that are not the run's
    records instead of stopping. The process holds the run's lock while it runs it.
    Returns {"run_id", "metrics", "records"}. A RunError on a bad input, when another process is
    running the run, and with the cause when the run failed; RunInterrupted on Ctrl-C (its
    questions saved, its run KILLED)."""
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
    try:
        if not resume_id:
            data_file = resolve_data_file(config.dataset, config.data_file)
            config = replace(config, data_file=data_file and str(data_file))
        questions = load_questions(config.dataset, config.data_file, limit=config.n, seed=config.seed)
    except DataError as exc:
        raise RunError(str(exc)) from None
    corpus = None
    if config.setting == "corpus":
        corpus, config = open_corpus(config, out)
    if config.threads is None:  # chosen per LM and engine, so a resumed run keeps what it ran with
        config = replace(config, threads=config.lm.default_threads)
    try:
        lm = build_lm(config.lm.spec(config.threads))
    except (FileNotFoundError, ModelFetchError, ValueError, EngineBusy, EngineError) as exc:
        raise RunError(str(exc)) from None
    saved_build = config.served_by
    config = replace(config.with_lm(lm), n=len(questions))
    check_build(config, saved_build, resume_id)
    dspy.configure(lm=lm, adapter=DecodingAdapter(config.lm.decoding))
    traces.use_autolog(trace)  # off for a run that did not ask, whatever an earlier run in this process did
    method = METHODS[config.method]
    program = method.build(config.budget, config.options, config.run_context)
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


def check_build(config: RunConfig, saved: EngineBuild | None, resume_id: str | None) -> None:
    """Say which llama.cpp build serves the embedded model; a resumed run must be served by the build it
    started on (greedy outputs differ between builds), else a RunError naming both."""
    now = config.served_by
    if now is None:
        return
    print(f"embedded model served by {now.label} (docs/lm.md, Engines)", file=sys.stderr)
    if not resume_id:
        return
    if saved is None:
        print(f"note: run {resume_id} recorded no server build (logged before runs did); its new questions are "
              f"served by {now.label}", file=sys.stderr)
    elif now != saved:
        raise RunError(f"run {resume_id} ran on {saved.label}, and this machine now serves the embedded model with "
                       f"{now.label}: greedy outputs differ between builds, so its questions would not share one "
                       "condition. Resume it where that engine runs (EIR_LLAMA_SERVER chooses: docs/lm.md, Engines), "
                       "or start a new run")
    elif "unknown" in (saved.llama_cpp, saved.cpu):
        print(f"note: run {resume_id} ran on {saved.label}; this build cannot be told from another with the same "
              "unknown parts", file=sys.stderr)


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
        raise RunError(f"{exc}. Two processes must not run one run's questions; wait for it to "
                       "finish (or stop it), then resume.") from None


def load_done(results: ResultsFile, run_id: str, resume: str, skip_bad_lines: bool) -> dict[str, dict]:
    """The records an earlier part of the run wrote, by question id. A line that is not one of the
    run's records stops the resume, naming it, unless `skip_bad_lines` (then each is reported)."""
    try:
        done = results.load_records(run_id, skip_bad_lines=skip_bad_lines)
    except ResultsFileError as exc:
        raise RunError(f"{exc}Nothing was run. Remove or fix these lines, or skip them (they stay in the "
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
    index_dir = Path(config.index) if config.index else default_index_dir(out_root)
    if not (index_dir / "corpus.json").exists() and not config.index:
        source = config.data_file and Path(config.data_file).parent
        if not source:
            raise RunError(f"no corpus index at {index_dir}; build one with `python -m eval.index build` "
                           "or give --data so the offline HotpotQA corpus can be built")
        print(f"building the offline HotpotQA corpus index at {index_dir} from {source}", file=sys.stderr)
        build_default_index(source, index_dir)
    try:
        index = CorpusIndex(index_dir)
    except CorpusIndexError as exc:
        raise RunError(str(exc)) from None
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
        raise RunError(str(exc)) from None


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
        record = run_question(program, lm, q, corpus)
        record.update(part_started_at=part_started, finished_at=time.time(), run_id=run_id)
        if config.served_by:  # on the question's record and on each further result from the same calls
            for each in (record, *(record.get("variants") or {}).values()):
                each["served_by"] = config.served_by.label
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
        raise RunInterrupted
    message = stop.message  # counted now: questions still running when the run was found failing included
    if message is None and len(finished) == len(questions) and all(r.get("error") is not None for r in finished):
        message = f"every question failed; the first with: {finished[0]['error']}"
    if message:
        tracking.mark_failed(message)
        raise RunError(f"run {run_id} failed: {message}\n"
                       f"Fix the cause, then run it again with: {resume}")
    records = [done[q.id] for q in questions]  # question order, whatever order they finished in
    metrics = summarize(records)
    metrics["wall_time_s"] = wall_time(records)
    with results.loggable() as path:  # without the lines a resume skipped
        tracking.log_results(records, metrics, str(path))
    tracking.log_warnings(run_warnings(config, records))
    tracking.end_run_if_active("FINISHED")
    return records, metrics
