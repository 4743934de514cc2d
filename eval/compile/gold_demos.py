"""Gold demonstrations: the calls a good agent of each method would make on a training question,
built from its gold supporting facts with no model call. The real program runs with the gold outputs
in place of the model (GoldAdapter) and each call's inputs and outputs are read off DSPy's trace, so
a demo is word for word a call the program would prompt and cannot drift from its prompts. What each
method's gold agent writes: eval/compile/gold_scripts.py; docs/experiments.md, "Compiling a program".
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

import dspy
import orjson

from eir_dspy.acceptance import EXTRACT
from eir_dspy.lm import DecodingAdapter
from eval.compile.gold_scripts import (  # noqa: F401  (the skip reasons, re-exported for callers)
    FEW_DISTRACTORS,
    NO_FACTS,
    RECIPES,
    SENTENCE_MISSING,
    TITLE_NOT_IN_POOL,
    TOO_MANY_READS,
    GoldFacts,
    GoldRun,
    gold_facts,
)
from programs.setting import DEFAULT_BUDGET

logger = logging.getLogger(__name__)

DIVERGED = "episode_diverged"  # the program did not take the gold decisions as given (a bug if it happens)


class GoldDemos(dict):
    """Demos keyed by the program's predictor names ("turn", "answer.predict", ...), plus what was left out."""

    def __init__(self) -> None:
        super().__init__()
        self.skipped: Counter[str] = Counter()  # reason -> questions
        self.questions = 0  # questions that gave an episode


def gold_demos(examples: Iterable[Any], budget: int = DEFAULT_BUDGET, method: str = "eir") -> GoldDemos:
    """Gold demos for `method`'s pool-setting program at read budget `budget`, keyed by predictor
    name. Within one question a call identical to one already kept (SSR's votes on one step) gives
    one demo. Makes no model call."""
    from programs.registry import METHODS  # eval -> programs: the program whose prompts the demos must match

    recipe = RECIPES[method]
    demos = GoldDemos()
    for example in examples:
        facts, reason = gold_facts(example)
        runs = recipe(facts, budget) if reason is None else reason
        if isinstance(runs, str):
            demos.skipped[runs] += 1
            continue
        program = METHODS[method].build(budget)
        names = {id(p): name for name, p in program.named_predictors()}
        traces = [_run(program, facts, run) for run in runs]
        if any(t is None for t in traces):
            demos.skipped[DIVERGED] += 1
            continue
        demos.questions += 1
        mine: dict[str, list] = {}
        for run, trace in zip(runs, traces):
            for predictor, inputs, prediction in trace:
                name = names[id(predictor)]
                if run.keep is None or name in run.keep:
                    outputs = {k: prediction[k] for k in predictor.signature.output_fields}
                    _add(mine.setdefault(name, []), dspy.Example(**inputs, **outputs).with_inputs(*inputs))
        for name, items in mine.items():
            demos.setdefault(name, []).extend(items)
    if demos.skipped:
        logger.info("gold demos (%s): %d questions, skipped %s", method, demos.questions, dict(demos.skipped))
    return demos


def _add(kept: list, demo: dspy.Example) -> None:
    if not any(_same(demo, other) for other in kept):
        kept.append(demo)


def _same(a: dspy.Example, b: dspy.Example) -> bool:
    return orjson.dumps(a.toDict(), default=_plain) == orjson.dumps(b.toDict(), default=_plain)


def _plain(value):
    return value.model_dump() if hasattr(value, "model_dump") else str(value)


def _run(program, facts: GoldFacts, run: GoldRun) -> list | None:
    """Run the real program with the gold outputs in place of the model; its DSPy trace, or None when
    it did not take them as given."""
    # The program's calls go through the gold script: its forward runs under its own adapter, so the
    # script takes that adapter's place (with the method's acceptance rule, as the program built it).
    adapter = program.adapter = GoldAdapter(run.responses, acceptance=program.acceptance)
    inputs = {"question": facts.question, "paragraphs": facts.paragraphs}
    if run.oracle is not None:
        inputs["oracle"] = run.oracle
    try:
        with dspy.context(lm=dspy.LM("gold/none", engine=NoModel(), cache=False), trace=[]):
            result = program(**inputs)
            trace = list(dspy.settings.trace)
    except OutOfStep as exc:
        logger.warning("gold episode diverged: %s", exc)
        return None
    return trace if adapter.finished and run.took(result) else None


class OutOfStep(RuntimeError):
    """The program asked for a call the gold script does not hold next (a turn was rejected)."""


class GoldAdapter(DecodingAdapter):
    """The project's adapter with the gold outputs in place of the model: each call serialises the
    next scripted output for its signature as the model would write it and parses it back, so the
    program receives exactly what the adapter would give it for that output. `responses` maps a
    signature's output field names to its calls' outputs in order (a list), or to a function that
    gives each call's (a verifier that always accepts)."""

    def __init__(self, responses: dict[tuple[str, ...], list[dict] | Callable[[], dict]], acceptance: str = EXTRACT) -> None:
        super().__init__("free", acceptance=acceptance)
        self.responses = {key: value if callable(value) else list(value) for key, value in responses.items()}

    @property
    def finished(self) -> bool:
        """Every scripted output was used."""
        return not any(v for v in self.responses.values() if not callable(v))

    def __call__(self, lm, lm_kwargs, signature, demos, inputs) -> list[dict]:
        key = tuple(signature.output_fields)
        script = self.responses.get(key)
        if script is None or (not callable(script) and not script):
            raise OutOfStep(f"the program asked for {signature.__name__} ({', '.join(key)}), which the gold script "
                            "does not hold next")
        outputs = script() if callable(script) else script.pop(0)
        if tuple(outputs) != key:
            raise OutOfStep(f"gold script out of step: {sorted(outputs)} for {signature.__name__}")
        return [self.parse(signature, self.format_assistant_message_content(signature, outputs))]


class NoModel:
    """The engine of the LM DSPy requires to be configured (DSPy's engine contract,
    `complete(Request) -> Response`); building gold demos never calls it."""

    def complete(self, request):
        raise RuntimeError("gold demonstrations make no model call")
