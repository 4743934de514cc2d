"""Every clause of SSR's step-4 rule and the step-5 choice, on hand-made judgments."""

from programs.ssr_voting import Judgment, StepVote, step_to_refine


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
