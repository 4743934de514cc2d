"""`python -m eval.run`: run one method on one dataset with one LM, score it, log it to MLflow.

The command line makes a `RunConfig` (eval/runs/config.py) from its flags (eval/runs/flags.py) and
hands it to `run` (eval/runs/lifecycle.py), which eval.grid and a notebook call directly:
`run(RunConfig(method="direct", ...))`.
"""

from __future__ import annotations

from eval.runs.config import RunConfig, compiled_program, method_options
from eval.runs.flags import DEFAULT_EXPERIMENT, DEFAULT_OUT, flag_defaults, parse_args
from eval.runs.lifecycle import run
from programs.setting import SETTINGS

__all__ = ["DEFAULT_EXPERIMENT", "DEFAULT_OUT", "SETTINGS", "RunConfig", "compiled_program", "flag_defaults", "main",
           "method_options", "parse_args", "run"]


def main(argv: list[str] | None = None, *, tags: dict | None = None) -> dict:
    """The command line: flags -> RunConfig -> `run`. With --resume the run's own config, experiment
    and results file are used (the other flags, but --out, --trace and --skip-bad-lines, are ignored)."""
    args = parse_args(argv)
    config = None if args.resume else RunConfig.from_args(args)
    return run(config, experiment=args.experiment, out=args.out, resume=args.resume, trace=args.trace, tags=tags,
               skip_bad_lines=args.skip_bad_lines)


if __name__ == "__main__":
    main()
