"""eval.run's flags: the command line `python -m eval.run` parses, and what eval.grid's files name
(a grid cell's flags are checked and turned into a RunConfig by the same parser)."""

from __future__ import annotations

import argparse

from eir_dspy.corpus_environment import DEFAULT_FUTILE_SEARCHES, FUTILE_SEARCHES
from eir_dspy.lm.embedded_server import EMBEDDED_THREADS
from eir_dspy.state import INVALID_UPDATE_RULES
from eval.data.loaders import DATASETS
from eval.runs.config import DEFAULT_BUDGET, add_lm_flags, positive_int
from programs import names
from programs.eir_policy import ABLATIONS
from programs.registry import DEFAULT_TRIALS, DEFAULT_VOTES, METHODS
from programs.setting import SETTINGS

DESCRIPTION = "`python -m eval.run`: run one method on one dataset with one LM, score it, log it to MLflow."
DEFAULT_EXPERIMENT = "eir-dspy"
DEFAULT_OUT = "runs"
SKIP_BAD_LINES = "--skip-bad-lines"
RESUME_ONLY = ("skip_bad_lines",)  # how one resume reads its results file: not a flag a grid file names


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m eval.run", description=DESCRIPTION)
    p.add_argument("--method", default=names.EIR, choices=sorted(METHODS))
    p.add_argument("--setting", default="pool", choices=SETTINGS,
                   help="pool: each question's given paragraphs; corpus: search a BM25 index (HotpotQA only)")
    p.add_argument("--index", default=None, help="corpus: an index directory from `python -m eval.index build` "
                   "(else $EIR_INDEX_DIR, else runs/corpus/hotpotqa-abstracts-index, built from --data if missing)")
    p.add_argument("--futile-searches", default=DEFAULT_FUTILE_SEARCHES, choices=FUTILE_SEARCHES,
                   help="corpus: a search repeating an earlier one's indexed terms, or with no indexed word, runs "
                        "(the paper, H.1: the same hits again, or none found) or is rejected (the project's earlier "
                        "rule). docs/methods.md: Fidelity 6")
    p.add_argument("--dataset", default="hotpotqa", choices=DATASETS)
    p.add_argument("--data", default=None, help="a data file or directory (else $EIR_DATA_DIR, else the hub)")
    p.add_argument("--limit", type=positive_int, default=5, help="number of questions (default 5)")
    p.add_argument("--seed", type=int, default=0, help="seed of the question sample (stable order)")
    add_lm_flags(p)
    p.add_argument("--budget", type=positive_int, default=DEFAULT_BUDGET, help="H: paragraph reads per question")
    p.add_argument("--ablation", default=None, choices=ABLATIONS,
                   help="eir: no-list-feedback (the lists are kept but never shown again, E.2); repair / "
                        "repair-unapplied (dependency repair with its changes applied / discarded, E.3). docs/methods.md: Ablations")  # noqa: E501
    p.add_argument("--invalid-updates", default=None, choices=INVALID_UPDATE_RULES,
                   help="eir: what invalid list updates do to their turn: discard (lists unchanged, the action "
                        "runs; the paper's pool rule, 3.2/B.1) or reject (the turn, action included; the corpus "
                        "rule, H.1). Default: the paper's rule for --setting. docs/methods.md: Fidelity")
    p.add_argument("--verifier-temperature", type=float, default=None,
                   help="ssr: temperature of the verifier votes (default 0.7 in the pool, 0.0 in the corpus)")
    p.add_argument("--votes", type=positive_int, default=DEFAULT_VOTES, help="ssr: verifier judgments per step")
    p.add_argument("--trials", type=positive_int, default=DEFAULT_TRIALS, help="reflexion: most trials per question")
    p.add_argument("--threads", type=positive_int, default=None,
                   help=f"questions in flight; the embedded model decodes them together in one batch (default "
                        f"{EMBEDDED_THREADS} for the embedded model, by measurement: docs/lm.md, Throughput; else 1)")
    p.add_argument("--program", default=None, metavar="FILE",
                   help="a compiled program (`python -m eval.compile`) for --method: its demos and instructions "
                        "replace the zero-shot prompts; the run's variant names it (eir compiled=NAME)")
    p.add_argument("--experiment", default=DEFAULT_EXPERIMENT)
    p.add_argument("--out", default=DEFAULT_OUT, help="where per-question results are written as they finish")
    p.add_argument("--resume", metavar="RUN_ID", default=None,
                   help="continue a killed, interrupted or failed run, in its own experiment")
    p.add_argument(SKIP_BAD_LINES, action="store_true",
                   help="with --resume: skip the lines of the run's results file that are not its records "
                        "(not JSON, not a valid record, another run's), reporting each; they stay in the file")
    p.add_argument("--trace", action="store_true",
                   help="one MLflow trace per question (DSPy's calls nested by mlflow.dspy.autolog), tagged with "
                        "the run and question ids and scored: answer_f1, answer_em, support_f1 as feedback")
    return p


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def flag_defaults() -> dict:
    """Every eval.run flag (by argparse dest) and its default: what a grid file may name."""
    return {k: v for k, v in vars(parse_args([])).items() if k not in RESUME_ONLY}
