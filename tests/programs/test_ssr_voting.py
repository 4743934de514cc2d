"""Every clause of SSR's step-4 rule and the step-5 choice, on hand-made judgments."""

from programs.ssr_voting import Judgment, StepVote, step_to_refine
from tests.scripted import act


def accept(c=0.9):
    return Judgment("accept", c)


def reject(key="fix", c=0.8):
    return Judgment("reject", c, correction=str(key), key=key)


INVALID = Judgment(None)


def vote(*judgments, step="facts"):
    return StepVote(step, tuple(judgments))


def test_two_agreeing_rejections_out_of_three_qualify():
    v = vote(reject(), reject(), accept())
    assert v.qualifies and v.agreed.correction == "fix"


def test_one_rejection_never_qualifies_even_when_the_others_are_invalid():
    v = vote(reject(), INVALID, INVALID)
    assert len(v.valid) == 1 and v.rejections and not v.qualifies  # (a) needs two rejections


def test_rejections_must_be_a_majority_of_valid_judgments():
    # 2 of 4 valid is not a strict majority (b); the same 2 of 3 valid is.
    assert not vote(reject(), reject(), accept(), accept()).qualifies
    assert vote(reject(), reject(), accept(), INVALID).qualifies


def test_rejections_must_agree_on_a_correction():
    assert not vote(reject("a"), reject("b"), accept()).qualifies  # (c): 1 of 2 is no majority
    assert vote(reject("a"), reject("a"), reject("b")).qualifies
    assert not vote(reject("a"), reject("b"), reject("c")).qualifies


def test_invalid_judgments_do_not_vote():
    out_of_range = Judgment("reject", 1.5, "fix", "fix")
    no_correction = Judgment("reject", 0.9, "", None)
    assert not out_of_range.valid and not no_correction.valid and not INVALID.valid
    v = vote(reject(), reject(), out_of_range, no_correction, accept())
    assert len(v.valid) == 3 and v.qualifies


def test_confidence_is_how_sure_the_verifiers_are_that_the_step_is_right():
    v = vote(accept(0.9), reject(c=0.7), INVALID)
    assert abs(v.confidence - (0.9 + 0.3) / 2) < 1e-9


def test_lowest_confidence_qualifying_step_is_refined_and_ties_go_to_the_later_step():
    facts = vote(reject(c=0.6), reject(c=0.6), accept(0.5), step="facts")  # confidence (0.4+0.4+0.5)/3
    just = vote(reject(c=0.9), reject(c=0.9), reject(c=0.9), step="justification")  # 0.1
    action = vote(accept(), accept(), accept(), step="action")  # does not qualify
    assert step_to_refine([facts, just, action]).step == "justification"
    tie_a = vote(reject(c=0.9), reject(c=0.9), step="facts")
    tie_b = vote(reject(c=0.9), reject(c=0.9), step="action")
    assert step_to_refine([tie_a, tie_b]).step == "action"
    assert step_to_refine([action]) is None


# --- D.1's fallback: an agreed correction to the action step --------------------------------------------


def test_one_rejection_is_no_agreed_correction_whatever_the_other_votes():
    """The old rule took a lone rejection as 'agreed' (a majority of one); D.1's agreement is clause (c)
    of a step whose own votes qualify."""
    assert vote(reject("read: X"), accept(), accept(), step="action").agreed is None
    assert vote(reject("read: X"), INVALID, INVALID, step="action").agreed is None
    assert vote(reject("read: X"), step="action").agreed is None


def test_an_agreed_correction_needs_the_steps_own_qualifying_majority():
    # Two agreeing rejections among five valid votes: agreeing, but not a majority of the valid judgments (b).
    split = vote(reject("a"), reject("a"), accept(), accept(), accept(), step="action")
    assert not split.qualifies and split.agreed is None
    # Rejections that do not agree (c): none.
    assert vote(reject("a"), reject("b"), reject("c"), step="action").agreed is None
    # A qualifying step: its majority correction, from the first rejection carrying it.
    both = vote(accept(), reject("a", c=0.7), reject("b"), reject("a", c=0.6), step="action")
    assert both.qualifies and both.agreed.key == "a" and both.agreed.confidence == 0.7
    assert both.summary()["agreed_correction"] == "a" and split.summary()["agreed_correction"] is None


def ssr_run(action_votes):
    """SSR on the scripted LM: the facts step qualifies (three agreeing rejections, the least confident step),
    its refinement is unusable twice, and the action step gets `action_votes` on every turn."""
    from tests.fixtures.pool import ACT
    from tests.fixtures.ssr_script import Script, judge, run

    verdicts = {"facts": [judge("reject", "the album is by the band", 0.9)], "action": action_votes}
    script = Script([act("read", ACT), act("submit", answer="x")], verdicts, refined=["not json", "not json"])
    pred, ledger, _ = run(script)
    return pred, ledger


def test_ssr_does_not_execute_a_lone_action_rejections_correction():
    from tests.fixtures.pool import ACT, BAND
    from tests.fixtures.ssr_script import judge

    # One of three verifiers rejects the action step with a usable correction; two accept it.
    pred, ledger = ssr_run([judge("reject", f"read: {BAND}", 0.9), judge(), judge()])
    first = pred.trajectory["ssr"][0]
    assert first["refined_step"] == "facts" and first["executed"] == "proposal (refinement gave no valid action)"
    assert pred.episode.turns[0].read_title == ACT and ledger.by_role()["refine"] == 2
    assert [v["agreed_correction"] for v in first["votes"]] == ["the album is by the band", None, None]


def test_ssr_falls_back_to_the_action_steps_agreed_correction_when_another_step_was_refined():
    from tests.fixtures.pool import BAND
    from tests.fixtures.ssr_script import judge

    # Two of three reject the action step and agree: it qualifies too, but the facts step is less certain.
    pred, _ = ssr_run([judge("reject", f"read: {BAND}", 0.6), judge("reject", f"read: {BAND}", 0.6), judge()])
    first = pred.trajectory["ssr"][0]
    assert first["refined_step"] == "facts" and first["executed"] == "agreed correction of the action step"
    assert pred.episode.turns[0].read_title == BAND
