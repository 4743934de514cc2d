import dspy

from eir_dspy.accounting import Ledger, recording
from programs import FullPool, RunContext
from tests.fixtures.pool import POOL, Q
from tests.scripted import field, final, scripted_lm


def test_one_call_sees_every_paragraph_in_the_final_answer_format():
    lm = scripted_lm([final("Tulsa", [("Tinted Windows (band)", 1)])])
    ledger = Ledger()
    with dspy.context(lm=lm), recording(ledger):
        pred = FullPool(context=RunContext("strict"))(question=Q, paragraphs=POOL)
    evidence = field(lm.engine.prompts[0], "evidence")
    assert evidence.startswith("## Tinted Windows (album)\n[0] Tinted Windows is the debut album")
    assert "## Act of Congress\n[0] Act of Congress is a group." in evidence
    assert "[1] Their first show was in Tulsa." in evidence
    assert ledger.by_role() == {"final": 1}
    assert pred.answer == "Tulsa" and list(pred.evidence.titles) == [p.title for p in POOL] and pred.episodes == []
    title = lm.engine.formats[0]["schema"]["properties"]["citations"]["items"]["properties"]["title"]
    assert title == {"enum": [p.title for p in POOL]}
