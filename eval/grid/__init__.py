"""A grid of eval.run runs named in one TOML file: `python -m eval.grid FILE.toml [--dry-run]`.

spec: the file's format, read and checked into cells (nothing runs, nothing is read from MLflow).
runner: running the cells (state from MLflow, resume, progress, Ctrl-C), the comparison, --dry-run.
paper: what a paper grid (`paper = true`) must have: the paper's corpus, n questions per dataset.
__main__: the command line (`main`).
"""

from eval.grid.runner import (
    CELL_TAG,
    GRID_TAG,
    CellState,
    Progress,
    cell_state,
    compare,
    dry_run,
    logged_runs,
    run_grid,
)
from eval.grid.spec import Cell, Grid, GridError, check_data, load_grid

# The command line (`main`) stays in __main__.py: a library package does not import its command (and
# `python -m eval.grid` would find eval.grid.__main__ imported already: runpy warns and runs it twice).
__all__ = ["CELL_TAG", "GRID_TAG", "Cell", "CellState", "Grid", "GridError", "Progress", "cell_state", "check_data",
           "compare", "dry_run", "load_grid", "logged_runs", "run_grid"]

