"""Metrics: each rule checked against hand-computed values."""

from __future__ import annotations

import pytest

from eir_dspy.paragraphs import Paragraph
from eval.metrics import (
    SCORE_KEYS,
    aggregate,
    exact_match,
    max_over_answers,
    normalize_answer,
    score_question,
    support_f1,
    token_f1,
)
from eval.schema import Question


def _hotpot(answer="Varn", aliases=()):
    return Question(
        id="h", question="Q?", answer=answer, aliases=aliases, type="bridge",
        paragraphs=(Paragraph("A", ("a0", " a1"), 0), Paragraph("B", ("b0", " b1"), 1), Paragraph("C", ("c0",), 2)),
        supporting_facts=(("A", 0), ("B", 1)), dataset="hotpotqa",
    )


def _musique():
    return Question(
        id="2hop__1_2", question="Q?", answer="1850", aliases=("in 1850",), type="2hop",
        paragraphs=(Paragraph("X", ("x",), 4), Paragraph("Y", ("y",), 7), Paragraph("Y (2)", ("y2",), 9)),
        supporting_facts=(), dataset="musique", supporting_paragraphs=(7, 9),
    )


# ---------------------------------------------------------------- normalisation


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("The Cat", "cat"),
        ("a cat and an apple", "cat and apple"),
        ("theatre anthem", "theatre anthem"),  # articles only as whole words
        ("U.S.A.!", "usa"),
        ("  lots \t of\n space  ", "lots of space"),
        ("rock-'n'-roll", "rocknroll"),
        ("the, a; an.", ""),
        # Punctuation goes before articles: "the-end" -> "theend" keeps no article.
        ("the-end", "theend"),
    ],
)
def test_normalize_answer(raw, expected):
    assert normalize_answer(raw) == expected


# ---------------------------------------------------------------- EM / F1


def test_exact_match():
    assert exact_match("The Beatles!", "beatles") == 1.0
    assert exact_match("Beatles band", "beatles") == 0.0


def test_token_f1_hand_computed():
    # pred "cat sat" (2 tokens) vs gold "cat sat down" (3): P=1, R=2/3, F1=0.8
    assert token_f1("the cat sat", "cat sat down") == pytest.approx(0.8)
    # "b c d" vs "b x": one common token, P=1/3, R=1/2
    assert token_f1("b c d", "b x") == pytest.approx(2 * (1 / 3) * (1 / 2) / (1 / 3 + 1 / 2))
    # repeated tokens count with multiplicity: "paris paris" vs "paris": P=1/2, R=1
    assert token_f1("paris paris", "paris") == pytest.approx(2 / 3)
    assert token_f1("dog", "cat") == 0.0


def test_token_f1_yes_no_rule():
    assert token_f1("yes", "yes") == 1.0
    assert token_f1("Yes.", "yes") == 1.0
    assert token_f1("yes it is", "yes") == 0.0  # would be 0.5 without the rule
    assert token_f1("no", "no way") == 0.0
    assert token_f1("noanswer", "noanswer") == 1.0
    assert token_f1("not yes", "noanswer") == 0.0


def test_empty_prediction_scores_zero():
    assert token_f1("", "cat") == 0.0
    assert token_f1("the", "cat") == 0.0


def test_max_over_answers():
    answers = ("Rome", "Roma", "Rome, Italy")
    assert max_over_answers(token_f1, "Italy", answers) == pytest.approx(2 / 3)
    assert max_over_answers(exact_match, "roma", answers) == 1.0
    assert max_over_answers(exact_match, "Milan", answers) == 0.0
    assert max_over_answers(exact_match, "x", ()) == 0.0


# ---------------------------------------------------------------- support


def test_support_f1_hand_computed():
    gold = [("A", 0), ("B", 1)]
    # 1 of 3 predicted is right, 1 of 2 gold found: P=1/3, R=1/2, F1=0.4
    assert support_f1([("A", 0), ("A", 1), ("C", 0)], gold) == pytest.approx(0.4)
    assert support_f1([("A", 0), ("B", 1)], gold) == 1.0
    assert support_f1([("A", 0), ("A", 0)], gold) == pytest.approx(2 / 3)  # a set: duplicates count once
    assert support_f1([("C", 0)], gold) == 0.0
    assert support_f1([], gold) == 0.0
    assert support_f1([], []) == 0.0
    assert support_f1([("A", 0)], []) == 0.0


def test_score_question_hotpot():
    scores = score_question(_hotpot(), "the Varn", [("A", 0), ("C", 0)])
    assert scores == {"answer_f1": 1.0, "em": 1.0, "support_f1": pytest.approx(0.5)}


def test_score_question_uses_aliases():
    q = _hotpot(answer="Rome", aliases=("Roma", "Rome, Italy"))
    scores = score_question(q, "Rome Italy", [("A", 0), ("B", 1)])
    assert scores == {"answer_f1": 1.0, "em": 1.0, "support_f1": 1.0}
    partial = score_question(q, "Italy", None)
    assert partial == {"answer_f1": pytest.approx(2 / 3), "em": 0.0, "support_f1": 0.0}


@pytest.mark.parametrize("prediction", [None, "", "   "])
def test_score_question_missing_prediction(prediction):
    assert score_question(_hotpot(), prediction, None) == {"answer_f1": 0.0, "em": 0.0, "support_f1": 0.0}
    # Support is scored on its own: citations still count.
    assert score_question(_hotpot(), prediction, [("A", 0), ("B", 1)])["support_f1"] == 1.0


def test_score_question_musique_paragraph_level():
    q = _musique()
    # Titles map to source_index; the sentence index is irrelevant and
    # two citations of the same paragraph count once.
    scores = score_question(q, "1850", [("Y", 0), ("Y", 3), ("X", 0)])
    # predicted {7, 4} vs gold {7, 9}: P=1/2, R=1/2
    assert scores == {"answer_f1": 1.0, "em": 1.0, "support_f1": pytest.approx(0.5)}
    assert score_question(q, "in 1850", [("Y", 0), ("Y (2)", 0)])["support_f1"] == 1.0
    # A title outside the pool is a wrong prediction, not silently dropped: P=1/2, R=1/2.
    assert score_question(q, "1850", [("Y", 0), ("Nowhere", 0)])["support_f1"] == pytest.approx(0.5)


# ---------------------------------------------------------------- aggregate


def test_aggregate_is_a_0_to_100_mean_over_all_questions():
    scores = [
        {"answer_f1": 1.0, "em": 1.0, "support_f1": 0.5},
        {"answer_f1": 0.5, "em": 0.0, "support_f1": 0.25},
        {"answer_f1": 0.0, "em": 0.0, "support_f1": 0.0},  # a failed question
        {"answer_f1": 0.5, "em": 0.0, "support_f1": 0.25},
    ]
    assert aggregate(scores, SCORE_KEYS) == {
        "answer_f1": pytest.approx(50.0), "em": pytest.approx(25.0), "support_f1": pytest.approx(25.0),
    }
    assert aggregate(scores, ["em"]) == {"em": pytest.approx(25.0)}
    assert aggregate(scores) == aggregate(scores, SCORE_KEYS)
    assert aggregate([], ["em"]) == {"em": 0.0}
