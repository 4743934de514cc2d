"""Run-level metrics, computed only from per-question records."""

from __future__ import annotations

from collections import Counter
from statistics import mean
from typing import Any

from eval.files.question_record import QuestionRecord, as_records
from eval.files.results_file import wall_time
from eval.scoring.formatting import piped
from eval.scoring.metrics import aggregate, aggregate_defined
from programs.registry import METHODS
from programs.trajectory_record import Trajectory


def summarize(records: list[dict | QuestionRecord]) -> dict[str, float]:
    """Answer/EM/support on a 0-100 scale over every question (failures count as 0); support EM
    and HotpotQA's joint EM/F1 over the questions that have them, left out when none does."""
    if not records:
        raise ValueError("no per-question records to summarize")
    records = as_records(records)
    scores = [r.scores() for r in records]
    n = len(records)
    rejected, turns, _ = rejections(records)
    costs = [r.cost_usd for r in records]
    priced = all(c is not None for c in costs)
    return {
        **aggregate(scores),  # answer_f1, em, support_f1
        **aggregate_defined(scores),  # sp_em, joint_em, joint_f1
        "calls_per_question": mean(r.calls for r in records),
        "prompt_tokens_per_question": mean(r.prompt_tokens for r in records),
        "completion_tokens_per_question": mean(r.completion_tokens for r in records),
        "tokens_per_question": mean(r.prompt_tokens + r.completion_tokens for r in records),
        "cost_usd": sum(costs) if priced else float("nan"),
        "cost_per_question_usd": (sum(costs) / n) if priced else float("nan"),
        "rejected_action_rate": (rejected / turns) if turns else 0.0,
        "gold_paragraphs_read": 100 * mean(r.gold_read_share for r in records),
        "reads_per_question": mean(r.reads for r in records),
        "searches_per_question": mean(r.searches or 0 for r in records),  # 0 in the pool setting
        "seconds_per_question": mean(r.seconds for r in records),
        # Wall time over questions: what a question costs when several run at once (--threads).
        **wall_per_question(records),
        "forced_end_rate": mean(1.0 if r.forced_end else 0.0 for r in records),
        "failed_questions": float(sum(r.error is not None for r in records)),
        "cache_hit_calls": float(sum(r.cache_hits for r in records)),
        **paid_and_replayed(records),
        **citations_outside_evidence(records),
        **behaviour(records),
        "n": float(n),
    }


def wall_per_question(records: list[QuestionRecord]) -> dict[str, float]:
    """Wall time over the questions it produced (records made before timestamps existed have none)."""
    timed = [r for r in records if r.part_started_at is not None and r.finished_at is not None]
    return {"wall_seconds_per_question": wall_time(timed) / len(timed)} if timed and wall_time(timed) else {}


def paid_and_replayed(records: list[QuestionRecord]) -> dict[str, float]:
    """What the run paid for and what it replayed from DSPy's response cache (an identical earlier
    request, or a question resumed mid-way), in calls and tokens. A replayed call keeps the tokens of
    the call that produced it (eir_dspy/accounting/replay.py), so the per-question figures above count
    both; these say how they split. Records made before calls were logged one by one have none."""
    calls = [c for r in records for c in (r.lm_calls or [])]
    if not calls:
        return {}
    replayed = [c for c in calls if c.get("cache_hit")]
    paid = [c for c in calls if not c.get("cache_hit")]
    tokens = lambda cs: float(sum((c.get("prompt_tokens") or 0) + (c.get("completion_tokens") or 0) for c in cs))  # noqa: E731
    return {"paid_calls": float(len(paid)), "replayed_calls": float(len(replayed)),
            "paid_tokens": tokens(paid), "replayed_tokens": tokens(replayed)}


def behaviour(records: list[dict | QuestionRecord]) -> dict[str, float]:
    """How the agent acted, beyond its score: rejected turns by cause (share of all turns), episodes
    that ended without a valid submit (share of episodes), title fallbacks, submits made before the
    last turn, and for EIR how it used its two lists. A key is left out when no record has what it
    needs (older records, or a method without lists)."""
    records = as_records(records)
    out: dict[str, float] = {}
    _, turns, causes = rejections(records)
    for cause in sorted(causes):
        out[f"rejected_{cause}_rate"] = causes[cause] / turns
    ends = [without for _, without in episodes(records)]
    if ends:
        out["no_submission_rate"] = mean(1.0 if without else 0.0 for without in ends)
    fallbacks = [r.title_fallbacks for r in records if r.title_fallbacks is not None]
    if fallbacks:
        out["title_fallbacks_per_question"] = mean(fallbacks)
    early = [r.submitted_before_budget for r in records if r.submitted_before_budget is not None]
    if early:
        out["submitted_before_budget"] = 100 * mean(early)
    lists = eir_lists(records)
    if lists:
        out["list_entries_per_question"] = list_entries(records)
        out["requirements_per_question"] = mean(len(t.requirements) for t in lists)
        out["conclusions_per_question"] = mean(len(t.conclusions) for t in lists)
        # Conclusions are kept only when every citation names a sentence read, so any kept one is valid.
        out["lists_used"] = 100 * mean(1.0 if t.requirements and t.conclusions else 0.0 for t in lists)
        out["list_updates_discarded_per_question"] = mean(t.list_updates["discarded"] for t in lists)
    return out


def fallback_reads(records: list[QuestionRecord]) -> tuple[int, int]:
    """Title fallbacks and all reads, over the records that count fallbacks (pool runs; None elsewhere)."""
    counted = [r for r in records if r.title_fallbacks is not None]
    return sum(r.title_fallbacks for r in counted), sum(r.reads or 0 for r in counted)


def rejections(records: list[QuestionRecord]) -> tuple[int, int, Counter[str]]:
    """Rejected turns, all turns, and the rejected turns by cause, over every record's episodes
    (a record made before causes were recorded adds to the first two only)."""
    causes: Counter[str] = Counter()
    for r in records:
        causes.update(r.rejections_by_cause or {})
    return sum(r.rejected_actions or 0 for r in records), sum(r.turns or 0 for r in records), causes


def episodes(records: list[QuestionRecord]) -> list[tuple[list[dict[str, Any]], bool]]:
    """Every episode the records hold (Reflexion: one per trial) as (its turns, whether it ended without
    a valid submit). Full Pool has none; an episode that did not record how it ended is left out."""
    out = []
    for r in records:
        t = r.trajectory
        if t is None:
            continue
        if t.trials is not None:
            out += [(trial.get("turns") or [], trial["forced_end"]) for trial in t.trials
                    if trial.get("forced_end") is not None]
        elif t.turns is not None and t.forced_end is not None:
            out.append((t.turns, t.forced_end))
    return out


def eir_lists(records: list[QuestionRecord]) -> list[Trajectory]:
    """The trajectories of records whose method keeps EIR's lists (its registry entry) and that kept their
    list-update counts (older EIR records did not)."""
    return [r.trajectory for r in records if r.trajectory is not None and METHODS[r.trajectory.method].keeps_lists
            and r.trajectory.list_updates is not None]


def list_entries(records: list[QuestionRecord]) -> float:
    """Requirements + conclusions in the final lists, per EIR episode (NaN when no record has lists)."""
    lists = eir_lists(records)
    return mean(len(t.requirements) + len(t.conclusions) for t in lists) if lists else float("nan")


def citations_outside_evidence(records: list[QuestionRecord]) -> dict[str, float]:
    """Share (0-100) of the answers' citations that name a sentence the answering call was not shown.
    Left out for records made before it was recorded, and when no answer cited anything."""
    known = [r for r in records if r.citations_outside_evidence is not None]
    cited = sum(len(r.citations) for r in known)
    if not known or not cited:
        return {}
    return {"citations_outside_evidence": 100 * sum(r.citations_outside_evidence for r in known) / cited}


TABLE_KEYS = [
    ("answer_f1", "Answer F1", "{:.1f}"),
    ("em", "EM", "{:.1f}"),
    ("support_f1", "Support F1", "{:.1f}"),
    ("sp_em", "Support EM", "{:.1f}"),
    ("joint_em", "Joint EM", "{:.1f}"),  # HotpotQA only: "-" elsewhere
    ("joint_f1", "Joint F1", "{:.1f}"),
    ("calls_per_question", "calls/q", "{:.2f}"),
    ("tokens_per_question", "tokens/q", "{:.0f}"),
    ("seconds_per_question", "s/q", "{:.1f}"),
    ("wall_seconds_per_question", "wall s/q", "{:.1f}"),
    ("reads_per_question", "reads/q", "{:.2f}"),
    ("searches_per_question", "searches/q", "{:.2f}"),
    ("rejected_action_rate", "rejected", "{:.3f}"),
    ("no_submission_rate", "no submit", "{:.2f}"),
    ("title_fallbacks_per_question", "fallbacks/q", "{:.2f}"),  # pool runs: "-" where records have no count
    ("gold_paragraphs_read", "gold read %", "{:.1f}"),
]


# eval.compare's runs table (runs.md): one row per compared run, from `summarize`.
RUN_ROW_KEYS = [
    ("answer_f1", "Answer F1", "{:.1f}"),
    ("em", "EM", "{:.1f}"),
    ("support_f1", "Support F1", "{:.1f}"),
    ("calls_per_question", "calls/q", "{:.2f}"),
    ("reads_per_question", "reads/q", "{:.2f}"),
    ("rejected_action_rate", "rejected", "{:.3f}"),
    ("no_submission_rate", "no submit", "{:.2f}"),
    ("title_fallbacks_per_question", "fallbacks/q", "{:.2f}"),
    ("seconds_per_question", "s/q", "{:.1f}"),
]


# `python -m eval.summary --behaviour`: how the agent acted (docs/lm.md, "Decoding").
BEHAVIOUR_KEYS = [
    ("answer_f1", "Answer F1", "{:.1f}"),
    ("em", "EM", "{:.1f}"),
    ("support_f1", "Support F1", "{:.1f}"),
    ("rejected_action_rate", "rejected", "{:.3f}"),
    ("rejected_not_json_rate", "not JSON", "{:.3f}"),
    ("rejected_missing_field_rate", "missing field", "{:.3f}"),
    ("rejected_wrong_type_rate", "wrong type", "{:.3f}"),
    ("rejected_unusable_rate", "other unusable", "{:.3f}"),
    ("rejected_no_reads_left_rate", "read, none left", "{:.3f}"),
    ("rejected_invalid_citation_rate", "bad citation", "{:.3f}"),
    ("rejected_invalid_action_rate", "invalid action (older runs)", "{:.3f}"),
    ("forced_end_rate", "forced end", "{:.2f}"),
    ("no_submission_rate", "no submit", "{:.2f}"),
    ("title_fallbacks_per_question", "fallbacks/q", "{:.2f}"),
    ("submitted_before_budget", "early submit %", "{:.0f}"),
    ("list_entries_per_question", "list entries/q", "{:.1f}"),
    ("lists_used", "req+concl %", "{:.0f}"),
    ("list_updates_discarded_per_question", "discarded/q", "{:.1f}"),
    ("tokens_per_question", "tokens/q", "{:.0f}"),
    ("completion_tokens_per_question", "out tokens/q", "{:.0f}"),
    ("replayed_calls", "replayed calls", "{:.0f}"),  # from DSPy's cache, counted at what they cost when made
    ("seconds_per_question", "s/q", "{:.1f}"),
    ("wall_seconds_per_question", "wall s/q", "{:.1f}"),
]


def format_table(metrics: dict[str, float], label: str, keys=TABLE_KEYS) -> str:
    head = ["run"] + [name for _, name, _ in keys]
    row = [label] + [fmt.format(metrics[k]) if k in metrics else "-" for k, _, fmt in keys]
    return piped(head, row)
