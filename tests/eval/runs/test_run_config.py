"""eval.runs.config.RunConfig: flags -> config -> tag -> config is the identity, a tag logged by an earlier
version of eval.run still loads (its compatibility rules), and the names a run is known by (label,
variant, sweep, run name), worked out by hand from the naming rules."""

import json
from dataclasses import replace
from types import SimpleNamespace

import pytest

import eval.run as run_module
from eir_dspy.lm.embedded_server import EMBEDDED_THREADS
from eval.runs.config import LMConfig, ProgramFile, RunConfig

LOCAL = "local/qwen2.5-coder-1.5b"  # the default --lm as it is logged
TAG_KEYS = ["method", "dataset", "data_file", "n", "seed", "lm_model", "lm_path", "api_base", "price_in", "price_out",
            "temperature", "max_tokens", "decoding", "request_timeout", "budget", "threads", "engine", "server_args",
            "options", "setting", "index", "futile_searches", "lm", "default_decoding", "label"]  # the eir.config tag, in its order  # noqa: E501


def config(*flags: str) -> RunConfig:
    return RunConfig.from_args(run_module.parse_args(list(flags)))


def ran(c: RunConfig, label: str | None = None, model: str = LOCAL, schema: bool = True) -> RunConfig:
    """As eval.run resolves it: the built LM (its name; an API model's schema support), then the label."""
    lm = SimpleNamespace(model=model, supports_response_schema=schema)
    c = c.with_lm(lm)
    return c.with_label(label or c.method)


def program_file(tmp_path) -> str:
    """A file as eval.compile writes it, as far as eval.run reads it (metadata.eir)."""
    path = tmp_path / "boot.json"
    path.write_text(json.dumps({"metadata": {"eir": {"name": "boot", "method": "eir", "options": {"ablation": "none"}}}}))
    return str(path)


FLAG_SETS = [
    [],
    ["--method", "direct", "--budget", "8", "--limit", "20", "--seed", "3", "--data", "d.jsonl"],
    ["--method", "ssr", "--votes", "2", "--verifier-temperature", "0.3", "--decoding", "free"],
    ["--method", "ssr", "--setting", "corpus", "--index", "runs/corpus/enwiki-index"],
    ["--method", "reflexion", "--trials", "2", "--threads", "4", "--temperature", "0.7", "--max-tokens", "256"],
    ["--method", "eir", "--ablation", "repair-unapplied", "--budget", "4"],
    ["--method", "full_pool", "--lm", "openai/gpt-4.1-mini", "--api-base", "http://a/v1", "http://b/v1",
     "--price-in", "0.4", "--price-out", "1.6", "--request-timeout", "30"],
    ["--lm-path", "m.gguf", "--server-args", "--spec-type ngram-simple", "--decoding", "strict"],
]


@pytest.mark.parametrize("flags", FLAG_SETS, ids=lambda f: " ".join(f) or "defaults")
def test_flags_to_tag_and_back_is_the_same_config(flags):
    c = config(*flags)
    assert RunConfig.from_tag(c.to_tag()) == c
    resolved = replace(ran(c), n=3, data_file="d.jsonl", threads=c.threads or 1)
    back = RunConfig.from_tag(resolved.to_tag())
    assert back == resolved and back.variant == resolved.variant and back.run_name == resolved.run_name
    assert list(json.loads(resolved.to_tag())) == TAG_KEYS


def test_a_program_and_a_corpus_round_trip_too(tmp_path):
    c = config("--program", program_file(tmp_path))
    assert c.program == ProgramFile("boot", str((tmp_path / "boot.json").resolve()), c.program.sha256)
    corpus = replace(ran(config("--setting", "corpus")), index="runs/corpus/x", corpus="offline-hotpotqa",
                     corpus_paragraphs=6)
    for each in (c, ran(c), corpus):
        assert RunConfig.from_tag(each.to_tag()) == each
    keys = list(json.loads(corpus.to_tag()))
    assert keys[keys.index("index") + 1:] == ["futile_searches", "corpus", "corpus_paragraphs", "lm", "default_decoding", "label"]
    assert json.loads(ran(c).to_tag())["program"] == {"name": "boot", "path": c.program.path, "sha256": c.program.sha256}


def test_the_config_holds_every_flag_once():
    c = config("--method", "ssr", "--decoding", "free", "--api-base", "http://a/v1", "--threads", "2")
    assert c.lm == LMConfig(api_base=("http://a/v1",), decoding="free") and c.threads == 2
    assert dict(c.options) == {"verifier_temperature": 0.7, "votes": 3}
    with pytest.raises(TypeError):
        c.options["votes"] = 5  # frozen, options too
    spec = c.lm.spec(c.threads)  # decoding has one carrier: the spec and the adapter read it from c.lm
    assert (spec.decoding, spec.slots, spec.api_base) == ("free", 2, ("http://a/v1",))
    assert LMConfig().spec(1).decoding == "schema" and LMConfig("openai/x").spec(1).decoding is None
    assert LMConfig().default_threads == EMBEDDED_THREADS and LMConfig(engine="inprocess").default_threads == 1


def test_names_by_hand(tmp_path):
    plain = ran(config())
    assert (plain.label, plain.variant, plain.sweep) == ("eir", "eir", "eir")
    assert plain.run_name == f"eir / hotpotqa / {LOCAL} / H=6"  # H=6 is named in the run name only

    swept = ran(config("--budget", "8", "--ablation", "repair", "--dataset", "musique"))
    assert (swept.variant, swept.sweep) == ("eir repair H=8", "eir repair")
    assert swept.run_name == f"eir repair H=8 / musique / {LOCAL}"

    ssr = ran(config("--method", "ssr"))
    assert ssr.variant == "ssr votes=3 T=0.7" and ssr.run_name == f"ssr votes=3 T=0.7 / hotpotqa / {LOCAL} / H=6"
    corpus = ran(config("--method", "ssr", "--setting", "corpus", "--votes", "5"))
    assert (corpus.label, corpus.variant) == ("ssr_corpus", "ssr_corpus votes=5 T=0")

    reflexion = ran(config("--method", "reflexion", "--trials", "2"), "reflexion_oracle")
    assert reflexion.variant == "reflexion_oracle trials=2"
    assert reflexion.with_label("reflexion_first").run_name == f"reflexion_first trials=2 / hotpotqa / {LOCAL} / H=6"

    free = ran(config("--decoding", "free"))  # not the embedded model's default (schema): named
    assert (free.label, free.lm.decoding, free.default_decoding) == ("eir decoding=free", "free", "schema")
    assert free.run_name == f"eir decoding=free / hotpotqa / {LOCAL} / H=6"
    assert ran(config("--decoding", "schema")).label == "eir"  # the default, asked for: not named
    api = ran(config("--lm", "openai/gpt-4.1-mini", "--decoding", "free"), model="openai/gpt-4.1-mini", schema=True)
    assert api.variant == "eir decoding=free" and api.default_decoding == "schema"
    assert ran(config("--lm", "openai/gpt-4.1-mini"), model="openai/gpt-4.1-mini", schema=False).label == "eir"

    compiled = ran(config("--program", program_file(tmp_path), "--budget", "4"))
    assert compiled.variant == "eir compiled=boot H=4" and compiled.sweep == "eir compiled=boot"


# The first runs (before method options, settings, --decoding and the managed server): an embedded
# model, a `constrained` flag no version reads any more. A copy of what eval.run wrote then.
FIRST_TAG = {"method": "eir", "dataset": "hotpotqa", "data_file": "/data/hotpot_dev_distractor.jsonl", "n": 5,
             "seed": 0, "lm_model": "smollm2-135m", "lm_path": None, "api_base": None, "temperature": 0.0,
             "max_tokens": 2048, "budget": 6, "threads": 1, "lm": "local/smollm2-135m", "constrained": True}
# Before --decoding: an API model on one endpoint (--api-base took one URL), options and a setting.
BEFORE_DECODING = {"method": "reflexion", "dataset": "2wiki", "data_file": None, "n": 100, "seed": 1,
                   "lm_model": "openai/gpt-4.1-mini", "lm_path": None, "api_base": "http://127.0.0.1:8080/v1",
                   "temperature": 0.0, "max_tokens": 2048, "request_timeout": 120.0, "budget": 8, "threads": 4,
                   "options": {"trials": 5}, "setting": None, "index": None, "lm": "openai/gpt-4.1-mini",
                   "label": "reflexion_oracle"}
# Before the managed server: decoding and prices, no engine (it ran in-process).
BEFORE_ENGINE = {"method": "eir", "dataset": "hotpotqa", "data_file": "d.jsonl", "n": 3, "seed": 0,
                 "lm_model": "qwen2.5-coder-1.5b", "lm_path": None, "api_base": None, "price_in": None,
                 "price_out": None, "temperature": 0.0, "max_tokens": 2048, "decoding": "schema",
                 "request_timeout": 600.0, "budget": 6, "threads": 1, "options": {"ablation": "none"},
                 "setting": "pool", "index": None, "lm": LOCAL, "default_decoding": "schema", "label": "eir"}


def test_runs_logged_by_earlier_versions_still_load():
    first = RunConfig.from_tag(json.dumps(FIRST_TAG))
    # Logged before EIR's list-update rule was an option: the rule then in force (reject), named,
    # so it never pairs with runs under the paper's pool rule (discard).
    assert (first.variant, first.label, first.setting, dict(first.options)) == (
        "eir invalid_updates=reject", "eir", "pool", {"invalid_updates": "reject"})
    assert first.run_name == "eir invalid_updates=reject / hotpotqa / local/smollm2-135m / H=6"
    assert first.recorded_decoding is None  # logged before --decoding: read back as not recorded ...
    assert first.lm.decoding == "strict" and first.lm.engine == "inprocess"  # ... but it ran strict, in-process
    assert first.lm.request_timeout == 600.0 and first.lm.server_args == "" and first.program is None

    api = RunConfig.from_tag(json.dumps(BEFORE_DECODING))
    assert api.variant == "reflexion_oracle H=8 trials=5" and api.sweep == "reflexion_oracle trials=5"
    assert api.run_name == "reflexion_oracle H=8 trials=5 / 2wiki / openai/gpt-4.1-mini"
    assert api.setting == "pool" and api.lm.decoding is None and api.lm.endpoints == 1
    assert api.lm.spec(1).api_bases == ("http://127.0.0.1:8080/v1",) and api.lm.request_timeout == 120.0

    engine = RunConfig.from_tag(json.dumps(BEFORE_ENGINE))
    assert engine.lm.engine == "inprocess" and engine.recorded_decoding == "schema"
    assert engine.variant == "eir invalid_updates=reject"
    with pytest.raises(ValueError, match="'inprocess' engine .* retired in issue 33"):
        engine.lm.spec(1)  # read, compared and analyzed as before; never run again on the retired engine


def test_eirs_list_update_rule_is_logged_resolved_and_named_only_off_the_papers_rule():
    pool, corpus = config(), config("--setting", "corpus")
    assert pool.options["invalid_updates"] == "discard" and corpus.options["invalid_updates"] == "reject"
    assert pool.variant == "eir" and corpus.variant == "eir"
    off = config("--invalid-updates", "reject")
    assert off.options["invalid_updates"] == "reject" and off.variant == "eir invalid_updates=reject"
    assert RunConfig.from_tag(off.to_tag()).variant == "eir invalid_updates=reject"
    assert RunConfig.from_tag(pool.to_tag()).variant == "eir"
    with pytest.raises(SystemExit, match="--invalid-updates is EIR's list-update rule"):
        config("--method", "direct", "--invalid-updates", "reject")


def test_the_corpus_search_rule_is_logged_named_off_the_paper_and_reaches_the_environment(tmp_path):
    import dspy

    from eir_dspy.corpus_index import CorpusIndex
    from programs.setting import new_environment

    paper, old = config("--setting", "corpus"), config("--setting", "corpus", "--futile-searches", "reject")
    assert (paper.futile_searches, paper.variant) == ("run", "eir")
    assert (old.futile_searches, old.variant) == ("reject", "eir futile_searches=reject")
    assert RunConfig.from_tag(old.to_tag()) == old
    before = {k: v for k, v in json.loads(paper.to_tag()).items() if k != "futile_searches"}
    assert RunConfig.from_dict(before).futile_searches == "reject"  # corpus runs logged before the option
    index = CorpusIndex.__new__(CorpusIndex)  # the environment only keeps a reference until it searches
    assert new_environment((), index).futile_searches == "run"
    with dspy.context(futile_searches="reject"):
        assert new_environment((), index).futile_searches == "reject"


def test_resuming_a_run_from_before_decoding_keeps_its_label():
    first = RunConfig.from_tag(json.dumps(FIRST_TAG))
    resumed = ran(first, model="local/smollm2-135m")
    assert (resumed.lm.decoding, resumed.default_decoding, resumed.label) == ("strict", "strict", "eir")
    assert resumed.variant == "eir invalid_updates=reject" and resumed.recorded_decoding == "strict"
    # A run that asks for strict today is another condition, and named so.
    assert ran(config("--lm", "smollm2-135m", "--decoding", "strict"), model="local/smollm2-135m").label == \
        "eir decoding=strict"
    # Its tag, written again (Reflexion's variant run after a resume), now records the decoding.
    assert "decoding" in json.loads(resumed.to_tag()) and "decoding" not in json.loads(first.to_tag())
    assert RunConfig.from_tag(first.to_tag()) == first


def test_a_grid_cell_is_the_config_its_command_line_makes(tmp_path, monkeypatch):
    import eval.grid as grid_module

    monkeypatch.delenv("EIR_DATA_DIR", raising=False)
    path = tmp_path / "g.toml"
    path.write_text('experiment = "g"\nreference = "ssr H=4 votes=2 T=0.7"\nn = 2\nseed = 4\ndatasets = ["hotpotqa"]\nlms = ["openai/gpt-4.1-mini"]\n'  # noqa: E501
                    '[data]\nhotpotqa = "d.jsonl"\n[run]\nmax_tokens = 256\ntrace = true\n'
                    '[[methods]]\nmethod = "ssr"\nvotes = 2\nbudgets = [4]\n')
    grid = grid_module.load_grid(path)
    (cell,) = grid.cells
    assert cell.config == RunConfig.from_args(run_module.parse_args(list(cell.argv)))
    started = grid.run_config(cell)
    assert started == replace(cell.config, data_file="d.jsonl")
    assert (started.method, started.budget, started.n, started.seed, started.lm.max_tokens, dict(started.options)) == \
        ("ssr", 4, 2, 4, 256, {"verifier_temperature": 0.7, "votes": 2})
    assert started == RunConfig.from_args(run_module.parse_args(grid.argv(cell)))
