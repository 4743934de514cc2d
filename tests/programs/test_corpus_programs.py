"""EIR, Direct, SSR and Reflexion in the corpus setting, on a scripted LM over the tiny corpus."""

from programs import EIR, SSR, Direct, Reflexion
from signatures.search_turns import PLAN_FIELDS
from tests.fixtures.corpus_turns import act, eir_turn, run
from tests.fixtures.prompts import input_fields, output_fields
from tests.scripted import field, final


def test_eir_searches_reads_by_id_and_answers_from_evidence_only(tiny_corpus):
    concl = {"id": None, "claim": "QQCLAIM Busan hosts a festival", "status": "supported",
             "citations": [{"title": "Busan", "sentence": 1}]}
    pred, ledger, engine = run(EIR(), tiny_corpus, [
        eir_turn("search", query="film festival port"),
        eir_turn("read", pid="12"),
        eir_turn("submit", answer="QQSUBMIT Busan", concls=[concl]),
        final("Busan", [("Busan", 1)]),
    ])
    assert pred.answer == "Busan" and pred.episode.searches == 1 and pred.episode.reads == 1
    assert "12 | Busan" in field(engine.prompts[1], "search_results")
    assert "[1] It hosts a film festival." in field(engine.prompts[2], "last_result")
    assert pred.trajectory["conclusions"][0]["claim"] == "QQCLAIM Busan hosts a festival"
    for leaked in ("QQCLAIM", "QQSUBMIT", "Film festival"):  # nor the titles it found but did not read
        assert leaked not in engine.prompts[-1]
    assert ledger.by_role() == {"action": 3, "final": 1}


def test_eir_answers_from_what_it_read_when_turn_12_is_not_a_submit(tiny_corpus):
    replies = [eir_turn("search", query="busan"), eir_turn("read", pid="12")]
    replies += [eir_turn("search", query=f"w{i}") for i in range(10)] + [final("Busan")]
    pred, ledger, _ = run(EIR(), tiny_corpus, replies)
    assert pred.episode.forced_end and len(pred.episode.turns) == 12 and pred.answer == "Busan"
    assert ledger.by_role() == {"action": 12, "final": 1}


DIRECT_INPUTS = ["question", "search_results", "recent_paragraphs", "last_result"]  # B.3's corpus prompt


def test_direct_sees_the_search_results_the_two_latest_paragraphs_and_the_last_result(tiny_corpus):
    pred, _, engine = run(Direct(), tiny_corpus, [
        act("search", query="seoul busan zebra"),
        act("read", pid="7"), act("read", pid="12"), act("read", pid="4"),
        act("submit", answer="Busan", citations=[("Busan", 1)]),  # Busan was read, though no longer shown whole
    ])
    assert pred.answer == "Busan" and pred.citations == [("Busan", 1)] and pred.episode.reads == 3
    assert [input_fields(p) for p in engine.prompts] == [DIRECT_INPUTS] * 5
    assert [field(p, "recent_paragraphs") for p in engine.prompts[:3]] == [
        "(none read yet)", "(none read yet)", "## Seoul\n[0] Seoul is the capital of South Korea."]
    last = engine.prompts[-1]
    # Only the two read last (older first): Seoul, read three turns back, is gone.
    assert field(last, "recent_paragraphs") == ("## Busan\n[0] Busan is a port city.\n[1] It hosts a film festival."
                                                "\n\n## Twin B\n[0] Zebra crossing.")
    assert "capital" not in last
    assert field(last, "search_results").splitlines()[:3] == ["12 | Busan (read)", "7 | Seoul (read)", "4 | Twin B (read)"]
    assert field(last, "last_result").endswith("[0] Zebra crossing.")
    assert "[[ ## trajectory ## ]]" not in last and "Now turn" not in last


def test_a_re_read_paragraph_counts_as_read_most_recently(tiny_corpus):
    _, _, engine = run(Direct(), tiny_corpus, [
        act("search", query="seoul busan zebra"), act("read", pid="7"), act("read", pid="12"), act("read", pid="4"),
        act("read", pid="7"), act("submit", answer="Seoul"),
    ])
    assert field(engine.prompts[-1], "recent_paragraphs") == ("## Twin B\n[0] Zebra crossing.\n\n"
                                                              "## Seoul\n[0] Seoul is the capital of South Korea.")


def test_direct_writes_what_its_action_should_establish_expects_and_how_progress_is_judged(tiny_corpus):
    pred, _, engine = run(Direct(), tiny_corpus, [
        act("search", query="busan port", thought="QQT need the port",
            plan=("QQE which city is a port", "QQR titles with ids", "QQP a port city among the titles")),
        act("submit", answer="Busan", thought="none read", plan=("the answer", "a score", "the submit counts")),
    ])
    assert [output_fields(p) for p in engine.prompts] == [["thought", *PLAN_FIELDS, "action"]] * 2
    assert PLAN_FIELDS == ("establish", "expected_result", "progress")
    # The model writes them (not fixed instruction text) and the trajectory records them with the thought.
    assert "Progress is judged" not in engine.prompts[0] and "expected result:" not in engine.prompts[0]
    assert pred.trajectory["turns"][0]["reasoning"] == ("QQT need the port\nShould establish: QQE which city is a port\n"
                                                        "Expected result: QQR titles with ids\n"
                                                        "Progress judged by: QQP a port city among the titles")
    assert pred.episode.turns[1].reasoning.splitlines()[1:] == [
        "Should establish: the answer", "Expected result: a score", "Progress judged by: the submit counts"]
    assert "QQE" not in engine.prompts[1] and "QQT" not in engine.prompts[1]  # recorded, not shown again


def test_direct_output_without_the_plan_fields_is_rejected_like_any_missing_field(tiny_corpus):
    no_plan = {"thought": "t", "action": {"kind": "search", "query": "busan", "paragraph_id": "", "answer": ""}}
    pred, _, _ = run(Direct(), tiny_corpus, [no_plan, act("submit", answer="Busan")])
    assert [t.accepted for t in pred.episode.turns] == [False, True] and pred.episode.searches == 0


def test_ssr_verifies_in_the_corpus_at_temperature_zero_and_parses_search_corrections(tiny_corpus):
    accept = {"verdict": "accept", "correction": "", "confidence": 0.9}
    reject = {"verdict": "reject", "correction": "search: busan port", "confidence": 0.9}
    steps = {"facts": "none", "justification": "j", "action": "search seoul"}
    refine = act("search", query="busan port")
    replies = [act("search", query="seoul"), steps, accept, accept, accept, accept, reject, reject, refine,
               act("read", pid="12"), steps, *[accept] * 6,
               act("submit", answer="Busan", citations=[("Busan", 0)]), steps, *[accept] * 6]
    pred, ledger, engine = run(SSR(verifier_temperature=0.0, votes=2), tiny_corpus, replies)
    assert pred.answer == "Busan" and pred.trajectory["ssr"][0]["executed"] == "refined"
    assert [t.action["query"] for t in pred.episode.turns[:1]] == ["busan port"]
    verify_configs = [c for c, p in zip(engine.configs, engine.prompts) if "step to check" in p]
    assert verify_configs and all(c.temperature == 0.0 for c in verify_configs)
    assert "`search: <keywords>`" in engine.prompts[2] and field(engine.prompts[8], "search_results") == "(no searches yet)"
    assert "12 | Busan" in field(engine.prompts[9], "search_results")  # the refined search ran
    # The proposal is Direct's corpus turn; the added calls see the sentences read, not a trajectory.
    proposals = [engine.prompts[i] for i in (0, 9, 17)]
    assert [input_fields(p) for p in proposals] == [DIRECT_INPUTS] * 3
    assert [output_fields(p) for p in proposals] == [["thought", *PLAN_FIELDS, "action"]] * 3
    assert field(proposals[2], "recent_paragraphs") == "## Busan\n[0] Busan is a port city.\n[1] It hosts a film festival."
    assert input_fields(engine.prompts[1]) == ["question", "evidence", "proposal"]
    assert input_fields(engine.prompts[2]) == ["question", "evidence", "search_results", "turns_left", "steps", "step"]
    assert input_fields(engine.prompts[8]) == ["question", "evidence", "search_results", "turns_left", "steps", "step",
                                               "correction"]
    # Verify and refine are told the trial's turns left (12 in the corpus), the reads once they bind.
    assert field(engine.prompts[2], "turns_left") == field(engine.prompts[8], "turns_left") == \
        "(12 turns left, counting the submit; 6 reads left)"
    assert field(engine.prompts[19], "turns_left") == "(10 turns left, counting the submit; 5 reads left)"
    assert output_fields(engine.prompts[8]) == ["thought", "action"]  # the refinement writes no plan
    assert field(engine.prompts[18], "evidence") == "## Busan\n[0] Busan is a port city.\n[1] It hosts a film festival."
    assert not any("[[ ## trajectory ## ]]" in p for p in engine.prompts)


def test_reflexion_trials_restart_without_earlier_search_results(tiny_corpus):
    replies = [act("search", query="seoul"), act("read", pid="7"), act("submit", answer="Seoul", citations=[]),
               {"reflection": "QQLESSON look for the port"},
               act("read", pid="7"), act("search", query="busan"), act("submit", answer="Busan")]
    pred, _, engine = run(Reflexion(trials=3), tiny_corpus, replies, oracle=lambda a: a == "Busan")
    first, second = pred.episodes
    assert pred.answer == "Busan" and len(pred.episodes) == 2
    assert not second.turns[0].accepted and "not returned by any search in this trial" in second.turns[0].feedback
    assert "7 | Seoul" in field(engine.prompts[3], "titles")  # the reflection sees what trial 1 found
    trial2 = engine.prompts[4]
    assert "QQLESSON" in field(trial2, "reflections") and "capital" not in trial2
    assert [field(trial2, n) for n in ("search_results", "recent_paragraphs")] == ["(no searches yet)", "(none read yet)"]
    # Every trial turn is Direct's corpus turn plus the reflections.
    turns = [p for i, p in enumerate(engine.prompts) if i != 3]
    assert [input_fields(p) for p in turns] == [["question", "reflections", *DIRECT_INPUTS[1:]]] * 6
    assert [output_fields(p) for p in turns] == [["thought", *PLAN_FIELDS, "action"]] * 6
    assert "[[ ## trajectory ## ]]" not in trial2 and "Now turn" not in trial2
