"""The project's bm25s search against rank-bm25 on the same offline HotpotQA corpus, in one run.

    python benchmarks/search_vs_rank_bm25.py [--index DIR] [--data ../shared/data/raw] [--queries 300]

Both get the SAME analyzer output (lowercase, stopwords out, Snowball stems) and k1=0.9, b=0.4;
rank-bm25's BM25Okapi has its own IDF (log((N-n+.5)/(n+.5)) with an epsilon floor, not Lucene's
log(1 + ...)), so the top tens can differ: the overlap says by how much. Queries are the
questions of the non-holdout HotpotQA dev samples. Timed per query, end to end: analysis,
scoring and the top ten (the project's search also reads the ten titles back from disk).
Needs `pip install -e .[bench]`.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from rank_bm25 import BM25Okapi

from eir_dspy.corpus_index import K1, SEARCH_K, B, CorpusIndex
from eir_dspy.text_analysis import Analyzer
from eval.data.corpus import build_default_index, default_index_dir, hotpot_files
from eval.data.loaders import load_file


def questions(data: str, n: int) -> list[str]:
    out: list[str] = []
    for f in hotpot_files(data):  # the holdout is never among them
        try:
            out += [q.question for q in load_file(f, "hotpotqa")]
        except Exception:  # a file without paragraphs is still a source of questions, but not needed
            continue
    return out[:n]


def percentiles(seconds: list[float]) -> tuple[float, float]:
    ms = np.array(seconds) * 1000
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 95))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--index", default=None)
    p.add_argument("--data", default="../shared/data/raw")
    p.add_argument("--queries", type=int, default=300)
    args = p.parse_args()
    index_dir = Path(args.index) if args.index else default_index_dir()
    if not (index_dir / "corpus.json").exists():
        build_default_index(args.data, index_dir, progress=False)
    index = CorpusIndex(index_dir)
    analyzer = Analyzer()

    docs = [json.loads(line) for line in open(index_dir / "docs.jsonl", encoding="utf-8")]
    t0 = time.perf_counter()
    tokens = [analyzer.terms(d["title"] + "\n" + "".join(d["sentences"])) for d in docs]
    rank = BM25Okapi(tokens, k1=K1, b=B)
    rank_build = time.perf_counter() - t0

    qs = questions(args.data, args.queries)
    ours_s, theirs_s, overlaps = [], [], []
    for q in qs:
        t = time.perf_counter()
        hits = index.search(q, SEARCH_K)
        ours_s.append(time.perf_counter() - t)

        t = time.perf_counter()
        scores = rank.get_scores(analyzer.query_terms(q))
        top = np.argsort(-scores, kind="stable")[:SEARCH_K]
        top = [int(i) for i in top if scores[i] > 0]
        theirs_s.append(time.perf_counter() - t)

        ours = {h.row for h in hits}
        if ours or top:
            overlaps.append(len(ours & set(top)) / max(len(ours), len(top)))

    o50, o95 = percentiles(ours_s)
    r50, r95 = percentiles(theirs_s)
    ours_qps, theirs_qps = len(qs) / sum(ours_s), len(qs) / sum(theirs_s)
    print(f"corpus: {len(docs)} paragraphs, {index.meta['vocabulary']} terms; {len(qs)} HotpotQA questions as queries")
    print(f"rank-bm25 BM25Okapi build (from the same tokens): {rank_build:.1f} s")
    print()
    print("search          | p50 ms | p95 ms | queries/s")
    print("----------------+--------+--------+----------")
    print(f"eir_dspy bm25s  | {o50:6.2f} | {o95:6.2f} | {ours_qps:9.1f}")
    print(f"rank-bm25       | {r50:6.2f} | {r95:6.2f} | {theirs_qps:9.1f}")
    print(f"throughput ratio (bm25s / rank-bm25): {ours_qps / theirs_qps:.1f}x; p50 ratio {r50 / o50:.1f}x")
    print(f"top-{SEARCH_K} overlap: mean {100 * np.mean(overlaps):.1f}%, identical sets "
          f"{100 * np.mean([o == 1.0 for o in overlaps]):.1f}% of queries")


if __name__ == "__main__":
    main()
