"""How long reading one model output takes as the output grows: the project's parse (the object
found in one scan, mending bounded by REPAIR_LIMIT) against DSPy's JSONAdapter.parse alone (its
recursive "first {...}" pattern and json_repair over the whole output).

    python benchmarks/parse_scaling.py [--sizes 1000 2000 4000 8000 16000 32000 100000 200000]
                                       [--dspy-up-to 8000] [--repeat 3]

Outputs are shapes a model can write when its output runs on (or a provider ignores --max-tokens):
nested braces, many small objects, text with a brace per word, an escape run inside an
unterminated string, a valid object followed by runaway text, keyed objects nested and cut short,
and a realistic list of updates cut short (mended while it is short enough). Each is parsed against EIR's
turn signature (the list-update path) under the `extract` rule, and against Direct's under
`json_only`. DSPy's parse is timed only up to --dspy-up-to characters (it needs seconds at 8,000,
minutes at 200,000). Prints one line per shape and size: characters, seconds (best of --repeat),
and how the output ended (accepted, or the refusal). Nothing is asserted: the numbers go to
docs/lm.md ("Reading an output").
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

import dspy  # noqa: E402
from dspy.utils.exceptions import AdapterParseError  # noqa: E402

from eir_dspy.acceptance import REPAIR_LIMIT  # noqa: E402
from eir_dspy.lm import DecodingAdapter  # noqa: E402
from programs import EIR, Direct  # noqa: E402
from signatures.direct_turn import DirectTurn  # noqa: E402
from signatures.eir_turn import EIRTurn  # noqa: E402

VALID_TURN = json.dumps({"requirement_updates": [], "conclusion_updates": [],
                         "action": {"kind": "submit", "title": "", "answer": "Tulsa"}})


def shapes(n: int) -> dict[str, str]:
    half = n // 2
    return {
        "nested braces": "{" * half + "}" * half,
        "small objects": ("{" * 4 + "}" * 4) * (n // 8),
        "a brace per word": "x {" * (n // 3),
        "escapes in a string": '{"a": "' + '\\"' * half,
        "object + runaway text": VALID_TURN + " and" * ((n - len(VALID_TURN)) // 4),
        "keyed nesting, cut short": '{"a": ' * (n // 6),
        "a list cut short": '{"requirement_updates": [' + '{"text": "x", "status": "open"}, ' * ((n - 26) // 34),
    }


def timed(fn, text: str, repeat: int) -> tuple[float, str]:
    best, outcome = float("inf"), ""
    for _ in range(repeat):
        t0 = time.perf_counter()
        try:
            fn(text)
            outcome = "accepted"
        except (AdapterParseError, ValueError, RecursionError) as exc:
            message = getattr(exc, "message", None) or str(exc)
            outcome = "refused: " + " ".join(message.split())[:90]
        best = min(best, time.perf_counter() - t0)
    return best, outcome


class Caller(dspy.Module):
    """Stands in for a method, so the adapter applies that method's acceptance rule."""

    def __init__(self, acceptance: str) -> None:
        super().__init__()
        self.acceptance = acceptance

    def forward(self, fn, text):
        return fn(text)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 4000, 8000, 16000, 32000, 100000, 200000])
    p.add_argument("--dspy-up-to", type=int, default=8000, help="largest output DSPy's own parse is timed on")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()

    ours = DecodingAdapter("free")
    theirs = dspy.JSONAdapter()
    print(f"REPAIR_LIMIT = {REPAIR_LIMIT:,} characters")
    print(f"{'shape':24s} {'chars':>8s} {'EIR (extract) s':>16s} {'Direct (json_only) s':>21s} "
          f"{'DSPy JSONAdapter s':>19s}  outcome (ours, EIR)")
    for name in shapes(1000):
        for n in args.sizes:
            text = shapes(n)[name]
            eir_s, outcome = timed(lambda t: Caller(EIR.acceptance)(lambda x: ours.parse(EIRTurn, x), t), text,
                                   args.repeat)
            direct_s, _ = timed(lambda t: Caller(Direct.acceptance)(lambda x: ours.parse(DirectTurn, x), t), text,
                                args.repeat)
            if len(text) <= args.dspy_up_to:
                dspy_s, _ = timed(lambda t: theirs.parse(EIRTurn, t), text, 1)
                dspy_col = f"{dspy_s:19.3f}"
            else:
                dspy_col = f"{'(not run)':>19s}"
            print(f"{name:24s} {len(text):8,d} {eir_s:16.3f} {direct_s:21.3f} {dspy_col}  {outcome}", flush=True)


if __name__ == "__main__":
    main()
