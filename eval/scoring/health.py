"""Degenerate runs: warnings for a run whose behaviour makes its scores say little.

`warnings_for(label, records)` reads only the per-question records (eval.files.question_record), so a finished
run, a killed one's results file and a run read back from MLflow give the same warnings. eval.run
prints them under its summary and logs them on the run (eval.runs.tracking.log_warnings: the
`eir.degenerate` tag and the `degenerate_*` metrics); eval.summary and eval.compare print them. A
healthy run gets none. The counts come from eval.scoring.run_metrics, the same ones its tables show.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from statistics import mean
from typing import Any

from eir_dspy.environment import match_title
from eval.files.question_record import QuestionRecord, as_records
from eval.scoring.run_metrics import episodes, fallback_reads, rejections
from programs.registry import METHODS

# The thresholds. Each marks the point past which a score mostly measures the failure, not the method.
# More than half the turns rejected: most of the budget bought nothing, and what the agent read and
# answered came from the few turns that worked.
MOST_TURNS_REJECTED = 0.5
# More than half the episodes without a submission: a method scored on its submission scores 0 on each,
# so its F1 counts the episodes that happened to submit.
MOST_EPISODES_UNSUBMITTED = 0.5
# Fewer than one paragraph read a question on average, or more than half the questions reading none:
# the answers rest on titles (or nothing), not on evidence.
FEW_READS_PER_QUESTION = 1.0
MOST_QUESTIONS_UNREAD = 0.5
# More than half the final answers empty (every one scores 0), or cut at the token limit (the model ran
# out of tokens before it finished writing them).
# More than half of EIR's accepted turns with their list updates discarded (the pool's rule): the lists
# that should guide its reads were mostly never built, so EIR ran as little more than a reader.
MOST_UPDATES_DISCARDED = 0.5
# More than half of a pool run's reads title fallbacks (the title named no unread paragraph, so the pool
# read its first unread one): the paragraphs read were mostly the pool's order, not the agent's choice.
MOST_READS_FALLBACKS = 0.5
MOST_ANSWERS_EMPTY = 0.5
MOST_ANSWERS_CUT = 0.5

# The calls that write a question's answer, by role (eir_dspy.accounting): EIR's and Full Pool's
# final call, else the last turn's action (SSR: or its refinement).
FINAL_ROLE = "final"
TURN_ROLES = ("action", "refine")


@dataclass(frozen=True)
class RunWarning:
    """One sign that a run degenerated: `count` of `total` (turns, episodes, questions or answering
    calls) went wrong, mostly for `cause` (`cause_count` of them), as `text` says."""

    # rejected_turns, no_submission, few_reads, title_fallbacks, discarded_updates, empty_answers, cut_at_limit
    code: str
    count: int
    total: int
    text: str
    cause: str | None = None
    cause_count: int | None = None


def warnings_for(label: str, records: Iterable[dict | QuestionRecord], *, method: str | None = None,
                 max_tokens: int | None = None) -> list[RunWarning]:
    """The warnings of a run's records, each text starting with `label`. `method` (a key of
    programs.registry.METHODS) says which warnings apply; by default the method the records' trajectories
    name. `max_tokens`: the run's completion limit; without it, answers cut at the limit are not
    looked for."""
    records = as_records(records)
    if not records:
        return []
    method = method or method_of(records)
    traits = METHODS.get(method)  # which checks apply: the method's registry entry (none known: the generic ones)
    reads = traits is None or traits.reads
    found = [rejected_turns(records), no_reads(records) if reads else None,
             title_fallbacks(records) if reads else None,
             unsubmitted(records) if traits and traits.submits else None,
             discarded_updates(records) if traits and traits.keeps_lists else None,
             empty_answers(records, method, max_tokens), cut_answers(records, max_tokens)]
    return [RunWarning(code, count, total, f"{label}: {text}", *cause) for code, count, total, text, cause
            in filter(None, found)]


def render(warnings: list[RunWarning]) -> str:
    """The warnings as printed: one `warning: ...` line each ("" for none)."""
    return "".join(f"warning: {w.text}\n" for w in warnings)


def method_of(records: list[QuestionRecord]) -> str | None:
    """The method most of the records' trajectories name (None: no record has a trajectory)."""
    named = Counter(r.trajectory.method for r in records if r.trajectory is not None)
    return named.most_common(1)[0][0] if named else None


Found = tuple[str, int, int, str, tuple[str | None, int | None]]  # code, count, total, text, (cause, its count)


def rejected_turns(records: list[QuestionRecord]) -> Found | None:
    rejected, turns, causes = rejections(records)
    if not turns or rejected / turns <= MOST_TURNS_REJECTED:
        return None
    cause = main_cause(causes)
    text = f"{percent(rejected, turns)} of turns rejected ({rejected} of {turns}{cause_text(cause, '; ')})"
    return "rejected_turns", rejected, turns, text, cause


def unsubmitted(records: list[QuestionRecord]) -> Found | None:
    ran = episodes(records)
    without = [turns for turns, ended_without in ran if ended_without]
    if not ran or len(without) / len(ran) <= MOST_EPISODES_UNSUBMITTED:
        return None
    cause = main_cause(Counter(why_no_submit(turns) for turns in without))
    text = f"{len(without)} of {len(ran)} episodes ended without a submission{cause_text(cause)}"
    return "no_submission", len(without), len(ran), text, cause


def discarded_updates(records: list[QuestionRecord]) -> Found | None:
    accepted = [t for r in records if r.trajectory is not None for t in r.trajectory.turns or () if t.get("accepted")]
    causes = Counter(t["discarded_cause"] for t in accepted if t.get("discarded_cause"))
    discarded = sum(causes.values())
    if not accepted or discarded / len(accepted) <= MOST_UPDATES_DISCARDED:
        return None
    cause = main_cause(causes)
    text = (f"{percent(discarded, len(accepted))} of accepted turns had their list updates discarded "
            f"({discarded} of {len(accepted)}{cause_text(cause, '; ')})")
    return "discarded_updates", discarded, len(accepted), text, cause


def no_reads(records: list[QuestionRecord]) -> Found | None:
    answered = [r for r in records if r.error is None]  # a failed question has no episode to read in
    if not answered:
        return None
    per_question = mean(r.reads or 0 for r in answered)
    unread = [r for r in answered if not r.reads]
    if per_question >= FEW_READS_PER_QUESTION and len(unread) / len(answered) <= MOST_QUESTIONS_UNREAD:
        return None
    cause = main_cause(Counter(why_no_reads(r) for r in unread))
    text = (f"almost no paragraphs read ({per_question:.1f} a question; {len(unread)} of {len(answered)} "
            f"questions read none{cause_text(cause, ', ')})")
    return "few_reads", len(unread), len(answered), text, cause


def title_fallbacks(records: list[QuestionRecord]) -> Found | None:
    """Most reads were title fallbacks. Counted over the records that count fallbacks (pool runs; None
    elsewhere), from their `title_fallbacks` and `reads`; the cause from their trajectories' turns."""
    fallbacks, reads = fallback_reads(records)
    if not reads or fallbacks / reads <= MOST_READS_FALLBACKS:
        return None
    cause = main_cause(Counter(why_fallback(turns, i) for r in records if r.trajectory is not None
                               for turns in r.trajectory.episodes() or [] for i, t in enumerate(turns)
                               if t.get("title_fallback")))
    text = (f"{fallbacks} of {reads} reads ({percent(fallbacks, reads)}) were title fallbacks: the agent asked for "
            "titles it had already read or that are not in the pool, so the pool read its first unread paragraph "
            f"instead{cause_text(cause)}")
    return "title_fallbacks", fallbacks, reads, text, cause


def empty_answers(records: list[QuestionRecord], method: str | None, max_tokens: int | None) -> Found | None:
    empty = [r for r in records if not (r.prediction or "").strip()]
    if len(empty) / len(records) <= MOST_ANSWERS_EMPTY:
        return None
    cause = main_cause(Counter(why_empty(r, method, max_tokens) for r in empty))
    n = len(records)
    text = (f"every answer is empty ({n} of {n}{cause_text(cause, '; ')})" if len(empty) == n
            else f"{len(empty)} of {n} answers are empty{cause_text(cause)}")
    return "empty_answers", len(empty), n, text, cause


def cut_answers(records: list[QuestionRecord], max_tokens: int | None) -> Found | None:
    if not max_tokens:
        return None
    answering = [c for c in map(answer_call, records) if c is not None]
    cut = [c for c in answering if is_cut(c, max_tokens)]
    if not answering or len(cut) / len(answering) <= MOST_ANSWERS_CUT:
        return None
    calls = [c for r in records for c in r.lm_calls or []]
    text = (f"{len(cut)} of {len(answering)} answering calls stopped at the {max_tokens}-token limit "
            f"({sum(is_cut(c, max_tokens) for c in calls)} of {len(calls)} calls in all)")
    return "cut_at_limit", len(cut), len(answering), text, (None, None)


def answer_call(r: QuestionRecord) -> dict[str, Any] | None:
    """The call that wrote the question's answer: its last final call, else its last turn call
    (None: the record kept no calls, or none of these)."""
    calls = r.lm_calls or []
    final = [c for c in calls if c.get("role") == FINAL_ROLE]
    return (final or [c for c in calls if c.get("role") in TURN_ROLES] or [None])[-1]


def is_cut(call: dict[str, Any], max_tokens: int) -> bool:
    """The call's completion reached the token limit (records keep token counts, not finish reasons)."""
    return (call.get("completion_tokens") or 0) >= max_tokens


def why_no_submit(turns: list[dict[str, Any]]) -> str:
    """How an episode without a submission spent its last turn."""
    if not turns:
        return "no turns"
    if not any(t.get("accepted") for t in turns):
        return "every turn rejected"
    last = turns[-1]
    if not last.get("accepted"):
        return f"last turn rejected ({last.get('rejection_cause') or 'no cause recorded'})"
    kinds = {(t.get("action") or {}).get("kind") or "action" for t in turns}
    kind = (last.get("action") or {}).get("kind") or "action"
    every = len(kinds) == 1 and all(t.get("accepted") for t in turns)
    return f"{kind} on every turn" if every else f"{kind} on the last turn"


def why_no_reads(r: QuestionRecord) -> str:
    if not r.turns:
        return "no turns"
    if r.rejected_actions == r.turns:
        return "every turn rejected"
    if r.forced_end is False:
        return "submitted without reading"
    return "no read in its turns"


def why_fallback(turns: list[dict[str, Any]], i: int) -> str:
    """Why the read of turn `i` fell back: its title names a paragraph read earlier in the episode (the
    pool's own matching), else none in the pool (a fallback's title matches no unread one)."""
    requested = (turns[i].get("action") or {}).get("title") or ""
    earlier = tuple(t["read_title"] for t in turns[:i] if t.get("accepted") and t.get("read_title"))
    return "title already read" if match_title(requested, earlier) else "title not in the pool"


def why_empty(r: QuestionRecord, method: str | None, max_tokens: int | None) -> str:
    if r.error is not None:
        return "question failed"
    call = answer_call(r)
    if max_tokens and call is not None and is_cut(call, max_tokens):
        return "cut at the token limit"
    if r.trajectory is not None and r.trajectory.final_parsed is False:
        return "final answer unreadable"
    if method in METHODS and METHODS[method].submits and r.forced_end:
        return "no submission"
    return "answered empty"


def main_cause(causes: Counter[str]) -> tuple[str | None, int | None]:
    """The most frequent cause and its count (ties: the first by name); (None, None) for none."""
    if not causes:
        return None, None
    cause, count = min(causes.items(), key=lambda item: (-item[1], item[0]))
    return cause, count


def cause_text(cause: tuple[str | None, int | None], sep: str | None = None) -> str:
    """'; main cause X: n' inside a parenthesis already open (`sep`), else ' (main cause X: n)'."""
    name, count = cause
    if name is None:
        return ""
    return f"{sep}main cause {name}: {count}" if sep else f" (main cause {name}: {count})"


def percent(part: int, whole: int) -> str:
    return f"{round(100 * part / whole)}%"
