"""EIR core: environment, evidence store, agent state, LM setup and accounting (plain Python)."""

import os

# LiteLLM otherwise tries to download its model price map at import; offline that costs
# three failed attempts and a warning per process. Our prices live in eir_dspy.accounting.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
