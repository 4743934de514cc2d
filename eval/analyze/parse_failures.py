"""C.2: how much do outputs that could not be read explain? Per run, the share of questions whose scored
output was unreadable; then each EIR-family run re-compared with each other run of its column on the
questions both read. The rules and the two choices (counting, code fences): docs/experiments.md, "Analyses of recorded runs".
"""

from __future__ import annotations

from pathlib import Path

from eir_dspy import rejection
from eir_dspy.acceptance import DEFAULT_FENCE_READING, FENCE_READING_TEXT
from eval.analyze.report import Context, Report, run_cells, run_key
from eval.compare.pairs import records_by_id
from eval.files.question_record import QuestionRecord, as_records
from eval.runs.logged_runs import LoggedRun
from eval.scoring.formatting import fmt_p, interval, markdown, pct, short_lm
from eval.scoring.stats import mcnemar_exact, paired_bootstrap, proportion
from programs import names

NAME = "parse-failures"
PAPER = "C.2"
SUMMARY = "outputs unreadable in the answer format per method, and EIR re-compared where both were readable"

UNPARSEABLE = frozenset({"not_json", rejection.NOT_JSON_ONLY, "missing_field", "wrong_type", "unusable",
                         rejection.NO_ACTION})
READABLE, UNREADABLE, FAILED = "readable", "unreadable", "failed"
COUNTING = ("per question: the output the method is scored on (a submit method's last turn when no submit was "
            "accepted, a final-call method's final call); per output beside it: every action turn plus the final call")
FENCES = f"{DEFAULT_FENCE_READING}: {FENCE_READING_TEXT[DEFAULT_FENCE_READING]}"


def status(record: dict | QuestionRecord) -> str:
    """readable, unreadable or failed (raised before an output was recorded), of a record or a results line."""
    [record] = as_records([record])
    trajectory = record.trajectory
    if record.error or trajectory is None:
        return FAILED
    if trajectory.final_parsed is not None:  # EIR and Full Pool answer by a final call
        return READABLE if trajectory.final_parsed else UNREADABLE
    if trajectory.method == "reflexion":  # the answer is its last trial's submit
        turns, forced_end = trajectory.trials[-1]["turns"], trajectory.trials[-1]["forced_end"]
    else:
        turns, forced_end = trajectory.turns, trajectory.forced_end
    # Only a last turn that could not be parsed makes the answer unreadable: one refused for what it asked
    # (a read on the submit-only last turn, an invalid submit, ...) was read, so the forced end is a wrong answer.
    if forced_end and turns and not turns[-1]["accepted"] and turns[-1]["rejection_cause"] in UNPARSEABLE:
        return UNREADABLE
    return READABLE


def outputs(record: QuestionRecord) -> tuple[int, int]:
    """(unparseable outputs, outputs) of a question: every action turn's output (each of Reflexion's trials)
    and, for EIR and Full Pool, the final call's. (0, 0) for a record that holds none."""
    trajectory = record.trajectory
    if record.error or trajectory is None:
        return 0, 0
    turns = [t for episode in trajectory.episodes() or () for t in episode]
    bad = sum(not t["accepted"] and t["rejection_cause"] in UNPARSEABLE for t in turns)
    if trajectory.final_parsed is not None:
        return bad + (not trajectory.final_parsed), len(turns) + 1
    return bad, len(turns)


def is_eir(run: LoggedRun) -> bool:
    return run.label.startswith(names.EIR)


def analyze(runs: list[LoggedRun], context: Context, out: Path) -> Report:
    report = Report(params={"counting": COUNTING, "json_only_fences": FENCES})
    statuses: dict[str, dict[str, str]] = {}  # run id -> question id -> status
    rows, keys = [], {}
    for run in sorted(runs, key=lambda r: (r.dataset, r.lm, r.variant, -r.start_time)):
        records = run.question_records
        statuses[run.run_id] = found = {r.id: status(r) for r in records}
        keys[run.run_id] = key = run_key(run, set(keys.values()))
        failed = sum(s == FAILED for s in found.values())
        share = proportion(sum(s == UNREADABLE for s in found.values()), len(found) - failed)
        bad, made = (sum(x) for x in zip(*(outputs(r) for r in records))) if records else (0, 0)
        per_output = bad / made if made else float("nan")
        rows.append([*run_cells(run), str(len(found)), str(failed),
                     str(share.k), pct(share.share), f"[{pct(share.low)}, {pct(share.high)}]",
                     f"{bad} / {made}", pct(per_output)])
        report.keyed(key, {"unreadable": share.k, "unreadable_share": share.share, "failed": failed,
                           "unparseable_outputs": bad, "outputs": made, "unparseable_output_share": per_output})
    head = ["method", "dataset", "LM", "n", "failed", "unreadable", "unreadable %", "95% CI (Wilson)",
            "unparseable outputs / outputs", "% of outputs"]
    report.table(
        "c2_parse_failures.md", "C.2: outputs that could not be read in the required answer format",
        markdown(head, rows),
        "Unreadable: submit methods (Direct, SSR, Reflexion's last trial) ended with no accepted submit after a "
        "last turn whose output could not be parsed (not JSON, text around the JSON object, missing field, wrong "
        "type, no action, unusable); a last turn refused for what it asked (a read or search on the submit-only "
        "last turn, an invalid submit) was read, so that forced end is a wrong answer, not unreadable; "
        "EIR and Full Pool: the final call's output could not be parsed. *failed*: raised before an output was "
        "recorded; the share is of the other questions. Counting (a choice: C.2 does not say what a 'response' is): "
        "the unreadable share is per question, of the output the method is scored on; 'unparseable outputs / "
        "outputs' counts every action turn's output (all trials) plus the final call's, for the other reading. "
        f"Code fences (a choice: H.4 is silent): {FENCES}.")
    _comparisons(runs, statuses, keys, context, report)
    return report


def _comparisons(runs: list[LoggedRun], statuses: dict, keys: dict, context: Context, report: Report) -> None:
    """Every EIR-family run against each non-EIR run of its column, on the questions both read."""
    rows, empty = [], 0
    for eir in sorted(filter(is_eir, runs), key=lambda r: (r.dataset, r.lm, r.variant)):
        for base in sorted(runs, key=lambda r: r.variant):
            if is_eir(base) or (base.dataset, base.lm, base.setting, base.decoding) != \
                    (eir.dataset, eir.lm, eir.setting, eir.decoding):
                continue
            a, b = records_by_id(eir), records_by_id(base)
            shared = [q for q in a if q in b]
            kept = [q for q in shared if statuses[eir.run_id][q] == READABLE == statuses[base.run_id][q]]
            pair = f"{keys[eir.run_id]}/vs/{keys[base.run_id]}"
            head = [eir.variant, base.variant, eir.dataset, short_lm(eir.lm), str(len(shared)), str(len(kept))]
            report.keyed(pair, {"shared": len(shared), "kept": len(kept)})
            if not kept:
                empty += 1
                rows.append(head + ["–"] * 5)
                continue
            f1 = paired_bootstrap([100 * b[q].answer_f1 for q in kept], [100 * a[q].answer_f1 for q in kept],
                                  context.resamples, context.seed)
            em = mcnemar_exact([b[q].em >= 1 for q in kept], [a[q].em >= 1 for q in kept])
            all_diff = sum(100 * (a[q].answer_f1 - b[q].answer_f1) for q in shared) / len(shared)
            report.keyed(pair, {"f1_diff": f1.diff, "f1_ci_low": f1.low, "f1_ci_high": f1.high, "f1_p": f1.p,
                                "f1_diff_shared": all_diff, "em_only_eir": em.c, "em_only_baseline": em.b,
                                "mcnemar_p": em.p})
            rows.append(head + [f"{all_diff:+.1f}", interval(f1), fmt_p(f1.p),
                                f"{em.b} / {em.c}", fmt_p(em.p)])
    if empty:
        report.notes.append(f"{empty} of the {len(rows)} pairs had no shared question with both outputs readable "
                            "(– in the comparison table)")
    title = "C.2: EIR re-compared on the questions where both outputs were readable"
    if not rows:
        report.table("c2_readable_comparison.md", title, "(no EIR-family run with a non-EIR run of the same dataset, "
                     "LM, setting and decoding)")
        return
    head = ["EIR", "baseline", "dataset", "LM", "shared", "both readable", "ΔF1 all shared",
            "ΔF1 both readable [95% CI]", "p", "EM b / c", "McNemar p"]
    report.table(
        "c2_readable_comparison.md", title, markdown(head, rows),
        "ΔF1 = EIR − baseline (Answer F1, 0-100), on the shared questions where neither output was "
        f"unreadable nor failed; paired bootstrap ({context.resamples} resamples, seed {context.seed}). "
        "'ΔF1 all shared': the same difference on every shared question, for contrast. McNemar: exact two-sided "
        "on EM; b = only the baseline exact, c = only EIR exact. Pairs: each EIR-family run with each non-EIR "
        "run of the same dataset, LM, setting and decoding.")

