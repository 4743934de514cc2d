"""What every eval.run run records about what it ran: the program's state (its prompts and demos)
and its question set as an MLflow dataset input. (System metrics: eval.runs.tracking.start_run.)"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import mlflow
import pandas as pd
from mlflow.data.dataset_source_registry import resolve_dataset_source
from mlflow.data.huggingface_dataset_source import HuggingFaceDatasetSource
from mlflow.data.pandas_dataset import PandasDataset

from eval.data.schema import Question
from eval.runs.config import RunConfig

PROGRAM_STATE = "program_state.json"
DATASET_CONTEXT = "eval"


class QuestionSet(PandasDataset):
    """The run's questions (id, question, answer). MLflow keeps a dataset input's profile but not
    its rows, so the profile carries the question ids, in run order."""

    @property
    def profile(self) -> dict:
        return {**super().profile, "question_ids": [str(i) for i in self._df["id"]]}


def log_provenance(program, questions: list[Question], config: RunConfig) -> None:
    """Log to the active run: program_state.json (`program.dump_state()`) and the dataset input."""
    mlflow.log_text(json.dumps(program.dump_state(), indent=2, ensure_ascii=False, default=str), PROGRAM_STATE)
    mlflow.log_input(question_set(questions, config), context=DATASET_CONTEXT)


def question_set(questions: list[Question], config: RunConfig) -> QuestionSet:
    data_file = config.data_file
    # No data file: eval.data.loaders read HotpotQA's distractor validation split from the Hugging Face hub.
    source = (local_source(Path(data_file)) if data_file
              else HuggingFaceDatasetSource(path="hotpot_qa", config_name="distractor", split="validation"))
    df = pd.DataFrame({"id": [q.id for q in questions], "question": [q.question for q in questions],
                       "answer": [q.answer for q in questions]})
    name = f"{config.dataset} n={len(questions)} seed={config.seed}"
    return QuestionSet(df=df, source=source, targets="answer", name=name)


def local_source(path: Path):
    """MLflow's source for a local file (its `local` LocalArtifactDatasetSource), by absolute path."""
    with warnings.catch_warnings():  # MLflow registers that source twice and warns that the path is ambiguous
        warnings.simplefilter("ignore", UserWarning)
        return resolve_dataset_source(str(path.resolve()))
