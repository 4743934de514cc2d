"""The grid file: one TOML file naming a grid of eval.run runs, read and checked into cells.

Nothing here runs anything or reads MLflow (eval/grid/runner.py does). The file (every key below
is checked before anything runs; an unknown key is an error):

    experiment = "paper-main"   # MLflow experiment of every cell (required)
    paper = true                # optional, default false: the grid reproduces the paper, so it refuses an
                                #   easier setting (eval/grid/paper.py): corpus cells need the full corpus
                                #   index, and each dataset's file n questions (else --allow-fewer)
    reference = "eir"           # variant the comparison uses as its reference (optional, default "eir")
    n = 1000                    # questions per cell: eval.run --limit (required)
    seed = 0                    # eval.run --seed (optional, default 0)
    datasets = ["hotpotqa", "2wiki", "musique"]   # eval.run --dataset values (required)
    lms = ["openai/gpt-4.1-mini", "anthropic/claude-haiku-4-5"]   # eval.run --lm values (required); an item
                                #   may instead be a table of the LM and eval.run flags for its cells only:
                                #   { lm = "anthropic/claude-haiku-4-5", decoding = "free" } (flags as in [run])
    budgets = [6]               # eval.run --budget values, H (optional, default [6])
    [data]                      # optional, per dataset: a file or directory for eval.run --data;
    hotpotqa = "hotpotqa/hotpot_dev_distractor.rpt_sample500_seed1.jsonl"  # relative: against $EIR_DATA_DIR
                                #   (the current directory when it is unset); must exist before a run starts
    [run]                       # optional: eval.run flags for every cell, named without `--`
    max_tokens = 256            #   (max_tokens or max-tokens; e.g. decoding, setting, threads, temperature;
                                #   a switch like trace takes true/false; not method or a method option)
    [[methods]]                 # one entry per condition (at least one)
    method = "eir"              #   required: an eval.run --method
    budgets = [4, 6, 8, 10]     #   optional: replaces the grid's budgets for this entry
    ablation = "repair"         #   any other eval.run flag (ablation, votes, verifier_temperature,
                                #   trials, setting, decoding, ...); overrides [run] and the LM's flags
    program = "runs/compiled/gepa.json"   # optional: a compiled program (eval.compile) for this method;
                                #   relative to the current directory; its variant is `eir compiled=<name>`
    [[families]]                # optional: Holm families for eval.compare --families (ΔF1 = first − second)
    name = "h_sweep"            #   required
    compare = [["eir H=4", "eir"], ["eir H=8", "eir"]]   # required: pairs of variants the grid runs
    per_column = false          #   optional: one Holm family per (dataset, LM) column
    per_pair = false            #   optional: one Holm family per pair, over the columns
    size = 4                    #   optional: the paper's comparisons per Holm family (missing ones count as p = 1)

A cell's flags are [run]'s, then its LM's (an `lms` table), then its [[methods]] entry's; a later
one wins. Flags the grid sets itself (experiment, limit, seed, lm, dataset, budget, data, resume)
may not appear in [run], an LM's table or [[methods]]; method, the method options (ablation,
votes, verifier_temperature, trials) and program only in [[methods]]; a program file must exist and
have been compiled for the entry's method and options. A method option the method does not take
(`votes` for eir, an ablation of a method without ablations), a corpus setting for a method or
dataset without one, a data file that is the HotpotQA acceptance holdout, an LM named twice, and
two entries giving the same cell are errors. Family and reference names are variants
(eval.runs.config.RunConfig.variant: `eir`, `eir H=8`, `eir no-list-feedback`, `ssr votes=3 T=0.7`,
`reflexion_oracle trials=5`, `eir_corpus`, `eir decoding=free` for a decoding other than the LM's
default, ...) and must be ones the grid runs.

Cells are methods × datasets × lms × budgets (the entry's, else the grid's), in that order (entry
order first, then dataset, LM, budget). A cell's key is the canonical JSON of its eval.run flags
without the experiment: method, dataset, lm, budget, limit and seed always; --data as the file
writes it; any other flag (from [run], the LM's table or the entry) when it differs from
eval.run's default (a method option by the value eval.run resolves, so `votes = 3` or
`verifier_temperature = 0.7` on a pool ssr entry is the same cell as neither); "corpus": "full"
for a paper grid's corpus cells (a demo run on the offline corpus is never one of them); never threads,
request_timeout, trace or out, which change how a run runs, not what it measures.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json
import os
import shlex
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

from eir_dspy.lm import LOCAL_DEFAULT
from eir_dspy.lm.local_models import MODELS as LOCAL_MODELS
from eval.data.corpus import FULL
from eval.data.loaders import DATASETS, HOLDOUT_FILES
from eval.grid.paper import corpus_problem
from eval.runs.config import RunConfig, compiled_program, options_for
from eval.runs.flags import flag_defaults, parse_args
from programs import names
from programs.registry import CORPUS_METHODS, METHODS

GRID_KEYS = ("experiment", "paper", "reference", "n", "seed", "datasets", "lms", "budgets", "data", "run", "methods",
             "families")
FAMILY_KEYS = ("name", "compare", "per_column", "per_pair", "size")  # as eval.compare.families reads them
GRID_FLAGS = ("experiment", "limit", "seed", "lm", "dataset", "budget", "data", "resume")  # set per cell by the grid
# The protocol's version in every cell key: a cell run before the protocol changed (issue 31: EIR's
# pool rule, the baselines' prompts, the corpus searches) is another cell, never reused as this one.
RULES = "issue31"
METHOD_OPTIONS = ("ablation", "invalid_updates", "votes", "verifier_temperature", "trials")  # taken only by some methods
PROGRAM = "program"  # a compiled program file: it fits one method, so only a [[methods]] entry names it
NOT_IN_KEY = ("threads", "request_timeout", "trace", "out")  # how a run runs, not what it measures
LIST_FLAGS = ("api_base",)  # eval.run flags taking several values
DEFAULTS = flag_defaults()  # every eval.run flag (argparse dest) and its default
FLAGS = tuple(k for k in DEFAULTS if k not in GRID_FLAGS)


class GridError(ValueError):
    """The grid file is not valid; the message names the file and the offending key or entry."""


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
    argv: tuple[str, ...]  # eval.run argv without --experiment and --data (the same run on the command line)
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
    methods: list[dict]  # {"method", "budgets" (None: the grid's), "own" (its flags), "flags" (by LM, merged)}
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

    def argv(self, cell: Cell) -> list[str]:
        """The cell as a `python -m eval.run` command line."""
        data = self.data_path(cell.dataset)
        return [*cell.argv, *(["--data", data] if data else []), "--experiment", self.experiment]

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


# ---------------------------------------------------------------- the file


def load_grid(path: str | os.PathLike) -> Grid:
    """Parse and validate a grid file; every cell is built (nothing runs, nothing is read from MLflow)."""
    path = Path(path)

    def fail(message: str) -> GridError:
        return GridError(f"{path}: {message}")

    raw = _read(path, fail)
    experiment = _string(raw["experiment"], "experiment", fail)
    reference = _string(raw.get("reference", names.EIR), "reference", fail)
    n = _positive_int(raw["n"], "n", fail)
    seed = raw.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise fail(f"seed must be an integer, got {seed!r}")
    paper = raw.get("paper", False)
    if not isinstance(paper, bool):
        raise fail(f"paper must be true or false, got {paper!r}")
    datasets = _list(raw["datasets"], "datasets", fail, lambda v, k: _choice(v, k, DATASETS, fail))
    lms = _lms(raw["lms"], fail)
    budgets = _list(raw.get("budgets", [DEFAULTS["budget"]]), "budgets", fail, lambda v, k: _positive_int(v, k, fail))
    data = _data(raw.get("data", {}), datasets, fail)
    run = _run(raw.get("run", {}), fail)
    methods = _methods(raw["methods"], run, lms, datasets, fail)
    grid = Grid(path=path, name=path.stem, experiment=experiment, reference=reference, n=n, seed=seed,
                datasets=datasets, lms=list(lms), lm_flags=lms, budgets=budgets, data=data, run=run, methods=methods,
                families=[], paper=paper)
    grid.cells = _cells(grid, fail)
    problem = corpus_problem(grid) if paper else None
    if problem:
        raise fail(problem)
    grid.families = _families(raw.get("families", []), grid, fail)
    variants = _grid_variants(grid)
    if variants is not None and reference not in variants:
        raise fail(f"reference {reference!r} is not a variant this grid runs; "
                   f"its variants: {', '.join(sorted(variants))}")
    return grid


def _read(path: Path, fail) -> dict:
    """The file's TOML, with only known top-level keys and every required one."""
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise fail("no such file") from None
    except tomllib.TOMLDecodeError as exc:
        raise fail(f"not valid TOML: {exc}") from None
    unknown = [k for k in raw if k not in GRID_KEYS]
    if unknown:
        raise fail(f"unknown key {unknown[0]!r} at the top level; known keys: {', '.join(GRID_KEYS)}")
    for required in ("experiment", "n", "datasets", "lms", "methods"):
        if required not in raw:
            raise fail(f"missing required key {required!r}")
    return raw


def _lms(value, fail) -> dict[str, dict]:
    """Each LM and its own flags, in file order; an item is a name or { lm = "name", flag = value, ... }."""
    if not isinstance(value, list) or not value:
        raise fail(f"lms must be a non-empty list, got {value!r}")
    lms: dict[str, dict] = {}
    for i, item in enumerate(value):
        name, flags = _lm(item, f"lms[{i}]", fail)
        if name in lms:
            raise fail(f"lms: {name!r} appears twice")
        lms[name] = flags
    return lms


def _lm(item, key: str, fail) -> tuple[str, dict]:
    if not isinstance(item, dict):
        return _string(item, key, fail), {}
    if "lm" not in item:
        raise fail(f"{key}: missing required key 'lm' (an LM table is {{ lm = \"...\", decoding = \"...\" }})")
    name = _string(item["lm"], f"{key}.lm", fail)
    label = f"{key} (lm = {name!r})"
    return name, _shared_flags({k: v for k, v in item.items() if k != "lm"}, label, label, fail)


def _data(data, datasets: list[str], fail) -> dict[str, str]:
    if not isinstance(data, dict):
        raise fail("[data] must be a table of dataset = \"file or directory\"")
    for dataset, value in data.items():
        if dataset not in DATASETS:
            raise fail(f"data.{dataset}: unknown dataset; known: {', '.join(DATASETS)}")
        if dataset not in datasets:
            raise fail(f"data.{dataset}: {dataset} is not in datasets {datasets}")
        _string(value, f"data.{dataset}", fail)
        if Path(value).name in HOLDOUT_FILES:
            raise fail(f"data.{dataset}: {value!r} is the acceptance holdout, which no grid may run; "
                       "use a dev file such as hotpotqa/hotpot_dev_distractor.rpt_sample500_seed1.jsonl")
    return dict(data)


def _run(run, fail) -> dict:
    if not isinstance(run, dict):
        raise fail("[run] must be a table of eval.run flags")
    return _shared_flags(run, "run", "[run]", fail)


def _shared_flags(table: dict, label: str, parse_label: str, fail) -> dict:
    """Flags for cells of several methods ([run], an LM's table): no method, no method option."""
    flags = _flags(table, label, fail)
    if "method" in flags:
        raise fail(f"{label}.method: methods are named by the [[methods]] entries")
    for option in METHOD_OPTIONS:
        if option in flags:
            raise fail(f"{label}.{option}: a method option; give it in the [[methods]] entries that take it")
    if PROGRAM in flags:
        raise fail(f"{label}.{PROGRAM}: a compiled program fits one method; give it in its [[methods]] entry")
    _parse(_flag_argv(flags), parse_label, fail)
    return flags


def _methods(methods, run: dict, lms: dict[str, dict], datasets: list[str], fail) -> list[dict]:
    if not isinstance(methods, list) or not methods or not all(isinstance(m, dict) for m in methods):
        raise fail("methods must be a non-empty array of tables ([[methods]] with method = \"...\")")
    return [_method(i, entry, run, lms, datasets, fail) for i, entry in enumerate(methods)]


def _method(i: int, entry: dict, run: dict, lms: dict[str, dict], datasets: list[str], fail) -> dict:
    """One [[methods]] entry: its method, budgets, own flags, and its flags with each LM
    ([run] < the LM's < the entry's), checked as eval.run checks them."""
    if "method" not in entry:
        raise fail(f"methods[{i}]: missing required key 'method'")
    method = _choice(entry["method"], f"methods[{i}].method", tuple(METHODS), fail)
    label = f"methods[{i}] (method = {method!r})"
    budgets = _list(entry["budgets"], f"{label}.budgets", fail,
                    lambda v, k: _positive_int(v, k, fail)) if "budgets" in entry else None
    own = _flags({k: v for k, v in entry.items() if k not in ("method", "budgets")}, label, fail)
    accepted = _accepted_options(method)
    for option in METHOD_OPTIONS:
        if option in own and option not in accepted:
            takes = f"its options: {', '.join(accepted)}" if accepted else "it takes none"
            raise fail(f"{label}: {option!r} is not an option of method {method} ({takes})")
    by_lm = {}
    for lm, lm_flags in lms.items():
        by_lm[lm] = flags = {**run, **lm_flags, **own}
        _check_condition(method, flags, datasets, label + (f" with lm {lm!r}" if lm_flags else ""), fail)
    return {"method": method, "budgets": budgets, "own": own, "flags": by_lm}


def _check_condition(method: str, flags: dict, datasets: list[str], label: str, fail) -> None:
    setting = flags.get("setting", DEFAULTS["setting"])
    if setting == "corpus" and method not in CORPUS_METHODS:
        raise fail(f"{label}: method {method} has no corpus setting (corpus methods: {', '.join(CORPUS_METHODS)})")
    if setting == "corpus" and any(d != "hotpotqa" for d in datasets):
        raise fail(f"{label}: the corpus setting is HotpotQA only; datasets are {datasets}")
    args = _parse(["--method", method, *_flag_argv(flags)], label, fail)
    try:  # the method's options, and a program file that fits them
        RunConfig.from_args(args)
    except SystemExit as exc:
        raise fail(f"{label}: {str(exc.code).removeprefix('error: ')}") from None


# ---------------------------------------------------------------- cells


def _cells(grid: Grid, fail) -> list[Cell]:
    cells: list[Cell] = []
    seen: dict[str, Cell] = {}
    for i, entry in enumerate(grid.methods):
        for dataset in grid.datasets:
            for lm in grid.lms:
                for budget in entry["budgets"] or grid.budgets:
                    cell = _cell(grid, len(cells) + 1, i, entry["method"], entry["flags"][lm], dataset, lm, budget)
                    if cell.key in seen:
                        raise fail(f"methods[{i}] and methods[{seen[cell.key].entry}] give the same cell "
                                   f"({cell.title}); remove one")
                    seen[cell.key] = cell
                    cells.append(cell)
    return cells


def _cell(grid: Grid, number: int, entry_index: int, method: str, flags: dict, dataset: str, lm: str,
          budget: int) -> Cell:
    argv = ["--method", method, "--dataset", dataset, "--lm", lm, "--budget", str(budget), "--limit", str(grid.n),
            "--seed", str(grid.seed), *_flag_argv(flags)]
    args = parse_args(argv)  # validated already (per entry and LM); the grid's own values are well-typed
    config = RunConfig.from_args(args)
    variants, certain = _variants(config)
    return Cell(number=number, entry=entry_index, method=method, dataset=dataset, lm=lm, budget=budget, n=grid.n,
                flags=dict(flags), data=grid.data.get(dataset), argv=tuple(argv), config=config,
                key=_key(grid, method, flags, args, config.options), variants=variants, certain=certain,
                calls_per_question=METHODS[method].max_calls(budget, config.setting, **config.options))


def _key(grid: Grid, method: str, flags: dict, args: argparse.Namespace, options) -> str:
    """The cell's key: what the run measures, as canonical JSON (see the module docstring)."""
    key = {"method": method, "dataset": args.dataset, "lm": args.lm, "budget": args.budget, "limit": grid.n,
           "seed": grid.seed, "rules": RULES}
    if grid.data.get(args.dataset) is not None:
        key["data"] = grid.data[args.dataset]
    defaults = options_for(method, args.setting)
    for name in flags:
        if name in METHOD_OPTIONS:
            if options[name] != defaults[name]:  # validated: the method takes it
                key[name] = options[name]
        elif name not in NOT_IN_KEY and getattr(args, name) != DEFAULTS[name]:
            key[name] = getattr(args, name)
    if grid.paper and args.setting == "corpus":  # load_grid refuses any other corpus: a demo run is never this cell
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


# ---------------------------------------------------------------- families


def _families(families, grid: Grid, fail) -> list[dict]:
    if not isinstance(families, list) or not all(isinstance(f, dict) for f in families):
        raise fail("families must be an array of tables ([[families]] with name and compare)")
    variants = _grid_variants(grid)
    names = set()
    for i, family in enumerate(families):
        name = _family_name(i, family, fail)
        label = f"families[{i}] ({name!r})"
        if name in names:
            raise fail(f"{label}: a second family with this name")
        names.add(name)
        _family_pairs(family["compare"], label, variants, fail)
        for key in ("per_column", "per_pair"):
            if key in family and not isinstance(family[key], bool):
                raise fail(f"{label}.{key} must be true or false")
        if family.get("per_column") and family.get("per_pair"):
            raise fail(f"{label}: per_column and per_pair together leave one comparison per Holm family")
        size = family.get("size")
        if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 1):
            raise fail(f"{label}.size must be a positive integer")
    return families


def _family_name(i: int, family: dict, fail) -> str:
    label = f"families[{i}]"
    unknown = [k for k in family if k not in FAMILY_KEYS]
    if unknown:
        raise fail(f"{label}: unknown key {unknown[0]!r}; known keys: {', '.join(FAMILY_KEYS)}")
    for required in ("name", "compare"):
        if required not in family:
            raise fail(f"{label}: missing required key {required!r}")
    return _string(family["name"], f"{label}.name", fail)


def _family_pairs(pairs, label: str, variants: set[str] | None, fail) -> None:
    if not isinstance(pairs, list) or not pairs:
        raise fail(f"{label}.compare must be a non-empty list of [first, second] variant pairs")
    for j, pair in enumerate(pairs):
        if (not isinstance(pair, list) or len(pair) != 2 or not all(isinstance(v, str) and v for v in pair)
                or pair[0] == pair[1]):
            raise fail(f"{label}.compare[{j}]: expected [\"first variant\", \"second variant\"] (two different "
                       f"names), got {pair!r}")
        for v in pair:
            if variants is not None and v not in variants:
                raise fail(f"{label}.compare[{j}]: {v!r} is not a variant this grid runs; its variants: "
                           f"{', '.join(sorted(variants))}")


# ---------------------------------------------------------------- flags and values


def _flags(table: dict, label: str, fail) -> dict:
    """eval.run flags by argparse dest (`max-tokens` and `max_tokens` both name --max-tokens)."""
    out = {}
    for key, value in table.items():
        name = key.replace("-", "_")
        if name in GRID_FLAGS:
            instead = {"limit": "n", "lm": "lms", "dataset": "datasets", "budget": "budgets (per entry or grid)",
                       "data": "[data]", "seed": "seed", "experiment": "experiment"}.get(name)
            raise fail(f"{label}: {key!r} is set by the grid" + (f"; use the grid's `{instead}`" if instead else ""))
        if name not in DEFAULTS:
            raise fail(f"{label}: unknown key {key!r}; eval.run flags: {', '.join(FLAGS)}")
        if name in out:
            raise fail(f"{label}: {key!r} given twice")
        if isinstance(value, (dict,)) or (isinstance(value, list) and name not in LIST_FLAGS):
            raise fail(f"{label}: {key!r} takes one value, got {value!r}")
        if isinstance(value, bool) != isinstance(DEFAULTS[name], bool):
            raise fail(f"{label}: {key!r} " + ("is a switch: true or false" if isinstance(DEFAULTS[name], bool)
                                                else f"takes a value, not {value!r}"))
        out[name] = value
    return out


def _flag_argv(flags: dict) -> list[str]:
    argv = []
    for name, value in flags.items():
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            argv += [flag] if value else []
        elif isinstance(value, list):
            argv += [flag, *map(str, value)]
        else:
            argv += [flag, str(value)]
    return argv


def _parse(argv: list[str], label: str, fail) -> argparse.Namespace:
    """eval.run's own parser checks types and choices; its error becomes the grid's, naming the entry."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            return parse_args(argv)
    except SystemExit:
        lines = [line for line in err.getvalue().splitlines() if line.strip()]
        message = lines[-1].split("error: ", 1)[-1] if lines else f"invalid flags {argv}"
        raise fail(f"{label}: {message}") from None


def _accepted_options(method: str) -> list[str]:
    accepted = METHODS[method].options.names()
    return [o for o in METHOD_OPTIONS if o in accepted]


def _string(value, key: str, fail) -> str:
    if not isinstance(value, str) or not value.strip():
        raise fail(f"{key} must be a non-empty string, got {value!r}")
    return value


def _positive_int(value, key: str, fail) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise fail(f"{key} must be a positive integer, got {value!r}")
    return value


def _choice(value, key: str, choices: tuple[str, ...], fail) -> str:
    if value not in choices:
        raise fail(f"{key}: unknown value {value!r}; choose one of {', '.join(choices)}")
    return value


def _list(value, key: str, fail, check) -> list:
    if not isinstance(value, list) or not value:
        raise fail(f"{key} must be a non-empty list, got {value!r}")
    items = [check(v, f"{key}[{i}]") for i, v in enumerate(value)]
    duplicates = sorted({str(v) for v in items if items.count(v) > 1})
    if duplicates:
        raise fail(f"{key}: {duplicates[0]!r} appears twice")
    return items


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
