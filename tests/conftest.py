"""Shared fixtures: a tiny corpus written in the Wikipedia dump's format and indexed by the real build path."""

import pytest

from eir_dspy.corpus_index import CorpusIndex, build_index
from eir_dspy.wiki_dump import DumpParagraph, read_dump, write_dump

TINY_CORPUS = [
    DumpParagraph("30", "Running Man", ("Running Man is a show.", " The runners ran in Seoul.")),
    DumpParagraph("7", "Seoul", ("Seoul is the capital of South Korea.",)),
    DumpParagraph("12", "Busan", ("Busan is a port city.", " It hosts a film festival.")),
    DumpParagraph("5", "Film festival", ("A film festival shows films.",)),
    DumpParagraph("9", "Twin A", ("Zebra crossing.",)),
    DumpParagraph("4", "Twin B", ("Zebra crossing.",)),
]


@pytest.fixture(scope="session")
def tiny_corpus(tmp_path_factory) -> CorpusIndex:
    root = tmp_path_factory.mktemp("corpus")
    dump = root / "dump.tar.bz2"
    write_dump(TINY_CORPUS, dump, per_shard=4)  # two shards, as the real dump splits them
    build_index(read_dump(dump), root / "index", source=str(dump), progress=False)
    return CorpusIndex(root / "index")
