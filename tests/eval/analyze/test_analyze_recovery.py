"""The recovery experiments (F.2-F.4) on a scripted LM: what each call sees, what it converts, what
it costs, and that a stopped analysis resumes without repeating a call."""

from __future__ import annotations

import json

import pytest

from eval.analyze import added_support, extra_retrieval, model_selected, recovery
from eval.analyze.report import Context, Report
from eval.runs.config import LMConfig, RunConfig
from eval.runs.logged_runs import LoggedRun, SelectionError
from programs.run_context import RunContext
from tests.scripted import scripted_lm

ANSWER = "Zanzibar"
EARLIER = "Mombasa guess"
LIST_ENTRY = "REQ-MARKER find the island"
POOL = {
    "Alpha Port": ["Alpha Port is a harbour.", "It ships cloves."],
    "Beta Isle": [f"Beta Isle is part of {ANSWER}.", "It is an island."],
    "Gamma": ["Gamma is unrelated."],
    "Delta": ["Delta is unrelated too."],
}


def write_data(path, ids):
    lines = []
    for qid in ids:
        lines.append(json.dumps({
            "id": qid, "question": f"Which archipelago holds the island of {qid}?", "answer": ANSWER, "type": "bridge",
            "level": "hard", "supporting_facts": {"title": ["Alpha Port", "Beta Isle"], "sent_id": [0, 0]},
            "context": {"title": list(POOL), "sentences": list(POOL.values())}}))
    path.write_text("\n".join(lines) + "\n")


def record(qid, read=("Alpha Port",), em=0.0, prediction=EARLIER):
    evidence = [[t, i, s] for t in read for i, s in enumerate(POOL[t])]
    return {"id": qid, "question": f"Which archipelago holds the island of {qid}?", "gold": ANSWER, "aliases": [],
            "prediction": prediction, "citations": [], "answer_f1": em, "em": em, "support_f1": 0.0, "calls": 8,
            "evidence_titles": list(read), "gold_titles": ["Alpha Port", "Beta Isle"], "evidence": evidence,
            "trajectory": {"method": "eir", "requirements": [{"id": "r1", "text": LIST_ENTRY}], "submitted": EARLIER},
            "error": None}


def logged(tmp_path, records, label="eir"):
    data = tmp_path / "hotpot.jsonl"
    write_data(data, [r["id"] for r in records])
    return LoggedRun(run_id=f"run-{label}", experiment_id="0", name=f"{label} / hotpotqa / scripted", variant=label,
                     dataset="hotpotqa", lm="local/scripted", budget=6, start_time=0, metrics={}, records=tuple(records),
                     label=label, config=RunConfig(data_file=str(data)))


class Model:
    """A scripted model: selection calls pick `pick`; final calls answer right only when Beta Isle is in
    the evidence. Counts calls, keeps prompts, and can fail its n-th call."""

    def __init__(self, pick=("Beta Isle",), fail_at=None):
        self.pick, self.fail_at, self.prompts = list(pick), fail_at, []

    def __call__(self, prompt):
        self.prompts.append(prompt)
        if self.fail_at == len(self.prompts):
            raise RuntimeError("provider down")
        if "unread_titles" in prompt:
            return {"titles": self.pick}
        right = "## Beta Isle" in prompt
        return {"answer": ANSWER if right else "Pemba", "citations": [{"title": "Beta Isle", "sentence": 0}] if right else []}


@pytest.fixture
def model(monkeypatch):
    holder = {"model": Model()}
    monkeypatch.setattr(recovery, "run_lm", lambda run, threads=1: (scripted_lm(holder["model"]), RunContext("free")))
    return holder


def test_added_support_converts_with_the_missing_paragraph_and_control_does_not(tmp_path, model):
    run = logged(tmp_path, [record("q1"), record("q2"), record("q3", read=("Alpha Port", "Beta Isle"))])
    report = added_support.analyze([run], Context(out=tmp_path / "out", resamples=200), tmp_path)
    m = report.metrics
    key = "eir/hotpotqa/local/scripted"
    # q3 read both supporting paragraphs, so only q1 and q2 are rerun: 2 control + 2 added calls.
    assert len(model["model"].prompts) == 4
    assert m[f"conversions/added-support/added/{key}"] == 2
    assert m[f"conversions/added-support/control/{key}"] == 0
    assert m[f"mcnemar_c/added-support/added/{key}"] == 2 and m[f"mcnemar_b/added-support/added/{key}"] == 0
    assert m[f"f1_diff/added-support/added/{key}"] == pytest.approx(100.0)
    table = report.tables["table16_added_support.md"]
    assert "2 (100.0)" in table and "0 (0.0)" in table and "final 2" in table
    for prompt in model["model"].prompts:  # no earlier answer, no list entry; the reference only via evidence
        assert EARLIER not in prompt and LIST_ENTRY not in prompt
    assert all(ANSWER not in p for p in model["model"].prompts if "## Beta Isle" not in p)


def test_model_selected_reads_the_pick_and_its_prompt_leaks_nothing(tmp_path, model):
    run = logged(tmp_path, [record("q1"), record("q2")])
    report = model_selected.analyze([run], Context(out=tmp_path / "out", resamples=200), tmp_path)
    key = "model-selected/eir/hotpotqa/local/scripted"
    assert report.metrics[f"successful_reads/{key}"] == 2 and report.metrics[f"matches_after_read/{key}"] == 2
    assert report.metrics[f"missing_gold_read/{key}"] == 2
    selects = [p for p in model["model"].prompts if "unread_titles" in p]
    assert len(selects) == 2
    for prompt in selects:
        assert ANSWER not in prompt and EARLIER not in prompt and LIST_ENTRY not in prompt
        assert "Gamma" in prompt and "It ships cloves." in prompt  # unread titles and the text already read
    # 2 control + 2 select + 2 final
    assert len(model["model"].prompts) == 6


def test_extra_retrieval_keeps_the_answer_when_nothing_is_read(tmp_path, model):
    model["model"] = Model(pick=[])  # the model asks for nothing
    right = record("q2", read=("Alpha Port", "Beta Isle"), em=1.0, prediction=ANSWER)
    run = logged(tmp_path, [record("q1"), right])
    report = extra_retrieval.analyze([run], Context(out=tmp_path / "out", resamples=200), tmp_path)
    key = "extra-retrieval/eir/hotpotqa/local/scripted"
    assert len(model["model"].prompts) == 2  # one selection each, no final call
    assert report.metrics[f"requested_share/{key}"] == 0 and report.metrics[f"f1_diff/{key}"] == 0
    assert report.metrics[f"em_gained/{key}"] == 0 and report.metrics[f"em_lost/{key}"] == 0
    assert report.metrics[f"calls_added/{key}"] == 2
    assert report.params["no_read"] == model_selected.KEEP_ANSWER  # F.4 keeps the answer; F.3 answers again


def test_extra_retrieval_says_the_papers_added_calls_are_not_reproducible(tmp_path, model):
    run = logged(tmp_path, [record("q1")])
    report = extra_retrieval.analyze([run], Context(out=tmp_path / "out", resamples=200), tmp_path)
    table = report.tables["table17_extra_retrieval.md"]
    assert "10,841 added calls (1.81/q over 6,000 questions) are not reproducible" in table
    assert "at most 6,000 + 2,915 = 8,915 (1.49/q)" in table and "the paper's 1.81)" not in table
    assert report.params["paper_calls_added"] == extra_retrieval.PAPER_CALLS_NOTE


def test_extra_retrieval_rereads_and_counts_gains(tmp_path, model):
    model["model"] = Model(pick=["beta isle", "No Such Page", "Gamma"])  # case ignored; unmatched not read; 2 at most
    run = logged(tmp_path, [record("q1")])
    report = extra_retrieval.analyze([run], Context(out=tmp_path / "out", resamples=200), tmp_path)
    key = "extra-retrieval/eir/hotpotqa/local/scripted"
    assert report.metrics[f"em_gained/{key}"] == 1 and report.metrics[f"read_share/{key}"] == 1
    assert report.metrics[f"gold_recall_after/{key}"] == 100.0 and report.metrics[f"calls_added/{key}"] == 2
    log = (tmp_path / "out" / "call_logs" / run.run_id / "extra-retrieval.jsonl").read_text()
    assert json.loads(log)["read"] == ["Beta Isle", "Gamma"]


def test_a_stopped_analysis_resumes_without_repeating_a_call(tmp_path, model):
    run = logged(tmp_path, [record("q1"), record("q2")])
    context = Context(out=tmp_path / "out", resamples=200)
    model["model"] = Model(fail_at=4)  # control q1, control q2, added q1, then added q2 fails
    with pytest.raises(SelectionError, match="1 question"):
        added_support.analyze([run], context, tmp_path)
    model["model"] = Model()
    report = added_support.analyze([run], context, tmp_path)
    assert len(model["model"].prompts) == 1  # only added q2 was left
    assert report.metrics["conversions/added-support/added/eir/hotpotqa/local/scripted"] == 2
    logs = tmp_path / "out" / "call_logs" / run.run_id
    assert [len((logs / f).read_text().splitlines()) for f in ("control.jsonl", "added-support.jsonl")] == [2, 2]


def test_only_eir_pool_runs_are_re_answered(tmp_path, model):
    direct = logged(tmp_path, [record("q1")], label="direct")
    with pytest.raises(SelectionError, match="no EIR run"):
        added_support.analyze([direct], Context(out=tmp_path / "out"), tmp_path)


def test_the_rerun_lm_is_the_runs_own_without_a_response_cache():
    from eval.analyze.sources import run_lm

    config = RunConfig(lm=LMConfig("openai/gpt-4.1-mini", temperature=0.3, max_tokens=777, decoding="schema"))
    run = LoggedRun(run_id="r", experiment_id="0", name="eir", variant="eir", dataset="hotpotqa",
                    lm="openai/gpt-4.1-mini", budget=6, start_time=0, metrics={}, records=(), config=config)
    lm, run_context = run_lm(run)
    assert lm.model == "openai/gpt-4.1-mini" and lm.cache is False  # a fresh model call, never a replay
    assert lm.kwargs["temperature"] == 0.3 and lm.kwargs["max_tokens"] == 777
    assert run_context == RunContext("schema")  # what the analysis's programs are built with


def test_nothing_left_unread_makes_no_selection_call(tmp_path, model):
    run = logged(tmp_path, [record("q1", read=tuple(POOL))])
    report = extra_retrieval.analyze([run], Context(out=tmp_path / "out", resamples=200), tmp_path)
    assert model["model"].prompts == []
    assert report.metrics["calls_added/extra-retrieval/eir/hotpotqa/local/scripted"] == 0


# --- F.3's edge cases, pooled rows (F.2-F.4) and Table 16 as one table -------------------------------


def logged_as(tmp_path, records, label):
    """A second EIR run with its own data file (logged() writes one file for one run)."""
    data = tmp_path / f"{label}.jsonl"
    write_data(data, [r["id"] for r in records])
    return LoggedRun(run_id=f"run-{label}", experiment_id="0", name=f"{label} / hotpotqa / scripted", variant=label,
                     dataset="hotpotqa", lm="local/scripted", budget=6, start_time=0, metrics={}, records=tuple(records),
                     label=label, config=RunConfig(data_file=str(data)))


class Unparseable(Model):
    """Selection calls answer in prose, not the JSON object asked for."""

    def __call__(self, prompt):
        if "unread_titles" in prompt:
            self.prompts.append(prompt)
            return "I would read Beta Isle next."
        return super().__call__(prompt)


def rows_of(text):
    """The first markdown table of `text` as a list of {header: cell}."""
    lines = []
    for line in text.splitlines():
        if line.startswith("| "):
            lines.append(line)
        elif lines and not line.startswith("|"):  # past the first table (its |---| line aside)
            break
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    return [dict(zip(head, (c.strip() for c in line.strip("|").split("|")))) for line in lines[1:]]


@pytest.mark.parametrize("pick", [["Alpha Port"], ["alpha port", "No Such Page"]])
def test_model_selected_reading_nothing_still_runs_the_final_call_on_the_unchanged_evidence(tmp_path, model, pick):
    model["model"] = Model(pick=pick)  # Alpha Port was read already; the other title is in no pool
    run = logged(tmp_path, [record("q1")])
    report = model_selected.analyze([run], Context(out=tmp_path / "out", resamples=200), tmp_path)
    key = "model-selected/eir/hotpotqa/local/scripted"
    assert report.metrics[f"successful_reads/{key}"] == 0 and report.metrics[f"final_without_read/{key}"] == 1
    assert report.metrics["conversions/model-selected/model-selected/eir/hotpotqa/local/scripted"] == 0
    log = json.loads((tmp_path / "out" / "call_logs" / run.run_id / "model-selected.jsonl").read_text())
    # F.3: the final call ran over the evidence as it was (no Beta Isle), and its answer is the one scored.
    assert (log["read"], log["answered"], log["answer"]) == ([], True, "Pemba")
    assert [c["role"] for c in log["lm_calls"]] == ["select", "final"]
    final = model["model"].prompts[-1]
    assert "It ships cloves." in final and "## Beta Isle" not in final
    assert report.params["no_read"] == model_selected.NO_READ == "final call on the unchanged evidence"
    reads = rows_of(report.tables["table16_model_selected.md"].split("## What was read")[1])
    assert (reads[0]["successful extra read"], reads[0]["final call on unchanged evidence"]) == ("0", "1")
    calls = rows_of(report.tables["table16_model_selected.md"].split("## Calls the analysis added")[1])
    assert [(c["step"], c["by role"]) for c in calls] == [("control", "final 1"),
                                                          ("model-selected", "final 1, select 1")]


def test_model_selected_unparseable_selection_reads_nothing_and_answers_again(tmp_path, model):
    model["model"] = Unparseable()
    run = logged(tmp_path, [record("q1")])
    report = model_selected.analyze([run], Context(out=tmp_path / "out", resamples=200), tmp_path)
    key = "model-selected/eir/hotpotqa/local/scripted"
    assert report.metrics[f"unparseable_selections/{key}"] == 1 and report.metrics[f"successful_reads/{key}"] == 0
    assert report.metrics[f"final_without_read/{key}"] == 1
    log = json.loads((tmp_path / "out" / "call_logs" / run.run_id / "model-selected.jsonl").read_text())
    assert (log["select_parsed"], log["answered"], log["answer"]) == (False, True, "Pemba")


class Lucky(Model):
    """Final calls answer right whatever the evidence (a fresh call can get it right without new text)."""

    def __call__(self, prompt):
        out = super().__call__(prompt)
        return out if "unread_titles" in prompt else {"answer": ANSWER, "citations": []}


def test_model_selected_counts_exact_matches_with_and_without_a_successful_read(tmp_path, model):
    # q1 picks only a paragraph already read: no read, but the rerun final call is exact (the paper's 1 of 174).
    model["model"] = Lucky(pick=["Alpha Port"])
    run = logged(tmp_path, [record("q1")])
    report = model_selected.analyze([run], Context(out=tmp_path / "out", resamples=200), tmp_path)
    key = "model-selected/eir/hotpotqa/local/scripted"
    m = report.metrics
    assert (m[f"matches_after_read/{key}"], m[f"matches_without_read/{key}"]) == (0, 1)
    assert m["conversions/model-selected/model-selected/eir/hotpotqa/local/scripted"] == 1
    reads = rows_of(report.tables["table16_model_selected.md"].split("## What was read")[1])
    assert (reads[0]["exact matches after a successful read"], reads[0]["exact matches without a successful read"]) \
        == ("0", "1")


def test_model_selected_reruns_call_log_entries_of_the_earlier_no_read_rule(tmp_path, model):
    run = logged(tmp_path, [record("q1"), record("q2")])
    logs = tmp_path / "out" / "call_logs" / run.run_id
    logs.mkdir(parents=True)
    calls = [{"role": "select", "prompt_tokens": 1, "completion_tokens": 1, "cost_usd": None}]
    earlier = [  # q1: read nothing and kept the recorded answer (the earlier rule); q2: read and answered
        {"id": "q1", "step": "model-selected", "selected": ["Alpha Port"], "select_parsed": True, "read": [],
         "answered": False, "answer": EARLIER, "citations": [], "parsed": None, "lm_calls": calls, "error": None},
        {"id": "q2", "step": "model-selected", "selected": ["Beta Isle"], "select_parsed": True, "read": ["Beta Isle"],
         "answered": True, "answer": ANSWER, "citations": [], "parsed": True,
         "lm_calls": calls + [{**calls[0], "role": "final"}], "error": None}]
    (logs / "model-selected.jsonl").write_text("".join(json.dumps(e) + "\n" for e in earlier))
    model["model"] = Model(pick=["Alpha Port"])
    report = model_selected.analyze([run], Context(out=tmp_path / "out", resamples=200), tmp_path)
    # 2 control calls, then q1 alone again: a select and the final call. q2's entry is kept as it is.
    assert len(model["model"].prompts) == 4 and sum("unread_titles" in p for p in model["model"].prompts) == 1
    key = "model-selected/eir/hotpotqa/local/scripted"
    assert report.metrics[f"final_without_read/{key}"] == 1 and report.metrics[f"successful_reads/{key}"] == 1


def test_model_selected_final_call_sees_old_and_new_evidence_once(tmp_path, model):
    model["model"] = Model(pick=["Alpha Port", "Beta Isle"])  # one already read, one new
    run = logged(tmp_path, [record("q1")])
    model_selected.analyze([run], Context(out=tmp_path / "out", resamples=200), tmp_path)
    log = json.loads((tmp_path / "out" / "call_logs" / run.run_id / "model-selected.jsonl").read_text())
    assert log["read"] == ["Beta Isle"] and log["answer"] == ANSWER
    assert [c["role"] for c in log["lm_calls"]] == ["select", "final"]  # one round: one select, one final call
    final = [p for p in model["model"].prompts if "unread_titles" not in p][-1]
    # Old evidence (Alpha Port, read in the episode) and the new paragraph, each once, old first.
    assert final.count("It ships cloves.") == 1 and final.count(f"Beta Isle is part of {ANSWER}.") == 1
    assert final.index("It ships cloves.") < final.index(f"Beta Isle is part of {ANSWER}.")


def test_added_support_pooled_row_counts_every_runs_errors(tmp_path, model):
    runs = [logged_as(tmp_path, [record("q1"), record("q2")], "eir"), logged_as(tmp_path, [record("q3")], "eir2")]
    report = added_support.analyze(runs, Context(out=tmp_path / "out", resamples=200), tmp_path)
    rows = {(r["method"], r["arm"]): r for r in rows_of(report.tables["table16_added_support.md"])}
    assert list(rows) == [("eir", "control"), ("eir", "added"), ("eir2", "control"), ("eir2", "added"),
                          ("all runs", "control"), ("all runs", "added")]
    pooled = rows[("all runs", "added")]
    assert (pooled["n errors"], pooled["EM conversions (%)"]) == ("3", "3 (100.0)")
    key = "added-support/added/all runs/hotpotqa/local/scripted"
    assert report.metrics[f"conversions/{key}"] == 3 and report.metrics[f"mcnemar_c/{key}"] == 3
    assert report.metrics[f"mcnemar_p/{key}"] == pytest.approx(2 * 0.5 ** 3)
    assert report.metrics["conversions/added-support/control/all runs/hotpotqa/local/scripted"] == 0


def test_extra_retrieval_is_one_round_and_reports_calls_added_per_question_pooled(tmp_path, model):
    # q1 reads Beta Isle (select + final); q2 already read it, so the pick reads nothing (select only); q3 as q1.
    both = record("q2", read=("Alpha Port", "Beta Isle"), em=1.0, prediction=ANSWER)
    runs = [logged_as(tmp_path, [record("q1"), both], "eir"), logged_as(tmp_path, [record("q3")], "eir2")]
    report = extra_retrieval.analyze(runs, Context(out=tmp_path / "out", resamples=200), tmp_path)
    assert report.params["select_rounds"] == 1
    m = report.metrics
    assert m["calls_added_per_question/extra-retrieval/eir/hotpotqa/local/scripted"] == pytest.approx(1.5)
    assert m["calls_added_per_question/extra-retrieval/eir2/hotpotqa/local/scripted"] == pytest.approx(2.0)
    pooled = "extra-retrieval/all runs/hotpotqa/local/scripted"
    assert m[f"calls_added_per_question/{pooled}"] == pytest.approx(5 / 3)
    assert m[f"read_share/{pooled}"] == pytest.approx(2 / 3) and m[f"em_gained/{pooled}"] == 2
    for run in runs:  # never a second select or final call on a question
        for line in (tmp_path / "out" / "call_logs" / run.run_id / "extra-retrieval.jsonl").read_text().splitlines():
            roles = [c["role"] for c in json.loads(line)["lm_calls"]]
            assert roles.count("select") == 1 and roles.count("final") <= 1
    answers = rows_of(report.tables["table17_extra_retrieval.md"])
    assert [r["method"] for r in answers] == ["eir", "eir2", "all runs"] and answers[-1]["n"] == "3"


def test_table16_is_one_table_of_both_experiments_from_their_call_logs(tmp_path, model):
    from eval.analyze import table16

    run = logged(tmp_path, [record("q1"), record("q2")])
    context = Context(out=tmp_path / "out", resamples=200)
    added_support.analyze([run], context, tmp_path)
    model_selected.analyze([run], context, tmp_path)
    made = len(model["model"].prompts)  # 2 control + 2 added + 2 select + 2 final
    assert made == 8
    report = table16.analyze([run], context, tmp_path)
    assert len(model["model"].prompts) == made  # every call came from the call logs
    rows = rows_of(report.tables["table16.md"])
    assert [(r["method"], r["arm"]) for r in rows] == [("eir", "control"), ("eir", "added"), ("eir", "model-selected")]
    assert [r["EM conversions (%)"] for r in rows] == ["0 (0.0)", "2 (100.0)", "2 (100.0)"]
    assert "## What F.3 read" in report.tables["table16.md"]
    assert report.params["arms"] == "control, added, model-selected"
    assert report.metrics["successful_reads/model-selected/eir/hotpotqa/local/scripted"] == 2


def test_table16_merge_keeps_one_control_row_per_run_in_arm_order():
    from eval.analyze.table16 import merge

    def row(method, arm):
        return [method, "hotpotqa", "m", arm, "x"]

    added = [row("eir", "control"), row("eir", "added"), row("all runs", "control"), row("all runs", "added")]
    chosen = [row("eir", "model-selected"), row("eir", "control"), row("all runs", "control"),
              row("all runs", "model-selected")]
    assert [(r[0], r[3]) for r in merge(added + chosen)] == [
        ("eir", "control"), ("eir", "added"), ("eir", "model-selected"),
        ("all runs", "control"), ("all runs", "added"), ("all runs", "model-selected")]


def test_table16_mcnemar_is_each_arm_after_against_before_not_against_the_control(tmp_path):
    # A hand-built table of 6 EM errors: the control converts q0 and q1, the added arm q0-q3. Against the
    # control the added arm would be b / c = 0 / 2 (p = 0.5); after against before it is 0 / 4: 2 * 0.5^4.
    run = logged(tmp_path, [record(f"q{i}") for i in range(6)])
    arms = {"control": [1.0, 1.0, 0.0, 0.0, 0.0, 0.0], "added": [1.0, 1.0, 1.0, 1.0, 0.0, 0.0]}
    scores = {arm: [{"em": x, "answer_f1": x} for x in em] for arm, em in arms.items()}
    report = Report()
    rows = recovery.conversion_rows(recovery.Rerun(run, list(run.question_records), {}, {}, scores),
                                    Context(out=tmp_path, resamples=100), report, "added-support")
    key = "added-support/{}/eir/hotpotqa/local/scripted"
    m = report.metrics
    assert (m[f"mcnemar_b/{key.format('added')}"], m[f"mcnemar_c/{key.format('added')}"]) == (0, 4)
    assert m[f"mcnemar_p/{key.format('added')}"] == pytest.approx(2 * 0.5 ** 4)
    assert m[f"mcnemar_p/{key.format('control')}"] == pytest.approx(2 * 0.5 ** 2)  # the control is tested the same way
    assert [r[7:9] for r in rows] == [["0 / 2", "0.5000"], ["0 / 4", "0.1250"]]


def test_the_bootstrap_seed_defaults_to_the_papers_and_is_recorded(tmp_path, model):
    from eval.analyze.__main__ import parse_args

    assert parse_args(["added-support"]).seed == 20260806 and parse_args(["added-support", "--seed", "3"]).seed == 3
    assert Context(out=tmp_path).params()["seed"] == 20260806  # logged as the analysis run's `seed` param
    run = logged(tmp_path, [record("q1")])
    report = added_support.analyze([run], Context(out=tmp_path / "out", resamples=200), tmp_path)
    assert "200 resamples, seed 20260806" in report.tables["table16_added_support.md"]
