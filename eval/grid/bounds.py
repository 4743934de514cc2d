"""The dry run's token and dollar bounds per cell (docs/experiments.md, "Grids").

Each cell's questions are the ones its run would load (the same data file resolution, n and seed as
eval.run); each question's texts are tokenized once per data file and reused by every cell that reads it.
A question's bound is its method's (programs/registry.py `Method.max_tokens`), with the cell's program
built as the run builds it (a compiled program's demos included), its --max-tokens and its decoding; the
cell's bound is the sum over its questions, and its dollars that sum priced as a run prices its calls.
"""

from __future__ import annotations

import heapq
import warnings
from dataclasses import dataclass
from pathlib import Path

from eir_dspy.accounting import price_call
from eval.data.loaders import DataError, DataWarning, load_questions, resolve_data_file
from eval.files.program_file import ProgramFileError, load_program
from eval.runs.config import RunConfig
from eval.runs.errors import RunError
from programs.registry import METHODS
from programs.token_bound import PoolTokens, Prompts


@dataclass(frozen=True)
class CellBound:
    """A cell's token and dollar bounds: all its questions, and those not finished yet. None: unknown (`why`)."""

    prompt: int | None = None
    completion: int | None = None
    usd: float | None = None
    todo_prompt: int | None = None
    todo_completion: int | None = None
    todo_usd: float | None = None
    why: str | None = None  # why the tokens are unknown
    unpriced: str | None = None  # the model no price is known for (its dollars are unknown)

    def as_dict(self) -> dict:
        return {"prompt_tokens": self.prompt, "completion_tokens": self.completion, "usd": self.usd,
                "todo_prompt_tokens": self.todo_prompt, "todo_completion_tokens": self.todo_completion,
                "todo_usd": self.todo_usd}


# (data file, dataset) -> {question id: PoolTokens}: a file's questions are tokenized once per process.
_TOKENS: dict[tuple[str, str], dict[str, PoolTokens]] = {}
_QUESTIONS: dict[tuple[str, str, int, int], list] = {}


def question_tokens(grid, dataset: str) -> list[PoolTokens] | str:
    """The PoolTokens of the questions a `dataset` cell of `grid` runs, in run order; or why none can be read."""
    try:
        source = resolve_data_file(dataset, grid.data_path(dataset))
    except DataError as exc:
        return str(exc)
    if source is None:
        return f"no {dataset} data file to read offline (set $EIR_DATA_DIR or name one under [data])"
    key = (str(Path(source).resolve()), dataset)
    picked = (*key, grid.n, grid.seed)
    if picked not in _QUESTIONS:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DataWarning)  # eval.run warns when it loads the file
                _QUESTIONS[picked] = load_questions(dataset, source, limit=grid.n, seed=grid.seed)
        except DataError as exc:
            return str(exc)
    questions = _QUESTIONS[picked]
    known = _TOKENS.setdefault(key, {})
    new = [q for q in questions if q.id not in known]
    for q, tokens in zip(new, PoolTokens.of_many((q.question, q.paragraphs) for q in new)):
        known[q.id] = tokens
    return [known[q.id] for q in questions]


def usd(config: RunConfig, prompt: int, completion: int) -> float | None:
    """What a run prices `prompt` and `completion` tokens at: its --price-in/--price-out, else the model's
    price (eir_dspy/accounting/prices.py; a local model costs nothing); None when no price is known."""
    lm = config.lm
    if lm.is_local:
        return 0.0
    if lm.price_in is not None and lm.price_out is not None:
        return (prompt * lm.price_in + completion * lm.price_out) / 1e6
    return price_call(lm.model, prompt, completion)


def cell_bound(grid, cell, questions: list[PoolTokens] | str, todo: int) -> CellBound:
    """The bounds of `cell` over `questions` (a reason: unknown), `todo` of them not finished yet (the
    largest bounds are counted for those: which ones are left is not known here)."""
    if isinstance(questions, str):
        return CellBound(why=questions)
    method = METHODS[cell.method]
    try:
        config = grid.run_config(cell)
        program = method.build(cell.budget, config.options)
        if config.program:
            load_program(program, config.program.path, config.method, dict(config.options))
    except (RunError, ProgramFileError, OSError) as exc:
        return CellBound(why=f"its program could not be loaded: {exc}")
    bound = method.token_bound(cell.budget, config.lm.max_tokens, config.setting,
                               Prompts(program, config.lm.decoding or "free"), **config.options)
    each = [bound(q) for q in questions]
    if any(b is None for b in each):
        return CellBound(why=f"the {config.setting} setting has no token bound (its prompts show search results "
                             "and paragraphs no question's text fixes)")
    prompts, completions = [b.prompt for b in each], [b.completion for b in each]
    prompt, completion = sum(prompts), sum(completions)
    todo = max(0, min(todo, len(each)))
    todo_prompt, todo_completion = sum(heapq.nlargest(todo, prompts)), sum(heapq.nlargest(todo, completions))
    price, todo_price = usd(config, prompt, completion), usd(config, todo_prompt, todo_completion)
    return CellBound(prompt, completion, price, todo_prompt, todo_completion, todo_price,
                     unpriced=config.lm.model if price is None else None)
