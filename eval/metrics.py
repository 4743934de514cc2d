"""Answer and support metrics, written from the HotpotQA / SQuAD definitions.

Per-question scores are on a 0..1 scale; `aggregate` reports means on a 0..100 scale.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Callable, Iterable, Sequence

from eval.schema import Question

SCORE_KEYS = ("answer_f1", "em", "support_f1")

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
# HotpotQA: a yes/no/noanswer answer earns no partial credit from token overlap.
_SPECIAL = frozenset({"yes", "no", "noanswer"})


def normalize_answer(s: str) -> str:
    """Lowercase, drop punctuation, drop the articles a/an/the, collapse whitespace
    (in that order, as in the HotpotQA evaluation)."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in _PUNCTUATION)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def token_f1(prediction: str, gold: str) -> float:
    pred, ref = normalize_answer(prediction), normalize_answer(gold)
    if (pred in _SPECIAL or ref in _SPECIAL) and pred != ref:
        return 0.0
    common = sum((Counter(pred.split()) & Counter(ref.split())).values())
    if common == 0:  # covers an empty prediction
        return 0.0
    precision, recall = common / len(pred.split()), common / len(ref.split())
    return 2 * precision * recall / (precision + recall)


def max_over_answers(fn: Callable[[str, str], float], prediction: str, answers: Sequence[str]) -> float:
    return max((fn(prediction, answer) for answer in answers), default=0.0)


def support_f1(predicted: Iterable, gold: Iterable) -> float:
    """Set F1 over hashable items; an empty prediction scores 0."""
    pred, ref = set(predicted), set(gold)
    common = len(pred & ref)
    if not pred or common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def score_question(
    question: Question,
    prediction: str | None,
    cited: Iterable[tuple[str, int]] | None,
) -> dict[str, float]:
    """answer F1 / EM (max over `question.answers`) and support F1, each 0..1.

    Answer and support are scored independently: a missing answer scores 0 on F1/EM
    but its citations still count; missing citations score 0 on support.
    MuSiQue (non-empty `supporting_paragraphs`) is scored at paragraph level: each
    cited title maps to its paragraph's `source_index`."""
    if prediction is None or not prediction.strip():
        f1 = em = 0.0
    else:
        f1 = max_over_answers(token_f1, prediction, question.answers)
        em = max_over_answers(exact_match, prediction, question.answers)

    cited = [tuple(c) for c in cited or ()]
    if question.supporting_paragraphs:
        index = {p.title: p.source_index for p in question.paragraphs}
        # A title outside the pool stays a (wrong) prediction instead of vanishing.
        predicted = {index.get(title, ("not in pool", title)) for title, _ in cited}
        sp = support_f1(predicted, question.supporting_paragraphs)
    else:
        sp = support_f1(cited, question.supporting_facts)
    return {"answer_f1": f1, "em": em, "support_f1": sp}


def aggregate(scores: list[dict], keys: Sequence[str] = SCORE_KEYS) -> dict[str, float]:
    """Mean of each key over every question, × 100. Callers pass failed questions as
    zeros so the denominator is always the full question count; no scores -> 0.0."""
    return {k: 100.0 * sum(s[k] for s in scores) / len(scores) if scores else 0.0 for k in keys}
