"""What one analysis produces, and how it reaches the terminal and MLflow."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import mlflow

from eval.runs import tracking
from eval.runs.logged_runs import LoggedRun
from eval.scoring.formatting import short_lm
from eval.scoring.stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED


@dataclass(frozen=True)
class Context:
    """Settings every analysis shares, recorded as params of the analysis run."""

    out: Path  # where tables, plots and (for analyses that call the LM) the resumable call log go
    alpha: float = 0.05
    resamples: int = BOOTSTRAP_RESAMPLES
    seed: int = BOOTSTRAP_SEED  # bootstrap seed, and the seed of anything an analysis samples
    data: str | None = None  # a data file or directory overriding the one each source run recorded
    threads: int = 1  # questions re-answered at once by the analyses that call the LM

    def params(self) -> dict:
        return {"alpha": self.alpha, "bootstrap_resamples": self.resamples, "seed": self.seed}


@dataclass
class Report:
    """Tables (file name -> markdown or CSV text; the markdown ones are printed), metrics, params,
    plots already written under the context's out dir, and notes (what was skipped and why)."""

    tables: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    params: dict[str, object] = field(default_factory=dict)
    plots: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # A table's rows before formatting, for an analysis that joins others' rows into one table (Table 16).
    rows: dict[str, list[list[str]]] = field(default_factory=dict)

    def keyed(self, key: str, values: dict[str, float | None]) -> None:
        """Metrics `<name>/<key>` (key: what the numbers are of, e.g. method/dataset/lm)."""
        self.metrics.update({f"{name}/{key}": v for name, v in values.items()})

    def table(self, file: str, title: str, body: str, note: str = "") -> None:
        """A markdown file: `# title`, the body (a table), then the note under it if there is one."""
        self.tables[file] = f"# {title}\n\n{body}" + (f"\n\n{note}" if note else "") + "\n"

    def skipped(self, run: LoggedRun, why: str) -> None:
        self.notes.append(f"skipped {run.run_id} ({run.name}): {why}")


POOLED = "all runs"  # the method cell of a row pooling every run's questions


def pooled_run(runs: list[LoggedRun]) -> LoggedRun:
    """Every run's records as one pseudo-run, for the paper's pooled rows (F.1-F.4): its method is
    POOLED; its dataset and LM are the runs' own when they share one, else "all"."""
    return LoggedRun(run_id="pooled", experiment_id="", name=POOLED, variant=POOLED,
                     dataset=one_or_all({r.dataset for r in runs}), lm=one_or_all({r.lm for r in runs}), budget=0,
                     start_time=0, metrics={}, records=tuple(rec for r in runs for rec in r.records), label=POOLED)


def one_or_all(values: set[str]) -> str:
    """The value the runs share, else "all" (a pooled or total row)."""
    return values.pop() if len(values) == 1 else "all"


def run_cells(run: LoggedRun) -> list[str]:
    """A table row's first cells: method, dataset and LM (without its provider)."""
    return [run.variant, run.dataset, short_lm(run.lm)]


def base_label(run: LoggedRun) -> str:
    """The method label without the corpus suffix and decoding (a column or row holds the setting)."""
    return run.label.split(" ", 1)[0].removesuffix("_corpus")


def run_key(run: LoggedRun, taken: set[str]) -> str:
    """The run's metric key, method/dataset/lm, and its run id when an earlier run took that key (two runs
    of one condition stay apart); added to `taken`."""
    key = "/".join((run.variant, run.dataset, run.lm))
    key += f"/{run.run_id}" if key in taken else ""
    taken.add(key)
    return key


def corpus_note(table: str, runs: list[LoggedRun]) -> list[str]:
    """A note when runs outside the corpus setting are analysed for a table the paper reports on its
    corpus-setting runs (Appendix H: H.4, Table 21): they are analysed all the same."""
    pool = sorted(r.name for r in runs if r.setting != "corpus")
    if not pool:
        return []
    return [f"the paper's {table} is over its corpus-setting runs (grids/paper-corpus.toml, experiment paper-corpus); "
            f"{len(pool)} of these runs are not corpus runs: {', '.join(pool[:5])}{' ...' * (len(pool) > 5)}"]


def metric_name(*parts: object) -> str:
    """An MLflow-safe metric name from parts: analysis/what/method/dataset/lm."""
    return re.sub(r"[^\w./\- :]", "_", "/".join(str(p) for p in parts))


def start_analysis_run(name: str, runs: list[LoggedRun]) -> str:
    """A new MLflow run for an analysis, tagged and linked to its sources as it is created
    (beside the first source run, in its experiment). It stays open until `finish_analysis_run`."""
    sources = sorted(r.run_id for r in runs)
    run = mlflow.start_run(experiment_id=runs[0].experiment_id,
                           run_name=f"analysis: {name} / {len(runs)} run{'s' * (len(runs) != 1)}",
                           tags={tracking.KIND_TAG: tracking.ANALYSIS_KIND, tracking.ANALYSIS_TAG: name,
                                 tracking.SOURCE_RUNS_TAG: json.dumps(sources),
                                 "eir.source_names": _names_within(sorted(r.name for r in runs), 5000)})
    return run.info.run_id


def finish_analysis_run(report: Report, context: Context, out: Path) -> None:
    """Log the report into the active analysis run and end it FINISHED."""
    mlflow.log_params({k: str(v)[:6000] for k, v in {**context.params(), **report.params}.items()})
    if report.metrics:
        mlflow.log_metrics({metric_name(k): float(v) for k, v in report.metrics.items() if v == v})
    mlflow.log_artifacts(str(out))
    mlflow.end_run("FINISHED")


def write_report(report: Report, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, text in report.tables.items():
        (out / name).write_text(text if text.endswith("\n") else text + "\n")
    if report.notes:
        (out / "notes.md").write_text("# Notes\n\n" + "\n".join(f"- {n}" for n in report.notes) + "\n")


def _names_within(names: list[str], limit: int) -> str:
    """A JSON list of as many names as fit in `limit` characters (a tag's value has a size limit)."""
    kept: list[str] = []
    for name in names:
        if len(json.dumps(kept + [name])) > limit:
            break
        kept.append(name)
    return json.dumps(kept)
