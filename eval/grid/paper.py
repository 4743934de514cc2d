"""What a paper grid (`paper = true`) must have before anything runs: the paper's corpus and n questions.

Why each and what --allow-fewer does: docs/experiments.md, "Grids" (a paper grid).
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field

from eval.data.corpus import BUILD_FULL_INDEX, full_corpus_problem
from eval.data.loaders import DataError, DataWarning, load_file, resolve_data_file

ALLOW_FEWER = "--allow-fewer"


# `grid` below is eval/grid/spec.py's Grid, unnamed: spec.py imports this module.
def corpus_problem(grid) -> str | None:
    """Why the grid's corpus cells would not search the paper's corpus (None when they would)."""
    env = os.environ.get("EIR_INDEX_DIR")
    for cell in grid.cells:
        if cell.flags.get("setting") != "corpus":
            continue
        index = cell.flags.get("index") or env
        if not index:
            why = ("no corpus index is named, so eval.run would build the offline HotpotQA corpus, which holds "
                   "every question's gold paragraphs")
        else:
            why = full_corpus_problem(index)
        if why:
            return (f"a paper grid searches the paper's corpus (HotpotQA's 5.23M-paragraph Wikipedia abstracts), but "
                    f"{why}. Build the full index with\n  {BUILD_FULL_INDEX}\nthen point at it with "
                    "EIR_INDEX_DIR=runs/corpus/enwiki-index or `index = \"runs/corpus/enwiki-index\"` under [run]. "
                    "The offline corpus is for demos: a grid without `paper = true`, or `python -m eval.run "
                    "--setting corpus`, runs on it and logs corpus=offline-hotpotqa")
    return None


@dataclass
class DataCheck:
    """A paper grid's data: questions each dataset's cells run, and what to say before running."""
    questions: dict[str, int] = field(default_factory=dict)  # dataset -> questions its cells run (counted ones)
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def check_questions(grid, allow_fewer: bool = False) -> DataCheck:
    """Count the questions of the file each dataset's cells read; fewer than n is an error unless
    `allow_fewer`. Only for paper grids (others run as eval.run does: all of a shorter file)."""
    check = DataCheck()
    if not grid.paper:
        return check
    for dataset in grid.datasets:
        try:
            source = resolve_data_file(dataset, grid.data_path(dataset))
            if source is None:  # the Hugging Face hub: HotpotQA's whole dev set, 7,405 questions
                if dataset != "hotpotqa":
                    check.errors.append(f"{grid.path}: {dataset}: no data file (set $EIR_DATA_DIR or name one under "
                                        "[data]; only HotpotQA has a Hugging Face copy)")
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DataWarning)  # eval.run warns when it loads the file
                count = len(load_file(source, dataset))
        except DataError as exc:
            check.errors.append(f"{grid.path}: {dataset}: {exc}")
            continue
        check.questions[dataset] = min(count, grid.n)
        if count < grid.n:
            short = f"{grid.path}: n = {grid.n:,}, but {dataset}'s file {source} holds {count:,} questions"
            if allow_fewer:
                check.notes.append(f"{short}; its cells run all {count:,} ({ALLOW_FEWER}; each run logs n = {count})")
            else:
                check.errors.append(f"{short}; give data with {grid.n:,} (EIR_DATA_DIR or [data]) or run all "
                                    f"{count:,} with {ALLOW_FEWER}")
    return check
