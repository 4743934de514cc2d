"""A run's tokens do not depend on how its calls were served: fresh, answered again from DSPy's
response cache, or killed mid-question and resumed (the interrupted question replays its finished
calls from the cache) report the same tokens per question, with the replayed calls counted as
cache hits. The model is the fake OpenAI-compatible server on loopback, reached through LiteLLM as
an API model would be; each run gets its own DSPy cache directory."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import mlflow
import pytest

from tests.fake_openai import FakeOpenAI, eir_reply
from tests.fixtures.served_runs import records_in, write_questions

ROOT = Path(__file__).resolve().parents[3]
N = 6
CALLS_PER_QUESTION = 3  # eir_reply: a read, a submit, the final answer


def fill_workdir(path: Path) -> None:
    write_questions(path / "data.jsonl", n=N)


def start(workdir: Path, cache: str, args: list[str]) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", "DSPY_CACHEDIR": str(workdir / cache)}
    return subprocess.Popen([sys.executable, "-m", "eval.run", *args], cwd=workdir, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen) -> str:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return out


def newest_results(workdir: Path, before: set[Path]) -> Path:
    (path,) = set((workdir / "runs").glob("*/results.jsonl")) - before
    return path


def tokens_by_question(path: Path) -> dict[str, tuple[int, int]]:
    return {r["id"]: (r["prompt_tokens"], r["completion_tokens"]) for r in records_in(path)}


def hits(path: Path) -> int:
    return sum(c["cache_hit"] for r in records_in(path) for c in r["lm_calls"])


@pytest.mark.slow  # eval.run in subprocesses, a loopback server
def test_fresh_cached_and_killed_then_resumed_runs_report_the_same_tokens(workdir):
    with FakeOpenAI(eir_reply, delay=0.15) as fake:
        args = ["--lm", "openai/fake", "--api-base", fake.url, "--data", "data.jsonl", "--limit", str(N),
                "--experiment", "test", "--price-in", "1", "--price-out", "2"]
        finish(start(workdir, "cache-a", args))
        fresh = newest_results(workdir, set())
        paid_fresh = len(fake.requests)
        assert paid_fresh == CALLS_PER_QUESTION * N

        finish(start(workdir, "cache-a", args))  # the same questions again: every call from the cache
        cached = newest_results(workdir, {fresh})
        assert len(fake.requests) == paid_fresh  # no request reached the server

        # Killed mid-question (SIGKILL: nothing is saved on the way out), then resumed.
        proc = start(workdir, "cache-b", args)
        seen = {fresh, cached}
        deadline = time.time() + 60
        while time.time() < deadline:
            found = set((workdir / "runs").glob("*/results.jsonl")) - seen
            done = len(found.pop().read_text().splitlines()) if found else 0
            # Two questions saved and the next one's second call sent (so its first call's answer is
            # in the cache): kill inside that question.
            if done >= 2 and len(fake.requests) - paid_fresh >= CALLS_PER_QUESTION * done + 2:
                break
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
        resumed = newest_results(workdir, seen)
        saved = len(records_in(resumed))
        assert 2 <= saved < N
        finish(start(workdir, "cache-b", ["--resume", resumed.parent.name, "--experiment", "test"]))

    assert len(records_in(resumed)) == N
    # Equal tokens per question, whichever way each call was served.
    assert tokens_by_question(fresh) == tokens_by_question(cached) == tokens_by_question(resumed)
    assert hits(fresh) == 0 and hits(cached) == CALLS_PER_QUESTION * N
    # The killed run and its resume paid for each call once: the interrupted question's finished
    # calls were replayed, not made again (at most the one in flight at the kill is repeated).
    paid_b = len(fake.requests) - paid_fresh
    assert hits(resumed) >= 1
    assert CALLS_PER_QUESTION * N <= paid_b <= CALLS_PER_QUESTION * N + 1
    metrics = {p.parent.name: mlflow.get_run(p.parent.name).data.metrics for p in (fresh, cached, resumed)}
    per_q = {m["tokens_per_question"] for m in metrics.values()}
    costs = {round(m["cost_usd"], 12) for m in metrics.values()}
    assert len(per_q) == 1 and per_q.pop() > 0 and len(costs) == 1
    m_fresh, m_cached, m_resumed = (metrics[p.parent.name] for p in (fresh, cached, resumed))
    assert (m_fresh["replayed_calls"], m_fresh["paid_calls"]) == (0, CALLS_PER_QUESTION * N)
    assert (m_cached["replayed_calls"], m_cached["paid_calls"]) == (CALLS_PER_QUESTION * N, 0)
    assert m_cached["replayed_tokens"] == m_fresh["paid_tokens"]
    assert m_resumed["replayed_calls"] == hits(resumed) and m_resumed["paid_calls"] == CALLS_PER_QUESTION * N - hits(resumed)
    print(json.dumps({"killed after": saved, "replayed on resume": hits(resumed), "requests": len(fake.requests)}))
