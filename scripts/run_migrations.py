"""The migration steps from every earlier format of eval.run's output to the current one (issue 33):
pure functions on one `eir.config` tag or one results-file record, each returning the migrated value
and the names of the rules it applied. scripts/migrate_runs.py applies them to a store's runs and
files; the readers (eval.runs.config, eval.files) then read only the current format.

The config rules are those `RunConfig.from_dict` applied when reading an old tag, written once as
steps on the tag itself, so the tag becomes what today's `RunConfig.to_dict()` writes (its keys, in
its order). Values are pinned here: they are what the runs ran under, whatever the defaults become.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from programs.registry import METHODS

# What runs logged before a key existed ran under (RunConfig.from_dict's rules at issue 33).
EIR = "eir"
DEFAULTS = {"method": EIR, "dataset": "hotpotqa", "n": 5, "seed": 0, "lm_model": "qwen2.5-coder-1.5b",
            "temperature": 0.0, "max_tokens": 2048, "budget": 6}
REQUEST_TIMEOUT = 600.0  # eir_dspy.lm.DEFAULT_REQUEST_TIMEOUT
INPROCESS_ENGINE = "inprocess"  # the embedded model's engine before the managed llama-server
FUTILE_SEARCHES_RUN = "run"  # eir_dspy.corpus_environment.DEFAULT_FUTILE_SEARCHES
FUTILE_SEARCHES_REJECT = "reject"  # the corpus rule before --futile-searches existed
INVALID_UPDATES_REJECT = "reject"  # EIR's list-update rule before --invalid-updates existed

# The tag's keys in the order RunConfig.to_dict writes them; `program` and `corpus`,
# `corpus_paragraphs`, `served_by` only when set.
HEAD_KEYS = ("method", "dataset", "data_file", "n", "seed", "lm_model", "lm_path", "api_base", "price_in",
             "price_out", "temperature", "max_tokens", "decoding", "request_timeout", "budget", "threads", "engine",
             "server_args", "options", "setting", "index", "futile_searches")
TAIL_KEYS = ("lm", "default_decoding", "label")
CURRENT_KEYS = frozenset(HEAD_KEYS + TAIL_KEYS + ("program", "corpus", "corpus_paragraphs", "served_by"))

# The rules by name, as the migrator reports them.
RULES = {
    "decoding": "no `decoding` (before --decoding): null, the LM's default, read back as not recorded",
    "engine": f"no `engine` (before the managed llama-server): {INPROCESS_ENGINE!r}",
    "request_timeout": f"no `request_timeout`: {REQUEST_TIMEOUT:g} s, the default",
    "none_if_absent": "no `price_in`/`price_out`/`index`/`lm_path`/`data_file`/`threads`/`lm`/`default_decoding`/"
                      "`label`: null; no `program`/`corpus`: none",
    "server_args": "no or null `server_args`: ''",
    "setting": "no or null `setting`: pool",
    "options": "no or null `options`: {}",
    "futile_searches": "no `futile_searches`: reject in the corpus setting (the rule then), run in the pool",
    "invalid_updates": "an EIR run without the `invalid_updates` option: reject (issue 21's rule, before the option)",
    "option_defaults": "an option the tag leaves out: the method's default for the setting (what the run was built with)",
    "api_base": "`api_base` one string (before --api-base took several): a list of that one URL",
    "defaults": "no `method`/`dataset`/`n`/`seed`/`lm_model`/`temperature`/`max_tokens`/`budget`: the default; "
                "`n` and `budget` as integers",
    "unknown_keys": "keys no version reads any more (e.g. `constrained`): dropped",
    "key_order": "the keys in the order RunConfig.to_dict writes them",
}


# key: (its rule, its value when the key is absent, whether a null or empty value is replaced too).
# Any other key of HEAD_KEYS and TAIL_KEYS: null when absent ("none_if_absent").
ABSENT = {
    **{key: ("defaults", value, False) for key, value in DEFAULTS.items()},
    "decoding": ("decoding", None, False),
    "request_timeout": ("request_timeout", REQUEST_TIMEOUT, False),
    "engine": ("engine", INPROCESS_ENGINE, False),
    "server_args": ("server_args", "", True),
    "options": ("options", {}, True),
    "setting": ("setting", "pool", True),
}


def migrate_config(old: Mapping[str, Any]) -> tuple[dict, list[str]]:
    """The `eir.config` tag (as a dict) in the current format, and the rules that changed it."""
    c = dict(old)
    applied: list[str] = []
    out: dict[str, Any] = {}
    for key in HEAD_KEYS:
        rule, default, if_empty = ABSENT.get(key, ("none_if_absent", None, False))
        if key == "futile_searches":
            rule, if_empty = "futile_searches", True
            default = FUTILE_SEARCHES_REJECT if c.get("setting") == "corpus" else FUTILE_SEARCHES_RUN
        if key not in c or (if_empty and not c[key]):
            out[key] = default
            if key not in c or c[key] != default:
                applied.append(rule)
        else:
            out[key] = c[key]
    for key in ("n", "budget"):
        if not isinstance(out[key], int):
            out[key] = int(out[key])
            applied.append("defaults")
    if out["method"] == EIR and "invalid_updates" not in out["options"]:
        out["options"] = {**out["options"], "invalid_updates": INVALID_UPDATES_REJECT}
        applied.append("invalid_updates")
    if out["method"] in METHODS:  # today's tags hold every option, resolved for the setting, as RunConfig makes them
        resolved = METHODS[out["method"]].make_options(out["options"], out["setting"]).as_dict()
        if resolved != out["options"]:
            out["options"] = resolved
            applied.append("option_defaults")
    if isinstance(out["api_base"], str):
        out["api_base"] = [out["api_base"]]
        applied.append("api_base")
    if c.get("program"):
        program = c["program"]
        out["program"] = {"name": program["name"], "path": program["path"], "sha256": program["sha256"]}
    elif "program" in c:
        applied.append("none_if_absent")  # a null program: none, so not written
    if c.get("corpus") is not None:
        out["corpus"], out["corpus_paragraphs"] = c["corpus"], c.get("corpus_paragraphs")
    elif "corpus" in c or "corpus_paragraphs" in c:
        applied.append("none_if_absent")  # no corpus: neither key is written
    if c.get("served_by") is not None:  # the embedded model's server build (issue 41): kept as written
        out["served_by"] = c["served_by"]
    for key in TAIL_KEYS:
        out[key] = c.get(key)
        if key not in c:
            applied.append("none_if_absent")
    if set(c) - CURRENT_KEYS:
        applied.append("unknown_keys")
    if [k for k in c if k in out] != [k for k in out if k in c]:
        applied.append("key_order")
    return out, sorted(set(applied), key=list(RULES).index)


# ---------------------------------------------------------------- results-file records


def trajectory_method(trajectory: Mapping) -> str | None:
    """The method that wrote a trajectory before trajectories named it, from its method-only keys."""
    if "trials" in trajectory or "see" in trajectory:
        return "reflexion"
    if "ssr" in trajectory:
        return "ssr"
    if {"list_updates", "requirements", "conclusions"} & trajectory.keys():
        return EIR
    if "final_parsed" in trajectory:  # a final answering call: EIR after its turns, Full Pool alone
        return EIR if "turns" in trajectory else "full_pool"
    if "turns" in trajectory:
        return "direct"
    return None


def with_methods(row: dict) -> tuple[dict, int]:
    """`row` with the method named in its trajectory and its variants' trajectories, and how many it named."""
    named = 0
    trajectory = row.get("trajectory")
    if isinstance(trajectory, dict) and "method" not in trajectory:
        method = trajectory_method(trajectory)
        if method is not None:
            row = {**row, "trajectory": {"method": method, **trajectory}}
            named += 1
    variants = row.get("variants")
    if isinstance(variants, dict):
        migrated = {}
        for name, variant in variants.items():
            if isinstance(variant, dict):
                variant, n = with_methods(variant)
                named += n
            migrated[name] = variant
        row = {**row, "variants": migrated}
    return row, named


def migrate_record(row: dict, run_id: str | None) -> tuple[dict, list[str]]:
    """A results-file record in the current format: its trajectories name their method, and (given
    `run_id`, the run whose file it is) it carries the run's id. Returns the record and what changed."""
    changes = []
    row, named = with_methods(row)
    if named:
        changes.append("trajectory method")
    if run_id is not None and "run_id" not in row:
        row = {**row, "run_id": run_id}
        changes.append("run id")
    return row, changes
