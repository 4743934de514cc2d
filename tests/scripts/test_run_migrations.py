"""scripts/run_migrations.py: each rule RunConfig.from_dict applied to an old `eir.config` tag, as a step
on the tag, gives what today's `RunConfig.from_dict(old).to_dict()` writes (keys and their order);
old records get their trajectories' method and their run's id."""

import json
from pathlib import Path

import pytest

from eir_dspy.lm.server_program import EngineBuild
from eval.runs.config import LMConfig, ProgramFile, RunConfig
from eval.runs.errors import RunError
from programs.registry import METHODS
from tests.fixtures.scripts import load_script

mig = load_script("run_migrations")

API = RunConfig(method="direct", lm=LMConfig(model="openai/fake", api_base=("http://127.0.0.1:1/v1",), decoding="free",
                                             price_in=0.1, price_out=0.4),
                data_file="/data/dev.jsonl", n=3, threads=1, lm_name="openai/fake", default_decoding="free",
                method_label="direct").to_dict()
EIR_CORPUS = RunConfig(method="eir", setting="corpus", options={"ablation": "none", "invalid_updates": "reject"},
                       lm=LMConfig(model="openai/fake", api_base=("http://a/v1", "http://b/v1"), decoding="schema"),
                       index="/idx", corpus="hotpotqa-abstracts", corpus_paragraphs=5233, lm_name="openai/fake",
                       default_decoding="free", method_label="eir_corpus decoding=schema",
                       program=ProgramFile("g", "/p/g.json", "ab" * 32), futile_searches="reject").to_dict()

# One old tag per rule, with what the reader of old tags (RunConfig.from_dict before issue 33 removed its
# compatibility rules, commit 2d0f41f) made of it: its to_dict() (`decoding: null` where to_dict left the key
# out) and how the run read (variant, label, run name, recorded decoding, options ...). Captured once from that
# code, since today's from_dict refuses these tags.
CASES = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "migration_cases.json").read_text())
IDS = [f"{c['rule']}-{i}" for i, c in enumerate(CASES)]


def expected(case: dict) -> dict:
    """What the old reader wrote, with today's two stricter forms: `api_base` always a list, and every
    option the method takes, as the run was built (the old reader left defaults out)."""
    want = dict(case["to_dict"])
    if isinstance(want["api_base"], str):
        want["api_base"] = [want["api_base"]]
    want["options"] = METHODS[want["method"]].make_options(want["options"], want["setting"]).as_dict()
    return want


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_each_rule_gives_what_the_old_reader_read_in_todays_form(case):
    new, applied = mig.migrate_config(case["old"])
    assert json.dumps(new) == json.dumps(expected(case))  # the same keys, values and order
    assert case["rule"] in applied and set(applied) <= set(mig.RULES)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_migrated_tag_reads_as_the_old_one_did_and_migrates_no_further(case):
    new, _ = mig.migrate_config(case["old"])
    after, was = RunConfig.from_dict(new), case["reads_as"]
    names = ("variant", "label", "sweep", "run_name", "setting", "budget", "n", "futile_searches")
    assert {n: getattr(after, n) for n in names} == {n: was[n] for n in names}
    assert after.lm.decoding == was["recorded_decoding"] and after.lm_name == was["lm_name"]
    assert {k: after.options[k] for k in was["options"]} == was["options"]  # the rest: the method's defaults
    assert mig.migrate_config(new) == (new, [])


def test_todays_from_dict_refuses_an_old_tag_naming_the_key():
    with pytest.raises(RunError, match="missing key 'decoding'.*migrate it first"):
        RunConfig.from_dict(CASES[0]["old"])


def test_current_tags_are_left_as_they_are():
    served = RunConfig(options={"ablation": "none", "invalid_updates": "discard"}, lm_name="local/qwen2.5-coder-1.5b",
                       served_by=EngineBuild("wheel", "11549", "avx2")).to_dict()  # the build that served it (issue 41)
    for tag in (API, EIR_CORPUS, RunConfig(options={"ablation": "none", "invalid_updates": "discard"}).to_dict(), served):
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
