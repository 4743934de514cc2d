"""scripts/behaviour_snapshot.py: its fake LM (behaviour_snapshot_lm.py) answers every signature, normalisation drops what varies,
--compare names the differing fields; the slow test runs one case twice and finds the snapshots equal."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "behaviour_snapshot.py"


def _load(name: str):
    """A module of scripts/ (not a package), as the script itself imports its sibling."""
    if str(SCRIPT.parent) not in sys.path:
        sys.path.insert(0, str(SCRIPT.parent))
    spec = importlib.util.spec_from_file_location(name, SCRIPT.parent / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


snap = _load("behaviour_snapshot")
lm = _load("behaviour_snapshot_lm")


def _request(outputs: list[str], **inputs: str) -> dict:
    """A chat request laid out as DSPy's adapters write one."""
    system = "Your input fields are:\n" + "".join(f"{i}. `{k}` (str)\n" for i, k in enumerate(inputs, 1)) + \
        "Your output fields are:\n" + "".join(f"{i}. `{k}` (str)\n" for i, k in enumerate(outputs, 1)) + \
        "All interactions will be structured in the following way."
    user = "\n\n".join(f"[[ ## {k} ## ]]\n{v}" for k, v in inputs.items())
    return {"model": "fake", "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}


PARAGRAPH = 'Read "Seoul" (5 reads left). Cite a sentence below as {"title": "Seoul", "sentence": <its [number]>}:\n' \
            "[0] Seoul is the capital of South Korea."


@pytest.mark.parametrize(("outputs", "inputs", "signature"), [
    (["requirement_updates", "conclusion_updates", "action"],
     {"question": "Where is Seoul?", "requirements": "R1 [open] where Seoul is", "conclusions": "(none yet)",
      "unread_titles": "Busan\nFilm festival", "last_result": PARAGRAPH}, "eir_turn"),
    (["requirement_updates", "conclusion_updates", "action"],
     {"question": "Where is Seoul?", "requirements": "", "conclusions": "",
      "search_results": "7 | Seoul\n12 | Busan (read)", "last_result": "Search 'Seoul' found 2 paragraphs"}, "eir_turn"),
    (["answer", "citations"], {"question": "Is Seoul a city?", "evidence": "## Seoul\n[0] Seoul is a city."}, "final"),
    (["thought", "action"], {"question": "Where?", "unread_titles": "Busan", "last_result": PARAGRAPH}, "direct_turn"),
    (["thought", "establish", "expected_result", "progress", "action"],
     {"question": "Where?", "search_results": "(no searches yet)", "recent_paragraphs": "", "last_result": ""},
     "direct_turn"),
    (["facts", "justification", "action"], {"question": "Where?", "evidence": "", "proposal": '{"kind": "read"}'},
     "decompose"),
    (["verdict", "correction", "confidence"], {"question": "Where?", "unread_titles": "Busan", "steps": "", "step": "x"},
     "verify"),
    (["thought", "action"], {"question": "Where?", "unread_titles": "Busan", "step": "x", "correction": "read: Busan"},
     "refine"),
    (["reflection"], {"question": "Where?", "titles": "", "trajectory": ""}, "reflect"),
    (["revision"], {"question": "Where?", "conclusion": "C1 [supported] Seoul is a capital (Seoul#0) depends on C2"},
     "repair"),
    (["requirement_updates"], {"question": "Where?", "requirements": "R1 [open] where", "conclusions": ""}, "refresh"),
])
def test_the_fake_lm_answers_every_signature_the_same_way_twice(outputs, inputs, signature):
    body = _request(outputs, **inputs)
    role, out = lm.reply(body)
    assert role == signature
    assert set(out) == set(outputs)
    assert lm.reply(json.loads(json.dumps(body))) == (role, out)


def test_an_eir_turn_cites_the_paragraph_it_was_just_shown():
    body = _request(["requirement_updates", "conclusion_updates", "action"], question="Where is Seoul?",
                    requirements="R1 [open] where Seoul is", conclusions="(none yet)", unread_titles="Busan",
                    last_result=PARAGRAPH)
    _, out = lm.reply(body)
    assert out["conclusion_updates"][0]["citations"] == [{"title": "Seoul", "sentence": 0}]
    assert out["requirement_updates"] == [{"id": "R1", "text": "where Seoul is", "status": "satisfied"}]


def test_scrubbing_drops_timings_and_run_ids_and_replaces_paths():
    scrub = snap.Scrubber({"/tmp/x/case": "<CASE>", "abc123": "<run1>"})
    record = {"run_id": "abc123", "seconds": 1.5, "answer": "Seoul", "calls": 3,
              "lm_calls": [{"latency_s": 0.2, "prompt_tokens": 10}], "path": "/tmp/x/case/runs/abc123/results.jsonl"}
    assert scrub(record) == {"answer": "Seoul", "calls": 3, "lm_calls": [{"prompt_tokens": 10}],
                             "path": "<CASE>/runs/<run1>/results.jsonl"}


def _write(path: Path, cases: dict) -> Path:
    path.write_text(json.dumps({"format": snap.FORMAT, "sha256": {n: snap._sha(c) for n, c in cases.items()},
                                "cases": cases}))
    return path


def test_compare_names_the_differing_fields(tmp_path, capsys):
    case = {"results": {"runs/<run1>/results.jsonl": [{"answer": "Seoul", "calls": 3}]}, "mlflow": [{"metrics": {"em": 1.0}}]}
    changed = json.loads(json.dumps(case))
    changed["results"]["runs/<run1>/results.jsonl"][0]["calls"] = 4
    changed["mlflow"][0]["metrics"]["answer_f1"] = 50.0
    a = _write(tmp_path / "a.json", {"eir-pool": case, "direct-pool": case})
    assert snap.compare(a, _write(tmp_path / "same.json", {"eir-pool": case, "direct-pool": case}), 20) == 0
    assert "all 2 cases identical" in capsys.readouterr().out
    assert snap.compare(a, _write(tmp_path / "b.json", {"eir-pool": changed, "direct-pool": case}), 20) == 1
    out = capsys.readouterr().out
    assert "direct-pool: identical" in out
    assert "results.runs/<run1>/results.jsonl[0].calls: 3 != 4" in out
    assert "mlflow[0].metrics.answer_f1: only in B (50.0)" in out
    assert "1 of 2 cases differ" in out


@pytest.mark.slow
def test_one_case_run_twice_gives_equal_snapshots(tmp_path):
    """The cheapest case end to end, through this checkout's eval.run, twice."""
    outs = []
    for name in ("a", "b"):
        out = tmp_path / f"{name}.json"
        subprocess.run([sys.executable, str(SCRIPT), "--root", str(ROOT), "--out", str(out), "--cases", "full_pool-pool"],
                       check=True, capture_output=True)
        outs.append(out)
    case = json.loads(outs[0].read_text())["cases"]["full_pool-pool"]
    assert [s["exit"] for s in case["steps"]] == [0]
    assert len(case["results"]) == 1 and len(case["lm_requests"]) == 2
    done = subprocess.run([sys.executable, str(SCRIPT), "--compare", *map(str, outs)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout
