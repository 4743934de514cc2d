"""scripts/run_migrations.py: each rule RunConfig.from_dict applied to an old `eir.config` tag, as a step
on the tag, gives what today's `RunConfig.from_dict(old).to_dict()` writes (keys and their order);
old records get their trajectories' method and their run's id."""

import json

import pytest

from eval.runs.config import LMConfig, ProgramFile, RunConfig
from tests.fixtures.scripts import load_script

mig = load_script("run_migrations")

API = RunConfig(method="direct", lm=LMConfig(model="openai/fake", api_base="http://127.0.0.1:1/v1", decoding="free",
                                             price_in=0.1, price_out=0.4),
                data_file="/data/dev.jsonl", n=3, threads=1, lm_name="openai/fake", default_decoding="free",
                method_label="direct").to_dict()
EIR_CORPUS = RunConfig(method="eir", setting="corpus", options={"ablation": "none", "invalid_updates": "reject"},
                       lm=LMConfig(model="openai/fake", api_base=("http://a/v1", "http://b/v1"), decoding="schema"),
                       index="/idx", corpus="hotpotqa-abstracts", corpus_paragraphs=5233, lm_name="openai/fake",
                       default_decoding="free", method_label="eir_corpus decoding=schema",
                       program=ProgramFile("g", "/p/g.json", "ab" * 32), futile_searches="reject").to_dict()


def without(tag: dict, *keys: str, **values) -> dict:
    return {**{k: v for k, v in tag.items() if k not in keys}, **values}


# One old tag per rule (its name first), as runs logged before each key existed hold them.
CASES = [
    ("decoding", without(API, "decoding")),
    ("decoding", without(API, "decoding", "lm_model", "api_base", lm_model="qwen2.5-coder-1.5b")),  # the embedded model
    ("engine", without(API, "engine")),
    ("request_timeout", without(API, "request_timeout")),
    ("none_if_absent", without(API, "price_in", "price_out", "index", "label", "lm", "default_decoding", "threads")),
    ("none_if_absent", {**EIR_CORPUS, "program": None, "corpus": None}),
    ("server_args", without(API, "server_args")),
    ("server_args", without(API, server_args=None)),
    ("setting", without(API, "setting")),
    ("setting", without(API, setting=None)),
    ("options", without(API, "options")),
    ("options", without(API, options=None)),
    ("futile_searches", without(EIR_CORPUS, "futile_searches")),
    ("futile_searches", without(API, "futile_searches")),
    ("futile_searches", without(EIR_CORPUS, futile_searches=None)),
    ("invalid_updates", without(EIR_CORPUS, options={"ablation": "none"})),
    ("invalid_updates", without(API, "method", options={})),  # no method: EIR
    ("defaults", {}),
    ("defaults", without(API, "method", "dataset", "n", "seed", "temperature", "max_tokens", "budget")),
    ("defaults", without(API, n="3", budget="8")),
    ("unknown_keys", without(API, constrained=True)),
    ("key_order", dict(reversed(list(API.items())))),
]


def expected(old: dict) -> dict:
    """Today's RunConfig.from_dict(old).to_dict(); for a tag without `decoding`, the same with
    `decoding: null` in its place (to_dict() leaves the key out so from_dict applies the legacy rule
    again; the migrated tag must read without it)."""
    want = RunConfig.from_dict(old).to_dict()
    if "decoding" not in want:
        items = list(want.items())
        at = list(want).index("max_tokens") + 1
        want = dict(items[:at] + [("decoding", None)] + items[at:])
    return want


@pytest.mark.parametrize("rule, old", CASES, ids=[f"{r}-{i}" for i, (r, _) in enumerate(CASES)])
def test_each_rule_gives_what_from_dict_reads_and_to_dict_writes(rule, old):
    new, applied = mig.migrate_config(old)
    assert list(new.items()) == list(expected(old).items())  # the same keys, values and order
    assert json.dumps(new) == json.dumps(expected(old))
    assert rule in applied and set(applied) <= set(mig.RULES)


@pytest.mark.parametrize("rule, old", CASES, ids=[f"{r}-{i}" for i, (r, _) in enumerate(CASES)])
def test_a_migrated_tag_reads_as_the_old_one_and_migrates_no_further(rule, old):
    new, _ = mig.migrate_config(old)
    before, after = RunConfig.from_dict(old), RunConfig.from_dict(new)
    names = ("variant", "label", "sweep", "run_name", "recorded_decoding", "setting", "budget", "n", "futile_searches")
    assert {n: getattr(after, n) for n in names} == {n: getattr(before, n) for n in names}
    assert dict(after.options) == dict(before.options) and after.lm_name == before.lm_name
    assert not after.legacy_decoding
    assert mig.migrate_config(new) == (new, [])


def test_current_tags_are_left_as_they_are():
    for tag in (API, EIR_CORPUS, RunConfig(options={"ablation": "none", "invalid_updates": "discard"}).to_dict()):
        assert mig.migrate_config(tag) == (tag, [])


def test_the_pinned_values_are_todays_defaults():
    from eir_dspy.corpus_environment import DEFAULT_FUTILE_SEARCHES, FUTILE_REJECT
    from eir_dspy.lm import DEFAULT_REQUEST_TIMEOUT
    from eir_dspy.lm.local_models import DEFAULT_MODEL
    from eir_dspy.state import REJECT

    assert (mig.REQUEST_TIMEOUT, mig.DEFAULTS["lm_model"]) == (DEFAULT_REQUEST_TIMEOUT, DEFAULT_MODEL)
    assert (mig.FUTILE_SEARCHES_RUN, mig.FUTILE_SEARCHES_REJECT, mig.INVALID_UPDATES_REJECT) == \
        (DEFAULT_FUTILE_SEARCHES, FUTILE_REJECT, REJECT)
    assert list(mig.HEAD_KEYS) + ["program", "corpus", "corpus_paragraphs"] + list(mig.TAIL_KEYS) == list(EIR_CORPUS)


# ---------------------------------------------------------------- records

TRAJECTORIES = [
    ("reflexion", {"trials": [], "stopped_at": 1}),
    ("reflexion", {"see": "reflexion_oracle trial 1"}),
    ("ssr", {"turns": [], "ssr": []}),
    ("eir", {"turns": [], "requirements": [], "conclusions": [], "final_parsed": True}),
    ("eir", {"turns": [], "final_parsed": False}),
    ("full_pool", {"final_parsed": True}),
    ("direct", {"turns": [], "submitted": "x", "forced_end": False}),
]


@pytest.mark.parametrize("method, trajectory", TRAJECTORIES)
def test_an_old_trajectory_gets_the_method_its_keys_name(method, trajectory):
    row, changes = mig.migrate_record({"id": "q1", "em": 1.0, "trajectory": trajectory}, None)
    assert row == {"id": "q1", "em": 1.0, "trajectory": {"method": method, **trajectory}}
    assert list(row["trajectory"])[0] == "method" and changes == ["trajectory method"]


def test_variants_are_migrated_and_the_run_id_is_added_last():
    old = {"id": "q1", "trajectory": {"trials": []},
           "variants": {"reflexion_first": {"id": "q1", "trajectory": {"turns": [], "submitted": None}}}}
    row, changes = mig.migrate_record(old, "r1")
    assert row["trajectory"]["method"] == "reflexion" and row["variants"]["reflexion_first"]["trajectory"]["method"] == "direct"
    assert list(row)[-1] == "run_id" and row["run_id"] == "r1" and "run_id" not in row["variants"]["reflexion_first"]
    assert changes == ["trajectory method", "run id"]
    assert mig.migrate_record(row, "r1") == (row, [])


def test_records_already_current_or_without_a_trajectory_are_unchanged():
    for row in ({"id": "q1", "trajectory": None, "run_id": "r1"}, {"id": "q1", "trajectory": {"method": "direct"}, "run_id": "r"},
                {"id": "q1", "trajectory": {"nothing": 1}, "run_id": "r"}):
        assert mig.migrate_record(row, "r1") == (row, [])
