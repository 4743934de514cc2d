"""Why a turn was rejected: a machine-readable cause beside the text the model is shown.

Every rejected turn records one cause. An output that could not be used at all carries the
accounting layer's cause (`not_json`, `not_json_only`, `missing_field`, `wrong_type`, `unusable`); a
usable output whose action cannot run, or (EIR) whose list updates are invalid, carries one of the
causes below. Runs recorded before causes were split hold `invalid_action` (LEGACY) for all of these:
a recorded cause, not an old format, so scripts/migrate_runs.py leaves it (it cannot tell which it was).
"""

from __future__ import annotations

from dataclasses import dataclass

NOT_JSON_ONLY = "not_json_only"  # a JSON-only method's output had text around its JSON object
WRONG_TYPE = "wrong_type"  # a value of the wrong type (also an EIR list update's, e.g. a sentence position "1")
MISSING_FIELD = "missing_field"  # a required field absent (also inside an EIR list update's entry)
NO_ACTION = "no_action"  # the output parsed but named no action
EMPTY_ANSWER = "empty_answer"  # a Direct-style submit with no answer
INVALID_CITATION = "invalid_citation"  # a Direct-style submit, or an EIR list update, citing a sentence not read
UNKNOWN_LIST_ID = "unknown_list_id"  # an EIR list update revising (or depending on) an entry id that does not exist
INVALID_DEPENDENCY = "invalid_dependency"  # a repair ablation's conclusion depending on itself
NO_READS_LEFT = "no_reads_left"  # a read after the read budget is spent
ALL_READ = "all_read"  # a read when every pool paragraph has been read
UNKNOWN_ID = "unknown_id"  # a corpus read of an id no search in this trial returned
REPEATED_SEARCH = "repeated_search"  # a corpus search with the same indexed terms as an earlier one
EMPTY_SEARCH = "empty_search"  # a corpus search with no indexed word
SEARCH_IN_POOL = "search_in_pool"  # a search in the distractor setting, which has none
# anything but a submit on the last turn of a turn-limited trial: the corpus setting's (H.1), and the
# pool's for Direct, SSR and Reflexion (the project's choice; EIR in the pool has no turn limit)
SUBMIT_ONLY_TURN = "submit_only_turn"
LEGACY = "invalid_action"  # what older records hold for any of the above


@dataclass(frozen=True)
class Rejection:
    cause: str
    text: str  # what the next prompt tells the model
