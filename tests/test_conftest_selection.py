"""The suite's default selection (tests/conftest.py), on a small suite that uses this project's
conftest.py and markers: `python -m pytest` deselects the slow and the integration tests and says so,
`--full` runs everything, and an explicit -m selects as pytest always does."""

import tomllib
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
NOTE = "3 slow/integration tests deselected; run `python -m pytest --full` for everything"

SUITE = """
import pytest


def test_fast():
    pass


@pytest.mark.slow
def test_slow():
    pass


@pytest.mark.integration
def test_on_the_real_lm():
    pass


@pytest.mark.integration
@pytest.mark.slow
def test_slow_on_the_real_lm():
    pass
"""


@pytest.fixture
def suite(pytester):
    pytester.makeconftest((ROOT / "tests" / "conftest.py").read_text())
    markers = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    pytester.makeini("[pytest]\nmarkers =\n" + "".join(f"    {marker}\n" for marker in markers))
    pytester.makepyfile(test_suite=SUITE)
    return pytester


def run(suite, *args):
    # --strict-markers: slow and integration must be registered (pyproject.toml's markers, copied above).
    return suite.runpytest("--strict-markers", "-v", *args)


def passed(result) -> set[str]:
    """The names of the tests that ran and passed, from -v's lines ("test_suite.py::test_fast PASSED [ 25%]")."""
    return {line.split("::")[1].split()[0] for line in result.outlines if "::" in line and " PASSED" in line}


def test_default_runs_only_the_fast_tests_and_counts_the_rest_as_deselected(suite):
    result = run(suite)
    result.assert_outcomes(passed=1, deselected=3)
    assert passed(result) == {"test_fast"}
    result.stdout.fnmatch_lines([NOTE])


def test_full_runs_every_test(suite):
    result = run(suite, "--full")
    result.assert_outcomes(passed=4)
    assert passed(result) == {"test_fast", "test_slow", "test_on_the_real_lm", "test_slow_on_the_real_lm"}
    result.stdout.no_fnmatch_line("*deselected*")


def test_an_explicit_marker_expression_selects_as_usual(suite):
    result = run(suite, "-m", "integration")
    result.assert_outcomes(passed=2, deselected=2)
    assert passed(result) == {"test_on_the_real_lm", "test_slow_on_the_real_lm"}
    result.stdout.no_fnmatch_line("*--full*")  # pytest's own -m deselection, not the default's

    result = run(suite, "-m", "not integration")
    result.assert_outcomes(passed=2, deselected=2)
    assert passed(result) == {"test_fast", "test_slow"}
