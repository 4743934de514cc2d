"""The engine's RAM cache counts the logits copy each saved state keeps (llama-cpp-python does not)."""

from types import SimpleNamespace

import numpy as np
import pytest


def test_states_are_evicted_by_their_full_size():
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is installed by scripts/setup.sh")
    from eir_dspy.lm.llama_engine import _bounded_ram_cache

    cache = _bounded_ram_cache()(capacity_bytes=10_000)
    state = lambda: SimpleNamespace(llama_state_size=100, scores=np.zeros(1000, np.float32),  # noqa: E731
                                    input_ids=np.zeros(10, np.intc))
    for i in range(5):
        cache[(i,)] = state()  # 4,140 bytes each, of which the KV part is only 100
    assert cache.cache_size == 2 * 4140 and list(cache.cache_state) == [(3,), (4,)]


def test_schema_grammars_allow_json_whitespace_and_strict_keeps_them_compact():
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is installed by scripts/setup.sh")
    import json

    from eir_dspy.lm.grammar import COMPACT_SPACE, JSON_SPACE
    from eir_dspy.lm.llama_engine import _grammar

    schema = json.dumps({"type": "object", "properties": {"items": {"type": "array", "items": {"type": "string"}}},
                         "required": ["items"]})
    free_layout, compact = _grammar(schema, False)._grammar, _grammar(schema, True)._grammar
    assert JSON_SPACE in free_layout and COMPACT_SPACE not in free_layout
    assert COMPACT_SPACE in compact and "\\n" not in compact.split("space ::=")[1].splitlines()[0]
    assert _grammar(schema, False) is _grammar(schema, False)  # built once per schema


def test_grammar_keeps_the_signatures_field_order():
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is installed by scripts/setup.sh")
    import json

    from eir_dspy.lm.llama_engine import _grammar

    schema = {"type": "object", "properties": {"thought": {"type": "string"}, "action": {"type": "string"}},
              "required": ["thought", "action"]}
    root = next(line for line in _grammar(json.dumps(schema), False)._grammar.splitlines() if line.startswith("root"))
    assert root.index("thought") < root.index("action")  # the reasoning is decoded before the action
