"""benchmarks/simulated_endpoint.py plays a competent model: every method's calls get answers the
harness accepts, the same request always the same answer, and faults as configured."""

import json
import threading
import urllib.error
import urllib.request

import pytest

from benchmarks.simulated_agent import Gold, Policy, SimulatedAgent
from benchmarks.simulated_endpoint import SimulatedEndpoint
from eval.data.loaders import load_file

DATA = "tests/fixtures/hotpot_hf.jsonl"


@pytest.fixture(scope="module")
def questions():
    return load_file(DATA, "hotpotqa")


@pytest.fixture
def endpoint(questions):
    def start(**kwargs):
        sim = SimulatedEndpoint(SimulatedAgent(Gold(questions), Policy(seed=0, wrong=0.0, distract=0.0)), **kwargs)
        threading.Thread(target=sim.server.serve_forever, daemon=True).start()
        started.append(sim)
        return sim

    started = []
    yield start
    for sim in started:
        sim.server.shutdown()
        sim.server.server_close()


def post(url: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


EIR_SYSTEM = ("Your input fields are:\n1. `question` (str): \nYour output fields are:\n"
              "1. `requirement_updates` (list[RequirementUpdate]): \n2. `conclusion_updates` (list[ConclusionUpdate]): \n"
              "3. `action` (EIRAction):\nAll interactions ...")


def eir_user(q, unread, last_result, requirements="(none yet: add one per fact the question needs)"):
    return (f"[[ ## question ## ]]\n{q.question}\n\n[[ ## requirements ## ]]\n{requirements}\n\n"
            f"[[ ## conclusions ## ]]\n(none yet)\n\n[[ ## unread_titles ## ]]\n" + "\n".join(unread)
            + f"\n\n[[ ## last_result ## ]]\n{last_result}\n\nRespond with a JSON object.")


def test_eir_turns_read_gold_then_cite_what_was_read(questions):
    q = questions[0]
    agent = SimulatedAgent(Gold(questions), Policy(seed=0, wrong=0.0, distract=0.0))
    titles = [p.title for p in q.paragraphs]
    gold = [t for t in dict.fromkeys(t for t, _ in q.supporting_facts)]
    first = agent.reply(EIR_SYSTEM, eir_user(q, titles, "(nothing yet: choose a paragraph to read)"))
    assert first["action"] == {"kind": "read", "title": gold[0], "answer": ""}
    assert first["conclusion_updates"] == [] and len(first["requirement_updates"]) == len(gold)
    unread = [t for t in titles if t != gold[0]]
    second = agent.reply(EIR_SYSTEM, eir_user(q, unread, f'Read "{gold[0]}" (5 reads left).',
                                              requirements=f"R1 [open] the fact the paragraph {gold[0]!r} gives"))
    cited = {c["title"] for u in second["conclusion_updates"] for c in u["citations"]}
    assert cited == {gold[0]}  # only the paragraph read
    assert second["requirement_updates"][0]["id"] == "R1" and second["requirement_updates"][0]["status"] == "satisfied"
    assert second["action"]["title"] == gold[1]
    done = agent.reply(EIR_SYSTEM, eir_user(q, [t for t in titles if t not in gold], f'Read "{gold[1]}" (4 reads left).'))
    assert done["action"] == {"kind": "submit", "title": "", "answer": q.answer}


def test_the_same_request_gets_the_same_reply_and_wrong_answers_come_at_the_set_rate(questions):
    agent = SimulatedAgent(Gold(questions), Policy(seed=3, wrong=0.5))
    replies = []
    for q in questions:
        titles = [p.title for p in q.paragraphs]
        user = eir_user(q, [], f'Read "{titles[0]}" (0 reads left: your next action must be submit).')
        a, b = agent.reply(EIR_SYSTEM, user), agent.reply(EIR_SYSTEM, user)
        assert a == b
        replies.append(a["action"]["answer"] == q.answer)
    assert 0 < sum(replies) < len(replies)  # some right, some wrong, fixed by the seed


def test_openai_and_anthropic_formats_with_usage(endpoint, questions):
    sim = endpoint()
    q = questions[0]
    messages = [{"role": "system", "content": EIR_SYSTEM},
                {"role": "user", "content": eir_user(q, [p.title for p in q.paragraphs], "(nothing yet)")}]
    status, body = post(sim.url + "/v1/chat/completions", {"model": "gpt-4.1-mini", "messages": messages})
    assert status == 200 and body["usage"]["prompt_tokens"] > 50
    assert json.loads(body["choices"][0]["message"]["content"])["action"]["kind"] == "read"
    status, body = post(sim.url + "/v1/messages", {"model": "claude-haiku-4-5", "system": EIR_SYSTEM,
                                                   "messages": messages[1:]})
    assert status == 200 and body["type"] == "message" and body["usage"]["input_tokens"] > 50
    assert json.loads(body["content"][0]["text"])["action"]["kind"] == "read"
    assert sim.snapshot()["by_model"] == {"gpt-4.1-mini": 1, "claude-haiku-4-5": 1}


def test_transient_faults_clear_on_retry_and_malformed_replies_repeat(endpoint, questions):
    sim = endpoint(faults=1.0, hang=0.01)  # every first attempt faults
    q = questions[1]
    body = {"model": "m", "messages": [{"role": "system", "content": EIR_SYSTEM},
                                       {"role": "user", "content": eir_user(q, [], "(nothing yet)")}]}
    statuses, texts = [], set()
    for _ in range(12):
        try:
            status, reply = post(sim.url + "/v1/chat/completions", body)
        except (urllib.error.URLError, ConnectionError):  # a hang closes the connection unanswered
            status, reply = "hang", None
        statuses.append(status)
        if status == 200:
            texts.add(reply["choices"][0]["message"]["content"])
    served = sim.snapshot()
    assert sum(served["faults"][k] for k in ("429", "500", "hang")) >= 1
    assert statuses[0] != 200 and 200 in statuses  # the first attempt faults, a later one gets through
    assert len(texts) == 1  # cut short or not, the same request always gets the same text
