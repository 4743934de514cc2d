"""LMs: any DSPy/LiteLLM model string, an embedded GGUF served by a managed llama-server, or served
endpoints, and the decoding mode every request follows."""

from eir_dspy.lm.decoding import DECODINGS, LOCAL_DEFAULT, DecodingAdapter, default_decoding
from eir_dspy.lm.spec import DEFAULT_REQUEST_TIMEOUT, LMSpec, build_lm, server_build

__all__ = ["DECODINGS", "LOCAL_DEFAULT", "DEFAULT_REQUEST_TIMEOUT", "DecodingAdapter", "LMSpec", "build_lm", "default_decoding",
           "server_build"]
