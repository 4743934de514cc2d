"""The rehearsal at CI size: the paper's main grid on the simulated endpoint, a few questions per
cell, faults on and one SIGKILL; nothing lost, the resumed records equal the uninterrupted ones, and
the dry run's bounds hold over what was counted."""

import json

import pytest

from benchmarks import rehearsal


def test_records_compare_without_timing_and_cache_flags():
    a = {"run": {"q1": {"prediction": "x", "seconds": 1.0, "cache_hits": 0, "lm_calls": [{"latency": 0.1, "role": "a"}]}}}
    b = {"run": {"q1": {"prediction": "x", "seconds": 9.0, "cache_hits": 2, "lm_calls": [{"latency": 0.3, "role": "a"}]}}}
    assert rehearsal.differences(a, b) == []
    b["run"]["q1"]["lm_calls"][0]["role"] = "b"
    b["run"]["q2"] = {}
    assert rehearsal.differences(a, b) == ["run: q1 differs in lm_calls", "run: q2 only in the second"]


def test_grid_copy_points_both_lms_at_the_endpoint(tmp_path):
    data = {"hotpotqa": tmp_path / "h.jsonl", "2wiki": tmp_path / "w.jsonl", "musique": tmp_path / "m.json"}
    path = rehearsal.grid_copy(rehearsal.GRIDS["main"], tmp_path, experiment="x", n=7, url="http://127.0.0.1:9",
                               threads=16, timeout=5.0, data=data)
    import tomllib

    grid = tomllib.loads(path.read_text())
    assert grid["n"] == 7 and grid["experiment"] == "x" and grid["run"] == {"threads": 16, "request_timeout": 5.0}
    assert [e["api_base"] for e in grid["lms"]] == ["http://127.0.0.1:9/v1", "http://127.0.0.1:9"]
    assert grid["data"] == {k: str(v) for k, v in data.items()}
    assert rehearsal._grid_questions(path, 7) == 5 * 2 * (7 + 7 + 7)
    native = rehearsal.grid_copy(rehearsal.GRIDS["main"], tmp_path, experiment="x", n=7, url="http://127.0.0.1:9",
                                 threads=16, timeout=5.0, data=data, route="native")
    assert all("api_base" not in e for e in tomllib.loads(native.read_text())["lms"])  # the LMs as the paper names them
    env = rehearsal._env(tmp_path, "http://127.0.0.1:9")
    assert env["EIR_REHEARSAL_ENDPOINT"] == "http://127.0.0.1:9" and "native_route" in env["PYTHONPATH"]
    assert env["OPENAI_API_KEY"] == "sk-simulated"  # never a real key to the endpoint


def test_cells_are_matched_to_runs_named_without_their_h():
    bound = {"per_cell": [{"title": "eir H=4 / hotpotqa / m / H=4", "calls": 10, "prompt_tokens": 5,
                           "completion_tokens": 5},
                          {"title": "eir / hotpotqa / m / H=6", "calls": 1, "prompt_tokens": 99, "completion_tokens": 99}]}
    records = {"eir H=4 / hotpotqa / m": {"q": {"calls": 3, "prompt_tokens": 9, "completion_tokens": 1}},
               "eir / hotpotqa / m / H=6": {"q": {"calls": 2, "prompt_tokens": 1, "completion_tokens": 1}}}
    counted = rehearsal.counted(records, bound)
    assert counted["total"]["questions"] == 2 and counted["total"]["calls"] == 5
    assert counted["over_bound"] == ["eir H=4 / hotpotqa / m: prompt_tokens 9 > bound 5",
                                     "eir / hotpotqa / m / H=6: calls 2 > bound 1"]


@pytest.mark.slow
def test_rehearsal_at_ci_size_loses_nothing_and_resumes_to_the_same_records(tmp_path, data_dir):
    summary = rehearsal.main(["--out", str(tmp_path / "r"), "--data-dir", str(data_dir), "--n", "3", "6",
                              "--grids", "main", "--analyses", "totals", "rejections", "--threads", "3",
                              "--latency", "0", "--faults", "0.05", "--hang", "3", "--request-timeout", "1",
                              "--kill-at", "0.3"])
    small, large = summary["rehearsals"]
    for r in (small, large):
        grid = r["grids"]["main"]
        counted = grid["counted"]["total"]
        assert counted["questions"] == grid["questions_planned"] and counted["errors"] == 0  # nothing lost
        assert grid["dry_run"]["calls"] >= counted["calls"] > 0
        assert grid["counted"]["over_bound"] == []  # every cell within its own call and token bounds
        for kind in ("prompt_tokens", "completion_tokens"):
            if kind in grid["dry_run"]:
                assert grid["dry_run"][kind] >= counted[kind] > 0
        assert grid["endpoint"]["grid"]["unplaced"] == {}  # the agent answered every signature
        assert all(a["returncodes"] == [0] for a in grid["analyses"].values())
    assert large["grids"]["main"]["resumed"] is not None  # killed once, then resumed
    assert sum(large["grids"]["main"]["endpoint"]["grid"]["faults"].values()) > 0
    identity = summary["identity"]
    assert identity["compared"] == small["grids"]["main"]["counted"]["total"]["questions"]
    assert identity["differences"] == []
    assert "records compared, 0 differ" in (tmp_path / "r" / "report.md").read_text()
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["identity"]["differences"] == []
