"""Per-question scores by the rules of each benchmark's official evaluation script, written from the
scripts' definitions (no code copied); the rules per benchmark: docs/data-and-metrics.md, "Metrics".
Per-question scores are on a 0..1 scale; `aggregate` reports means on a 0..100 scale.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence

from eir_dspy.answer_text import normalize_answer
from eval.data.schema import Question

__all__ = ["normalize_answer", "exact_match", "max_over_answers", "score_question", "aggregate", "aggregate_defined"]

SCORE_KEYS = ("answer_f1", "em", "support_f1")
# Not defined for every question (joint is HotpotQA-only; records written before sp_em lack
# it), so these are averaged over the questions that have them.
PARTIAL_SCORE_KEYS = ("sp_em", "joint_em", "joint_f1")

# HotpotQA and 2Wiki: a yes/no/noanswer answer (predicted or gold) earns no partial credit.
_SPECIAL = frozenset({"yes", "no", "noanswer"})


def exact_match(prediction: str, gold: str) -> float:
    """1.0 when both normalize to the same string (two empty answers match)."""
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1_precision_recall(prediction: str, gold: str) -> tuple[float, float, float]:
    """HotpotQA / 2Wiki token (F1, precision, recall). A yes/no/noanswer on either side that
    differs from the other scores 0; no shared token (an empty answer included) scores 0."""
    pred, ref = normalize_answer(prediction), normalize_answer(gold)
    if (pred in _SPECIAL or ref in _SPECIAL) and pred != ref:
        return 0.0, 0.0, 0.0
    return _overlap(pred.split(), ref.split())


def token_f1(prediction: str, gold: str) -> float:
    """HotpotQA / 2Wiki token F1."""
    return f1_precision_recall(prediction, gold)[0]


def squad_f1(prediction: str, gold: str) -> float:
    """MuSiQue (SQuAD) token F1: no yes/no rule, and when either side has no tokens the
    score is 1.0 if both have none, else 0."""
    pred_tokens, ref_tokens = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not pred_tokens or not ref_tokens:
        return float(pred_tokens == ref_tokens)
    return _overlap(pred_tokens, ref_tokens)[0]


def _overlap(pred_tokens: list[str], ref_tokens: list[str]) -> tuple[float, float, float]:
    """Token (F1, precision, recall) of the shared tokens, as every script computes it; 0 with none shared."""
    common = sum((Counter(pred_tokens) & Counter(ref_tokens)).values())
    if common == 0:
        return 0.0, 0.0, 0.0
    precision, recall = common / len(pred_tokens), common / len(ref_tokens)
    return 2 * precision * recall / (precision + recall), precision, recall


def max_over_answers(fn: Callable[[str, str], float], prediction: str, answers: Sequence[str]) -> float:
    return max((fn(prediction, answer) for answer in answers), default=0.0)


def support_scores(predicted: Sequence[Hashable], gold: Sequence[Hashable]) -> tuple[float, float, float, float]:
    """(precision, recall, F1, EM) counted as the official scripts count: each predicted item
    is a true or a false positive, each gold item not predicted a false negative. Callers
    dedupe first; 2Wiki lowercases titles after deduping, so case-duplicates each count.
    Nothing predicted against no gold: P = R = F1 = 0 but EM = 1."""
    tp = sum(1 for item in predicted if item in gold)
    fp = len(predicted) - tp
    fn = sum(1 for item in gold if item not in predicted)
    precision = tp / (tp + fp) if tp + fp > 0 else 0.0
    recall = tp / (tp + fn) if tp + fn > 0 else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return precision, recall, f1, 1.0 if fp + fn == 0 else 0.0


def score_question(
    question: Question,
    prediction: str | None,
    cited: Iterable[tuple[str, int]] | None,
) -> dict[str, float | None]:
    """answer_f1, em, support_f1 and sp_em (each 0..1) by the official rules of
    `question.dataset`, plus joint_em and joint_f1: HotpotQA only, None for the others.

    Answer and support are scored independently. A missing prediction is scored as the
    empty string, as the official scripts would score an empty answer (0 against any gold
    that has a token). MuSiQue support is scored at paragraph level: each cited title maps
    to its paragraph's `source_index`."""
    prediction = prediction or ""
    cited = [tuple(c) for c in cited or ()]
    if question.dataset != "musique":
        # A citation of a repeated title made unique ("X (2)") is written with the file's title
        # ("X"), as an official prediction file would have it.
        renamed = {p.title: p.benchmark_title for p in question.paragraphs if p.source_title}
        cited = [(renamed.get(title, title), *rest) for title, *rest in cited]
    joint_em = joint_f1 = None
    if question.dataset == "hotpotqa":
        # One gold answer: HotpotQA has no aliases.
        f1, precision, recall = f1_precision_recall(prediction, question.answer)
        em = exact_match(prediction, question.answer)
        sp_precision, sp_recall, sp_f1, sp_em = support_scores(list(set(cited)), list(set(question.supporting_facts)))
        joint_precision, joint_recall = precision * sp_precision, recall * sp_recall
        joint_em = em * sp_em
        total = joint_precision + joint_recall
        joint_f1 = 2 * joint_precision * joint_recall / total if total > 0 else 0.0
    elif question.dataset == "2wiki":
        f1 = max_over_answers(token_f1, prediction, question.answers)
        em = max_over_answers(exact_match, prediction, question.answers)
        _, _, sp_f1, sp_em = support_scores(_lowercase_titles(cited), _lowercase_titles(question.supporting_facts))
    elif question.dataset == "musique":
        f1 = max_over_answers(squad_f1, prediction, question.answers)
        em = max_over_answers(exact_match, prediction, question.answers)
        sp_f1, sp_em = _musique_support(question, cited)
    else:
        raise ValueError(f"no scoring rules for dataset {question.dataset!r}")
    return {"answer_f1": f1, "em": em, "support_f1": sp_f1, "sp_em": sp_em, "joint_em": joint_em, "joint_f1": joint_f1}


def _lowercase_titles(facts: Iterable[tuple]) -> list[tuple]:
    # 2Wiki dedupes exact pairs, then lowercases: ("Film", 0) and ("film", 0) stay two items.
    return [(title.lower(), *rest) for title, *rest in set(facts)]


def _musique_support(question: Question, cited: list[tuple]) -> tuple[float, float]:
    index = {p.title: p.source_index for p in question.paragraphs}
    # A title outside the pool stays a (wrong) prediction instead of vanishing.
    predicted = {index.get(title, ("not in pool", title)) for title, *_ in cited}
    gold = set(question.supporting_paragraphs)
    if not predicted and not gold:
        # metrics/support.py scores nothing predicted against no gold as F1 = EM = 1
        # (HotpotQA and 2Wiki give F1 0 there).
        return 1.0, 1.0
    _, _, f1, em = support_scores(list(predicted), list(gold))
    return f1, em


def aggregate(scores: list[dict], keys: Sequence[str] = SCORE_KEYS) -> dict[str, float]:
    """Mean of each key over every question, × 100. Callers pass failed questions as
    zeros so the denominator is always the full question count; no scores -> 0.0."""
    return {k: 100.0 * sum(s[k] for s in scores) / len(scores) if scores else 0.0 for k in keys}


def aggregate_defined(scores: list[dict], keys: Sequence[str] = PARTIAL_SCORE_KEYS) -> dict[str, float]:
    """Mean × 100 of each key over the questions where it is defined (present, not None);
    a key that no question defines is left out rather than reported as 0."""
    means = {}
    for key in keys:
        values = [s[key] for s in scores if s.get(key) is not None]
        if values:
            means[key] = 100.0 * sum(values) / len(values)
    return means
