"""Shared fixtures and the suite's default selection.

Selection: `python -m pytest` is the fast default, which deselects the tests marked `slow` (servers,
browsers, subprocesses, multi-second runs) or `integration` (the real local LM); `python -m pytest --full`
runs everything (CI does). An explicit `-m EXPRESSION` selects as usual, with no default deselection.

Fixtures: a tiny corpus written in the Wikipedia dump's format and indexed by the real build path, and
`workdir`, a fresh directory to run eval.run or eval.grid in; `data_dir`, the real data for integration tests;
`llama_server`, the server program their embedded model runs in."""

import os
from pathlib import Path

import mlflow
import pytest

from eir_dspy.corpus_index import CorpusIndex, build_index
from eir_dspy.wiki_dump import DumpParagraph, read_dump, write_dump

DESELECTED_BY_DEFAULT = ("slow", "integration")  # markers registered in pyproject.toml
_deselected_count = pytest.StashKey[int]()


def pytest_addoption(parser):
    parser.addoption("--full", action="store_true", default=False,
                     help="run every test, the slow and integration ones too "
                          f"(by default tests marked {' or '.join(DESELECTED_BY_DEFAULT)} are deselected)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--full") or config.getoption("markexpr"):
        return  # everything, or the user's own -m selection as pytest applies it
    deselected = [item for item in items if any(item.get_closest_marker(m) for m in DESELECTED_BY_DEFAULT)]
    config.stash[_deselected_count] = len(deselected)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        dropped = set(map(id, deselected))
        items[:] = [item for item in items if id(item) not in dropped]


def pytest_terminal_summary(terminalreporter, config):
    count = config.stash.get(_deselected_count, 0)
    if count:
        terminalreporter.write_line(f"{count} slow/integration tests deselected; "
                                    "run `python -m pytest --full` for everything")


TINY_CORPUS = [
    DumpParagraph("30", "Running Man", ("Running Man is a show.", " The runners ran in Seoul.")),
    DumpParagraph("7", "Seoul", ("Seoul is the capital of South Korea.",)),
    DumpParagraph("12", "Busan", ("Busan is a port city.", " It hosts a film festival.")),
    DumpParagraph("5", "Film festival", ("A film festival shows films.",)),
    DumpParagraph("9", "Twin A", ("Zebra crossing.",)),
    DumpParagraph("4", "Twin B", ("Zebra crossing.",)),
]


@pytest.fixture
def data_dir():
    """The real benchmark data ($EIR_DATA_DIR) for the integration tests; a clear failure without it."""
    path = os.environ.get("EIR_DATA_DIR")
    if not path or not Path(path).is_dir():
        pytest.fail("set EIR_DATA_DIR to the benchmark data directory (e.g. ../shared/data/raw)")
    return Path(path).resolve()


@pytest.fixture
def llama_server(monkeypatch):
    """The server program the integration tests' embedded model runs in: the prebuilt engine (the xllamacpp
    wheel scripts/setup.sh installs), even where a faster binary is built, so they test what every machine
    runs (eir_dspy/lm/server_program.py); skipped on a machine without it."""
    from eir_dspy.lm.server_program import WHEEL, EngineError, server_program

    monkeypatch.setenv("EIR_LLAMA_SERVER", WHEEL)
    try:
        return server_program()
    except EngineError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def tiny_corpus(tmp_path_factory) -> CorpusIndex:
    root = tmp_path_factory.mktemp("corpus")
    dump = root / "dump.tar.bz2"
    write_dump(TINY_CORPUS, dump, per_shard=4)  # two shards, as the real dump splits them
    build_index(read_dump(dump), root / "index", source=str(dump), progress=False)
    return CorpusIndex(root / "index")


@pytest.fixture
def workdir(tmp_path, monkeypatch, request):
    """A fresh directory that eval.run and eval.grid work in, as a user's would be: the current
    directory, with its own MLflow store (in the environment, for subprocesses, and in this process,
    which an earlier test may have pointed at another store), $EIR_DATA_DIR on it (a grid's relative
    data paths resolve there), no $EIR_INDEX_DIR from outside, and a fake API key for API models served
    on loopback. The test module's `fill_workdir(path)` (its own or one it imports), where it has one,
    writes the files its tests expect there (data.jsonl, grid.toml)."""
    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    mlflow.set_tracking_uri(uri)
    monkeypatch.setenv("EIR_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("EIR_INDEX_DIR", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    fill = getattr(request.module, "fill_workdir", None)
    if fill is not None:
        fill(tmp_path)
    return tmp_path
