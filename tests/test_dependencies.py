"""Every third-party package the library imports is declared in pyproject.toml (issue 33: a package that
only arrives because dspy or mlflow happens to require it today can vanish with their next release)."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ("eir_dspy", "signatures", "programs", "eval")


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def imported_top_levels() -> dict[str, str]:
    """Top-level module -> the first file importing it, for every module outside the stdlib and the project."""
    found: dict[str, str] = {}
    for package in LIBRARY:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in LIBRARY:
                        found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {_canonical(re.split(r"[<>=!~\[; ]", spec, maxsplit=1)[0]) for spec in project["dependencies"]}


def test_every_imported_package_is_declared():
    distributions = packages_distributions()
    missing = []
    for module, where in imported_top_levels().items():
        names = {_canonical(d) for d in distributions.get(module, [module])}
        if not names & declared():
            missing.append(f"{module} (imported in {where}; distribution {sorted(names)})")
    assert not missing, "imported but not declared in pyproject.toml: " + "; ".join(missing)


def test_the_scan_sees_third_party_imports():
    # the check above can only fail if the scan finds imports at all
    modules = imported_top_levels()
    assert {"dspy", "mlflow", "bm25s", "json_repair", "orjson"} <= set(modules)
    assert "regex" not in modules  # the stdlib's re does the one job regex had
