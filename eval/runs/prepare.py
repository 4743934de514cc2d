"""A run made ready to start (`prepare`): its config resolved (or, on resume, the run's own, its lock
held), its questions, corpus, LM and program, as one `Prepared`. Nothing is logged to MLflow yet; a
bad input is a RunError naming it."""

from __future__ import annotations

import sys
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path

import dspy

from eir_dspy.corpus_index import CorpusIndex, CorpusIndexError
from eir_dspy.lm import build_lm
from eir_dspy.lm.embedded_server import EngineError
from eir_dspy.lm.engine_lock import EngineBusy
from eir_dspy.lm.local_models import ModelFetchError
from eir_dspy.lm.server_program import EngineBuild
from eval.data.corpus import BUILD_FULL_INDEX, FULL, build_default_index, corpus_name, default_index_dir
from eval.data.loaders import DataError, load_questions, resolve_data_file
from eval.data.schema import Question
from eval.files.program_file import ProgramFileError, load_program, sha256
from eval.runs import traces, tracking
from eval.runs.config import RunConfig
from eval.runs.errors import RunError
from eval.runs.resume import Resumed, load_resume
from programs.registry import METHODS


@dataclass(frozen=True)
class Prepared:
    """Everything a run needs to start: `config` as it is logged (data file, corpus, threads, LM, n and
    label resolved), its experiment and tracking URI, and, for a resumed run, what `load_resume` found."""

    config: RunConfig
    questions: list[Question]
    corpus: CorpusIndex | None
    lm: dspy.LM
    program: dspy.Module
    experiment: str
    uri: str
    resumed: Resumed | None = None

    @property
    def resume_id(self) -> str | None:
        return self.resumed.run_id if self.resumed else None

    @property
    def done(self) -> dict[str, dict]:
        """The records earlier parts of the run wrote, by question id (none for a new run)."""
        return self.resumed.done if self.resumed else {}


def prepare(config: RunConfig | None, held: ExitStack, *, experiment: str, out: str, resume: str | None,
            trace: bool, skip_bad_lines: bool) -> Prepared:
    """`config` (or, with `resume`, that run's own, in its own experiment, its lock entered on `held`)
    ready to start; DSPy is configured with its LM, and autolog set for `trace`."""
    resumed = None
    if resume:
        resumed = load_resume(resume, experiment, held, skip_bad_lines)
        config, experiment, uri = resumed.config, resumed.experiment, resumed.uri
    else:
        uri = tracking.setup(experiment)
        if config is None:
            raise ValueError("run() needs a RunConfig, or a run id to resume")
        config = with_data_file(config)  # a resumed run's config has its own already
    questions = load_data(config)
    corpus = None
    if config.setting == "corpus":
        corpus, config = open_corpus(config, out)
    if config.threads is None:  # chosen per LM and engine, so a resumed run keeps what it ran with
        config = replace(config, threads=config.lm.default_threads)
    lm, config = open_lm(config, len(questions), resumed and resumed.run_id)
    dspy.configure(lm=lm)  # the program carries its own adapter, made from its run context (programs/run_context.py)
    traces.use_autolog(trace)  # off for a run that did not ask, whatever an earlier run in this process did
    program = build_program(config)
    config = config.with_label(METHODS[config.method].main_label)
    return Prepared(config, questions, corpus, lm, program, experiment, uri, resumed)


def with_data_file(config: RunConfig) -> RunConfig:
    """A new run's config with the data file it reads resolved (None: the Hugging Face hub)."""
    try:
        data_file = resolve_data_file(config.dataset, config.data_file)
    except DataError as exc:
        raise RunError(str(exc)) from None
    return replace(config, data_file=data_file and str(data_file))


def load_data(config: RunConfig) -> list[Question]:
    try:
        return load_questions(config.dataset, config.data_file, limit=config.n, seed=config.seed)
    except DataError as exc:
        raise RunError(str(exc)) from None


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


def open_lm(config: RunConfig, n: int, resume_id: str | None) -> tuple[dspy.LM, RunConfig]:
    """The run's LM, and the config with it and the run's `n` questions; a resumed run must be served
    by the build it started on (`check_build`)."""
    try:
        lm = build_lm(config.lm.spec(config.threads))
    except (FileNotFoundError, ModelFetchError, ValueError, EngineBusy, EngineError) as exc:
        raise RunError(str(exc)) from None
    saved_build = config.served_by
    config = replace(config.with_lm(lm), n=n)
    check_build(config, saved_build, resume_id)
    return lm, config


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


def build_program(config: RunConfig) -> dspy.Module:
    """The run's program: its method's, with the run's options, and a compiled program's state loaded."""
    method = METHODS[config.method]
    program = method.build(config.budget, config.options, config.run_context)
    if config.program:
        load_compiled(program, config)
    return program


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
