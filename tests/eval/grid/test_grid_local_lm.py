"""eval.grid on the real local LM (SmolLM2-135M) and one real HotpotQA dev question: three EIR
cells (plain, repair, no-list-feedback; H=2) run, are tagged, are compared with the file's family,
and a second run of the same file starts nothing. The plumbing, not the score."""

import json
import os
from pathlib import Path

import mlflow
import pytest

pytestmark = pytest.mark.integration

DEV_FILE = "hotpotqa/hotpot_dev_distractor.rpt_sample500_seed1.jsonl"  # never rpt_sample300_seed0, the holdout
# eval.runs.tracking.variant names: the ablation comes before H.
PLAIN, REPAIR, NO_LIST_FEEDBACK = "eir H=2", "eir repair H=2", "eir no-list-feedback H=2"


@pytest.fixture
def dev_file() -> Path:
    """The dev file, resolved before the test changes directory ($EIR_DATA_DIR may be relative)."""
    data = os.environ.get("EIR_DATA_DIR")
    if not data or not Path(data).is_dir():
        pytest.fail("set EIR_DATA_DIR to the benchmark data directory (e.g. ../shared/data/raw)")
    path = (Path(data) / DEV_FILE).resolve()
    if not path.is_file():
        pytest.fail(f"{path} does not exist: EIR_DATA_DIR must hold {DEV_FILE}")
    return path


def grid_text(dev_file: Path) -> str:
    return f"""
experiment = "grid-it"
reference = "{PLAIN}"       # every cell is H=2, so the default reference (eir) is not run
n = 1
seed = 0
datasets = ["hotpotqa"]
lms = ["smollm2-135m"]

[data]
hotpotqa = {json.dumps(str(dev_file))}

[run]
max_tokens = 128

[[methods]]
method = "eir"
budgets = [2]

[[methods]]
method = "eir"
ablation = "repair"
budgets = [2]

[[methods]]
method = "eir"
ablation = "no-list-feedback"
budgets = [2]

[[families]]
name = "it"
compare = [["{PLAIN}", "{NO_LIST_FEEDBACK}"], ["{REPAIR}", "{PLAIN}"]]
"""


def cell_runs() -> list:
    """The grid's method runs (eval.compare's comparison runs carry no cell key)."""
    from eval.grid import CELL_TAG

    runs = mlflow.search_runs(experiment_names=["grid-it"], output_format="list")
    return [r for r in runs if CELL_TAG in r.data.tags]


def records(run) -> list[dict]:
    from eval.runs import tracking

    path = Path(run.data.tags[tracking.RESULTS_TAG])  # relative to the directory it ran in (tmp_path)
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_a_grid_of_three_eir_cells_runs_on_the_local_lm_and_a_second_run_starts_nothing(tmp_path, monkeypatch,
                                                                                          dev_file, llama_server):
    import eval.grid as grid_module
    import eval.grid.__main__ as grid_command

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    (tmp_path / "grid.toml").write_text(grid_text(dev_file))
    grid = grid_module.load_grid("grid.toml")
    assert [c.variants[0] for c in grid.cells] == [PLAIN, REPAIR, NO_LIST_FEEDBACK]

    out = grid_command.main(["grid.toml"])
    first = cell_runs()
    runs = {r.data.tags["variant"]: r for r in first}
    assert len(first) == 3 and set(runs) == {PLAIN, REPAIR, NO_LIST_FEEDBACK}
    assert all(r.info.status == "FINISHED" for r in runs.values())
    assert {r.data.tags[grid_module.CELL_TAG] for r in runs.values()} == {c.key for c in grid.cells}
    assert all(r.data.tags[grid_module.GRID_TAG] == "grid" for r in runs.values())
    assert [f.name for f in out["comparison"]["grid"].families] == ["it"]  # compared with the file's family

    by_variant = {v: records(r) for v, r in runs.items()}
    for variant, recs in by_variant.items():
        assert len(recs) == 1, variant
        assert all(r["error"] is None for r in recs), [r["error"] for r in recs]
    for r in by_variant[REPAIR]:
        assert r["calls_by_role"].get("action", 0) >= 1 and r["calls_by_role"].get("final") == 1, r["calls_by_role"]
        assert isinstance(r["trajectory"].get("repairs"), dict), r["trajectory"]
    for r in by_variant[NO_LIST_FEEDBACK]:
        assert "list_updates" in r["trajectory"], r["trajectory"]

    # Again: every cell is skipped; no method run is started (eval.compare logs a new comparison run).
    ended = {r.info.run_id: r.info.end_time for r in first}
    grid_command.main(["grid.toml"])
    again = cell_runs()
    assert len(again) == 3 and {r.info.run_id: r.info.end_time for r in again} == ended
