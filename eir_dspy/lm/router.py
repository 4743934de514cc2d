"""Several OpenAI-compatible endpoints serving one model (vLLM, llama.cpp's server), as one LM.

Every request goes through LiteLLM's Router: it picks the endpoint with the fewest requests in
flight ("least-busy"), retries a failed request on another endpoint, and cools a failing endpoint
down so later requests avoid it. The questions of a dead endpoint therefore finish on the others.
"""

from __future__ import annotations

from dspy.clients.engines.litellm_errors import litellm_errors

from eir_dspy.lm.provider_params import takes_seed
from eir_dspy.lm.typed_engine import TypedLiteLLMEngine

GROUP = "eir-endpoints"  # the Router's name for the one model all endpoints serve


class RouterEngine(TypedLiteLLMEngine):
    """A DSPy engine whose every request is routed over `api_bases` by a LiteLLM Router."""

    def __init__(self, model: str, api_bases: list[str], *, max_tokens: int, timeout: float, num_retries: int) -> None:
        import litellm
        from litellm import Router

        super().__init__()
        self.api_bases = list(api_bases)
        # What DSPy's JSONAdapter and the default decoding read: the same answer LiteLLM gives for
        # the model on one endpoint, so the number of endpoints never changes the condition.
        try:
            self.supports_response_schema = bool(litellm.supports_response_schema(model=model))
        except Exception:
            self.supports_response_schema = False
        deployment = {"model": model, "timeout": timeout,
                      # llama.cpp's server reads max_tokens, not LiteLLM's max_completion_tokens (eir_dspy/lm/spec.py)
                      "extra_body": {"max_tokens": max_tokens}}
        if not takes_seed(model):
            deployment["additional_drop_params"] = ["seed"]  # eir_dspy/lm/provider_params.py
        self.router = Router(
            model_list=[{"model_name": GROUP, "litellm_params": {**deployment, "api_base": url},
                         "model_info": {"id": f"endpoint-{i}"}} for i, url in enumerate(self.api_bases)],
            routing_strategy="least-busy",
            # each retry may pick another endpoint; an endpoint that failed once sits out 30 s
            num_retries=num_retries, allowed_fails=0, cooldown_time=30, retry_after=0,
        )

    def complete(self, request):
        data = self._arguments(request)  # LiteLLMEngine's typed request, as LiteLLM takes it
        data.pop("num_retries", None)  # the Router's own retries, over endpoints
        data.pop("cache", None)  # DSPy's cache sits above the engine; LiteLLM's is never used
        data["model"] = GROUP
        with litellm_errors(model=request.model):
            raw = self.router.completion(**data)
        return self._response(raw, request)

    def __repr__(self) -> str:
        return f"RouterEngine({len(self.api_bases)} endpoints)"
