"""The grid file: one TOML file naming a grid of eval.run runs, read and checked into cells.

Nothing here runs anything or reads MLflow (eval/grid/runner.py does). The file's keys, the rules a
cell's flags follow, the errors, and what a cell's key holds: docs/experiments.md, "Grids".
"""

from __future__ import annotations

import functools
import json
import os
import shlex
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field

from eir_dspy.lm import LOCAL_DEFAULT
from eir_dspy.lm.local_models import MODELS as LOCAL_MODELS
from eval.data.corpus import FULL
from eval.data.loaders import DATASETS, HOLDOUT_FILES
from eval.grid.paper import corpus_problem
from eval.runs.config import RunConfig, compiled_program, options_for
from eval.runs.errors import RunError
from eval.runs.flags import flag_defaults, run_config, run_flags
from programs import names
from programs.options import positive_int
from programs.registry import METHODS, method_options

GRID_FLAGS = ("experiment", "limit", "seed", "lm", "dataset", "budget", "data", "resume")  # set per cell by the grid
# The protocol's version in every cell key: a cell run before the protocol changed (issue 31: EIR's
# pool rule, the baselines' prompts, the corpus searches; issue 42: the pool's submit-only last turn
# for Direct, SSR and Reflexion, SSR's verify and refine told the turns left) is another cell, never
# reused as this one.
RULES = "issue42"
PROGRAM = "program"  # a compiled program file: it fits one method, so only a [[methods]] entry names it
NOT_IN_KEY = ("threads", "request_timeout", "trace", "out")  # how a run runs, not what it measures
INSTEAD = {"limit": "n", "lm": "lms", "dataset": "datasets", "budget": "budgets (per entry or grid)", "data": "[data]",
           "seed": "seed", "experiment": "experiment"}  # what the grid names a flag it sets


class GridError(RunError):
    """The grid file is not valid; the message names the file and the offending key or entry."""


# ---------------------------------------------------------------- the file's model

def _text(value: str) -> str:
    if not value.strip():
        raise ValueError("must be a non-empty string")
    return value


Text = Annotated[str, pydantic.AfterValidator(_text)]
Positive = Annotated[int, pydantic.AfterValidator(functools.partial(positive_int, None))]


def _unique(items: list) -> list:
    repeated = sorted({str(v) for v in items if items.count(v) > 1})
    if repeated:
        raise ValueError(f"{repeated[0]!r} appears twice")
    return items


def _registered(method: str) -> str:
    """A method of the registry as it is now (a method registered after import runs too)."""
    if method not in METHODS:
        raise ValueError(f"unknown value {method!r}; choose one of {', '.join(map(repr, METHODS))}")
    return method


def _entries(value) -> Any:
    """`lms` items: a plain name is an LM with no flags of its own."""
    return [{"lm": v} if isinstance(v, str) else v for v in value] if isinstance(value, list) else value


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class LMEntry(_Table):
    """An `lms` item: the LM, and eval.run flags for its cells only (the extra keys)."""
    model_config = ConfigDict(extra="allow", strict=True)
    lm: Text


class MethodEntry(_Table):
    """A [[methods]] entry: the method, its budgets (None: the grid's), and its eval.run flags (the extra keys)."""
    model_config = ConfigDict(extra="allow", strict=True)
    method: Annotated[str, pydantic.AfterValidator(_registered)]
    budgets: Annotated[list[Positive], Field(min_length=1), pydantic.AfterValidator(_unique)] | None = None


class Family(_Table):
    """A [[families]] table, as eval.compare.families reads it."""
    name: Text
    compare: Annotated[list[Annotated[list[Text], Field(min_length=2, max_length=2)]], Field(min_length=1)]
    per_column: bool = False
    per_pair: bool = False
    size: Positive | None = None


class GridFile(_Table):
    """The file's top level. Its defaults are eval.run's (seed, budgets)."""
    experiment: Text
    paper: bool = False
    reference: Text = names.EIR
    n: Positive
    seed: int = flag_defaults()["seed"]
    datasets: Annotated[list[Literal[DATASETS]], Field(min_length=1), pydantic.AfterValidator(_unique)]
    lms: Annotated[list[LMEntry], pydantic.BeforeValidator(_entries), Field(min_length=1)]
    budgets: Annotated[list[Positive], Field(min_length=1), pydantic.AfterValidator(_unique)] = [flag_defaults()["budget"]]
    data: dict[Literal[DATASETS], Text] = {}
    run: dict[str, Any] = {}
    methods: Annotated[list[MethodEntry], Field(min_length=1)]
    families: list[Family] = []


# ---------------------------------------------------------------- the grid


@dataclass(frozen=True)
class Cell:
    number: int  # 1-based, in grid order
    entry: int  # index of its [[methods]] entry
    method: str
    dataset: str
    lm: str
    budget: int
    n: int
    flags: dict  # [run]'s, the LM's and the method entry's flags, merged (in that order, later wins), as eval.run dests
    data: str | None  # --data as the file writes it
    config: RunConfig  # the run's condition, as eval.run's flags make it (its data file: Grid.run_config)
    key: str
    variants: tuple[str, ...]  # the variant names its MLflow runs get (Reflexion: two)
    certain: bool  # False when a variant depends on a default decoding we could not determine offline
    calls_per_question: int  # upper bound (programs.registry.Method.max_calls)

    @property
    def title(self) -> str:
        return f"{self.variants[0]} / {self.dataset} / {self.lm} / H={self.budget}"


@dataclass
class Grid:
    path: Path
    name: str
    experiment: str
    reference: str
    n: int
    seed: int
    datasets: list[str]
    lms: list[str]
    lm_flags: dict[str, dict]  # each LM's own eval.run flags (an `lms` table; {} for a plain name)
    budgets: list[int]
    data: dict[str, str]
    run: dict
    families: list[dict]
    cells: list[Cell] = field(default_factory=list)
    paper: bool = False  # reproduces the paper: eval/grid/paper.py says what it must have

    def data_path(self, dataset: str) -> str | None:
        """--data for `dataset`: the file's value, a relative one resolved against $EIR_DATA_DIR."""
        value = self.data.get(dataset)
        if value is None:
            return None
        path = Path(value).expanduser()
        if not path.is_absolute() and os.environ.get("EIR_DATA_DIR"):
            path = Path(os.environ["EIR_DATA_DIR"]).expanduser() / path
        return str(path)

    def run_config(self, cell: Cell) -> RunConfig:
        """The config eval.run's `run` starts the cell with: its data path resolved now (against
        $EIR_DATA_DIR), and its program file read now, as `python -m eval.run` would at this moment."""
        config = replace(cell.config, data_file=self.data_path(cell.dataset))
        if config.program:
            config = replace(config, program=compiled_program(cell.flags[PROGRAM], config.method, config.options))
        return config

    @property
    def command(self) -> str:
        return f"python -m eval.grid {shlex.quote(str(self.path))}"


def load_grid(path: str | os.PathLike) -> Grid:
    """Parse and validate a grid file; every cell is built (nothing runs, nothing is read from MLflow).
    A GridError names the file, the entry and the key."""
    path = Path(path)
    try:
        return _load(path)
    except GridError:
        raise
    except RunError as exc:
        raise GridError(f"{path}: {exc}") from None


def _load(path: Path) -> Grid:
    try:
        raw = tomllib.loads(path.read_text())
    except OSError as exc:
        raise RunError(f"cannot read the grid file: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise RunError(f"not valid TOML: {exc}") from None
    try:
        spec = GridFile.model_validate(raw)
    except pydantic.ValidationError as exc:
        raise RunError(validation_message(exc)) from None
    for dataset, value in spec.data.items():
        if dataset not in spec.datasets:
            raise RunError(f"data.{dataset}: {dataset} is not in datasets {spec.datasets}")
        if Path(value).name in HOLDOUT_FILES:
            raise RunError(f"data.{dataset}: {value!r} is the acceptance holdout, which no grid may run; "
                           "use a dev file such as hotpotqa/hotpot_dev_distractor.rpt_sample500_seed1.jsonl")
    _check_unique("lms", [e.lm for e in spec.lms])
    run = _shared_flags(spec.run, "run")
    lm_flags = {e.lm: _shared_flags(e.model_extra, f"lms[{i}] (lm = {e.lm!r})") for i, e in enumerate(spec.lms)}
    grid = Grid(path=path, name=path.stem, experiment=spec.experiment, reference=spec.reference, n=spec.n,
                seed=spec.seed, datasets=list(spec.datasets), lms=list(lm_flags), lm_flags=lm_flags,
                budgets=spec.budgets, data=dict(spec.data), run=run, families=[], paper=spec.paper)
    grid.cells = _cells(grid, spec.methods)
    problem = corpus_problem(grid) if spec.paper else None
    if problem:
        raise RunError(problem)
    variants = _grid_variants(grid)
    _check_families(spec.families, variants)
    grid.families = raw.get("families", [])
    if variants is not None and spec.reference not in variants:
        raise RunError(f"reference {spec.reference!r} is not a variant this grid runs; "
                       f"its variants: {', '.join(sorted(variants))}")
    return grid


def _check_unique(key: str, items: list) -> None:
    try:
        _unique(items)
    except ValueError as exc:
        raise RunError(f"{key}: {exc}") from None


# ---------------------------------------------------------------- flags


def _flags(table: dict, label: str) -> dict:
    """A table's eval.run flags by argparse dest (`max-tokens` and `max_tokens` both name --max-tokens),
    as the file writes them; each value is checked as the command line checks its flag."""
    out, defaults = {}, flag_defaults()  # every eval.run flag (argparse dest) and its default: the command line's
    for key, value in table.items():
        name = key.replace("-", "_")
        if name in GRID_FLAGS:
            instead = f"; use the grid's `{INSTEAD[name]}`" if name in INSTEAD else ""
            raise RunError(f"{label}: {key!r} is set by the grid{instead}")
        if name not in defaults:
            flags = ", ".join(k for k in defaults if k not in GRID_FLAGS)
            raise RunError(f"{label}: unknown key {key!r}; eval.run flags: {flags}")
        if name in out:
            raise RunError(f"{label}: {key!r} given twice")
        out[name] = value
    try:
        run_flags(out)
    except RunError as exc:
        raise RunError(f"{label}: {exc}") from None
    return out


def _shared_flags(table: dict, label: str) -> dict:
    """Flags for cells of several methods ([run], an LM's table): no method, no method option, no program."""
    flags = _flags(table, label)
    if "method" in flags:
        raise RunError(f"{label}.method: methods are named by the [[methods]] entries")
    for option in method_options():  # taken only by some methods
        if option in flags:
            raise RunError(f"{label}.{option}: a method option; give it in the [[methods]] entries that take it")
    if PROGRAM in flags:
        raise RunError(f"{label}.{PROGRAM}: a compiled program fits one method; give it in its [[methods]] entry")
    return flags


# ---------------------------------------------------------------- cells


def _cells(grid: Grid, entries: list[MethodEntry]) -> list[Cell]:
    """methods × datasets × lms × budgets, in that order; a cell's flags are [run]'s < its LM's < its entry's."""
    cells: list[Cell] = []
    seen: dict[str, Cell] = {}
    for i, entry in enumerate(entries):
        label = f"methods[{i}] (method = {entry.method!r})"
        own = _flags(entry.model_extra, label)  # an option the method does not take: the cell's config says so
        for dataset in grid.datasets:
            for lm in grid.lms:
                flags = {**grid.run, **grid.lm_flags[lm], **own}
                where = label + (f" with lm {lm!r}" if grid.lm_flags[lm] else "")
                for budget in entry.budgets or grid.budgets:
                    cell = _cell(grid, len(cells) + 1, i, entry.method, flags, dataset, lm, budget, where)
                    if cell.key in seen:
                        raise RunError(f"methods[{i}] and methods[{seen[cell.key].entry}] give the same cell "
                                       f"({cell.title}); remove one")
                    seen[cell.key] = cell
                    cells.append(cell)
    return cells


def _cell(grid: Grid, number: int, entry: int, method: str, flags: dict, dataset: str, lm: str, budget: int,
          label: str) -> Cell:
    try:
        given = run_flags({**flags, "method": method, "dataset": dataset, "lm": lm, "budget": budget,
                           "limit": grid.n, "seed": grid.seed})
        config = run_config(given)
    except RunError as exc:
        raise RunError(f"{label}: {exc}") from None
    variants, certain = _variants(config)
    return Cell(number=number, entry=entry, method=method, dataset=dataset, lm=lm, budget=budget, n=grid.n,
                flags=dict(flags), data=grid.data.get(dataset), config=config,
                key=_key(grid, flags, given.model_dump(), config), variants=variants, certain=certain,
                calls_per_question=METHODS[method].max_calls(budget, config.setting, **config.options))


def _key(grid: Grid, flags: dict, given: dict, config: RunConfig) -> str:
    """The cell's key: what the run measures, as canonical JSON (docs/experiments.md, "Grids")."""
    key = {name: given[name] for name in ("method", "dataset", "lm", "budget", "limit", "seed")} | {"rules": RULES}
    if grid.data.get(config.dataset) is not None:
        key["data"] = grid.data[config.dataset]
    defaults, flag_default = options_for(config.method, config.setting), flag_defaults()
    for name in flags:
        if name in defaults:  # a method option
            if config.options[name] != defaults[name]:  # validated: the method takes it
                key[name] = config.options[name]
        elif name not in NOT_IN_KEY and given[name] != flag_default[name]:
            key[name] = given[name]
    if grid.paper and config.setting == "corpus":  # load_grid refuses any other corpus: a demo run is never this cell
        key["corpus"] = FULL
    return json.dumps(key, sort_keys=True, separators=(",", ":"))


def _variants(config: RunConfig) -> tuple[tuple[str, ...], bool]:
    """The variant names eval.run gives this cell's runs (RunConfig.variant once the run has labelled it)."""
    # eval.run labels a run with its decoding when it differs from the LM's default; with no
    # --decoding the run takes the default, so no label. A default we cannot tell offline counts as
    # different (labelled), and the name is marked uncertain.
    decoding = config.lm.decoding
    default = _default_decoding(config.lm.model, config.lm.path) if decoding is not None else None
    certain = decoding is None or default is not None
    config = replace(config, default_decoding=default)
    # One run logs each of its method's labels (Reflexion: the oracle-stopped result and trial 1).
    return tuple(config.with_label(label).variant for label in METHODS[config.method].labels), certain


@functools.cache
def _default_decoding(lm: str, lm_path: str | None) -> str | None:
    """eval.run's default decoding for this LM (eir_dspy.lm.default_decoding), or None when unknown offline."""
    if lm_path or lm in LOCAL_MODELS:
        return LOCAL_DEFAULT
    try:
        import dspy

        from eir_dspy.lm import default_decoding

        return default_decoding(dspy.LM(lm, cache=False), False)
    except Exception:
        return None


def _grid_variants(grid: Grid) -> set[str] | None:
    """Every variant the grid's runs get; None when one of them cannot be named offline."""
    if not all(c.certain for c in grid.cells):
        return None
    return {v for c in grid.cells for v in c.variants}


def _check_families(families: list[Family], variants: set[str] | None) -> None:
    """What the model cannot check alone: names once each, pairs of two variants the grid runs."""
    seen = set()
    for i, family in enumerate(families):
        label = f"families[{i}] ({family.name!r})"
        if family.name in seen:
            raise RunError(f"{label}: a second family with this name")
        seen.add(family.name)
        for j, pair in enumerate(family.compare):
            if pair[0] == pair[1]:
                raise RunError(f"{label}.compare[{j}]: expected two different variants, got {pair!r}")
            for v in pair:
                if variants is not None and v not in variants:
                    raise RunError(f"{label}.compare[{j}]: {v!r} is not a variant this grid runs; its variants: "
                                   f"{', '.join(sorted(variants))}")
        if family.per_column and family.per_pair:
            raise RunError(f"{label}: per_column and per_pair together leave one comparison per Holm family")


def check_data(grid: Grid) -> list[str]:
    """Problems with the grid's data files (a missing file), one line each."""
    problems = []
    for dataset in grid.datasets:
        resolved = grid.data_path(dataset)
        if resolved is not None and not Path(resolved).exists():
            hint = "" if os.environ.get("EIR_DATA_DIR") or Path(grid.data[dataset]).is_absolute() else \
                " (relative paths resolve against $EIR_DATA_DIR, which is not set)"
            problems.append(f"{grid.path}: data.{dataset}: {resolved} does not exist{hint}")
    return problems


# ---------------------------------------------------------------- errors


def validation_message(exc: pydantic.ValidationError) -> str:
    """A pydantic error as one line naming the key (its path, e.g. `methods[1].budgets[0]`): the first error."""
    error = exc.errors()[0]
    loc, value, kind = [p for p in error["loc"] if p != "[key]"], error.get("input"), error["type"]
    where = _key_path(loc)
    if kind in ("missing", "extra_forbidden"):
        parent = _key_path(loc[:-1])
        what = "missing required key" if kind == "missing" else "unknown key"
        return f"{parent}: {what} {loc[-1]!r}" if parent else f"{what} {loc[-1]!r}" + (
            " at the top level" if kind == "extra_forbidden" else "")
    message = error["msg"].removeprefix("Value error, ")
    if message.startswith(("argument ", "'")):  # an eval.run flag's own check (eval/runs/flags.py): it names the flag
        return message
    if message.startswith("unknown value"):
        return f"{where}: {message}"
    said = {"bool_type": "must be true or false", "int_type": "must be an integer", "string_type": "must be a string",
            "list_type": "must be a list", "dict_type": "must be a table"
            }.get(kind)
    if kind == "too_short" and error["ctx"]["min_length"] == 1:
        said = "must be a non-empty list"
    if said:
        return f"{where} {said}, got {value!r}"
    if kind == "literal_error":
        return f"{where}: unknown value {value!r}; choose one of {error['ctx']['expected']}"
    return f"{where} {message}" if message.startswith("must") else f"{where}: {message}, got {value!r}"


def _key_path(loc: list) -> str:
    """A pydantic location as the grid file names it: `methods[1].budgets[0]`."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
