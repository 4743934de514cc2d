"""How a model output that could not be parsed is explained back to the model (one short line)."""


def short_error(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:200]
