"""The run condition: one frozen `RunConfig` for everything an eval.run run is (method, data, LM, budget, ...).

How it is built, tagged and read back, and the names it gives a run: docs/experiments.md, "Runs and
MLflow".

A config is first a request (what the flags ask for) and, once `run()` has started it, the condition
that ran: `run()` resolves the data file, the corpus index, the threads, the decoding (None: the
LM's default), the LM's logged name, the method label and n (the questions the file held), each by
`dataclasses.replace`. A tag is always written from a resolved config.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from types import MappingProxyType
from typing import Any

from eir_dspy.corpus_environment import DEFAULT_FUTILE_SEARCHES, FUTILE_SEARCHES
from eir_dspy.lm import DEFAULT_REQUEST_TIMEOUT, LOCAL_DEFAULT, LMSpec, default_decoding, server_build
from eir_dspy.lm.embedded_server import EMBEDDED_THREADS
from eir_dspy.lm.local_models import DEFAULT_MODEL
from eir_dspy.lm.server_program import EngineBuild
from eir_dspy.lm.spec import ENGINE
from eval.files.program_file import ProgramFileError, check_fits, program_config, read_meta
from eval.runs.errors import RunError
from programs import names
from programs.options import OptionsError, positive_int
from programs.registry import CORPUS_METHODS, METHODS
from programs.run_context import RunContext
from programs.setting import DEFAULT_BUDGET

DEFAULT_MAX_TOKENS = 2048


# ---------------------------------------------------------------- the LM


@dataclass(frozen=True)
class LMConfig:
    """The run's LM as its flags give it; `decoding` is the one carrier of --decoding (the engine's
    grammar follows it, and the program's adapter and grammars through `RunConfig.run_context`). Tag
    keys: lm_model, lm_path, api_base, price_in, price_out, temperature, max_tokens, decoding,
    request_timeout, engine, server_args."""
    model: str = DEFAULT_MODEL  # --lm: a local model key or any DSPy/LiteLLM model string
    path: str | None = None  # --lm-path: a local GGUF file
    api_base: tuple[str, ...] | None = None  # --api-base
    price_in: float | None = None
    price_out: float | None = None
    temperature: float = 0.0
    max_tokens: int = DEFAULT_MAX_TOKENS
    decoding: str | None = None  # None: the LM's default (resolved when the run starts)
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    engine: str = ENGINE  # the embedded model's engine, as the run's tag names it (`inprocess`: retired)
    server_args: str = ""  # more llama-server flags, as given (shell words)

    @property
    def is_local(self) -> bool:
        return LMSpec(self.model, self.path).is_local

    @property
    def name(self) -> str:
        """The model string a local model is logged as (local/<key or file stem>); an API model's own."""
        return LMSpec(self.model, self.path).name

    @property
    def engine_decoding(self) -> str | None:
        """The mode the LM is built for: the embedded engine builds its grammar for it, so it is
        known before the LM is (an API model's default is asked of the LM once built)."""
        return self.decoding or (LOCAL_DEFAULT if self.is_local else None)

    @property
    def default_threads(self) -> int:
        """Questions in flight when --threads is not given: the embedded server decodes them in one batch."""
        return EMBEDDED_THREADS if self.is_local and self.engine == ENGINE else 1

    def spec(self, slots: int) -> LMSpec:
        """eir_dspy's LMSpec for `build_lm`; `slots`: questions decoded together (the run's threads)."""
        if self.is_local and self.engine != ENGINE:
            raise ValueError(f"this run's embedded model ran on the {self.engine!r} engine (llama-cpp-python in "
                             "the process), retired in issue 33: its calls cannot be made again on that engine. "
                             "Its records still compare and analyze; start a new run to run it again")
        return LMSpec(self.model, self.path, self.api_base, self.temperature, self.max_tokens,
                      request_timeout=self.request_timeout, decoding=self.engine_decoding, price_in=self.price_in,
                      price_out=self.price_out, slots=slots, server_args=tuple(shlex.split(self.server_args or "")))

    def decodings(self, lm) -> tuple[str, str]:
        """(the decoding a run on the built `lm` decodes under, the LM's default decoding)."""
        default = default_decoding(lm, self.is_local)
        return self.engine_decoding or default, default


# ---------------------------------------------------------------- the method


def options_for(method: str, setting: str = "pool", given: Mapping | None = None) -> dict:
    """The method's options (its registry entry's Options) from eval.run's option flags (by name; None:
    not given), as the run logs them; a value given for an option the method does not take is a
    RunError, so `--method eir --votes 3` is refused rather than quietly ignored. Setting-dependent
    defaults are resolved here, so the log holds the rule that ran (e.g. the verifier temperature,
    D.1 / H.2, and what invalid list updates do: discard in the pool, reject in the corpus setting)."""
    return _resolved(method, setting, {k: v for k, v in (given or {}).items() if v is not None})


def _resolved(method: str, setting: str, options: Mapping) -> dict:
    try:
        return METHODS[method].make_options(options, setting).as_dict()
    except OptionsError as exc:
        raise RunError(str(exc)) from None


@dataclass(frozen=True)
class ProgramFile:
    """A compiled program a run loads (eval.run --program): its name (in the variant), path and sha256."""
    name: str
    path: str
    sha256: str

    def to_dict(self) -> dict:
        return {"name": self.name, "path": self.path, "sha256": self.sha256}


def compiled_program(path: str, method: str, options: Mapping) -> ProgramFile:
    """What the run records about its --program file; a RunError on a bad file or one compiled for
    another method (checked before any LM starts)."""
    try:
        check_fits(read_meta(path), path, method, dict(options))
        return ProgramFile(**program_config(path))
    except ProgramFileError as exc:
        raise RunError(str(exc)) from None


# ---------------------------------------------------------------- the condition


@dataclass(frozen=True)
class RunConfig:
    """One eval.run run's condition. Fields marked (resolved) are set by eval.run's `run()` as it starts."""
    method: str = names.EIR
    dataset: str = "hotpotqa"
    setting: str = "pool"  # pool: each question's paragraphs; corpus: search an index
    budget: int = DEFAULT_BUDGET  # H
    options: Mapping[str, Any] = field(default_factory=dict, hash=False)  # the method's options, resolved as made
    lm: LMConfig = field(default_factory=LMConfig)
    data_file: str | None = None  # --data as given, (resolved) the file read; None: $EIR_DATA_DIR or the hub
    n: int = 5  # --limit, (resolved) the questions run
    seed: int = 0
    threads: int | None = None  # None: the LM's default (resolved)
    index: str | None = None  # corpus setting: --index, (resolved) the index searched
    program: ProgramFile | None = None  # --program
    corpus: str | None = None  # (resolved) the corpus searched, and its paragraphs
    corpus_paragraphs: int | None = None
    lm_name: str | None = None  # (resolved) the model string called and priced: tag `lm`
    default_decoding: str | None = None  # (resolved) the LM's default decoding; None: not known
    method_label: str | None = None  # (resolved) the label logged (see `label`); tag `label`
    futile_searches: str = DEFAULT_FUTILE_SEARCHES  # corpus: repeated / no-word searches run (H.1) or are rejected
    served_by: EngineBuild | None = None  # (resolved) the embedded model's server build; None for other LMs

    def __post_init__(self) -> None:
        """The checks every config passes, however it is made (flags, a grid cell, a tag, a notebook):
        a known method in a setting it has, its options (resolved, read-only), the corpus rules."""
        if self.method not in METHODS:
            raise RunError(f"unknown --method {self.method!r}; choose one of {', '.join(METHODS)}")
        if self.setting not in METHODS[self.method].settings:
            if self.setting == "corpus":
                raise RunError(f"--method {self.method} has no corpus setting; use one of {', '.join(CORPUS_METHODS)}")
            raise RunError(f"unknown --setting {self.setting!r}; --method {self.method} runs in "
                           f"{', '.join(METHODS[self.method].settings)}")
        if self.setting == "corpus" and self.dataset != "hotpotqa":
            raise RunError(f"the corpus setting searches HotpotQA's Wikipedia corpus; got --dataset {self.dataset}")
        try:
            for name, value in (("--budget", self.budget), ("--limit", self.n)):
                positive_int(name, value)
        except OptionsError as exc:
            raise RunError(str(exc)) from None
        if self.futile_searches not in FUTILE_SEARCHES:
            raise RunError(f"unknown --futile-searches {self.futile_searches!r}; choose one of {', '.join(FUTILE_SEARCHES)}")
        if self.setting != "corpus" and self.futile_searches != DEFAULT_FUTILE_SEARCHES:
            raise RunError("--futile-searches is a rule of the corpus setting's searches; "
                           "the pool has none (add --setting corpus)")
        options = _resolved(self.method, self.setting, self.options)
        object.__setattr__(self, "options", MappingProxyType(options))  # read-only

    def with_lm(self, lm) -> RunConfig:
        """Resolved by the built `lm`: its logged name, its default decoding, the decoding run under and
        (the embedded model) the server build that serves it."""
        decoding, default = self.lm.decodings(lm)
        return replace(self, lm=replace(self.lm, decoding=decoding), lm_name=lm.model, default_decoding=default,
                       served_by=server_build(lm))

    @property
    def run_context(self) -> RunContext:
        """What the run's program is built with (programs/run_context.py): the decoding it runs under
        and its futile-search rule. The decoding must be resolved (`with_lm`), as a notebook's
        `RunContext.for_lm(lm, spec)` resolves it."""
        if self.lm.decoding is None:
            raise ValueError("the run's decoding is not resolved yet: RunConfig.with_lm(lm) resolves it")
        return RunContext(self.lm.decoding, self.futile_searches)

    def with_label(self, name: str) -> RunConfig:
        """Labelled as the program `name` (e.g. reflexion_oracle, or reflexion_first for Reflexion's
        first-trial run): corpus-setting runs carry the setting in their label, and runs decoded other
        than the LM's default (or a default not known) carry the decoding, so comparisons never mix
        conditions."""
        label = f"{name}_corpus" if self.setting == "corpus" else name
        decoding = self.lm.decoding
        if decoding and decoding != self.default_decoding:
            label += f" decoding={decoding}"
        return replace(self, method_label=label)

    # ------------------------------------------------------------ names

    @property
    def label(self) -> str:
        """The method a run's numbers belong to (e.g. reflexion_oracle for --method reflexion), with
        its setting and decoding; the method itself until the run has labelled it."""
        return self.method_label or self.method

    @property
    def variant(self) -> str:
        """The condition as one name: the label, the ablation, the compiled program, H where it is not
        the paper's 6, and the method's options; e.g. `eir`, `eir H=8`, `eir no-list-feedback`,
        `ssr votes=3 T=0.7`, `eir compiled=gepa`. Comparisons pair runs by it. Sampling settings
        (temperature, max tokens) are params, not part of the name: vary them in separate experiments."""
        leading, trailing = METHODS[self.method].make_options(self.options).variant_parts(self.setting)
        parts = [self.label, *leading]  # each option shown as its field says (programs/options.py)
        if self.program:
            parts.append(f"compiled={self.program.name}")
        if self.budget != DEFAULT_BUDGET:
            parts.append(f"H={self.budget}")
        if self.setting == "corpus" and self.futile_searches != DEFAULT_FUTILE_SEARCHES:
            parts.append(f"futile_searches={self.futile_searches}")
        return " ".join(parts + trailing)

    @property
    def sweep(self) -> str:
        """The variant with H left out: the runs of one budget sweep share it."""
        return replace(self, budget=DEFAULT_BUDGET).variant

    @property
    def run_name(self) -> str:
        name = f"{self.variant} / {self.dataset} / {self.lm_name}"
        return name if self.budget != DEFAULT_BUDGET else f"{name} / H={self.budget}"

    # ------------------------------------------------------------ the tag

    def to_dict(self) -> dict:
        """The config as the `eir.config` tag holds it (its keys and their order are those eval.run
        has always written)."""
        lm = self.lm
        out = {"method": self.method, "dataset": self.dataset, "data_file": self.data_file, "n": self.n,
               "seed": self.seed, "lm_model": lm.model, "lm_path": lm.path,
               "api_base": list(lm.api_base) if lm.api_base else None,
               "price_in": lm.price_in, "price_out": lm.price_out, "temperature": lm.temperature,
               "max_tokens": lm.max_tokens, "decoding": lm.decoding, "request_timeout": lm.request_timeout,
               "budget": self.budget, "threads": self.threads, "engine": lm.engine, "server_args": lm.server_args,
               "options": dict(self.options), "setting": self.setting, "index": self.index,
               "futile_searches": self.futile_searches}
        if self.program:
            out["program"] = self.program.to_dict()
        if self.corpus is not None:
            out["corpus"], out["corpus_paragraphs"] = self.corpus, self.corpus_paragraphs
        if self.served_by is not None:
            out["served_by"] = asdict(self.served_by)
        out.update(lm=self.lm_name, default_decoding=self.default_decoding, label=self.method_label)
        return out

    def to_tag(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_tag(cls, text: str) -> RunConfig:
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_dict(cls, c: Mapping) -> RunConfig:
        """A config from its tag's JSON as `to_dict` writes it, every key present (`program`, `corpus`
        `corpus_paragraphs` and `served_by` only when set). Anything else is a RunError naming the key: a tag of an
        earlier version is rewritten by the migration script, not read here."""
        missing = [k for k in TAG_KEYS if k not in c]
        unknown = [k for k in c if k not in TAG_KEYS + _OPTIONAL_TAG_KEYS]
        if missing or unknown:
            raise RunError(f"eir.config tag: {'missing key' if missing else 'unknown key'} {(missing or unknown)[0]!r} "
                           "(a tag of an earlier eval.run: migrate it first)")
        takes = METHODS[c["method"]].options.names() if c["method"] in METHODS else None
        if takes is not None and isinstance(c["options"], dict) and sorted(c["options"]) != sorted(takes):
            wrong = sorted(set(takes) ^ set(c["options"]))[0]
            raise RunError(f"eir.config tag: options: {wrong!r} {'is missing' if wrong in takes else 'is unknown'} "
                           f"for method {c['method']} (a tag of an earlier eval.run: migrate it first)")
        if c["api_base"] is not None and not isinstance(c["api_base"], list):
            raise RunError(f"eir.config tag: api_base must be a list of URLs, got {c['api_base']!r}")
        try:
            lm = LMConfig(model=c["lm_model"], path=c["lm_path"], api_base=c["api_base"] and tuple(c["api_base"]),
                          price_in=c["price_in"], price_out=c["price_out"], temperature=c["temperature"],
                          max_tokens=c["max_tokens"], decoding=c["decoding"], request_timeout=c["request_timeout"],
                          engine=c["engine"], server_args=c["server_args"])
            program, build = c.get("program"), c.get("served_by")
            return cls(method=c["method"], dataset=c["dataset"], setting=c["setting"], budget=c["budget"],
                       options=c["options"], lm=lm, data_file=c["data_file"], n=c["n"], seed=c["seed"],
                       threads=c["threads"], index=c["index"], program=program and ProgramFile(**program),
                       corpus=c.get("corpus"), corpus_paragraphs=c.get("corpus_paragraphs"), lm_name=c["lm"],
                       default_decoding=c["default_decoding"], method_label=c["label"],
                       futile_searches=c["futile_searches"], served_by=build and EngineBuild(**build))
        except (RunError, TypeError, ValueError) as exc:
            raise RunError(f"eir.config tag: {exc}") from None


# The eir.config tag's keys, in the order `to_dict` writes them (and those it writes only when set).
TAG_KEYS = list(RunConfig().to_dict())
_OPTIONAL_TAG_KEYS = ["program", "corpus", "corpus_paragraphs", "served_by"]
