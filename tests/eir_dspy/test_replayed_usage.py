"""A call DSPy answers from its response cache keeps the tokens and cost of the call that made it.

Through LiteLLM (an API model, `--lm openai/... --api-base ...`) DSPy 3.4 hands back a cached
response with its usage cleared; eir_dspy/accounting/replay.py keeps it. The model here is the fake
OpenAI-compatible server on loopback, which bills the words of each prompt and reply.
"""

import uuid

import dspy
import pytest
from dspy.clients.cache import Cache
from dspy.utils.usage_tracker import track_usage
from litellm import ModelResponse

from eir_dspy.accounting import Ledger, keep_replayed_usage, recording, register_price
from eir_dspy.accounting.replay import REPLAYED_USAGE, UsageKeepingCache
from eir_dspy.lm.decoding import DECODINGS, DecodingAdapter
from eir_dspy.lm.spec import LMSpec, build_lm
from eir_dspy.paragraphs import Paragraph
from eval.files.question_record import QuestionRecord
from eval.scoring.run_metrics import paid_and_replayed
from programs.eir import EIR
from tests.fake_openai import FakeOpenAI, eir_reply

POOL = (Paragraph("Alpha", ("Alpha formed in Tulsa.",), 0), Paragraph("Beta", ("Beta is a city.",), 1))


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    """A fresh on-disk DSPy cache for this test, the process's own restored after it."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    saved = dspy.cache
    dspy.configure_cache(enable_disk_cache=True, enable_memory_cache=True, disk_cache_dir=str(tmp_path / "cache"))
    yield dspy.cache
    dspy.cache = saved


def run_eir(lm, question: str, adapter=None) -> Ledger:
    ledger = Ledger()
    with dspy.context(lm=lm, adapter=adapter or dspy.JSONAdapter()), recording(ledger):
        EIR(budget=2)(question=question, paragraphs=POOL)
    return ledger


# DSPy's own JSONAdapter, and the project's under each decoding mode: under `schema` a response
# format rides in the request, and LiteLLM once edited its schema between DSPy's cache lookup and
# its store, so no such call was ever answered from the cache (eir_dspy/lm/decoding.py).
@pytest.mark.parametrize("decoding", [None, *DECODINGS])
def test_a_cached_rerun_through_litellm_keeps_tokens_and_cost(private_cache, decoding):
    question = f"Where did Alpha form? ({uuid.uuid4().hex[:8]})"
    adapter = DecodingAdapter(decoding) if decoding else None
    with FakeOpenAI(eir_reply) as fake:
        register_price("openai/fake-priced", 1.0, 2.0)  # $ per million tokens: a hit must cost the same
        lm = build_lm(LMSpec("openai/fake-priced", api_base=fake.url, price_in=1.0, price_out=2.0))
        assert type(dspy.cache) is UsageKeepingCache  # build_lm installed it on the configured cache
        first = run_eir(lm, question, adapter)
        requests = len(fake.requests)
        second = run_eir(lm, question, adapter)
        assert len(fake.requests) == requests  # the rerun never reached the server
    assert first.totals()["cache_hits"] == 0 and second.totals()["cache_hits"] == first.totals()["calls"] == 3
    for key in ("calls", "prompt_tokens", "completion_tokens", "cost_usd"):
        assert first.totals()[key] == second.totals()[key] and first.totals()[key], key
    # Call by call, the hit carries what the original call cost.
    assert [(c.prompt_tokens, c.completion_tokens) for c in first.calls] == \
        [(c.prompt_tokens, c.completion_tokens) for c in second.calls]
    # DSPy's own usage tracker still bills nothing for the replay.
    with track_usage() as tracker:
        run_eir(lm, question, adapter)
    assert not tracker.get_total_tokens().get(lm.model)


def test_the_cache_keeps_the_usage_beside_the_cleared_one(tmp_path):
    cache = Cache(enable_disk_cache=False, enable_memory_cache=True, disk_cache_dir=None)
    cache.__class__ = UsageKeepingCache
    response = ModelResponse(model="m", usage={"prompt_tokens": 11, "completion_tokens": 4, "total_tokens": 15})
    cache.put({"q": 1}, response)
    hit = cache.get({"q": 1})
    assert hit.usage == {} and hit.cache_hit is True  # what DSPy does, unchanged
    assert getattr(hit, REPLAYED_USAGE) == {"prompt_tokens": 11, "completion_tokens": 4}
    assert response.usage.prompt_tokens == 11 and not hasattr(response, REPLAYED_USAGE)  # the caller's is untouched


def test_keeping_replayed_usage_keeps_the_configured_cache():
    saved = dspy.cache
    try:
        dspy.cache = Cache(enable_disk_cache=False, enable_memory_cache=True, disk_cache_dir=None)
        dspy.cache.put({"k": 1}, "stored")
        keep_replayed_usage()
        keep_replayed_usage()  # idempotent
        assert type(dspy.cache) is UsageKeepingCache and dspy.cache.get({"k": 1}) == "stored"
    finally:
        dspy.cache = saved


def test_a_run_says_what_it_paid_and_what_it_replayed():
    calls = [{"cache_hit": False, "prompt_tokens": 100, "completion_tokens": 10},
             {"cache_hit": True, "prompt_tokens": 50, "completion_tokens": 5}]
    records = [QuestionRecord(id="a", lm_calls=calls), QuestionRecord(id="b", lm_calls=calls[:1])]
    assert paid_and_replayed(records) == {"paid_calls": 2.0, "replayed_calls": 1.0,
                                          "paid_tokens": 220.0, "replayed_tokens": 55.0}
    assert paid_and_replayed([QuestionRecord(id="old")]) == {}
