"""The paper's grids at the paper's scale, rehearsed on a simulated API model: what a researcher will
pay in time, memory, disk and tokens, and proof that nothing is lost on the way.

    python benchmarks/rehearsal.py --out /tmp/rehearsal            # both grids at n = 100 and 1,000
    python benchmarks/rehearsal.py --out /tmp/r --n 3 6 --grids main  # CI-sized (tests/benchmarks/test_rehearsal.py)

For each n (questions per cell) it builds the data (HotpotQA: the 800 non-holdout dev questions with
contexts, padded with marked copies; 2Wiki and MuSiQue: all they have, as `--allow-fewer` runs them),
writes copies of grids/paper-main.toml and grids/paper-ablations.toml whose two LMs reach
benchmarks/simulated_endpoint.py (`--route`: through their api_base, or DSPy's own clients
redirected), and runs them as a user would: `eval.grid --dry-run`, `eval.grid` with --threads (its
comparison included), then every analysis of eval.analyze. At the largest n the first grid is killed
(SIGKILL) once part-way and resumed by running it again; its records are compared with the smaller
n's uninterrupted ones (every cell's first questions, the interrupted ones among them: `--kill-within`),
and with --identity with a rerun of the largest n. Per stage it prints wall and CPU time, peak memory
and sizes; per grid and cell the dry run's call, token and dollar bounds against what the records
counted. Writes report.md, summary.json and each grid's result as soon as it is measured. A benchmark:
it prints numbers and asserts nothing about time (docs/experiments.md, "Rehearsing a grid").
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import tomllib
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GRIDS = {"main": ROOT / "grids" / "paper-main.toml", "ablations": ROOT / "grids" / "paper-ablations.toml"}
HOTPOT_FILES = ("hotpot_dev_distractor.rpt_sample500_seed1.jsonl", "hotpot_dev_distractor.rpt_sample300_seed2.jsonl")
OTHER_FILES = {"2wiki": "2wikimultihopqa/2wikimultihopqa_dev_first200.flashrag.jsonl",
               "musique": "musique/musique_ans_v1.0_dev_sample100.kag.json"}
# Analyses that call the LM re-answer through the runs' own LM (the simulated endpoint here).
ANALYSES = ("availability", "added-support", "model-selected", "table16", "extra-retrieval", "final-vs-submitted",
            "totals", "calls-after-support", "rejections", "parse-failures", "support")
# What differs between two runs of the same questions without being behaviour: time and cache.
TIMING_KEYS = frozenset({"seconds", "latency", "latency_s", "part_started_at", "finished_at", "run_id",
                         "cache_hit", "cache_hits"})


# ---------------------------------------------------------------- data and grid files


def build_data(data_dir: Path, out: Path, n: int) -> dict[str, Path]:
    """Each dataset's file for a rehearsal at n questions per cell. HotpotQA: the non-holdout dev
    samples (never the acceptance holdout), then marked copies (id `~copyK`, question text
    `(rehearsal copy K)`) up to n, so every HotpotQA cell runs n; the others as they are."""
    out.mkdir(parents=True, exist_ok=True)
    records, seen = [], set()
    for name in HOTPOT_FILES:
        for line in (data_dir / "hotpotqa" / name).read_text().splitlines():
            if line.strip():
                record = json.loads(line)
                if record["id"] not in seen:
                    seen.add(record["id"])
                    records.append(record)
    real = len(records)
    copy = 1
    while len(records) < n:
        for record in records[:real]:
            if len(records) >= n:
                break
            records.append({**record, "id": f"{record['id']}~copy{copy + 1}",
                            "question": f"{record['question']} (rehearsal copy {copy + 1})"})
        copy += 1
    path = out / f"hotpotqa_rehearsal_{len(records)}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return {"hotpotqa": path, **{d: data_dir / f for d, f in OTHER_FILES.items()}}


def grid_copy(template: Path, out: Path, *, experiment: str, n: int, url: str, threads: int, timeout: float,
              data: dict[str, Path], route: str = "api-base") -> Path:
    """The grid file as a researcher would point it at an endpoint: its LMs' api_base (route `api-base`;
    the `native` route keeps the LMs as they are and redirects their requests, `_env`), more threads."""
    text = template.read_text()
    grid = tomllib.loads(text)
    text = re.sub(r'(?m)^experiment = ".*"$', f'experiment = "{experiment}"', text)
    text = re.sub(r"(?m)^n = \d+$", f"n = {n}", text)
    text = re.sub(r"(?m)^threads = \d+$", f"threads = {threads}\nrequest_timeout = {timeout}", text)
    for entry in grid["lms"] if route == "api-base" else ():
        base = f"{url}/v1" if entry["lm"].startswith("openai/") else url
        text = text.replace(f'lm = "{entry["lm"]}",', f'lm = "{entry["lm"]}", api_base = "{base}",')
    data_line = "data = { " + ", ".join(f'{d} = "{p}"' for d, p in data.items()) + " }\n"
    text = text.replace("\n[run]", f"\n{data_line}\n[run]", 1)
    path = out / template.name
    path.write_text(text)
    return path


# ---------------------------------------------------------------- processes


@dataclass
class Stage:
    name: str
    wall_s: float = 0.0
    cpu_s: float = 0.0
    peak_rss_mb: float = 0.0
    marks: dict = field(default_factory=dict)  # wall and CPU seconds when a line first appeared
    returncodes: list = field(default_factory=list)

    def add(self, other: Stage) -> None:
        self.wall_s += other.wall_s
        self.cpu_s += other.cpu_s
        self.peak_rss_mb = max(self.peak_rss_mb, other.peak_rss_mb)
        self.returncodes += other.returncodes
        for k, v in other.marks.items():
            self.marks.setdefault(k, v)


def run(name: str, argv: list[str], *, env: dict, cwd: Path, log: Path, marks: dict[str, str] | None = None,
        kill_when=None) -> Stage:
    """One command: wall, CPU (user + sys, from wait4) and peak RSS; `marks` name output lines whose
    first appearance is timed (wall and CPU so far); `kill_when()` true kills it (SIGKILL, its group)."""
    stage = Stage(name)
    t0 = time.perf_counter()
    with log.open("a") as sink:
        sink.write(f"\n$ {' '.join(argv)}\n")
        sink.flush()
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True, bufsize=1)
        killed = threading.Event()

        def watch() -> None:
            while proc.poll() is None and kill_when is not None:
                if kill_when():
                    os.killpg(proc.pid, signal.SIGKILL)
                    killed.set()
                    return
                time.sleep(0.5)

        threading.Thread(target=watch, daemon=True).start()
        for line in proc.stdout:
            sink.write(line)
            for mark, pattern in (marks or {}).items():
                if mark not in stage.marks and pattern in line:
                    stage.marks[mark] = {"wall_s": time.perf_counter() - t0, "cpu_s": _cpu(proc.pid)}
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    stage.wall_s = time.perf_counter() - t0
    stage.cpu_s = usage.ru_utime + usage.ru_stime
    stage.peak_rss_mb = usage.ru_maxrss / 1024
    stage.returncodes.append("killed" if killed.is_set() else proc.returncode)
    return stage


def split_at_compare(processes: list[Stage]) -> tuple[Stage, Stage]:
    """eval.grid's processes (the killed one and its resume) as two stages: running the cells, and
    the comparison it runs at the end (from the line that starts it)."""
    runs, comparison = Stage("runs"), Stage("comparison")
    for p in processes:
        mark = p.marks.get("compare")
        if mark is None or mark["cpu_s"] is None:
            runs.add(Stage("runs", p.wall_s, p.cpu_s, p.peak_rss_mb, returncodes=p.returncodes))
            continue
        runs.add(Stage("runs", mark["wall_s"], mark["cpu_s"], p.peak_rss_mb, returncodes=p.returncodes))
        comparison.add(Stage("comparison", p.wall_s - mark["wall_s"], p.cpu_s - mark["cpu_s"], p.peak_rss_mb))
    return runs, comparison


def _cpu(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


class Endpoint:
    """benchmarks/simulated_endpoint.py in its own process (its CPU is not the harness's)."""

    def __init__(self, data: dict[str, Path], args: argparse.Namespace, log: Path) -> None:
        argv = [sys.executable, str(ROOT / "benchmarks" / "simulated_endpoint.py"),
                "--data", *[f"{d}={p}" for d, p in data.items()], "--seed", str(args.seed),
                "--latency", str(args.latency), "--faults", str(args.faults), "--hang", str(args.hang)]
        self.log = log.open("a")
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.log, text=True, env=_env(None))
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http"):
            raise SystemExit(f"the simulated endpoint did not start; see {log}")

    def stats(self) -> dict:
        with urllib.request.urlopen(f"{self.url}/stats", timeout=10) as response:
            return json.loads(response.read())

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.log.close()


def _env(home: Path | None, native_url: str | None = None) -> dict:
    """The rehearsal's processes' environment; `native_url`: DSPy's native requests go there
    (benchmarks/native_route/sitecustomize.py), as a run without --api-base sends them to the provider."""
    route = f"{ROOT / 'benchmarks' / 'native_route'}{os.pathsep}" if native_url else ""
    env = {**os.environ, "PYTHONPATH": f"{route}{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "OPENAI_API_KEY": "sk-simulated", "ANTHROPIC_API_KEY": "sk-simulated",  # never a real key to the endpoint
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONUNBUFFERED": "1"}
    if home is not None:
        env["MLFLOW_TRACKING_URI"] = f"sqlite:///{home / 'mlflow.db'}"
        env["DSPY_CACHEDIR"] = str(home / "dspy-cache")  # a fresh response cache per rehearsal
    if native_url:
        env["EIR_REHEARSAL_ENDPOINT"] = native_url  # DSPy's own clients
        env["ANTHROPIC_BASE_URL"] = native_url  # a model DSPy hands to LiteLLM (its providers read these)
        env["OPENAI_BASE_URL"] = f"{native_url}/v1"
    return env


# ---------------------------------------------------------------- reading what was written


def records_by_cell(home: Path, experiment: str) -> dict:
    """{"records": run name (variant / dataset / LM / H) -> question id -> the record a resume would keep
    (eval's own reader), "durations": run name -> its MLflow wall seconds}."""
    code = f"""
import json, sys, mlflow
from pathlib import Path
from eval.files.results_file import read_run_records
exp = mlflow.get_experiment_by_name({experiment!r})
out, durations = {{}}, {{}}
for run in mlflow.search_runs(experiment_ids=[exp.experiment_id], output_format="list") if exp else []:
    tags = run.data.tags
    cell, path = tags.get("eir.grid_cell"), tags.get("eir.results_path")
    if not cell or not path or not Path(path).is_file():
        continue
    ids = {{run.info.run_id, tags.get("eir.variant_of") or run.info.run_id}}
    records = read_run_records(Path(path).read_text(errors="replace"), ids).records
    out[run.info.run_name] = records  # variant / dataset / LM / H: the cell, whatever its endpoint's URL
    if run.info.end_time:
        durations[run.info.run_name] = (run.info.end_time - run.info.start_time) / 1000
json.dump({{"records": out, "durations": durations}}, sys.stdout)
"""
    done = subprocess.run([sys.executable, "-c", code], env=_env(home), cwd=home, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"reading the records of {experiment} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def cell_seconds(read: dict) -> dict[str, dict]:
    """Each run's wall seconds (MLflow start to end) and questions: a cell's time per question at this n."""
    return {run: {"seconds": read["durations"][run], "questions": len(records)}
            for run, records in read["records"].items() if run in read["durations"]}


def without_timing(value):
    if isinstance(value, dict):
        return {k: without_timing(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [without_timing(v) for v in value]
    return value


def differences(a: dict, b: dict) -> list[str]:
    """Every (run, question) whose record differs beyond timing and cache flags, or is in one only."""
    out = []
    for run in sorted(set(a) | set(b)):
        ra, rb = a.get(run, {}), b.get(run, {})
        for qid in sorted(set(ra) | set(rb)):
            if qid not in ra or qid not in rb:
                out.append(f"{run}: {qid} only in {'the first' if qid in ra else 'the second'}")
            elif without_timing(ra[qid]) != without_timing(rb[qid]):
                keys = sorted(k for k in set(ra[qid]) | set(rb[qid]) if k not in TIMING_KEYS
                              and without_timing(ra[qid].get(k)) != without_timing(rb[qid].get(k)))
                out.append(f"{run}: {qid} differs in {', '.join(keys)}")
    return out


def counted(records: dict[str, dict[str, dict]], bound: dict) -> dict:
    """What the records counted per run, in all (each cell once: its main run, as a Reflexion run's first-trial
    variant repeats part of its calls), and every cell whose count exceeds the dry run's bound for it."""
    keys = ("calls", "prompt_tokens", "completion_tokens", "cost_usd")
    per = {}
    for run, by_id in records.items():
        rows = list(by_id.values())
        per[run] = {"questions": len(rows), "errors": sum(r.get("error") is not None for r in rows),
                    **{k: sum(r.get(k) or 0 for r in rows) for k in keys}}
    cells = {_cell_name(c["title"]): c for c in bound.get("per_cell", [])}
    per = {_cell_name(run): v for run, v in per.items()}
    mains = [run for run in per if run in cells] or list(per)
    total = {k: sum(per[run][k] for run in mains) for k in ("questions", "errors", *keys)}
    over = [f"{run}: {k} {per[run][k]:,} > bound {cells[run][k]:,}" for run in mains if run in cells
            for k in ("calls", "prompt_tokens", "completion_tokens")
            if cells[run].get(k) is not None and per[run][k] > cells[run][k]]
    return {"runs": per, "total": total, "over_bound": over}


def _cell_name(title: str) -> str:
    """A cell's title as its run is named: a variant naming its H (`eir H=4`) leaves the ` / H=4` off."""
    variant, _, rest = title.partition(" / ")
    return re.sub(r" / H=\d+$", "", title) if re.search(r"\bH=\d+", variant) else title


def identity(killed: Path, clean: Path, grids: list[str], subset: bool) -> dict:
    """The killed-and-resumed rehearsal's records against an uninterrupted one's: every record of the
    clean one (subset: only those, as a smaller n runs each cell's first questions) must be equal."""
    diffs, compared = [], 0
    for name in grids:
        a = json.loads((killed / f"records-{name}.json").read_text())
        b = json.loads((clean / f"records-{name}.json").read_text())
        if subset:
            a = {run: {q: r for q, r in by.items() if q in b.get(run, {})} for run, by in a.items() if run in b}
        compared += sum(len(v) for v in b.values())
        diffs += differences(a, b)
    return {"compared": compared, "differences": diffs}


def size_mb(path: Path, exclude: tuple[str, ...] = ()) -> float:
    if not path.exists():
        return 0.0
    if path.is_file():
        return path.stat().st_size / 2 ** 20
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()
               and not any(part in exclude for part in p.relative_to(path).parts)) / 2 ** 20


def dry_run(grid: Path, env: dict, cwd: Path) -> dict:
    code = ("import json, sys, contextlib, io\nfrom eval.grid.__main__ import main\n"
            "buf = io.StringIO()\nwith contextlib.redirect_stdout(buf):\n"
            f"    out = main([{str(grid)!r}, '--dry-run', '--allow-fewer'])\n"
            "print(json.dumps(out, default=str))")
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"the dry run of {grid} failed:\n{done.stderr[-2000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out["wall_s"] = time.perf_counter() - t0
    return out


# ---------------------------------------------------------------- one rehearsal


def rehearse(args: argparse.Namespace, n: int, home: Path, *, kill: bool) -> dict:
    """Both grids at n questions per cell in `home` (fresh): stages, sizes, counts, bounds."""
    home.mkdir(parents=True, exist_ok=True)
    log = home / "rehearsal.log"
    # One HotpotQA file for every n: its seeded order is the same, so a cell's first 100 questions at
    # n = 1000 are the questions of the same cell at n = 100 (their records can be compared).
    data = build_data(Path(args.data_dir), home / "data", max(args.n))
    endpoint = Endpoint(data, args, home / "endpoint.log")
    env = _env(home, endpoint.url if args.route == "native" else None)
    result: dict = {"n": n, "home": str(home), "route": args.route, "grids": {}}
    try:
        for name in args.grids:
            experiment = f"rehearsal-{name}"
            grid = grid_copy(GRIDS[name], home, experiment=experiment, n=n, url=endpoint.url, threads=args.threads,
                             timeout=args.request_timeout, data=data, route=args.route)
            bound = dry_run(grid, env, home)
            command = [sys.executable, "-m", "eval.grid", str(grid), "--allow-fewer"]
            marks = {"compare": "python -m eval.compare"}
            before = endpoint.stats()
            total_questions = _grid_questions(grid, n)
            kill_when = None
            if kill and name == args.grids[0]:
                kill_when = _kill_after(home, args.kill_at, total_questions, args.kill_within or min(args.n),
                                        args.threads)
            first = run(f"{name}: eval.grid", command, env=env, cwd=home, log=log, marks=marks, kill_when=kill_when)
            processes = [first]
            resumed = None
            if first.returncodes[-1] == "killed":
                resumed = run(f"{name}: eval.grid (resumed)", command, env=env, cwd=home, log=log, marks=marks)
                processes.append(resumed)
            runs, comparison = split_at_compare(processes)
            after = endpoint.stats()
            analyses = {}
            for analysis in args.analyses:
                argv = [sys.executable, "-m", "eval.analyze", analysis, "--experiment", experiment,
                        "--threads", str(args.threads), "--out", str(home / "analyses" / name)]
                analyses[analysis] = asdict(run(f"{name}: analyze {analysis}", argv, env=env, cwd=home, log=log))
            after_analyses = endpoint.stats()
            read = records_by_cell(home, experiment)
            records = read["records"]
            result["grids"][name] = {
                "dry_run": bound, "questions_planned": total_questions,
                "runs": asdict(runs), "comparison": asdict(comparison), "resumed": asdict(resumed) if resumed else None,
                "analyses": analyses, "counted": counted(records, bound), "cells": cell_seconds(read),
                "endpoint": {"grid": _delta(before, after), "analyses": _delta(after, after_analyses)},
            }
            (home / f"records-{name}.json").write_text(json.dumps(records))
            (home / f"grid-{name}.json").write_text(json.dumps(result["grids"][name], indent=1))  # kept if a later step dies
        result["sizes_mb"] = {"mlflow_store": size_mb(home, exclude=("runs", "dspy-cache", "data", "analyses"))
                              - size_mb(log) - size_mb(home / "endpoint.log"),
                              "results_files": size_mb(home / "runs"), "dspy_cache": size_mb(home / "dspy-cache"),
                              "analysis_outputs": size_mb(home / "analyses")}
    finally:
        endpoint.close()
    return result


def _grid_questions(grid: Path, n: int) -> int:
    """The questions the grid runs in all: cells (methods x budgets x LMs) x each dataset's questions."""
    spec = tomllib.loads(grid.read_text())
    sizes = {"hotpotqa": n, "2wiki": min(n, 200), "musique": min(n, 100)}
    entries = sum(len(m.get("budgets", spec.get("budgets", [6]))) for m in spec["methods"])
    return entries * len(spec["lms"]) * sum(sizes[d] for d in spec["datasets"])


def _kill_after(home: Path, share: float, total: int, first: int, threads: int):
    """True once `share` of the grid's questions have a line in a results file and the cell running has
    saved between a few and `first` - `threads` questions: the questions the kill interrupts are then
    among every cell's `first` questions, the ones a rehearsal at n = `first` runs too (compared)."""
    target = max(1, int(share * total))
    low, high = max(1, min(10, first // 4)), first - threads

    def due() -> bool:
        counts = {}
        for path in (home / "runs").rglob("results.jsonl"):
            with path.open("rb") as f:
                counts[path] = sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
        if sum(counts.values()) < target:
            return False
        newest = max(counts, key=lambda p: p.stat().st_mtime)
        return low <= counts[newest] <= high or high < low

    return due


def _delta(a: dict, b: dict) -> dict:
    return {"requests": b["requests"] - a["requests"], "answered": b["answered"] - a["answered"],
            "prompt_tokens": b["prompt_tokens"] - a["prompt_tokens"],
            "completion_tokens": b["completion_tokens"] - a["completion_tokens"],
            "faults": {k: b["faults"][k] - a["faults"][k] for k in b["faults"]}, "unplaced": b["unplaced"]}


# ---------------------------------------------------------------- the report


def report(summary: dict) -> str:
    lines = ["| n | grid | stage | wall s | CPU s | peak RSS MB | questions | calls | harness CPU ms/call |",
             "|---|---|---|---|---|---|---|---|---|"]
    for rehearsal in summary["rehearsals"]:
        for name, g in rehearsal["grids"].items():
            runs, comparison, total = g["runs"], g["comparison"], g["counted"]["total"]
            dry = g["dry_run"]
            lines.append(f"| {rehearsal['n']} | {name} | dry run | {dry['wall_s']:.1f} | | | | | |")
            lines.append(f"| {rehearsal['n']} | {name} | runs{' (killed once, resumed)' if g['resumed'] else ''} "
                         f"| {runs['wall_s']:.0f} | {runs['cpu_s']:.0f} | {runs['peak_rss_mb']:.0f} | {total['questions']:,} "
                         f"| {total['calls']:,} | {1000 * runs['cpu_s'] / max(1, total['calls']):.2f} |")
            lines.append(f"| {rehearsal['n']} | {name} | comparison and plots (eval.grid's eval.compare) "
                         f"| {comparison['wall_s']:.0f} | {comparison['cpu_s']:.0f} | | | | |")
            wall = sum(a["wall_s"] for a in g["analyses"].values())
            cpu = sum(a["cpu_s"] for a in g["analyses"].values())
            peak = max((a["peak_rss_mb"] for a in g["analyses"].values()), default=0)
            lines.append(f"| {rehearsal['n']} | {name} | {len(g['analyses'])} analyses | {wall:.0f} | {cpu:.0f} "
                         f"| {peak:.0f} | | {g['endpoint']['analyses']['requests']:,} | |")
    lines += ["", "| n | grid | questions | lost | calls ≤ (dry run) | calls counted | prompt tok ≤ | prompt tok counted "
              "| completion tok ≤ | completion tok counted | USD ≤ | USD counted | cells over a bound | faults served |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for rehearsal in summary["rehearsals"]:
        for name, g in rehearsal["grids"].items():
            total, bound, served = g["counted"]["total"], g["dry_run"], g["endpoint"]["grid"]
            lines.append(f"| {rehearsal['n']} | {name} | {total['questions']:,} | {total['errors']} "
                         f"| {bound.get('calls', 0):,} | {total['calls']:,} | {_num(bound.get('prompt_tokens'))} "
                         f"| {total['prompt_tokens']:,} | {_num(bound.get('completion_tokens'))} "
                         f"| {total['completion_tokens']:,} | {_usd(bound.get('usd'))} | {_usd(total['cost_usd'])} "
                         f"| {len(g['counted']['over_bound'])} | {sum(served['faults'].values())} {served['faults']} |")
    lines += ["", "| n | MLflow store MB | results files MB | DSPy cache MB | analysis outputs MB |", "|---|---|---|---|---|"]
    for rehearsal in summary["rehearsals"]:
        s = rehearsal["sizes_mb"]
        lines.append(f"| {rehearsal['n']} | {s['mlflow_store']:.1f} | {s['results_files']:.1f} | {s['dspy_cache']:.1f} "
                     f"| {s['analysis_outputs']:.1f} |")
    lines += linearity(summary["rehearsals"])
    for label in ("identity", "identity_full"):
        if label in summary:
            ident = summary[label]
            lines += ["", f"Killed-and-resumed rehearsal vs {ident['against']}: {ident['compared']:,} records compared, "
                          f"{len(ident['differences'])} differ" + "".join(f"\n  {d}" for d in ident["differences"][:20])]
    return "\n".join(lines)


def linearity(rehearsals: list[dict]) -> list[str]:
    """Each stage's cost per question at the smallest and the largest n (linear: the same per question)."""
    if len(rehearsals) < 2:
        return []
    small, large = rehearsals[0], rehearsals[-1]
    lines = ["", f"| grid | per question | n = {small['n']} | n = {large['n']} | ratio |", "|---|---|---|---|---|"]
    for name in large["grids"]:
        if name not in small["grids"]:
            continue
        a, b = small["grids"][name], large["grids"][name]
        qa, qb = a["counted"]["total"]["questions"], b["counted"]["total"]["questions"]
        rows = {"runs, CPU ms": (a["runs"]["cpu_s"], b["runs"]["cpu_s"]),
                "comparison, CPU ms": (a["comparison"]["cpu_s"], b["comparison"]["cpu_s"]),
                "analyses, CPU ms": (sum(x["cpu_s"] for x in a["analyses"].values()),
                                     sum(x["cpu_s"] for x in b["analyses"].values()))}
        for label, (x, y) in rows.items():
            if x and y:
                lines.append(f"| {name} | {label} | {1000 * x / qa:.1f} | {1000 * y / qb:.1f} | {(y / qb) / (x / qa):.2f} |")
        hot = [run for run in b["cells"] if " / hotpotqa / " in run and run in a["cells"]]
        if hot:
            x = sum(a["cells"][r]["seconds"] for r in hot) / sum(a["cells"][r]["questions"] for r in hot)
            y = sum(b["cells"][r]["seconds"] for r in hot) / sum(b["cells"][r]["questions"] for r in hot)
            lines.append(f"| {name} | HotpotQA cells' wall, ms ({len(hot)} runs) | {1000 * x:.1f} | {1000 * y:.1f} "
                         f"| {y / x:.2f} |")
    return lines


def _usd(value) -> str:
    return f"{value:,.2f}" if isinstance(value, (int, float)) else "–"


def _num(value) -> str:
    return f"{value:,}" if isinstance(value, int) else "–"


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="a new directory for everything the rehearsal writes")
    p.add_argument("--data-dir", default=os.environ.get("EIR_DATA_DIR", str(ROOT.parent / "shared" / "data" / "raw")))
    p.add_argument("--n", type=int, nargs="+", default=[100, 1000], help="questions per cell, one rehearsal each")
    p.add_argument("--grids", nargs="+", choices=tuple(GRIDS), default=list(GRIDS))
    p.add_argument("--analyses", nargs="*", default=list(ANALYSES))
    p.add_argument("--threads", type=int, default=16)
    p.add_argument("--route", choices=("api-base", "native"), default="api-base",
                   help="api-base: the grid's LMs get the endpoint as api_base (LiteLLM's providers, as for any "
                        "OpenAI-compatible server); native: the LMs as the paper grid names them, DSPy's own "
                        "clients, their requests redirected to the endpoint (as a run against the APIs takes)")
    p.add_argument("--latency", type=float, default=0.05, help="the endpoint's seconds per call")
    p.add_argument("--faults", type=float, default=0.01, help="share of requests that fault")
    p.add_argument("--hang", type=float, default=20.0, help="seconds a hung request holds on (> --request-timeout)")
    p.add_argument("--request-timeout", type=float, default=10.0)
    p.add_argument("--kill-at", type=float, default=0.4, help="share of the first grid's questions after which it is killed")
    p.add_argument("--kill-within", type=int, default=None, metavar="N",
                   help="kill while the running cell is within its first N questions (default: the smallest --n), "
                        "so an uninterrupted rehearsal at n = N holds every interrupted question")
    p.add_argument("--no-kill", action="store_true")
    p.add_argument("--identity", action="store_true",
                   help="also run the largest n uninterrupted and compare every record (the smaller n is always compared)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    out = Path(args.out).resolve()
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"--out {out} is not empty: a rehearsal starts from nothing")
    out.mkdir(parents=True, exist_ok=True)
    summary: dict = {"args": vars(args), "rehearsals": []}
    largest = max(args.n)
    for n in sorted(args.n):
        kill = n == largest and not args.no_kill
        print(f"rehearsal at n = {n}{' (killed once, resumed)' if kill else ''} in {out / f'n{n}'}", flush=True)
        summary["rehearsals"].append(rehearse(args, n, out / f"n{n}", kill=kill))
        (out / "summary.json").write_text(json.dumps(summary, indent=1))
    killed = out / f"n{largest}"
    smaller = [n for n in args.n if n < largest]
    if smaller and not args.no_kill:  # every cell's first questions, the interrupted ones among them
        small = min(smaller)
        summary["identity"] = identity(killed, out / f"n{small}", args.grids[:1], subset=True)
        summary["identity"]["against"] = f"n = {small}, uninterrupted (each cell's first {small} questions)"
    if args.identity:
        print(f"uninterrupted rehearsal at n = {largest} in {out / f'n{largest}-uninterrupted'}", flush=True)
        clean_args = argparse.Namespace(**{**vars(args), "analyses": [], "grids": args.grids[:1]})
        rehearse(clean_args, largest, out / f"n{largest}-uninterrupted", kill=False)
        summary["identity_full"] = identity(killed, out / f"n{largest}-uninterrupted", args.grids[:1], subset=False)
        summary["identity_full"]["against"] = f"n = {largest}, uninterrupted (every question)"
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    text = report(summary)
    (out / "report.md").write_text(text + "\n")
    print(text)
    return summary


if __name__ == "__main__":
    main()
