"""A scripted engine for offline tests: the real dspy.LM / JSONAdapter path, canned outputs.

Each reply is a dict (serialised as the JSON object JSONAdapter parses), a raw string, or a
callable taking the prompt text. Every prompt is kept so tests can assert on what the model saw.
Token usage is deterministic (words in, words out) so accounting can be checked exactly.
"""

from __future__ import annotations

import json
import threading

import dspy
from dspy.lm15 import Message, Response, TextPart, Usage, response_to_events


class ScriptedEngine:
    def __init__(self, replies):
        # A list is consumed in order; a callable answers every prompt.
        self.replies = replies if callable(replies) else list(replies)
        self.prompts: list[str] = []
        self.formats: list[dict | None] = []
        self.configs: list = []  # each request's lm15 Config (temperature, seed, ...)
        self._lock = threading.Lock()

    def complete(self, request) -> Response:
        system = request.system if isinstance(request.system, str) else "".join(p.text for p in request.system or ())
        prompt = system + "\n" + "\n".join(m.text or "" for m in request.messages)
        with self._lock:
            self.prompts.append(prompt)
            self.formats.append(request.config.response_format)
            self.configs.append(request.config)
            if callable(self.replies):
                reply = self.replies
            elif not self.replies:
                raise AssertionError("the scripted LM ran out of replies")
            else:
                reply = self.replies.pop(0)
        if callable(reply):
            reply = reply(prompt)
        text = reply if isinstance(reply, str) else json.dumps(reply)
        return Response(id=None, model="scripted", message=Message.assistant([TextPart(text)]), finish_reason="stop",
                        usage=Usage(input_tokens=len(prompt.split()), output_tokens=len(text.split())))

    def stream(self, request):
        return response_to_events(self.complete(request))

    def close(self):
        pass


def scripted_lm(replies, cache: bool = False, model: str = "local/scripted") -> dspy.LM:
    return dspy.LM(model, engine=ScriptedEngine(replies), cache=cache, temperature=0.0, max_tokens=512)


def use_lm(monkeypatch, replies) -> dspy.LM:
    """Every eval.run in the test runs on this scripted LM, whatever its --lm names; returns the LM."""
    import eval.runs.prepare as prepare  # here, not above: most tests that script an LM never run eval.run

    lm = scripted_lm(replies)
    monkeypatch.setattr(prepare, "build_lm", lambda spec: lm)
    return lm


def run_program(program, question, paragraphs, replies):
    """Run a method on a scripted LM; the program decodes by its own run context and accepts by its
    own rule (programs/method_program.py). Returns (prediction, ledger, engine)."""
    from eir_dspy.accounting import Ledger, recording

    lm = scripted_lm(replies)
    ledger = Ledger()
    with dspy.context(lm=lm), recording(ledger):
        pred = program(question=question, paragraphs=paragraphs)
    return pred, ledger, lm.engine


def turn(kind="read", title="", answer="", reqs=(), concls=()):
    """One EIR turn output as the model would write it."""
    return {"requirement_updates": list(reqs), "conclusion_updates": list(concls),
            "action": {"kind": kind, "title": title, "answer": answer}}


def final(answer, citations=()):
    return {"answer": answer, "citations": [{"title": t, "sentence": s} for t, s in citations]}


def act(kind="read", title="", answer="", citations=(), thought="t"):
    """One Direct/SSR/Reflexion turn output: a thought and an action."""
    return {"thought": thought, "action": {"kind": kind, "title": title, "answer": answer,
                                           "citations": [{"title": t, "sentence": s} for t, s in citations]}}


def field(prompt: str, name: str) -> str:
    """The value of input field `name` in the LAST user message of a JSONAdapter prompt."""
    value = prompt.rsplit(f"[[ ## {name} ## ]]", 1)[1].split("[[ ##")[0]
    return value.split("\n\nRespond with a JSON object")[0].strip()  # the last field runs into the format line
