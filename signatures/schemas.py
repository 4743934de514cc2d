"""JSON schemas for `--decoding strict`, built per call from the live state.

They mirror the signatures' output fields (what JSONAdapter parses) but narrow them: titles
become enums of the titles that are really there, lists and strings get small caps so a
1.5B model cannot ramble. The other modes never see them (eir_dspy/lm/decoding.py).
"""

from __future__ import annotations

from signatures.search_turns import PLAN_FIELDS

_TEXT = {"type": "string", "maxLength": 200}
_ID = {"anyOf": [{"type": "string", "maxLength": 8}, {"type": "null"}]}


def _title_enum(titles: list[str]) -> dict:
    # llama.cpp's schema-to-grammar converter mis-escapes a literal holding `"` or `\`;
    # for such pools fall back to a free string (the environment still matches titles).
    if any('"' in t or "\\" in t for t in titles):
        return {"type": "string", "maxLength": 200}
    return {"enum": list(titles)}


def _citations(read_titles: list[str], max_items: int) -> dict:
    if not read_titles:
        return {"const": []}  # the converter ignores maxItems 0
    item = {
        "type": "object",
        "properties": {"title": _title_enum(read_titles), "sentence": {"type": "integer", "minimum": 0}},
        "required": ["title", "sentence"],
    }
    return {"type": "array", "items": item, "maxItems": max_items}


def _depends_on(conclusion_ids: list[str]) -> dict:
    return {"type": "array", "items": {"enum": list(conclusion_ids)}, "maxItems": 3} if conclusion_ids else {"const": []}


def _list_updates(read_titles: list[str], conclusion_ids: list[str] | None = None) -> dict:
    """EIR's two list-update fields, the same in both settings; with `conclusion_ids` (the repair
    ablations) each conclusion also names the existing conclusions it depends on."""
    requirement = {
        "type": "object",
        "properties": {"id": _ID, "text": _TEXT, "status": {"enum": ["open", "satisfied"]}},
        "required": ["id", "text", "status"],
    }
    conclusion = {
        "type": "object",
        "properties": {"id": _ID, "claim": _TEXT, "status": {"enum": ["supported", "retracted"]},
                       "citations": _citations(read_titles, 3)},
        "required": ["id", "claim", "status", "citations"],
    }
    if conclusion_ids is not None:
        conclusion["properties"]["depends_on"] = _depends_on(conclusion_ids)
        conclusion["required"].append("depends_on")
    return {"requirement_updates": {"type": "array", "items": requirement, "maxItems": 3},
            "conclusion_updates": {"type": "array", "items": conclusion, "maxItems": 3}}


def _eir_schema(read_titles: list[str], action: dict, conclusion_ids: list[str] | None = None) -> dict:
    return {"type": "object", "properties": {**_list_updates(read_titles, conclusion_ids), "action": action},
            "required": ["requirement_updates", "conclusion_updates", "action"]}


# A read names only a title (or id) and a submit only an answer: no tokens spent on other fields.
_SUBMIT = {"type": "object", "properties": {"kind": {"const": "submit"}, "answer": {"type": "string", "maxLength": 100}},
           "required": ["kind", "answer"]}
_SEARCH = {"type": "object", "properties": {"kind": {"const": "search"}, "query": {"type": "string", "maxLength": 80}},
           "required": ["kind", "query"]}


def eir_turn_schema(unread_titles: list[str], read_titles: list[str], reads_left: int,
                    conclusion_ids: list[str] | None = None) -> dict:
    read = {"type": "object", "properties": {"kind": {"const": "read"}, "title": _title_enum(unread_titles)},
            "required": ["kind", "title"]}
    # Once no read is allowed, submit is the only valid action: decode nothing else.
    return _eir_schema(read_titles, {"anyOf": [read, _SUBMIT]} if unread_titles and reads_left > 0 else _SUBMIT,
                       conclusion_ids)


def _read_id(unread_ids: list[str]) -> dict:
    return {"type": "object", "properties": {"kind": {"const": "read"}, "paragraph_id": {"enum": list(unread_ids)}},
            "required": ["kind", "paragraph_id"]}


def search_choices(unread_ids: list[str], can_read: bool, last_turn: bool, submit: dict) -> dict:
    """The corpus setting's valid actions now: search, read a found unread id, submit (only submit on the last turn)."""
    if last_turn:
        return submit
    options = [_SEARCH] + ([_read_id(unread_ids)] if unread_ids and can_read else []) + [submit]
    return {"anyOf": options}


def eir_search_turn_schema(unread_ids: list[str], read_titles: list[str], reads_left: int, last_turn: bool,
                           conclusion_ids: list[str] | None = None) -> dict:
    return _eir_schema(read_titles, search_choices(unread_ids, reads_left > 0, last_turn, _SUBMIT), conclusion_ids)


def repair_schema(read_titles: list[str], other_ids: list[str]) -> dict:
    """A repair call's revision of one conclusion (`other_ids`: the conclusions it may depend on)."""
    revision = {"type": "object",
                "properties": {"claim": _TEXT, "status": {"enum": ["supported", "retracted"]},
                               "citations": _citations(read_titles, 3), "depends_on": _depends_on(other_ids)},
                "required": ["claim", "status", "citations", "depends_on"]}
    return {"type": "object", "properties": {"revision": revision}, "required": ["revision"]}


def refresh_schema() -> dict:
    return {"type": "object", "properties": {"requirement_updates": _list_updates([])["requirement_updates"]},
            "required": ["requirement_updates"]}


def final_answer_schema(read_titles: list[str]) -> dict:
    return {
        "type": "object",
        "properties": {"answer": {"type": "string", "maxLength": 100}, "citations": _citations(read_titles, 4)},
        "required": ["answer", "citations"],
    }


def select_reads_schema(unread_titles: list[str], optional: bool) -> dict:
    """The recovery experiments' selection: up to two of the unread titles (at least one unless optional)."""
    return {"type": "object",
            "properties": {"titles": {"type": "array", "items": _title_enum(unread_titles),
                                      "minItems": 0 if optional else 1, "maxItems": 2}},
            "required": ["titles"]}


def grammar_config(name: str, build_schema, *, strict: bool) -> dict:
    """LM kwargs that constrain decoding to `build_schema()` when `strict` (the program's run context
    decodes under `--decoding strict`: programs/run_context.py), else none (the adapter then sends the
    signature's schema, or nothing: eir_dspy/lm/decoding.py).

    The schema is built only when it will be used.
    """
    return response_format(name, build_schema()) if strict else {}


def response_format(name: str, schema: dict) -> dict:
    """The OpenAI-chat shape DSPy carries into Request.config.response_format."""
    return {"response_format": {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}}


def _read_citations(read: list[tuple[str, int]], max_items: int) -> dict:
    """Citations that can only name a sentence that exists: (title, index < its sentence count)."""
    if not read:
        return {"const": []}
    if any('"' in t or "\\" in t for t, _ in read):
        return _citations([t for t, _ in read], max_items)
    # The converter ignores integer bounds, so each title gets an enum of its own indices.
    items = [{"type": "object", "properties": {"title": {"const": t}, "sentence": {"enum": list(range(n))}},
              "required": ["title", "sentence"]} for t, n in read]
    return {"type": "array", "items": {"anyOf": items} if len(items) > 1 else items[0], "maxItems": max_items}


def direct_action_schema(unread_titles: list[str], read: list[tuple[str, int]], can_read: bool) -> dict:
    """Direct's action: read an unread title, or submit an answer citing sentences that were read."""
    submit = _citing_submit(read)
    read_action = {"type": "object", "properties": {"kind": {"const": "read"}, "title": _title_enum(unread_titles)},
                   "required": ["kind", "title"]}
    return {"anyOf": [read_action, submit]} if unread_titles and can_read else submit


def _citing_submit(read: list[tuple[str, int]]) -> dict:
    return {"type": "object",
            "properties": {"kind": {"const": "submit"}, "answer": {"type": "string", "maxLength": 100},
                           "citations": _read_citations(read, 4)},
            "required": ["kind", "answer", "citations"]}


def _with_thought(action: dict, plan: tuple[str, ...] = ()) -> dict:
    # The thought is generated every turn; at ~11 tok/s locally, 150 characters keep it to a few seconds.
    # `plan`: text fields written between the thought and the action (Direct's corpus turn), shorter still.
    properties = {"thought": {"type": "string", "maxLength": 150},
                  **{name: {"type": "string", "maxLength": 100} for name in plan}, "action": action}
    return {"type": "object", "properties": properties, "required": list(properties)}


def direct_turn_schema(unread_titles: list[str], read: list[tuple[str, int]], can_read: bool) -> dict:
    return _with_thought(direct_action_schema(unread_titles, read, can_read))


def direct_search_turn_schema(unread_ids: list[str], read: list[tuple[str, int]], can_read: bool,
                              last_turn: bool, plan: bool = True) -> dict:
    """Direct's corpus turn (with its plan fields, signatures.search_turns.PLAN_FIELDS, in the
    signature's order); `plan=False`: SSR's corpus refinement, a thought and an action only."""
    return _with_thought(search_choices(unread_ids, can_read, last_turn, _citing_submit(read)),
                         PLAN_FIELDS if plan else ())


def decompose_schema() -> dict:
    return {"type": "object", "properties": {"facts": _TEXT, "justification": _TEXT, "action": _TEXT},
            "required": ["facts", "justification", "action"]}


def verify_schema() -> dict:
    return {
        "type": "object",
        "properties": {"verdict": {"enum": ["accept", "reject"]}, "correction": _TEXT, "confidence": {"type": "number"}},
        "required": ["verdict", "correction", "confidence"],
    }


def reflect_schema() -> dict:
    return {"type": "object", "properties": {"reflection": {"type": "string", "maxLength": 300}},
            "required": ["reflection"]}
