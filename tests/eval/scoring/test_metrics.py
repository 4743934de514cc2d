"""Metrics: each rule checked against hand-computed values."""

from __future__ import annotations

import json

import pytest

from eir_dspy.paragraphs import Paragraph
from eval.data.schema import Question
from eval.scoring.metrics import (
    PARTIAL_SCORE_KEYS,
    SCORE_KEYS,
    aggregate,
    aggregate_defined,
    exact_match,
    f1_precision_recall,
    max_over_answers,
    normalize_answer,
    score_question,
    squad_f1,
    support_scores,
    token_f1,
)
from eval.scoring.run_metrics import format_table, summarize

POOL = (Paragraph("A", ("a0", " a1"), 0), Paragraph("B", ("b0", " b1"), 1), Paragraph("C", ("c0",), 2))


def _hotpot(answer="Varn", aliases=(), facts=(("A", 0), ("B", 1))):
    return Question(
        id="h", question="Q?", answer=answer, aliases=aliases, type="bridge",
        paragraphs=POOL, supporting_facts=facts, dataset="hotpotqa",
    )


def _2wiki(answer="Rome", aliases=(), facts=(("Polish-Russian War (film)", 1), ("Xawery Żuławski", 2))):
    pool = (Paragraph("Polish-Russian War (film)", ("p0", " p1"), 0),
            Paragraph("Xawery Żuławski", ("x0", " x1", " x2"), 1))
    return Question(
        id="dev_0", question="Q?", answer=answer, aliases=aliases, type="compositional",
        paragraphs=pool, supporting_facts=facts, dataset="2wiki",
    )


def _musique(answer="1850", aliases=("in 1850",), supporting=(7, 9)):
    return Question(
        id="2hop__1_2", question="Q?", answer=answer, aliases=aliases, type="2hop",
        paragraphs=(Paragraph("X", ("x",), 4), Paragraph("Y", ("y",), 7), Paragraph("Y (2)", ("y2",), 9)),
        supporting_facts=(), dataset="musique", supporting_paragraphs=supporting,
    )


def _question(dataset, answer, supporting=True):
    """One question per benchmark with the given answer (no aliases) and gold support or none."""
    if dataset == "hotpotqa":
        return _hotpot(answer, facts=(("A", 0),) if supporting else ())
    if dataset == "2wiki":
        return _2wiki(answer, facts=(("Xawery Żuławski", 2),) if supporting else ())
    return _musique(answer, aliases=(), supporting=(7,) if supporting else ())


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
    assert squad_f1("", "cat") == 0.0
    assert squad_f1("cat", "the") == 0.0


def test_f1_precision_recall_hand_computed():
    # "varn city" vs "varn": one common token, P=1/2, R=1, F1=2/3
    assert f1_precision_recall("the Varn city", "Varn") == pytest.approx((2 / 3, 1 / 2, 1.0))
    assert f1_precision_recall("no", "no way") == (0.0, 0.0, 0.0)
    assert f1_precision_recall("", "") == (0.0, 0.0, 0.0)  # no common token, even though EM is 1


def test_squad_f1_has_no_yes_no_rule_and_both_empty_agree():
    assert squad_f1("no", "no way") == pytest.approx(2 / 3)  # P=1, R=1/2
    assert squad_f1("yes it is", "yes") == pytest.approx(0.5)  # P=1/3, R=1
    assert squad_f1("", "The") == 1.0
    assert squad_f1("a an", "") == 1.0
    assert squad_f1("the cat sat", "cat sat down") == pytest.approx(0.8)


def test_max_over_answers():
    answers = ("Rome", "Roma", "Rome, Italy")
    assert max_over_answers(token_f1, "Italy", answers) == pytest.approx(2 / 3)
    assert max_over_answers(exact_match, "roma", answers) == 1.0
    assert max_over_answers(exact_match, "Milan", answers) == 0.0
    assert max_over_answers(exact_match, "x", ()) == 0.0


# ---------------------------------------------------------------- per-benchmark answer rules


@pytest.mark.parametrize("dataset, f1", [("hotpotqa", 0.0), ("2wiki", 0.0), ("musique", 2 / 3)])
def test_yes_no_rule_only_for_hotpot_and_2wiki(dataset, f1):
    # "no" vs "no way" would overlap on one token: P=1, R=1/2, F1=2/3 without the rule.
    assert score_question(_question(dataset, "no way"), "no", None)["answer_f1"] == pytest.approx(f1)
    # The rule also applies when the gold is the yes/no: "yes indeed" vs "yes" (P=1/2, R=1).
    assert score_question(_question(dataset, "yes"), "yes indeed", None)["answer_f1"] == pytest.approx(f1)


@pytest.mark.parametrize("dataset, f1", [("hotpotqa", 0.0), ("2wiki", 0.0), ("musique", 1.0)])
def test_both_empty_answers(dataset, f1):
    # A gold that normalizes to nothing against an empty prediction: EM everywhere,
    # F1 only under MuSiQue's SQuAD rule.
    for prediction in ("", None, "A"):
        scores = score_question(_question(dataset, "The"), prediction, None)
        assert (scores["answer_f1"], scores["em"]) == (f1, 1.0)
    # One side empty is 0 everywhere.
    scores = score_question(_question(dataset, "Varn"), "", None)
    assert (scores["answer_f1"], scores["em"]) == (0.0, 0.0)


def test_hotpot_uses_no_aliases():
    q = _hotpot(answer="Rome", aliases=("Roma",))
    assert score_question(q, "Roma", None)["em"] == 0.0
    assert score_question(q, "Rome", None)["em"] == 1.0


@pytest.mark.parametrize("dataset", ["2wiki", "musique"])
def test_aliases_are_maxed_for_2wiki_and_musique(dataset):
    q = _2wiki("Rome", ("Roma", "Rome, Italy")) if dataset == "2wiki" else _musique("Rome", ("Roma", "Rome, Italy"))
    assert score_question(q, "roma", None)["em"] == 1.0
    partial = score_question(q, "Italy", None)  # best is "Rome, Italy": P=1, R=1/2
    assert (partial["answer_f1"], partial["em"]) == (pytest.approx(2 / 3), 0.0)


def test_unknown_dataset_is_an_error():
    q = Question("q", "Q?", "A", (), "t", POOL, (), "squad")
    with pytest.raises(ValueError, match="no scoring rules for dataset 'squad'"):
        score_question(q, "A", None)


# ---------------------------------------------------------------- support


def test_support_scores_hand_computed():
    gold = [("A", 0), ("B", 1)]
    # 1 of 3 predicted is right, 1 of 2 gold found: P=1/3, R=1/2, F1=0.4
    assert support_scores([("A", 0), ("A", 1), ("C", 0)], gold) == pytest.approx((1 / 3, 1 / 2, 0.4, 0.0))
    assert support_scores([("A", 0), ("B", 1)], gold) == (1.0, 1.0, 1.0, 1.0)
    assert support_scores([("C", 0)], gold) == (0.0, 0.0, 0.0, 0.0)
    assert support_scores([], gold) == (0.0, 0.0, 0.0, 0.0)
    assert support_scores([("A", 0)], []) == (0.0, 0.0, 0.0, 0.0)
    assert support_scores([], []) == (0.0, 0.0, 0.0, 1.0)  # EM without F1


def test_score_question_hotpot():
    scores = score_question(_hotpot(), "the Varn", [("A", 0), ("C", 0)])
    # Support P=1/2, R=1/2; joint P = 1 * 1/2, joint R = 1 * 1/2, so joint F1 = 1/2.
    assert scores == {"answer_f1": 1.0, "em": 1.0, "support_f1": pytest.approx(0.5), "sp_em": 0.0,
                      "joint_em": 0.0, "joint_f1": pytest.approx(0.5)}


def test_hotpot_sp_em_and_joint_hand_computed():
    # Answer "Varn city" vs "Varn": P=1/2, R=1, F1=2/3, EM 0.
    # Support {A0, B1, C0} vs {A0, B1}: tp 2, fp 1, fn 0 -> P=2/3, R=1, F1=0.8, EM 0.
    # Joint P = 1/2 * 2/3 = 1/3, joint R = 1 * 1 = 1, joint F1 = 2(1/3)(1)/(4/3) = 1/2
    # (not F1 * support F1 = 0.533).
    scores = score_question(_hotpot(), "Varn city", [("A", 0), ("B", 1), ("C", 0)])
    assert scores == pytest.approx({"answer_f1": 2 / 3, "em": 0.0, "support_f1": 0.8, "sp_em": 0.0,
                                    "joint_em": 0.0, "joint_f1": 0.5})
    perfect = score_question(_hotpot(), "Varn", [("B", 1), ("A", 0), ("A", 0)])  # a repeat counts once
    assert perfect == {"answer_f1": 1.0, "em": 1.0, "support_f1": 1.0, "sp_em": 1.0, "joint_em": 1.0, "joint_f1": 1.0}
    # Right answer, one fact missing: support P=1, R=1/2; joint P=1, R=1/2, F1=2/3; no joint EM.
    half = score_question(_hotpot(), "Varn", [("A", 0)])
    assert half == pytest.approx({"answer_f1": 1.0, "em": 1.0, "support_f1": 2 / 3, "sp_em": 0.0,
                                  "joint_em": 0.0, "joint_f1": 2 / 3})
    # A wrong answer zeroes the joint scores whatever the support.
    wrong = score_question(_hotpot(), "Mordia", [("A", 0), ("B", 1)])
    assert (wrong["sp_em"], wrong["joint_em"], wrong["joint_f1"]) == (1.0, 0.0, 0.0)


def test_hotpot_titles_are_case_sensitive():
    scores = score_question(_hotpot(), "Varn", [("a", 0), ("B", 1)])  # P=1/2, R=1/2
    assert (scores["support_f1"], scores["sp_em"]) == (pytest.approx(0.5), 0.0)


@pytest.mark.parametrize("dataset, f1, em", [("hotpotqa", 0.0, 1.0), ("2wiki", 0.0, 1.0), ("musique", 1.0, 1.0)])
def test_both_empty_support(dataset, f1, em):
    # HotpotQA and 2Wiki give EM without F1; MuSiQue's metrics/support.py sets both to 1.
    scores = score_question(_question(dataset, "Varn", supporting=False), "Varn", [])
    assert (scores["support_f1"], scores["sp_em"]) == (f1, em)
    if dataset == "hotpotqa":  # answer P=R=1 but support P=R=0: joint EM 1, joint F1 0
        assert (scores["joint_em"], scores["joint_f1"]) == (1.0, 0.0)
    # Citing something when there is no gold support is simply wrong.
    cited = [("A", 0)] if dataset == "hotpotqa" else [("Xawery Żuławski", 0)] if dataset == "2wiki" else [("X", 0)]
    wrong = score_question(_question(dataset, "Varn", supporting=False), "Varn", cited)
    assert (wrong["support_f1"], wrong["sp_em"]) == (0.0, 0.0)


def test_2wiki_titles_compare_lowercased():
    q = _2wiki()
    cited = [("Polish-Russian War (Film)", 1), ("xawery żuławski", 2)]
    scores = score_question(q, "Rome", cited)
    assert (scores["support_f1"], scores["sp_em"]) == (1.0, 1.0)
    # The same citations under HotpotQA's rules (exact titles) miss both.
    hotpot = Question("h", "Q?", "Rome", (), "bridge", q.paragraphs, q.supporting_facts, "hotpotqa")
    assert score_question(hotpot, "Rome", cited)["support_f1"] == 0.0


def test_2wiki_case_duplicates_each_count():
    # Exact pairs are deduped first, then titles lowercased: the two spellings below stay two
    # predicted items and both are true positives. tp 2, fp 0, fn 1 (Xawery) -> P = 1,
    # R = tp/(tp+fn) = 2/3, F1 = 0.8, EM 0.
    q = _2wiki()
    cited = [("Polish-Russian War (film)", 1), ("Polish-Russian War (Film)", 1), ("Polish-Russian War (film)", 1)]
    scores = score_question(q, "Rome", cited)
    assert (scores["support_f1"], scores["sp_em"]) == (pytest.approx(0.8), 0.0)
    # With the other fact cited too, tp 3 and fn 0: full marks.
    full = score_question(q, "Rome", cited + [("Xawery Żuławski", 2)])
    assert (full["support_f1"], full["sp_em"]) == (1.0, 1.0)


def test_no_joint_outside_hotpot():
    for q in (_2wiki(), _musique()):
        scores = score_question(q, q.answer, None)
        assert scores["joint_em"] is None and scores["joint_f1"] is None
        assert set(scores) == set(SCORE_KEYS) | set(PARTIAL_SCORE_KEYS)


def test_score_question_musique_paragraph_level():
    q = _musique()
    # Titles map to source_index; the sentence index is irrelevant and
    # two citations of the same paragraph count once.
    scores = score_question(q, "1850", [("Y", 0), ("Y", 3), ("X", 0)])
    # predicted {7, 4} vs gold {7, 9}: P=1/2, R=1/2
    assert (scores["answer_f1"], scores["em"], scores["sp_em"]) == (1.0, 1.0, 0.0)
    assert scores["support_f1"] == pytest.approx(0.5)
    assert score_question(q, "in 1850", [("Y", 0), ("Y (2)", 0)])["sp_em"] == 1.0


def test_musique_title_outside_the_pool_stays_a_wrong_prediction():
    q = _musique()
    # {7, "Nowhere"} vs {7, 9}: P=1/2, R=1/2 (dropping it would give P=1, F1=2/3).
    scores = score_question(q, "1850", [("Y", 0), ("Nowhere", 0)])
    assert (scores["support_f1"], scores["sp_em"]) == (pytest.approx(0.5), 0.0)
    # A pool title in another case is not the pool title: the mapping is exact.
    assert score_question(q, "1850", [("y", 0), ("Y (2)", 0)])["support_f1"] == pytest.approx(0.5)
    # Two different unknown titles are two wrong predictions: P=2/4, R=2/2, F1=2/3.
    both = score_question(q, "1850", [("Y", 0), ("Y (2)", 0), ("Nowhere", 0), ("Elsewhere", 1)])
    assert both["support_f1"] == pytest.approx(2 / 3)


@pytest.mark.parametrize("prediction", [None, "", "   "])
def test_score_question_missing_prediction(prediction):
    scores = score_question(_hotpot(), prediction, None)
    assert (scores["answer_f1"], scores["em"], scores["support_f1"], scores["joint_f1"]) == (0.0, 0.0, 0.0, 0.0)
    # Support is scored on its own: citations still count.
    assert score_question(_hotpot(), prediction, [("A", 0), ("B", 1)])["support_f1"] == 1.0


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


def test_aggregate_defined_averages_where_defined_and_omits_the_rest():
    scores = [
        {"sp_em": 1.0, "joint_em": 1.0, "joint_f1": 0.5},
        {"sp_em": 0.0, "joint_em": None, "joint_f1": None},
        {"sp_em": 0.0},  # a record written before these keys existed
        {},
    ]
    assert aggregate_defined(scores) == {"sp_em": pytest.approx(100 / 3), "joint_em": 100.0, "joint_f1": 50.0}
    assert aggregate_defined(scores[1:]) == {"sp_em": 0.0}
    assert aggregate_defined([]) == {}


def _record(scores: dict) -> dict:
    return {**scores, "calls": 1, "prompt_tokens": 1, "completion_tokens": 1, "cost_usd": None, "cache_hits": 0,
            "seconds": 1.0, "turns": 1, "rejected_actions": 0, "reads": 1, "searches": 0, "gold_read_share": 1.0,
            "forced_end": False, "error": None}


def test_summarize_reports_sp_em_and_joint_only_where_defined():
    hotpot = [_record(score_question(_hotpot(), "Varn", [("A", 0), ("B", 1)])),
              _record(score_question(_hotpot(), "Varn city", [("A", 0), ("B", 1), ("C", 0)]))]
    metrics = summarize(hotpot)
    assert (metrics["answer_f1"], metrics["sp_em"], metrics["joint_em"], metrics["joint_f1"]) == pytest.approx(
        (100 * (1 + 2 / 3) / 2, 50.0, 50.0, 75.0))
    musique = summarize([_record(score_question(_musique(), "1850", [("Y", 0), ("Y (2)", 0)]))])
    assert musique["sp_em"] == 100.0 and "joint_em" not in musique and "joint_f1" not in musique
    table = format_table(musique, "eir/musique").splitlines()
    cells = dict(zip(map(str.strip, table[0].split("|")), map(str.strip, table[2].split("|"))))
    assert (cells["Support EM"], cells["Joint EM"], cells["Joint F1"]) == ("100.0", "-", "-")


def test_a_repeated_title_is_scored_under_the_files_title(tmp_path):
    # The loader makes pool titles unique ("X (2)"); an official prediction file would write the
    # file's title ("X"), so that is what is compared with the supporting facts.
    from eval.data.loaders import load_file

    path = tmp_path / "dup_title.json"
    path.write_text(json.dumps([{
        "_id": "d", "question": "Q?", "answer": "a", "type": "bridge", "level": "easy",
        "context": [["X", ["First X.", " More."]], ["X", ["Second X."]], ["Y", ["Other."]]],
        "supporting_facts": [["X", 0]],
    }]))
    q = load_file(path, "hotpotqa")[0]
    assert [p.title for p in q.paragraphs] == ["X", "X (2)", "Y"]
    assert score_question(q, "a", [("X (2)", 0)])["support_f1"] == 1.0  # ("X", 0), as the official file says
    assert score_question(q, "a", [("X (2)", 1)])["support_f1"] == 0.0
    assert score_question(q, "a", [("Y", 0)])["support_f1"] == 0.0
