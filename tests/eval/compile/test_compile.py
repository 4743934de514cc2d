"""eval.compile on the scripted LM: DSPy's optimizers on EIR with a tiny trainset, the metric is the
project's scorer, the program file round-trips in a fresh process with identical prompts, demos sit
in each prompt's stable prefix, `eval.run --program` runs it under its own variant, the holdout and
train == dev are refused, and the compile's calls are counted by role."""

import json
import subprocess
import sys
from pathlib import Path

import dspy
import mlflow
import pytest

import eval.compile.__main__ as compile_main
import eval.compile.lm as compile_lm
import eval.compile.splits as splits
import eval.run as run_module
import eval.runs.prepare as prepare
from eir_dspy.lm import DecodingAdapter
from eval.compile.feedback import FeedbackMetric
from eval.compile.metric import Metric, example_of
from eval.data.loaders import load_questions
from eval.files.program_file import load_program
from eval.grid.spec import GridError, load_grid
from eval.runs import tracking
from eval.runs.logged_runs import select_runs
from eval.scoring.metrics import score_question
from programs import EIR
from tests.fixtures.scripted_runs import write_data
from tests.scripted import field, final, scripted_lm, turn

ROOT = Path(__file__).resolve().parents[3]
TRAIN = [("q1", "Who founded Blue Moth?", "Lena Osk"), ("q2", "Where is Fort Ban?", "Varn"),
         ("q3", "When did Red Moth form?", "1999")]
DEV = [("d1", "Who built Gray Tower?", "Ada Lin"), ("d2", "What is Green Bay known for?", "cheese")]
ANSWERS = {q: a for _, q, a in TRAIN + DEV}
IDS = {q: i for i, q, _ in TRAIN + DEV}
NEW_INSTRUCTION = "Answer with the gold answer."  # what the scripted reflection LM proposes


def write_questions(path: Path, items) -> Path:
    return write_data(path, items)  # the runner tests' records


def reply(prompt: str):
    """Read the gold paragraph, submit, answer from it: right for every question but q2 and d2, which
    are answered right only under the instruction GEPA's reflection proposes."""
    if "new_instruction" in prompt:
        return {"new_instruction": NEW_INSTRUCTION}
    question = field(prompt, "question")
    qid = IDS[question]
    if "[[ ## evidence ## ]]" in prompt.rsplit("[[ ## question ## ]]", 1)[1]:
        right = qid not in ("q2", "d2") or NEW_INSTRUCTION in prompt
        return final(ANSWERS[question] if right else "wrong", [(f"{qid} gold", 0)])
    if "reads left" in field(prompt, "last_result"):
        return turn("submit", answer="x")
    return turn("read", f"{qid} gold")


def messages_of(program, question: str, paragraphs) -> list[list[dict]]:
    """Every request's messages (role, content) when `program` runs one question on the scripted LM."""
    lm = scripted_lm(reply)
    with dspy.context(lm=lm, adapter=DecodingAdapter("schema")):
        program(question=question, paragraphs=paragraphs)
    return [entry["messages"] for entry in lm.history]


class Workdir:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.train = write_questions(root / "train.jsonl", TRAIN)
        self.dev = write_questions(root / "dev.jsonl", DEV)
        self.uri = f"sqlite:///{root}/mlflow.db"

    def compile(self, *flags: str) -> dict:
        return compile_main.main(["--train", str(self.train), "--dev", str(self.dev), "--out", str(self.root / "compiled"),
                                  "--experiment", "compile-test", *flags])


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    monkeypatch.setattr(compile_lm, "build_lm", lambda spec: scripted_lm(reply))
    return Workdir(tmp_path)


@pytest.fixture(scope="module")
def bootstrapped(tmp_path_factory):
    """One BootstrapFewShot compile on the 3 training questions, shared by the tests that read it."""
    root = tmp_path_factory.mktemp("compile")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{root}/mlflow.db")
        mp.setattr(compile_lm, "build_lm", lambda spec: scripted_lm(reply))
        work = Workdir(root)
        out = work.compile("--optimizer", "bootstrap", "--name", "boot")
        out["work"] = work
        yield out


def train_order(work) -> list[str]:
    """The training questions in the order the compile takes them (eval.data.loaders's seed-0 order)."""
    return [q.question for q in load_questions("hotpotqa", work.train, seed=0)]


def demo_questions(program, name: str) -> list[str]:
    return [d["question"] for d in dict(program.named_predictors())[name].demos]


# ---------------------------------------------------------------- compiling


def test_labeled_few_shot_puts_the_gold_answers_in_the_final_prompt(work):
    out = work.compile("--optimizer", "labeled")
    program = out["program"]
    # LabeledFewShot gives every predictor the training examples; only the final call has a field
    # they fill (answer), so the turn's demos are dropped as the adapter would drop them.
    assert sorted(demo_questions(program, "answer.predict")) == sorted(q for _, q, _ in TRAIN)
    assert dict(program.named_predictors())["turn"].demos == []
    assert {d["answer"] for d in dict(program.named_predictors())["answer.predict"].demos} == {a for *_, a in TRAIN}
    assert out["ledger"].by_role() == {}  # labels cost no call
    run = mlflow.get_run(out["run_id"])
    assert run.data.tags[tracking.KIND_TAG] == "compile"
    assert run.data.params["optimizer"] == "labeled" and run.data.params["max_labeled_demos"] == "16"
    assert Path(out["path"]).name == "labeled.json"


def test_bootstrap_keeps_the_traces_of_questions_that_reach_the_threshold(bootstrapped):
    program = bootstrapped["program"]
    turns = dict(program.named_predictors())["turn"].demos
    finals = dict(program.named_predictors())["answer.predict"].demos
    right = [q for q in train_order(bootstrapped["work"]) if q != TRAIN[1][1]]
    # q2 is answered wrong (F1 0 < 1.0): its trace is no demo; it stays a labeled (question, answer) example.
    assert [d["question"] for d in turns] == right and all(d["augmented"] for d in turns)
    assert [(d["question"], d.get("augmented", False)) for d in finals] == [
        (right[0], True), (right[1], True), (TRAIN[1][1], False)]
    assert finals[0]["answer"] == ANSWERS[right[0]]
    assert finals[0]["citations"] == [{"title": f"{IDS[right[0]]} gold", "sentence": 0}]


def test_the_compile_counts_its_calls_by_role_and_logs_its_scores(bootstrapped):
    # BootstrapFewShot ran the teacher once per training question: a read, a submit, a final call each.
    assert bootstrapped["ledger"].by_role() == {"action": 6, "final": 3}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_TRACKING_URI", bootstrapped["work"].uri)
        tracking.use_tracking_uri()
        m = mlflow.get_run(bootstrapped["run_id"]).data.metrics
    assert (m["compile_calls"], m["compile_calls_action"], m["compile_calls_final"]) == (9, 6, 3)
    assert m["compile_prompt_tokens"] == sum(c.prompt_tokens for c in bootstrapped["ledger"].calls) > 0
    assert m["before_train_score"] == pytest.approx(200 / 3) and m["after_dev_score"] == 50.0
    assert m["before_dev_calls_per_question"] == 3.0 and m["demos_turn"] == 2 and m["demos_answer_predict"] == 3


def test_gepa_rewrites_an_instruction_from_textual_feedback_and_counts_reflection_calls(work):
    out = work.compile("--optimizer", "gepa", "--gepa-max-metric-calls", "30")
    instructions = {n: p.signature.instructions for n, p in out["program"].named_predictors()}
    assert instructions["answer.predict"] == NEW_INSTRUCTION  # it makes q2 and d2 right, so GEPA kept it
    assert instructions["turn"] == EIR().turn.signature.instructions  # proposed too, but it changed nothing
    assert out["before"]["dev"] == 50.0 and out["after"]["dev"] == 100.0
    roles = out["ledger"].by_role()
    assert roles["reflect"] >= 1 and roles["action"] > 0 and roles["final"] > 0
    assert mlflow.get_run(out["run_id"]).data.metrics["compile_calls_reflect"] == roles["reflect"]
    saved = json.loads(Path(out["path"]).read_text())
    assert saved["answer.predict"]["signature"]["instructions"] == NEW_INSTRUCTION


def test_gold_and_both_put_gold_episodes_first(work, monkeypatch):
    import eval.compile.gold_demos as gold_module

    def stub(examples, budget=6, method="eir"):  # the other helper's builder, replaced: this tests the wiring only
        demos = gold_module.GoldDemos()
        for ex in examples:
            demos.questions += 1
            demos.setdefault("turn", []).append(dspy.Example(
                question=ex.question, unread_titles="", requirements="", conclusions="", last_result="",
                requirement_updates=[], conclusion_updates=[], action={"kind": "submit", "title": "", "answer": ex.answer}))
        return demos

    monkeypatch.setattr(gold_module, "gold_demos", stub)
    order = train_order(work)
    gold = work.compile("--optimizer", "none", "--demos", "gold", "--k", "2")["program"]
    assert demo_questions(gold, "turn") == order[:2] and demo_questions(gold, "answer.predict") == []
    both = work.compile("--optimizer", "bootstrap", "--demos", "both", "--gold-episodes", "1")
    bootstrapped = [q for q in order if q != TRAIN[1][1]]  # q2's trace scores 0
    assert demo_questions(both["program"], "turn") == [order[0], *bootstrapped]  # gold first, then bootstrapped
    assert "augmented" not in dict(both["program"].named_predictors())["turn"].demos[0]
    assert Path(both["path"]).name == "bootstrap-gold.json"
    with pytest.raises(SystemExit, match="discard every demo"):
        work.compile("--optimizer", "bootstrap", "--demos", "gold")


def test_a_model_free_compile_with_score_none_starts_no_engine(work, monkeypatch):
    def no_engine(spec):
        raise AssertionError("a compile that calls no model must not start the engine")

    monkeypatch.setattr(compile_lm, "build_lm", no_engine)
    out = work.compile("--optimizer", "labeled", "--score", "none")
    assert out["before"] == {} and out["after"] == {}
    run = mlflow.get_run(out["run_id"])
    assert run.data.params["score"] == "none" and run.data.params["lm"] == "local/qwen2.5-coder-1.5b"
    assert not [k for k in run.data.metrics if k.startswith(("before_", "after_"))]
    assert json.loads(Path(out["path"]).read_text())["metadata"]["eir"]["decoding"] == "schema"
    with pytest.raises(AssertionError, match="must not start"):  # bootstrap calls the model: it needs one
        work.compile("--optimizer", "bootstrap", "--score", "none", "--name", "b2")


def test_score_dev_scores_only_the_dev_questions(work):
    out = work.compile("--optimizer", "labeled", "--score", "dev")
    assert set(out["before"]) == set(out["after"]) == {"dev"}
    metrics = mlflow.get_run(out["run_id"]).data.metrics
    assert "before_dev_score" in metrics and "after_dev_score" in metrics
    assert not [k for k in metrics if "_train_" in k]


# ---------------------------------------------------------------- the metric


def test_the_metric_is_the_projects_answer_f1_and_support_f1(work):
    q = load_questions("hotpotqa", work.train, seed=None)[0]  # gold "Lena Osk", fact ("q1 gold", 0)
    prediction = dspy.Prediction(answer="Lena", citations=[("q1 gold", 0), ("q1 distractor", 0)])
    scores = score_question(q, "Lena", [("q1 gold", 0), ("q1 distractor", 0)])
    assert Metric("f1")(example_of(q), prediction) == pytest.approx(scores["answer_f1"]) == pytest.approx(2 / 3)
    assert Metric("f1+support")(example_of(q), prediction, trace=[]) == pytest.approx((2 / 3 + 2 / 3) / 2)
    feedback = FeedbackMetric("f1")(example_of(q), prediction, None, "answer.predict", None)
    assert feedback.score == pytest.approx(2 / 3)
    assert "'Lena Osk'" in feedback.feedback and "q1 distractor #0" in feedback.feedback
    with pytest.raises(ValueError, match="unknown metric"):
        Metric("em")


# ---------------------------------------------------------------- the file


@pytest.mark.slow  # a second Python process
def test_save_then_load_in_a_fresh_process_gives_identical_prompts(bootstrapped):
    path = bootstrapped["path"]
    q = load_questions("hotpotqa", bootstrapped["work"].dev, seed=None)[0]
    here = messages_of(bootstrapped["program"], q.question, q.paragraphs)
    script = f"""
import json
from eval.files.program_file import load_program
from eval.data.loaders import load_questions
from programs import EIR
from tests.eval.compile.test_compile import messages_of
q = load_questions("hotpotqa", {str(bootstrapped["work"].dev)!r}, seed=None)[0]
program = EIR(budget=6)
load_program(program, {path!r}, "eir", {{"ablation": "none"}})
print(json.dumps(messages_of(program, q.question, q.paragraphs)))
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    there = json.loads(done.stdout.strip().splitlines()[-1])
    assert there == here
    assert TRAIN[0][1] in here[0][1]["content"]  # a bootstrapped demo really is in the prompt


def test_demos_sit_between_the_system_message_and_the_calls_own_inputs(bootstrapped):
    program = bootstrapped["program"]
    q = load_questions("hotpotqa", bootstrapped["work"].dev, seed=None)[0]
    first, second, final_call = messages_of(program, q.question, q.paragraphs)
    demos = dict(program.named_predictors())["turn"].demos
    expected = DecodingAdapter("schema").format_demos(dict(program.named_predictors())["turn"].signature, demos)
    assert [m["role"] for m in first] == ["system"] + ["user", "assistant"] * len(demos) + ["user"]
    assert first[1:-1] == expected and len(expected) == 4
    assert first[:-1] == second[:-1]  # the stable prefix: system + demos, the same on every turn
    assert first[-1] != second[-1] and q.question in first[-1]["content"]
    assert len(final_call) == 2 + 2 * 3  # the final call's own demos, then its inputs


def test_a_program_file_is_refused_for_another_method_and_when_it_is_not_one(bootstrapped, tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    with pytest.raises(Exception, match="compiled for --method eir, not direct"):
        from programs import Direct

        load_program(Direct(), bootstrapped["path"], "direct", {})
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(SystemExit, match="not a program file"):
        run_module.main(["--program", str(tmp_path / "x.json"), "--data", str(bootstrapped["work"].dev)])
    with pytest.raises(SystemExit, match="ablation"):
        run_module.main(["--program", bootstrapped["path"], "--ablation", "repair",
                         "--data", str(bootstrapped["work"].dev)])


# ---------------------------------------------------------------- running it


def test_eval_run_program_runs_it_under_its_own_variant_and_compare_pairs_it(bootstrapped, monkeypatch):
    work = bootstrapped["work"]
    monkeypatch.setenv("MLFLOW_TRACKING_URI", work.uri)
    lm = scripted_lm(reply)
    monkeypatch.setattr(prepare, "build_lm", lambda spec: lm)
    common = ["--data", str(work.dev), "--limit", "2", "--experiment", "compile-test", "--out", str(work.root / "runs")]
    zero = run_module.main(common)
    compiled = run_module.main([*common, "--program", bootstrapped["path"]])
    run = mlflow.get_run(compiled["run_id"])
    assert run.data.tags["variant"] == "eir compiled=boot"
    assert run.data.params["program_sha256"] == bootstrapped["sha256"]
    assert run.data.params["program_file"] == str(Path(bootstrapped["path"]).resolve())
    assert compiled["records"][0]["prompt_tokens"] > zero["records"][0]["prompt_tokens"]  # the demos are sent
    assert mlflow.get_run(zero["run_id"]).data.tags["variant"] == "eir"
    runs, _ = select_runs("compile-test")  # the compile run is in the experiment too, and skipped
    assert sorted(r.variant for r in runs) == ["eir", "eir compiled=boot"]


def test_a_grid_names_a_program_per_method_entry(bootstrapped, tmp_path):
    grid = tmp_path / "g.toml"
    head = 'experiment = "g"\nn = 2\ndatasets = ["hotpotqa"]\nlms = ["openai/gpt-4.1-mini"]\n'
    grid.write_text(head + f'[[methods]]\nmethod = "eir"\n\n[[methods]]\nmethod = "eir"\nprogram = "{bootstrapped["path"]}"\n')
    cells = load_grid(grid).cells
    assert [c.variants for c in cells] == [("eir",), ("eir compiled=boot",)]
    assert json.loads(cells[1].key)["program"] == bootstrapped["path"] == cells[1].flags["program"]
    grid.write_text(head + f'[run]\nprogram = "{bootstrapped["path"]}"\n[[methods]]\nmethod = "eir"\n')
    with pytest.raises(GridError, match="fits one method"):
        load_grid(grid)
    grid.write_text(head + f'[[methods]]\nmethod = "direct"\nprogram = "{bootstrapped["path"]}"\n')
    with pytest.raises(GridError, match="compiled for --method eir"):
        load_grid(grid)


# ---------------------------------------------------------------- what may be trained on


def test_the_holdout_is_refused_unopened_and_train_must_not_be_dev(work, monkeypatch):
    holdout = write_questions(work.root / "hotpot_dev_distractor.rpt_sample300_seed0.jsonl", TRAIN)
    opened = []
    monkeypatch.setattr(splits, "load_questions", lambda *a, **k: opened.append(a) or [])
    for flags in (["--train", str(holdout), "--dev", str(work.dev)], ["--train", str(work.train), "--dev", str(holdout)]):
        with pytest.raises(SystemExit, match="rpt_sample300_seed0.jsonl is the acceptance holdout"):
            compile_main.main(["--optimizer", "labeled", *flags])
    link = work.root / "innocent.jsonl"
    link.symlink_to(holdout)
    with pytest.raises(SystemExit, match="acceptance holdout"):
        compile_main.main(["--optimizer", "labeled", "--train", str(link), "--dev", str(work.dev)])
    with pytest.raises(SystemExit, match="same file"):
        compile_main.main(["--optimizer", "labeled", "--train", str(work.dev), "--dev", str(work.dev)])
    assert opened == []
    monkeypatch.undo()
    mixed = write_questions(work.root / "mixed.jsonl", TRAIN + DEV[:1])
    with pytest.raises(SystemExit, match="holds 1 question"):
        compile_main.main(["--optimizer", "labeled", "--train", str(mixed), "--dev", str(work.dev)])
