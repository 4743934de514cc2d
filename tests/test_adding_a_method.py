"""docs/architecture.md's "Where to add", held true: a method is its program file (the module, its options
dataclass, `max_calls`, `max_tokens`) and its registry entry, nothing else. A throwaway method whose
option no other method has is registered here, and only here, then runs through eval.run (the option
a flag), the grid (the option a key) and the health checks its traits choose."""

import json
from dataclasses import dataclass

import dspy
import mlflow
import pytest

import eval.grid as grid_module
import eval.grid.__main__ as grid_command
import eval.run as run_module
from eir_dspy.acceptance import EXTRACT
from eir_dspy.evidence import EvidenceStore
from eir_dspy.lm.local_models import DEFAULT_MODEL
from eir_dspy.paragraphs import Paragraph
from eval.runs.errors import RunError
from eval.runs.flags import run_config
from eval.scoring import health
from programs.eir import AnswerFromEvidence
from programs.method_program import MethodProgram
from programs.options import POSITIVE_INT, Options, option
from programs.registry import METHODS, Method
from programs.result import MethodResult
from programs.run_context import RunContext
from programs.setting import POOL
from programs.token_bound import TokenBound
from programs.trajectory_record import Trajectory
from tests.fixtures.scripted_runs import ARGS, QUESTIONS, reply
from tests.fixtures.scripted_runs import fill_workdir as fill_data
from tests.scripted import use_lm

# ---------------------------------------------------------------- the method's program file

ECHO = "echo"


@dataclass(frozen=True)
class EchoOptions(Options):
    passes: int = option(1, kind=POSITIVE_INT, help="answering calls over the whole pool; the last one answers")


def max_calls(budget: int, setting: str, options: EchoOptions) -> int:
    return options.passes


def max_tokens(budget, setting, options, pool, cap, prompts) -> TokenBound:
    one = prompts.call("answer.predict", question=pool.question, evidence=pool.pool)
    return TokenBound(options.passes * one, options.passes * cap)


class Echo(MethodProgram):
    """Full Pool's one call, made `passes` times."""
    acceptance = EXTRACT

    def __init__(self, passes: int = 1, context: RunContext | None = None) -> None:
        super().__init__(context)
        self.passes = passes
        self.answer = AnswerFromEvidence(self.context)

    def forward(self, question: str, paragraphs: tuple[Paragraph, ...] = ()) -> MethodResult:
        pool = EvidenceStore()
        for p in paragraphs:
            pool.add_paragraph(p, turn=0)
        with dspy.context(adapter=self.adapter):
            for _ in range(self.passes):
                final = self.answer(question=question, evidence=pool.render(), titles=list(pool.titles))
        return MethodResult(answer=final.answer, citations=final.citations, evidence=pool,
                            trajectory=Trajectory(method=ECHO, final_parsed=final.parsed))


# ---------------------------------------------------------------- its registry entry


@pytest.fixture
def echo(monkeypatch):
    monkeypatch.setitem(METHODS, ECHO, Method(ECHO, Echo, EchoOptions, max_calls, max_tokens, settings=(POOL,),
                                              budgeted=False, reads=False))


GRID = f"""
experiment = "grid-test"
reference = "echo passes=1"
n = 3
datasets = ["hotpotqa"]
lms = ["{DEFAULT_MODEL}"]

[data]
hotpotqa = "data.jsonl"

[[methods]]
method = "echo"
passes = 2

[[methods]]
method = "echo"
"""


def fill_workdir(path):
    fill_data(path)
    (path / "grid.toml").write_text(GRID)


def test_its_option_is_a_flag_of_eval_run_and_reaches_the_program(echo, workdir, monkeypatch):
    use_lm(monkeypatch, reply)
    out = run_module.main(ARGS + ["--method", ECHO, "--passes", "2"])
    run = mlflow.get_run(out["run_id"])
    assert run.data.params["variant"] == "echo passes=2" and run.data.params["method"] == ECHO
    assert out["metrics"]["calls_per_question"] == 2.0  # the option reached the program
    assert out["metrics"]["answer_f1"] == pytest.approx(200 / 3)  # reply: q1 and q3 right, q2 wrong
    assert [r["trajectory"]["method"] for r in out["records"]] == [ECHO] * len(QUESTIONS)
    with pytest.raises(RunError, match="'passes' is not an option of method eir \\(its options: ablation"):
        run_config(run_module.parse_args(["--passes", "2"]))
    with pytest.raises(RunError, match="'votes' is not an option of method echo \\(its options: passes\\)"):
        run_config(run_module.parse_args(["--method", ECHO, "--votes", "2"]))


def test_its_option_is_a_grid_key_and_each_value_its_own_cell(echo, workdir, monkeypatch):
    use_lm(monkeypatch, reply)
    grid = grid_module.load_grid("grid.toml")
    assert [c.variants for c in grid.cells] == [("echo passes=2",), ("echo passes=1",)]
    keys = [json.loads(c.key) for c in grid.cells]
    assert keys[0]["passes"] == 2 and "passes" not in keys[1]  # its default stays out of the key
    assert [c.calls_per_question for c in grid.cells] == [2, 1]
    grid_command.main(["grid.toml"])
    runs = [r for r in mlflow.search_runs(experiment_names=["grid-test"], output_format="list")
            if r.data.tags.get(grid_module.GRID_TAG)]  # the cells' runs (not the comparison's)
    assert sorted((r.data.params["variant"], r.data.metrics["calls_per_question"]) for r in runs) == [
        ("echo passes=1", 1.0), ("echo passes=2", 2.0)]


def test_the_health_checks_follow_its_traits(echo, workdir, monkeypatch):
    """It reads nothing turn by turn (reads=False): no "few reads" warning, as for Full Pool."""
    use_lm(monkeypatch, reply)
    out = run_module.main(ARGS + ["--method", ECHO])
    assert [w.code for w in health.warnings_for(ECHO, out["records"])] == []
    monkeypatch.setitem(METHODS, ECHO, Method(ECHO, Echo, EchoOptions, max_calls, max_tokens, settings=(POOL,),
                                              budgeted=False, reads=True))
    assert "few_reads" in [w.code for w in health.warnings_for(ECHO, out["records"])]
