"""eval.runs.config.RunConfig: flags -> config -> tag -> config is the identity, a config checks itself as
it is made, a tag in any other form than today's is refused naming its key (older tags are migrated, not
read), and the names a run is known by (label, variant, sweep, run name), worked out by hand from the
naming rules."""

import json
import re
from dataclasses import replace
from types import SimpleNamespace

import pytest

import eval.run as run_module
from eir_dspy.lm.embedded_server import EMBEDDED_THREADS
from eir_dspy.lm.server_program import EngineBuild
from eval.runs.config import TAG_KEYS, LMConfig, ProgramFile, RunConfig
from eval.runs.errors import RunError
from eval.runs.flags import run_config

LOCAL = "local/qwen2.5-coder-1.5b"  # the default --lm as it is logged
WRITTEN = ["method", "dataset", "data_file", "n", "seed", "lm_model", "lm_path", "api_base", "price_in", "price_out",
           "temperature", "max_tokens", "decoding", "request_timeout", "budget", "threads", "engine", "server_args",
           "options", "setting", "index", "futile_searches", "lm", "default_decoding", "label"]  # the eir.config tag, in its order  # noqa: E501


def config(*flags: str) -> RunConfig:
    return run_config(run_module.parse_args(list(flags)))


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
    assert list(json.loads(resolved.to_tag())) == WRITTEN == TAG_KEYS


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


def test_the_build_that_served_the_embedded_model_round_trips_and_a_tag_without_one_still_reads():
    served = replace(ran(config()), served_by=EngineBuild("wheel", "11549", "avx2"))
    tag = json.loads(served.to_tag())
    assert tag["served_by"] == {"engine": "wheel", "llama_cpp": "11549", "cpu": "avx2"}
    assert list(tag)[list(tag).index("futile_searches") + 1] == "served_by"
    assert RunConfig.from_tag(served.to_tag()) == served
    assert RunConfig.from_tag(ran(config()).to_tag()).served_by is None  # API models, and runs before it was logged


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


# Tags of earlier versions (the first runs, before --decoding, before the managed server): the migration
# script rewrites them; read as they are, each is refused naming what is not today's form.
FIRST_TAG = {"method": "eir", "dataset": "hotpotqa", "data_file": "/data/hotpot_dev_distractor.jsonl", "n": 5,
             "seed": 0, "lm_model": "smollm2-135m", "lm_path": None, "api_base": None, "temperature": 0.0,
             "max_tokens": 2048, "budget": 6, "threads": 1, "lm": "local/smollm2-135m", "constrained": True}


def today(**changes) -> dict:
    tag = json.loads(ran(config()).to_tag())
    return {**tag, **changes}


@pytest.mark.parametrize("tag, named", [
    (FIRST_TAG, "missing key 'price_in'"),
    ({k: v for k, v in today().items() if k != "decoding"}, "missing key 'decoding'"),
    ({k: v for k, v in today().items() if k != "engine"}, "missing key 'engine'"),
    ({k: v for k, v in today().items() if k != "futile_searches"}, "missing key 'futile_searches'"),
    (today(constrained=True), "unknown key 'constrained'"),
    (today(options={"ablation": "none"}), "options: 'invalid_updates' is missing for method eir"),
    (today(options={"ablation": "none", "invalid_updates": "discard", "votes": 3}), "options: 'votes' is unknown"),
    (today(api_base="http://127.0.0.1:8080/v1"), "api_base must be a list of URLs"),
    (today(setting=None), "unknown --setting None"),
    (today(method="eirr"), "unknown --method 'eirr'"),
], ids=["first", "no-decoding", "no-engine", "no-futile-searches", "unknown-key", "eir-no-invalid-updates",
        "unknown-option", "api-base-string", "setting-null", "unknown-method"])
def test_a_tag_not_in_todays_form_is_refused_naming_the_key(tag, named):
    with pytest.raises(RunError, match="eir.config tag: .*" + named.replace("(", r"\(").replace(")", r"\)")):
        RunConfig.from_tag(json.dumps(tag))


def test_a_config_checks_itself_however_it_is_made():
    assert dict(RunConfig(method="ssr", setting="corpus").options) == {"verifier_temperature": 0.0, "votes": 3}
    assert dict(RunConfig().options) == {"ablation": "none", "invalid_updates": "discard"}  # resolved as made
    for made, message in [(lambda: RunConfig(method="full_pool", setting="corpus"), "--method full_pool has no corpus"),
                          (lambda: RunConfig(setting="corpus", dataset="2wiki"), "got --dataset 2wiki"),
                          (lambda: RunConfig(futile_searches="reject"), "--futile-searches is a rule of the corpus"),
                          (lambda: RunConfig(method="direct", options={"votes": 3}), "'votes' is not an option"),
                          (lambda: replace(RunConfig(), setting="corpus", dataset="musique"), "got --dataset musique")]:
        with pytest.raises(RunError, match=message):
            made()


def test_an_inprocess_run_still_reads_but_never_runs_again():
    engine = RunConfig.from_tag(json.dumps(today(engine="inprocess")))
    assert engine.lm.engine == "inprocess" and engine.variant == "eir"
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
    with pytest.raises(RunError, match="'invalid_updates' is not an option of method direct"):
        config("--method", "direct", "--invalid-updates", "reject")


def test_the_corpus_search_rule_is_logged_named_off_the_paper_and_reaches_the_program(tmp_path):
    from eir_dspy.corpus_index import CorpusIndex
    from programs.registry import METHODS
    from programs.run_context import RunContext
    from programs.setting import new_environment
    from tests.scripted import scripted_lm

    paper, old = config("--setting", "corpus"), config("--setting", "corpus", "--futile-searches", "reject")
    assert (paper.futile_searches, paper.variant) == ("run", "eir")
    assert (old.futile_searches, old.variant) == ("reject", "eir futile_searches=reject")
    assert RunConfig.from_tag(old.to_tag()) == old
    index = CorpusIndex.__new__(CorpusIndex)  # the environment only keeps a reference until it searches
    assert new_environment((), index).futile_searches == "run"  # the paper's, unless a program passes its own
    with pytest.raises(ValueError, match="not resolved"):
        old.run_context  # noqa: B018 - the decoding is resolved by the LM first
    lm = scripted_lm([])
    assert paper.with_lm(lm).run_context == RunContext("schema", "run")  # the embedded model's default decoding
    assert old.with_lm(lm).run_context == RunContext("schema", "reject")
    for method in ("eir", "direct", "ssr", "reflexion"):  # what eval.run builds (eval/runs/lifecycle.py)
        program = METHODS[method].build(6, old.options if method == "eir" else {}, old.with_lm(lm).run_context)
        assert program.context.futile_searches == "reject"


def test_a_grid_cell_is_the_config_its_command_line_makes(tmp_path, monkeypatch):
    import eval.grid as grid_module

    monkeypatch.delenv("EIR_DATA_DIR", raising=False)
    path = tmp_path / "g.toml"
    path.write_text('experiment = "g"\nreference = "ssr H=4 votes=2 T=0.7"\nn = 2\nseed = 4\ndatasets = ["hotpotqa"]\nlms = ["openai/gpt-4.1-mini"]\n'  # noqa: E501
                    '[data]\nhotpotqa = "d.jsonl"\n[run]\nmax_tokens = 256\ntrace = true\n'
                    '[[methods]]\nmethod = "ssr"\nvotes = 2\nbudgets = [4]\n')
    grid = grid_module.load_grid(path)
    (cell,) = grid.cells
    argv = ["--method", "ssr", "--votes", "2", "--budget", "4", "--limit", "2", "--seed", "4", "--lm", "openai/gpt-4.1-mini",
            "--max-tokens", "256", "--trace", "--data", "d.jsonl"]
    assert cell.config == replace(run_config(run_module.parse_args(argv)), data_file=None)
    started = grid.run_config(cell)
    assert started == replace(cell.config, data_file="d.jsonl")
    assert (started.method, started.budget, started.n, started.seed, started.lm.max_tokens, dict(started.options)) == \
        ("ssr", 4, 2, 4, 256, {"verifier_temperature": 0.7, "votes": 2})
    assert started == run_config(run_module.parse_args(argv))  # the same run on the command line


@pytest.mark.parametrize("given, named", [({"budget": 0}, "--budget must be a positive integer, got 0"),
                                          ({"n": -1}, "--limit must be a positive integer, got -1"),
                                          ({"setting": "corpus", "futile_searches": "bogus"},
                                           "unknown --futile-searches 'bogus'; choose one of run, reject")])
def test_a_config_refuses_a_value_no_run_can_have_however_it_is_made(given, named):
    with pytest.raises(RunError, match=re.escape(named)):
        RunConfig(**given)
    tag = {**RunConfig().to_dict(), **given}
    with pytest.raises(RunError, match=re.escape(named)):
        RunConfig.from_dict(tag)
