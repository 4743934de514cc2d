"""SSR's votes send a sampling seed; a provider that takes none (Anthropic) would refuse every such
call, so the LM drops it there and only there (found by benchmarks/rehearsal.py: every SSR cell of
the paper grid's Claude column failed with UnsupportedParamsError)."""

from eir_dspy.lm.provider_params import takes_seed
from eir_dspy.lm.spec import LMSpec, build_lm


def test_the_seed_is_dropped_only_for_providers_without_one():
    assert takes_seed("openai/gpt-4.1-mini") and not takes_seed("anthropic/claude-haiku-4-5")
    claude = build_lm(LMSpec("anthropic/claude-haiku-4-5", api_base=("http://127.0.0.1:9",)))
    gpt = build_lm(LMSpec("openai/gpt-4.1-mini", api_base=("http://127.0.0.1:9/v1",)))
    assert claude.kwargs["additional_drop_params"] == ["seed"]
    assert "additional_drop_params" not in gpt.kwargs
    assert claude.kwargs["api_base"] == "http://127.0.0.1:9"  # the endpoint kept beside it


def test_several_endpoints_drop_it_in_the_router_too():
    from eir_dspy.lm.router import RouterEngine

    engine = RouterEngine("anthropic/claude-haiku-4-5", ["http://127.0.0.1:9", "http://127.0.0.1:8"], max_tokens=64,
                          timeout=5, num_retries=0)
    params = [d["litellm_params"] for d in engine.router.model_list]
    assert all(p.get("additional_drop_params") == ["seed"] for p in params)
