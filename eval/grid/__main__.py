"""`python -m eval.grid FILE.toml [--dry-run] [--allow-fewer]`: run a grid of eval.run runs in one TOML file, then compare.

docs/experiments.md, "Grids"; the file's format: eval/grid/spec.py, the running: eval/grid/runner.py.
"""

from __future__ import annotations

import argparse

from eval.grid.paper import ALLOW_FEWER, check_questions
from eval.grid.runner import dry_run, run_grid
from eval.grid.spec import check_data, load_grid
from eval.runs.errors import RunError


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(prog="python -m eval.grid", description=__doc__.splitlines()[0])
    p.add_argument("file", help="a grid file (grids/*.toml)")
    p.add_argument("--dry-run", action="store_true", help="list the cells, their status and LM calls; run nothing")
    p.add_argument(ALLOW_FEWER, action="store_true",
                   help="a paper grid: run a dataset whose file holds fewer than n questions on all it holds "
                        "(without this, an error before anything runs)")
    args = p.parse_args(argv)
    try:
        grid = load_grid(args.file)
        questions = check_questions(grid, args.allow_fewer)  # a paper grid's data: n questions per dataset
        if args.dry_run:
            return dry_run(grid, questions)
        problems = check_data(grid) + questions.errors
        if problems:
            raise RunError("\nerror: ".join(problems))
        result = run_grid(grid, questions)
    except RunError as exc:
        raise SystemExit(f"error: {exc}") from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    if not result["ok"]:
        raise SystemExit(1)  # the failed cells are listed already
    return result

if __name__ == "__main__":
    main()
