"""What each method's gold agent writes on a training question (eval/compile/gold_demos.py runs the
real program with these outputs in place of the model).

Every method reads the gold paragraphs in the order their facts are first listed and submits (or
answers) the gold answer citing exactly the gold facts. The paper has no demonstrations, so every
choice below is the project's and is logged by the compile run (GOLD_DEMO_PARAMS, per method):
- EIR: turn 1 adds one requirement per gold paragraph and reads the first; each later turn adds a
  conclusion citing the gold sentences of the paragraph just read, marks its requirement satisfied
  and reads the next; then it submits, and the final call answers citing every gold fact.
- Direct: one turn per gold paragraph (a thought saying what the paragraph just read says and what
  is still needed), then a submit citing the gold facts. H turns hold the reads and the submit.
- Full Pool: its one call answers from the whole pool citing the gold facts.
- Agentic SSR: Direct's turns; each proposal decomposed into what the paragraphs read establish, why
  that justifies the action and the action restated; every verifier accepts every step. Refinement
  runs only after a rejected step, so a gold episode gives it no demo.
- Reflexion: its first trial is Direct's gold episode. Its reflection demo comes from a second,
  failed trial built for it: the agent reads distractors turn after turn until its turns run out
  with nothing submitted, and the reflection names the gold paragraphs it missed and says to read
  them first and submit before the last turn (the failure the embedded model shows).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from eir_dspy.answer_text import normalize_answer
from eir_dspy.state import Citation, ConclusionUpdate, RequirementUpdate
from eir_dspy.turns import to_action
from programs.trajectory import render_action
from signatures.direct_turn import DirectAction
from signatures.eir_turn import EIRAction

# Why a question gives no gold episode (GoldDemos.skipped counts them).
NO_FACTS = "no_supporting_facts"
TITLE_NOT_IN_POOL = "gold_title_not_in_pool"
SENTENCE_MISSING = "gold_sentence_missing"  # past its paragraph's end, or blank
TOO_MANY_READS = "more_gold_paragraphs_than_reads"  # (Direct-style: than turns before the submit)
FEW_DISTRACTORS = "fewer_distractors_than_turns"  # Reflexion's failed trial reads distractors only


@dataclass(frozen=True)
class GoldFacts:
    """A training question's gold: its paragraphs in the order their facts are first listed, each
    with its cited (index, sentence text), the facts themselves, and the answer."""

    question: str
    answer: str
    paragraphs: tuple
    titles: list[str]
    sentences: dict[str, list[tuple[int, str]]]
    facts: list[tuple[str, int]]

    @property
    def distractors(self) -> list[str]:
        return [p.title for p in self.paragraphs if p.title not in self.sentences]


def gold_facts(example: Any) -> tuple[GoldFacts | None, str | None]:
    """`example`'s gold (an eval.data.schema.Question, or anything with its attributes), or why there is none."""
    facts = [(str(t), int(i)) for t, i in example.supporting_facts]
    if not facts:
        return None, NO_FACTS
    by_title = {p.title: p for p in example.paragraphs}
    titles = list(dict.fromkeys(t for t, _ in facts))
    if any(t not in by_title for t in titles):
        return None, TITLE_NOT_IN_POOL
    sentences: dict[str, list[tuple[int, str]]] = {}
    for title, i in facts:
        text = by_title[title].sentences
        if not 0 <= i < len(text) or not text[i].strip():
            return None, SENTENCE_MISSING
        sentences.setdefault(title, []).append((i, text[i].strip()))
    return GoldFacts(example.question, example.answer.strip(), tuple(example.paragraphs), titles, sentences, facts), None


@dataclass
class GoldRun:
    """One run of the program with scripted outputs. `responses`: per predictor output fields (a
    signature's output field names, in order), the outputs of its successive calls, or one function
    giving every call's; `keep`: the predictor names whose calls become demos (None: all); `took`:
    whether the program took the gold decisions (its MethodResult in, True or False out)."""

    responses: dict[tuple[str, ...], list[dict] | Callable[[], dict]]
    took: Callable[[Any], bool]
    keep: frozenset[str] | None = None
    oracle: Callable[[str], bool] | None = None


READ_ORDER = "supporting_facts"  # gold paragraphs are read in the order their facts are first listed
REQUIREMENT_TEXT = "what {title} says that the question needs"
CLAIM_CHARS = 200  # a claim longer than the strict grammar's cap on it (signatures/schemas.py) is cut
FIRST_THOUGHT = "I need what {title} says."
NEXT_THOUGHT = "{read} says: {claim} I still need what {title} says."
SUBMIT_THOUGHT = "{read} says: {claim} With what I have read, the answer is {answer}."
NOTHING_READ = "Nothing has been read yet."
READ_JUSTIFICATION = "The question needs what {title} says, and it has not been read."
SUBMIT_JUSTIFICATION = "These facts answer the question: {answer}."
VERIFY_CONFIDENCE = 1.0
FAILED_THOUGHT = "{title} may say what the question needs."
REFLECTION = ("I read {read} but not {gold}, which hold what the question needs, and my turns ran out before "
              "I submitted anything. Next time I will read {gold} first, then submit the answer citing their "
              "sentences before the last turn.")

_COMMON = {"gold_read_order": READ_ORDER, "gold_claim_chars": CLAIM_CHARS}
_DIRECT = {**_COMMON, "gold_first_thought": FIRST_THOUGHT, "gold_next_thought": NEXT_THOUGHT,
           "gold_submit_thought": SUBMIT_THOUGHT}
GOLD_DEMO_PARAMS = {
    "eir": {**_COMMON, "gold_requirement_text": REQUIREMENT_TEXT},
    "direct": _DIRECT,
    "full_pool": {"gold_read_order": READ_ORDER},
    "ssr": {**_DIRECT, "gold_nothing_read": NOTHING_READ, "gold_read_justification": READ_JUSTIFICATION,
            "gold_submit_justification": SUBMIT_JUSTIFICATION, "gold_verify": "accept every step",
            "gold_verify_confidence": VERIFY_CONFIDENCE, "gold_refine_demos": "none (no step is rejected)"},
    "reflexion": {**_DIRECT, "gold_failed_trial": "distractors read until the turns run out",
                  "gold_failed_thought": FAILED_THOUGHT, "gold_reflection": REFLECTION},
}

EIR_TURN = ("requirement_updates", "conclusion_updates", "action")
DIRECT_TURN = ("thought", "action")
FINAL = ("answer", "citations")
DECOMPOSE = ("facts", "justification", "action")
VERIFY = ("verdict", "correction", "confidence")
REFLECT = ("reflection",)


def claim(texts: list[str]) -> str:
    text = " ".join(texts)
    if len(text) <= CLAIM_CHARS:
        return text
    return text[:CLAIM_CHARS - 3].rsplit(" ", 1)[0] + "..."


def _claim_of(gold: GoldFacts, title: str) -> str:
    return claim([text for _, text in gold.sentences[title]])


def _citations(pairs) -> list[Citation]:
    return [Citation(title=t, sentence=i) for t, i in pairs]


def _read_titles(result) -> list[str]:
    return [t.read_title for e in result.episodes for t in e.turns if t.read_title]


def _clean(result) -> bool:
    return all(e.rejected_turns == 0 and not any(t.discarded_cause for t in e.turns) for e in result.episodes)


def _answered(result, gold: GoldFacts) -> bool:
    return result.answer == gold.answer


def eir_runs(gold: GoldFacts, budget: int) -> list[GoldRun] | str:
    if len(gold.titles) > budget:
        return TOO_MANY_READS
    titles = gold.titles
    requirements = [REQUIREMENT_TEXT.format(title=t) for t in titles]
    turns = [{"requirement_updates": [RequirementUpdate(text=r) for r in requirements], "conclusion_updates": [],
              "action": EIRAction(kind="read", title=titles[0])}]
    for k, title in enumerate(titles):
        # Requirement ids follow the order they were added (eir_dspy/state.py AgentLists.apply): R1 is titles[0].
        satisfied = RequirementUpdate(id=f"R{k + 1}", text=requirements[k], status="satisfied")
        conclusion = ConclusionUpdate(claim=_claim_of(gold, title),
                                      citations=_citations((title, i) for i, _ in gold.sentences[title]))
        last = k == len(titles) - 1
        action = EIRAction(kind="submit", answer=gold.answer) if last else EIRAction(kind="read", title=titles[k + 1])
        turns.append({"requirement_updates": [satisfied], "conclusion_updates": [conclusion], "action": action})

    def took(result) -> bool:
        return (_clean(result) and result.episode.submitted is not None and _answered(result, gold)
                and list(result.evidence.titles) == titles)

    return [GoldRun({EIR_TURN: turns, FINAL: [_final(gold)]}, took)]


def _final(gold: GoldFacts) -> dict:
    return {"answer": gold.answer, "citations": _citations(gold.facts)}


def direct_turns(gold: GoldFacts) -> list[dict]:
    """Direct's gold turns: each gold paragraph read in turn, then the submit."""
    turns, read = [], None
    for title in gold.titles:
        thought = (FIRST_THOUGHT.format(title=title) if read is None
                   else NEXT_THOUGHT.format(read=read, claim=_claim_of(gold, read), title=title))
        turns.append({"thought": thought, "action": DirectAction(kind="read", title=title)})
        read = title
    thought = SUBMIT_THOUGHT.format(read=read, claim=_claim_of(gold, read), answer=gold.answer)
    turns.append({"thought": thought,
                  "action": DirectAction(kind="submit", answer=gold.answer, citations=_citations(gold.facts))})
    return turns


def _direct_took(gold: GoldFacts):
    def took(result) -> bool:
        return _clean(result) and _answered(result, gold) and _read_titles(result) == gold.titles
    return took


def direct_runs(gold: GoldFacts, budget: int) -> list[GoldRun] | str:
    if len(gold.titles) + 1 > budget:  # H turns in all, the submit among them
        return TOO_MANY_READS
    return [GoldRun({DIRECT_TURN: direct_turns(gold)}, _direct_took(gold))]


def full_pool_runs(gold: GoldFacts, budget: int) -> list[GoldRun]:
    return [GoldRun({FINAL: [_final(gold)]}, lambda result: _answered(result, gold))]


def ssr_runs(gold: GoldFacts, budget: int) -> list[GoldRun] | str:
    if len(gold.titles) + 1 > budget:
        return TOO_MANY_READS
    turns = direct_turns(gold)
    steps, read = [], []
    for turn in turns:
        action = turn["action"]
        facts = " ".join(_claim_of(gold, t) for t in read) or NOTHING_READ
        justification = (READ_JUSTIFICATION.format(title=action.title) if action.kind == "read"
                         else SUBMIT_JUSTIFICATION.format(answer=gold.answer))
        steps.append({"facts": facts, "justification": justification, "action": render_action(to_action(action))})
        if action.kind == "read":
            read.append(action.title)

    def accept() -> dict:
        return {"verdict": "accept", "correction": "", "confidence": VERIFY_CONFIDENCE}

    return [GoldRun({DIRECT_TURN: turns, DECOMPOSE: steps, VERIFY: accept}, _direct_took(gold))]


def reflexion_runs(gold: GoldFacts, budget: int) -> list[GoldRun] | str:
    if len(gold.titles) + 1 > budget:
        return TOO_MANY_READS
    distractors = gold.distractors[:budget]
    if len(distractors) < budget:
        return FEW_DISTRACTORS
    matches = _oracle(gold)
    first = GoldRun({DIRECT_TURN: direct_turns(gold)}, _direct_took(gold), oracle=matches)
    # The failed trial: a distractor read on each of its H turns (on the last, the turn limit ends it).
    failed = [{"thought": FAILED_THOUGHT.format(title=t), "action": DirectAction(kind="read", title=t)}
              for t in distractors]
    reflection = REFLECTION.format(read=_names(distractors[:budget - 1]), gold=_names(gold.titles))

    def reflected(result) -> bool:
        trials = result.trajectory.trials
        return len(trials) == 2 and not trials[0]["matched"] and trials[1]["matched"]

    second = GoldRun({DIRECT_TURN: failed + direct_turns(gold), REFLECT: [{"reflection": reflection}]}, reflected,
                     keep=frozenset({"reflect"}), oracle=matches)
    return [first, second]


def _oracle(gold: GoldFacts):
    target = normalize_answer(gold.answer)
    return lambda answer: normalize_answer(answer) == target


def _names(titles: list[str]) -> str:
    quoted = [f'"{t}"' for t in titles]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


RECIPES = {"eir": eir_runs, "direct": direct_runs, "full_pool": full_pool_runs, "ssr": ssr_runs,
           "reflexion": reflexion_runs}
