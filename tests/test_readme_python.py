"""The "From Python" block (docs/python.md, linked from the README) runs as written, on the scripted
LM and a scripted data file: the objects it names exist, the calls it makes work, and what it prints
holds the values it promises."""

import json
import re
from pathlib import Path

import dspy
import mlflow
import pytest

import eir_dspy.lm as lm_module
import eval.runs.prepare as prepare
from tests.fixtures.scripted_runs import QUESTIONS, corpus_reply, direct_reply, reply, write_data
from tests.scripted import field, scripted_lm, use_lm

FROM_PYTHON = Path(__file__).resolve().parents[1] / "docs" / "python.md"
DATA = "../shared/data/raw/hotpotqa/hotpot_dev_distractor.rpt_sample500_seed1.jsonl"


def from_python_block() -> str:
    section = FROM_PYTHON.read_text().split("# From Python", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_block_names_the_real_data_file_it_is_run_against_here():
    assert f'data = "{DATA}"' in from_python_block()


def test_the_from_python_block_runs_and_its_records_are_scored(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(lm_module, "build_lm", lambda spec: scripted_lm(reply))  # the block's own import
    monkeypatch.setattr(prepare, "build_lm", lambda spec: scripted_lm(reply))  # eval.run's
    data = write_data(tmp_path / "dev.jsonl")
    namespace: dict = {}
    exec(from_python_block().replace(DATA, str(data)), namespace)  # noqa: S102 - the documentation's own code

    q, prediction, record, out = (namespace[k] for k in ("q", "prediction", "record", "out"))
    assert q.question in {question for _, question, _ in QUESTIONS}
    answers = {question: a for _, question, a in QUESTIONS}
    wrong = QUESTIONS[1][1]  # the scripted final call answers this one wrongly
    assert prediction.answer == ("wrong" if q.question == wrong else answers[q.question])
    assert [t["action"]["kind"] for t in prediction.trajectory["turns"]] == ["read", "submit"]
    assert record["prediction"] == prediction.answer
    assert record["answer_f1"] == (0.0 if q.question == wrong else 1.0)
    assert record["calls_by_role"] == {"action": 2, "final": 1}
    assert len(out["records"]) == 3 and out["metrics"]["answer_f1"] == pytest.approx(200 / 3)
    printed = capsys.readouterr().out
    assert out["run_id"] in printed
    # The block's program (built with RunContext.for_lm) gives the record eval.run gives for the same question.
    assert comparable(record) == comparable(next(r for r in out["records"] if r["id"] == q.id))


# What differs between two runs of the same question by design: timings, the run's ids and times.
RUN_ONLY = {"seconds", "latency_s", "run_id", "part_started_at", "finished_at", "started_at", "error_trace"}


def comparable(value):
    """A record as JSON, without RUN_ONLY keys at any depth."""
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items() if k not in RUN_ONLY}
    if isinstance(value, (list, tuple)):
        return [comparable(v) for v in value]
    return json.loads(json.dumps(value)) if not isinstance(value, (str, int, float, bool, type(None))) else value


def requests(lm) -> list[str]:
    """What the scripted LM was sent, each prompt with its response_format, in a fixed order (eval.run's
    questions run in parallel)."""
    return sorted(json.dumps([prompt, fmt], sort_keys=True, default=str)
                  for prompt, fmt in zip(lm.engine.prompts, lm.engine.formats, strict=True))


def ssr_reply(prompt):
    if "Break the proposed" in prompt:
        return {"facts": "f", "justification": "j", "action": "a"}
    if "Check one step" in prompt:
        return {"verdict": "accept", "correction": "", "confidence": 0.9}
    return direct_reply(prompt)


def futile_reply(prompt):
    """EIR in the corpus: a search with no indexed word first (rejected under `reject`, run under the paper's
    rule), then corpus_reply's search, read and submit."""
    def search(query):
        return {"requirement_updates": [], "conclusion_updates": [], "action": {"kind": "search", "query": query}}

    if "[[ ## evidence ## ]]" in prompt:
        return corpus_reply(prompt)
    if "nothing yet" in field(prompt, "last_result"):
        return search("the of and")
    qid = next(qid for qid, question, _ in QUESTIONS if question == field(prompt, "question"))
    if f"{qid} gold" not in field(prompt, "search_results"):
        return search(f"{qid} gold")
    return corpus_reply(prompt)


def prose_reply(prompt):
    """Direct's reply wrapped in prose: refused by its JSON-only rule on every turn."""
    return "Here it is: " + json.dumps(direct_reply(prompt)) + " Done."


# (method, eval.run's flags, the scripted model, the spec's decoding and the futile-search rule as a notebook
# gives them, the options as a notebook gives them): every rule a program is given, each method's nesting.
PATHS = {
    "eir": ("eir", [], reply, None, "run", {}),
    "full_pool": ("full_pool", [], reply, None, "run", {}),
    "direct-strict": ("direct", ["--decoding", "strict"], direct_reply, "strict", "run", {}),
    "direct-refused": ("direct", ["--decoding", "free"], prose_reply, "free", "run", {}),
    "reflexion": ("reflexion", ["--trials", "2"], direct_reply, None, "run", {"trials": 2}),
    "ssr": ("ssr", ["--votes", "2", "--decoding", "strict"], ssr_reply, "strict", "run", {"votes": 2}),
    "eir-corpus-reject": ("eir", ["--setting", "corpus", "--futile-searches", "reject"], futile_reply, None, "reject", {}),
    "eir-corpus-run": ("eir", ["--setting", "corpus"], futile_reply, None, "run", {}),
}


@pytest.mark.parametrize("path", list(PATHS))
def test_a_notebook_builds_the_program_eval_run_builds_and_gets_the_same_records(path, workdir, monkeypatch):
    """eval.run on a data file, and the same questions by the From Python recipe's steps (an LMSpec, its LM,
    RunContext.for_lm, the program, run_question): the same answers, trajectories, calls and rejections."""
    from eir_dspy.corpus_index import CorpusIndex
    from eir_dspy.lm import LMSpec
    from eir_dspy.lm.local_models import DEFAULT_MODEL
    from eval.data.loaders import load_questions
    from eval.run import main as run_eval
    from eval.runs.execute import run_question
    from programs import RunContext
    from programs.registry import METHODS

    method, flags, model, decoding, futile, options = PATHS[path]
    data = write_data(workdir / "data.jsonl")
    served = use_lm(monkeypatch, model)
    out = run_eval(["--method", method, "--data", str(data), "--limit", "3", "--seed", "0", "--experiment", "paths",
                    *flags])
    ran = {r["id"]: r for r in out["records"]}

    spec = LMSpec(DEFAULT_MODEL, decoding=decoding)  # what eval.run's default --lm and these flags give
    lm = scripted_lm(model)
    dspy.configure(lm=lm, adapter=None)  # the recipe configures no adapter
    context = RunContext.for_lm(lm, spec, futile_searches=futile)
    program = METHODS[method].build(6, options, context)
    corpus = CorpusIndex(mlflow.get_run(out["run_id"]).data.params["index"]) if "--setting" in flags else None
    questions = load_questions("hotpotqa", str(data), limit=3, seed=0)
    assert {q.id for q in questions} == set(ran)
    for q in questions:
        assert comparable(run_question(program, lm, q, corpus)) == comparable(ran[q.id])
    assert requests(lm) == requests(served)  # every prompt, with its response_format (the decoding's)
    rejected = [r["rejections_by_cause"] for r in ran.values()]
    expected = {"eir-corpus-reject": {"empty_search": 1}, "direct-refused": {"not_json_only": 6}}.get(path, {})
    assert rejected == [expected] * 3  # the rule given reached the program on both paths
