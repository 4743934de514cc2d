"""Tables 5 and 8: does EIR find the supporting facts better than the agents it is compared with?

Per (dataset, LM) column: Support F1 of EIR − Direct (Table 5) and of EIR − oracle-stopped
Reflexion (Table 8), paired by question id, each with a paired bootstrap interval and p; Table 8's
p-values are Holm-adjusted over its comparisons (the paper's six dataset × LM columns; here every
column with both runs). Runs are told apart by their method label; an EIR ablation is not EIR.
One run per label and column: the newest, the others named in the notes. Corpus-setting runs are
their own columns.
"""

from __future__ import annotations

from pathlib import Path

from eval.analyze.report import Context, Report
from eval.comparison import QuestionSetMismatch, paired_ids
from eval.logged_runs import LoggedRun, SelectionError
from eval.stats import holm, paired_bootstrap
from eval.tables import fmt_p, markdown

NAME = "support"
PAPER = "Tables 5, 8"
SUMMARY = "Support F1 of EIR − Direct and EIR − oracle Reflexion per column, paired bootstrap (Holm for Table 8)"

EIR, DIRECT, REFLEXION = "eir", "direct", "reflexion_oracle"
TABLES = {DIRECT: ("table5_support_eir_vs_direct.md", "Table 5: Support F1, EIR − Direct"),
          REFLEXION: ("table8_support_eir_vs_reflexion.md", "Table 8: Support F1, EIR − oracle-stopped Reflexion")}

Column = tuple[str, str, str]  # (setting, dataset, LM)


def column_of(run: LoggedRun) -> Column:
    return run.setting, run.dataset, run.lm


def column_name(column: Column) -> str:
    setting, dataset, lm = column
    return f"{dataset} · {lm.rsplit('/', 1)[-1]}" + (f" · {setting}" if setting != "pool" else "")


def place(runs: list[LoggedRun], notes: list[str]) -> dict[tuple[str, Column], LoggedRun]:
    """The newest run of each (label, column) among EIR, Direct and oracle Reflexion."""
    placed: dict[tuple[str, Column], LoggedRun] = {}
    for run in sorted(runs, key=lambda r: -r.start_time):
        if run.label not in (EIR, DIRECT, REFLEXION):
            notes.append(f"skipped {run.run_id} ({run.name}): {run.label} is in neither Table 5 nor Table 8")
        elif run.ablation != "none":  # an ablation answers another question than the method itself
            notes.append(f"skipped {run.run_id} ({run.name}): the {run.ablation} ablation, not {run.label} itself")
        elif (run.label, column_of(run)) in placed:
            kept = placed[run.label, column_of(run)]
            notes.append(f"ignored {run.run_id} ({run.name}): a newer {run.label} run {kept.run_id} ({kept.name}) "
                         f"is in the same column; pass --run to choose")
        else:
            placed[run.label, column_of(run)] = run
    return placed


def compare(eir: LoggedRun, other: LoggedRun, context: Context, notes: list[str]):
    """(paired ids, bootstrap of 100 × (EIR − other) Support F1), or None when they share no question."""
    try:
        ids = paired_ids(eir, other, intersection=True)
    except QuestionSetMismatch:
        notes.append(f"{column_name(column_of(eir))}: EIR {eir.run_id} and {other.label} {other.run_id} share no "
                     "question; not compared")
        return None
    if eir.ids != other.ids:
        notes.append(f"{column_name(column_of(eir))}: EIR {eir.run_id} ({len(eir.ids)} questions) and {other.label} "
                     f"{other.run_id} ({len(other.ids)}) ran on different questions; compared on the {len(ids)} "
                     "they share")
    for what in ("budget", "decoding"):
        if getattr(eir, what) != getattr(other, what):
            notes.append(f"{column_name(column_of(eir))}: EIR and {other.label} differ in {what} "
                         f"({getattr(eir, what)} vs {getattr(other, what)}); compared all the same")
    by_eir, by_other = _by_id(eir), _by_id(other)
    # Baseline first: the bootstrap's difference is other − baseline, here EIR − the other method.
    result = paired_bootstrap([100 * by_other[i]["support_f1"] for i in ids],
                              [100 * by_eir[i]["support_f1"] for i in ids], context.resamples, context.seed)
    return ids, result


def analyze(runs: list[LoggedRun], context: Context, out: Path) -> Report:
    report = Report()
    placed = place(runs, report.notes)
    if not any(label == EIR for label, _ in placed):
        raise SelectionError("the support tables compare EIR with its baselines; no EIR run among the selected runs")
    columns = sorted({c for _, c in placed})

    # Each run's own mean, over all its questions (the comparisons below use the paired ones).
    rows = []
    for (label, column), run in sorted(placed.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        mean = 100 * sum(r["support_f1"] for r in run.records) / len(run.records)
        rows.append([column_name(column), label, run.run_id, str(len(run.records)), f"{mean:.1f}"])
        report.metrics[f"support_f1/{label}/{'/'.join(column)}"] = mean
        report.metrics[f"n/{label}/{'/'.join(column)}"] = len(run.records)
    report.tables["support_f1_runs.md"] = ("# Support F1 of each run\n\n"
                                           + markdown(["column", "method", "run", "n", "Support F1"], rows) + "\n")

    for other, (file, title) in TABLES.items():
        results = {}  # column -> (ids, bootstrap)
        for column in columns:
            eir, base = placed.get((EIR, column)), placed.get((other, column))
            if eir is None or base is None:
                if eir or base:
                    report.notes.append(f"{title.split(':')[0]}, {column_name(column)}: no "
                                        f"{other if eir else EIR} run; not compared")
                continue
            found = compare(eir, base, context, report.notes)
            if found:
                results[column] = found
        # Holm only for Table 8, over that table's comparisons (the paper's family of six).
        adjusted = holm({"/".join(c): b.p for c, (_, b) in results.items()}, context.alpha) if other == REFLEXION else {}
        rows = []
        for column, (ids, b) in results.items():
            eir_by, base_by = _by_id(placed[EIR, column]), _by_id(placed[other, column])
            eir_mean = 100 * sum(eir_by[i]["support_f1"] for i in ids) / len(ids)
            base_mean = 100 * sum(base_by[i]["support_f1"] for i in ids) / len(ids)
            row = [column_name(column), str(len(ids)), f"{eir_mean:.1f}", f"{base_mean:.1f}",
                   f"{b.diff:+.1f} [{b.low:+.1f}, {b.high:+.1f}]", fmt_p(b.p)]
            key = f"eir_minus_{other}/{'/'.join(column)}"
            report.metrics.update({f"diff/{key}": b.diff, f"ci_low/{key}": b.low, f"ci_high/{key}": b.high,
                                   f"p/{key}": b.p, f"n/{key}": len(ids)})
            if "/".join(column) in adjusted:
                holm_p = adjusted["/".join(column)]
                row += [fmt_p(holm_p.adjusted), "yes" if holm_p.significant else "no"]
                report.metrics[f"p_holm/{key}"] = holm_p.adjusted
            rows.append(row)
        head = ["column", "n", "EIR", other, f"Δ EIR − {other} [95% CI]", "p"]
        if other == REFLEXION:
            head += ["p Holm", f"significant (α {context.alpha})"]
        holm_text = (f" Holm over the {len(results)} comparisons of this table." if other == REFLEXION else "")
        report.tables[file] = (
            f"# {title}\n\n" + (markdown(head, rows) if rows else "No column has both runs.") + "\n\n"
            "Support F1 (0-100) on the questions both runs answered, paired by id; Δ with a paired bootstrap "
            f"interval and two-sided p ({context.resamples} resamples, seed {context.seed}).{holm_text}\n")
    return report


def _by_id(run: LoggedRun) -> dict[str, dict]:
    return {r["id"]: r for r in run.records}
