"""Tables 5 and 8: EIR's Exact Match and supporting facts against the agents it is compared with, per
(setting, dataset, LM) column, paired by question id; Support EM beside both as an extra
(docs/experiments.md, "Analyses of recorded runs").
"""

from __future__ import annotations

from pathlib import Path

from eval.analyze.report import Context, Report, base_label
from eval.compare.pairs import QuestionSetMismatch, paired_ids, records_by_id
from eval.files.question_record import QuestionRecord
from eval.runs.logged_runs import LoggedRun, SelectionError
from eval.scoring.formatting import column_name, fmt_p, interval, markdown, number
from eval.scoring.stats import holm, mcnemar_exact, paired_bootstrap
from programs import names

NAME = "support"
PAPER = "Tables 5, 8"
SUMMARY = ("answer EM (McNemar) and Support F1 (bootstrap) of EIR − Direct (Table 5); Support F1 of EIR − SSR, "
           "oracle and first-trial Reflexion (Table 8, Holm); Support EM (McNemar) beside both")

EIR, DIRECT, SSR, REFLEXION, FIRST = names.EIR, names.DIRECT, names.SSR, names.REFLEXION_ORACLE, names.REFLEXION_FIRST
# file, title, the baselines compared with EIR, whether p is Holm-adjusted (per baseline over its columns),
# whether the table has the answer EM columns (Table 5's EM; Table 8 reports Support F1 only)
TABLES = [("table5_support_eir_vs_direct.md", "Table 5: Exact Match and Support F1, EIR − Direct", (DIRECT,), False,
           True),
          ("table8_support_eir_vs_agents.md", "Table 8: Support F1, EIR − Agentic SSR and Reflexion",
           (SSR, REFLEXION, FIRST), True, False)]
BASELINES = tuple(b for _, _, baselines, _, _ in TABLES for b in baselines)
EM_KEY = "em"  # Table 5's EM: answer Exact Match after the benchmark's normalization (C.1, 4.4)
SUPPORT_EM_KEY = "sp_em"  # the extra column: Support EM (every supporting sentence cited, nothing else)

Column = tuple[str, str, str]  # (setting, dataset, LM)


def column_of(run: LoggedRun) -> Column:
    return run.setting, run.dataset, run.lm


def place(runs: list[LoggedRun], notes: list[str]) -> dict[tuple[str, Column], LoggedRun]:
    """The newest run of each (label, column) among EIR and the baselines of Tables 5 and 8."""
    placed: dict[tuple[str, Column], LoggedRun] = {}
    for run in sorted(runs, key=lambda r: -r.start_time):
        label = base_label(run)
        if label not in (EIR, *BASELINES):
            notes.append(f"skipped {run.run_id} ({run.name}): {run.label} is in neither Table 5 nor Table 8")
        elif run.ablation != "none":  # an ablation answers another question than the method itself
            notes.append(f"skipped {run.run_id} ({run.name}): the {run.ablation} ablation, not {run.label} itself")
        elif (label, column_of(run)) in placed:
            kept = placed[label, column_of(run)]
            notes.append(f"ignored {run.run_id} ({run.name}): a newer {run.label} run {kept.run_id} ({kept.name}) "
                         f"is in the same column; pass --run to choose")
        else:
            placed[label, column_of(run)] = run
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
    by_eir, by_other = records_by_id(eir), records_by_id(other)
    # Baseline first: the bootstrap's difference is other − baseline, here EIR − the other method.
    result = paired_bootstrap([100 * by_other[i].support_f1 for i in ids],
                              [100 * by_eir[i].support_f1 for i in ids], context.resamples, context.seed)
    return ids, result


def analyze(runs: list[LoggedRun], context: Context, out: Path) -> Report:
    report = Report(params={"table8_holm_family": "per baseline, over its dataset × LM columns",
                            "em": f"answer Exact Match (record {EM_KEY}), exact two-sided McNemar",
                            "support_em": f"Support EM (record {SUPPORT_EM_KEY}), an extra column, exact McNemar"})
    placed = place(runs, report.notes)
    if not any(label == EIR for label, _ in placed):
        raise SelectionError("the support tables compare EIR with its baselines; no EIR run among the selected runs")
    columns = sorted({c for _, c in placed})

    # Each run's own means, over all its questions (the comparisons below use the paired ones).
    rows = []
    for (label, column), run in sorted(placed.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        em, mean, sp_em = (_mean(run.question_records, f) for f in (EM_KEY, "support_f1", SUPPORT_EM_KEY))
        rows.append([column_name(column), label, run.run_id, str(len(run.records)), number(em), f"{mean:.1f}",
                     number(sp_em)])
        report.keyed(f"{label}/{'/'.join(column)}", {"em": em, "support_f1": mean, "support_em": sp_em,
                                                     "n": len(run.records)})
    report.table("support_f1_runs.md", "Exact Match, Support F1 and Support EM of each run",
                 markdown(["column", "method", "run", "n", "EM", "Support F1", "Support EM"], rows))

    for file, title, baselines, adjust, with_em in TABLES:
        rows = []
        for other in baselines:
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
            adjusted = holm({"/".join(c): b.p for c, (_, b) in results.items()}, context.alpha) if adjust else {}
            rows += [_row(column, other, ids, b, adjusted.get("/".join(column)), with_em, placed, report)
                     for column, (ids, b) in results.items()]
        head = ["column", "baseline", "n"]
        if with_em:
            head += ["EIR EM", "baseline EM", "EM b / c", "EM McNemar p"]
        head += ["EIR SF1", "baseline SF1", "Δ SF1 EIR − baseline [95% CI]", "p"]
        if adjust:
            head += ["p Holm", f"significant (α {context.alpha})"]
        head += ["EIR Support EM", "baseline Support EM", "Support EM b / c", "Support EM McNemar p"]
        em_text = ("EM: answer Exact Match after the benchmark's normalization (C.1), exact two-sided McNemar, "
                   "b = only the baseline exact, c = only EIR exact. " if with_em else
                   "Answer EM against these agents is Table 7's (eval.compare). ")
        holm_text = (" p Holm: Holm over each baseline's comparisons in this table (one per column)." if adjust else "")
        report.table(
            file, title, markdown(head, rows) if rows else "No column has both runs.",
            "Scores 0-100 on the questions both runs answered, paired by id. " + em_text +
            "SF1: Support F1; Δ SF1 with a paired bootstrap interval and two-sided p "
            f"({context.resamples} resamples, seed {context.seed}).{holm_text} "
            "Support EM (every supporting sentence cited, nothing else): an extra beside the paper's columns, with "
            "its own exact McNemar test (b, c as for EM).")
    return report


def _row(column: Column, other: str, ids, b, holm_p, with_em: bool, placed, report: Report) -> list[str]:
    eir_by, base_by = records_by_id(placed[EIR, column]), records_by_id(placed[other, column])
    eir, base = [eir_by[i] for i in ids], [base_by[i] for i in ids]
    key = f"eir_minus_{other}/{'/'.join(column)}"
    row = [column_name(column), other, str(len(ids))]
    if with_em:
        row += _em_cells("em", EM_KEY, eir, base, key, report)
    row += [f"{_mean(eir, 'support_f1'):.1f}", f"{_mean(base, 'support_f1'):.1f}", interval(b), fmt_p(b.p)]
    report.keyed(key, {"diff": b.diff, "ci_low": b.low, "ci_high": b.high, "p": b.p, "n": len(ids)})
    if holm_p is not None:
        row += [fmt_p(holm_p.adjusted), "yes" if holm_p.significant else "no"]
        report.metrics[f"p_holm/{key}"] = holm_p.adjusted
    return row + _em_cells("support_em", SUPPORT_EM_KEY, eir, base, key, report)


def _em_cells(name: str, field: str, eir: list[QuestionRecord], base: list[QuestionRecord], key: str,
              report: Report) -> list[str]:
    """Both runs' mean of a 0/1 score (`field`) and the exact McNemar test on the questions only one gets
    (b = only the baseline, c = only EIR), as table cells; metrics `{name}_eir`, `{name}_other`,
    `{name}_mcnemar_b/c/p`."""
    test = mcnemar_exact([getattr(r, field) >= 1 for r in base], [getattr(r, field) >= 1 for r in eir])
    eir_mean, base_mean = _mean(eir, field), _mean(base, field)
    report.keyed(key, {f"{name}_eir": eir_mean, f"{name}_other": base_mean, f"{name}_mcnemar_b": test.b,
                       f"{name}_mcnemar_c": test.c, f"{name}_mcnemar_p": test.p})
    return [f"{eir_mean:.1f}", f"{base_mean:.1f}", f"{test.b} / {test.c}", fmt_p(test.p)]


def _mean(records: list[QuestionRecord] | tuple[QuestionRecord, ...], field: str) -> float:
    return 100 * sum(getattr(r, field) for r in records) / len(records)
