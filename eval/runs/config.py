"""The run condition: one frozen `RunConfig` for everything an eval.run run is (method, data, LM, budget, ...).

`python -m eval.run` builds it from its flags (`RunConfig.from_args`), eval.grid builds one per cell,
eval.run's `run(config)` runs it and logs it as the `eir.config` tag (`to_tag`), and the runs read
back from MLflow carry it again (`from_tag`: eval.runs.logged_runs, eval.analyze). The names a run is
known by are computed here only: `label` (the method label, with its setting and decoding),
`variant` (what comparisons pair by), `sweep` (the variant without H) and `run_name`.

A config is first a request (what the flags ask for) and, once `run()` has started it, the condition
that ran: `run()` resolves the data file, the corpus index, the threads, the decoding (None: the
LM's default), the LM's logged name, the method label and n (the questions the file held), each by
`dataclasses.replace`. A tag is always written from a resolved config.

Every run logged by an earlier version still loads: the compatibility rules for old tags are in
`RunConfig.from_dict` and nowhere else.
"""

from __future__ import annotations

import argparse
import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from eir_dspy.corpus_environment import DEFAULT_FUTILE_SEARCHES, FUTILE_REJECT
from eir_dspy.lm import DECODINGS, DEFAULT_REQUEST_TIMEOUT, LOCAL_DEFAULT, LMSpec, default_decoding
from eir_dspy.lm.embedded_server import EMBEDDED_THREADS
from eir_dspy.lm.local_models import DEFAULT_MODEL
from eir_dspy.lm.spec import ENGINE
from eir_dspy.state import REJECT, paper_invalid_updates
from eval.files.program_file import ProgramFileError, check_fits, program_config, read_meta
from programs import names
from programs.options import OptionsError
from programs.registry import DEFAULT_TRIALS, DEFAULT_VOTES, METHODS

DEFAULT_BUDGET = 6  # the paper's H: a variant names its H only when it differs
DEFAULT_MAX_TOKENS = 2048
_OPTION_NAMES = {"verifier_temperature": "T"}  # short names in variants; others keep their own


# ---------------------------------------------------------------- the LM


@dataclass(frozen=True)
class LMConfig:
    """The run's LM as its flags give it; `decoding` is the one carrier of --decoding (the engine's
    grammar and the adapter both follow it). Tag keys: lm_model, lm_path, api_base, price_in,
    price_out, temperature, max_tokens, decoding, request_timeout, engine, server_args."""
    model: str = DEFAULT_MODEL  # --lm: a local model key or any DSPy/LiteLLM model string
    path: str | None = None  # --lm-path: a local GGUF file
    api_base: str | tuple[str, ...] | None = None  # --api-base; one string in runs logged before it took several
    price_in: float | None = None
    price_out: float | None = None
    temperature: float = 0.0
    max_tokens: int = DEFAULT_MAX_TOKENS
    decoding: str | None = None  # None: the LM's default (resolved when the run starts)
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    engine: str = ENGINE  # the embedded model's engine, as the run's tag names it (older runs: `inprocess`, retired)
    server_args: str = ""  # more llama-server flags, as given (shell words)

    def __post_init__(self) -> None:
        if isinstance(self.api_base, list):
            object.__setattr__(self, "api_base", tuple(self.api_base))

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> LMConfig:
        """From the flags `add_lm_flags` adds (eval.run's and eval.compile's)."""
        return cls(model=args.lm, path=args.lm_path, api_base=tuple(args.api_base) if args.api_base else None,
                   price_in=args.price_in, price_out=args.price_out, temperature=args.temperature,
                   max_tokens=args.max_tokens, decoding=args.decoding, request_timeout=args.request_timeout,
                   server_args=args.server_args or "")

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

    @property
    def endpoints(self) -> int:
        if isinstance(self.api_base, tuple):
            return len(self.api_base)
        return int(bool(self.api_base))


def add_lm_flags(p: argparse.ArgumentParser) -> None:
    """The LM flags, shared by eval.run and eval.compile (LMConfig.from_args reads them)."""
    g = p.add_argument_group("the LM")
    g.add_argument("--lm", default=DEFAULT_MODEL, help="a local model key or any DSPy/LiteLLM model string")
    g.add_argument("--lm-path", default=None, help="serve any local GGUF file (as the embedded model)")
    g.add_argument("--api-base", nargs="+", default=None, metavar="URL",
                   help="base URL of an OpenAI-compatible server; several URLs serving the same model: requests "
                        "are spread over them by LiteLLM's Router (set concurrency with --threads)")
    g.add_argument("--price-in", type=float, default=None, metavar="USD",
                   help="dollars per million prompt tokens, for a model LiteLLM cannot price")
    g.add_argument("--price-out", type=float, default=None, metavar="USD",
                   help="dollars per million completion tokens, for a model LiteLLM cannot price")
    g.add_argument("--temperature", type=float, default=0.0)
    g.add_argument("--max-tokens", type=positive_int, default=DEFAULT_MAX_TOKENS)
    g.add_argument("--decoding", default=None, choices=DECODINGS,
                   help="strict: per-call grammars (enums of real titles, caps); schema: the signature's JSON schema "
                        "only; free: no grammar, JSON by prompt (default: schema for the embedded model; for an API "
                        "model schema where it takes one, else free). docs/lm.md: Decoding")
    g.add_argument("--request-timeout", type=positive_float, default=DEFAULT_REQUEST_TIMEOUT, metavar="SECONDS",
                   help=f"API models: seconds before a request is abandoned and retried like any provider error "
                        f"(default {DEFAULT_REQUEST_TIMEOUT:g}); the embedded model has none")
    g.add_argument("--server-args", default="", metavar="FLAGS",
                   help="the embedded server: more llama-server flags, e.g. '--spec-type ngram-simple' (logged)")


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


# ---------------------------------------------------------------- the method


def options_for(method: str, setting: str = "pool", *, verifier_temperature: float | None = None,
                votes: int = DEFAULT_VOTES, trials: int = DEFAULT_TRIALS, ablation: str | None = None,
                invalid_updates: str | None = None) -> dict:
    """The method's options (its registry entry's Options) from eval.run's option flags, as the run
    logs them; a flag of another method's option is ignored, but exits when it is an ablation or
    list-update rule. Setting-dependent defaults are resolved here, so the log holds the rule that
    ran: the verifier temperature (D.1 / H.2) and what invalid list updates do (discard in the
    pool, reject in the corpus setting)."""
    takes = METHODS[method].options.names()
    if ablation is not None and "ablation" not in takes:
        raise SystemExit(f"error: --ablation is an EIR ablation; --method {method} has none")
    if invalid_updates is not None and "invalid_updates" not in takes:
        raise SystemExit(f"error: --invalid-updates is EIR's list-update rule; --method {method} has no lists")
    given = {"verifier_temperature": verifier_temperature, "votes": votes, "trials": trials, "ablation": ablation,
             "invalid_updates": invalid_updates}
    try:
        options = METHODS[method].make_options({k: v for k, v in given.items() if k in takes and v is not None}, setting)
    except OptionsError as exc:
        raise SystemExit(f"error: {exc}") from None
    return options.as_dict()


def method_options(args: argparse.Namespace) -> dict:
    """`options_for` from eval.run's flags."""
    return options_for(args.method, args.setting, verifier_temperature=args.verifier_temperature, votes=args.votes,
                       trials=args.trials, ablation=args.ablation, invalid_updates=args.invalid_updates)


@dataclass(frozen=True)
class ProgramFile:
    """A compiled program a run loads (eval.run --program): its name (in the variant), path and sha256."""
    name: str
    path: str
    sha256: str

    def to_dict(self) -> dict:
        return {"name": self.name, "path": self.path, "sha256": self.sha256}


def compiled_program(path: str, method: str, options: Mapping) -> ProgramFile:
    """What the run records about its --program file; exits on a bad file or one compiled for
    another method (checked before any LM starts)."""
    try:
        check_fits(read_meta(path), path, method, dict(options))
        return ProgramFile(**program_config(path))
    except ProgramFileError as exc:
        raise SystemExit(f"error: {exc}") from None


# ---------------------------------------------------------------- the condition


@dataclass(frozen=True)
class RunConfig:
    """One eval.run run's condition. Fields marked (resolved) are set by eval.run's `run()` as it starts."""
    method: str = names.EIR
    dataset: str = "hotpotqa"
    setting: str = "pool"  # pool: each question's paragraphs; corpus: search an index
    budget: int = DEFAULT_BUDGET  # H
    options: Mapping[str, Any] = field(default_factory=dict, hash=False)  # the method's options (options_for)
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
    legacy_decoding: bool = False  # logged before --decoding existed (see from_dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))  # read-only

    # ------------------------------------------------------------ building

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> RunConfig:
        """The condition eval.run's flags ask for. Exits on a method option the method does not take
        or a --program that is not a program file compiled for this method and options."""
        options = method_options(args)
        if args.setting != "corpus" and args.futile_searches != DEFAULT_FUTILE_SEARCHES:
            raise SystemExit("error: --futile-searches is a rule of the corpus setting's searches; "
                             "the pool has none (add --setting corpus)")
        program = compiled_program(args.program, args.method, options) if args.program else None
        return cls(method=args.method, dataset=args.dataset, setting=args.setting, budget=args.budget,
                   options=options, lm=LMConfig.from_args(args), data_file=args.data, n=args.limit,
                   seed=args.seed, threads=args.threads, index=args.index, program=program,
                   futile_searches=args.futile_searches)

    def with_lm(self, lm) -> RunConfig:
        """Resolved by the built `lm`: its logged name, its default decoding and the decoding run under."""
        decoding, default = self.lm.decodings(lm)
        if self.legacy_decoding:  # keep the label it was logged under, so its tags (and variant run) are found again
            default = decoding
        return replace(self, lm=replace(self.lm, decoding=decoding), lm_name=lm.model, default_decoding=default,
                       legacy_decoding=False)

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
        options = dict(self.options)
        parts = [self.label]
        ablation = options.pop("ablation", None)
        if ablation and ablation != "none":
            parts.append(ablation)
        if options.get("invalid_updates") == paper_invalid_updates(self.setting):
            del options["invalid_updates"]  # the paper's rule for the setting goes unnamed, like H=6
        if self.program:
            parts.append(f"compiled={self.program.name}")
        if int(self.budget) != DEFAULT_BUDGET:
            parts.append(f"H={self.budget}")
        if self.setting == "corpus" and self.futile_searches != DEFAULT_FUTILE_SEARCHES:
            parts.append(f"futile_searches={self.futile_searches}")
        parts += [f"{_OPTION_NAMES.get(k, k)}={v:g}" if isinstance(v, float) else f"{_OPTION_NAMES.get(k, k)}={v}"
                  for k, v in sorted(options.items(), key=lambda kv: (kv[0] != "votes", kv[0]))]
        return " ".join(parts)

    @property
    def sweep(self) -> str:
        """The variant with H left out: the runs of one budget sweep share it."""
        return replace(self, budget=DEFAULT_BUDGET).variant

    @property
    def run_name(self) -> str:
        name = f"{self.variant} / {self.dataset} / {self.lm_name}"
        return name if int(self.budget) != DEFAULT_BUDGET else f"{name} / H={self.budget}"

    @property
    def recorded_decoding(self) -> str | None:
        """The decoding the run logged: None for a run logged before --decoding existed."""
        return None if self.legacy_decoding else self.lm.decoding

    # ------------------------------------------------------------ the tag

    def to_dict(self) -> dict:
        """The config as the `eir.config` tag holds it (its keys and their order are those eval.run
        has always written)."""
        lm = self.lm
        out = {"method": self.method, "dataset": self.dataset, "data_file": self.data_file, "n": self.n,
               "seed": self.seed, "lm_model": lm.model, "lm_path": lm.path,
               "api_base": list(lm.api_base) if isinstance(lm.api_base, tuple) else lm.api_base,
               "price_in": lm.price_in, "price_out": lm.price_out, "temperature": lm.temperature,
               "max_tokens": lm.max_tokens, "decoding": lm.decoding, "request_timeout": lm.request_timeout,
               "budget": self.budget, "threads": self.threads, "engine": lm.engine, "server_args": lm.server_args,
               "options": dict(self.options), "setting": self.setting, "index": self.index,
               "futile_searches": self.futile_searches}
        if self.legacy_decoding:
            del out["decoding"]  # still unknown: from_dict applies the legacy rule again
        if self.program:
            out["program"] = self.program.to_dict()
        if self.corpus is not None:
            out["corpus"], out["corpus_paragraphs"] = self.corpus, self.corpus_paragraphs
        out.update(lm=self.lm_name, default_decoding=self.default_decoding, label=self.method_label)
        return out

    def to_tag(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_tag(cls, text: str) -> RunConfig:
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_dict(cls, c: Mapping) -> RunConfig:
        """A config from its tag's JSON, of any version of eval.run. The rules for runs logged by
        earlier versions (the only place they live):
        - no `decoding` (before --decoding): the embedded model decoded under per-call grammars
          (strict), an API model under its default; the run keeps the label it was logged under
          (`legacy_decoding`, so resuming it does not relabel it) and reads back with decoding None;
        - no `engine` (before the managed llama-server): the embedded model ran in-process;
        - no `request_timeout`: the default; no `price_in`/`price_out`, `server_args`, `index`,
          `program`, `corpus`: none;
        - no `setting`: pool; no `options`: none (ablation none); no `label`: the method;
        - no `futile_searches` (before it existed): `reject` in the corpus setting, the rule then in
          force (its variant names it); the pool has no search;
        - an EIR run with no `invalid_updates` option (before it existed): `reject`, the rule every
          EIR run followed from issue 21 (commit be4627c) until then, so its variant names it
          (`eir invalid_updates=reject` in the pool) and it never pairs with runs under the paper's
          pool rule. Pool runs logged before issue 21 discarded invalid updates and are read as
          `reject` too: the tag does not tell them apart;
        - `api_base` one string (before --api-base took several): that one endpoint;
        - keys no version reads any more (e.g. `constrained`, of the first runs) are ignored.
        """
        api_base = c.get("api_base")
        legacy_decoding = "decoding" not in c
        lm = LMConfig(model=c.get("lm_model", DEFAULT_MODEL), path=c.get("lm_path"),
                      api_base=tuple(api_base) if isinstance(api_base, list) else api_base,
                      price_in=c.get("price_in"), price_out=c.get("price_out"),
                      temperature=c.get("temperature", 0.0), max_tokens=c.get("max_tokens", DEFAULT_MAX_TOKENS),
                      request_timeout=c.get("request_timeout", DEFAULT_REQUEST_TIMEOUT),
                      engine=c.get("engine", "inprocess"), server_args=c.get("server_args") or "")
        lm = replace(lm, decoding=("strict" if lm.is_local else None) if legacy_decoding else c["decoding"])
        program = c.get("program")
        options = dict(c.get("options") or {})
        if c.get("method", names.EIR) == names.EIR:
            options.setdefault("invalid_updates", REJECT)
        return cls(method=c.get("method", names.EIR), dataset=c.get("dataset", "hotpotqa"),
                   setting=c.get("setting") or "pool", budget=int(c.get("budget", DEFAULT_BUDGET)),
                   options=options, lm=lm, data_file=c.get("data_file"), n=int(c.get("n", 5)),
                   seed=c.get("seed", 0), threads=c.get("threads"), index=c.get("index"),
                   program=ProgramFile(**program) if program else None, corpus=c.get("corpus"),
                   corpus_paragraphs=c.get("corpus_paragraphs"), lm_name=c.get("lm"),
                   default_decoding=c.get("default_decoding"), method_label=c.get("label"),
                   legacy_decoding=legacy_decoding,
                   futile_searches=c.get("futile_searches") or (FUTILE_REJECT if c.get("setting") == "corpus"
                                                                else DEFAULT_FUTILE_SEARCHES))
