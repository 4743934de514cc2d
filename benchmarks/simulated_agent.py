"""What the simulated endpoint answers: a competent agent that knows each question's gold.

It plays the model and only the model. It reads the request as any model reads it (the adapter's
`[[ ## field ## ]]` sections in the last user message, the output fields the system message
lists), looks the question up among the questions it was given, and writes what a careful agent
would: read the gold titles first (a distractor first on some questions), lists that cite only
sentences already shown, a submit of the gold answer or, at a set rate, of a plausible wrong one.
SSR's verifiers disagree at a set rate; a Reflexion trial after a failed one succeeds at a set rate.

Every choice is a pure function of the seed and the request: the same request always gets the
same reply, whatever the order requests arrive in or how often the harness was restarted.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass

from eval.data.schema import Question

SECTION = re.compile(r"\[\[ ## (\w+) ## \]\]\n(.*?)(?=\n\n\[\[ ## \w+ ## \]\]|\n\nRespond with|\Z)", re.S)
OUTPUT_FIELDS = re.compile(r"Your output fields are:\n((?:\d+\. `\w+`[^\n]*\n?)+)")
FIELD_NAME = re.compile(r"`(\w+)`")
READ_HEADER = re.compile(r'^(?:Read |No unread title matches .*?; read )("(?:[^"\\]|\\.)*")')
REQUIREMENT = re.compile(r"^(R\d+) \[(open|satisfied)\] (.*)$", re.M)
CONCLUSION = re.compile(r"^(C\d+) \[(supported|retracted)\] (.*?) \((.*?)\)(?: depends on .*)?$", re.M)
COPY_SUFFIX = re.compile(r" \(rehearsal copy \d+\)$")  # benchmarks/rehearsal.py's padding copies


@dataclass(frozen=True)
class Policy:
    """The agent's rates, each decided per question (or per request) by a hash of the seed."""
    seed: int = 0
    wrong: float = 0.25  # a question's first answer is a plausible wrong one
    distract: float = 0.2  # a question's agent reads one distractor before the gold titles
    disagree: float = 0.1  # an SSR verifier rejects a step
    improve: float = 0.5  # a Reflexion trial after a failed one answers right


def key(*parts: object) -> float:
    """A number in [0, 1) from the parts: the agent's dice, fixed by the seed and the parts."""
    digest = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2 ** 64


def normalize(question: str) -> str:
    return " ".join(COPY_SUFFIX.sub("", question.strip()).split())


class Gold:
    """The questions the agent knows, by question text."""

    def __init__(self, questions: list[Question]) -> None:
        self.by_text = {normalize(q.question): q for q in questions}

    def find(self, text: str) -> Question | None:
        return self.by_text.get(normalize(text))


class SimulatedAgent:
    def __init__(self, gold: Gold, policy: Policy) -> None:
        self.gold, self.policy = gold, policy
        self.unknown: dict[str, int] = {}  # requests it could not place: signature or question

    # ------------------------------------------------------------ the request

    def reply(self, system: str, user: str) -> dict:
        """The output fields for one request: `system` the system message, `user` the last user message."""
        match = OUTPUT_FIELDS.search(system)
        outputs = tuple(FIELD_NAME.findall(match.group(1))) if match else ()
        fields = {name: value.strip() for name, value in SECTION.findall(user)}
        question = self.gold.find(fields.get("question", ""))
        if question is None:
            self.unknown["question"] = self.unknown.get("question", 0) + 1
            return {name: "" for name in outputs}
        turn = Turn(question, fields, self.policy, dependent="depends_on" in system)
        handler = {
            ("requirement_updates", "conclusion_updates", "action"): turn.eir,
            ("answer", "citations"): turn.final,
            ("thought", "action"): turn.refine if "correction" in fields else turn.direct,
            ("reflection",): turn.reflect,
            ("facts", "justification", "action"): turn.decompose,
            ("verdict", "correction", "confidence"): turn.verify,
            ("revision",): turn.repair,
            ("requirement_updates",): turn.refresh,
            ("titles",): turn.select,
        }.get(outputs)
        if handler is None:
            name = ",".join(outputs) or "no output fields"
            self.unknown[name] = self.unknown.get(name, 0) + 1
            return {name: "" for name in outputs}
        return handler()


class Turn:
    """One request about one question: what has been read, what is left, what to do next."""

    def __init__(self, question: Question, fields: dict[str, str], policy: Policy, dependent: bool = False) -> None:
        self.q, self.fields, self.policy, self.dependent = question, fields, policy, dependent
        self.qid = question.id + normalize(question.question)[-12:]
        titles = [p.title for p in question.paragraphs]
        unread_text = fields.get("unread_titles")
        if unread_text is None:  # Reflect sees every title; the others no list at all
            self.unread = titles
        else:
            listed = {line.strip() for line in unread_text.splitlines()}
            self.unread = [t for t in titles if t in listed]
        gold = question.gold_titles  # MuSiQue's are paragraph indices, not sentence facts
        self.gold_order = [t for t in _unique([*(t for t, _ in question.supporting_facts), *titles]) if t in gold]
        distractor = next((t for t in titles if t not in self.gold_order), None)
        first = [distractor] if distractor and key(policy.seed, "distract", self.qid) < policy.distract else []
        self.plan = first + self.gold_order  # the order the agent reads in

    # ------------------------------------------------------------ what it knows

    @property
    def read_titles(self) -> list[str]:
        """Titles already read: from the evidence or trajectory when the call shows them, else the pool minus the unread."""
        shown = self.fields.get("evidence") or self.fields.get("trajectory")
        if shown is not None:
            return [t for t in _unique(p.title for p in self.q.paragraphs) if f"## {t}\n" in shown + "\n"
                    or f'Read {json.dumps(t)}' in shown or f'read {json.dumps(t)} instead' in shown]
        return [t for t in _unique(p.title for p in self.q.paragraphs) if t not in self.unread]

    def facts(self, titles: list[str]) -> list[dict]:
        """The gold sentences of `titles` that exist in their paragraphs, as citations."""
        sizes = {p.title: len(p.sentences) for p in self.q.paragraphs}
        facts = [(t, s) for t, s in self.q.supporting_facts if s < sizes.get(t, 0)]
        facts += [(t, 0) for t in self.gold_order if not any(f[0] == t for f in facts)]  # a paragraph-level gold
        return [{"title": t, "sentence": s} for t, s in facts if t in titles]

    def next_read(self) -> str | None:
        return next((t for t in self.plan if t in self.unread), None)

    def last_turn(self) -> bool:
        text = self.fields.get("last_result", "") + self.fields.get("turns_left", "")
        return "only a submit counts" in text or re.search(r"(?<!\d)0 reads left", text) is not None

    def answer(self, trial: int = 1, kind: str = "react") -> str:
        """The gold answer, or on some questions (trials) a plausible wrong one. `kind` is the agent's
        family (eir: its turns and final call; pool: a final call over every paragraph; react: Direct's
        turn, which SSR and Reflexion share), so methods differ the way paired statistics expect."""
        if trial == 1:
            right = key(self.policy.seed, "wrong", self.qid, kind) >= self.policy.wrong
        else:
            right = key(self.policy.seed, "improve", self.qid, trial) < self.policy.improve
        if right:
            return self.q.answer
        if self.q.answer.lower() in ("yes", "no"):
            return "no" if self.q.answer.lower() == "yes" else "yes"
        wrong = [p.title for p in self.q.paragraphs if p.title not in self.gold_order and p.title != self.q.answer]
        return wrong[int(key(self.policy.seed, "which", self.qid) * len(wrong))] if wrong else "unknown"

    def trial(self) -> int:
        return 1 + len(re.findall(r"^Attempt \d+:", self.fields.get("reflections", ""), re.M))

    # ------------------------------------------------------------ the signatures

    def eir(self) -> dict:
        requirements = REQUIREMENT.findall(self.fields.get("requirements", ""))
        conclusions = CONCLUSION.findall(self.fields.get("conclusions", ""))
        first = "(nothing yet" in self.fields.get("last_result", "")
        req_updates, con_updates = [], []
        if first:
            req_updates = [{"id": None, "text": f"the fact the paragraph {t!r} gives", "status": "open"}
                           for t in self.gold_order]
        else:
            cited = " ".join(c[3] for c in conclusions)
            for title in self.read_titles:
                if title not in self.gold_order or f"{title}#" in cited:
                    continue
                citations = self.facts([title])
                if not citations:
                    continue
                con_updates.append({"id": None, "claim": f"{title}: {self._sentence(citations[0])}",
                                    "status": "supported", "citations": citations})
                rid = next((r for r, status, text in requirements if repr(title) in text and status == "open"), None)
                if rid:
                    req_updates.append({"id": rid, "text": f"the fact the paragraph {title!r} gives", "status": "satisfied"})
        target = None if self.last_turn() else self.next_read()
        if target is None:
            action = {"kind": "submit", "title": "", "answer": self.answer(kind="eir")}
        else:
            action = {"kind": "read", "title": target, "answer": ""}
        if self.dependent:  # the repair ablations' turn: every conclusion names what it follows from
            for c in con_updates:
                c["depends_on"] = []
        return {"requirement_updates": req_updates, "conclusion_updates": con_updates, "action": action}

    def final(self) -> dict:
        titles = _unique(p.title for p in self.q.paragraphs)
        read = [t for t in titles if f"## {t}\n" in self.fields.get("evidence", "") + "\n"]
        kind = "pool" if len(read) == len(titles) else "eir"
        return {"answer": self.answer(kind=kind), "citations": self.facts(read)}

    def _act(self, trial: int = 1) -> dict:
        target = None if self.last_turn() else self.next_read()
        if target is None:
            return {"kind": "submit", "title": "", "answer": self.answer(trial), "citations": self.facts(self.read_titles)}
        return {"kind": "read", "title": target, "answer": "", "citations": []}

    def direct(self) -> dict:
        trial = self.trial()
        action = self._act(trial)
        if action["kind"] == "read":
            thought = f"I still need what {action['title']!r} says."
        else:
            thought = "The paragraphs read give the answer."
        return {"thought": thought, "action": action}

    def refine(self) -> dict:
        return {"thought": "Corrected as the verifiers said.", "action": self._act()}

    def reflect(self) -> dict:
        missed = [t for t in self.gold_order if t not in self.read_titles] or self.gold_order or ["the question"]
        return {"reflection": f"I answered without checking {', '.join(map(repr, missed))}. "
                              f"Next time read {missed[0]!r} first, then submit the entity it names."}

    def decompose(self) -> dict:
        read = self.read_titles
        return {"facts": f"Read so far: {', '.join(read) or 'nothing'}.",
                "justification": "The next step follows from what is still missing.",
                "action": self.fields.get("proposal", "").splitlines()[-1] if self.fields.get("proposal") else ""}

    def verify(self) -> dict:
        if key(self.policy.seed, "verify", self.qid, self.fields.get("step", ""), self.fields.get("evidence", "")[-200:],
               self.fields.get("steps", "")) < self.policy.disagree:
            target = None if self.last_turn() else self.next_read()
            correction = f"read: {target}" if target else f"submit: {self.q.answer}"
            return {"verdict": "reject", "correction": correction, "confidence": 0.8}
        return {"verdict": "accept", "correction": "", "confidence": 0.9}

    def select(self) -> dict:
        """The recovery experiments' extra reads: the unread gold titles, else nothing (at most two)."""
        return {"titles": [t for t in self.plan if t in self.unread and t in self.gold_order][:2]}

    def repair(self) -> dict:
        match = CONCLUSION.search(self.fields.get("conclusion", ""))
        claim = match.group(3) if match else "unchanged"
        cites = []
        if match:
            for part in match.group(4).split(", "):
                title, _, index = part.rpartition("#")
                if title and index.isdigit():
                    cites.append({"title": title, "sentence": int(index)})
        return {"revision": {"claim": claim, "status": "supported", "citations": cites, "depends_on": []}}

    def refresh(self) -> dict:
        return {"requirement_updates": []}

    def _sentence(self, citation: dict) -> str:
        paragraph = next(p for p in self.q.paragraphs if p.title == citation["title"])
        return " ".join(paragraph.sentences[citation["sentence"]].split()[:20])


def _unique(items) -> list:
    return list(dict.fromkeys(items))
