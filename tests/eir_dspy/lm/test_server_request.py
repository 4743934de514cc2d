"""What the managed llama-server is sent for each decoding mode (eir_dspy/lm/server_engine.py):
schema decoding sends the signature's schema for the server to convert, strict sends the project's
one-line grammar, JSON mode and free decoding pass through. The requests are DSPy's own, made by a
scripted LM through the project's adapter; nothing is started."""

import json

import dspy
import pytest
from dspy.lm15 import Message, Request

from eir_dspy.lm import DecodingAdapter
from eir_dspy.lm.embedded_server import ServerConfig
from eir_dspy.lm.grammar import one_line_gbnf
from eir_dspy.lm.server_engine import EmbeddedServerEngine
from signatures.eir_turn import EIRTurn
from signatures.schemas import eir_turn_schema, response_format
from tests.scripted import scripted_lm, turn


class Server:  # what the engine reads of a running server
    url, config = "http://127.0.0.1:9/v1", ServerConfig("m.gguf", alias="m")


def sent(decoding: str, one_line: bool, **call_kwargs) -> tuple[dict, object]:
    """(the request the engine sends for one EIR turn under `decoding`, DSPy's config for that call)."""
    lm = scripted_lm([turn("read", "A")])
    with dspy.context(lm=lm, adapter=DecodingAdapter(decoding)):
        dspy.Predict(EIRTurn)(question="q", requirements="", conclusions="", unread_titles="A", last_result="",
                              **call_kwargs)
    config = lm.engine.configs[0]
    engine = EmbeddedServerEngine(Server(), max_tokens=77, timeout=5.0, one_line=one_line)
    request = Request(model="local/m", messages=(Message.user("q"),), config=config)
    return engine.server_request(engine._arguments(request)), config


def test_schema_decoding_sends_the_signatures_schema_for_the_server_to_convert():
    request, config = sent("schema", one_line=False)
    assert request["response_format"] == {"type": "json_schema",
                                          "json_schema": {"name": config.response_format["name"],
                                                          "schema": config.response_format["schema"]}}
    schema = request["response_format"]["json_schema"]["schema"]
    assert list(schema["properties"]) == list(EIRTurn.output_fields)  # the server keeps this order
    assert "grammar" not in request["extra_body"]
    assert request["model"] == "openai/m" and request["api_base"] == Server.url
    # llama-server reads max_tokens (the LM's, not the engine's fallback) and a seed
    assert request["extra_body"] == {"max_tokens": config.max_tokens, "seed": 0} and config.max_tokens == 512


def test_strict_decoding_sends_the_one_line_grammar_of_the_calls_own_schema_and_no_schema():
    schema = eir_turn_schema(["A", "Beyoncé"], [], 2)
    request, _ = sent("strict", one_line=True, config=response_format("EIRTurn", schema))
    assert "response_format" not in request
    assert request["extra_body"]["grammar"] == one_line_gbnf(json.dumps(schema))
    assert '"\\"Beyoncé\\""' in request["extra_body"]["grammar"]  # the live state's titles, as before


def test_strict_decoding_without_a_per_call_schema_decodes_the_signatures_on_one_line():
    request, config = sent("strict", one_line=True)
    assert request["extra_body"]["grammar"] == one_line_gbnf(json.dumps(config.response_format["schema"]))


@pytest.mark.parametrize("fmt", [{"type": "json_object"}, None])
def test_json_mode_and_free_decoding_pass_through(fmt):
    engine = EmbeddedServerEngine(Server(), max_tokens=77, timeout=5.0)
    request = {"model": "openai/m", "messages": [], **({"response_format": fmt} if fmt else {})}
    out = engine.server_request(request)
    assert out.get("response_format") == fmt and "grammar" not in out["extra_body"]
    assert out["extra_body"]["max_tokens"] == 77  # no max_tokens in the request: the engine's own
