"""`python -m eval.analyze NAME`: the paper's analyses of recorded runs (Appendix F, H.4, C.2,
Tables 5, 8, 15-17, 19, 21, 22), each over finished eval.run runs and logged as its own MLflow run.

Every analysis module has NAME, PAPER (where the paper reports it), SUMMARY (one line) and
`analyze(runs, context, out) -> Report`. Those that call the model (the recovery experiments) also
set CALLS_LM; they reuse each source run's LM settings and resume from their call log if killed.
"""

from __future__ import annotations

import importlib
from types import ModuleType

# In the order `--help` lists them: F.1-F.4 (and Table 16 whole), H.4, Tables 19, 21, 22, C.2, Tables 5 and 8.
MODULE_NAMES = ("availability", "added_support", "model_selected", "table16", "extra_retrieval", "final_vs_submitted",
                "totals", "calls_after_support", "rejections", "parse_failures", "support")


def analyses() -> dict[str, ModuleType]:
    """Every analysis by its NAME (imported on demand: one analysis does not load the others' programs)."""
    modules = [importlib.import_module(f"eval.analyze.{name}") for name in MODULE_NAMES]
    return {m.NAME: m for m in modules}
