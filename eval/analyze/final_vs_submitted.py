"""H.4: does EIR's final call beat the answer the agent submitted during retrieval? Both answers
scored on the questions with an accepted non-empty submission, the rest counted as excluded
(docs/experiments.md, "Analyses of recorded runs").
"""

from __future__ import annotations

from pathlib import Path

from eval.analyze.report import Context, Report, corpus_note, run_cells, run_key
from eval.data.schema import Question
from eval.files.question_record import QuestionRecord
from eval.runs.logged_runs import LoggedRun, SelectionError
from eval.scoring.formatting import fmt_p, interval, markdown
from eval.scoring.metrics import score_question
from eval.scoring.stats import mcnemar_exact, paired_bootstrap
from programs import names

NAME = "final-vs-submitted"
PAPER = "H.4"
SUMMARY = "EIR's submitted answer vs its final call's answer: F1, EM gained and lost, F1 wins/losses/ties"
TIE = 1e-9  # F1 points: equal scores computed two ways may differ in the last bit


def answer_scores(record: QuestionRecord, dataset: str, answer: str) -> tuple[float, float]:
    """(F1, EM) of `answer` by the official rules of `dataset`, as eval.run scored the prediction.

    score_question needs a Question; its answer scores use only the reference answer, the aliases
    and the dataset, all of which the record holds (the paragraphs only matter for support)."""
    question = Question(id=record.id, question=record.question or "", answer=record.gold,
                        aliases=tuple(record.aliases or ()), type=record.type or "",
                        paragraphs=(), supporting_facts=(), dataset=dataset)
    scores = score_question(question, answer, None)
    return scores["answer_f1"], scores["em"]


def split(records: tuple[QuestionRecord, ...]) -> tuple[list[QuestionRecord], int, int, int]:
    """The eligible records, and how many were excluded as forced, empty or failed."""
    eligible, forced, empty, failed = [], 0, 0, 0
    for r in records:
        if r.trajectory is None:
            failed += 1  # the question raised before EIR returned: no episode was recorded
        elif r.trajectory.submitted is None:
            forced += 1  # the episode ran out of turns without an accepted submit
        elif not r.trajectory.submitted.strip():
            empty += 1
        else:
            eligible.append(r)
    return eligible, forced, empty, failed


def f1_outcomes(submitted: list[float], final: list[float]) -> tuple[list[float], list[float], int]:
    """Per question, final against submitted F1 (0-100): the gains where the final call won, the
    losses (as positive points) where it lost, and the number of ties."""
    diffs = [f - s for s, f in zip(submitted, final)]
    wins = [d for d in diffs if d > TIE]
    losses = [-d for d in diffs if d < -TIE]
    return wins, losses, len(diffs) - len(wins) - len(losses)


def analyze(runs: list[LoggedRun], context: Context, out: Path) -> Report:
    report = Report()
    eir = [r for r in runs if r.label.startswith(names.EIR)]
    report.notes += corpus_note("H.4", eir)
    for run in runs:
        if run not in eir:
            report.skipped(run, f"{run.label} is not EIR; only EIR submits an answer it then re-answers")
    if not eir:
        raise SelectionError("final-vs-submitted needs EIR runs; none among the selected runs")
    rows, seen = [], set()
    for run in sorted(eir, key=lambda r: (r.dataset, r.lm, r.variant, -r.start_time)):
        eligible, forced, empty, failed = split(run.question_records)
        key = run_key(run, seen)
        counts = {"n": len(run.records), "eligible": len(eligible), "excluded_forced": forced,
                  "excluded_empty": empty, "excluded_failed": failed}
        report.keyed(key, counts)
        head = [*run_cells(run), *map(str, counts.values())]
        if not eligible:
            report.notes.append(f"{run.run_id} ({run.name}): no question with an accepted non-empty submission")
            rows.append(head + ["–"] * 12)
            continue
        submitted = [answer_scores(r, run.dataset, r.trajectory.submitted) for r in eligible]
        final = [answer_scores(r, run.dataset, r.prediction or "") for r in eligible]
        f1_sub, f1_fin = [100 * f for f, _ in submitted], [100 * f for f, _ in final]
        em_sub, em_fin = [em >= 1 for _, em in submitted], [em >= 1 for _, em in final]
        delta = paired_bootstrap(f1_sub, f1_fin, context.resamples, context.seed)
        em = mcnemar_exact(em_sub, em_fin)  # b: lost (only the submission exact), c: gained
        n = len(eligible)
        wins, losses, ties = f1_outcomes(f1_sub, f1_fin)
        values = {"f1_submitted": sum(f1_sub) / n, "f1_final": sum(f1_fin) / n, "f1_diff": delta.diff,
                  "f1_ci_low": delta.low, "f1_ci_high": delta.high, "f1_p": delta.p,
                  "em_submitted": 100 * sum(em_sub) / n, "em_final": 100 * sum(em_fin) / n,
                  "em_gained": em.c, "em_lost": em.b, "mcnemar_p": em.p,
                  "f1_wins": len(wins), "f1_losses": len(losses), "f1_ties": ties,
                  "f1_mean_gain": sum(wins) / len(wins) if wins else float("nan"),
                  "f1_mean_loss": sum(losses) / len(losses) if losses else float("nan")}
        report.keyed(key, values)
        rows.append(head + [f"{values['f1_submitted']:.1f}", f"{values['f1_final']:.1f}",
                            interval(delta), fmt_p(delta.p),
                            f"{values['em_submitted']:.1f}", f"{values['em_final']:.1f}", str(em.c), str(em.b),
                            fmt_p(em.p), f"{len(wins)} / {len(losses)} / {ties}",
                            _signed(values["f1_mean_gain"], "+"), _signed(values["f1_mean_loss"], "−")])
    head = ["method", "dataset", "LM", "n", "eligible", "forced", "empty", "failed", "F1 submitted", "F1 final",
            "ΔF1 final − submitted [95% CI]", "p", "EM submitted", "EM final", "EM gained", "EM lost", "McNemar p",
            "F1 wins / losses / ties", "mean gain", "mean loss"]
    report.table(
        "h4_final_vs_submitted.md", "H.4: the final call's answer vs the answer submitted during retrieval",
        markdown(head, rows),
        "Eligible: questions whose episode ended with an accepted submit carrying a non-empty answer; "
        "*forced* ended without one, *empty* submitted an empty answer, *failed* raised before the episode "
        "was recorded. Both answers are scored by the dataset's official rules on the eligible questions "
        f"(0-100). ΔF1: paired bootstrap ({context.resamples} resamples, seed {context.seed}). EM gained: the "
        "final answer exact and the submitted one not; lost: the reverse; exact McNemar on those. F1 wins / "
        "losses / ties: questions whose final answer scored a higher / lower / the same F1 than the submitted one; "
        "mean gain: the mean F1 points gained over the wins; mean loss: the mean F1 points lost over the losses.")
    return report


def _signed(points: float, sign: str) -> str:
    return "–" if points != points else f"{sign}{points:.1f}"
