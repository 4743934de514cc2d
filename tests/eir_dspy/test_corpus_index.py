"""The corpus index end to end on a tiny dump: dump format in, BM25 rankings and sentences out."""

import bz2
import json
import tarfile

import numpy as np
import pytest

from eir_dspy.corpus_index import CorpusIndex, CorpusIndexError, top_rows
from eir_dspy.text_analysis import Analyzer
from eir_dspy.wiki_dump import DUMP_ROOT, DumpError, DumpParagraph, read_dump


@pytest.fixture(scope="module")
def index(tiny_corpus):
    assert tiny_corpus.meta["paragraphs"] == 6 and tiny_corpus.meta["k1"] == 0.9 and tiny_corpus.meta["b"] == 0.4
    return tiny_corpus


def test_documents_and_queries_share_the_stemming_analyzer(index):
    # "running" and "runners" stem to "run"/"runner"; "ran" does not: only a stemmed query finds "runs".
    assert Analyzer().terms("The Runners are RUNNING") == ["runner", "run"]
    assert [h.title for h in index.search("runs")] == ["Running Man"]
    assert index.search("the of is") == []  # stopwords only: nothing to match


def test_duplicate_query_terms_count_once(index):
    once = index.retriever.get_scores_from_ids(index.term_ids("film"))
    twice = index.retriever.get_scores_from_ids(index.term_ids("film film films"))
    assert index.term_ids("film film films") == index.term_ids("film")
    np.testing.assert_allclose(once, twice)


def test_any_term_matches_and_ties_break_by_increasing_id(index):
    assert {h.title for h in index.search("seoul port")} == {"Running Man", "Seoul", "Busan"}
    assert [h.paragraph_id for h in index.search("zebra")] == ["4", "9"]  # identical text: id 4 first


def test_top_rows_is_exact_at_the_cut():
    scores = np.array([1.0, 2.0, 2.0, 2.0, 0.0, 3.0], dtype=np.float32)
    keys = np.array([0, 50, 10, 30, 1, 99])
    assert top_rows(scores, keys, 3).tolist() == [5, 2, 3]
    assert top_rows(scores, keys, 10).tolist() == [5, 2, 3, 1, 0]  # zero scores never returned


def test_read_back_keeps_sentence_lists_for_supporting_facts(index):
    hit = next(h for h in index.search("film festival busan") if h.title == "Busan")
    p = index.paragraph(hit.row)
    assert p.title == "Busan" and p.sentences == ("Busan is a port city.", " It hosts a film festival.")


def test_index_loads_memory_mapped(index):
    assert isinstance(index.offsets, np.memmap) and isinstance(index.keys, np.memmap)


def test_refuses_a_directory_that_is_not_an_index_or_has_another_analyzer(tmp_path, index):
    with pytest.raises(CorpusIndexError, match="not an index directory .*python -m eval.index build"):
        CorpusIndex(tmp_path)
    meta = json.loads((index.directory / "corpus.json").read_text())
    (tmp_path / "corpus.json").write_text(json.dumps({**meta, "analyzer": {"stemmer": None}}))
    with pytest.raises(CorpusIndexError, match="rebuild the index"):
        CorpusIndex(tmp_path)


def test_dump_reads_from_tar_folder_and_single_shard_and_strips_links(tmp_path):
    line = {"id": "1", "url": "u", "title": "T", "text": ["<a href=\"X\">X</a> is big.", " Yes."]}
    shard = tmp_path / DUMP_ROOT / "AA" / "wiki_00.bz2"
    shard.parent.mkdir(parents=True)
    shard.write_bytes(bz2.compress((json.dumps(line) + "\n" + json.dumps({**line, "id": "2", "text": []}) + "\n").encode()))
    expected = [DumpParagraph("1", "T", ("X is big.", " Yes."))]  # the empty paragraph is skipped
    assert list(read_dump(shard)) == expected
    assert list(read_dump(tmp_path / DUMP_ROOT)) == expected
    with tarfile.open(tmp_path / "d.tar.bz2", "w:bz2") as tar:
        tar.add(tmp_path / DUMP_ROOT, arcname=DUMP_ROOT)
    assert list(read_dump(tmp_path / "d.tar.bz2")) == expected


def test_bad_dump_line_names_file_and_line(tmp_path):
    bad = tmp_path / "wiki_00.jsonl"
    bad.write_text(json.dumps({"id": "1", "title": "T", "text": ["ok"]}) + "\n{not json\n")
    with pytest.raises(DumpError, match=r"wiki_00.jsonl: line 2: not a dump record"):
        list(read_dump(bad))
    with pytest.raises(DumpError, match="no such file"):
        list(read_dump(tmp_path / "missing.tar.bz2"))
