"""C.2: how much do outputs that could not be read explain?

An output is unreadable when it could not be read in the method's required answer format:
- methods that answer by a submit (Direct, SSR, Reflexion's last trial): the episode ended with no
  accepted submit AND its last turn was rejected because the output could not be parsed (not JSON,
  text around the JSON object, which these methods do not accept, a missing field or wrong type,
  no action, otherwise unusable). A forced end after parsed but
  invalid actions (a read with no read left, ...) is a wrong answer, not a parse failure.
- methods with a final answer call (EIR, Full Pool): the final call's output failed to parse.
Questions that raised before an output was recorded are counted apart and are neither.

Per run: the unreadable share with a Wilson 95% interval. Then every EIR-family run against every
other (non-EIR) run of the same column (dataset, LM, setting, decoding), re-compared on the shared
questions where both outputs were readable: ΔF1 = EIR − baseline (paired bootstrap CI and p) and
exact McNemar on EM.
"""

from __future__ import annotations

from pathlib import Path

from eir_dspy import rejection
from eval.analyze.report import Context, Report
from eval.compare.pairs import records_by_id
from eval.formatting import fmt_p, markdown, pct
from eval.runs.logged_runs import LoggedRun
from eval.runs.record import QuestionRecord, from_legacy
from eval.scoring.stats import mcnemar_exact, paired_bootstrap, proportion

NAME = "parse-failures"
PAPER = "C.2"
SUMMARY = "outputs unreadable in the answer format per method, and EIR re-compared where both were readable"

UNPARSEABLE = frozenset({"not_json", rejection.NOT_JSON_ONLY, "missing_field", "wrong_type", "unusable",
                         rejection.NO_ACTION})
READABLE, UNREADABLE, FAILED = "readable", "unreadable", "failed"


def status(record: dict | QuestionRecord) -> str | None:
    """readable, unreadable or failed (raised before an output was recorded); None when the record
    does not say (an older reflexion_first record: its trajectory only points at the oracle run's trial 1)."""
    record = from_legacy(record)
    trajectory = record.trajectory
    if record.error or trajectory is None:
        return FAILED
    if trajectory.final_parsed is not None:  # EIR and Full Pool answer by a final call
        return READABLE if trajectory.final_parsed else UNREADABLE
    if trajectory.method == "reflexion":  # the answer is its last trial's submit
        last = trajectory.trials[-1] if trajectory.trials else None
        turns, forced_end = (last["turns"], last["forced_end"]) if last else (None, None)
    else:
        turns, forced_end = trajectory.turns, trajectory.forced_end
    if turns is None:
        return None
    if forced_end and turns and not turns[-1]["accepted"] and turns[-1]["rejection_cause"] in UNPARSEABLE:
        return UNREADABLE
    return READABLE


def is_eir(run: LoggedRun) -> bool:
    return run.label.startswith("eir")


def analyze(runs: list[LoggedRun], context: Context, out: Path) -> Report:
    report = Report()
    statuses: dict[str, dict[str, str]] = {}  # run id -> question id -> status
    rows, keys = [], {}
    for run in sorted(runs, key=lambda r: (r.dataset, r.lm, r.method, -r.start_time)):
        records = run.question_records
        found = {r.id: status(r) for r in records}
        if None in found.values():
            report.notes.append(f"skipped {run.run_id} ({run.name}): its records hold no trajectory of their own "
                                "(reflexion_first: see trial 1 of its reflexion_oracle run)")
            continue
        if any(rejection.LEGACY in (r.rejections_by_cause or {}) for r in records):
            report.notes.append(f"{run.run_id} ({run.name}) was recorded before rejection causes were split: an "
                                f"output with no action was recorded as '{rejection.LEGACY}' and is not counted "
                                "as unreadable here")
        statuses[run.run_id] = found
        keys[run.run_id] = key = _key(run, keys.values())
        failed = sum(s == FAILED for s in found.values())
        share = proportion(sum(s == UNREADABLE for s in found.values()), len(found) - failed)
        rows.append([run.method, run.dataset, run.lm.rsplit("/", 1)[-1], str(len(found)), str(failed),
                     str(share.k), pct(share.share), f"[{pct(share.low)}, {pct(share.high)}]"])
        report.metrics.update({f"unreadable/{key}": share.k, f"unreadable_share/{key}": share.share,
                               f"failed/{key}": failed})
    head = ["method", "dataset", "LM", "n", "failed", "unreadable", "unreadable %", "95% CI (Wilson)"]
    report.tables["c2_parse_failures.md"] = (
        "# C.2: outputs that could not be read in the required answer format\n\n" + markdown(head, rows) + "\n\n"
        "Unreadable: submit methods (Direct, SSR, Reflexion's last trial) ended with no accepted submit after a "
        "last turn whose output could not be parsed (not JSON, text around the JSON object, missing field, wrong "
        "type, no action, unusable); "
        "EIR and Full Pool: the final call's output could not be parsed. *failed*: raised before an output was "
        "recorded; the share is of the other questions.\n")
    report.tables["c2_readable_comparison.md"] = _comparisons(
        [r for r in runs if r.run_id in statuses], statuses, keys, context, report)
    return report


def _comparisons(runs: list[LoggedRun], statuses: dict, keys: dict, context: Context, report: Report) -> str:
    """Every EIR-family run against each non-EIR run of its column, on the questions both read."""
    rows, empty = [], 0
    for eir in sorted(filter(is_eir, runs), key=lambda r: (r.dataset, r.lm, r.method)):
        for base in sorted(runs, key=lambda r: r.method):
            if is_eir(base) or (base.dataset, base.lm, base.setting, base.decoding) != \
                    (eir.dataset, eir.lm, eir.setting, eir.decoding):
                continue
            a, b = records_by_id(eir), records_by_id(base)
            shared = [q for q in a if q in b]
            kept = [q for q in shared if statuses[eir.run_id][q] == READABLE == statuses[base.run_id][q]]
            pair = f"{keys[eir.run_id]}/vs/{keys[base.run_id]}"
            head = [eir.method, base.method, eir.dataset, eir.lm.rsplit("/", 1)[-1], str(len(shared)), str(len(kept))]
            report.metrics.update({f"shared/{pair}": len(shared), f"kept/{pair}": len(kept)})
            if not kept:
                empty += 1
                rows.append(head + ["–"] * 5)
                continue
            f1 = paired_bootstrap([100 * b[q].answer_f1 for q in kept], [100 * a[q].answer_f1 for q in kept],
                                  context.resamples, context.seed)
            em = mcnemar_exact([b[q].em >= 1 for q in kept], [a[q].em >= 1 for q in kept])
            all_diff = sum(100 * (a[q].answer_f1 - b[q].answer_f1) for q in shared) / len(shared)
            report.metrics.update({f"f1_diff/{pair}": f1.diff, f"f1_ci_low/{pair}": f1.low,
                                   f"f1_ci_high/{pair}": f1.high, f"f1_p/{pair}": f1.p,
                                   f"f1_diff_shared/{pair}": all_diff, f"em_only_eir/{pair}": em.c,
                                   f"em_only_baseline/{pair}": em.b, f"mcnemar_p/{pair}": em.p})
            rows.append(head + [f"{all_diff:+.1f}", f"{f1.diff:+.1f} [{f1.low:+.1f}, {f1.high:+.1f}]", fmt_p(f1.p),
                                f"{em.b} / {em.c}", fmt_p(em.p)])
    if empty:
        report.notes.append(f"{empty} of the {len(rows)} pairs had no shared question with both outputs readable "
                            "(– in the comparison table)")
    if not rows:
        return "# C.2: EIR re-compared on the questions where both outputs were readable\n\n(no EIR-family run " \
               "with a non-EIR run of the same dataset, LM, setting and decoding)\n"
    head = ["EIR", "baseline", "dataset", "LM", "shared", "both readable", "ΔF1 all shared",
            "ΔF1 both readable [95% CI]", "p", "EM b / c", "McNemar p"]
    return ("# C.2: EIR re-compared on the questions where both outputs were readable\n\n" + markdown(head, rows)
            + "\n\nΔF1 = EIR − baseline (Answer F1, 0-100), on the shared questions where neither output was "
            f"unreadable nor failed; paired bootstrap ({context.resamples} resamples, seed {context.seed}). "
            "'ΔF1 all shared': the same difference on every shared question, for contrast. McNemar: exact two-sided "
            "on EM; b = only the baseline exact, c = only EIR exact. Pairs: each EIR-family run with each non-EIR "
            "run of the same dataset, LM, setting and decoding.\n")


def _key(run: LoggedRun, taken) -> str:
    key = "/".join((run.method, run.dataset, run.lm))
    return key + f"/{run.run_id}" if key in taken else key  # two runs of one condition stay apart
