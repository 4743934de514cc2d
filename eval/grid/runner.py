"""Running a grid's cells (eval/grid/spec.py builds them), then comparing them.

State in MLflow, resume, progress, Ctrl-C, failed cells, the comparison and --dry-run: docs/experiments.md,
"Grids".
"""

from __future__ import annotations

import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import mlflow

from eval.compare.families import FamilyError
from eval.files.results_file import read_run_records
from eval.grid.bounds import CellBound, cell_bound, question_tokens
from eval.grid.paper import DataCheck
from eval.grid.spec import Cell, Grid, check_data
from eval.runs import lifecycle, tracking
from eval.runs.config import RunConfig
from eval.runs.errors import RunError
from eval.runs.flags import DEFAULT_OUT
from eval.runs.logged_runs import SelectionError
from eval.scoring.formatting import aligned

CELL_TAG = "eir.grid_cell"
GRID_TAG = "eir.grid"


# ---------------------------------------------------------------- state in MLflow


@dataclass
class CellState:
    status: str  # finished | resumable | new
    run_id: str | None
    done: int  # questions finished (without an error)
    total: int


def logged_runs(experiment: str) -> dict[str, list]:
    """The experiment's runs by cell key, newest first. Reads only (no experiment is created)."""
    found = mlflow.get_experiment_by_name(experiment)
    if found is None:
        return {}
    runs = mlflow.search_runs(experiment_ids=[found.experiment_id], order_by=["attributes.start_time DESC"],
                              output_format="list")
    by_key: dict[str, list] = {}
    for run in runs:
        key = run.data.tags.get(CELL_TAG)
        if key:
            by_key.setdefault(key, []).append(run)
    return by_key


def set_up(run) -> bool:
    """Whether eval.run finished setting the run up (its config and results path are tagged). A process
    killed between creating the run and tagging it (SIGKILL, a power cut) leaves a run that ran no
    question and can never be resumed: the cell starts again (`retire_unset_runs`)."""
    tags = run.data.tags
    return (run.info.status == "FINISHED" or tracking.VARIANT_OF_TAG in tags
            or (tracking.CONFIG_TAG in tags and tracking.RESULTS_TAG in tags))


def retire_unset_runs(runs: list) -> list:
    """End every run killed during its set-up FAILED, saying so (eval.compare skips it), and return the others."""
    for run in runs:
        if not set_up(run) and run.info.status != "FAILED":
            client = mlflow.MlflowClient()
            client.set_tag(run.info.run_id, tracking.FAILURE_TAG,
                           "killed while eval.run was setting it up, before any question ran; eval.grid starts the "
                           "cell again in a new run")
            client.set_terminated(run.info.run_id, "FAILED")
    return [r for r in runs if set_up(r)]


def cell_state(cell: Cell, runs: list, questions: int | None = None) -> CellState:
    """The cell's state from its runs (those eval.run set up: `set_up`); `questions`: what it runs when
    its file holds fewer than n (--allow-fewer)."""
    runs = [r for r in runs if set_up(r)]
    total = questions or cell.n
    finished = [r for r in runs if r.info.status == "FINISHED"]
    if finished and not finished[0].data.metrics.get("failed_questions", 0) > 0:
        run = finished[0]
        try:
            ran = RunConfig.from_tag(run.data.tags[tracking.CONFIG_TAG]).n
        except KeyError:  # no config tag: not eval.run's; count the cell's n
            ran = total
        except RunError as exc:
            raise RunError(f"run {run.info.run_id} ({run.info.run_name}): {exc}") from None
        return CellState("finished", run.info.run_id, ran, ran)
    # FINISHED, but some questions ended with a provider error (--resume runs those again); else
    # KILLED, FAILED, or RUNNING (a killed process never ended it).
    if runs:
        run = finished[0] if finished else runs[0]
        done = _questions_done(run.data.tags.get(tracking.RESULTS_TAG), run.info.run_id)
        return CellState("resumable", run.info.run_id, min(done, total), total)
    return CellState("new", None, 0, total)


def _questions_done(path: str | None, run_id: str) -> int:
    """Questions whose latest record of this run in its results file has no error: what a resume
    keeps (it runs the others again, and never counts another run's lines or a torn one)."""
    if not path or not Path(path).is_file():
        return 0
    records = read_run_records(Path(path).read_text(errors="replace"), {run_id}).records
    return sum(row.get("error") is None for row in records.values())


def finished_method_runs(experiment: str) -> int:
    found = mlflow.get_experiment_by_name(experiment)
    if found is None:
        return 0
    runs = mlflow.search_runs(experiment_ids=[found.experiment_id], filter_string="attributes.status = 'FINISHED'",
                              output_format="list")
    return sum(1 for r in runs if r.data.tags.get(tracking.KIND_TAG) != tracking.COMPARISON_KIND
               and tracking.CONFIG_TAG in r.data.tags)


# ---------------------------------------------------------------- progress


class Progress:
    """Cells and questions done, and the time left at this invocation's seconds per question."""

    def __init__(self, grid: Grid, states: dict[int, CellState]) -> None:
        self.grid, self.states = grid, states
        self.seconds = 0.0
        self.questions = 0  # finished in this invocation

    def add(self, seconds: float, questions: int) -> None:
        self.seconds += seconds
        self.questions += max(0, questions)

    def done(self) -> str:
        states = self.states.values()
        cells = sum(s.status == "finished" for s in states)
        done, total = sum(s.done for s in states), sum(s.total for s in states)
        return f"{cells}/{len(self.states)} cells, {done:,}/{total:,} questions done"

    def line(self) -> str:
        states = self.states.values()
        done, total = sum(s.done for s in states), sum(s.total for s in states)
        if self.questions:
            rate = self.seconds / self.questions
            left = f"~{_duration(rate * (total - done))} left ({rate:.1f} s/question this session)"
        else:
            left = "time left unknown (no question finished yet this session)"
        return f"{self.done()}; {left}"


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds}s"
    minutes, s = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {s:02d}s"
    hours, m = divmod(minutes, 60)
    return f"{hours}h {m:02d}m"


def _say(text: str, err: bool = False) -> None:
    print(text, file=sys.stderr if err else sys.stdout, flush=True)


# ---------------------------------------------------------------- running


def run_grid(grid: Grid, data: DataCheck | None = None) -> dict:
    """Run every cell not finished yet, then compare: {"states", "comparison", "ok"}, ok False when a
    cell or the comparison failed. KeyboardInterrupt on Ctrl-C, once the way to continue is printed.
    `data`: a paper grid's checked data (eval/grid/paper.py), the questions each dataset's cells run."""
    tracking.use_tracking_uri()
    data = data or DataCheck()
    for note in data.notes:
        _say(f"note: {note}")
    states: dict[int, CellState] = {}
    progress = Progress(grid, states)
    try:
        failed = _run_cells(grid, states, progress, data.questions)
    except (KeyboardInterrupt, _Interrupted):
        tracking.end_run_if_active("KILLED")  # eval.run ends its own run; this only guards against one left active
        done = progress.done() if states else "nothing new done"
        _say(f"\nThe grid stopped (Ctrl-C): {done}.\nContinue it with:\n  {grid.command}", err=True)
        raise KeyboardInterrupt from None
    comparison, compare_error = _compare_if_possible(grid)
    if failed:
        _report_failed(grid, failed)
    return {"states": states, "comparison": comparison, "ok": not failed and not compare_error}


class _Interrupted(Exception):
    """eval.run stopped on Ctrl-C (it saved its questions and ended its run KILLED)."""


def _run_cells(grid: Grid, states: dict[int, CellState], progress: Progress,
               questions: dict[str, int]) -> list[tuple[Cell, str]]:
    by_key = {key: retire_unset_runs(runs) for key, runs in logged_runs(grid.experiment).items()}
    states.update({c.number: cell_state(c, by_key.get(c.key, []), questions.get(c.dataset)) for c in grid.cells})
    _say(f"grid {grid.name}: {len(grid.cells)} cells in MLflow experiment {grid.experiment!r} ({grid.path})")
    failed: list[tuple[Cell, str]] = []
    for cell in grid.cells:
        outcome = _run_cell(grid, cell, states, progress, questions.get(cell.dataset))
        if outcome is not None:
            failed.append((cell, outcome))
    return failed


def _run_cell(grid: Grid, cell: Cell, states: dict[int, CellState], progress: Progress,
              questions: int | None) -> str | None:
    """Skip, start or resume one cell; None when it is finished, else why not. Raises _Interrupted on Ctrl-C."""
    state = states[cell.number]
    head = f"[{grid.name} {cell.number}/{len(grid.cells)}]"
    if state.status == "finished":
        _say(f"{head} skip {cell.title}: finished run {state.run_id} | {progress.line()}")
        return None
    doing = f"resume run {state.run_id} ({state.done}/{state.total} questions saved)" if state.run_id else "start"
    _say(f"{head} {doing}: {cell.title} | {progress.line()}")
    tags, how = {CELL_TAG: cell.key, GRID_TAG: grid.name}, _how(grid, cell)

    def start() -> dict:
        if state.status == "new":
            return lifecycle.run(grid.run_config(cell), tags=tags, **how)
        return lifecycle.run(None, resume=state.run_id, tags=tags, **how)

    before, t0 = state.done, time.perf_counter()
    outcome = _call_eval_run(start)
    tracking.end_run_if_active("KILLED" if outcome == "interrupted" else "FAILED")  # one left active
    states[cell.number] = after = cell_state(cell, logged_runs(grid.experiment).get(cell.key, []), questions)
    progress.add(time.perf_counter() - t0, after.done - before)
    if outcome == "interrupted":
        _say(f"{head} interrupted: {cell.title} ({after.done}/{after.total} questions saved"
             + (f" in run {after.run_id}" if after.run_id else "") + f") | {progress.line()}")
        raise _Interrupted
    if outcome is None and after.status != "finished":
        outcome = f"its run ended {after.status} without an error"
    if outcome is not None:
        _say(f"{head} FAILED: {cell.title}: {outcome} | {progress.line()}")
    else:
        _say(f"{head} finished: {cell.title} (run {after.run_id}) | {progress.line()}")
    return outcome


def _call_eval_run(start: Callable[[], object]) -> str | None:
    """eval.run's `run` in this process: None when it returned, "interrupted" on Ctrl-C, else the failure."""
    try:
        start()
    except KeyboardInterrupt:
        return "interrupted"
    except RunError as exc:
        return f"error: {exc}"  # as `python -m eval.run` would exit with it
    except Exception as exc:  # a bug or an unexpected provider failure: report it, go on
        return f"{type(exc).__name__}: {exc}"
    return None


def _how(grid: Grid, cell: Cell) -> dict:
    """How the cell runs, started or resumed (not part of its condition): the experiment, where its
    results go (and a corpus index is looked for; a resumed run keeps its results path) and --trace."""
    return {"experiment": grid.experiment, "out": str(cell.flags.get("out", DEFAULT_OUT)),
            "trace": bool(cell.flags.get("trace", False))}


def _report_failed(grid: Grid, failed: list[tuple[Cell, str]]) -> None:
    total = len(grid.cells)
    _say(f"\n{len(failed)} of {total} cells failed:", err=True)
    for cell, why in failed:
        _say(f"  {cell.number}/{total} {cell.title}: {why}", err=True)
    _say(f"Fix the cause and run the grid again (finished cells are skipped, failed ones resumed):\n  {grid.command}",
         err=True)


# ---------------------------------------------------------------- comparing


def _compare_if_possible(grid: Grid) -> tuple[object, str | None]:
    """eval.compare when the experiment has two finished runs: (its result, its error or None)."""
    if finished_method_runs(grid.experiment) < 2:
        _say(f"not comparing: fewer than two finished runs in experiment {grid.experiment!r}")
        return None, None
    try:
        return compare(grid), None
    except (SelectionError, FamilyError, RunError) as exc:
        error = f"error: {exc}"  # as `python -m eval.compare` would exit with it
    _say(f"eval.compare failed: {error}", err=True)
    return None, error


def compare(grid: Grid) -> dict:
    """eval.compare on the grid's experiment, with the file's families when it has any (the command
    that does the same is printed first)."""
    # Imported here: its statistics and plots (scipy, matplotlib) load only for a grid that compares.
    from eval.compare.comparison import CompareOptions, chosen_families, run_comparison

    argv = ["--experiment", grid.experiment, "--reference", grid.reference] + \
        (["--families", str(grid.path)] if grid.families else [])
    _say(f"\npython -m eval.compare {shlex.join(argv)}")
    families = chosen_families(str(grid.path) if grid.families else None, None)
    return run_comparison(CompareOptions(experiment=grid.experiment, reference=grid.reference, families=families))


# ---------------------------------------------------------------- dry run


def dry_run(grid: Grid, data: DataCheck | None = None) -> dict:
    """Print every cell, its status and its bounds (LM calls, prompt and completion tokens, dollars),
    with their totals; run nothing. A paper grid's data errors (`data`, eval/grid/paper.py) are a
    RunError after the cells are printed, as a run would stop. The bounds: docs/experiments.md, "Grids"."""
    tracking.use_tracking_uri()
    data = data or DataCheck()
    by_key = logged_runs(grid.experiment)
    rows, total_calls, todo_calls = [], 0, 0
    questions = {dataset: question_tokens(grid, dataset) for dataset in grid.datasets}
    bounds: list[CellBound] = []
    for cell in grid.cells:
        state = cell_state(cell, by_key.get(cell.key, []), data.questions.get(cell.dataset))
        calls = cell.calls_per_question * state.total
        total_calls += calls
        todo = state.total - state.done if state.status != "finished" else 0
        todo_calls += cell.calls_per_question * todo
        bound = cell_bound(grid, cell, questions[cell.dataset], todo)
        bounds.append(bound)
        rows.append(_dry_row(cell, state, calls, bound))
    _say(f"grid {grid.name} ({grid.path}): {len(grid.cells)} cells in MLflow experiment {grid.experiment!r}, "
         f"n={grid.n}, seed {grid.seed}" + (" (a paper grid: eval/grid/paper.py)" if grid.paper else ""))
    _say(aligned(["#", "variant", "dataset", "lm", "H", "n", "status", "calls/question ≤", "calls ≤",
                  "prompt tokens ≤", "completion tokens ≤", "USD ≤"], rows))
    totals = _totals(bounds)
    _say(f"\nLM calls at most (an upper bound per question from the method's entry, programs/registry.py, × n): "
         f"{total_calls:,} in all; {todo_calls:,} for what is not finished yet")
    _say("Tokens at most (o200k_base tokens, each question's bound from the method's entry on its own text, "
         "every reply as long as --max-tokens allows): "
         f"prompt {_amount(totals['prompt_tokens'])}, completion {_amount(totals['completion_tokens'])} in all; "
         f"prompt {_amount(totals['todo_prompt_tokens'])}, completion {_amount(totals['todo_completion_tokens'])} "
         "for what is not finished yet")
    _say(f"Dollars at most: {_dollars(totals['usd'])} in all; {_dollars(totals['todo_usd'])} for what is not "
         "finished yet" + _unknown_note(bounds))
    for problem in check_data(grid):
        _say(f"note: {problem}")
    for note in data.notes:
        _say(f"note: {note}")
    for why in dict.fromkeys(b.why for b in bounds if b.why):
        _say(f"note: tokens unknown for some cells: {why}")
    if data.errors:
        raise RunError("\nerror: ".join(data.errors))
    families = f" with families {', '.join(f['name'] for f in grid.families)}" if grid.families else ""
    _say(f"Then: eval.compare --experiment {grid.experiment} --reference {grid.reference}{families}")
    return {"cells": len(grid.cells), "calls": total_calls, "todo_calls": todo_calls, **totals,
            "per_cell": [{"number": c.number, "title": c.title, **b.as_dict()} for c, b in zip(grid.cells, bounds)]}


def _totals(bounds: list[CellBound]) -> dict:
    """Each bound summed over the cells; None (unknown) when a cell's is."""
    keys = ("prompt_tokens", "completion_tokens", "usd", "todo_prompt_tokens", "todo_completion_tokens", "todo_usd")
    cells = [b.as_dict() for b in bounds]
    return {k: None if any(c[k] is None for c in cells) else sum(c[k] for c in cells) for k in keys}


def _amount(tokens: int | None) -> str:
    return "unknown" if tokens is None else f"{tokens:,}"


def _dollars(usd: float | None) -> str:
    return "unknown" if usd is None else f"${usd:,.2f}"


def _unknown_note(bounds: list[CellBound]) -> str:
    unpriced = sorted({b.unpriced for b in bounds if b.unpriced})
    return f" (no price is known for {', '.join(unpriced)}: give --price-in and --price-out)" if unpriced else ""


def _dry_row(cell: Cell, state: CellState, calls: int, bound: CellBound) -> list[str]:
    variant = cell.variants[0] + "".join(f" (+ {v})" for v in cell.variants[1:])
    status = state.status if state.status != "resumable" else f"resumable ({state.done}/{state.total} saved)"
    n = f"{state.total:,}" + (f" of {cell.n:,}" if state.total < cell.n else "")  # a file with fewer questions
    return [str(cell.number), variant, cell.dataset, cell.lm, str(cell.budget), n, status,
            f"{cell.calls_per_question:,}", f"{calls:,}", _amount(bound.prompt), _amount(bound.completion),
            _dollars(bound.usd)]
