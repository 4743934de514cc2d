"""benchmarks/strict_converter.py offline: both arms on one stand-in llama-server (tests/fake_llama_server.py,
started by EmbeddedServer as llama-server is), each arm's requests as it should send them, every call
sent to the server (none replayed from DSPy's cache), the summary equal to eval.run's metrics of the
saved records, and a killed run resumed pair by pair."""

import json
from pathlib import Path

import pytest

from benchmarks import strict_converter
from eir_dspy.lm.embedded_server import stop_shared_server
from eir_dspy.lm.engine_lock import EngineLock
from eval.data.loaders import load_questions
from eval.scoring.run_metrics import summarize
from tests.fixtures.served_runs import write_questions

ROOT = Path(__file__).resolve().parents[2]
CALLS = 3  # a fake EIR question: one read, one submit, the final answer


@pytest.fixture
def bench(tmp_path, monkeypatch):
    binary = tmp_path / "bin" / "llama-server"
    binary.parent.mkdir()
    binary.symlink_to(ROOT / "tests" / "fake_llama_server.py")
    binary.with_name("build.json").write_text(json.dumps({"llama_cpp": "4242", "cpu": "avx2"}))
    monkeypatch.setenv("EIR_LLAMA_SERVER", str(binary))
    monkeypatch.setenv("EIR_CACHE_DIR", str(tmp_path / "cache"))  # its own engine lock
    monkeypatch.setenv("FAKE_LLAMA_REQUESTS", str(tmp_path / "requests.jsonl"))
    monkeypatch.setenv("FAKE_LLAMA_INDENT_SCHEMA", "1")  # the server arm's replies laid out over lines
    monkeypatch.setattr(EngineLock, "_fd", None)
    monkeypatch.setattr(EngineLock, "_holders", 0)
    stop_shared_server()
    write_questions(tmp_path / "data.jsonl", n=3)
    (tmp_path / "tiny.gguf").write_bytes(b"GGUF")
    yield tmp_path
    stop_shared_server()
    assert EngineLock._fd is None


def args(tmp_path: Path, n: int) -> list[str]:
    return ["--n", str(n), "--data", str(tmp_path / "data.jsonl"), "--lm-path", str(tmp_path / "tiny.gguf"),
            "--out", str(tmp_path / "out")]


def requests(tmp_path: Path) -> list[dict]:
    path = tmp_path / "requests.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def rows(tmp_path: Path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "out" / "records.jsonl").read_text().splitlines()]


@pytest.mark.slow  # a server process on loopback
def test_both_arms_reach_the_server_with_their_own_grammar_and_the_summary_is_the_records(bench):
    summary = strict_converter.main(args(bench, 2))
    sent = requests(bench)
    saved = rows(bench)
    first, second = [q.id for q in load_questions("hotpotqa", bench / "data.jsonl", limit=2, seed=0)]
    # Interleaved, alternating which arm goes first.
    assert [(r["id"], r["arm"]) for r in saved] == [(first, "one_line"), (first, "server"),
                                                    (second, "server"), (second, "one_line")]
    assert len(sent) == 4 * CALLS  # every call of both arms reached the server: nothing replayed
    arms = [r["arm"] for r in saved for _ in range(CALLS)]
    for arm, request in zip(arms, sent, strict=True):
        if arm == "one_line":
            assert "response_format" not in request and request["grammar"].startswith("root ::= ")
        else:
            assert "grammar" not in request and request["response_format"]["type"] == "json_schema"
    # The server arm gets the per-call strict schema itself: the unread titles as an enum, a submit-only
    # turn once no read is left (the fake reads once, so its 2nd turn still may read), the final answer's.
    schemas = [r["response_format"]["json_schema"]["schema"] for r in sent[CALLS:2 * CALLS]]
    assert schemas[0]["properties"]["action"]["anyOf"][0]["properties"]["title"] == {"enum": ["Fort 0", "Other 0"]}
    assert schemas[1]["properties"]["action"]["anyOf"][0]["properties"]["title"] == {"enum": ["Other 0"]}
    assert list(schemas[2]["properties"]) == ["answer", "citations"]
    assert all(c["cache_hit"] is False for r in saved for c in r["record"]["lm_calls"])
    assert [c["sent"] for r in saved for c in r["calls"]] == [
        "grammar" if a == "one_line" else "response_format" for a in arms]

    # The summary is eval.run's metrics of each arm's saved records.
    assert summary["n"] == 2 and summary["served_by"] == ["binary b4242 avx2"]
    for arm in strict_converter.ARMS:
        records = [r["record"] for r in saved if r["arm"] == arm]
        metrics = summarize(records)
        got = summary["arms"][arm]
        assert got["answer_f1"] == metrics["answer_f1"] == 100.0 and got["em"] == 100.0
        assert got["support_f1"] == metrics["support_f1"]
        assert got["reads_per_question"] == 1.0 and got["turns_per_question"] == 2.0
        assert got["rejected_turn_share"] == 0.0 and got["no_submission_share"] == 0.0
        assert got["requirements_per_question"] == got["conclusions_per_question"] == 0.0
        assert got["completion_tokens_per_question"] == sum(r["completion_tokens"] for r in records) / 2
        assert got["seconds_per_question"] == sum(r["seconds"] for r in records) / 2
    # The fake lays the server arm's JSON out over lines: more words counted, every text differs,
    # no parsed output does, so no answer does.
    one_line, server = summary["arms"]["one_line"], summary["arms"]["server"]
    assert server["completion_tokens_per_question"] > one_line["completion_tokens_per_question"]
    assert summary["paired"] == {"answers_differ": [], "calls": 2 * CALLS, "calls_differ": 2 * CALLS,
                                 "calls_differ_in_content": 0,
                                 "first_differing_call": {first: {"call": 1, "role": "action"},
                                                          second: {"call": 1, "role": "action"}}}
    assert json.loads((bench / "out" / "summary.json").read_text()) == summary

    # Again: nothing is run, the same summary. With --n 3, only the new question runs.
    assert strict_converter.main(args(bench, 2)) == summary and len(requests(bench)) == 4 * CALLS
    assert strict_converter.main(args(bench, 3))["n"] == 3 and len(requests(bench)) == 6 * CALLS
    with pytest.raises(SystemExit, match="another condition"):
        strict_converter.main([*args(bench, 3), "--budget", "4"])


@pytest.mark.slow  # a server process on loopback
def test_a_run_killed_mid_pair_keeps_what_finished_and_resumes_the_rest(bench, monkeypatch):
    monkeypatch.setenv("FAKE_LLAMA_EXIT_AFTER", str(CALLS + 2))  # dies inside q0's server arm
    first = load_questions("hotpotqa", bench / "data.jsonl", limit=1, seed=0)[0].id
    with pytest.raises(SystemExit, match=f"engine failed on {first} \\(server\\)"):
        strict_converter.main(args(bench, 2))
    assert [(r["id"], r["arm"]) for r in rows(bench)] == [(first, "one_line")]
    assert strict_converter.summary_of(rows(bench), [first])["n"] == 0  # no pair yet
    monkeypatch.delenv("FAKE_LLAMA_EXIT_AFTER")
    summary = strict_converter.main(args(bench, 2))
    assert summary["n"] == 2 and len(requests(bench)) == CALLS + 2 + 3 * CALLS  # the first one_line arm not run again


def test_paired_counts_answers_and_calls_that_part():
    def row(prediction, texts, roles):
        return {"record": {"prediction": prediction, "lm_calls": [{"role": r} for r in roles]},
                "calls": [{"text": t} for t in texts]}

    a = {"q": row("x", ['{"a": 1}', '{"b": 2}', '{"c": 3}'], ["turn", "turn", "final"]),
         "r": row("y", ['{"a": 1}'], ["final"])}
    b = {"q": row("z", ['{"a": 1}', '{\n "b": 2\n}', '{"c": 4}', '{"d": 5}'], ["turn", "turn", "final", "final"]),
         "r": row("y", ['{"a": 1}'], ["final"])}
    assert strict_converter.paired([a, b], ["q", "r"]) == {
        "answers_differ": ["q"], "calls": 5, "calls_differ": 3, "calls_differ_in_content": 2,
        "first_differing_call": {"q": {"call": 2, "role": "turn"}, "r": None}}
    assert strict_converter.order(0) == ["one_line", "server"] and strict_converter.order(1) == ["server", "one_line"]
