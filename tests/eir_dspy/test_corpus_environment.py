"""The corpus setting's rules in the shared loop, with a hand-written policy (no LM)."""

import pytest

from eir_dspy import rejection
from eir_dspy.corpus_environment import FUTILE_REJECT, FUTILE_RUN, READS, TURNS, CorpusEnvironment
from eir_dspy.environment import PoolEnvironment
from eir_dspy.episode import Action, Proposal, run_episode
from programs.setting import new_environment
from tests.fixtures.policies import LETTERS, Scripted


def search(q):
    return Proposal(Action("search", query=q))


def read(i):
    return Proposal(Action("read", paragraph_id=i))


def submit(a="x"):
    return Proposal(Action("submit", answer=a))


def run(tiny_corpus, proposals, **options):
    policy = Scripted(proposals)
    env = CorpusEnvironment(tiny_corpus, **options)
    return run_episode("q", env, policy, budget=READS, max_turns=TURNS), env, policy


def test_search_lists_ids_and_titles_only_and_results_accumulate(tiny_corpus):
    ep, env, policy = run(tiny_corpus, [search("seoul"), search("busan port"), submit()])
    shown = policy.seen_feedback[1]
    assert "30 | Running Man" in shown and "7 | Seoul" in shown
    assert "capital" not in shown and "runners" not in shown  # no text, and no scores
    assert list(env.found) == ["7", "30", "12"] and ep.searches == 2 and ep.reads == 0
    assert "(1 new)" in policy.seen_feedback[2]


def test_only_found_ids_are_readable_and_an_invalid_read_costs_a_read(tiny_corpus):
    ep, env, policy = run(tiny_corpus, [read("12"), search("busan"), read("[12]"), submit()])
    assert [t.accepted for t in ep.turns] == [False, True, True, True]
    assert "'12' was not returned by any search in this trial" in policy.seen_feedback[1]
    assert ep.reads == 2 and ep.reads_left == READS - 2
    assert [(r.title, r.sentence_index, r.turn) for r in ep.evidence.records] == [("Busan", 0, 3), ("Busan", 1, 3)]


def test_re_reading_costs_a_turn_and_a_read_but_adds_no_evidence(tiny_corpus):
    ep, _, policy = run(tiny_corpus, [search("busan"), read("12"), read("12"), submit()])
    assert ep.reads == 2 and len(ep.evidence) == 2
    assert "again (no new evidence)" in policy.seen_feedback[3]


def hit_lines(feedback: str) -> list[str]:
    """A search result's `id | title` lines (everything after its first line)."""
    return feedback.splitlines()[1:]


def test_a_repeated_search_runs_and_returns_the_same_hits_adding_nothing(tiny_corpus):
    # H.1 names no rejection for a search repeating an earlier one: it runs, costing its turn (not a read).
    ep, env, policy = run(tiny_corpus, [search("busan ports"), read("12"), search("Port BUSAN"), submit()])
    assert [t.accepted for t in ep.turns] == [True, True, True, True] and len(ep.turns) == 4
    assert ep.searches == 2 and ep.reads == 1
    first, again = policy.seen_feedback[1], policy.seen_feedback[3]
    assert hit_lines(again) == hit_lines(first) and "12 | Busan" in hit_lines(first)
    assert "(0 new; the same search as your turn 1, so the same paragraphs, none added to your results)" in again
    assert list(env.found) == [line.split(" | ")[0] for line in hit_lines(first)]  # the accumulated results unchanged


def test_a_search_with_no_indexed_word_finds_no_paragraph_and_costs_the_turn(tiny_corpus):
    ep, env, policy = run(tiny_corpus, [search("the of and"), search("busan"), submit()])
    assert [t.accepted for t in ep.turns] == [True, True, True] and ep.searches == 2 and ep.reads == 0
    shown = policy.seen_feedback[1]
    assert shown.startswith("Search 'the of and' found no paragraph: none of its words is indexed")
    assert ep.turns[0].rejection_cause is None and list(env.found) == ["12"]
    assert len(ep.turns) == 3  # the empty search spent its turn like any search


def test_the_reject_option_keeps_the_earlier_rule_with_its_causes(tiny_corpus):
    ep, _, policy = run(tiny_corpus, [search("busan ports"), search("Port BUSAN"), search("the of and"), submit()],
                        futile_searches=FUTILE_REJECT)
    assert [t.accepted for t in ep.turns] == [True, False, False, True] and ep.searches == 1
    assert [t.rejection_cause for t in ep.turns] == [None, rejection.REPEATED_SEARCH, rejection.EMPTY_SEARCH, None]
    assert "repeats your search of turn 1" in policy.seen_feedback[2] and "(e.g. 12)" in policy.seen_feedback[2]
    assert "has no indexed word" in policy.seen_feedback[3]
    assert ep.reads == 0 and len(ep.turns) == 4  # each rejection cost its turn, not a read


def test_the_futile_searches_option_is_checked_and_threaded_through_new_environment(tiny_corpus):
    with pytest.raises(ValueError, match="futile_searches must be one of run, reject"):
        CorpusEnvironment(tiny_corpus, futile_searches="skip")
    assert new_environment((), tiny_corpus).futile_searches == FUTILE_RUN  # the paper's default
    assert new_environment((), tiny_corpus, futile_searches=FUTILE_REJECT).futile_searches == FUTILE_REJECT
    assert isinstance(new_environment(LETTERS, None, futile_searches=FUTILE_REJECT), PoolEnvironment)
    with pytest.raises(ValueError):
        new_environment(LETTERS, None, futile_searches="skip")


def test_the_last_turn_accepts_only_a_submission(tiny_corpus):
    ep, _, policy = run(tiny_corpus, [search(f"word{i}") for i in range(TURNS)])
    assert len(ep.turns) == TURNS and ep.forced_end and ep.submitted is None
    assert not ep.turns[-1].accepted and "is the last turn and accepts only a submission" in ep.turns[-1].feedback
    assert all(t.accepted and "found no paragraph" in t.feedback for t in ep.turns[:-1])  # none is indexed


def test_reads_stop_at_the_budget_but_searching_goes_on(tiny_corpus):
    proposals = [search("zebra"), read("4"), read("9"), read("4"), read("9"), read("4"), read("9"), read("4"),
                 search("seoul"), submit("y")]
    ep, _, policy = run(tiny_corpus, proposals)
    assert ep.reads == READS and ep.turns[7].accepted is False and ep.turns[8].accepted
    assert ep.submitted.answer == "y"


def test_direct_runs_a_repeated_and_an_empty_search_by_default(tiny_corpus):
    """Through a method (scripted LM): the programs' environment takes the paper's default."""
    from programs import Direct
    from tests.fixtures.corpus_turns import act
    from tests.fixtures.corpus_turns import run as run_program

    pred, ledger, engine = run_program(Direct(), tiny_corpus, [
        act("search", query="busan"), act("search", query="BUSAN"), act("search", query="the of and"),
        act("read", pid="12"), act("submit", answer="Busan", citations=[("Busan", 1)])])
    ep = pred.episode
    assert [t.accepted for t in ep.turns] == [True] * 5 and ep.searches == 3 and ep.reads == 1
    assert [t.rejection_cause for t in ep.turns] == [None] * 5
    assert pred.answer == "Busan" and ledger.by_role() == {"action": 5}
    assert "(0 new; the same search as your turn 1" in engine.prompts[2]
    assert "found no paragraph: none of its words is indexed" in engine.prompts[3]


def test_the_corpus_shows_its_search_results_and_reads_a_correction_by_found_id(tiny_corpus):
    ep, env, _ = run(tiny_corpus, [search("busan port"), read("12"), submit()])
    shown = env.render_found()
    assert env.catalogue() == {"search_results": shown} and env.render_known() == shown and "12 | Busan (read)" in shown
    assert env.read_named("[12]") == Action("read", paragraph_id="12")
    assert env.read_named("999") is None  # no search of this trial found it
    assert not env.runs_as_written(Action("read", paragraph_id="999"), ep)
    assert env.action_kinds == ("search", "read", "submit") and env.compact_trajectory
    assert env.last_result(ep) == ep.last_feedback  # no turns-left note in the corpus
