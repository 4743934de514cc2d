"""The MLflow UI as a user sees it: `mlflow server` on loopback over a store with small runs (two
method runs; a --trace run), loaded in headless Chromium (Debian's, driven by Playwright).
Screenshots go to test-artifacts/."""

import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import mlflow
import pytest

import eval.run as run_module
from tests.fixtures.scripted_runs import (
    ARGS,
    direct_reply,
    fill_workdir,  # noqa: F401 (the files the workdir fixture writes here)
    reply,
)
from tests.scripted import use_lm

pytestmark = pytest.mark.slow  # an MLflow server and headless Chromium

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
# Without the background-networking flags Chromium keeps dialing out, which this closed network refuses.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def ui(workdir, monkeypatch):
    """Two eval.run runs (EIR and Direct on scripted LMs) served by `mlflow server`."""
    use_lm(monkeypatch, reply)
    eir = run_module.main(ARGS)
    use_lm(monkeypatch, direct_reply)
    direct = run_module.main(ARGS + ["--method", "direct"])
    with mlflow_server(workdir) as base:
        yield base, mlflow.get_run(eir["run_id"]), mlflow.get_run(direct["run_id"])


@pytest.fixture
def traced_ui(workdir, monkeypatch):
    """A --trace run of 3 questions (EIR on a scripted LM) served by `mlflow server`."""
    use_lm(monkeypatch, reply)
    out = run_module.main(ARGS + ["--trace"])
    with mlflow_server(workdir) as base:
        yield base, mlflow.get_run(out["run_id"]), out["records"]


@contextmanager
def mlflow_server(workdir):
    """`mlflow server` on loopback over the test's store; yields its base URL once it answers."""
    port = free_port()
    log = open(workdir / "mlflow_server.log", "w")
    server = subprocess.Popen([sys.executable, "-m", "mlflow", "server", "--backend-store-uri",
                               f"sqlite:///{workdir}/mlflow.db", "--host", "127.0.0.1", "--port", str(port),
                               "--workers", "1"], cwd=workdir, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 90
        while True:
            try:
                urllib.request.urlopen(f"{base}/health", timeout=2)
                break
            except OSError as err:
                if server.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"mlflow server did not come up: {(workdir / 'mlflow_server.log').read_text()[-2000:]}") from err  # noqa: E501
                time.sleep(0.5)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def test_both_runs_are_listed_and_their_metrics_line_up_in_compare(ui):
    from playwright.sync_api import sync_playwright

    base, eir, direct = ui
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} not found: scripts/setup.sh installs Debian's chromium (apt-get, as root)")
    ARTIFACTS.mkdir(exist_ok=True)
    experiment = eir.info.experiment_id
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.goto(f"{base}/#/experiments/{experiment}/runs")
        for run in (eir, direct):  # run names say method / dataset / LM / H
            page.get_by_text(run.info.run_name).first.wait_for(timeout=60_000)
        page.screenshot(path=str(ARTIFACTS / "mlflow_ui_runs.png"), full_page=True)

        ids = ",".join(f'"{r.info.run_id}"' for r in (eir, direct))
        page.goto(f"{base}/#/compare-runs?runs=[{ids}]&experiments=[\"{experiment}\"]")
        page.get_by_text("answer_f1").first.wait_for(timeout=60_000)
        text = page.inner_text("body")
        page.screenshot(path=str(ARTIFACTS / "mlflow_ui_compare.png"), full_page=True)
        browser.close()
    # MLflow 3.17 renders only the first 17 metric rows (by name) before scrolling: check early ones.
    for name in ("answer_f1", "calls_per_question", "em", "gold_paragraphs_read"):
        assert name in text
    for run in (eir, direct):  # each run's own value is on the page
        assert run.info.run_name in text
        assert f"{run.data.metrics['answer_f1']:.2f}"[:4] in text
    assert eir.data.metrics["calls_per_question"] != direct.data.metrics["calls_per_question"]


def test_a_traced_run_shows_one_trace_per_question_with_its_three_scores(traced_ui):
    from playwright.sync_api import sync_playwright

    from eval.runs.traces import FEEDBACK

    base, run, records = traced_ui
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} not found: scripts/setup.sh installs Debian's chromium (apt-get, as root)")
    ARTIFACTS.mkdir(exist_ok=True)
    experiment = run.info.experiment_id
    found = mlflow.search_traces(locations=[experiment], run_id=run.info.run_id, return_type="list")
    assert len(found) == 3  # what the page should list
    listed, detail = ARTIFACTS / "mlflow_ui_traces.png", ARTIFACTS / "mlflow_ui_trace.png"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.goto(f"{base}/#/experiments/{experiment}/traces")
        for record in records:  # eval.runs.traces leads each request preview with the question id
            page.get_by_text(f"[{record['id']}]").first.wait_for(timeout=60_000)
        for name in FEEDBACK:  # one column per assessment
            page.get_by_text(name).first.wait_for(timeout=60_000)
        text = page.inner_text("body")
        page.screenshot(path=str(listed), full_page=True)

        q1 = next(t for t in found if t.info.tags["eir.question_id"] == "q1")
        page.goto(f"{base}/#/experiments/{experiment}/traces/{q1.info.trace_id}")
        page.get_by_text("expected_response").first.wait_for(timeout=60_000)  # the gold answer, an expectation
        trace_text = page.inner_text("body")
        page.screenshot(path=str(detail), full_page=True)
        browser.close()
    print(f"screenshots: {listed} {detail}")
    for record in records:
        assert f"[{record['id']}] {record['question']}" in text
    for name in FEEDBACK:
        assert name in text and name in trace_text
    assert "q1" in trace_text and "Lena Osk" in trace_text  # its question id and gold answer
