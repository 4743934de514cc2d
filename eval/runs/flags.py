"""eval.run's flags: the command line `python -m eval.run` parses, and the keys eval.grid's files name.

The parser below is the one definition of the flags. `RunFlags` (`flags_model()`) is the typed model made from it: a
field per flag, with the flag's default, checked by the flag's own type and choices (so a grid key
and a flag cannot drift, and a grid's bad value reads as the command line's error). `run_config`
turns either into the RunConfig a run starts with."""

from __future__ import annotations

import argparse
import functools
from collections.abc import Mapping
from functools import partial
from typing import Annotated

import pydantic

from eir_dspy.corpus_environment import DEFAULT_FUTILE_SEARCHES, FUTILE_SEARCHES
from eir_dspy.lm import DECODINGS, DEFAULT_REQUEST_TIMEOUT
from eir_dspy.lm.embedded_server import EMBEDDED_THREADS
from eir_dspy.lm.local_models import DEFAULT_MODEL
from eval.data.loaders import DATASETS
from eval.runs.config import DEFAULT_BUDGET, DEFAULT_MAX_TOKENS, LMConfig, RunConfig, compiled_program, options_for
from eval.runs.errors import RunError
from programs import names, options
from programs.options import NUMBER, POSITIVE_INT, OptionsError
from programs.registry import METHODS, method_options
from programs.setting import SETTINGS

DESCRIPTION = "`python -m eval.run`: run one method on one dataset with one LM, score it, log it to MLflow."
DEFAULT_EXPERIMENT = "eir-dspy"
DEFAULT_OUT = "runs"
SKIP_BAD_LINES = "--skip-bad-lines"
RESUME_ONLY = ("skip_bad_lines",)  # how one resume reads its results file: not a flag a grid file names


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m eval.run", description=DESCRIPTION)
    p.add_argument("--method", default=names.EIR, choices=METHODS)  # the registry itself: a method added later runs
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
    add_option_flags(p)
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


def add_option_flags(p: argparse.ArgumentParser) -> None:
    """A flag for every method option, made from the options dataclasses (programs/options.py) that
    declare it: not given (None), the method's own default."""
    for opt in method_options().values():
        meta = opt.field.metadata
        kind = {POSITIVE_INT: positive_int, NUMBER: float}.get(meta["kind"])
        p.add_argument("--" + opt.name.replace("_", "-"), default=None, type=kind, choices=meta["choices"],
                       help=f"{', '.join(opt.methods)}: {meta['help']}")


def add_lm_flags(p: argparse.ArgumentParser) -> None:
    """The LM flags, shared by eval.run and eval.compile (`lm_config` reads them)."""
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
    """argparse's type for a positive integer flag: the one check (programs/options.py), argparse's error."""
    try:
        return options.positive_int(None, int(text))
    except OptionsError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    return build_parser().parse_args(argv)


# ---------------------------------------------------------------- the typed model


def _checked(action: argparse.Action, value):
    """A flag's value (a grid key's, or one argparse parsed) checked as argparse checks the flag."""
    if action.nargs == 0:
        if not isinstance(value, bool):
            raise ValueError(f"{action.dest!r} is a switch: true or false")
        return value
    if value is None and action.default is None:
        return None
    if isinstance(value, (bool, dict)) or (isinstance(value, list) and not action.nargs):
        raise ValueError(f"{action.dest!r} takes " + (f"one value, got {value!r}" if isinstance(value, (dict, list))
                                                      else f"a value, not {value!r}"))
    values = [_one(action, str(v)) for v in (value if isinstance(value, list) else [value])]
    return values if action.nargs else values[0]


def _one(action: argparse.Action, text: str):
    flag = f"argument {action.option_strings[0]}"
    try:
        value = action.type(text) if action.type else text
    except argparse.ArgumentTypeError as exc:
        raise ValueError(f"{flag}: {exc}") from None
    except (TypeError, ValueError):
        raise ValueError(f"{flag}: invalid {action.type.__name__} value: {text!r}") from None
    if action.choices is not None and value not in action.choices:
        raise ValueError(f"{flag}: invalid choice: {value!r} (choose from {', '.join(map(repr, action.choices))})")
    return value


def _field(action: argparse.Action) -> tuple:
    kind = bool if action.nargs == 0 else {None: str, int: int, float: float, positive_int: int,
                                           positive_float: float}[action.type]
    kind = list[kind] if action.nargs else kind
    kind = kind | None if action.default is None else kind
    return Annotated[kind, pydantic.BeforeValidator(partial(_checked, action))], action.default


def flags_model() -> type[pydantic.BaseModel]:
    """`RunFlags` for the registry as it is now: every eval.run flag a config is made from (by argparse
    dest), typed, with the command line's default (made again only when a method option is added)."""
    return _flags_model(tuple((o.name, o.field.type, o.field.default, tuple(o.field.metadata.items()))
                              for o in method_options().values()))


@functools.lru_cache(maxsize=4)
def _flags_model(options: tuple) -> type[pydantic.BaseModel]:  # keyed by each option's declaration
    actions = [a for a in build_parser()._actions if a.dest != "help" and a.dest not in RESUME_ONLY]
    model = pydantic.create_model("RunFlags", __config__=pydantic.ConfigDict(extra="forbid", frozen=True),
                                  **{a.dest: _field(a) for a in actions})
    model.__doc__ = flags_model.__doc__
    return model


def flag_defaults() -> dict:
    """Every eval.run flag (argparse dest) with the command line's default."""
    return flags_model()().model_dump()


def lm_config(flags: Mapping) -> LMConfig:
    """The LM the LM flags (`add_lm_flags`, by dest) ask for: eval.run's and eval.compile's."""
    api_base = flags["api_base"]
    return LMConfig(model=flags["lm"], path=flags["lm_path"], api_base=tuple(api_base) if api_base else None,
                    price_in=flags["price_in"], price_out=flags["price_out"], temperature=flags["temperature"],
                    max_tokens=flags["max_tokens"], decoding=flags["decoding"],
                    request_timeout=flags["request_timeout"], server_args=flags["server_args"] or "")


def run_flags(values: Mapping | argparse.Namespace) -> pydantic.BaseModel:
    """eval.run's flags (parsed, or a grid cell's by dest) as the typed model; a RunError on a bad one."""
    values = vars(values) if isinstance(values, argparse.Namespace) else values
    try:
        return flags_model().model_validate({k: v for k, v in values.items() if k not in RESUME_ONLY})
    except pydantic.ValidationError as exc:
        error = exc.errors()[0]
        if error["type"] == "extra_forbidden":
            raise RunError(f"unknown flag {error['loc'][0]!r}") from None
        raise RunError(error["msg"].removeprefix("Value error, ")) from None  # a flag's own check: it names the flag


def run_config(flags: Mapping | argparse.Namespace | pydantic.BaseModel) -> RunConfig:
    """The RunConfig eval.run's flags ask for: parsed ones (a Namespace) or a grid cell's (by dest; a
    flag not given takes the command line's default). A RunError on a value the flag does not take
    (its message is the command line's), a method option the method does not take, a --program not
    compiled for this method and options, or a config that fails its own checks."""
    f = (flags if isinstance(flags, pydantic.BaseModel) else run_flags(flags)).model_dump()
    options = options_for(f["method"], f["setting"], {name: f[name] for name in method_options()})
    program = compiled_program(f["program"], f["method"], options) if f["program"] else None
    return RunConfig(method=f["method"], dataset=f["dataset"], setting=f["setting"], budget=f["budget"],
                     options=options, lm=lm_config(f), data_file=f["data"], n=f["limit"], seed=f["seed"],
                     threads=f["threads"], index=f["index"], program=program, futile_searches=f["futile_searches"])
