"""LM setup: any DSPy/LiteLLM model string, or an embedded local GGUF served by a managed llama-server."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import dspy

from eir_dspy.accounting import keep_replayed_usage, register_price
from eir_dspy.lm.local_models import DEFAULT_MODEL, MODELS, model_path
from eir_dspy.lm.provider_params import takes_seed
from eir_dspy.lm.server_program import EngineBuild

# Seconds an API request may take before the client abandons it (and retries it like any other
# provider error). LiteLLM's own default, made explicit: a local OpenAI-compatible server on two
# cores can take minutes for one long final-answer prompt.
DEFAULT_REQUEST_TIMEOUT = 600.0
# How the embedded model runs: a managed llama-server decoding every question in flight in one batch
# (eir_dspy/lm/embedded_server.py). Runs logged before issue 33 may name `inprocess`, llama-cpp-python
# in this process: that engine was retired then (docs/lm.md).
ENGINE = "server"
EMBEDDED_TIMEOUT_S = 24 * 3600.0


@dataclass(frozen=True)
class LMSpec:
    model: str = DEFAULT_MODEL  # a local key (see local_models.MODELS) or a LiteLLM string
    lm_path: str | None = None  # any local GGUF; overrides `model`
    api_base: str | tuple[str, ...] | None = None  # several: requests are routed over them (eir_dspy/lm/router.py)
    temperature: float = 0.0
    max_tokens: int = 2048
    num_retries: int = 5  # provider errors (timeouts included) are retried with backoff inside one DSPy call
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    n_ctx: int = 8192
    decoding: str | None = None  # the run's --decoding; the embedded engine's requests follow it
    price_in: float | None = None  # USD per 1M prompt tokens, for a model LiteLLM cannot price
    price_out: float | None = None
    slots: int = 1  # embedded server: questions decoded together (the run's --threads)
    server_args: tuple[str, ...] = ()  # embedded server: extra llama-server flags (e.g. speculative decoding)

    @property
    def api_bases(self) -> tuple[str, ...]:
        if not self.api_base:
            return ()
        return (self.api_base,) if isinstance(self.api_base, str) else tuple(self.api_base)

    @property
    def is_local(self) -> bool:
        return self.lm_path is not None or self.model in MODELS

    @property
    def name(self) -> str:
        """The model string logged and priced: local models are `local/<key or file stem>`."""
        if self.lm_path:
            return f"local/{Path(self.lm_path).stem}"
        return f"local/{self.model}" if self.model in MODELS else self.model


def build_lm(spec: LMSpec) -> dspy.LM:
    if spec.is_local:
        return _embedded_lm(spec)
    if (spec.price_in is None) != (spec.price_out is None):
        raise ValueError("give both --price-in and --price-out (a missing one would price half the tokens at 0)")
    if spec.price_in is not None:
        register_price(spec.model, spec.price_in, spec.price_out)
    keep_replayed_usage()  # a served model's calls are cached: a replayed call keeps its tokens and cost
    if len(spec.api_bases) > 1:
        from eir_dspy.lm.router import RouterEngine

        engine = RouterEngine(spec.model, list(spec.api_bases), max_tokens=spec.max_tokens,
                              timeout=spec.request_timeout, num_retries=spec.num_retries)
        # The Router retries over endpoints; DSPy's own retries on top would multiply the attempts.
        return dspy.LM(spec.model, engine=engine, temperature=spec.temperature, max_tokens=spec.max_tokens,
                       num_retries=0)
    kwargs = {} if takes_seed(spec.model) else {"additional_drop_params": ["seed"]}
    if spec.api_bases:
        # LiteLLM sends OpenAI's newer `max_completion_tokens`; llama.cpp's server ignores it and
        # generates to the end of its context. `max_tokens` in the body is what such servers read.
        kwargs.update(api_base=spec.api_bases[0], extra_body={"max_tokens": spec.max_tokens})
    return dspy.LM(spec.model, temperature=spec.temperature, max_tokens=spec.max_tokens,
                   num_retries=spec.num_retries, timeout=spec.request_timeout, **kwargs)


def _embedded_lm(spec: LMSpec) -> dspy.LM:
    path = Path(spec.lm_path) if spec.lm_path else model_path(spec.model)
    if not path.is_file():
        raise FileNotFoundError(f"--lm-path {path} is not a file")
    from eir_dspy.lm.embedded_server import ServerConfig, shared_server
    from eir_dspy.lm.server_engine import EmbeddedServerEngine

    server = shared_server(ServerConfig(str(path), alias=spec.name.split("/", 1)[1], slots=spec.slots,
                                        n_ctx=spec.n_ctx, extra_args=tuple(spec.server_args)))
    # No client timeout of its own: a question waits for its slot's turn in the batch, and the
    # engine's failure is detected by the process dying, not by a slow reply.
    engine = EmbeddedServerEngine(server, max_tokens=spec.max_tokens, timeout=EMBEDDED_TIMEOUT_S,
                                  one_line=spec.decoding == "strict")
    # Greedy local decoding is deterministic, so DSPy's response cache would only hide cost; a
    # failed local call is an engine fault, not a transient one, so DSPy does not retry it.
    return dspy.LM(spec.name, engine=engine, cache=False, temperature=spec.temperature, max_tokens=spec.max_tokens,
                   num_retries=0)


def server_build(lm: dspy.LM) -> EngineBuild | None:
    """The llama.cpp build serving the embedded model behind `lm`; None for any other LM."""
    from eir_dspy.lm.server_engine import EmbeddedServerEngine

    if isinstance(lm, dspy.LM) and isinstance(lm.engine, EmbeddedServerEngine):
        return lm.engine.server.build
    return None
