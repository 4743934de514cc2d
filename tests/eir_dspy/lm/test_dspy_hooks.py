"""The project uses DSPy through its public interfaces only, so the DSPy range in pyproject.toml can
admit the next minor release: no `complete_legacy` (the untyped engine shortcut DSPy 3.5 removes),
no override of a private method of a DSPy class (as the adapter once overrode JSONAdapter's
`_prepare_response_format`). Each check is shown to catch what it guards against."""

from __future__ import annotations

import ast
import asyncio
import importlib
import inspect
import logging
import pkgutil
from pathlib import Path
from typing import Any

import dspy
import litellm
import pytest
from dspy.adapters.json_adapter import _get_structured_outputs_response_format

from eir_dspy.lm import DecodingAdapter
from eir_dspy.lm.router import GROUP, RouterEngine
from tests.scripted import ScriptedEngine, scripted_lm

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("eir_dspy", "eval", "programs", "signatures")


def legacy_uses(source: str) -> list[str]:
    """Every use of `complete_legacy` but the one that turns DSPy's inherited shortcut off (`= None`)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "complete_legacy":
            found.append(f"defines it (line {node.lineno})")
        elif isinstance(node, ast.Attribute) and node.attr == "complete_legacy":
            found.append(f"uses it (line {node.lineno})")
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "complete_legacy"
                                                  for t in node.targets):
            if not (isinstance(node.value, ast.Constant) and node.value.value is None):
                found.append(f"binds it (line {node.lineno})")
    return found


def test_no_source_defines_or_calls_complete_legacy():
    problems = {str(path.relative_to(ROOT)): legacy_uses(path.read_text())
                for package in PACKAGES for path in (ROOT / package).rglob("*.py")}
    assert {k: v for k, v in problems.items() if v} == {}


def test_the_legacy_scan_catches_a_definition_a_call_and_a_binding():
    source = ("class E:\n    def complete_legacy(self, lm, request): ...\n"
              "class F:\n    complete_legacy = other\n"
              "class G:\n    complete_legacy = None\n"
              "x.complete_legacy(lm, {})\n")
    assert legacy_uses(source) == ["defines it (line 2)", "binds it (line 4)", "uses it (line 7)"]


def project_classes() -> list[type]:
    out = []
    for package in PACKAGES:
        names = [package] + [m.name for m in pkgutil.walk_packages(importlib.import_module(package).__path__,
                                                                   package + ".") if not m.name.endswith("__main__")]
        for name in names:
            module = importlib.import_module(name)
            out += [c for c in vars(module).values() if inspect.isclass(c) and c.__module__ == name]
    return out


def private_overrides(cls: type) -> list[str]:
    """Methods `cls` defines with a single-underscore name that a DSPy class it derives from also has."""
    dspy_bases = [b for b in cls.__mro__[1:] if b.__module__.split(".")[0] == "dspy"]
    return [name for name, value in vars(cls).items()
            if name.startswith("_") and not name.startswith("__")
            and (inspect.isfunction(value) or isinstance(value, (staticmethod, classmethod, property)))
            and any(name in vars(b) for b in dspy_bases)]


def test_no_project_class_overrides_a_private_method_of_a_dspy_class():
    classes = project_classes()
    subclasses = [c for c in classes if any(b.__module__.split(".")[0] == "dspy" for b in c.__mro__[1:])]
    # The scan reaches the classes it is about: the adapter, the engines, the programs.
    assert {"DecodingAdapter", "RouterEngine", "EmbeddedServerEngine", "EIR"} <= {c.__name__ for c in subclasses}
    assert {c.__qualname__: private_overrides(c) for c in subclasses if private_overrides(c)} == {}


def test_the_override_scan_catches_the_old_adapter_hook():
    class Old(dspy.JSONAdapter):
        def _prepare_response_format(self, lm, lm_kwargs, signature):
            pass

        def _own_helper(self):  # not DSPy's: allowed
            pass

    assert private_overrides(Old) == ["_prepare_response_format"]


def test_dspy_never_takes_the_untyped_shortcut_for_the_projects_engines():
    from eir_dspy.lm.server_engine import EmbeddedServerEngine

    class Server:
        url, config = "http://127.0.0.1:9/v1", type("Config", (), {"alias": "m"})()

    engines = [RouterEngine("openai/fake", ["http://127.0.0.1:9/v1"], max_tokens=8, timeout=1.0, num_retries=0),
               EmbeddedServerEngine(Server(), max_tokens=8, timeout=1.0)]
    # DSPy 3.4 prefers a callable complete_legacy for adapter calls (dspy/clients/execution.py).
    assert [callable(getattr(e, "complete_legacy", None)) for e in engines] == [False, False]


class StubRouter:
    """LiteLLM's Router as the engine sees it: what it was sent, and a canned reply."""

    def __init__(self, finish_reason: str = "stop") -> None:
        self.sent: list[dict] = []
        self.finish_reason = finish_reason

    def completion(self, **kwargs):
        self.sent.append(kwargs)
        return litellm.ModelResponse(
            model="fake", usage={"prompt_tokens": 30, "completion_tokens": 4, "total_tokens": 34},
            choices=[{"index": 0, "finish_reason": self.finish_reason,
                      "message": {"role": "assistant", "content": '{"answer": "Tulsa"}'}}])


def routed_call(finish_reason="stop"):
    engine = RouterEngine("openai/fake", ["http://127.0.0.1:9/v1", "http://127.0.0.1:10/v1"], max_tokens=64,
                          timeout=5.0, num_retries=2)
    engine.router = StubRouter(finish_reason)
    lm = dspy.LM("openai/fake", engine=engine, temperature=0.0, max_tokens=64, num_retries=0, cache=False)
    with dspy.context(lm=lm, adapter=DecodingAdapter("schema")):
        pred = dspy.Predict("question -> answer")(question="Where did Alpha form?")
    return pred, engine.router.sent, lm


def test_the_router_engine_sends_the_typed_request_through_the_router():
    pred, sent, lm = routed_call()
    assert pred.answer == "Tulsa" and len(sent) == 1
    request = sent[0]
    assert request["model"] == GROUP and request["n"] == 1 and request["temperature"] == 0.0
    # The Router retries over endpoints itself, and DSPy's cache sits above the engine.
    assert "num_retries" not in request and "cache" not in request
    assert request["response_format"]["json_schema"]["schema"]["required"] == ["answer"]
    assert request["messages"][-1]["content"].startswith("[[ ## question ## ]]\nWhere did Alpha form?")
    assert lm.history[-1]["usage"]["prompt_tokens"] == 30


class Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record) -> None:
        self.messages.append(record.getMessage())


@pytest.mark.parametrize("finish_reason", ["length", "stop"])
def test_a_truncated_routed_reply_is_reported_by_dspy(finish_reason):
    kept, logger = Kept(), logging.getLogger("dspy.clients.lm")  # DSPy's logger does not propagate to pytest's
    logger.addHandler(kept)
    try:
        routed_call(finish_reason)
    finally:
        logger.removeHandler(kept)
    assert any("truncated" in m for m in kept.messages) == (finish_reason == "length")


class OpenEnded(dspy.Signature):
    question: str = dspy.InputField()
    facts: dict[str, Any] = dspy.OutputField()


GRAMMAR = {"type": "json_schema",
           "json_schema": {"name": "g", "schema": {"type": "object", "properties": {"answer": {"type": "string"}}}}}


def formats(decoding: str, signature="question -> answer", config=None, reply=None) -> list:
    lm = scripted_lm(lambda _: reply or {"answer": "x"})
    with dspy.context(lm=lm, adapter=DecodingAdapter(decoding)):
        dspy.Predict(signature)(question="q", config=config or {})
    return lm.engine.formats


@pytest.fixture
def no_private_hook(monkeypatch):
    """JSONAdapter's private response_format step is never reached: the decoding mode decides."""
    def refuse(*args, **kwargs):
        raise AssertionError("JSONAdapter._prepare_response_format was called")

    monkeypatch.setattr(dspy.JSONAdapter, "_prepare_response_format", refuse)


def test_each_decoding_mode_sets_the_response_format_it_names(no_private_hook):
    structured = _get_structured_outputs_response_format(dspy.Predict("question -> answer").signature)
    schema = formats("schema")[0]
    assert schema["type"] == "json_schema" and schema["schema"] == structured.model_json_schema() | {
        "additionalProperties": False, "required": ["answer"]}
    assert formats("free", config={"response_format": GRAMMAR}) == [None]  # the program's grammar is dropped
    kept = formats("strict", config={"response_format": GRAMMAR})[0]
    assert kept["name"] == "g" and kept["schema"] == GRAMMAR["json_schema"]["schema"]  # the per-call grammar
    assert formats("strict") == [schema]  # no grammar given: the signature's schema
    # No schema for an open-ended mapping: JSON mode, as JSONAdapter falls back.
    assert formats("schema", OpenEnded, reply={"facts": {}}) == [{"type": "json_object"}]


def test_the_async_path_decides_the_same_way(no_private_hook):
    engine = ScriptedEngine(lambda _: {"answer": "x"})

    class AsyncScripted:
        async def complete(self, request):
            return engine.complete(request)

    lm = dspy.LM("local/scripted", engine=engine, async_engine=AsyncScripted(), cache=False)

    async def call():
        with dspy.context(lm=lm, adapter=DecodingAdapter("free")):
            await dspy.Predict("question -> answer").acall(question="q", config={"response_format": GRAMMAR})

    asyncio.run(call())
    assert engine.formats == [None] and len(engine.prompts) == 1


def test_the_system_message_and_schema_are_made_once_per_signature_and_are_jsonadapters(no_private_hook):
    """DecodingAdapter keeps what JSONAdapter derives from a signature alone (its system message, its
    response model) instead of making it on every call; what is sent is the same on every call."""
    sig = dspy.Predict("question, evidence -> answer, citations: list[str]").signature
    adapter = DecodingAdapter("schema")
    assert adapter.format_system_message(sig) == dspy.JSONAdapter().format_system_message(sig)
    assert adapter.format_system_message(sig) is adapter.format_system_message(sig)
    assert adapter.format_system_message(sig.with_instructions("Other.")) != adapter.format_system_message(sig)
    first, second = {}, {}
    adapter.choose_response_format(first, sig)
    adapter.choose_response_format(second, sig)
    assert first["response_format"] is second["response_format"]  # one model for the signature
    schema = first["response_format"].model_json_schema()
    assert schema == _get_structured_outputs_response_format(sig).model_json_schema()
    schema.pop("properties")  # LiteLLM edits the schema it is handed: each use gets its own copy
    assert "properties" in second["response_format"].model_json_schema()
    lm = scripted_lm(lambda _: {"answer": "x", "citations": []})
    with dspy.context(lm=lm, adapter=adapter):
        for _ in range(2):
            dspy.Predict(sig)(question="q", evidence="e")
    assert lm.engine.prompts[0] == lm.engine.prompts[1] and lm.engine.formats[0] == lm.engine.formats[1]
