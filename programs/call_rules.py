"""The most LM calls one question can cost, per method: an UPPER BOUND read off the programs' code.

Counted as the ledger counts them (eir_dspy/accounting/): one call per `lm_call`. Every method
decodes through DecodingAdapter, a dspy.JSONAdapter, which never falls back to a second request
on a parse failure (an unusable output is handled by the program, not retried), so one `lm_call`
is one model request; a provider's own retries of a failed request happen inside that one call.
Real questions usually cost less: an episode stops at the first accepted submit, SSR refines only
some turns, Reflexion stops at the first trial its oracle accepts. `eval.grid --dry-run` multiplies
this bound by the questions of a cell.
"""

from __future__ import annotations

from programs import CORPUS_METHODS, METHODS
from programs.eir_policy import ABLATIONS
from programs.eir_repair import MAX_REPAIRS_PER_TURN
from programs.setting import turn_limit
from signatures.ssr import STEPS

SETTINGS = ("pool", "corpus")
_CORPUS = object()  # stands for "a corpus index is given": programs.setting.turn_limit only tests it against None
_OPTIONS = {"setting", "ablation", "invalid_updates", "votes", "trials", "verifier_temperature"}


def action_turns(budget: int, setting: str, pool_limit: int | None) -> int:
    """Action turns of one episode (programs/setting.py turn_limit, eir_dspy/episode.py max_turns):
    the corpus setting's fixed turn count; in the pool the method's limit, or H reads plus one more
    decision where the method gives none (EIR)."""
    limit = turn_limit(_CORPUS if setting == "corpus" else None, pool_limit)
    return limit if limit is not None else budget + 1


def max_calls(method: str, budget: int, **options) -> int:
    """At most this many LM calls per question for `method` at read budget H = `budget`.

    options: setting ("pool" | "corpus", default pool), ablation (EIR), invalid_updates (EIR; changes
    no count: a rejected and a discarding turn both cost one call), votes (SSR, default 3), trials
    (Reflexion, default 5), verifier_temperature (SSR; changes no count).
    """
    unknown = set(options) - _OPTIONS
    if unknown:
        raise ValueError(f"unknown option(s) {sorted(unknown)}; known: {sorted(_OPTIONS)}")
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(sorted(METHODS))}")
    if budget < 1:
        raise ValueError(f"budget must be a positive integer, got {budget}")
    setting = options.get("setting") or "pool"
    if setting not in SETTINGS:
        raise ValueError(f"unknown setting {setting!r}; choose one of {', '.join(SETTINGS)}")
    if setting == "corpus" and method not in CORPUS_METHODS:
        raise ValueError(f"method {method} has no corpus setting")
    ablation = options.get("ablation") or "none"
    if ablation != "none" and method != "eir":
        raise ValueError(f"--ablation is an EIR ablation; method {method} has none")
    if ablation not in ABLATIONS:
        raise ValueError(f"unknown EIR ablation {ablation!r}; choose one of {', '.join(ABLATIONS)}")

    if method == "eir":
        # programs/eir.py: run_episode(max_turns=turn_limit(corpus, None)), so H + 1 turns in the pool
        # (12 in the corpus), one `action` call each (EIRPolicy.propose), then ALWAYS one `final` call
        # (AnswerFromEvidence), also after a forced end.
        turns = action_turns(budget, setting, None)
        calls = turns + 1
        if ablation.startswith("repair"):
            # programs/eir_repair.py RepairingPolicy.commit: after a turn's update, at most
            # MAX_REPAIRS_PER_TURN `repair` calls plus one `refresh` call, on every turn but a
            # submitting one and the last. `repair-unapplied` makes the same calls.
            calls += (turns - 1) * (MAX_REPAIRS_PER_TURN + 1)
        return calls
    if method == "direct":
        # programs/direct.py: max_turns=turn_limit(corpus, H): H turns in all in the pool (reads and
        # the submit), 12 in the corpus; one `action` call per turn, no final call.
        return action_turns(budget, setting, budget)
    if method == "full_pool":
        # programs/full_pool.py: one `final` call over the whole pool; nothing is read turn by turn.
        return 1
    if method == "ssr":
        # programs/ssr.py SSRPolicy.propose, per turn: the `action` proposal, one `decompose`, `votes`
        # `verify` calls for each of the len(STEPS) = 3 steps (verification always runs), and at most
        # one `refine` (programs/ssr_voting.step_to_refine picks at most one step). The agreed-correction
        # fallback makes no call. Turns as Direct: H in the pool, 12 in the corpus.
        votes = int(options.get("votes") or 3)
        per_turn = 1 + 1 + len(STEPS) * votes + 1
        return action_turns(budget, setting, budget) * per_turn
    if method == "reflexion":
        # programs/reflexion.py: at most `trials` Direct-style trajectories (each H turns in the pool,
        # 12 in the corpus, one `action` call a turn) and one `reflect` call after each failed trial
        # except the last. Its reflexion_first result is trial 1 of the same run: no extra calls.
        trials = int(options.get("trials") or 5)
        return trials * action_turns(budget, setting, budget) + (trials - 1)
    raise ValueError(f"no call rule for method {method!r}; add one to programs/call_rules.py")
