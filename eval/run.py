"""`python -m eval.run`: run one method on one dataset with one LM, score it, log it to MLflow.

Why not dspy.Evaluate: each finished question must be written to disk at once (resume), each
question needs its own LM copy (exact per-call accounting), and a failed question must keep its
error in the record. A small thread pool over `run_question` does exactly that.
"""

from __future__ import annotations

import argparse
import inspect
import json
import shlex
import sys
import time
from dataclasses import replace
from pathlib import Path

import dspy
import mlflow
from tqdm import tqdm

from eir_dspy.corpus_index import CorpusIndex, CorpusIndexError
from eir_dspy.lm import DECODINGS, LOCAL_DEFAULT, DEFAULT_REQUEST_TIMEOUT, DecodingAdapter, LMSpec, build_lm, default_decoding
from eir_dspy.lm.embedded_server import EMBEDDED_THREADS, EngineError, stop_shared_server
from eir_dspy.lm.engine_lock import EngineBusy
from eir_dspy.lm.spec import ENGINES
from eir_dspy.lm.local_models import DEFAULT_MODEL, ModelFetchError
from eval import provenance, traces, tracking
from eval.data import DATASETS, DataError, load_questions, resolve_data_file
from eval.compile.program_file import ProgramFileError, check_fits, load_program, program_config, read_meta, sha256
from eval.corpus import BUILD_FULL_INDEX, FULL, corpus_name, default_index_dir
from eval.execute import run_question
from eval.index import build_default_index
from eval.records import ResultsFile, wall_time
from eval.scheduler import run_all
from eval.summary import format_table, summarize
from programs import CORPUS_METHODS, METHODS
from programs.eir_policy import ABLATIONS

SETTINGS = ("pool", "corpus")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m eval.run", description=__doc__.splitlines()[0])
    p.add_argument("--method", default="eir", choices=sorted(METHODS))
    p.add_argument("--setting", default="pool", choices=SETTINGS,
                   help="pool: each question's given paragraphs; corpus: search a BM25 index (HotpotQA only)")
    p.add_argument("--index", default=None, help="corpus: an index directory from `python -m eval.index build` "
                   "(else $EIR_INDEX_DIR, else runs/corpus/hotpotqa-abstracts-index, built from --data if missing)")
    p.add_argument("--dataset", default="hotpotqa", choices=DATASETS)
    p.add_argument("--data", default=None, help="a data file or directory (else $EIR_DATA_DIR, else the hub)")
    p.add_argument("--limit", type=_positive, default=5, help="number of questions (default 5)")
    p.add_argument("--seed", type=int, default=0, help="seed of the question sample (stable order)")
    p.add_argument("--lm", default=DEFAULT_MODEL, help="a local model key or any DSPy/LiteLLM model string")
    p.add_argument("--lm-path", default=None, help="run any local GGUF file in-process")
    p.add_argument("--api-base", nargs="+", default=None, metavar="URL",
                   help="base URL of an OpenAI-compatible server; several URLs serving the same model: requests "
                        "are spread over them by LiteLLM's Router (set concurrency with --threads)")
    p.add_argument("--price-in", type=float, default=None, metavar="USD",
                   help="dollars per million prompt tokens, for a model LiteLLM cannot price")
    p.add_argument("--price-out", type=float, default=None, metavar="USD",
                   help="dollars per million completion tokens, for a model LiteLLM cannot price")
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--max-tokens", type=_positive, default=2048)
    p.add_argument("--decoding", default=None, choices=DECODINGS,
                   help="strict: per-call grammars (enums of real titles, caps); schema: the signature's JSON schema "
                        "only; free: no grammar, JSON by prompt (default: schema for the embedded model; for an API "
                        "model schema where it takes one, else free). docs/lm.md: Decoding")
    p.add_argument("--budget", type=_positive, default=6, help="H: paragraph reads per question")
    p.add_argument("--ablation", default=None, choices=ABLATIONS,
                   help="eir: no-list-feedback (the lists are kept but never shown again, E.2); repair / "
                        "repair-unapplied (dependency repair with its changes applied / discarded, E.3). docs/methods.md: Ablations")
    p.add_argument("--verifier-temperature", type=float, default=None,
                   help="ssr: temperature of the verifier votes (default 0.7 in the pool, 0.0 in the corpus)")
    p.add_argument("--votes", type=_positive, default=3, help="ssr: verifier judgments per step")
    p.add_argument("--trials", type=_positive, default=5, help="reflexion: most trials per question")
    p.add_argument("--request-timeout", type=_positive_float, default=DEFAULT_REQUEST_TIMEOUT, metavar="SECONDS",
                   help=f"API models: seconds before a request is abandoned and retried like any provider error "
                        f"(default {DEFAULT_REQUEST_TIMEOUT:g}); the embedded model has none")
    p.add_argument("--threads", type=_positive, default=None,
                   help=f"questions in flight; the embedded model decodes them together in one batch (default "
                        f"{EMBEDDED_THREADS} for the embedded model, by measurement: docs/lm.md, Throughput; else 1)")
    p.add_argument("--server-args", default="", metavar="FLAGS",
                   help="the embedded server: more llama-server flags, e.g. '--spec-type ngram-simple' (logged)")
    p.add_argument("--engine", default="server", choices=ENGINES,
                   help="the embedded model: server (a managed llama-server, questions batched) or inprocess "
                        "(llama-cpp-python, one call at a time)")
    p.add_argument("--program", default=None, metavar="FILE",
                   help="a compiled program (`python -m eval.compile`) for --method: its demos and instructions "
                        "replace the zero-shot prompts; the run's variant names it (eir compiled=NAME)")
    p.add_argument("--experiment", default="eir-dspy")
    p.add_argument("--out", default="runs", help="where per-question results are written as they finish")
    p.add_argument("--resume", metavar="RUN_ID", default=None, help="continue a killed run")
    p.add_argument("--trace", action="store_true",
                   help="one MLflow trace per question (DSPy's calls nested by mlflow.dspy.autolog), tagged with "
                        "the run and question ids and scored: answer_f1, answer_em, support_f1 as feedback")
    return p.parse_args(argv)


def method_options(args: argparse.Namespace) -> dict:
    """The method-specific settings the chosen method's program takes (and only those get logged)."""
    accepted = inspect.signature(METHODS[args.method].__init__).parameters
    verifier_temperature = args.verifier_temperature
    if verifier_temperature is None:
        verifier_temperature = 0.0 if args.setting == "corpus" else 0.7
    if args.ablation is not None and "ablation" not in accepted:
        raise SystemExit(f"error: --ablation is an EIR ablation; --method {args.method} has none")
    given = {"verifier_temperature": verifier_temperature, "votes": args.votes, "trials": args.trials,
             "ablation": args.ablation or "none"}
    return {k: v for k, v in given.items() if k in accepted}


def log_variant(config: dict, parent_id: str, name: str, records: list[dict], results_path: Path, label: str) -> dict:
    """A second result from the same trajectories (Reflexion's first trial) as its own MLflow run."""
    # A question that failed outright has no variant; its failed record scores 0 for both.
    variant = [r.get("variants", {}).get(name, r) for r in records]
    metrics = summarize(variant)
    metrics["wall_time_s"] = sum(r["seconds"] for r in variant)
    path = results_path.with_name(f"{name}.jsonl")
    path.write_text("".join(json.dumps(r, default=str) + "\n" for r in variant))
    tracking.log_variant(config, parent_id, label, variant, metrics, str(path))
    return metrics


def open_corpus(config: dict, out_root: str) -> CorpusIndex:
    """The corpus index of a corpus-setting run; the offline default is built on first use."""
    if config["dataset"] != "hotpotqa":
        raise SystemExit(f"error: the corpus setting searches HotpotQA's Wikipedia corpus; got --dataset {config['dataset']}")
    if config["method"] not in CORPUS_METHODS:
        raise SystemExit(f"error: --method {config['method']} has no corpus setting; use one of {', '.join(CORPUS_METHODS)}")
    index_dir = Path(config["index"]) if config.get("index") else default_index_dir(out_root)
    if not (index_dir / "corpus.json").exists() and not config.get("index"):
        source = config["data_file"] and Path(config["data_file"]).parent
        if not source:
            raise SystemExit(f"error: no corpus index at {index_dir}; build one with `python -m eval.index build` "
                             "or give --data so the offline HotpotQA corpus can be built")
        print(f"building the offline HotpotQA corpus index at {index_dir} from {source}", file=sys.stderr)
        build_default_index(source, index_dir)
    try:
        index = CorpusIndex(index_dir)
    except CorpusIndexError as exc:
        raise SystemExit(f"error: {exc}") from None
    config["index"] = str(index_dir)
    config["corpus"], config["corpus_paragraphs"] = corpus_name(index_dir), len(index)  # logged: the corpus searched
    if config["corpus"] != FULL:
        print(f"note: searching the {config['corpus']} corpus ({len(index):,} paragraphs), not the paper's "
              f"5.23M-paragraph one (build it with `{BUILD_FULL_INDEX}`)", file=sys.stderr)
    return index


def compiled_program(path: str, method: str, options: dict) -> dict:
    """What the run records about its --program file (name, path, sha256); exits on a bad file or
    one compiled for another method (checked before any LM starts)."""
    try:
        check_fits(read_meta(path), path, method, options)
        return program_config(path)
    except ProgramFileError as exc:
        raise SystemExit(f"error: {exc}") from None


def load_compiled(program, config: dict) -> None:
    """Load the run's program file into `program`; the file must be the one the run started with."""
    saved = config["program"]
    try:
        if sha256(saved["path"]) != saved["sha256"]:
            raise ProgramFileError(f"--program {saved['path']} changed since the run started "
                                   f"(sha256 {saved['sha256'][:12]}...); compile it under a new name instead")
        load_program(program, saved["path"], config["method"], config.get("options", {}))
    except (ProgramFileError, OSError) as exc:
        raise SystemExit(f"error: {exc}") from None


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def main(argv: list[str] | None = None, *, tags: dict | None = None) -> dict:
    args = parse_args(argv)
    uri = tracking.setup(args.experiment)
    resume_id = tracking.resumable_run(args.resume) if args.resume else None
    config = tracking.saved_config(resume_id) if resume_id else None
    if config is None:
        try:
            data_file = resolve_data_file(args.dataset, args.data)
        except DataError as exc:
            raise SystemExit(f"error: {exc}") from None
        config = {"method": args.method, "dataset": args.dataset, "data_file": data_file and str(data_file), "n": args.limit,
                  "seed": args.seed, "lm_model": args.lm,
                  "lm_path": args.lm_path, "api_base": args.api_base, "price_in": args.price_in,
                  "price_out": args.price_out, "temperature": args.temperature, "max_tokens": args.max_tokens,
                  "decoding": args.decoding, "request_timeout": args.request_timeout, "budget": args.budget,
                  "threads": args.threads, "engine": args.engine,
                  "server_args": args.server_args, "options": method_options(args), "setting": args.setting, "index": args.index}
        if args.program:
            config["program"] = compiled_program(args.program, args.method, config["options"])
    try:
        questions = load_questions(config["dataset"], config["data_file"], limit=config["n"], seed=config["seed"])
    except DataError as exc:
        raise SystemExit(f"error: {exc}") from None
    corpus = open_corpus(config, args.out) if config.get("setting") == "corpus" else None
    legacy = "decoding" not in config  # a run saved before --decoding existed: the embedded model was strict
    if legacy:
        config["decoding"] = "strict" if LMSpec(config["lm_model"], config["lm_path"]).is_local else None
    spec = LMSpec(config["lm_model"], config["lm_path"], config["api_base"], config["temperature"], config["max_tokens"],
                  request_timeout=config.get("request_timeout", DEFAULT_REQUEST_TIMEOUT),
                  price_in=config.get("price_in"), price_out=config.get("price_out"))
    # The embedded engine builds its grammar for the mode, so the mode is known before the LM is.
    spec = replace(spec, decoding=config["decoding"] or (LOCAL_DEFAULT if spec.is_local else None))
    if "engine" not in config:  # a run saved before the managed server existed ran in-process: resume it so
        config["engine"] = "inprocess"
    if config["threads"] is None:  # chosen per LM and engine, so a resumed run keeps what it ran with
        config["threads"] = EMBEDDED_THREADS if spec.is_local and config["engine"] == "server" else 1
    spec = replace(spec, engine=config["engine"], slots=config["threads"],
                   server_args=tuple(shlex.split(config.get("server_args") or "")))
    try:
        lm = build_lm(spec)
    except (FileNotFoundError, ModelFetchError, ValueError, EngineBusy, EngineError) as exc:
        raise SystemExit(f"error: {exc}") from None
    config["lm"] = lm.model  # the model string actually called (and priced)
    config["default_decoding"] = default_decoding(lm, spec.is_local)
    config["decoding"] = spec.decoding or config["default_decoding"]
    if legacy:  # keep the label the run was saved under, so its tags (and its variant run) are found again
        config["default_decoding"] = config["decoding"]
    config["n"] = len(questions)
    dspy.configure(lm=lm, adapter=DecodingAdapter(config["decoding"]))
    traces.use_autolog(args.trace)  # off for a run that did not ask, whatever an earlier run in this process did
    program = METHODS[config["method"]](budget=config["budget"], **config.get("options", {}))
    if config.get("program"):
        load_compiled(program, config)
    config["label"] = tracking.setting_label(getattr(program, "label", config["method"]), config)

    run_id = tracking.start_run(config, resume_id, args.out, tags)  # eval.grid finds its cells by these tags
    results = ResultsFile(Path(mlflow.get_run(run_id).data.tags[tracking.RESULTS_TAG]))
    try:
        provenance.log_provenance(program, questions, config)
        records, metrics = run_questions(program, lm, questions, corpus, config, run_id, results,
                                         resume_command(run_id, args), trace=args.trace)
    except KeyboardInterrupt:  # Ctrl-C outside the question loop (e.g. while logging the results)
        tracking.end_run_if_active("KILLED")
        raise
    except BaseException:
        tracking.end_run_if_active("FAILED")  # a crash; an interrupt or a failing run ended its run already
        raise
    finally:
        if args.trace:  # autolog is process-wide: the next run in this process (an eval.grid cell) starts untraced
            traces.flush()
            traces.use_autolog(False)
    print()
    print(format_table(metrics, f"{config['label']}/{config['dataset']}"))
    for name in sorted(records[0].get("variants") or {}):
        label = tracking.setting_label(name, config)
        print(format_table(log_variant(config, run_id, name, records, results.path, label), f"{label}/{config['dataset']}"))
    failed = int(metrics["failed_questions"])
    if failed:
        print(f"{failed} question(s) failed; their errors are in {results.path} "
              f"(--resume {run_id} runs them again)", file=sys.stderr)
    print(f"\nMLflow run {run_id} in {uri}. Open the UI with:\n  mlflow ui --backend-store-uri {uri}")
    return {"run_id": run_id, "metrics": metrics, "records": records}


def resume_command(run_id: str, args: argparse.Namespace) -> str:
    flags = "" if args.experiment == "eir-dspy" else f" --experiment {args.experiment}"
    return f"python -m eval.run --resume {run_id}{flags}"


def run_questions(program, lm, questions, corpus, config: dict, run_id: str, results: ResultsFile,
                  resume: str, *, trace: bool = False) -> tuple[list[dict], dict]:
    """Run every question not yet done (or that failed with an error), keeping each record as it
    finishes; then score the run. Ends the MLflow run: FINISHED, KILLED (Ctrl-C) or FAILED.
    `trace`: each question in its own scored MLflow trace (eval.traces)."""
    done = results.load()
    todo = [q for q in questions if q.id not in done or done[q.id].get("error") is not None]
    part_started = time.time()

    def run_one(q):
        record = run_question(program, lm, q, corpus)
        record.update(part_started_at=part_started, finished_at=time.time())
        return record

    if trace:
        run_one = traces.traced(run_one, run_id)
    label = tracking.run_name(config)
    with tqdm(total=len(questions), initial=len(questions) - len(todo), desc=label) as bar:
        def keep(record: dict) -> None:
            results.append(record)  # written now: a killed run resumes from here
            done[record["id"]] = record
            bar.update(1)

        stop = run_all(todo, run_one, keep, config["threads"], total=len(todo),
                       on_abort=lambda: (tracking.end_run_if_active("KILLED", run_id), stop_shared_server()))
    finished = [done[q.id] for q in questions if q.id in done]
    if stop.interrupted:
        tracking.end_run_if_active("KILLED")
        if finished:
            print(format_table(summarize(finished), f"{label} (partial: {len(finished)} of {len(questions)})"),
                  file=sys.stderr)
        print(f"\nInterrupted: {len(finished)} of {len(questions)} questions are saved in {results.path}.\n"
              f"Continue with:\n  {resume}", file=sys.stderr)
        raise SystemExit(130)
    if stop.engine_failed:
        message = f"the embedded engine stopped serving: {stop.failing}"
    elif stop.failing:
        message = f"the {stop.failed} question(s) run failed with the same error and none succeeded: {stop.failing}"
    elif len(finished) == len(questions) and all(r.get("error") is not None for r in finished):
        message = f"every question failed; the first with: {finished[0]['error']}"
    else:
        message = None
    if message:
        tracking.mark_failed(message)
        raise SystemExit(f"error: run {run_id} failed: {message}\n"
                         f"Fix the cause, then run it again with: {resume}")
    records = [done[q.id] for q in questions]  # question order, whatever order they finished in
    metrics = summarize(records)
    metrics["wall_time_s"] = wall_time(records)
    tracking.log_results(records, metrics, str(results.path))
    tracking.end_run_if_active("FINISHED")
    return records, metrics


if __name__ == "__main__":
    main()
