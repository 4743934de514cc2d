"""The recovery experiments (F.2-F.4) on a scripted LM: what each call sees, what it converts, what
it costs, and that a stopped analysis resumes without repeating a call."""

from __future__ import annotations

import json

import pytest

from eir_dspy.lm import DecodingAdapter
from eval.analyze import added_support, extra_retrieval, model_selected, recovery
from eval.analyze.report import Context
from eval.logged_runs import LoggedRun, SelectionError
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
            "trajectory": {"requirements": [{"id": "r1", "text": LIST_ENTRY}], "submitted": EARLIER}, "error": None}


def logged(tmp_path, records, label="eir"):
    data = tmp_path / "hotpot.jsonl"
    write_data(data, [r["id"] for r in records])
    return LoggedRun(run_id=f"run-{label}", experiment_id="0", name=f"{label} / hotpotqa / scripted", method=label,
                     dataset="hotpotqa", lm="local/scripted", budget=6, start_time=0, metrics={}, records=tuple(records),
                     label=label, config={"data_file": str(data)})


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
    monkeypatch.setattr(recovery, "run_lm", lambda run, threads=1: (scripted_lm(holder["model"]), DecodingAdapter("free")))
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
    old = record("q1")
    del old["evidence"]
    with pytest.raises(SelectionError, match="evidence"):
        added_support.analyze([logged(tmp_path, [old])], Context(out=tmp_path / "out"), tmp_path)


def test_the_rerun_lm_is_the_runs_own_without_a_response_cache():
    from eval.analyze.sources import run_lm

    config = {"lm_model": "openai/gpt-4.1-mini", "lm_path": None, "api_base": None, "temperature": 0.3,
              "max_tokens": 777, "decoding": "schema"}
    run = LoggedRun(run_id="r", experiment_id="0", name="eir", method="eir", dataset="hotpotqa",
                    lm="openai/gpt-4.1-mini", budget=6, start_time=0, metrics={}, records=(), config=config)
    lm, adapter = run_lm(run)
    assert lm.model == "openai/gpt-4.1-mini" and lm.cache is False  # a fresh model call, never a replay
    assert lm.kwargs["temperature"] == 0.3 and lm.kwargs["max_tokens"] == 777
    assert adapter.decoding == "schema"


def test_nothing_left_unread_makes_no_selection_call(tmp_path, model):
    run = logged(tmp_path, [record("q1", read=tuple(POOL))])
    report = extra_retrieval.analyze([run], Context(out=tmp_path / "out", resamples=200), tmp_path)
    assert model["model"].prompts == []
    assert report.metrics["calls_added/extra-retrieval/eir/hotpotqa/local/scripted"] == 0
