"""A compiled program on disk: DSPy's own JSON state (`program.save`), plus what it was compiled as.

The file is what `program.save("x.json")` writes (each predictor's instructions, field
descriptions and demos, indented JSON), with one more entry, `metadata.eir`: the compile's name,
the method and options whose predictors the state fits, and how it was made. DSPy's `load` reads
only the predictors' entries and `metadata.dependency_versions`, so the file stays a plain DSPy
state file.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import dspy

from programs.registry import METHODS

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")  # a name goes into variant labels, split on spaces


class ProgramFileError(ValueError):
    """The program file is missing, not one eval.compile wrote, or for another method."""


def save_program(program: dspy.Module, path: str | Path, meta: dict) -> str:
    """Write `program`'s state with `meta` as metadata.eir; returns the file's sha256."""
    if not NAME.match(meta.get("name", "")):
        raise ProgramFileError(f"program name {meta.get('name')!r}: use letters, digits, '.', '_' or '-'")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    program.save(str(path))
    state = json.loads(path.read_text())
    state["metadata"]["eir"] = meta
    path.write_text(json.dumps(state, indent=2, ensure_ascii=False) + "\n")
    return sha256(path)


def sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def read_meta(path: str | Path) -> dict:
    """metadata.eir of a program file (name, method, options, ...)."""
    path = Path(path)
    if path.suffix != ".json" or not path.is_file():
        raise ProgramFileError(f"--program {path}: no such .json file")
    try:
        meta = json.loads(path.read_text())["metadata"]["eir"]
    except (json.JSONDecodeError, KeyError, TypeError):
        raise ProgramFileError(f"--program {path}: not a program file written by `python -m eval.compile` "
                               "(no metadata.eir)") from None
    if not NAME.match(str(meta.get("name", ""))) or "method" not in meta:
        raise ProgramFileError(f"--program {path}: metadata.eir lacks a valid name or method")
    return meta


def check_fits(meta: dict, path: str | Path, method: str, options: dict) -> None:
    """The file's predictors are those of `method` with `options` (an ablation adds predictors)."""
    if meta["method"] != method:
        raise ProgramFileError(f"--program {path} was compiled for --method {meta['method']}, not {method}")
    # An option that changes how outputs are judged, not which predictors the program holds, may differ.
    judging = METHODS[method].options.judging()
    theirs = {k: v for k, v in meta.get("options", {}).items() if k not in judging}
    options = {k: v for k, v in options.items() if k not in judging}
    if theirs != options:
        raise ProgramFileError(f"--program {path} was compiled with options {theirs}, not {options}")


def load_program(program: dspy.Module, path: str | Path, method: str, options: dict) -> dict:
    """Load the file's state into `program` (built for `method` with `options`); returns metadata.eir."""
    meta = read_meta(path)
    check_fits(meta, path, method, options)
    program.load(str(path))
    return meta


def program_config(path: str | Path) -> dict:
    """What a run records about the program it loaded: its name, path and sha256 (params and variant)."""
    return {"name": read_meta(path)["name"], "path": str(Path(path).resolve()), "sha256": sha256(path)}
