"""`python -m eval.run`: run one method on one dataset with one LM, score it, log it to MLflow.

The command line makes a `RunConfig` (eval/runs/config.py) from its flags (eval/runs/flags.py:
`run_config`, the same constructor eval.grid's cells go through) and hands it to `run`
(eval/runs/lifecycle.py), which eval.grid and a notebook call directly: `run(RunConfig(method="direct", ...))`.
"""

from __future__ import annotations

from eval.runs.errors import RunError, RunInterrupted
from eval.runs.flags import parse_args, run_config
from eval.runs.lifecycle import run


def main(argv: list[str] | None = None, *, tags: dict | None = None) -> dict:
    """The command line: flags -> RunConfig -> `run`. With --resume the run's own config, experiment
    and results file are used (the other flags, but --out, --trace and --skip-bad-lines, are ignored).
    Exits with the message of a RunError, and 130 when Ctrl-C stopped the questions (the finished ones are saved)."""
    args = parse_args(argv)
    try:
        config = None if args.resume else run_config(args)
        return run(config, experiment=args.experiment, out=args.out, resume=args.resume, trace=args.trace, tags=tags,
                   skip_bad_lines=args.skip_bad_lines)
    except RunError as exc:
        raise SystemExit(f"error: {exc}") from None
    except RunInterrupted:
        raise SystemExit(130) from None


if __name__ == "__main__":
    main()
