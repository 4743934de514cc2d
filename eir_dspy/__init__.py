"""EIR core: environment, evidence store, agent state, LM setup and accounting (plain Python)."""
