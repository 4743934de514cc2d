"""The harness's own CPU time per LM call: everything `python -m eval.run` does around a model call
against an API (DSPy's adapter, engine and cache, LiteLLM, the decoding adapter, acceptance, the ledger,
records, result files, MLflow, progress bars), with the model's latency left out.

    EIR_DATA_DIR=../shared/data/raw python benchmarks/harness_overhead.py \\
        --methods eir direct full_pool --n 20 100 --threads 16 --repeat 2 [--route native] \\
        [--roots /tmp/base-export .]

A fake OpenAI-compatible server (tests/fake_openai.py `FakeOpenAI`, HTTP/1.1 keep-alive) runs in this
process and answers after `--delay` seconds like a plausible agent (scripts/behaviour_snapshot_lm.py's
replies: reads a few titles, cites, submits, answers; SSR's decompose/verify/refine; Reflexion's
reflections), so each question makes several calls. Each cell (root, method, N, repeat) is a child
process that imports eval.run and calls its `main` with `--lm openai/gpt-4.1-mini --threads T --limit N`
on HotpotQA rpt_sample500_seed1 (never the holdout), a fresh DSPy cache directory (every call a miss, as
in a first run against the API) and one MLflow sqlite store per invocation (made by a warm-up cell, as
a researcher's store exists before the grid). The server's CPU is this process's: none of it is counted.

Two routes to the fake server, which take different code paths in DSPy:
  litellm  `--api-base URL`: eval.run sends an OpenAI-compatible server `extra_body` (max_tokens, for
           llama.cpp), which DSPy's native engine refuses, so every call goes through LiteLLM.
  native   no --api-base, as a run against OpenAI itself: DSPy's own engine (its bundled lm15 client)
           sends the request, which this benchmark redirects from api.openai.com to the fake server.
`--roots` runs the same cells on several checkouts back to back (an export of an earlier commit with
this file copied in, then this checkout), so before and after are measured on the same load.

Per cell it prints the calls (requests the server answered), wall seconds of `main`, and the child's
CPU (getrusage RUSAGE_SELF, user + sys, all threads) split into:
  import   `import eval.run` (and everything it pulls in)
  setup    main's own work before the questions (MLflow run set-up, data, program) and after them
  loop     eval.runs' run_questions (questions.py) and score_and_log (report.py): the questions on the thread pool, then
           the run's results logged to MLflow (per-question tables, trajectories, the results file)
and `loop ms/call` = loop CPU / calls. Across N it also prints the marginal CPU per call,
(CPU(N2) - CPU(N1)) / (calls(N2) - calls(N1)) over the whole process, which needs no split.
Profiles: --profile DIR writes a cProfile (thread CPU time) of every thread of the loop, merged;
--py-spy DIR samples each cell with py-spy (`pip install py-spy`) in collapsed-stack form, only the
thread holding the GIL (py-spy samples wall time: on a loaded machine a descheduled thread still counts).
Numbers only: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("EIR_DATA_DIR", ROOT.parent / "shared" / "data" / "raw"))
DEV = "hotpotqa/hotpot_dev_distractor.rpt_sample500_seed1.jsonl"  # the dev sample, never the acceptance holdout
METHODS = ("eir", "direct", "full_pool", "ssr")
LMS = ("openai/gpt-4.1-mini", "anthropic/claude-haiku-4-5")  # the paper grid's API models


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# ---------------------------------------------------------------------------------------------
# The fake server (this process)

def agent_reply(prompt: str) -> dict:
    """The behaviour snapshot's plausible agent, on FakeOpenAI's joined prompt: the system message
    comes first (its output-field list is read from it), the user message last (a field's last
    `[[ ## name ## ]]` section is its value)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from behaviour_snapshot_lm import reply

    _, out = reply({"messages": [{"role": "system", "content": prompt}, {"role": "user", "content": prompt}]})
    return out


class Server:
    """FakeOpenAI on loopback, with HTTP/1.1 keep-alive as an API's pooled connections have. A request in
    Anthropic's Messages form (a top-level `system`) is answered in that form, from the same agent."""

    def __init__(self, delay: float) -> None:
        sys.path.insert(0, str(ROOT))
        from tests.fake_openai import FakeOpenAI

        class Fake(FakeOpenAI):
            def _respond(self, body: dict, authorization: str) -> tuple[int, dict]:
                if "system" not in body:
                    return super()._respond(body, authorization)
                system = body["system"] if isinstance(body["system"], str) else \
                    "".join(p.get("text", "") for p in body["system"])
                status, out = super()._respond({**body, "messages": [{"role": "system", "content": system},
                                                                     *body.get("messages", [])]}, authorization)
                text, usage = out["choices"][0]["message"]["content"], out["usage"]
                return status, {"id": out["id"], "type": "message", "role": "assistant", "model": out["model"],
                                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                                "stop_sequence": None, "usage": {"input_tokens": usage["prompt_tokens"],
                                                                 "output_tokens": usage["completion_tokens"]}}

        self.fake = Fake(agent_reply, delay=delay)
        self.fake.server.RequestHandlerClass.protocol_version = "HTTP/1.1"

    def __enter__(self) -> Server:
        self.fake.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.fake.__exit__(*exc)

    @property
    def calls(self) -> int:
        return len(self.fake.requests)


# ---------------------------------------------------------------------------------------------
# One cell (a child process)

def cell(args: argparse.Namespace) -> None:
    """Run eval.run's main once and print one JSON line of timings."""
    t0, c0 = time.perf_counter(), cpu_s()
    import eval.run
    import eval.runs.lifecycle as lifecycle

    c_import = cpu_s() - c0
    loop = {"cpu": 0.0, "wall": 0.0}
    profiler = Profile() if args.profile else None

    def timed(real):  # the question loop and the results logging after it, summed over the two steps
        def measured(*a, **kw):
            l0, w0 = cpu_s(), time.perf_counter()
            if profiler:
                profiler.start()
            try:
                return real(*a, **kw)
            finally:
                if profiler:
                    profiler.stop()
                loop["cpu"] += cpu_s() - l0
                loop["wall"] += time.perf_counter() - w0
        return measured

    # run_questions, then score_and_log; a checkout from before issue 44 did both in run_questions.
    for step in ("run_questions", "score_and_log"):
        if hasattr(lifecycle, step):
            setattr(lifecycle, step, timed(getattr(lifecycle, step)))
    if args.route == "native":
        send_api_calls_to(args.url)
    route = ["--api-base", args.url] if args.route == "litellm" else []
    m0, w0 = cpu_s(), time.perf_counter()
    argv = ["--method", args.method, "--lm", args.lm, *route, "--threads", str(args.threads),
            "--limit", str(args.n), "--data", str(DATA / DEV), "--experiment", "harness-overhead",
            "--out", args.out, *args.extra]
    with contextlib.redirect_stdout(io.StringIO()):  # the run's table
        result = eval.run.main(argv)
    c_main, wall = cpu_s() - m0, time.perf_counter() - w0
    if profiler:
        profiler.dump(Path(args.profile) / f"{args.route}-{args.method}-n{args.n}-r{args.rep}.prof")
    records = result["records"]
    print(json.dumps({
        "method": args.method, "n": len(records), "ledger_calls": sum(r["calls"] for r in records),
        "failed": sum(r["error"] is not None for r in records),
        "import_cpu": c_import, "main_cpu": c_main, "loop_cpu": loop["cpu"], "loop_wall": loop["wall"],
        "main_wall": wall, "process_cpu": cpu_s(), "process_wall": time.perf_counter() - t0,
    }), flush=True)


APIS = ("https://api.openai.com/v1", "https://api.anthropic.com/v1")


def send_api_calls_to(url: str) -> None:
    """Send DSPy's native OpenAI and Anthropic requests (its bundled lm15 transport) to `url` instead of
    the provider's address: the measurement's one stand-in, below everything the harness does per call
    (TLS aside)."""
    import dataclasses

    from dspy._vendor.lm15.transports._sync import StdlibTransport

    real = StdlibTransport.stream

    def stream(self, request):
        api = next((a for a in APIS if request.url.startswith(a)), None)
        if api:
            request = dataclasses.replace(request, url=url + request.url[len(api):])
        return real(self, request)

    StdlibTransport.stream = stream


class Profile:
    """cProfile of every thread (threading.setprofile gives each new thread its own profiler; the
    pool's threads start inside the loop), merged into one pstats file."""

    def __init__(self) -> None:
        import cProfile
        import threading

        self._cprofile, self._threading = cProfile, threading
        self.profiles: list = []

    def _start_thread(self, *_):
        import sys as _sys

        p = self._cprofile.Profile(time.thread_time)  # CPU, not the wall time a thread spends waiting
        self.profiles.append(p)
        _sys.setprofile(None)
        p.enable()

    def start(self) -> None:
        self._threading.setprofile(lambda *a: self._start_thread())
        main = self._cprofile.Profile(time.thread_time)
        self.profiles.append(main)
        main.enable()

    def stop(self) -> None:
        self._threading.setprofile(None)
        for p in self.profiles:
            p.disable()

    def dump(self, path: Path) -> None:
        import pstats

        path.parent.mkdir(parents=True, exist_ok=True)
        stats = None
        for p in self.profiles:
            try:
                stats = pstats.Stats(p) if stats is None else (stats.add(p) or stats)
            except TypeError:  # a profile with no entries
                continue
        if stats is not None:
            stats.dump_stats(str(path))


# ---------------------------------------------------------------------------------------------
# The driver

def run_cell(server: Server, work: Path, root: Path, method: str, n: int, threads: int, rep: int, route: str,
             lm: str, extra: list[str], profile: str | None = None, spy: str | None = None,
             requests: str | None = None) -> dict:
    """One cell in a child process running `root`'s code (its eval.run, its harness)."""
    cache = Path(tempfile.mkdtemp(prefix="dspy-cache-", dir=work))  # every call a miss
    env = {**os.environ, "DSPY_CACHEDIR": str(cache), "OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY", "sk-sim"),
           "ANTHROPIC_API_KEY": os.environ.get("ANTHROPIC_API_KEY", "sk-sim"),
           "MLFLOW_TRACKING_URI": f"sqlite:///{work / 'mlflow.db'}",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    before = server.calls
    cmd = [sys.executable, __file__, "--cell", "--url", server.fake.url, "--method", method, "--n", str(n),
           "--threads", str(threads), "--out", str(work / "runs"), "--rep", str(rep), "--route", route,
           "--lm", lm]
    if profile:
        cmd += ["--profile", profile]
    if spy:  # py-spy (pip install py-spy) samples the thread holding the GIL
        out = Path(spy) / f"{root.name}-{lm.split('/')[0]}-{route}-{method}-n{n}-r{rep}.txt"
        out.parent.mkdir(parents=True, exist_ok=True)
        cmd = ["py-spy", "record", "--gil", "--rate", "250", "--format", "raw", "--output", str(out), "--", *cmd]
    cmd += ["--", *extra]
    done = subprocess.run(cmd, env=env, cwd=root, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"cell {method} n={n} failed:\n{done.stderr[-4000:]}")
    row = json.loads([line for line in done.stdout.splitlines() if line.startswith("{")][-1])
    row["calls"] = server.calls - before
    if requests:  # what this cell's run sent, to compare two checkouts' requests (order aside: threads)
        sent = sorted(json.dumps(body, sort_keys=True) for body in server.fake.requests[before:])
        out = Path(requests) / f"{lm.split('/')[0]}-{route}-{method}-n{n}-r{rep}-{root.name}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(sent, indent=0))
    row.update(threads=threads, root=str(root), route=route)
    row["loop_ms_per_call"] = 1000 * row["loop_cpu"] / max(1, row["calls"])
    row["setup_cpu"] = row["process_cpu"] - row["import_cpu"] - row["loop_cpu"]
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--methods", nargs="+", default=list(METHODS))
    p.add_argument("--n", nargs="+", type=int, default=[20, 200], help="questions per cell (two sizes give the marginal cost)")
    p.add_argument("--threads", type=int, default=16)
    p.add_argument("--delay", type=float, default=0.02, help="the fake model's seconds per answer")
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--lm", default=LMS[0], help=f"the API model named (the fake server answers): {' or '.join(LMS)}")
    p.add_argument("--route", default="litellm", choices=("litellm", "native"),
                   help="litellm: --api-base URL, as eval.run sends an OpenAI-compatible server's requests (LiteLLM, "
                        "since the body carries extra_body); native: no --api-base, as a run against OpenAI itself "
                        "(DSPy's native engine), its requests sent to the fake server")
    p.add_argument("--work", default="/tmp/perf/harness-overhead", help="MLflow store, caches and results files")
    p.add_argument("--profile", default=None, metavar="DIR", help="write a cProfile of each cell's loop here")
    p.add_argument("--py-spy", default=None, metavar="DIR", help="sample each cell with py-spy (collapsed stacks) into DIR")
    p.add_argument("--roots", nargs="+", default=[str(ROOT)], metavar="DIR",
                   help="checkouts to measure, cell by cell back to back (e.g. an export of the base commit, then this one)")
    p.add_argument("--requests", default=None, metavar="DIR",
                   help="write each cell's request bodies (sorted) to DIR, to compare the checkouts' requests")
    p.add_argument("--json", default=None, help="append every cell's row here")
    # a cell (the child process)
    p.add_argument("--cell", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--url", help=argparse.SUPPRESS)
    p.add_argument("--method", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    p.add_argument("--rep", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("extra", nargs="*", help="further eval.run flags, after --, e.g. -- --decoding schema")
    args = p.parse_args()
    if args.cell:
        args.n = args.n[0]
        return cell(args)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    roots = [Path(r).resolve() for r in args.roots]
    rows = []
    with Server(args.delay) as server:
        run_cell(server, work, roots[0], "direct", 2, args.threads, 0, args.route, args.lm, args.extra)  # the store exists
        print(f"{args.lm} {' '.join(args.extra)}, route {args.route}, {args.threads} threads, fake model delay "
              f"{args.delay} s; CPU seconds of the "
              "child process (import / set-up / question loop / total)")
        print(f"{'root':12} {'method':10} {'N':>4} {'rep':>3} {'calls':>6} {'wall s':>7} {'import':>7} {'setup':>6} "
              f"{'loop':>7} {'total':>7}  {'loop ms/call':>12}")
        for method in args.methods:
            for n in args.n:
                for rep in range(args.repeat):
                    for root in roots:  # back to back, on the same load
                        row = run_cell(server, work, root, method, n, args.threads, rep, args.route, args.lm,
                                       args.extra, args.profile, args.py_spy, args.requests)
                        rows.append(row)
                        print(f"{root.name[:12]:12} {method:10} {row['n']:>4} {rep:>3} {row['calls']:>6} "
                              f"{row['main_wall']:>7.1f} {row['import_cpu']:>7.2f} {row['setup_cpu']:>6.2f} "
                              f"{row['loop_cpu']:>7.2f} {row['process_cpu']:>7.2f}  {row['loop_ms_per_call']:>12.2f}",
                              flush=True)
                        if args.json:
                            with open(args.json, "a") as f:
                                f.write(json.dumps(row) + "\n")
    print("\nper method (median over repeats [min-max]; ms/call = question-loop CPU / calls; marginal = the "
          "difference in the whole process's CPU between the largest and smallest N over their difference in calls)")
    for root in roots:
        for method in args.methods:
            print(f"{root.name[:12]:12} {method:10} " + "; ".join(summary([r for r in rows if r["root"] == str(root)
                                                                           and r["method"] == method], args.n)))


def summary(rows: list[dict], sizes: list[int]) -> list[str]:
    by_n = {n: [r for r in rows if r["n"] == n] for n in sizes}
    parts = []
    for n, rs in by_n.items():
        if rs:
            ms = [r["loop_ms_per_call"] for r in rs]
            parts.append(f"N={n}: {statistics.median(r['calls'] for r in rs):.0f} calls, {statistics.median(ms):.2f} "
                         f"ms/call [{min(ms):.2f}-{max(ms):.2f}], import {statistics.median(r['import_cpu'] for r in rs):.2f}"
                         f" s, set-up {statistics.median(r['setup_cpu'] for r in rs):.2f} s")
    small, large = by_n.get(min(sizes)), by_n.get(max(sizes))
    if small and large and min(sizes) != max(sizes):
        dc = statistics.median(r["process_cpu"] for r in large) - statistics.median(r["process_cpu"] for r in small)
        dn = statistics.median(r["calls"] for r in large) - statistics.median(r["calls"] for r in small)
        parts.append(f"marginal {1000 * dc / max(1, dn):.2f} ms/call")
    return parts

if __name__ == "__main__":
    main()
