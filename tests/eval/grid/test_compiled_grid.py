"""grids/compiled.toml (issue 42): scripts/compile_gold.sh's five programs, compiled with no model from
a training file, load into the grid's ten cells: every method zero-shot and compiled on the same
questions, the compiled cells naming their own method's program file."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from eval.files.program_file import read_meta, sha256
from eval.grid.spec import load_grid

ROOT = Path(__file__).resolve().parents[3]
DISTRACTORS = 6  # Reflexion's gold failed trial reads a distractor on each of H = 6 turns


def write_questions(path: Path, prefix: str, n: int) -> None:
    with open(path, "w") as f:
        for i in range(n):
            qid = f"{prefix}{i}"
            titles = [f"{qid} first", f"{qid} second"] + [f"{qid} distractor {j}" for j in range(DISTRACTORS)]
            sentences = [[f"{qid} first leads to {qid} second."], [f"{qid} second is in Varn{i}."]]
            sentences += [["Nothing here."]] * DISTRACTORS
            f.write(json.dumps({
                "id": qid, "question": f"Where is what {qid} first leads to?", "answer": f"Varn{i}",
                "type": "bridge", "level": "hard",
                "supporting_facts": {"title": titles[:2], "sent_id": [0, 0]},
                "context": {"title": titles, "sentences": sentences}}) + "\n")


@pytest.fixture
def compiled(tmp_path, monkeypatch):
    data = tmp_path / "data"
    (data / "hotpotqa").mkdir(parents=True)
    write_questions(data / "hotpotqa" / "hotpot_dev_distractor.rpt_sample300_seed2.jsonl", "t", 3)
    write_questions(data / "hotpotqa" / "hotpot_dev_distractor.rpt_sample500_seed1.jsonl", "d", 20)
    env = {**os.environ, "EIR_DATA_DIR": str(data), "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}",
           "PYTHONPATH": str(ROOT), "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    done = subprocess.run(["bash", str(ROOT / "scripts" / "compile_gold.sh"), "2"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EIR_DATA_DIR", str(data))
    return tmp_path


@pytest.mark.slow
def test_the_five_programs_load_into_the_compiled_grids_cells(compiled):
    grid = load_grid(ROOT / "grids" / "compiled.toml")
    variants = [c.variants[0] for c in grid.cells]
    assert variants == ["eir", "eir compiled=gold-k2", "direct", "direct compiled=gold-k2", "full_pool",
                        "full_pool compiled=gold-k2", "ssr votes=3 T=0.7", "ssr compiled=gold-k2 votes=3 T=0.7",
                        "reflexion_oracle trials=5", "reflexion_oracle compiled=gold-k2 trials=5"]
    assert {json.loads(c.key)["limit"] for c in grid.cells} == {20}
    taught = set()
    for cell in grid.cells:
        program = grid.run_config(cell).program
        if "compiled=" not in cell.variants[0]:
            assert program is None
            continue
        method = json.loads(cell.key)["method"]
        path = compiled / "runs" / "compiled" / method / "gold-k2.json"
        assert (program.name, Path(program.path), program.sha256) == ("gold-k2", path.resolve(), sha256(path))
        meta = read_meta(path)
        assert meta["method"] == method and meta["settings"]["k"] == 2 and len(meta["demo_questions"]) == 2
        taught.add(tuple(meta["demo_questions"]))
    # One demonstration budget: the same two training questions for every method.
    assert len(taught) == 1 and set(next(iter(taught))) < {"t0", "t1", "t2"}


@pytest.mark.slow
def test_each_compile_run_logs_k_the_question_ids_and_each_predictors_demo_count(compiled):
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{compiled / 'mlflow.db'}")
    runs = {r.data.params["method"]: r for r in mlflow.search_runs(experiment_names=["compiled"], output_format="list")}
    assert sorted(runs) == ["direct", "eir", "full_pool", "reflexion", "ssr"]
    assert {r.data.params["k"] for r in runs.values()} == {"2"}
    assert len({r.data.params["demo_question_ids"] for r in runs.values()}) == 1
    # Two 2-hop questions: 3 turns each, and per method what its gold agent's calls give.
    demos = {m: {k: v for k, v in r.data.metrics.items() if k.startswith("demos_") and v} for m, r in runs.items()}
    assert demos == {"eir": {"demos_turn": 6, "demos_answer_predict": 2}, "direct": {"demos_turn": 6},
                     "full_pool": {"demos_answer_predict": 2},
                     "ssr": {"demos_turn": 6, "demos_decompose": 6, "demos_verify": 18},
                     "reflexion": {"demos_turn": 6, "demos_reflect": 2}}
    assert runs["reflexion"].data.params["gold_reflection"].startswith("I read {read} but not {gold}")
