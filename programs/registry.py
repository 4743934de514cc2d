"""The methods: one entry each, and all the harness (eval/) knows of a method.

An entry names the method's program (a dspy.Module), its options (a dataclass, programs/options.py),
the settings it runs in, its acceptance rule, the labels its results are logged under, whether it
needs the oracle, and its call bound. `Method.run` runs it on one question and returns the typed
MethodResult (programs/result.py) the harness reads (eval.runs.execute calls the program itself, with
`inputs` and `result`, so a failed question's traceback starts at the program).

Adding a method is one program file plus one entry below:
- the program file holds the program, a programs.method_program.MethodProgram, whose
  `forward(question, paragraphs=(), corpus=None)` (plus `oracle=` when it needs one) returns a
  MethodResult under its own adapter, and whose class attribute `acceptance` is its parse rule
  (eir_dspy/acceptance.py: the adapter it builds applies it); its options dataclass (a subclass of
  programs.options.Options, checked as it is made; the program takes its fields as keyword
  arguments, `budget` unless `budgeted=False`, and the run's `context`, programs/run_context.py); `max_calls(budget,
  setting, options)`, its call bound read off its code; and `max_tokens(budget, setting, options, pool,
  cap, prompts)`, its token bound read off its code (programs/token_bound.py);
- the entry, added to METHODS.
eval.run's --method and option flags, eval.compile, the grid (its keys and --dry-run bounds), the
health checks and the MLflow runs of each label follow from the entry and the options dataclass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import Field, dataclass

import dspy

from eir_dspy.corpus_index import CorpusIndex
from eir_dspy.paragraphs import Paragraph
from programs import direct, eir, full_pool, names, reflexion, ssr
from programs.method_program import MethodProgram
from programs.options import Options, positive_int
from programs.result import MethodResult
from programs.run_context import RunContext
from programs.setting import CORPUS, POOL, SETTINGS
from programs.token_bound import BOUNDED_SETTINGS, PoolTokens, Prompts, TokenBound

DEFAULT_VOTES = ssr.DEFAULT_VOTES
DEFAULT_TRIALS = reflexion.DEFAULT_TRIALS


@dataclass(frozen=True)
class Method:
    name: str  # the --method value, and the `method` of its trajectories (programs/names.py)
    program: type[MethodProgram]
    options: type[Options]
    max_calls_rule: Callable[[int, str, Options], int]  # the program file's `max_calls`
    # the program file's `max_tokens`: (budget, setting, options, pool, cap, prompts) -> TokenBound, in BOUNDED_SETTINGS
    max_tokens_rule: Callable[[int, str, Options, PoolTokens, int, Prompts], TokenBound]
    settings: tuple[str, ...] = SETTINGS
    budgeted: bool = True  # the program takes the read budget H (a run logs H either way)
    needs_oracle: bool = False  # `run` passes the oracle (a yes/no on an answer) to the program
    label: str | None = None  # what its main result is logged under; None: its name
    variants: tuple[str, ...] = ()  # the labels of the further results one run reports (MethodResult.variants)
    # What the harness's health checks (eval/scoring/health.py) look for in its runs:
    reads: bool = True  # it reads paragraphs turn by turn (Full Pool is given them all): reads, title fallbacks
    # Its answer is the one its episode submits (4.2, H.2), so an episode without a submit is a failure;
    # EIR and Full Pool answer in a final call that always runs.
    submits: bool = False
    keeps_lists: bool = False  # it keeps EIR's lists: list updates discarded as invalid

    @property
    def acceptance(self) -> str:
        """Its parse rule (eir_dspy/acceptance.py), as its program declares it for the adapter."""
        return self.program.acceptance

    @property
    def main_label(self) -> str:
        return self.label or self.name

    @property
    def labels(self) -> tuple[str, ...]:
        """Every label one run's results are logged under: the main result's first."""
        return (self.main_label, *self.variants)

    def make_options(self, options: Mapping | Options | None = None, setting: str | None = None) -> Options:
        """`options` (by name, or made already) as this method's Options; with `setting`, resolved for it.
        An option it does not take, or a bad value, is an OptionsError naming it."""
        made = options if isinstance(options, self.options) else self.options.of(self.name, dict(options or {}))
        return made.resolved(setting) if setting is not None else made

    def build(self, budget: int, options: Mapping | Options | None = None,
              context: RunContext | None = None) -> MethodProgram:
        """The method's program with these options, reading at most `budget`, in the run's `context`
        (its decoding and futile-search rule; None: `RunContext()`). An option not given, or left
        unresolved (None), takes the program's own default."""
        kwargs = {k: v for k, v in self.make_options(options).as_dict().items() if v is not None}
        if self.budgeted:
            kwargs["budget"] = budget
        return self.program(**kwargs, context=context)

    def inputs(self, *, paragraphs: tuple[Paragraph, ...] = (), corpus: CorpusIndex | None = None,
               oracle: Callable[[str], bool] | None = None) -> dict:
        """What the program's forward takes besides the question: the pool of `paragraphs`, or `corpus`
        to search (the question's pool is then hidden); `oracle` only for a method that needs one."""
        if corpus is not None and CORPUS not in self.settings:
            raise ValueError(f"method {self.name} has no corpus setting")
        inputs = {"corpus": corpus} if corpus is not None else {"paragraphs": paragraphs}
        if self.needs_oracle:
            inputs["oracle"] = oracle
        return inputs

    def result(self, output) -> MethodResult:
        """What the program returned, checked to be the MethodResult the harness reads."""
        if not isinstance(output, MethodResult):
            raise TypeError(f"method {self.name}'s program returned a {type(output).__name__}, not a MethodResult")
        return output

    def run(self, program: dspy.Module, question: str, **inputs) -> MethodResult:
        """`program` (this method's) on one question; `inputs` as `inputs` takes them."""
        return self.result(program(question=question, **self.inputs(**inputs)))

    def max_calls(self, budget: int, setting: str = POOL, **options) -> int:
        """At most this many LM calls per question at read budget H = `budget` in `setting` (an UPPER
        BOUND read off the program's code: its `max_calls`).

        Counted as the ledger counts them (eir_dspy/accounting/): one call per `lm_call`. Every method
        decodes through DecodingAdapter, a dspy.JSONAdapter, which never falls back to a second request
        on a parse failure (an unusable output is handled by the program, not retried), so one
        `lm_call` is one model request; a provider's own retries happen inside that one call. Real
        questions usually cost less: an episode stops at the first accepted submit, SSR refines only
        some turns, Reflexion stops at the first trial its oracle accepts. `eval.grid --dry-run`
        multiplies this bound by the questions of a cell."""
        positive_int("budget", budget)
        if setting not in SETTINGS:
            raise ValueError(f"unknown setting {setting!r}; choose one of {', '.join(SETTINGS)}")
        if setting not in self.settings:
            raise ValueError(f"method {self.name} has no {setting} setting")
        return self.max_calls_rule(budget, setting, self.make_options(options, setting))

    def max_tokens(self, budget: int, pool: PoolTokens, cap: int, setting: str = POOL, prompts: Prompts | None = None,
                   **options) -> TokenBound | None:
        """At most this many prompt and completion tokens (o200k_base, eir_dspy/accounting/tokens.py) for
        one question whose texts are `pool`, at read budget H = `budget`, each reply at most `cap` tokens
        (the run's --max-tokens): an UPPER BOUND read off the program's code (its `max_tokens`; how:
        programs/token_bound.py). `prompts`: the fixed parts of the program's prompts as the run renders
        them (a compiled program's demos included; eval.grid --dry-run makes one per cell); None: the
        program built with these options, uncompiled. None in a setting the method has no bound for (the
        corpus). Real questions usually cost far less: outputs are shorter than the cap and episodes stop early."""
        return self.token_bound(budget, cap, setting, prompts, **options)(pool)

    def token_bound(self, budget: int, cap: int, setting: str = POOL, prompts: Prompts | None = None,
                    **options) -> Callable[[PoolTokens], TokenBound | None]:
        """`max_tokens` with everything but the question fixed (checked once): a function of its PoolTokens."""
        positive_int("cap", cap)
        self.max_calls(budget, setting, **options)  # checks the budget, the setting and the options
        if setting not in BOUNDED_SETTINGS:
            return lambda pool: None
        made = self.make_options(options, setting)
        prompts = prompts or Prompts(self.build(budget, made))
        return lambda pool: self.max_tokens_rule(budget, setting, made, pool, cap, prompts)


METHODS: dict[str, Method] = {m.name: m for m in (
    Method(names.EIR, eir.EIR, eir.EIROptions, eir.max_calls, eir.max_tokens, keeps_lists=True),
    Method(names.DIRECT, direct.Direct, Options, direct.max_calls, direct.max_tokens, submits=True),
    # Full Pool has no pool to give in the corpus setting; it reads nothing turn by turn.
    Method(names.FULL_POOL, full_pool.FullPool, Options, full_pool.max_calls, full_pool.max_tokens,
           settings=("pool",), budgeted=False, reads=False),
    Method(names.SSR, ssr.SSR, ssr.SSROptions, ssr.max_calls, ssr.max_tokens, submits=True),
    # One run, two results: the trial the oracle stopped at, and trial 1 alone.
    Method(names.REFLEXION, reflexion.Reflexion, reflexion.ReflexionOptions, reflexion.max_calls, reflexion.max_tokens,
           needs_oracle=True, submits=True,
           label=names.REFLEXION_ORACLE, variants=(names.REFLEXION_FIRST,)),
)}
CORPUS_METHODS = tuple(name for name, m in METHODS.items() if CORPUS in m.settings)


@dataclass(frozen=True)
class MethodOption:
    """An option some methods take, as their Options dataclasses declare it (programs/options.py)."""
    field: Field  # the first declaring method's field: its default, kind or choices, help
    methods: tuple[str, ...]  # the methods that take it

    @property
    def name(self) -> str:
        return self.field.name


def method_options() -> dict[str, MethodOption]:
    """Every option some method takes, by name, in registry then declaration order; read from METHODS
    each time (eval.run's flags and the grid's keys are made from it)."""
    found: dict[str, list] = {}
    for entry in METHODS.values():
        for f in entry.options.declared():
            first = found.setdefault(f.name, [f, []])
            if (f.type, f.default, dict(f.metadata)) != (first[0].type, first[0].default, dict(first[0].metadata)):
                raise TypeError(f"option {f.name!r} of method {entry.name} is declared otherwise by method "
                                f"{first[1][0]}: one flag and one grid key cannot check both")
            first[1].append(entry.name)
    return {name: MethodOption(f, tuple(methods)) for name, (f, methods) in found.items()}


def method_named(name: str) -> Method:
    """The entry of the method called `name`."""
    try:
        return METHODS[name]
    except KeyError:
        raise ValueError(f"unknown method {name!r}; choose one of {', '.join(sorted(METHODS))}") from None


def method_of(program: dspy.Module) -> Method:
    """The entry whose program `program` is (a compiled or copied program is still its class)."""
    for entry in METHODS.values():
        if type(program) is entry.program:
            return entry
    for entry in METHODS.values():
        if isinstance(program, entry.program):
            return entry
    raise ValueError(f"{type(program).__name__} is no registered method's program (programs/registry.py)")
