import math
import uuid

import dspy
from dspy.lm15 import ServerError

from eir_dspy.accounting import Ledger, price_call, recording
from eir_dspy.paragraphs import Paragraph
from eval.scoring.run_metrics import summarize
from programs.eir import EIR
from tests.scripted import ScriptedEngine, final, scripted_lm, turn

POOL = (Paragraph("Alpha", ("Alpha formed in Tulsa.",), 0), Paragraph("Beta", ("Beta is a city.",), 1))


def run_eir(lm, question):
    ledger = Ledger()
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()), recording(ledger):
        EIR(budget=2)(question=question, paragraphs=POOL)
    return ledger


def test_calls_tokens_and_roles_are_recorded_per_call():
    lm = scripted_lm([turn("read", "Alpha"), turn("submit"), final("Tulsa")])
    ledger = run_eir(lm, "Where did Alpha form?")
    assert [c.role for c in ledger.calls] == ["action", "action", "final"]
    # The scripted engine bills words: the ledger must carry exactly those numbers.
    prompts = lm.engine.prompts
    assert [c.prompt_tokens for c in ledger.calls] == [len(p.split()) for p in prompts]
    assert ledger.totals()["completion_tokens"] == sum(c.completion_tokens for c in ledger.calls) > 0
    assert ledger.totals()["cost_usd"] == 0.0 and ledger.totals()["cache_hits"] == 0


def test_a_rerun_served_from_dspy_cache_reports_the_same_counts():
    question = f"Where did Alpha form? ({uuid.uuid4()})"  # fresh cache keys for every test run
    replies = [turn("read", "Alpha"), turn("submit"), final("Tulsa")]
    lm = scripted_lm(replies * 2, cache=True, model="openai/gpt-4.1-mini")
    first = run_eir(lm, question)
    second = run_eir(lm, question)
    assert len(lm.engine.prompts) == 3  # the rerun never reached the model
    assert first.totals()["cache_hits"] == 0 and second.totals()["cache_hits"] == 3
    for key in ("calls", "prompt_tokens", "completion_tokens", "cost_usd"):
        assert first.totals()[key] == second.totals()[key], key


def test_price_table():
    assert price_call("openai/gpt-4.1-mini", 1_000_000, 1_000_000) == 0.40 + 1.60
    assert price_call("local/qwen2.5-coder-1.5b", 5000, 100) == 0.0
    assert price_call("someprovider/unknown-model", 10, 10) is None


def test_unpriced_model_makes_run_cost_nan_not_zero():
    record = {"answer_f1": 1.0, "em": 1.0, "support_f1": 1.0, "calls": 1, "prompt_tokens": 1, "completion_tokens": 1,
              "cost_usd": None, "turns": 1, "rejected_actions": 0, "gold_read_share": 1.0, "reads": 1, "seconds": 1.0,
              "forced_end": False, "error": None, "cache_hits": 0}
    assert math.isnan(summarize([record])["cost_usd"])


class Flaky(ScriptedEngine):
    """Fails with a 5xx the first `fails` attempts."""

    def __init__(self, replies, fails):
        super().__init__(replies)
        self.fails, self.attempts = fails, 0

    def complete(self, request):
        self.attempts += 1
        if self.attempts <= self.fails:
            raise ServerError("service unavailable")
        return super().complete(request)


def test_provider_retries_are_not_extra_calls():
    engine = Flaky([turn("submit"), final("Tulsa")], fails=1)
    lm = dspy.LM("local/flaky", engine=engine, cache=False, num_retries=2)
    ledger = run_eir(lm, "Where did Alpha form?")
    assert engine.attempts == 3 and ledger.n_calls == 2
