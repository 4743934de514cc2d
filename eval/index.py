"""`python -m eval.index`: build a BM25 corpus index, or the offline HotpotQA corpus to build one from.

  python -m eval.index build --source enwiki-...-abstracts.tar.bz2 --out DIR
  python -m eval.index hotpot-corpus --data ../shared/data/raw --out hotpot_abstracts.tar.bz2
  python -m eval.index search --index DIR "query terms"
"""

from __future__ import annotations

import argparse
import json
import sys

from eir_dspy.corpus_index import CorpusIndex, CorpusIndexError, build_index
from eir_dspy.wiki_dump import DumpError, read_dump, write_dump
from eval.data.corpus import hotpot_files, hotpot_paragraphs
from eval.data.loaders import DataError


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m eval.index", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="index a dump (.tar.bz2, a folder of shards, or one shard)")
    b.add_argument("--source", required=True)
    b.add_argument("--out", required=True)
    h = sub.add_parser("hotpot-corpus", help="write the HotpotQA files' paragraphs as a dump-format .tar.bz2")
    h.add_argument("--data", required=True, help="a data directory (its hotpotqa/ folder) or HotpotQA files")
    h.add_argument("--out", required=True)
    s = sub.add_parser("search", help="print the top ten titles for a query")
    s.add_argument("--index", required=True)
    s.add_argument("query")
    args = p.parse_args(argv)
    try:
        if args.command == "build":
            meta = build_index(read_dump(args.source), args.out, source=str(args.source))
            print(json.dumps({k: v for k, v in meta.items() if k != "analyzer"}, indent=2))
        elif args.command == "hotpot-corpus":
            paragraphs, report = hotpot_paragraphs(hotpot_files(args.data))
            write_dump(paragraphs, args.out)
            print(json.dumps(report, indent=2))
            print(f"wrote {len(paragraphs)} paragraphs to {args.out}")
        else:
            index = CorpusIndex(args.index)
            for hit in index.search(args.query):
                print(f"{hit.paragraph_id}\t{hit.title}")
    except (DumpError, DataError, CorpusIndexError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
