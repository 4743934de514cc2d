"""Several served endpoints as one LM (LiteLLM's Router), and prices for models LiteLLM cannot price.
The endpoints are fake OpenAI-compatible servers on loopback, reached through DSPy and LiteLLM."""

import socket

import pytest

import eval.run as run_module
from eir_dspy.accounting import PRICES, price_call
from tests.fake_openai import FakeOpenAI, eir_reply
from tests.fixtures.served_runs import (
    N,
    fill_workdir,  # noqa: F401 (the files the workdir fixture writes here)
    write_questions,
)


def dead_url() -> str:
    """A loopback URL nothing listens on: every request to it is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def args(urls, *extra):
    return ["--lm", "openai/fake", "--api-base", *urls, "--data", "data.jsonl", "--limit", str(N),
            "--experiment", "test", "--threads", "2", *extra]


@pytest.mark.slow  # loopback servers
def test_requests_are_spread_over_every_endpoint(workdir):
    with FakeOpenAI(eir_reply, delay=0.05) as a, FakeOpenAI(eir_reply, delay=0.05) as b:
        out = run_module.main(args([a.url, b.url]))
    records = out["records"]
    assert len(records) == N and all(r["error"] is None for r in records)
    calls = sum(r["calls"] for r in records)
    assert calls == 3 * N == len(a.requests) + len(b.requests)  # every call reached exactly one endpoint
    assert len(a.requests) > 0 and len(b.requests) > 0
    assert out["metrics"]["answer_f1"] == 100.0


@pytest.mark.slow  # a loopback server
def test_a_dead_endpoints_questions_finish_on_the_others(workdir):
    with FakeOpenAI(eir_reply) as alive:
        out = run_module.main(args([dead_url(), alive.url]))
    records = out["records"]
    assert [r["error"] for r in records] == [None] * N
    assert sum(r["calls"] for r in records) == 3 * N == len(alive.requests)
    assert out["metrics"]["answer_f1"] == 100.0


@pytest.mark.slow  # a loopback server
def test_one_endpoint_keeps_the_plain_litellm_path(workdir):
    with FakeOpenAI(eir_reply) as only:
        out = run_module.main(args([only.url]))
    assert len(only.requests) == 3 * N and out["metrics"]["failed_questions"] == 0


@pytest.mark.slow  # a loopback server
def test_price_flags_cost_a_model_litellm_cannot_price(workdir, monkeypatch):
    monkeypatch.setitem(PRICES, "openai/fake", PRICES.get("openai/fake"))  # restored after the test
    PRICES.pop("openai/fake")
    write_questions(workdir / "data.jsonl")
    with FakeOpenAI(eir_reply) as server:
        unpriced = run_module.main(args([server.url], "--limit", "2"))
        priced = run_module.main(args([server.url], "--limit", "2", "--price-in", "2", "--price-out", "10"))
    assert unpriced["records"][0]["cost_usd"] is None
    r = priced["records"][0]
    assert r["cost_usd"] == pytest.approx((r["prompt_tokens"] * 2 + r["completion_tokens"] * 10) / 1e6)
    assert price_call("openai/fake", 1_000_000, 0) == 2.0


def test_half_a_price_is_refused(workdir):
    with pytest.raises(SystemExit, match="give both --price-in and --price-out"):
        run_module.main(args(["http://127.0.0.1:9/v1"], "--price-in", "2"))


def test_the_number_of_endpoints_never_changes_the_default_decoding(workdir):
    from eir_dspy.lm import LMSpec, build_lm, default_decoding

    one = build_lm(LMSpec("openai/gpt-4.1-mini", api_base="http://127.0.0.1:9/v1"))
    two = build_lm(LMSpec("openai/gpt-4.1-mini", api_base=("http://127.0.0.1:9/v1", "http://127.0.0.1:10/v1")))
    assert default_decoding(one, False) == default_decoding(two, False) == "schema"
    unknown = build_lm(LMSpec("openai/fake", api_base=("http://127.0.0.1:9/v1", "http://127.0.0.1:10/v1")))
    assert default_decoding(unknown, False) == "free"


@pytest.mark.slow  # loopback servers
def test_an_endpoint_that_errors_is_cooled_down_and_its_questions_finish_elsewhere(workdir):
    with FakeOpenAI(eir_reply, fail=(503, "overloaded")) as sick, FakeOpenAI(eir_reply) as well:
        out = run_module.main(args([sick.url, well.url]))
    assert [r["error"] for r in out["records"]] == [None] * N
    assert len(well.requests) == 3 * N
    # After its first failure the sick endpoint sits out the 30 s cooldown: a handful of attempts, not one per call.
    assert 1 <= len(sick.requests) <= 4, len(sick.requests)


def test_an_anthropic_model_defaults_to_json_by_prompt_as_the_papers_haiku_runs():
    import dspy

    from eir_dspy.lm import default_decoding

    # LiteLLM says Claude takes a response schema, but it emulates one with a forced tool call.
    assert dspy.LM("anthropic/claude-haiku-4-5").supports_response_schema
    assert default_decoding(dspy.LM("anthropic/claude-haiku-4-5"), False) == "free"
    assert default_decoding(dspy.LM("openai/gpt-4.1-mini"), False) == "schema"
