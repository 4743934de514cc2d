"""The shared loop with a hand-written policy (no LM): budget, fallback, rejection, forced end."""

from eir_dspy.environment import PoolEnvironment
from eir_dspy.episode import Action, Proposal, run_episode
from eir_dspy.rejection import NO_READS_LEFT, SUBMIT_ONLY_TURN
from tests.fixtures.policies import LETTERS as POOL
from tests.fixtures.policies import Scripted


def read(title):
    return Proposal(Action("read", title))


def test_unknown_title_reads_first_unread_in_pool_order():
    policy = Scripted([read("B"), read("No Such Page"), Proposal(Action("submit", answer="x"))])
    ep = run_episode("q", PoolEnvironment(POOL), policy, budget=6)
    assert [t.read_title for t in ep.turns] == ["B", "A", None]
    assert 'No unread title matches "No Such Page"; read "A" instead' in policy.seen_feedback[2]
    assert [t.title_fallback for t in ep.turns] == [False, True, False]  # recorded, not only shown


def test_budget_allows_h_reads_then_one_submit():
    policy = Scripted([read(t) for t in "ABC"] + [Proposal(Action("submit", answer="x"))])
    ep = run_episode("q", PoolEnvironment(POOL), policy, budget=3)
    assert ep.reads == 3 and ep.submitted.answer == "x" and ep.max_turns == 4 and len(ep.turns) == 4


def test_read_after_budget_is_rejected_and_episode_is_forced_to_end():
    policy = Scripted([read(t) for t in "ABCD"])
    ep = run_episode("q", PoolEnvironment(POOL), policy, budget=3)
    assert ep.reads == 3 and ep.forced_end
    assert ep.turns[-1].accepted is False and "read budget of 3 is used up" in ep.turns[-1].feedback
    assert len(ep.turns) == 4


def test_unparseable_output_is_rejected_and_consumes_the_turn():
    policy = Scripted([Proposal(None, error="not JSON")] * 3 + [read("A")])
    ep = run_episode("q", PoolEnvironment(POOL), policy, budget=2)
    assert len(ep.turns) == 3 and ep.rejected_turns == 3 and ep.reads == 0 and ep.forced_end
    assert policy.seen_feedback[1] == "Turn 1 was rejected: not JSON"


def test_a_turn_limited_episodes_read_results_count_turns_left_and_eirs_count_reads_left():
    def results(max_turns, budget, letters):
        policy = Scripted([read(t) for t in letters] + [Proposal(Action("submit", answer="x"))])
        ep = run_episode("q", PoolEnvironment(POOL), policy, budget=budget, max_turns=max_turns)
        return [t.feedback.split(". Cite")[0] for t in ep.turns if t.read_title]

    assert results(None, 3, "ABC") == ['Read "A" (2 reads left)', 'Read "B" (1 reads left)', 'Read "C" (0 reads left: your next action must be submit)']  # noqa: E501
    assert results(4, 4, "ABC") == ['Read "A" (3 turns left, counting the submit)',
                                    'Read "B" (2 turns left, counting the submit)',
                                    'Read "C" (1 turn left, the last: only a submit counts on it)']
    # Fewer reads than turns: the reads left are named once they bind.
    assert results(5, 2, "AB") == ['Read "A" (4 turns left, counting the submit; 1 read left)',
                                   'Read "B" (3 turns left, counting the submit; no reads left: only a submit counts)']


def test_the_pool_shows_its_unread_titles_and_reads_a_correction_by_title():
    env = PoolEnvironment(POOL[:3])
    ep = run_episode("q", env, Scripted([read("A"), Proposal(Action("submit", answer="x"))]), budget=2)
    assert env.catalogue() == {"unread_titles": "B\nC"} and env.render_known() == "A\nB\nC"
    assert env.read_named("b") == Action("read", title="B") and env.read_named("A") is None  # A is read
    assert env.runs_as_written(Action("read", title="C"), ep)
    assert not env.runs_as_written(Action("read", title="Z"), ep)  # it would fall back to B
    assert env.action_kinds == ("read", "submit") and not env.compact_trajectory
    assert env.last_result(ep) == ep.last_feedback  # EIR's episode (no turn limit): as recorded


def test_the_read_budget_rejection_names_the_other_actions_of_the_setting(tiny_corpus):
    from eir_dspy.corpus_environment import CorpusEnvironment

    pool = run_episode("q", PoolEnvironment(POOL), Scripted([read("A"), read("B")]), budget=1)
    assert pool.turns[1].feedback.endswith("the only valid actions now: submit")
    corpus = run_episode("q", CorpusEnvironment(tiny_corpus), Scripted([
        Proposal(Action("search", query="busan")), Proposal(Action("read", paragraph_id="12")),
        Proposal(Action("read", paragraph_id="12")), Proposal(Action("submit", answer="x"))]), budget=1, max_turns=5)
    assert corpus.turns[2].feedback.endswith("the only valid actions now: search or submit")


def test_a_turn_limited_pool_episodes_last_turn_accepts_only_a_submit():
    # H turns in all (Direct, SSR, Reflexion): a read on turn H is refused, runs nothing and ends the episode.
    policy = Scripted([read("A"), read("B"), read("C")])
    ep = run_episode("q", PoolEnvironment(POOL), policy, budget=3, max_turns=3)
    assert ep.forced_end and ep.submitted is None and len(ep.turns) == 3
    assert [t.rejection_cause for t in ep.turns] == [None, None, SUBMIT_ONLY_TURN]
    assert ep.turns[2].feedback == "turn 3 is the last turn and accepts only a submission" and not ep.turns[2].accepted
    assert ep.reads == 2 and ep.evidence.titles == ("A", "B") and ep.env.unread_titles[0] == "C"
    # A submit there is accepted as before.
    ep = run_episode("q", PoolEnvironment(POOL), Scripted([read("A"), read("B"), Proposal(Action("submit", answer="x"))]),
                     budget=3, max_turns=3)
    assert ep.submitted.answer == "x" and ep.reads == 2 and not ep.forced_end


def test_eirs_pool_episode_has_no_submit_only_turn():
    # EIR (no turn limit: H reads, then one more decision): a read on turn H + 1 with a read left still runs.
    policy = Scripted([Proposal(None, error="not JSON"), read("A"), read("B")])
    ep = run_episode("q", PoolEnvironment(POOL), policy, budget=2)
    assert ep.max_turns == 3 and ep.on_last_turn and not ep.submit_only
    assert [t.rejection_cause for t in ep.turns] == ["no_action", None, None]
    assert ep.reads == 2 and ep.turns[2].read_title == "B" and ep.forced_end
    # With its H reads spent, a read on turn H + 1 is refused by the read budget, as before.
    ep = run_episode("q", PoolEnvironment(POOL), Scripted([read("A"), read("B"), read("C")]), budget=2)
    assert [t.rejection_cause for t in ep.turns] == [None, None, NO_READS_LEFT] and ep.reads == 2
