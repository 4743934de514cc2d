"""Gold demonstrations: the episode a good EIR agent would have on a training question, built from
its gold supporting facts with no model call. The episode, and how the real EIR program renders it
(GoldAdapter in place of the model, so the demos cannot drift from its prompts): docs/experiments.md, "Compiling a program".
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable
from typing import Any

import dspy

from eir_dspy.lm import DecodingAdapter
from eir_dspy.state import Citation, ConclusionUpdate, RequirementUpdate
from signatures.eir_turn import EIRAction

logger = logging.getLogger(__name__)

# Named choices (the paper has no demonstrations): logged by the compile run as params.
READ_ORDER = "supporting_facts"  # gold paragraphs are read in the order their facts are first listed
REQUIREMENT_TEXT = "what {title} says that the question needs"
CLAIM_CHARS = 200  # a claim longer than the strict grammar's cap on it (signatures/schemas.py) is cut
GOLD_DEMO_PARAMS = {"gold_read_order": READ_ORDER, "gold_requirement_text": REQUIREMENT_TEXT,
                    "gold_claim_chars": CLAIM_CHARS}

# Why a question gives no gold episode (GoldDemos.skipped counts them).
NO_FACTS = "no_supporting_facts"
TITLE_NOT_IN_POOL = "gold_title_not_in_pool"
SENTENCE_MISSING = "gold_sentence_missing"  # past its paragraph's end, or blank
TOO_MANY_READS = "more_gold_paragraphs_than_reads"
DIVERGED = "episode_diverged"  # the program did not take the gold decisions as given (a bug if it happens)


class GoldDemos(dict):
    """Demos keyed by EIR's predictor names ("turn", "answer.predict"), plus what was left out."""

    def __init__(self) -> None:
        super().__init__()
        self.skipped: Counter[str] = Counter()  # reason -> questions
        self.questions = 0  # questions that gave an episode


def gold_demos(examples: Iterable[Any], budget: int = 6) -> GoldDemos:
    """Gold turn and final demos for pool-setting EIR at read budget `budget`.

    `examples`: eval.data.schema.Question objects, or anything with their attributes (question, answer,
    paragraphs, supporting_facts), e.g. a dspy.Example holding them. Makes no model call."""
    from programs import names  # eval -> programs: the program whose prompts the demos must match
    from programs.registry import METHODS

    program = METHODS[names.EIR].build(budget)
    names = {id(p): name for name, p in program.named_predictors()}
    demos = GoldDemos()
    for example in examples:
        script, reason = gold_script(example, budget)
        if reason is None:
            trace, reason = _run(program, example, script)
        if reason is not None:
            demos.skipped[reason] += 1
            continue
        demos.questions += 1
        for predictor, inputs, prediction in trace:
            outputs = {k: prediction[k] for k in predictor.signature.output_fields}
            demos.setdefault(names[id(predictor)], []).append(dspy.Example(**inputs, **outputs).with_inputs(*inputs))
    if demos.skipped:
        logger.info("gold demos: %d questions, skipped %s", demos.questions, dict(demos.skipped))
    return demos


def gold_script(example: Any, budget: int) -> tuple[list[dict] | None, str | None]:
    """The outputs a gold agent writes, call by call (turns, then the final call), or why there are none."""
    facts = [(str(t), int(i)) for t, i in example.supporting_facts]
    if not facts:
        return None, NO_FACTS
    by_title = {p.title: p for p in example.paragraphs}
    titles = list(dict.fromkeys(t for t, _ in facts))
    if any(t not in by_title for t in titles):
        return None, TITLE_NOT_IN_POOL
    if len(titles) > budget:
        return None, TOO_MANY_READS
    sentences = _gold_sentences(facts, by_title)
    if sentences is None:
        return None, SENTENCE_MISSING

    requirements = [REQUIREMENT_TEXT.format(title=t) for t in titles]
    turns = [_turn([RequirementUpdate(text=r) for r in requirements], [], EIRAction(kind="read", title=titles[0]))]
    for k, title in enumerate(titles):
        # Requirement ids follow the order they were added (eir_dspy/state.py AgentLists.apply): R1 is titles[0].
        satisfied = RequirementUpdate(id=f"R{k + 1}", text=requirements[k], status="satisfied")
        conclusion = ConclusionUpdate(claim=_claim([text for _, text in sentences[title]]),
                                      citations=[Citation(title=title, sentence=i) for i, _ in sentences[title]])
        last = k == len(titles) - 1
        action = EIRAction(kind="submit", answer=example.answer) if last else EIRAction(kind="read", title=titles[k + 1])
        turns.append(_turn([satisfied], [conclusion], action))
    final = {"answer": example.answer, "citations": [Citation(title=t, sentence=i) for t, i in facts]}
    return turns + [final], None


def _gold_sentences(facts, by_title) -> dict[str, list[tuple[int, str]]] | None:
    """Each gold title's cited (index, sentence text), in fact order; None if a fact names no sentence."""
    out: dict[str, list[tuple[int, str]]] = {}
    for title, i in facts:
        sentences = by_title[title].sentences
        if not 0 <= i < len(sentences) or not sentences[i].strip():
            return None
        out.setdefault(title, []).append((i, sentences[i].strip()))
    return out


def _turn(requirements, conclusions, action) -> dict:
    return {"requirement_updates": requirements, "conclusion_updates": conclusions, "action": action}


def _claim(texts: list[str]) -> str:
    claim = " ".join(texts)
    if len(claim) <= CLAIM_CHARS:
        return claim
    return claim[:CLAIM_CHARS - 3].rsplit(" ", 1)[0] + "..."


def _run(program, example, script: list[dict]) -> tuple[list | None, str | None]:
    """Run the real program with the gold outputs in place of the model; its DSPy trace, or why not."""
    adapter = GoldAdapter(script)
    try:
        with dspy.context(lm=dspy.LM("gold/none", engine=NoModel(), cache=False), adapter=adapter, trace=[]):
            prediction = program(question=example.question, paragraphs=tuple(example.paragraphs))
            trace = list(dspy.settings.trace)
    except OutOfStep as exc:
        logger.warning("gold episode diverged: %s", exc)
        return None, DIVERGED
    episode = prediction.episode
    gold_titles = list(dict.fromkeys(t for t, _ in example.supporting_facts))
    took_all = (not adapter.script and episode.rejected_turns == 0 and not any(t.discarded_cause for t in episode.turns)
                and episode.submitted is not None
                and list(episode.evidence.titles) == gold_titles and prediction.answer == example.answer.strip())
    return (trace, None) if took_all else (None, DIVERGED)


class OutOfStep(RuntimeError):
    """The program asked for a call the gold script does not hold next (a turn was rejected)."""


class GoldAdapter(DecodingAdapter):
    """The project's adapter with the gold outputs in place of the model: each call serialises the
    next scripted output as the model would write it and parses it back, so the program receives
    exactly what the adapter would give it for that output."""

    def __init__(self, script: list[dict]) -> None:
        super().__init__("free")
        self.script = list(script)

    def __call__(self, lm, lm_kwargs, signature, demos, inputs) -> list[dict]:
        if not self.script:
            raise OutOfStep("the program made more calls than the gold script holds")
        outputs = self.script.pop(0)
        if outputs.keys() != signature.output_fields.keys():
            raise OutOfStep(f"gold script out of step: {sorted(outputs)} for {signature.__name__}")
        return [self.parse(signature, self.format_assistant_message_content(signature, outputs))]


class NoModel:
    """The engine of the LM DSPy requires to be configured (DSPy's engine contract,
    `complete(Request) -> Response`); building gold demos never calls it."""

    def complete(self, request):
        raise RuntimeError("gold demonstrations make no model call")
