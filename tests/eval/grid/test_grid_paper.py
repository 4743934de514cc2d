"""A paper grid (`paper = true`) refuses an easier or smaller setting before anything runs: its corpus
cells need the full corpus's index, and each dataset's file n questions unless --allow-fewer."""

import json
from pathlib import Path

import mlflow
import pytest

import eval.grid as grid_module
import eval.grid.__main__ as grid_command
import eval.runs.prepare as prepare
from eval.data.corpus import BUILD_FULL_INDEX, FULL_CORPUS_MIN_PARAGRAPHS, build_default_index
from tests.fake_openai import eir_reply
from tests.fixtures.grids import GRID, write_full_index, write_questions
from tests.scripted import use_lm

ROOT = Path(__file__).resolve().parents[3]
PAPER_CORPUS = ROOT / "grids" / "paper-corpus.toml"
PAPER_GRIDS = sorted(ROOT.glob("grids/paper-*.toml"))


def fill_workdir(path: Path) -> None:
    """What the `workdir` fixture (tests/conftest.py) writes for these tests: 3 questions, no grid file."""
    write_questions(path / "data.jsonl", n=3)


def corpus_refusal(path=PAPER_CORPUS) -> str:
    with pytest.raises(grid_module.GridError) as exc:
        grid_module.load_grid(path)
    return str(exc.value)


def test_the_paper_corpus_grid_refuses_to_load_without_an_index(workdir, monkeypatch, capsys):
    message = corpus_refusal()
    assert message.startswith(f"{PAPER_CORPUS}: a paper grid searches the paper's corpus")
    assert "no corpus index is named" in message and "every question's gold paragraphs" in message
    assert BUILD_FULL_INDEX in message  # how to build it
    assert "EIR_INDEX_DIR=" in message and '`index = "runs/corpus/enwiki-index"` under [run]' in message  # how to name it

    monkeypatch.setattr(prepare, "build_lm", lambda spec: pytest.fail("a refused grid built an LM"))
    with pytest.raises(SystemExit) as exc:
        grid_command.main([str(PAPER_CORPUS), "--dry-run"])
    assert str(exc.value.code) == f"error: {message}"
    assert "calls ≤" not in capsys.readouterr().out  # no cell table: the grid never loaded
    assert mlflow.get_experiment_by_name("paper-corpus") is None
    assert not (workdir / "runs").exists()  # the offline corpus was not built


def test_the_paper_corpus_grid_refuses_the_offline_corpus_and_a_partial_index(workdir, monkeypatch, tiny_corpus):
    (workdir / "hotpotqa").mkdir()
    write_questions(workdir / "hotpotqa" / "sample.jsonl", n=3)
    offline = workdir / "runs" / "corpus" / "hotpotqa-abstracts-index"
    build_default_index(workdir, offline, progress=False)
    monkeypatch.setenv("EIR_INDEX_DIR", str(offline))
    assert f"{offline} is the offline HotpotQA corpus (6 paragraphs" in corpus_refusal()

    monkeypatch.setenv("EIR_INDEX_DIR", str(tiny_corpus.directory))  # a real index, 6 paragraphs
    assert f"{tiny_corpus.directory} holds 6 paragraphs, fewer than the paper's 5.23M" in corpus_refusal()

    short = write_full_index(workdir / "short", FULL_CORPUS_MIN_PARAGRAPHS - 1)
    monkeypatch.setenv("EIR_INDEX_DIR", str(short))
    assert f"holds {FULL_CORPUS_MIN_PARAGRAPHS - 1:,} paragraphs" in corpus_refusal()

    monkeypatch.setenv("EIR_INDEX_DIR", str(workdir / "nowhere"))
    assert "nowhere is not a built index (no corpus.json)" in corpus_refusal()


def test_the_paper_corpus_grid_loads_with_the_full_index_from_the_environment_or_the_file(workdir, monkeypatch):
    full = write_full_index(workdir)
    monkeypatch.setenv("EIR_INDEX_DIR", str(full))
    grid = grid_module.load_grid(PAPER_CORPUS)
    assert grid.paper and len(grid.cells) == 8 and all(c.flags["setting"] == "corpus" for c in grid.cells)
    assert {json.loads(c.key)["corpus"] for c in grid.cells} == {"full"}  # never a demo run's cell

    monkeypatch.delenv("EIR_INDEX_DIR")
    text = PAPER_CORPUS.read_text().replace('setting = "corpus"\n', f'setting = "corpus"\nindex = "{full}"\n', 1)
    (workdir / "paper-corpus.toml").write_text(text)
    grid = grid_module.load_grid(workdir / "paper-corpus.toml")
    assert all(json.loads(c.key)["index"] == str(full) for c in grid.cells)
    # Without `paper = true` the same grid is a demo: it loads with no index (eval.run builds the offline one).
    (workdir / "demo.toml").write_text(PAPER_CORPUS.read_text().replace("\npaper = true\n", "\n"))
    demo = grid_module.load_grid(workdir / "demo.toml")
    assert not demo.paper and not any("corpus" in json.loads(c.key) for c in demo.cells)


@pytest.mark.parametrize("path", PAPER_GRIDS, ids=lambda p: p.stem)
def test_every_paper_grid_declares_itself(path, tmp_path, monkeypatch):
    monkeypatch.setenv("EIR_INDEX_DIR", str(write_full_index(tmp_path)))
    assert grid_module.load_grid(path).paper
    for demo in ("local-demo", "smoke"):
        assert not grid_module.load_grid(ROOT / "grids" / f"{demo}.toml").paper


def test_paper_must_be_a_switch(tmp_path):
    (tmp_path / "g.toml").write_text("paper = 1\n" + GRID)
    with pytest.raises(grid_module.GridError, match="paper must be true or false, got 1"):
        grid_module.load_grid(tmp_path / "g.toml")


PAPER_GRID = "paper = true\n" + GRID.replace("n = 3\n", "n = 5\n")  # 5 asked, the file holds 3


def test_a_paper_grid_with_fewer_questions_than_n_stops_before_any_cell(workdir, monkeypatch, capsys):
    (workdir / "grid.toml").write_text(PAPER_GRID)
    monkeypatch.setattr(prepare, "build_lm", lambda spec: pytest.fail("a refused grid built an LM"))
    short = f"n = 5, but hotpotqa's file {workdir / 'data.jsonl'} holds 3 questions"
    with pytest.raises(SystemExit) as exc:
        grid_command.main(["grid.toml"])
    assert str(exc.value.code) == (f"error: grid.toml: {short}; give data with 5 (EIR_DATA_DIR or [data]) or run "
                                   "all 3 with --allow-fewer")
    assert mlflow.get_experiment_by_name("grid-test") is None

    with pytest.raises(SystemExit) as exc:  # the dry run shows the cells, then the same error
        grid_command.main(["grid.toml", "--dry-run"])
    assert short in str(exc.value.code)
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if line[:1].isdigit()]
    assert [r[-9:-6] for r in rows] == [["3", "of", "5"]] * 3  # n: what runs, of what the grid asks


def test_allow_fewer_runs_all_the_file_holds_and_says_so(workdir, monkeypatch, capsys, compared_off):
    (workdir / "grid.toml").write_text(PAPER_GRID)
    use_lm(monkeypatch, eir_reply)
    out = grid_command.main(["grid.toml", "--dry-run", "--allow-fewer"])
    assert out["calls"] == 3 * (4 + 8 + 1)  # bounded on the 3 questions that run, not on n = 5
    assert "holds 3 questions; its cells run all 3 (--allow-fewer; each run logs n = 3)" in capsys.readouterr().out

    grid_command.main(["grid.toml", "--allow-fewer"])
    text = capsys.readouterr().out
    assert text.startswith("note: grid.toml: n = 5, but hotpotqa's file")
    assert "3/3 cells, 9/9 questions done" in text
    runs = mlflow.search_runs(experiment_names=["grid-test"], output_format="list")
    assert len(runs) == 3 and {r.data.params["n"] for r in runs} == {"3"}


@pytest.fixture
def compared_off(monkeypatch):
    import eval.compare.comparison as comparison

    monkeypatch.setattr(comparison, "run_comparison", lambda options: None)


def test_a_paper_grid_needs_a_data_file_for_every_dataset(workdir, monkeypatch):
    monkeypatch.delenv("EIR_DATA_DIR")
    text = PAPER_GRID.replace('datasets = ["hotpotqa"]', 'datasets = ["hotpotqa", "2wiki"]').replace(
        'hotpotqa = "data.jsonl"', f'hotpotqa = "{workdir / "data.jsonl"}"')
    (workdir / "grid.toml").write_text(text)
    with pytest.raises(SystemExit) as exc:
        grid_command.main(["grid.toml", "--allow-fewer"])
    assert str(exc.value.code) == ("error: grid.toml: 2wiki: no data file (set $EIR_DATA_DIR or name one under "
                                   "[data]; only HotpotQA has a Hugging Face copy)")
