"""The corpus setting's rules in the shared loop, with a hand-written policy (no LM)."""

from eir_dspy.corpus_environment import READS, TURNS, CorpusEnvironment
from eir_dspy.episode import Action, Proposal, run_episode
from tests.eir_dspy.test_episode import Scripted


def search(q):
    return Proposal(Action("search", query=q))


def read(i):
    return Proposal(Action("read", paragraph_id=i))


def submit(a="x"):
    return Proposal(Action("submit", answer=a))


def run(tiny_corpus, proposals):
    policy = Scripted(proposals)
    env = CorpusEnvironment(tiny_corpus)
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


def test_a_repeated_search_is_rejected_with_a_pointer_to_its_results(tiny_corpus):
    ep, _, policy = run(tiny_corpus, [search("busan ports"), search("Port BUSAN"), submit()])
    assert [t.accepted for t in ep.turns] == [True, False, True] and ep.searches == 1
    assert "repeats your search of turn 1" in policy.seen_feedback[2] and "(e.g. 12)" in policy.seen_feedback[2]


def test_search_without_indexed_words_is_rejected(tiny_corpus):
    _, _, policy = run(tiny_corpus, [search("the of and"), submit()])
    assert "has no indexed word" in policy.seen_feedback[1]


def test_the_last_turn_accepts_only_a_submission(tiny_corpus):
    ep, _, policy = run(tiny_corpus, [search(f"word{i}") for i in range(TURNS)])
    assert len(ep.turns) == TURNS and ep.forced_end and ep.submitted is None
    assert not ep.turns[-1].accepted and "is the last turn and accepts only a submission" in ep.turns[-1].feedback
    assert all(t.accepted or "no indexed word" in t.feedback for t in ep.turns[:-1])


def test_reads_stop_at_the_budget_but_searching_goes_on(tiny_corpus):
    proposals = [search("zebra"), read("4"), read("9"), read("4"), read("9"), read("4"), read("9"), read("4"),
                 search("seoul"), submit("y")]
    ep, _, policy = run(tiny_corpus, proposals)
    assert ep.reads == READS and ep.turns[7].accepted is False and ep.turns[8].accepted
    assert ep.submitted.answer == "y"
