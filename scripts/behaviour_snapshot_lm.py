"""The behaviour snapshot's fake LM: an OpenAI-compatible chat endpoint whose replies are a pure
function of the request, so the same prompts always get the same replies.

It plays a plausible agent for every signature of the project (reads, cites, revises, searches,
submits) and now and then a careless one (an unknown title, a citation of an unread paragraph, a
rejecting verifier), chosen by a hash of the request, so the runs cross the harness's main paths.
It reads only the prompt text DSPy's adapters write (`[[ ## field ## ]]` sections and the system
message's list of output fields), never the project's code. Used by scripts/behaviour_snapshot.py.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def _fields(text: str) -> dict[str, str]:
    """`[[ ## name ## ]]` sections of a message."""
    parts = re.split(r"\[\[ ## (\w+) ## \]\]\n?", text)
    return {parts[i]: parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}


def _output_names(system: str) -> list[str]:
    block = system.split("Your output fields are:", 1)[-1].split("All interactions", 1)[0]
    return re.findall(r"^\d+\. `(\w+)`", block, flags=re.M)


def _hint_title(text: str) -> str | None:
    """The paragraph just shown, from its citation hint."""
    m = re.search(r'Cite a sentence below as \{"title": ("(?:[^"\\]|\\.)*")', text)
    return json.loads(m.group(1)) if m else None


def _sentences(text: str) -> list[str]:
    return re.findall(r"^\[\d+\] (.*)$", text, flags=re.M)


def _evidence_titles(text: str) -> list[str]:
    return [line[3:].strip() for line in text.splitlines() if line.startswith("## ")]


def _entries(text: str, statuses: str) -> list[tuple[str, str, str]]:
    """(id, status, rest) of the rendered requirements or conclusions."""
    return re.findall(rf"^(\S+) \[({statuses})\] (.*)$", text, flags=re.M)


def _found(text: str) -> list[tuple[str, str, bool]]:
    """(id, title, read) of the search results."""
    out = []
    for line in text.splitlines():
        if " | " in line:
            pid, title = line.split(" | ", 1)
            out.append((pid.strip(), title.removesuffix(" (read)"), title.endswith(" (read)")))
    return out


def _answer(question: str, titles: list[str], h: int) -> str:
    if re.match(r"(?i)(are|is|was|were|did|do|does)\b", question):
        return "no" if h % 4 == 0 else "yes"
    return titles[0] if titles else "unknown"


def _query(question: str, turn_hint: int) -> str:
    words = [w for w in re.findall(r"[A-Za-z0-9]+", question) if len(w) > 3]
    start = (3 * turn_hint) % max(1, len(words))
    return " ".join(words[start:start + 4]) or question[:40]


def _list_updates(f: dict, system: str, just_read: str | None, sentences: list[str], h: int,
                  unread: list[str]) -> tuple[list, list]:
    reqs = _entries(f.get("requirements", ""), "open|satisfied")
    concls = _entries(f.get("conclusions", ""), "supported|retracted")
    dependent = "depends_on" in system
    req_updates, concl_updates = [], []
    if not reqs and not concls:
        words = f.get("question", "").split()
        req_updates = [{"id": None, "text": "who or what the question names: " + " ".join(words[:5]), "status": "open"},
                       {"id": None, "text": "the fact that answers it", "status": "open"}]
        if unread and h % 3 == 0:  # cites a paragraph not read yet: an invalid update
            concl_updates.append({"id": None, "claim": "a guess", "status": "supported",
                                  "citations": [{"title": unread[0], "sentence": 0}]})
    if just_read:
        claim = (sentences[0] if sentences else just_read)[:80]
        new = {"id": None, "claim": claim, "status": "supported", "citations": [{"title": just_read, "sentence": 0}]}
        if dependent and concls:
            new["depends_on"] = [concls[0][0]]
        concl_updates.append(new)
        open_reqs = [r for r in reqs if r[1] == "open"]
        if open_reqs:
            req_updates.append({"id": open_reqs[0][0], "text": open_reqs[0][2], "status": "satisfied"})
        if len(concls) >= 2 and "(revised)" not in concls[0][2]:  # revise the first: repairs its dependents
            first = concls[0][2].rsplit(" (", 1)[0]
            cite = re.search(r"\((.*)#(\d+)\)", concls[0][2])
            cites = [{"title": cite.group(1), "sentence": int(cite.group(2))}] if cite else []
            concl_updates.append({"id": concls[0][0], "claim": first + " (revised)", "status": "supported",
                                  "citations": cites})
    return req_updates, concl_updates


def _reads_left(text: str) -> int | None:
    m = re.search(r"(\d+) reads? left", text)
    return int(m.group(1)) if m else None


def _eir_turn(f: dict, system: str, h: int) -> dict:
    last = f.get("last_result", "")
    just_read, sentences = _hint_title(last), _sentences(last)
    concls = _entries(f.get("conclusions", ""), "supported|retracted")
    if "search_results" in f:
        found = _found(f["search_results"])
        unread_ids = [pid for pid, _, read in found if not read]
        read_titles = [t for _, t, read in found if read]
        reqs, cons = _list_updates(f, system, just_read, sentences, h, [t for _, t, read in found if not read])
        action = _search_action(f, found, unread_ids, last, h, len(concls))
        if action["kind"] == "submit":
            action = {"kind": "submit", "answer": _answer(f.get("question", ""), read_titles, h)}
        return {"requirement_updates": reqs, "conclusion_updates": cons, "action": action}
    unread = [t for t in f.get("unread_titles", "").splitlines() if t.strip()]
    reqs, cons = _list_updates(f, system, just_read, sentences, h, unread)
    reads_left = _reads_left(last)
    if unread and len(concls) < 3 and reads_left != 0:
        title = unread[h % min(3, len(unread))]
        if h % 7 == 0:
            title = title.lower()  # matched up to case
        elif h % 11 == 0:
            title = "no such title"  # falls back to the first unread title
        action = {"kind": "read", "title": title}
    else:
        action = {"kind": "submit", "answer": _answer(f.get("question", ""), [c[2] for c in concls], h)}
    return {"requirement_updates": reqs, "conclusion_updates": cons, "action": action}


def _search_action(f: dict, found: list, unread_ids: list[str], last: str, h: int, progress: int) -> dict:
    if "last turn" in last or "only a submission" in last or _reads_left(last) == 0 or progress >= 2:
        return {"kind": "submit"}
    if last.startswith("Search") and unread_ids:
        return {"kind": "read", "paragraph_id": unread_ids[h % min(2, len(unread_ids))]}
    if h % 9 == 0 and unread_ids:
        return {"kind": "read", "paragraph_id": "999999"}  # an id no search returned
    return {"kind": "search", "query": _query(f.get("question", ""), len(found) // 10 + progress)}


def _direct_turn(f: dict, h: int) -> dict:
    last = f.get("last_result", "")
    just_read, sentences = _hint_title(last), _sentences(last)
    question = f.get("question", "")
    m = re.search(r"(\d+) turns? left", last)
    turns_left = int(m.group(1)) if m else None
    if "search_results" in f:
        found = _found(f["search_results"])
        unread_ids = [pid for pid, _, read in found if not read]
        action = _search_action(f, found, unread_ids, last, h, 2 if just_read and h % 2 else 0)
        if turns_left == 1:
            action = {"kind": "submit"}
        recent = _hint_title(f.get("recent_paragraphs", "")) or just_read
        if action["kind"] == "submit":
            action = {"kind": "submit", "answer": _answer(question, [recent] if recent else [], h),
                      "citations": [{"title": recent, "sentence": 0}] if recent else []}
        plan = {"establish": "the fact the question turns on", "expected_result": "a paragraph that states it",
                "progress": "whether it names the answer"}
        return {"thought": f"next: {action['kind']}", **plan, "action": action}
    unread = [t for t in f.get("unread_titles", "").splitlines() if t.strip()]
    if just_read and (h % 3 == 0 or (turns_left is not None and turns_left <= 4)) or turns_left == 1 or not unread:
        cited = unread[0] if h % 5 == 0 and unread else just_read  # an unread paragraph's citation is rejected
        action = {"kind": "submit", "answer": _answer(question, [just_read] if just_read else [], h),
                  "citations": [{"title": cited, "sentence": 0}] if cited else []}
        thought = f"{sentences[0][:60] if sentences else 'nothing read'}; I can answer"
    else:
        action = {"kind": "read", "title": unread[h % min(3, len(unread))]}
        thought = "I need the paragraph that names the missing fact"
    return {"thought": thought, "action": action}


def reply(body: dict) -> tuple[str, dict]:
    """(the signature it answered, the reply object) for one chat request."""
    messages = body.get("messages", [])
    system = _text(messages[0].get("content")) if messages else ""
    user = next((_text(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")
    # The whole request picks the choices: SSR's votes differ only by their seed, and are independent samples.
    h = int(_digest(body), 16)
    f = _fields(user)
    outs = set(_output_names(system))
    question = f.get("question", "")
    evidence = f.get("evidence", "")
    titles = _evidence_titles(evidence)
    if {"requirement_updates", "conclusion_updates", "action"} <= outs:
        return "eir_turn", _eir_turn(f, system, h)
    if outs == {"answer", "citations"}:
        cites = [{"title": titles[0], "sentence": 0}] if titles else []
        if titles and h % 5 == 0:
            cites.append({"title": "Nowhere Paragraph", "sentence": 0})  # a citation outside the evidence
        return "final", {"answer": _answer(question, titles, h), "citations": cites}
    if outs == {"reflection"}:
        return "reflect", {"reflection": f"I answered too early. Next time read about {_query(question, h % 3)} first."}
    if outs == {"facts", "justification", "action"}:
        sents = _sentences(evidence)
        proposal = f.get("proposal", "")
        act = re.search(r'"kind": "(\w+)"(?:, "title": "([^"]*)")?', proposal)
        action = f"{act.group(1)}: {act.group(2) or ''}".strip() if act else proposal[-80:]
        return "decompose", {"facts": sents[0][:80] if sents else "nothing read yet",
                             "justification": "the facts point to this action", "action": action}
    if outs == {"verdict", "correction", "confidence"}:
        reject = h % 3 == 0
        unread = [t for t in f.get("unread_titles", "").splitlines() if t.strip()]
        found = [pid for pid, _, read in _found(f.get("search_results", "")) if not read]
        if unread:
            correction = f"read: {unread[0]}"
        elif found:
            correction = f"read: {found[0]}"
        else:
            correction = f"search: {_query(question, 1)}"
        return "verify", {"verdict": "reject" if reject else "accept", "correction": correction if reject else "",
                          "confidence": round(0.5 + (h % 50) / 100, 2)}
    if {"thought", "action"} <= outs and "step" in f:  # SSR's refinement
        unread = [t for t in f.get("unread_titles", "").splitlines() if t.strip()]
        found = [pid for pid, _, read in _found(f.get("search_results", "")) if not read]
        if unread:
            action = {"kind": "read", "title": unread[0]}
        elif found:
            action = {"kind": "read", "paragraph_id": found[0]}
        elif titles or "search_results" not in f:
            action = {"kind": "submit", "answer": _answer(question, titles, h),
                      "citations": [{"title": titles[0], "sentence": 0}] if titles else []}
        else:
            action = {"kind": "search", "query": _query(question, 2)}
        return "refine", {"thought": "rewritten with the correction", "action": action}
    if "action" in outs and "thought" in outs:
        return "direct_turn", _direct_turn(f, h)
    if outs == {"revision"}:
        conclusion = f.get("conclusion", "")
        cite = re.search(r"\((.*)#(\d+)\)", conclusion)
        claim = re.sub(r"^\S+ \[\w+\] ", "", conclusion).rsplit(" (", 1)[0]
        return "repair", {"revision": {"claim": claim + " (repaired)", "status": "retracted" if h % 3 == 0 else "supported",
                                       "citations": [{"title": cite.group(1), "sentence": int(cite.group(2))}] if cite else [],
                                       "depends_on": []}}
    if outs == {"requirement_updates"}:
        open_reqs = [r for r in _entries(f.get("requirements", ""), "open|satisfied") if r[1] == "open"]
        return "refresh", {"requirement_updates": [{"id": r[0], "text": r[2], "status": "satisfied"} for r in open_reqs[:1]]}
    if outs == {"titles"}:
        unread = [t for t in f.get("unread_titles", "").splitlines() if t.strip()]
        return "select", {"titles": unread[:1]}
    return "unknown", {}  # an unusable output: the harness records it


def _text(content) -> str:
    if isinstance(content, list):  # content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


class FakeLM:
    """An OpenAI-compatible chat endpoint per case (`/<case>/v1`), logging each request's digest
    (and the request itself to `<work>/<case>/lm_requests.jsonl`, kept with --keep)."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.log: dict[str, list[dict]] = {}
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def url(self, case: str) -> str:
        return f"{self.base}/{case}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def respond(self, case: str, body: dict) -> dict:
        role, out = reply(body)
        text = json.dumps(out)
        prompt = "\n".join(_text(m.get("content")) for m in body.get("messages", []))
        with self._lock:
            calls = self.log.setdefault(case, [])
            calls.append({"signature": role, "request": _digest(body), "reply": _digest(text)})
            n = len(calls)
            with (self.work / case / "lm_requests.jsonl").open("a") as f:
                f.write(json.dumps({"n": n, "signature": role, "request": body, "reply": out}) + "\n")
        usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": len(text.split())}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        return {"id": f"snap-{n}", "object": "chat.completion", "created": 0, "model": body.get("model", "fake"),
                "usage": usage, "choices": [{"index": 0, "finish_reason": "stop",
                                             "message": {"role": "assistant", "content": text}}]}

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                case = self.path.strip("/").split("/", 1)[0]
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                data = json.dumps(fake.respond(case, body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        return Handler


def _digest(value) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
