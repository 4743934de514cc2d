"""A grid of eval.run runs named in one TOML file: `python -m eval.grid FILE.toml [--dry-run]`.

spec: the file, read and checked into cells; runner: running them, then the comparison; paper: what
a paper grid must have; __main__: the command line. docs/experiments.md, "Grids".
"""

from eval.grid.runner import CELL_TAG, GRID_TAG
from eval.grid.spec import GridError, load_grid

# The command line (`main`) stays in __main__.py: a library package does not import its command (and
# `python -m eval.grid` would find eval.grid.__main__ imported already: runpy warns and runs it twice).
__all__ = ["CELL_TAG", "GRID_TAG", "GridError", "load_grid"]
