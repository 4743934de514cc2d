"""The EIR ablations on scripted LMs: the list-feedback control (E.2) and dependency repair (E.3)."""

import pytest

from eir_dspy.evidence import EvidenceStore
from eir_dspy.paragraphs import Paragraph
from eir_dspy.state import AgentLists, DependentConclusionUpdate
from programs.eir import EIR
from programs.eir_repair import MAX_REPAIRS_PER_TURN
from tests.fixtures.pool import POOL, Q
from tests.scripted import field, final, run_program, turn

BAND = "Tinted Windows (band)"
REQ = {"id": None, "text": "QQREQ city of the first show", "status": "open"}
CONC = {"id": None, "claim": "QQCLAIM the band played first in Tulsa", "status": "supported",
        "citations": [{"title": BAND, "sentence": 1}]}


def episode_replies():
    """Read the band, conclude (valid), read the album, submit with an invalid conclusion (the pool
    discards the update and the submit runs; under `reject` the turn is rejected and the next submits)."""
    return [
        turn("read", BAND, reqs=[REQ]),
        turn("read", "Tinted Windows (album)", concls=[CONC], reqs=[{"id": "R1", "text": REQ["text"], "status": "satisfied"}]),
        turn("submit", answer="Tulsa", concls=[dict(CONC, citations=[{"title": "Act of Congress", "sentence": 0}])]),
        turn("submit", answer="Tulsa"),
        final("Tulsa", [(BAND, 1)]),
    ]


def test_list_feedback_control_keeps_the_updates_but_never_shows_them():
    eir, _, eir_engine = run_program(EIR(invalid_updates="reject"), Q, POOL, episode_replies())
    control, ledger, engine = run_program(EIR(ablation="no-list-feedback", invalid_updates="reject"), Q, POOL,
                                          episode_replies())
    # The same validated lists in the trajectory, and the same calls.
    assert control.trajectory["requirements"] == eir.trajectory["requirements"] != []
    assert control.trajectory["conclusions"] == eir.trajectory["conclusions"] != []
    assert control.trajectory["list_updates"] == eir.trajectory["list_updates"] == {"applied": 2, "discarded": 1}
    assert ledger.by_role() == {"action": 4, "final": 1} and len(engine.prompts) == len(eir_engine.prompts)
    assert [t.rejection_cause for t in control.episode.turns] == [None, None, "invalid_citation", None]
    # EIR's later prompts show the entries and the discard; the control's show neither.
    assert "QQREQ" in eir_engine.prompts[1] and "QQCLAIM" in eir_engine.prompts[2]
    for prompt in engine.prompts[1:3]:
        assert "QQREQ" not in prompt.split("[[ ## requirements ## ]]", 1)[1]
        assert "QQCLAIM" not in prompt.split("[[ ## requirements ## ]]", 1)[1]
        assert "R1 [" not in prompt and "C1 [" not in prompt
    assert control.answer == eir.answer == "Tulsa"


def test_the_control_under_the_pool_rule_discards_as_eir_does():
    eir, _, _ = run_program(EIR(), Q, POOL, episode_replies())
    control, ledger, _ = run_program(EIR(ablation="no-list-feedback"), Q, POOL, episode_replies())
    assert control.trajectory["list_updates"] == eir.trajectory["list_updates"] == {"applied": 2, "discarded": 1}
    assert [t.discarded_cause for t in control.episode.turns] == [None, None, "invalid_citation"]
    assert all(t.accepted for t in control.episode.turns) and ledger.by_role() == {"action": 3, "final": 1}


def test_the_controls_first_prompt_is_eirs():
    _, _, eir_engine = run_program(EIR(), Q, POOL, episode_replies())
    _, _, engine = run_program(EIR(ablation="no-list-feedback"), Q, POOL, episode_replies())
    assert engine.prompts[0] == eir_engine.prompts[0]
    assert engine.prompts[1] != eir_engine.prompts[1] and "(not shown)" in engine.prompts[1]


def test_the_control_learns_its_turn_was_rejected_but_not_what_was_wrong_with_its_updates():
    replies = [turn("read", BAND, concls=[CONC]),  # cites a sentence not read yet: the turn is rejected
               turn("submit", answer="Tulsa"), final("Tulsa")]
    eir, _, eir_engine = run_program(EIR(invalid_updates="reject"), Q, POOL, list(replies))
    control, _, engine = run_program(EIR(ablation="no-list-feedback", invalid_updates="reject"), Q, POOL, list(replies))
    rejected = "Turn 1 was rejected: your list updates are invalid, so nothing of this turn ran (its action included)"
    assert field(eir_engine.prompts[1], "last_result") == rejected + \
        ": citation ('Tinted Windows (band)', 1) is not a sentence you have read"
    assert field(engine.prompts[1], "last_result") == rejected
    assert eir.episode.reads == control.episode.reads == 0  # the same rule: neither read happened


def test_the_control_learns_its_updates_were_discarded_but_not_what_was_wrong_with_them():
    replies = [turn("read", BAND, concls=[CONC]), turn("submit", answer="Tulsa"), final("Tulsa")]
    eir, _, eir_engine = run_program(EIR(), Q, POOL, list(replies))
    control, _, engine = run_program(EIR(ablation="no-list-feedback"), Q, POOL, list(replies))
    discarded = "\nYour list updates were invalid and discarded: both lists are unchanged (the action ran)"
    assert field(eir_engine.prompts[1], "last_result").endswith(
        discarded + ": citation ('Tinted Windows (band)', 1) is not a sentence you have read.")
    assert field(engine.prompts[1], "last_result").endswith(discarded + ".")
    assert eir.episode.reads == control.episode.reads == 1  # the same rule: both reads happened


def test_unknown_ablation_is_refused():
    with pytest.raises(ValueError, match="unknown ablation 'lists-off'"):
        EIR(ablation="lists-off")


# --- dependency repair -------------------------------------------------------------------------

C1 = {"id": None, "claim": "QQC1 the album is by Tinted Windows", "status": "supported",
      "citations": [{"title": "Tinted Windows (album)", "sentence": 0}], "depends_on": []}
C2 = {"id": None, "claim": "QQC2 the band first played in Tulsa", "status": "supported",
      "citations": [{"title": BAND, "sentence": 1}], "depends_on": ["C1"]}
C1_REVISED = dict(C1, id="C1", claim="QQC1 revised: the album is by another band")
REVISION = {"revision": {"claim": "QQC2 repaired claim", "status": "retracted", "citations": [], "depends_on": ["C1"]}}
REFRESH = {"requirement_updates": [{"id": None, "text": "QQREFRESHED which band made the album", "status": "open"}]}


POOL4 = POOL + (Paragraph("Tulsa", ("Tulsa is a city in Oklahoma.",), 3),)


def repair_replies(change_c1: bool):
    replies = [
        turn("read", "Tinted Windows (album)"),
        turn("read", BAND, concls=[C1]),
        turn("read", "Act of Congress", concls=[C2]),  # C2 depends on C1
        turn("read", "Tulsa", concls=[C1_REVISED if change_c1 else dict(C1, id="C1")]),
    ]
    if change_c1:
        replies += [REVISION, REFRESH]  # one repair (C2 depends on C1), then one refresh
    return replies + [turn("submit", answer="Tulsa"), final("Tulsa")]


def run_repair(ablation, replies):
    return run_program(EIR(ablation=ablation), Q, POOL4, replies)


@pytest.mark.parametrize("ablation", ["repair", "repair-unapplied"])
def test_repair_calls_fire_exactly_when_a_depended_on_conclusion_changes(ablation):
    pred, ledger, _ = run_repair(ablation, repair_replies(change_c1=True))
    assert ledger.by_role() == {"action": 5, "repair": 1, "refresh": 1, "final": 1}
    assert pred.trajectory["repairs"]["repair_calls"] == 1 and pred.trajectory["repairs"]["refresh_calls"] == 1
    # Re-sending C1 unchanged (same claim and status) is no change: no repair call.
    pred, ledger, _ = run_repair(ablation, repair_replies(change_c1=False))
    assert ledger.by_role() == {"action": 5, "final": 1} and pred.trajectory["repairs"]["triggers"] == 0


def test_repair_applies_and_unapplied_discards_with_the_same_calls():
    applied, applied_ledger, applied_engine = run_repair("repair", repair_replies(True))
    unapplied, ledger, engine = run_repair("repair-unapplied", repair_replies(True))
    assert ledger.by_role() == applied_ledger.by_role() and len(engine.prompts) == len(applied_engine.prompts)
    c2 = lambda pred: next(c for c in pred.trajectory["conclusions"] if c["id"] == "C2")  # noqa: E731
    assert (c2(applied)["claim"], c2(applied)["status"]) == ("QQC2 repaired claim", "retracted")
    assert (c2(unapplied)["claim"], c2(unapplied)["status"]) == (C2["claim"], "supported")
    assert [r["text"] for r in applied.trajectory["requirements"]] == ["QQREFRESHED which band made the album"]
    assert unapplied.trajectory["requirements"] == []
    assert applied.trajectory["repairs"]["valid"] == unapplied.trajectory["repairs"]["valid"] == 1
    # The repair call saw what changed and the conclusion it had to revise; the final call saw neither.
    repair_prompt = engine.prompts[4]
    assert "C1: was [supported] QQC1 the album is by Tinted Windows; now [supported] QQC1 revised" in repair_prompt
    assert "C2 [supported] QQC2 the band first played in Tulsa" in repair_prompt and "depends on C1" in repair_prompt
    assert "QQC" not in engine.prompts[-1]


def test_an_invalid_repair_is_discarded_whole():
    replies = repair_replies(True)
    replies[4] = {"revision": dict(REVISION["revision"], citations=[{"title": "Nowhere", "sentence": 0}])}
    pred, _, _ = run_repair("repair", replies)
    c2 = next(c for c in pred.trajectory["conclusions"] if c["id"] == "C2")
    assert c2["claim"] == C2["claim"] and pred.trajectory["repairs"]["invalid"] == 1


def test_dependencies_are_validated_like_every_update():
    lists, evidence = AgentLists(), EvidenceStore()
    bad = DependentConclusionUpdate(claim="x", depends_on=["C9"])
    assert [p.text for p in lists.apply([], [bad], evidence)] == ["depends_on names conclusion 'C9', which does not exist"]
    assert lists.conclusions == {}


def test_dependents_are_transitive_and_nearest_first():
    lists, evidence = AgentLists(), EvidenceStore()
    lists.apply([], [DependentConclusionUpdate(claim="c1")], evidence)
    for i in range(2, 8):  # C2 <- C1, C3 <- C2, ... a chain of six dependents
        lists.apply([], [DependentConclusionUpdate(claim=f"c{i}", depends_on=[f"C{i - 1}"])], evidence)
    assert lists.dependents(["C1"]) == ["C2", "C3", "C4", "C5", "C6", "C7"]
    assert lists.dependents(["C6"]) == ["C7"] and lists.dependents(["C7"]) == []


def test_a_revision_that_leaves_depends_on_out_keeps_the_dependencies():
    lists, evidence = AgentLists(), EvidenceStore()
    lists.apply([], [DependentConclusionUpdate(claim="c1"), DependentConclusionUpdate(claim="c2")], evidence)
    lists.apply([], [DependentConclusionUpdate(claim="c3", depends_on=["C1", "C2"])], evidence)
    lists.apply([], [DependentConclusionUpdate.model_validate({"id": "C3", "claim": "c3 revised"})], evidence)
    assert lists.conclusions["C3"].depends_on == ["C1", "C2"]
    lists.apply([], [DependentConclusionUpdate(id="C3", claim="c3", depends_on=[])], evidence)  # given: replaced
    assert lists.conclusions["C3"].depends_on == []


def test_repairs_are_capped_per_turn_and_the_rest_counted():
    star = [dict(C2, claim=f"QQC{i} on C1", citations=[]) for i in range(2, 8)]  # C2..C7, each depending on C1
    replies = [turn("read", "Tinted Windows (album)"), turn("read", BAND, concls=[C1]),
               turn("read", "Act of Congress", concls=star),
               turn("read", "Tulsa", concls=[C1_REVISED])]  # six dependents change at once
    replies += [REVISION] * MAX_REPAIRS_PER_TURN + [REFRESH, turn("submit", answer="x"), final("x")]
    pred, ledger, _ = run_repair("repair-unapplied", replies)
    assert ledger.by_role()["repair"] == MAX_REPAIRS_PER_TURN == 4 and ledger.by_role()["refresh"] == 1
    assert pred.trajectory["repairs"]["capped"] == 6 - MAX_REPAIRS_PER_TURN


def test_no_repair_on_a_submitting_turn_nor_of_what_the_update_wrote_itself():
    submit_change = repair_replies(False)
    submit_change[3:5] = [turn("submit", answer="Tulsa", concls=[C1_REVISED])]  # the change comes with the submit
    _, ledger, _ = run_repair("repair", submit_change)
    assert "repair" not in ledger.by_role() and "refresh" not in ledger.by_role()
    both = repair_replies(False)
    both[3] = turn("read", "Tulsa", concls=[C1_REVISED, dict(C2, id="C2", claim="QQC2 rewritten with C1")])
    _, ledger, _ = run_repair("repair", both)  # C2 was revised in the same update: nothing to repair
    assert "repair" not in ledger.by_role()
