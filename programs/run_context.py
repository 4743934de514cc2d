"""What a program runs under beyond its own options: one typed value, given to its constructor.

`RunContext` holds the two rules of a run that are not a method's own and that every method of the run
follows alike:

- `decoding` (eir_dspy/lm/decoding.py, DECODINGS): how the LM's output is constrained while decoded.
  The program builds its adapter from it (`DecodingAdapter(decoding, acceptance=<its rule>)`,
  programs/method_program.py) and, under `strict`, its per-call grammars (signatures/schemas.py).
- `futile_searches` (eir_dspy/corpus_environment.py, FUTILE_SEARCHES): the corpus setting's rule for a
  repeated search or one with no indexed word; every environment the program makes follows it.

A program's acceptance rule is its own (its class attribute `acceptance`), not part of the context.

eval.run builds the context from its resolved RunConfig (`RunConfig.run_context`); a notebook builds
it the same way from the LM it built, `RunContext.for_lm(lm, spec)` (docs/python.md): the spec's
decoding, else the LM's default (`default_decoding`), as eval.run resolves `--decoding` when it is not
given. With no LM known, `RunContext()`: the embedded model's default decoding and the paper's rule.
"""

from __future__ import annotations

from dataclasses import dataclass

import dspy

from eir_dspy.corpus_environment import DEFAULT_FUTILE_SEARCHES, FUTILE_SEARCHES
from eir_dspy.lm import DECODINGS, LOCAL_DEFAULT, LMSpec, default_decoding

STRICT = "strict"


@dataclass(frozen=True)
class RunContext:
    decoding: str = LOCAL_DEFAULT
    futile_searches: str = DEFAULT_FUTILE_SEARCHES

    def __post_init__(self) -> None:
        if self.decoding not in DECODINGS:
            raise ValueError(f"decoding must be one of {', '.join(DECODINGS)}; got {self.decoding!r}")
        if self.futile_searches not in FUTILE_SEARCHES:
            raise ValueError(f"futile_searches must be one of {', '.join(FUTILE_SEARCHES)}, "
                             f"not {self.futile_searches!r}")

    @property
    def strict(self) -> bool:
        """Whether the program builds a grammar per call from the live state (`--decoding strict`)."""
        return self.decoding == STRICT

    @classmethod
    def for_lm(cls, lm: dspy.LM, spec: LMSpec | None = None, *,
               futile_searches: str = DEFAULT_FUTILE_SEARCHES) -> RunContext:
        """The context of a run on `lm`, built from `spec` (None: an API model built by hand): the
        spec's decoding, else the LM's default, as eval.run resolves it (eval/runs/config.py,
        `LMConfig.decodings`)."""
        decoding = spec.decoding if spec is not None else None
        return cls(decoding or default_decoding(lm, spec is not None and spec.is_local), futile_searches)
