from programs import Direct
from tests.scripted import act, field, run_program
from tests.test_eir import POOL, Q

BAND = "Tinted Windows (band)"


def run(replies, budget=6, decoding="free"):
    return run_program(Direct(budget=budget), Q, POOL, replies, decoding)


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
    assert "cites sentences you have not read: ('Tinted Windows (band)', 1)" in field(engine.prompts[1], "trajectory")
    assert "the submitted answer is empty" in field(engine.prompts[2], "trajectory")


def test_no_valid_submit_within_h_turns_scores_empty():
    titles = [p.title for p in POOL]
    pred, ledger, _ = run([act("read", titles[0]), act("read", titles[1]), act("read", titles[2])], budget=3)
    ep = pred.episode
    assert pred.answer == "" and ep.forced_end and len(ep.turns) == 3 == ledger.n_calls  # H turns in all


def test_trajectory_keeps_thoughts_actions_and_results_and_grows_at_the_end():
    _, _, engine = run([act("read", BAND, thought="QQFIRST need the band"), act("submit", answer="x")])
    traj = field(engine.prompts[1], "trajectory")
    assert traj.startswith("Turn 1\nThought: QQFIRST need the band\nAction: read 'Tinted Windows (band)'")
    assert "[1] Their first show was in Tulsa." in traj and traj.endswith("Now turn 2 of 6; 5 reads left.")
    assert field(engine.prompts[0], "titles") == field(engine.prompts[1], "titles")  # static: prefix reuse


def test_constrained_schema_bounds_citations_and_forces_submit_on_the_last_turn():
    _, _, engine = run([act("read", BAND), act("submit", answer="x")], budget=2, decoding="strict")
    first, last = engine.formats
    assert "anyOf" in first["schema"]["properties"]["action"]
    action = last["schema"]["properties"]["action"]
    assert action["properties"]["kind"] == {"const": "submit"}
    item = action["properties"]["citations"]["items"]
    assert item["properties"] == {"title": {"const": BAND}, "sentence": {"enum": [0, 1]}}
    assert "You must submit your answer now." in field(engine.prompts[1], "trajectory")
