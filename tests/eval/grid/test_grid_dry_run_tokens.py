"""eval.grid --dry-run's token and dollar bounds: per cell the sum of its method's bound (programs/registry.py
`Method.max_tokens`) over the questions its run would load, at the cell's --max-tokens; dollars as a run
prices them, unknown (never 0) for a model with no price; the totals the per-cell sums."""

import re

import mlflow

import eval.grid.__main__ as grid_command
from eir_dspy.accounting import price_call
from eval.data.loaders import load_questions
from programs.registry import METHODS
from programs.token_bound import PoolTokens
from tests.fixtures.grids import N, write_questions

PRICED, UNPRICED = "openai/gpt-4.1-mini", "acme/no-such-model"
GRID = f"""
experiment = "tokens-test"
reference = "eir H=2"
n = {N}
seed = 0
datasets = ["hotpotqa"]
lms = ["{PRICED}", "{UNPRICED}"]
budgets = [2]

[data]
hotpotqa = "data.jsonl"

[run]
max_tokens = 100

[[methods]]
method = "eir"

[[methods]]
method = "full_pool"
"""


def fill_workdir(path):
    write_questions(path / "data.jsonl")
    (path / "grid.toml").write_text(GRID)


def expected_tokens(method: str) -> tuple[int, int]:
    """The cell's bound computed here: the method's bound summed over the questions eval.run would load."""
    questions = load_questions("hotpotqa", "data.jsonl", limit=N, seed=0)
    bounds = [METHODS[method].max_tokens(2, PoolTokens.of(q.question, q.paragraphs), 100) for q in questions]
    return sum(b.prompt for b in bounds), sum(b.completion for b in bounds)


def test_the_dry_run_bounds_tokens_and_dollars_per_cell_and_in_all(workdir, capsys):
    out = grid_command.main(["grid.toml", "--dry-run"])
    text = capsys.readouterr().out
    eir, full_pool = expected_tokens("eir"), expected_tokens("full_pool")
    assert eir[1] == N * METHODS["eir"].max_calls(2) * 100 and full_pool[1] == N * 100
    cells = out["per_cell"]
    assert [c["title"].split(" / ")[:3:2] for c in cells] == [["eir H=2", PRICED], ["eir H=2", UNPRICED],
                                                               ["full_pool H=2", PRICED], ["full_pool H=2", UNPRICED]]
    assert [(c["prompt_tokens"], c["completion_tokens"]) for c in cells] == [eir, eir, full_pool, full_pool]
    assert [c["usd"] for c in cells] == [price_call(PRICED, *eir), None, price_call(PRICED, *full_pool), None]
    assert cells[0]["usd"] > 0
    # Nothing has run: what is not finished is all of it.
    assert all(c["todo_prompt_tokens"] == c["prompt_tokens"] and c["todo_usd"] == c["usd"] for c in cells)
    assert out["prompt_tokens"] == sum(c["prompt_tokens"] for c in cells) == 2 * (eir[0] + full_pool[0])
    assert out["completion_tokens"] == sum(c["completion_tokens"] for c in cells) == out["todo_completion_tokens"]
    assert out["usd"] is None and out["todo_usd"] is None  # a cell's model has no price: unknown, not 0

    rows = [re.split(r"\s{2,}", line.strip()) for line in text.splitlines() if line[:1].isdigit()]
    assert [r[-3:] for r in rows] == [[f"{eir[0]:,}", f"{eir[1]:,}", f"${price_call(PRICED, *eir):,.2f}"],
                                      [f"{eir[0]:,}", f"{eir[1]:,}", "unknown"],
                                      [f"{full_pool[0]:,}", f"{full_pool[1]:,}", f"${price_call(PRICED, *full_pool):,.2f}"],
                                      [f"{full_pool[0]:,}", f"{full_pool[1]:,}", "unknown"]]
    assert (f"prompt {out['prompt_tokens']:,}, completion {out['completion_tokens']:,} in all; "
            f"prompt {out['prompt_tokens']:,}, completion {out['completion_tokens']:,} for what is not finished yet") in text
    assert f"Dollars at most: unknown in all; unknown for what is not finished yet (no price is known for {UNPRICED}" in text
    assert mlflow.get_experiment_by_name("tokens-test") is None  # a dry run creates nothing


def test_priced_cells_alone_total_their_dollars(workdir, capsys):
    (workdir / "grid.toml").write_text(GRID.replace(f', "{UNPRICED}"', ""))
    out = grid_command.main(["grid.toml", "--dry-run"])
    eir, full_pool = expected_tokens("eir"), expected_tokens("full_pool")
    assert out["usd"] == price_call(PRICED, *eir) + price_call(PRICED, *full_pool)
    assert f"Dollars at most: ${out['usd']:,.2f} in all" in capsys.readouterr().out


def test_corpus_cells_have_no_token_bound(workdir, capsys):
    corpus = GRID.replace("[run]\n", '[run]\nsetting = "corpus"\n').split("[[methods]]\nmethod = \"full_pool\"")[0]
    (workdir / "grid.toml").write_text(corpus.replace('reference = "eir H=2"', 'reference = "eir_corpus H=2"'))
    out = grid_command.main(["grid.toml", "--dry-run"])
    text = capsys.readouterr().out
    assert out["calls"] == 2 * N * METHODS["eir"].max_calls(2, "corpus")  # calls are still bounded
    assert [c["prompt_tokens"] for c in out["per_cell"]] == [None, None] and out["prompt_tokens"] is None
    assert out["usd"] is None
    assert "prompt unknown, completion unknown in all" in text
    assert text.count("note: tokens unknown for some cells: the corpus setting has no token bound") == 1
