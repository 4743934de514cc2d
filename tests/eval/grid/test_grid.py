"""eval.grid on a scripted LM: a grid runs end to end, a second run skips everything, a killed cell
is resumed (same MLflow run), bad files fail before anything runs, an LM's own flags reach its
cells, --dry-run counts calls, the shipped grids validate, and the methods' call bounds (programs.registry) hold
against the programs."""

import json
import re
from pathlib import Path

import mlflow
import pytest

import eval.compare.comparison as comparison
import eval.grid as grid_module
import eval.grid.__main__ as grid_command
import eval.grid.runner as runner
import eval.runs.prepare as prepare
from eir_dspy.lm.local_models import DEFAULT_MODEL
from eval.runs import tracking
from eval.runs.logged_runs import select_runs
from programs import EIR, SSR, Direct
from programs.registry import method_named
from tests.fake_openai import eir_reply
from tests.fixtures.grids import (
    BASE,
    GRID,
    N,
    bad,
    fill_workdir,  # noqa: F401 (the files the workdir fixture writes here)
    write_full_index,
)
from tests.fixtures.pool import POOL, Q
from tests.scripted import act, run_program, turn, use_lm

ROOT = Path(__file__).resolve().parents[3]
CALLS_PER_EIR_QUESTION = 3  # eir_reply: one read, a submit, the final call
@pytest.fixture
def full_index(tmp_path, monkeypatch):
    """$EIR_INDEX_DIR names the paper's corpus, so paper-corpus.toml loads (eval/grid/paper.py)."""
    monkeypatch.setenv("EIR_INDEX_DIR", str(write_full_index(tmp_path)))


@pytest.fixture
def compared(monkeypatch):
    """eval.compare's run_comparison, recorded instead of run (its tables are eval.compare's own tests' business)."""
    calls = []
    monkeypatch.setattr(comparison, "run_comparison", lambda options: calls.append(options) or {"options": options})
    return calls


def grid_runs() -> list:
    return mlflow.search_runs(experiment_names=["grid-test"], order_by=["attributes.start_time ASC"],
                              output_format="list")


def test_a_grid_runs_every_cell_tags_it_and_compares_then_a_second_run_starts_nothing(workdir, monkeypatch,
                                                                                      compared, capsys):
    use_lm(monkeypatch, eir_reply)
    grid_command.main(["grid.toml"])
    runs = grid_runs()
    assert len(runs) == 3 and all(r.info.status == "FINISHED" for r in runs)
    grid = grid_module.load_grid("grid.toml")
    assert [c.title for c in grid.cells] == [f"eir H=2 / hotpotqa / {DEFAULT_MODEL} / H=2",
                                             f"eir / hotpotqa / {DEFAULT_MODEL} / H=6",
                                             f"full_pool / hotpotqa / {DEFAULT_MODEL} / H=6"]
    by_key = {r.data.tags[grid_module.CELL_TAG]: r for r in runs}
    assert set(by_key) == {c.key for c in grid.cells}
    for cell in grid.cells:
        run = by_key[cell.key]
        assert run.data.tags[grid_module.GRID_TAG] == "grid"
        assert run.data.tags["variant"] == cell.variants[0]
        assert run.data.metrics["n"] == N and run.data.params["max_tokens"] == "256"
        assert run.data.params["data_file"] == str(workdir / "data.jsonl")  # resolved against $EIR_DATA_DIR
    key = json.loads(grid.cells[0].key)
    assert key == {"method": "eir", "dataset": "hotpotqa", "lm": DEFAULT_MODEL, "budget": 2, "limit": N, "seed": 0, "rules": "issue42",  # noqa: E501
                   "data": "data.jsonl", "max_tokens": 256}
    [options] = compared
    assert (options.experiment, options.reference, [f.name for f in options.families]) == ("grid-test", "eir", ["h"])
    out = capsys.readouterr().out
    assert "python -m eval.compare --experiment grid-test --reference eir --families grid.toml" in out
    assert "[grid 1/3] start: eir H=2" in out and "time left unknown" in out
    assert "[grid 3/3] finished: full_pool" in out and f"3/3 cells, {3 * N}/{3 * N} questions done" in out
    assert "s/question this session" in out

    # Again: every cell is skipped, no run is started, the comparison runs again.
    ended = {r.info.run_id: r.info.end_time for r in runs}
    grid_command.main(["grid.toml"])
    again = grid_runs()
    assert len(again) == 3  # no new run
    assert {r.info.run_id: r.info.end_time for r in again} == ended
    assert len(compared) == 2
    assert capsys.readouterr().out.count("skip ") == 3


def test_a_killed_cell_is_resumed_as_the_same_run(workdir, monkeypatch, compared, capsys):
    calls = {"n": 0}
    kill_at = N * CALLS_PER_EIR_QUESTION + CALLS_PER_EIR_QUESTION + 1  # cell 2, first call of its second question

    def killed_in_cell_two(prompt):
        calls["n"] += 1
        if calls["n"] == kill_at:
            raise KeyboardInterrupt  # as Ctrl-C inside a question
        return eir_reply(prompt)

    use_lm(monkeypatch, killed_in_cell_two)
    with pytest.raises(SystemExit) as stopped:
        grid_command.main(["grid.toml"])
    assert stopped.value.code == 130
    captured = capsys.readouterr()
    assert "Continue it with:\n  python -m eval.grid grid.toml" in captured.err
    assert "[grid 2/3] interrupted: eir / hotpotqa" in captured.out
    first, killed = grid_runs()  # the third cell never started
    assert first.info.status == "FINISHED" and killed.info.status == "KILLED"
    saved = Path(killed.data.tags[tracking.RESULTS_TAG]).read_text().splitlines()
    assert 1 <= len(saved) < N
    assert compared == []  # nothing is compared after an interrupt
    # The saved count is what a resume keeps: another run's line and a torn last line are not this run's.
    foreign = json.loads(saved[0]) | {"run_id": first.info.run_id, "id": "another-question"}
    copy = Path("copy.jsonl")
    copy.write_text("\n".join(saved + [json.dumps(foreign)]) + '\n{"id": "torn')
    assert runner._questions_done(str(copy), killed.info.run_id) == len(saved)

    grid_command.main(["grid.toml", "--dry-run"])
    dry = capsys.readouterr().out
    assert "finished" in dry and f"resumable ({len(saved)}/{N} saved)" in dry and " new " in dry
    assert len(grid_runs()) == 2  # a dry run starts nothing

    use_lm(monkeypatch, eir_reply)
    grid_command.main(["grid.toml"])
    runs = {r.info.run_id: r for r in grid_runs()}
    assert len(runs) == 3
    assert runs[killed.info.run_id].info.status == "FINISHED"  # the same run, resumed
    assert runs[killed.info.run_id].data.metrics["n"] == N
    ids = [json.loads(line)["id"] for line in Path(killed.data.tags[tracking.RESULTS_TAG]).read_text().splitlines()]
    assert sorted(ids) == [f"q{i}" for i in range(N)]  # each question once: the saved ones were not redone
    assert runs[first.info.run_id].info.end_time == first.info.end_time  # the finished cell was skipped
    out = capsys.readouterr().out
    assert f"[grid 2/3] resume run {killed.info.run_id} ({len(saved)}/{N} questions saved)" in out
    assert len(compared) == 1


def test_a_failing_cell_is_reported_the_rest_run_and_the_grid_exits_1(workdir, monkeypatch, compared, capsys):
    def broken_full_pool(prompt):
        if "[[ ## evidence ## ]]" in prompt and "## Other" in prompt.rsplit("[[ ## evidence ## ]]", 1)[1]:
            raise RuntimeError("the provider is down")  # only Full Pool's prompt holds the distractor
        return eir_reply(prompt)

    use_lm(monkeypatch, broken_full_pool)
    # Full Pool first, so a cell after the failing one still runs.
    text = GRID.replace('[[methods]]\nmethod = "eir"\nbudgets = [2, 6]\n\n[[methods]]\nmethod = "full_pool"\n',
                        '[[methods]]\nmethod = "full_pool"\n\n[[methods]]\nmethod = "eir"\nbudgets = [2, 6]\n')
    (workdir / "grid.toml").write_text(text)
    with pytest.raises(SystemExit) as failed:
        grid_command.main(["grid.toml"])
    assert failed.value.code == 1
    statuses = sorted(r.info.status for r in grid_runs())
    assert statuses == ["FAILED", "FINISHED", "FINISHED"]
    err = capsys.readouterr().err
    assert "1 of 3 cells failed" in err and "full_pool / hotpotqa" in err and "failed with the same error" in err
    assert len(compared) == 1  # two finished runs: still compared





def test_validation_errors_name_the_file_and_the_entry(tmp_path):
    ok = BASE + '[[methods]]\nmethod = "eir"\n'
    assert len(grid_module.load_grid(_write(tmp_path, ok)).cells) == 1
    assert "unknown key 'budget' at the top level" in bad(tmp_path, BASE + 'budget = [6]\n[[methods]]\nmethod = "eir"\n')
    assert "missing required key 'methods'" in bad(tmp_path, BASE)
    assert "missing required key 'n'" in bad(tmp_path, 'experiment = "x"\ndatasets = ["hotpotqa"]\nlms = ["m"]\n')
    assert "methods[1].method: unknown value 'eirr'; choose one of 'eir'" in bad(tmp_path, ok + '[[methods]]\nmethod = "eirr"\n')
    assert "methods[0] (method = 'eir'): unknown key 'vote'" in bad(tmp_path, BASE + '[[methods]]\nmethod = "eir"\nvote = 3\n')
    assert "'votes' is not an option of method eir (its options: ablation, invalid_updates)" in bad(
        tmp_path, BASE + '[[methods]]\nmethod = "eir"\nvotes = 3\n')
    assert "'ablation' is not an option of method direct (it takes none)" in bad(
        tmp_path, BASE + '[[methods]]\nmethod = "direct"\nablation = "repair"\n')
    assert "datasets must be a non-empty list" in bad(tmp_path, ok.replace('["hotpotqa"]', "[]"))
    assert "datasets[0]: unknown value 'hotpot'" in bad(tmp_path, ok.replace('"hotpotqa"', '"hotpot"'))
    assert "budgets[1] must be a positive integer, got 0" in bad(tmp_path, BASE + 'budgets = [6, 0]\n[[methods]]\nmethod = "eir"\n')  # noqa: E501
    assert "run: 'limit' is set by the grid; use the grid's `n`" in bad(tmp_path, ok + "[run]\nlimit = 3\n")
    assert "run.method: methods are named by the [[methods]] entries" in bad(tmp_path, ok + '[run]\nmethod = "ssr"\n')
    assert "run.votes: a method option" in bad(tmp_path, ok + "[run]\nvotes = 3\n")
    assert "argument --votes: must be a positive integer, got 0" in bad(
        tmp_path, BASE + '[[methods]]\nmethod = "ssr"\nvotes = 0\n')
    assert "argument --ablation: invalid choice: 'repairs'" in bad(
        tmp_path, BASE + '[[methods]]\nmethod = "eir"\nablation = "repairs"\n')
    assert "methods[1] and methods[0] give the same cell" in bad(tmp_path, ok + '[[methods]]\nmethod = "eir"\nbudgets = [6]\n')
    assert "methods[0] (method = 'full_pool'): --method full_pool has no corpus setting" in bad(
        tmp_path, BASE + '[run]\nsetting = "corpus"\n[[methods]]\nmethod = "full_pool"\n')
    two = BASE.replace('["hotpotqa"]', '["hotpotqa", "2wiki"]')
    assert "methods[0] (method = 'eir'): the corpus setting searches HotpotQA's Wikipedia corpus; got --dataset 2wiki" in bad(
        tmp_path, two + '[run]\nsetting = "corpus"\n[[methods]]\nmethod = "eir"\n')
    assert "run: 'trace' is a switch: true or false" in bad(tmp_path, ok + "[run]\ntrace = 1\n")
    assert "families[0].size must be a positive integer, got 0" in bad(
        tmp_path, ok + '[[families]]\nname = "f"\nsize = 0\ncompare = [["eir", "eir"]]\n')
    assert "families[0]: unknown key 'what'" in bad(
        tmp_path, ok + '[[families]]\nname = "f"\nwhat = 1\ncompare = [["eir", "eir"]]\n')
    assert "families[0] ('f').compare[0]: expected two different variants" in bad(
        tmp_path, ok + '[[families]]\nname = "f"\ncompare = [["eir", "eir"]]\n')
    assert "data.hotpot: unknown value 'hotpot'" in bad(tmp_path, ok + '[data]\nhotpot = "x"\n')
    assert "is the acceptance holdout" in bad(
        tmp_path, ok + '[data]\nhotpotqa = "hotpotqa/hotpot_dev_distractor.rpt_sample300_seed0.jsonl"\n')
    assert "families[0] ('f').compare[0]: 'eir H=8' is not a variant this grid runs; its variants: eir" in bad(
        tmp_path, ok + '[[families]]\nname = "f"\ncompare = [["eir H=8", "eir"]]\n')
    assert "reference 'direct' is not a variant this grid runs" in bad(tmp_path, 'reference = "direct"\n' + ok)
    assert "not valid TOML" in bad(tmp_path, ok + "[[methods]\n")
    # Through the command line: an error message, nothing run.
    with pytest.raises(SystemExit) as exc:
        grid_command.main([str(tmp_path / "bad.toml")])
    assert str(exc.value.code).startswith(f"error: {tmp_path / 'bad.toml'}: not valid TOML")


def test_a_cell_key_leaves_out_what_does_not_change_the_condition(tmp_path):
    def key(entry: str, run: str = "") -> dict:
        text = BASE + run + "[[methods]]\n" + entry + '[[methods]]\nmethod = "eir"\n'
        grid = grid_module.load_grid(_write(tmp_path, text))
        return json.loads(grid.cells[0].key)

    plain = key('method = "ssr"\n')
    assert plain == {"method": "ssr", "dataset": "hotpotqa", "lm": "m", "budget": 6, "limit": 2, "seed": 0, "rules": "issue42"}
    assert key('method = "ssr"\nvotes = 3\nverifier_temperature = 0.7\n') == plain  # eval.run's own defaults
    assert key('method = "ssr"\n', "[run]\nthreads = 8\nrequest_timeout = 30\n") == plain  # how it runs, not what
    assert key('method = "ssr"\nvotes = 5\n', "[run]\nmax-tokens = 256\ntemperature = 1\n") == {
        **plain, "votes": 5, "max_tokens": 256, "temperature": 1.0}


LM_TABLES = ('experiment = "x"\nn = 2\ndatasets = ["hotpotqa"]\n'
             f'lms = ["m", {{ lm = "{DEFAULT_MODEL}", decoding = "free", max-tokens = 64 }}]\n'
             "[run]\nmax_tokens = 256\ntemperature = 0.5\n"
             '[[methods]]\nmethod = "eir"\n[[methods]]\nmethod = "direct"\nmax_tokens = 32\n')


def test_an_lm_table_gives_its_flags_to_that_lms_cells_only(tmp_path):
    grid = grid_module.load_grid(_write(tmp_path, LM_TABLES))
    assert grid.lms == ["m", DEFAULT_MODEL]
    assert grid.lm_flags == {"m": {}, DEFAULT_MODEL: {"decoding": "free", "max_tokens": 64}}
    cells = {(c.method, c.lm): c for c in grid.cells}
    assert [(c.method, c.lm) for c in grid.cells] == [("eir", "m"), ("eir", DEFAULT_MODEL), ("direct", "m"),
                                                      ("direct", DEFAULT_MODEL)]
    base = {"dataset": "hotpotqa", "budget": 6, "limit": 2, "seed": 0, "rules": "issue42", "temperature": 0.5}
    # [run] < the LM's table < the method entry
    expected = {("eir", "m"): {"max_tokens": 256},
                ("eir", DEFAULT_MODEL): {"max_tokens": 64, "decoding": "free"},
                ("direct", "m"): {"max_tokens": 32},
                ("direct", DEFAULT_MODEL): {"max_tokens": 32, "decoding": "free"}}
    for (method, lm), flags in expected.items():
        cell = cells[method, lm]
        assert json.loads(cell.key) == {**base, "method": method, "lm": lm, **flags}
        c = cell.config.lm
        assert (c.model, c.max_tokens, c.temperature, c.decoding) == (lm, flags["max_tokens"], 0.5, flags.get("decoding"))
    # The embedded model's default is schema: its free runs are labelled, as eval.run labels them.
    assert cells["eir", DEFAULT_MODEL].variants == ("eir decoding=free",)
    assert cells["eir", "m"].variants == ("eir",)


def test_a_bad_lm_table_names_the_file_and_the_lm(tmp_path):
    def lm_error(table: str, methods: str = '[[methods]]\nmethod = "eir"\n') -> str:
        return bad(tmp_path, BASE.replace('lms = ["m"]', f'lms = ["a", {table}]') + methods)

    assert "lms[1] (lm = 'm'): unknown key 'decodng'; eval.run flags:" in lm_error('{ lm = "m", decodng = "free" }')
    assert "lms[1] (lm = 'm'): argument --decoding: invalid choice: 'fre'" in lm_error('{ lm = "m", decoding = "fre" }')
    assert "lms[1] (lm = 'm'): argument --max-tokens: must be a positive integer, got 0" in lm_error(
        '{ lm = "m", max_tokens = 0 }')
    assert "lms[1] (lm = 'm'): 'budget' is set by the grid" in lm_error('{ lm = "m", budget = 2 }')
    assert "lms[1] (lm = 'm').ablation: a method option" in lm_error('{ lm = "m", ablation = "repair" }')
    assert "lms[1] (lm = 'm').method: methods are named by the [[methods]] entries" in lm_error(
        '{ lm = "m", method = "ssr" }')
    assert "lms[1] (lm = 'm'): 'trace' is a switch: true or false" in lm_error('{ lm = "m", trace = 1 }')
    assert "lms[1]: missing required key 'lm'" in lm_error('{ decoding = "free" }')
    assert "lms[1].lm must be a non-empty string" in lm_error('{ lm = "", decoding = "free" }')
    assert "lms: 'a' appears twice" in lm_error('{ lm = "a", decoding = "free" }')
    assert "methods[0] (method = 'full_pool') with lm 'm': --method full_pool has no corpus setting" in lm_error(
        '{ lm = "m", setting = "corpus" }', '[[methods]]\nmethod = "full_pool"\n')


def _write(tmp_path, text: str) -> Path:
    path = tmp_path / "ok.toml"
    path.write_text(text)
    return path


def test_a_missing_data_file_stops_the_grid_before_any_cell(workdir, monkeypatch):
    monkeypatch.delenv("EIR_DATA_DIR")
    (workdir / "grid.toml").write_text(GRID.replace('"data.jsonl"', '"nowhere/data.jsonl"'))
    with pytest.raises(SystemExit) as exc:
        grid_command.main(["grid.toml"])
    assert "data.hotpotqa: nowhere/data.jsonl does not exist (relative paths resolve against $EIR_DATA_DIR" in \
        str(exc.value.code)
    assert mlflow.get_experiment_by_name("grid-test") is None


def test_dry_run_lists_cells_and_call_bounds_and_runs_nothing(workdir, monkeypatch, capsys):
    monkeypatch.setattr(prepare, "build_lm", lambda spec: pytest.fail("a dry run built an LM"))
    out = grid_command.main(["grid.toml", "--dry-run"])
    expected = N * (max_calls("eir", 2) + max_calls("eir", 6) + max_calls("full_pool", 6))
    assert expected == 3 * (4 + 8 + 1) == out["calls"] == out["todo_calls"]
    text = capsys.readouterr().out
    assert f"{expected:,} in all" in text
    rows = [re.split(r"\s{2,}", line.strip()) for line in text.splitlines() if line[:1].isdigit()]
    assert [(r[1], r[6], r[7], r[8]) for r in rows] == [("eir H=2", "new", "4", str(4 * N)), ("eir", "new", "8", str(8 * N)),
                                                        ("full_pool", "new", "1", str(N))]
    assert mlflow.get_experiment_by_name("grid-test") is None  # nothing started, nothing created


SHIPPED = {"paper-main": 30, "paper-ablations": 42, "paper-corpus": 8, "local-demo": 3, "smoke": 9}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_every_shipped_grid_validates(name, full_index):
    grid = grid_module.load_grid(ROOT / "grids" / f"{name}.toml")
    assert len(grid.cells) == SHIPPED[name]
    assert grid.experiment == name
    assert not any("rpt_sample300_seed0" in v for v in grid.data.values())  # never the holdout
    assert (ROOT / "grids" / f"{name}.toml").read_text().startswith("#")  # a header says what it reproduces


def test_the_shipped_grids_hold_the_papers_conditions(full_index):
    def variants(name):
        return {v for c in grid_module.load_grid(ROOT / "grids" / f"{name}.toml").cells for v in c.variants}
    # Claude Haiku 4.5 runs `free` (the paper's condition), which is also its default
    # (eir_dspy/lm/decoding.py), so both LMs' runs carry the same variants and pair with `eir`.
    assert variants("paper-main") == {"eir", "direct", "full_pool", "ssr votes=3 T=0.7",
                                      "reflexion_oracle trials=5", "reflexion_first trials=5"}
    assert variants("paper-ablations") == {"eir", "eir H=4", "eir H=8", "eir H=10", "eir no-list-feedback",
                                           "eir repair", "eir repair-unapplied"}
    assert variants("paper-corpus") == {"eir_corpus", "direct_corpus", "ssr_corpus votes=3 T=0",
                                        "reflexion_oracle_corpus trials=5", "reflexion_first_corpus trials=5"}
    decodings = {"openai/gpt-4.1-mini": "schema", "anthropic/claude-haiku-4-5": "free"}  # docs/lm.md, "Decoding"
    for name in ("paper-main", "paper-ablations", "paper-corpus"):
        grid = grid_module.load_grid(ROOT / "grids" / f"{name}.toml")
        assert grid.lm_flags == {lm: {"decoding": d} for lm, d in decodings.items()}
        assert all(json.loads(c.key)["decoding"] == decodings[c.lm] for c in grid.cells)
    ablations = grid_module.load_grid(ROOT / "grids" / "paper-ablations.toml")
    assert [(f["name"], f.get("per_column", False)) for f in ablations.families] == [
        ("h_sweep", False), ("list_feedback", False), ("repair", True), ("repair_applied", False)]
    main = grid_module.load_grid(ROOT / "grids" / "paper-main.toml")
    assert main.lms == ["openai/gpt-4.1-mini", "anthropic/claude-haiku-4-5"] and main.n == 1000
    assert {c.dataset for c in main.cells} == {"hotpotqa", "2wiki", "musique"}
    smoke = grid_module.load_grid(ROOT / "grids" / "smoke.toml")
    assert smoke.lms == ["smollm2-135m"] and smoke.n == 1 and smoke.run == {"max_tokens": 256}
    assert {c.method for c in smoke.cells} == {"eir", "direct", "full_pool", "ssr", "reflexion"}


def max_calls(name: str, budget: int, **options) -> int:
    return method_named(name).max_calls(budget, **options)


def test_call_rules_by_hand():
    assert max_calls("eir", 6) == 8  # 7 turns + the final call
    assert max_calls("eir", 4) == 6 and max_calls("eir", 10) == 12
    assert max_calls("eir", 6, ablation="no-list-feedback") == 8
    # 7 turns + the final call, and up to 4 repairs + 1 refresh after each of turns 3 to 6 (none can
    # follow turns 1 and 2: programs/eir.py FIRST_REPAIR_TURN; nor the last)
    assert max_calls("eir", 6, ablation="repair") == max_calls("eir", 6, ablation="repair-unapplied") == 8 + 4 * 5
    assert max_calls("direct", 6) == 6
    assert max_calls("full_pool", 6) == max_calls("full_pool", 10) == 1
    assert max_calls("ssr", 6, votes=3, verifier_temperature=0.7) == 6 * (1 + 1 + 9 + 1) == 72
    assert max_calls("ssr", 6, votes=1) == 36
    assert max_calls("reflexion", 6, trials=5) == 5 * 6 + 4 == 34
    assert max_calls("reflexion", 6, trials=1) == 6
    assert max_calls("eir", 6, setting="corpus") == 13 and max_calls("direct", 6, setting="corpus") == 12
    assert max_calls("ssr", 6, setting="corpus", votes=3) == 144
    assert max_calls("reflexion", 6, setting="corpus", trials=5) == 5 * 12 + 4
    for method, options in (("full_pool", {"setting": "corpus"}), ("direct", {"ablation": "repair"}), ("nope", {}),
                            ("eir", {"colour": "red"})):
        with pytest.raises(ValueError):
            max_calls(method, 6, **options)


def test_call_rules_are_reached_by_models_that_never_submit():
    """The bound is tight where a model never submits: every turn is used and every call made."""
    def eir_reads_forever(prompt):
        return {"answer": "x", "citations": []} if "[[ ## evidence ## ]]" in prompt else turn("read", "no such title")

    _, ledger, _ = run_program(EIR(budget=2), Q, POOL, eir_reads_forever)
    assert ledger.n_calls == max_calls("eir", 2) == 4

    _, ledger, _ = run_program(Direct(budget=3), Q, POOL, lambda p: act("read", "no such title"))
    assert ledger.n_calls == max_calls("direct", 3) == 3

    def ssr_always_refines(prompt):
        if "Break the proposed action" in prompt:
            return {"facts": "f", "justification": "j", "action": "a"}
        if "Check one step" in prompt:  # every vote rejects with one correction: a step always qualifies
            return {"verdict": "reject", "correction": "the city is Tulsa", "confidence": 0.9}
        return act("read", "no such title")  # the proposal and the refinement

    _, ledger, _ = run_program(SSR(budget=2, votes=3), Q, POOL, ssr_always_refines)
    assert ledger.by_role()["refine"] == 2
    assert ledger.n_calls == max_calls("ssr", 2, votes=3) == 24


def test_a_finished_cell_with_failed_questions_is_resumed(workdir, monkeypatch, compared):
    (workdir / "grid.toml").write_text(GRID.replace('budgets = [2, 6]', 'budgets = [6]').split("[[methods]]\nmethod = \"full_pool\"")[0])  # noqa: E501

    def provider_down_for_q1(prompt):
        if "fort number 1?" in prompt:
            raise RuntimeError("provider down")  # no response at all: the question fails with this error
        return eir_reply(prompt)

    use_lm(monkeypatch, provider_down_for_q1)
    with pytest.raises(SystemExit) as stop:
        grid_command.main(["grid.toml"])
    assert stop.value.code == 1  # the cell is reported as failed
    (first,) = grid_runs()
    assert first.info.status == "FINISHED" and first.data.metrics["failed_questions"] == 1
    use_lm(monkeypatch, eir_reply)  # the provider is back
    grid_command.main(["grid.toml"])
    (again,) = grid_runs()
    assert again.info.run_id == first.info.run_id and again.data.metrics["failed_questions"] == 0


def test_a_finished_run_with_an_earlier_versions_tag_is_named_with_the_way_out():
    from types import SimpleNamespace

    from eval.grid.runner import cell_state
    from eval.runs.errors import RunError

    run = SimpleNamespace(info=SimpleNamespace(run_id="r9", run_name="eir / hotpotqa / m", status="FINISHED"),
                          data=SimpleNamespace(metrics={}, tags={tracking.CONFIG_TAG: json.dumps({"method": "eir", "n": 5})}))
    with pytest.raises(RunError, match=r"run r9 \(eir / hotpotqa / m\): eir.config tag: missing key .*migrate it first"):
        cell_state(SimpleNamespace(n=5), [run])


def test_a_run_killed_while_being_set_up_is_retired_and_its_cell_started_again(workdir, monkeypatch, compared):
    """A SIGKILL between creating a cell's run and tagging it left a run no resume could continue, and
    the cell failed on every later attempt (found by benchmarks/rehearsal.py). Now the cell starts again."""
    use_lm(monkeypatch, eir_reply)
    grid = grid_module.load_grid("grid.toml")
    tracking.use_tracking_uri()
    tracking.setup("grid-test")
    orphan = mlflow.start_run(run_name=grid.cells[1].config.run_name,
                              tags={runner.CELL_TAG: grid.cells[1].key, runner.GRID_TAG: "grid"})
    mlflow.end_run("RUNNING")  # left as a killed process leaves it
    mlflow.MlflowClient().set_terminated(orphan.info.run_id, "RUNNING")
    grid_command.main(["grid.toml"])
    runs = {r.info.run_id: r for r in grid_runs()}
    assert len(runs) == 4
    assert runs[orphan.info.run_id].info.status == "FAILED"
    assert "setting it up" in runs[orphan.info.run_id].data.tags[tracking.FAILURE_TAG]
    others = [r for r in runs.values() if r.info.run_id != orphan.info.run_id]
    assert all(r.info.status == "FINISHED" and r.data.metrics["n"] == N for r in others)
    assert len(compared) == 1
    loaded, notes = select_runs("grid-test")  # what eval.compare reads: the retired run skipped, with a note
    assert len(loaded) == 3 and any(orphan.info.run_id in n and "setting it up" in n for n in notes)
    mlflow.MlflowClient().set_terminated(orphan.info.run_id, "RUNNING")  # even while it still reads RUNNING
    assert len(select_runs("grid-test")[0]) == 3
