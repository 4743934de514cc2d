"""The GBNF grammar an embedded engine decodes a JSON schema under: one text for both engines
(in-process llama-cpp-python and the managed llama-server), so the engine never changes what
the model may write."""

from __future__ import annotations

import functools

# llama.cpp's own JSON whitespace rule (common/json-schema-to-grammar): a space, or a newline and
# up to 20 spaces or tabs of indentation; bounded so a model cannot loop on whitespace.
JSON_SPACE = 'space ::= | " " | "\\n" [ \\t]{0,20}'
COMPACT_SPACE = 'space ::= " "?'


@functools.lru_cache(maxsize=64)
def schema_gbnf(schema_json: str, compact: bool) -> str:
    """GBNF for a JSON schema, properties in the schema's order.

    llama-cpp-python's converter lets JSON have one optional space between tokens and no newline.
    Forced onto one line, the 1.5B writes `[]` for every list (it lays lists out over lines);
    OpenAI's structured outputs and upstream llama.cpp allow JSON's whitespace. Only `--decoding
    strict` keeps the compact grammar (its behaviour before decoding modes existed).
    """
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    gbnf = json_schema_to_gbnf(schema_json)
    if compact:
        return gbnf
    if COMPACT_SPACE not in gbnf:
        raise RuntimeError("llama-cpp-python's JSON grammar changed its whitespace rule; update JSON_SPACE")
    return gbnf.replace(COMPACT_SPACE, JSON_SPACE)
