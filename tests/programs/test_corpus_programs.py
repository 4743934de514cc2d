"""EIR, Direct, SSR and Reflexion in the corpus setting, on a scripted LM over the tiny corpus."""

import dspy

from eir_dspy.accounting import Ledger, recording
from programs import SSR, Direct, EIR, Reflexion
from tests.scripted import field, final, scripted_lm

Q = "Which city hosts a film festival and is a port?"


def eir_turn(kind, query="", pid="", answer="", reqs=(), concls=()):
    return {"requirement_updates": list(reqs), "conclusion_updates": list(concls),
            "action": {"kind": kind, "query": query, "paragraph_id": pid, "answer": answer}}


def act(kind, query="", pid="", answer="", citations=(), thought="t"):
    return {"thought": thought, "action": {"kind": kind, "query": query, "paragraph_id": pid, "answer": answer,
                                           "citations": [{"title": t, "sentence": s} for t, s in citations]}}


def run(program, corpus, replies, **kwargs):
    lm = scripted_lm(replies)
    ledger = Ledger()
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()), recording(ledger):
        pred = program(question=Q, corpus=corpus, **kwargs)
    return pred, ledger, lm.engine


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


def test_direct_sees_the_search_results_and_only_the_last_result(tiny_corpus):
    pred, _, engine = run(Direct(), tiny_corpus, [
        act("search", query="seoul busan zebra"),
        act("read", pid="7"), act("read", pid="12"), act("read", pid="4"),
        act("submit", answer="Busan", citations=[("Busan", 1)]),  # Busan was read, though no longer shown
    ])
    assert pred.answer == "Busan" and pred.citations == [("Busan", 1)] and pred.episode.reads == 3
    last = engine.prompts[-1]
    assert field(last, "search_results").splitlines()[:3] == ["12 | Busan (read)", "7 | Seoul (read)", "4 | Twin B (read)"]
    assert field(last, "last_result").endswith("[0] Zebra crossing.")
    assert "Busan is a port city." not in last and "capital" not in last  # earlier reads are not shown again
    assert "[[ ## trajectory ## ]]" not in last and "[[ ## recent_paragraphs ## ]]" not in last and "Now turn" not in last
    assert "expected result" in engine.prompts[0] and "Progress is judged" in engine.prompts[0]


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
    assert "12 | Busan" in field(engine.prompts[9], "trajectory")  # the refined search ran


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
    assert "QQLESSON" in field(trial2, "reflections") and "capital" not in trial2 and "Seoul" not in field(trial2, "trajectory")
