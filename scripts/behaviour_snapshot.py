"""Behaviour snapshot: run a fixed set of scripted-LM runs on a checkout and record what they wrote.

    python scripts/behaviour_snapshot.py --root CHECKOUT --out before.json
    python scripts/behaviour_snapshot.py --root CHECKOUT --out after.json
    python scripts/behaviour_snapshot.py --compare before.json after.json   # exit 1 on any difference

Issue 33's check that a refactor changes no behaviour. Every case runs the checkout's own command
line (`python -m eval.index / eval.run / eval.compile`, cwd = the checkout) against a deterministic
fake OpenAI-compatible LM served by this script, each with its own temporary DSPy cache, MLflow
store and output directory. The snapshot keeps, per case, the results files, the MLflow runs
(params, metrics, tags, dataset inputs, artifacts) and a digest of every request the LM received,
with what varies from run to run removed (run ids, timings, temporary paths, the LM's port).

The script imports nothing from the checkout (only the standard library), so it runs unchanged on
code from before and after a refactor that moves modules or renames internal APIs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from behaviour_snapshot_lm import FakeLM  # this script's sibling: scripts/ is on sys.path

FORMAT = 1  # bump when the snapshot's layout or normalisation changes: snapshots of two formats never compare equal
DATA = Path(os.environ.get("EIR_DATA_DIR", "/work/shared/data/raw")) / "hotpotqa"
DEV = "hotpot_dev_distractor.rpt_sample500_seed1.jsonl"  # never the rpt_sample300_seed0 acceptance holdout
TRAIN = "hotpot_dev_distractor.rpt_sample300_seed2.jsonl"
LIMIT = "2"  # questions per run

# ---------------------------------------------------------------------------------------------
# The cases: each is a list of commands run in order (the compiled case compiles, then runs).
# `{index}` and `{case}` are filled in per case; eval.run and eval.compile also get --lm and --api-base,
# eval.run --out.

RUN = ["eval.run", "--data", str(DATA / DEV), "--limit", LIMIT]
CORPUS = ["--setting", "corpus", "--index", "{index}"]
PRICES = ["--price-in", "0.1", "--price-out", "0.4"]  # so cost metrics are not all zero
CASES: dict[str, list[list[str]]] = {
    "eir-pool": [RUN + ["--method", "eir"] + PRICES],
    "direct-pool": [RUN + ["--method", "direct"]],
    "full_pool-pool": [RUN + ["--method", "full_pool"] + PRICES],
    "ssr-pool": [RUN + ["--method", "ssr"]],
    "reflexion-pool": [RUN + ["--method", "reflexion", "--trials", "2"]],
    "eir-corpus": [RUN + ["--method", "eir"] + CORPUS],
    "direct-corpus": [RUN + ["--method", "direct"] + CORPUS + PRICES],
    "ssr-corpus": [RUN + ["--method", "ssr", "--votes", "2"] + CORPUS],
    "reflexion-corpus": [RUN + ["--method", "reflexion", "--trials", "2"] + CORPUS],
    "eir-no-list-feedback": [RUN + ["--method", "eir", "--ablation", "no-list-feedback"]],
    "eir-repair": [RUN + ["--method", "eir", "--ablation", "repair"]],
    "eir-repair-unapplied-corpus": [RUN + ["--method", "eir", "--ablation", "repair-unapplied"] + CORPUS],
    "eir-strict-h4": [RUN + ["--method", "eir", "--decoding", "strict", "--budget", "4", "--invalid-updates", "reject"]],
    "direct-schema": [RUN + ["--method", "direct", "--decoding", "schema"]],
    "eir-compiled-gold": [
        ["eval.compile", "--method", "eir", "--optimizer", "none", "--demos", "gold", "--gold-episodes", "2",
         "--train", str(DATA / TRAIN), "--dev", str(DATA / DEV), "--n-train", "2", "--n-dev", "2",
         "--name", "snap", "--out", "{case}/compiled"],
        RUN + ["--method", "eir", "--program", "{case}/compiled/snap.json"],
    ],
}
INDEX_STEPS = [  # the offline corpus of the dev file, built by the checkout's own commands
    ["eval.index", "hotpot-corpus", "--data", str(DATA / DEV), "--out", "{case}/hotpotqa-abstracts.tar.bz2"],
    ["eval.index", "build", "--source", "{case}/hotpotqa-abstracts.tar.bz2", "--out", "{case}/hotpotqa-abstracts-index"],
]

# ---------------------------------------------------------------------------------------------
# Normalisation: what differs between two runs of the same code is dropped or replaced.

DROP_KEYS = {"run_id", "seconds", "latency_s", "part_started_at", "finished_at", "error_trace", "started_at"}
DROP_METRIC = re.compile(r"^system/|seconds|wall_time|latency|_time_s$")
DROP_TAGS = {"mlflow.user", "mlflow.source.name", "mlflow.source.type", "mlflow.source.git.commit",
             "mlflow.source.git.branch", "mlflow.source.git.repoURL", "mlflow.log-model.history"}
INDEX_META_DROPPED = {"read_and_tokenize_s", "build_s", "source"}  # corpus.json: build timings and the dump's path


class Scrubber:
    """Replaces run ids, temporary paths and the LM's address in every string of a value."""

    def __init__(self, replacements: dict[str, str]) -> None:
        # Longest first, so a case directory wins over the temporary root that holds it.
        self.pairs = sorted(replacements.items(), key=lambda kv: -len(kv[0]))

    def text(self, s: str) -> str:
        for old, new in self.pairs:
            s = s.replace(old, new)
        return s

    def __call__(self, value):
        if isinstance(value, dict):
            return {self.text(k): self(v) for k, v in value.items() if k not in DROP_KEYS}
        if isinstance(value, list):
            return [self(v) for v in value]
        if isinstance(value, str):
            return self.text(value)
        return value


def _maybe_json(value: str):
    """A param or tag holding a JSON object or list, parsed (diffs then name the field)."""
    if value and value[0] in "[{":
        try:
            return json.loads(value)
        except ValueError:
            pass
    return value


def read_jsonl(path: Path) -> list:
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            out.append({"unparsed_line": line})
    return out


def read_file(path: Path):
    if path.suffix == ".jsonl":
        return read_jsonl(path)
    if path.suffix == ".json":
        try:
            return json.loads(path.read_text())
        except ValueError:
            pass
    return {"sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


def mlflow_runs(db: Path) -> tuple[list[dict], list[str]]:
    """The store's runs in start order (with their artifact directories) and their ids."""
    if not db.exists():
        return [], []
    con = sqlite3.connect(db)
    try:
        runs = con.execute("SELECT run_uuid, name, status, artifact_uri, experiment_id FROM runs "
                           "ORDER BY start_time, name").fetchall()
        out = []
        for run_id, name, status, artifact_uri, exp in runs:
            params = dict(con.execute("SELECT key, value FROM params WHERE run_uuid = ?", (run_id,)).fetchall())
            tags = dict(con.execute("SELECT key, value FROM tags WHERE run_uuid = ?", (run_id,)).fetchall())
            metrics: dict[str, list] = {}
            for key, value, step, is_nan in con.execute(
                    "SELECT key, value, step, is_nan FROM metrics WHERE run_uuid = ? ORDER BY key, step, timestamp",
                    (run_id,)):
                if not DROP_METRIC.search(key):
                    metrics.setdefault(key, []).append([step, "nan" if is_nan else value])
            datasets = [
                {"name": n, "digest": d, "source_type": st, "source": _maybe_json(src), "schema": _maybe_json(sc),
                 "profile": _maybe_json(pr), "context": ctx}
                for n, d, st, src, sc, pr, ctx in con.execute(
                    "SELECT d.name, d.digest, d.dataset_source_type, d.dataset_source, d.dataset_schema, d.dataset_profile,"
                    " (SELECT value FROM input_tags t WHERE t.input_uuid = i.input_uuid AND t.name = 'mlflow.data.context')"
                    " FROM inputs i JOIN datasets d ON d.dataset_uuid = i.source_id"
                    " WHERE i.destination_id = ? ORDER BY d.name, d.digest", (run_id,))]
            experiment = con.execute("SELECT name FROM experiments WHERE experiment_id = ?", (exp,)).fetchone()
            out.append({
                "id": run_id, "name": name, "status": status, "experiment": experiment[0] if experiment else None,
                "params": {k: _maybe_json(v) for k, v in sorted(params.items())},
                "metrics": {k: v if len(v) > 1 else v[0][1] for k, v in sorted(metrics.items())},
                "tags": {k: _maybe_json(v) for k, v in sorted(tags.items()) if k not in DROP_TAGS},
                "datasets": datasets, "artifact_dir": artifact_uri.removeprefix("file://")})
        return out, [r["id"] for r in out]
    finally:
        con.close()


def artifacts(directory: str) -> dict:
    root = Path(directory)
    if not root.is_dir():
        return {}
    return {str(p.relative_to(root)): read_file(p) for p in sorted(root.rglob("*")) if p.is_file()}


# ---------------------------------------------------------------------------------------------
# Running the cases.


def _fill(argv: list[str], slots: dict[str, str]) -> list[str]:
    return [a.format(**slots) for a in argv]


# The caller's settings for these never reach a case (an MLflow experiment, a DSPy cache, an index, a key).
FOREIGN_ENV = ("MLFLOW_", "_MLFLOW", "DSPY_", "EIR_", "LITELLM_", "OPENAI_", "ANTHROPIC_", "PYTHON")


def _base_env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(FOREIGN_ENV)}
    return {**env, "PYTHONPATH": str(root), "PYTHONHASHSEED": "0", "TQDM_DISABLE": "1"}


def _step(python: str, args: list[str], root: Path, env: dict, log: Path) -> dict:
    """One command of the checkout, its output in `log` (kept with --keep)."""
    with log.open("w") as out:
        rc = subprocess.run([python, "-m", *args], cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        print(f"  `python -m {' '.join(args[:2])} ...` exited {rc}; log: {log}", file=sys.stderr)
    return {"argv": args, "exit": rc}


def run_case(root: Path, name: str, steps: list[list[str]], work: Path, fake: FakeLM, index: str,
             python: str) -> dict:
    case_dir = work / name
    case_dir.mkdir(parents=True)
    env = {**_base_env(root),
           "OPENAI_API_KEY": "sk-fake", "EIR_DATA_DIR": str(DATA.parent), "EIR_INDEX_DIR": index,
           "DSPY_CACHEDIR": str(case_dir / "dspy-cache"),
           "MLFLOW_TRACKING_URI": f"sqlite:///{case_dir / 'mlflow.db'}",
           # MLflow's artifact root for a new sqlite store; else it is ./mlruns, inside the checkout.
           "_MLFLOW_SERVER_ARTIFACT_ROOT": str(case_dir / "artifacts"),
           "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no network; the same prices on every machine
           "PYTHONDONTWRITEBYTECODE": "1"}
    slots = {"case": str(case_dir), "index": index}
    record: dict = {"steps": []}
    started = time.monotonic()
    for argv in steps:
        args = _fill(argv, slots)
        if args[0] == "eval.run":
            args += ["--lm", "openai/fake", "--api-base", fake.url(name), "--out", str(case_dir / "runs")]
        elif args[0] == "eval.compile":
            args += ["--lm", "openai/fake", "--api-base", fake.url(name)]
        record["steps"].append(_step(python, args, root, env, case_dir / f"step{len(record['steps'])}.log"))
    record["seconds"] = round(time.monotonic() - started, 1)
    return record


def collect(name: str, record: dict, case_dir: Path, fake: FakeLM, replacements: dict[str, str]) -> dict:
    runs, run_ids = mlflow_runs(case_dir / "mlflow.db")
    results, hashes = {}, {}
    for path in sorted((case_dir / "runs").glob("*/results.jsonl")):
        results[str(path.relative_to(case_dir))] = read_jsonl(path)
    for path in sorted((case_dir / "compiled").glob("*.json")):
        results[str(path.relative_to(case_dir))] = read_file(path)
        # A program file names the run that compiled it, so its sha256 (a param and a tag) changes with
        # the run id: it is replaced by a name, and the file's scrubbed content is compared instead.
        hashes[hashlib.sha256(path.read_bytes()).hexdigest()] = f"<sha256 of {path.relative_to(case_dir)}>"
    scrub = Scrubber({**replacements, str(case_dir): "<CASE>", **hashes,
                      **{rid: f"<run{i + 1}>" for i, rid in enumerate(run_ids)}})
    for run in runs:
        run["artifacts"] = artifacts(run.pop("artifact_dir"))
        del run["id"]
    return scrub({
        "steps": record["steps"],
        "results": {scrub.text(k): v for k, v in sorted(results.items())},
        "mlflow": runs,
        "lm_requests": fake.log.get(name, []),
    })


def build_index(root: Path, work: Path, python: str) -> tuple[str, dict]:
    case_dir = work / "corpus-index"
    case_dir.mkdir(parents=True)
    env = _base_env(root)
    steps = [_step(python, _fill(argv, {"case": str(case_dir)}), root, env, case_dir / f"step{i}.log")
             for i, argv in enumerate(INDEX_STEPS)]
    index = case_dir / "hotpotqa-abstracts-index"
    files = {}
    for p in sorted(index.glob("*")) if index.is_dir() else []:
        value = read_file(p)
        if p.name == "corpus.json" and isinstance(value, dict):
            value = {k: v for k, v in value.items() if k not in INDEX_META_DROPPED}
        files[p.name] = value if p.suffix == ".json" and p.stat().st_size < 20_000 else \
            {"sha256": hashlib.sha256(p.read_bytes()).hexdigest()}
    return str(index), Scrubber({str(case_dir): "<CASE>"})({"steps": steps, "index_files": files})


def check_root(root: Path, python: str) -> None:
    """The checkout's own packages must be the ones imported (an editable install may point elsewhere)."""
    out = subprocess.run([python, "-c", "import eval; print(eval.__file__)"], cwd=root, capture_output=True, text=True,
                         env=_base_env(root))
    found = out.stdout.strip()
    if out.returncode or not Path(found).resolve().is_relative_to(root):
        raise SystemExit(f"error: `import eval` from {root} resolves to {found or out.stderr.strip()!r}, not the checkout")


def snapshot(root: Path, out: Path, jobs: int, only: list[str] | None, keep: bool) -> int:
    root = root.resolve()
    python = sys.executable
    check_root(root, python)
    names = only or list(CASES)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        raise SystemExit(f"error: unknown case(s) {', '.join(unknown)}; cases: {', '.join(CASES)}")
    before = set(os.listdir(root))
    work = Path(tempfile.mkdtemp(prefix="behaviour-snapshot-"))
    marker = work / "OWNER"  # gone at the end = the directory was removed under the running cases
    marker.write_text(f"pid {os.getpid()}: behaviour_snapshot.py --root {root}\n")
    fake = FakeLM(work)
    started = time.monotonic()
    try:
        replacements = {str(work): "<TMP>", fake.base: "<LM>", str(root): "<ROOT>", str(DATA.parent): "<DATA>"}
        print(f"snapshot of {root} in {work}", file=sys.stderr)
        cases, index = {}, ""
        if any("{index}" in arg for n in names for step in CASES[n] for arg in step):
            index, index_case = build_index(root, work, python)
            cases["corpus-index"] = Scrubber(replacements)(index_case)
        timings = {}
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = {n: pool.submit(run_case, root, n, CASES[n], work, fake, index, python) for n in names}
            for n in names:
                record = futures[n].result()
                timings[n] = record["seconds"]
                cases[n] = collect(n, record, work / n, fake, replacements)
                print(f"  {n}: {record['seconds']} s, {len(fake.log.get(n, []))} LM requests", file=sys.stderr)
        if not marker.exists():
            raise SystemExit(f"error: {work} was removed while the cases ran; no snapshot written (run it again)")
    finally:
        fake.close()
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    doc = {
        "format": FORMAT,
        "about": {"root": str(root), "commit": _git(root, "rev-parse", "HEAD"),
                  "dirty": bool(_git(root, "status", "--porcelain")),
                  "seconds": round(time.monotonic() - started, 1), "case_seconds": timings},
        "sha256": {n: _sha(c) for n, c in cases.items()},
        "cases": cases,
    }
    if new := sorted(set(os.listdir(root)) - before):
        print(f"warning: the runs wrote into the checkout: {', '.join(new)}", file=sys.stderr)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    failed = [n for n, c in cases.items() if any(s["exit"] for s in c["steps"])]
    print(f"wrote {out}: {len(cases)} cases in {doc['about']['seconds']} s"
          + (f"; failed steps in {', '.join(failed)} (exit 1)" if failed else ""), file=sys.stderr)
    return 1 if failed else 0


def _git(root: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else ""


def _sha(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


# ---------------------------------------------------------------------------------------------
# Comparing two snapshots.


def differences(a, b, path: str = "") -> list[str]:
    if type(a) is not type(b):
        return [f"{path or '.'}: {_short(a)} != {_short(b)}"]
    if isinstance(a, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            p = f"{path}.{k}" if path else str(k)
            if k not in a:
                out.append(f"{p}: only in B ({_short(b[k])})")
            elif k not in b:
                out.append(f"{p}: only in A ({_short(a[k])})")
            else:
                out += differences(a[k], b[k], p)
        return out
    if isinstance(a, list):
        out = [] if len(a) == len(b) else [f"{path}: {len(a)} items != {len(b)} items"]
        for i, (x, y) in enumerate(zip(a, b)):
            out += differences(x, y, f"{path}[{i}]")
        return out
    return [] if a == b else [f"{path or '.'}: {_short(a)} != {_short(b)}"]


def _short(value, limit: int = 120) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


SECTION_ORDER = ["steps", "results", "mlflow", "lm_requests"]  # exit codes first, the LM's requests last


def compare(a_path: Path, b_path: Path, max_lines: int) -> int:
    for path in (a_path, b_path):
        if not path.is_file():
            raise SystemExit(f"error: {path}: no such snapshot")
    a, b = json.loads(a_path.read_text()), json.loads(b_path.read_text())
    if a.get("format") != b.get("format"):
        print(f"snapshot formats differ: {a.get('format')} vs {b.get('format')} (made by different versions of this script)")
        return 1
    names = list(dict.fromkeys([*a["cases"], *b["cases"]]))
    differing = 0
    for n in names:
        if n not in a["cases"] or n not in b["cases"]:
            print(f"{n}: only in {'B' if n not in a['cases'] else 'A'}")
            differing += 1
            continue
        if a["sha256"][n] == b["sha256"][n] and a["cases"][n] == b["cases"][n]:
            print(f"{n}: identical")
            continue
        differing += 1
        ca, cb = a["cases"][n], b["cases"][n]
        sections = sorted(set(ca) | set(cb), key=lambda k: (SECTION_ORDER.index(k) if k in SECTION_ORDER else 99, k))
        lines, counts = [], []
        for k in sections:
            found = differences({k: ca.get(k)}, {k: cb.get(k)})
            lines += found
            counts += [f"{k} {len(found)}"] if found else []
        print(f"{n}: {len(lines)} differences ({', '.join(counts)})")
        for line in lines[:max_lines]:
            print(f"  {line}")
        if len(lines) > max_lines:
            print(f"  ... and {len(lines) - max_lines} more (--max-lines)")
    print(f"{differing} of {len(names)} cases differ" if differing else f"all {len(names)} cases identical")
    return 1 if differing else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=f"cases: {', '.join(CASES)}")
    p.add_argument("--root", type=Path, help="the checkout to run (its code is imported by the runs)")
    p.add_argument("--out", type=Path, help="where the snapshot JSON is written")
    p.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"), help="compare two snapshots; exit 1 if they differ")
    p.add_argument("--jobs", type=int, default=2, help="cases run at once (default 2)")
    p.add_argument("--cases", nargs="+", help="only these cases (for debugging a difference)")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, stores, results)")
    p.add_argument("--max-lines", type=int, default=20, help="--compare: differences printed per case")
    args = p.parse_args()
    if args.compare:
        return compare(*args.compare, args.max_lines)
    if not (args.root and args.out):
        p.error("give --root and --out, or --compare A B")
    return snapshot(args.root, args.out, args.jobs, args.cases, args.keep)


if __name__ == "__main__":
    sys.exit(main())
