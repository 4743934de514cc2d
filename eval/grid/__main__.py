"""`python -m eval.grid FILE.toml [--dry-run]`: run a grid of eval.run runs named in one TOML file, then compare them.

The file's format: eval/grid/spec.py. Running, resuming, progress, Ctrl-C, the comparison and
--dry-run: eval/grid/runner.py.
"""

from __future__ import annotations

import argparse

from eval.grid.runner import dry_run, run_grid
from eval.grid.spec import GridError, check_data, load_grid


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(prog="python -m eval.grid", description=__doc__.splitlines()[0])
    p.add_argument("file", help="a grid file (grids/*.toml)")
    p.add_argument("--dry-run", action="store_true", help="list the cells, their status and LM calls; run nothing")
    args = p.parse_args(argv)
    try:
        grid = load_grid(args.file)
    except GridError as exc:
        raise SystemExit(f"error: {exc}") from None
    if args.dry_run:
        return dry_run(grid)
    problems = check_data(grid)
    if problems:
        raise SystemExit("error: " + "\nerror: ".join(problems))
    return run_grid(grid)


if __name__ == "__main__":
    main()
