"""SSR's control flow on a scripted LM: call counts, refinement, fallbacks, independent votes."""

from programs import Direct
from tests.fixtures.pool import ACT, ALBUM, BAND, POOL, Q
from tests.fixtures.prompts import input_fields
from tests.fixtures.ssr_script import Script, judge, run
from tests.scripted import act, field, run_program

DIRECT_INPUTS = ["question", "unread_titles", "last_result"]


def role(prompt):
    """Which of SSR's calls a prompt is, by its instructions."""
    for text, name in (("Break the proposed action", "decompose"), ("Check one step", "verify"),
                       ("A verifier found a wrong step", "refine")):
        if text in prompt:
            return name
    return "action"


def test_verification_always_runs_two_plus_nine_calls_per_turn_without_refinement():
    pred, ledger, _ = run(Script([act("read", BAND), act("submit", answer="Tulsa")]))
    assert pred.answer == "Tulsa"
    assert ledger.by_role() == {"action": 2, "decompose": 2, "verify": 18}
    assert [e["executed"] for e in pred.trajectory["ssr"]] == ["proposal", "proposal"]


def test_a_refined_turn_costs_one_more_call_and_executes_the_refined_action():
    # Two of three votes reject the action step and agree on reading the band page.
    verdicts = {"action": [judge("reject", f"read: {BAND}", 0.9), judge("reject", f"READ: {BAND.lower()}", 0.8),
                           judge()]}
    script = Script([act("read", ACT), act("submit", answer="Tulsa")], verdicts, refined=[act("read", BAND)])
    pred, ledger, engine = run(script, budget=2)
    assert pred.episode.turns[0].read_title == BAND
    # Turn 1: 12 calls. Turn 2: the same corrections now name a paragraph already read, so they are
    # invalid, nothing qualifies and the turn costs 11.
    assert ledger.by_role() == {"action": 2, "decompose": 2, "verify": 18, "refine": 1}
    assert pred.trajectory["ssr"][1]["executed"] == "proposal" and pred.answer == "Tulsa"
    first = pred.trajectory["ssr"][0]
    assert first["refined_step"] == "action" and first["executed"] == "refined"
    refine_prompt = next(p for p in engine.prompts if "A verifier found a wrong step" in p)
    assert field(refine_prompt, "correction") == f"read: {BAND}" and field(refine_prompt, "step") == "action"


def test_invalid_refinement_falls_back_to_the_agreed_action_correction():
    verdicts = {"action": [judge("reject", f"read: {BAND}"), judge("reject", f"read: {BAND}"), judge()]}
    # The refinement asks to read a title that is not in the pool: not a valid action.
    script = Script([act("read", ACT), act("submit", answer="x")], verdicts, refined=[act("read", "Nowhere"), "junk"])
    pred, _, _ = run(script)
    assert pred.episode.turns[0].read_title == BAND
    assert pred.trajectory["ssr"][0]["executed"] == "agreed correction of the action step"


def test_without_an_agreed_action_correction_the_original_action_is_executed():
    verdicts = {"facts": [judge("reject", "the album is by the band", 0.9)]}  # all three agree: facts qualifies
    script = Script([act("read", ACT), act("submit", answer="x")], verdicts, refined=["not json", "not json"])
    pred, ledger, _ = run(script)
    first = pred.trajectory["ssr"][0]
    assert first["refined_step"] == "facts" and first["executed"] == "proposal (refinement gave no valid action)"
    assert pred.episode.turns[0].read_title == ACT and ledger.by_role()["refine"] == 2


def test_votes_are_independent_samples_at_the_verifier_temperature():
    _, _, engine = run(Script([act("submit", answer="x")]), budget=2, votes=3)
    verify = [c for p, c in zip(engine.prompts, engine.configs) if "Check one step" in p]
    assert len(verify) == 9 and {c.temperature for c in verify} == {0.7}
    assert [c.seed for c in verify[:3]] == [0, 1, 2]
    _, _, engine = run(Script([act("submit", answer="x")]), budget=2, verifier_temperature=0.0, votes=2)
    verify = [c for p, c in zip(engine.prompts, engine.configs) if "Check one step" in p]
    assert len(verify) == 6 and {c.temperature for c in verify} == {0.0} and {c.seed for c in verify} == {None}


def test_an_unparseable_proposal_is_rejected_without_verification():
    pred, ledger, _ = run(Script(["no json here", act("submit", answer="x")]))
    assert [t.accepted for t in pred.episode.turns] == [False, True]
    assert ledger.by_role() == {"action": 2, "decompose": 1, "verify": 9}


def test_the_proposal_is_directs_turn_and_the_added_calls_see_the_sentences_read():
    moves = [("read", BAND), ("read", ACT)]
    submit = dict(answer="Tulsa", citations=[(BAND, 1)])
    script = Script([act(k, t, thought=f"QQTHOUGHT{i}") for i, (k, t) in enumerate(moves)] + [act("submit", **submit)])
    pred, _, engine = run(script, budget=3)
    _, _, direct = run_program(Direct(budget=3), Q, POOL, [act(k, t) for k, t in moves] + [act("submit", **submit)])
    assert pred.answer == "Tulsa" and len(direct.prompts) == 3
    proposals = [p for p in engine.prompts if role(p) == "action"]
    # Exactly Direct's inputs, with Direct's values after the same actions.
    assert [input_fields(p) for p in proposals] == [input_fields(p) for p in direct.prompts] == [DIRECT_INPUTS] * 3
    assert [[field(p, n) for n in DIRECT_INPUTS] for p in proposals] == \
           [[field(p, n) for n in DIRECT_INPUTS] for p in direct.prompts]
    for p in proposals:  # no trajectory, no list of all titles, no turn line, no earlier thought
        assert "[[ ## trajectory ## ]]" not in p and "[[ ## titles ## ]]" not in p and "Now turn" not in p
        assert "QQTHOUGHT" not in p
    assert ALBUM in field(proposals[2], "unread_titles") and BAND not in proposals[2]  # read on turn 1, not shown
    # Decompose sees the proposal and the sentences read; verify also what can be read next.
    decompose = [p for p in engine.prompts if role(p) == "decompose"]
    assert [input_fields(p) for p in decompose] == [["question", "evidence", "proposal"]] * 3
    assert field(decompose[1], "proposal") == "Thought: QQTHOUGHT1\nAction: read 'Act of Congress'"
    assert field(decompose[0], "evidence") == "(no evidence was read)"
    assert field(decompose[2], "evidence") == (f"## {BAND}\n[0] Tinted Windows is a supergroup.\n"
                                               f"[1] Their first show was in Tulsa.\n\n## {ACT}\n[0] Act of Congress is a group.")
    verify = [p for p in engine.prompts if role(p) == "verify"]
    assert {tuple(input_fields(p)) for p in verify} == {("question", "evidence", "unread_titles", "turns_left", "steps",
                                                         "step")}
    assert field(verify[-1], "unread_titles") == ALBUM and "QQTHOUGHT0" not in verify[-1]


def test_the_refinement_sees_the_sentences_read_and_the_unread_titles():
    verdicts = {"action": [judge("reject", f"read: {BAND}", 0.9), judge("reject", f"read: {BAND}", 0.8), judge()]}
    script = Script([act("read", ACT), act("submit", answer="Tulsa")], verdicts, refined=[act("read", BAND)])
    _, _, engine = run(script, budget=2)
    refine = next(p for p in engine.prompts if role(p) == "refine")
    assert input_fields(refine) == ["question", "evidence", "unread_titles", "turns_left", "steps", "step", "correction"]
    assert field(refine, "unread_titles").splitlines() == [ALBUM, BAND, ACT]
    assert field(refine, "evidence") == "(no evidence was read)"


LAST = "(1 turn left, the last: only a submit counts on it)"


def test_on_the_last_turn_neither_a_refinement_nor_a_correction_turns_the_submit_into_a_read():
    # Turn 1: every vote accepts. Turn 2 (the last of H = 2): two votes reject the action step and agree on
    # reading the album page, and the refinement reads it too; only a submit can run there, so the proposal's does.
    verdicts = {"action": [judge(), judge(), judge(),
                           judge("reject", f"read: {ALBUM}", 0.9), judge("reject", f"read: {ALBUM}", 0.8), judge()]}
    submit = act("submit", answer="Tulsa", citations=[(BAND, 1)])
    script = Script([act("read", BAND), submit], verdicts, refined=[act("read", ALBUM)])
    pred, ledger, engine = run(script, budget=2)
    last = pred.trajectory["ssr"][1]
    assert last["refined_step"] == "action" and last["executed"] == "proposal (refinement gave no valid action)"
    assert pred.answer == "Tulsa" and pred.citations == [(BAND, 1)] and not pred.episode.forced_end
    assert [t.accepted for t in pred.episode.turns] == [True, True] and pred.episode.reads == 1
    assert ledger.by_role() == {"action": 2, "decompose": 2, "verify": 18, "refine": 1}
    # Verify and refine are told the turns left, as Direct's turn is with its last result.
    verify = [p for p in engine.prompts if role(p) == "verify"]
    assert [field(p, "turns_left") for p in verify] == ["(2 turns left, counting the submit)"] * 9 + [LAST] * 9
    refine = next(p for p in engine.prompts if role(p) == "refine")
    assert field(refine, "turns_left") == LAST
    assert field([p for p in engine.prompts if role(p) == "action"][1], "last_result").startswith(f'Read "{BAND}" {LAST}')


def test_before_the_last_turn_the_same_correction_to_a_read_runs():
    verdicts = {"action": [judge("reject", f"read: {ALBUM}", 0.9), judge("reject", f"read: {ALBUM}", 0.8), judge()]}
    script = Script([act("submit", answer="Tulsa"), act("submit", answer="x")], verdicts, refined=["junk", "junk"])
    pred, _, _ = run(script, budget=3)
    first = pred.trajectory["ssr"][0]
    assert first["executed"] == "agreed correction of the action step" and pred.episode.turns[0].read_title == ALBUM
