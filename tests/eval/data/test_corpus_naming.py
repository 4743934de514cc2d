"""Which corpus a corpus-setting run searched: the offline HotpotQA corpus (a demo: it holds every
question's gold paragraphs), a partial index, or the full one; logged as the run's `corpus` param."""

import json

import mlflow

import eval.run as run_module
from eval.data.corpus import FULL, OFFLINE, PARTIAL, corpus_name, full_corpus_problem
from tests.fixtures.grids import write_full_index
from tests.fixtures.scripted_runs import (
    ARGS,
    corpus_reply,
    fill_workdir,  # noqa: F401 (the files the workdir fixture writes here)
)
from tests.scripted import use_lm


def test_an_index_is_named_offline_partial_or_full(tmp_path, tiny_corpus):
    assert corpus_name(tiny_corpus.directory) == PARTIAL  # 6 paragraphs from a dump of its own
    full = write_full_index(tmp_path / "full")
    assert corpus_name(full) == FULL and full_corpus_problem(full) is None
    just_under = write_full_index(tmp_path / "under", 4_999_999)
    assert corpus_name(just_under) == PARTIAL and "holds 4,999,999 paragraphs" in full_corpus_problem(just_under)
    # The offline corpus by its dump's name, even when indexed by hand (no report file beside it).
    by_hand = write_full_index(tmp_path / "by-hand", 8_745)
    (by_hand / "corpus.json").write_text(json.dumps({"source": "x/hotpotqa-abstracts.tar.bz2", "paragraphs": 8_745}))
    assert corpus_name(by_hand) == OFFLINE


def test_a_run_on_the_offline_corpus_logs_it_and_says_so(workdir, monkeypatch, capsys):  # noqa: F811
    use_lm(monkeypatch, corpus_reply)
    out = run_module.main(ARGS + ["--setting", "corpus"])
    params = mlflow.get_run(out["run_id"]).data.params
    assert params["corpus"] == "offline-hotpotqa" and params["corpus_paragraphs"] == "6"  # 3 questions x 2 paragraphs
    assert "note: searching the offline-hotpotqa corpus (6 paragraphs), not the paper's" in capsys.readouterr().err
