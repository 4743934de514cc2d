"""The compile's training and selection questions, and the files it refuses (the holdout,
eval.data.loaders.HOLDOUT_FILES, and one file as both): docs/experiments.md, "Compiling a program", Data.
"""

from __future__ import annotations

from pathlib import Path

from eval.data.loaders import HOLDOUT_FILES, DataError, load_questions
from eval.data.schema import Question


class SplitError(ValueError):
    """The training or dev file may not be used as given; the message names the file."""


def check_files(train: str, dev: str) -> None:
    """Raise SplitError naming the file, before either file is opened."""
    for flag, given in (("--train", train), ("--dev", dev)):
        path = Path(given)
        if path.name in HOLDOUT_FILES or path.resolve().name in HOLDOUT_FILES:
            raise SplitError(f"{flag} {given} is the acceptance holdout ({path.resolve().name}), which no compile may "
                             "read; train on hotpot_dev_distractor.rpt_sample300_seed2.jsonl and select on "
                             "hotpot_dev_distractor.rpt_sample500_seed1.jsonl")
        if not path.is_file():
            raise SplitError(f"{flag} {given}: no such file")
    if Path(train).resolve() == Path(dev).resolve() or Path(train).name == Path(dev).name:
        raise SplitError(f"--train {train} and --dev {dev} are the same file; a program selected on its own "
                         "training questions says nothing about new ones")


def load_splits(dataset: str, train: str, dev: str, n_train: int | None, n_dev: int | None,
                seed: int) -> tuple[list[Question], list[Question]]:
    """The first n_train / n_dev questions of each file in eval.data.loaders's seeded order."""
    check_files(train, dev)
    try:
        train_qs = load_questions(dataset, train, limit=n_train, seed=seed)
        dev_all = load_questions(dataset, dev, limit=None, seed=seed)
    except DataError as exc:
        raise SplitError(str(exc)) from None
    shared = sorted({q.id for q in train_qs} & {q.id for q in dev_all})
    if shared:
        raise SplitError(f"--train {train} holds {len(shared)} question(s) of --dev {dev} (e.g. {shared[0]}); "
                         "the training questions must not be selection questions")
    return train_qs, dev_all[:n_dev] if n_dev is not None else dev_all
