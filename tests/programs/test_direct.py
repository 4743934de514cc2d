from eir_dspy import rejection
from eir_dspy.paragraphs import Paragraph
from programs import Direct, RunContext
from tests.fixtures.pool import POOL, Q
from tests.scripted import act, field, run_program

BAND = "Tinted Windows (band)"


def run(replies, budget=6, decoding="free"):
    return run_program(Direct(budget=budget, context=RunContext(decoding)), Q, POOL, replies)


def test_first_valid_submit_is_scored_and_later_replies_are_never_requested():
    replies = [act("read", BAND), act("submit", answer="Tulsa", citations=[(BAND, 1)]),
               act("submit", answer="LATER ANSWER")]
    pred, ledger, engine = run(replies)
    assert pred.answer == "Tulsa" and pred.citations == [(BAND, 1)]
    assert ledger.by_role() == {"action": 2} and len(engine.replies) == 1  # the third reply was never used


def test_invalid_submits_are_rejected_and_the_next_valid_one_counts():
    replies = [act("submit", answer="Tulsa", citations=[(BAND, 1)]),  # cites a sentence not read yet
               act("submit", answer="  "),  # empty answer
               act("read", BAND), act("submit", answer="Tulsa", citations=[(BAND, 1)])]
    pred, ledger, engine = run(replies)
    assert [t.accepted for t in pred.episode.turns] == [False, False, True, True]
    assert pred.answer == "Tulsa" and pred.episode.rejected_turns == 2 and ledger.n_calls == 4
    assert "cites sentences you have not read: ('Tinted Windows (band)', 1)" in field(engine.prompts[1], "last_result")
    assert "the submitted answer is empty" in field(engine.prompts[2], "last_result")


def test_no_valid_submit_within_h_turns_scores_empty():
    titles = [p.title for p in POOL]
    pred, ledger, _ = run([act("read", titles[0]), act("read", titles[1]), act("read", titles[2])], budget=3)
    ep = pred.episode
    assert pred.answer == "" and ep.forced_end and len(ep.turns) == 3 == ledger.n_calls  # H turns in all


def test_a_turn_sees_the_last_result_but_no_earlier_thought_or_action():
    pred, _, engine = run([act("read", BAND, thought="QQFIRST need the band"), act("submit", answer="x")])
    last = field(engine.prompts[1], "last_result")
    assert last.startswith('Read "Tinted Windows (band)" (5 turns left, counting the submit).')
    assert last.endswith("[1] Their first show was in Tulsa.")
    assert "QQFIRST" not in engine.prompts[1] and "Turn 1" not in engine.prompts[1]
    assert pred.episode.turns[0].reasoning == "QQFIRST need the band"  # the thought is still recorded


def test_constrained_schema_bounds_citations_and_forces_submit_on_the_last_turn():
    _, _, engine = run([act("read", BAND), act("submit", answer="x")], budget=2, decoding="strict")
    first, last = engine.formats
    assert "anyOf" in first["schema"]["properties"]["action"]
    action = last["schema"]["properties"]["action"]
    assert action["properties"]["kind"] == {"const": "submit"}
    item = action["properties"]["citations"]["items"]
    assert item["properties"] == {"title": {"const": BAND}, "sentence": {"enum": [0, 1]}}
    assert "must submit" not in engine.prompts[1] and "Now turn" not in engine.prompts[1]  # the grammar alone forces it


# What a turn-limited agent is told of its budget (H turns in all, the submit included; the paper,
# 4.2 and H.2, does not say what it is told): the turns left, and on the last turn that only a submit counts.
LETTERS = tuple(Paragraph(t, (f"{t} sentence.",), i) for i, t in enumerate("ABCDEFGH"))
LAST = "(1 turn left, the last: only a submit counts on it)"


def head(result: str) -> str:
    return result.split(". Cite a sentence below")[0]


def test_each_result_counts_the_turns_left_including_the_submit():
    replies = [act("read", t) for t in "ABCDE"] + [act("submit", answer="x", citations=[("E", 0)])]
    pred, _, engine = run_program(Direct(budget=6), Q, LETTERS, replies)
    results = [field(p, "last_result") for p in engine.prompts]
    assert results[0] == "(nothing yet: choose a paragraph to read) (6 turns left, counting the submit)"
    assert [head(r) for r in results[1:]] == [
        'Read "A" (5 turns left, counting the submit)', 'Read "B" (4 turns left, counting the submit)',
        'Read "C" (3 turns left, counting the submit)', 'Read "D" (2 turns left, counting the submit)',
        f'Read "E" {LAST}']
    assert not any("reads left" in r for r in results)
    assert pred.answer == "x" and not pred.episode.forced_end and len(pred.episode.turns) == 6


def test_the_last_turn_says_only_a_submit_counts_after_a_rejection_too():
    replies = [act("read", t) for t in "ABCD"] + [act("submit", answer=" "), act("submit", answer="x")]
    pred, _, engine = run_program(Direct(budget=6), Q, LETTERS, replies)
    assert field(engine.prompts[5], "last_result") == f"Turn 5 was rejected: the submitted answer is empty {LAST}"
    assert pred.answer == "x" and [t.accepted for t in pred.episode.turns] == [True] * 4 + [False, True]


def test_a_read_on_the_last_turn_is_refused_and_leaves_no_submission():
    # The pool's last turn accepts only a submit (H.1's corpus rule, applied to the pool's turn-limited methods).
    pred, ledger, engine = run_program(Direct(budget=3), Q, LETTERS, [act("read", t) for t in "ABC"])
    assert head(field(engine.prompts[2], "last_result")) == f'Read "B" {LAST}'
    ep = pred.episode
    assert ep.forced_end and pred.answer == "" and pred.citations == [] and ledger.n_calls == 3
    assert [t.accepted for t in ep.turns] == [True, True, False]
    assert [t.rejection_cause for t in ep.turns] == [None, None, rejection.SUBMIT_ONLY_TURN]
    assert ep.turns[2].feedback == "turn 3 is the last turn and accepts only a submission"
    assert ep.turns[2].read_title is None and ep.reads == 2  # H - 1: the refused read neither ran nor counted
    assert ep.evidence.titles == ("A", "B")


def test_a_recorded_direct_episode_counts_the_refused_last_turn():
    """What eval.run keeps of it: reads H - 1, the cause counted, and (C.2) a wrong answer, not an unreadable one."""
    from eval.analyze import parse_failures, rejections
    from eval.files.question_record import as_records
    from tests.fixtures.pool import record_of

    record, _ = record_of(Direct(budget=3), [act("read", BAND), act("read", "Tinted Windows (album)"),
                                             act("read", "Act of Congress")])
    assert record["reads"] == 2 and record["forced_end"] and record["prediction"] == ""
    assert record["rejections_by_cause"] == {rejection.SUBMIT_ONLY_TURN: 1}
    assert rejections.by_category([record])[1] == {"non-submit on the last turn": 1}
    assert parse_failures.status(as_records([record])[0]) == parse_failures.READABLE
