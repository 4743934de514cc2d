"""How the corpus index's cost grows with corpus size, on synthetic dumps of Wikipedia's shape.

    python benchmarks/index_scaling.py [--sizes 100000 1000000] [--work /tmp/eir-scaling]

The full 5.2M-paragraph dump is not reachable offline, so each size gets a synthetic dump in
the extracted dump's layout (folders of bz2 JSONL shards) drawn from the offline HotpotQA
corpus's own statistics: sentences per paragraph, words per sentence and title lengths are
resampled from the real paragraphs; words come 90% from the real corpus's word frequencies and
10% from a Zipf(1.3) tail of made-up words, so the vocabulary keeps growing with size as a real
corpus's does (Heaps' law) instead of saturating at the 40k real words.

Each size is built in a subprocess (build time and its peak RSS), then loaded memory-mapped in
another (RSS after load, p50/p95 latency of 200 queries of 3-8 real words, RSS after them).
"""

from __future__ import annotations

import argparse
import bz2
import json
import resource
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

SHARD = 10_000  # paragraphs per shard (the real dump's shards hold a few thousand to tens of thousands)


def rss_mb() -> float:
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def real_statistics(index_dir: Path) -> dict:
    import re
    words = Counter()
    sentences_per, words_per, title_words = [], [], []
    for line in open(index_dir / "docs.jsonl", encoding="utf-8"):
        d = json.loads(line)
        sentences_per.append(len(d["sentences"]))
        title_words.append(max(1, len(d["title"].split())))
        for s in d["sentences"]:
            w = re.findall(r"\w+|[^\w\s]", s)
            words_per.append(max(1, len(w)))
            words.update(w)
    vocab, counts = zip(*words.most_common())
    return {"vocab": list(vocab), "p": np.array(counts, dtype=np.float64) / sum(counts),
            "sentences_per": np.array(sentences_per), "words_per": np.array(words_per),
            "title_words": np.array(title_words)}


def generate(stats: dict, n: int, out: Path, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    vocab = np.array(stats["vocab"], dtype=object)
    for start in range(0, n, SHARD):
        m = min(SHARD, n - start)
        lines = []
        n_sent = rng.choice(stats["sentences_per"], m)
        sent_len = rng.choice(stats["words_per"], int(n_sent.sum()))
        title_len = rng.choice(stats["title_words"], m)
        total = int(sent_len.sum() + title_len.sum())
        words = vocab[rng.choice(len(vocab), total, p=stats["p"])]
        tail = rng.random(total) < 0.10
        words[tail] = ["x" + np.base_repr(int(z), 36).lower() for z in rng.zipf(1.3, int(tail.sum()))]
        pos, sent = 0, 0
        for i in range(m):
            title = " ".join(words[pos:pos + title_len[i]]).title()
            pos += title_len[i]
            sentences = []
            for _ in range(n_sent[i]):
                k = sent_len[sent]
                sentences.append((" " if sentences else "") + " ".join(words[pos:pos + k]) + ".")
                pos, sent = pos + k, sent + 1
            pid = start + i + 1
            lines.append(json.dumps({"id": str(pid), "url": f"https://en.wikipedia.org/wiki?curid={pid}",
                                     "title": f"{title} {pid}", "text": sentences}, ensure_ascii=False))
        folder = out / (chr(65 + (start // SHARD) // 2600) + chr(65 + ((start // SHARD) // 100) % 26))
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"wiki_{(start // SHARD) % 100:02d}.bz2").write_bytes(
            bz2.compress(("\n".join(lines) + "\n").encode("utf-8"), compresslevel=1))


def child_build(source: str, out: str) -> None:
    from eir_dspy.corpus_index import build_index
    from eir_dspy.wiki_dump import read_dump
    t0 = time.perf_counter()
    meta = build_index(read_dump(source), out, source=source, progress=False)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"build_s": time.perf_counter() - t0, "peak_rss_mb": peak, "vocabulary": meta["vocabulary"],
                      "postings": meta["postings"], "tokens": meta["tokens"]}))


def child_query(index_dir: str, vocab_json: str) -> None:
    from eir_dspy.corpus_index import CorpusIndex
    base = rss_mb()
    index = CorpusIndex(index_dir)
    loaded = rss_mb()
    words = json.loads(vocab_json)
    rng = np.random.default_rng(1)
    queries = [" ".join(rng.choice(words, rng.integers(3, 9))) for _ in range(200)]
    index.search(queries[0])  # the first touch pages the vocabulary in; time the steady state
    seconds = []
    for q in queries:
        t = time.perf_counter()
        index.search(q)
        seconds.append(time.perf_counter() - t)
    ms = np.array(seconds) * 1000
    print(json.dumps({"rss_after_load_mb": loaded, "rss_python_mb": base, "rss_after_queries_mb": rss_mb(),
                      "p50_ms": float(np.percentile(ms, 50)), "p95_ms": float(np.percentile(ms, 95))}))


def du_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def run_child(*args: str) -> dict:
    out = subprocess.run([sys.executable, __file__, *args], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child-build":
        return child_build(sys.argv[2], sys.argv[3])
    if len(sys.argv) > 1 and sys.argv[1] == "--child-query":
        return child_query(sys.argv[2], sys.argv[3])
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    p.add_argument("--index", default=None, help="the offline HotpotQA index whose statistics are resampled")
    p.add_argument("--work", default="/tmp/eir-scaling")
    p.add_argument("--keep", action="store_true", help="keep the synthetic dumps and indexes")
    args = p.parse_args()
    from eval.data.corpus import default_index_dir
    stats = real_statistics(Path(args.index) if args.index else default_index_dir())
    query_words = json.dumps([w for w in stats["vocab"][:20000] if w.isalpha() and len(w) > 3][:5000])
    work = Path(args.work)
    rows = []
    for n in args.sizes:
        dump, index = work / f"dump-{n}", work / f"index-{n}"
        shutil.rmtree(dump, ignore_errors=True), shutil.rmtree(index, ignore_errors=True)
        t0 = time.perf_counter()
        generate(stats, n, dump)
        gen_s = time.perf_counter() - t0
        built = run_child("--child-build", str(dump), str(index))
        queried = run_child("--child-query", str(index), query_words)
        docs = (index / "docs.jsonl").stat().st_size / 2**20
        rows.append({"n": n, "generate_s": gen_s, "dump_mb": du_mb(dump), "index_mb": du_mb(index) - docs,
                     "docs_mb": docs, **built, **queried})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
        if not args.keep:
            shutil.rmtree(dump), shutil.rmtree(index)
    print("paragraphs | dump MB | build s | peak RSS MB | BM25 index MB | sentences MB | vocabulary | "
          "RSS after mmap load MB | p50 ms | p95 ms")
    print("-----------+---------+---------+-------------+---------------+--------------+------------+"
          "------------------------+--------+-------")
    for r in rows:
        print(f"{r['n']:>10,} | {r['dump_mb']:7.0f} | {r['build_s']:7.1f} | {r['peak_rss_mb']:11.0f} | "
              f"{r['index_mb']:13.0f} | {r['docs_mb']:12.0f} | {r['vocabulary']:>10,} | "
              f"{r['rss_after_load_mb']:22.0f} | {r['p50_ms']:6.1f} | {r['p95_ms']:6.1f}")
    print(f"(RSS of a bare python process with the project imported: {rows[0]['rss_python_mb']:.0f} MB)")


if __name__ == "__main__":
    main()
