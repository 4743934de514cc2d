"""Every committed grid file loads into the cells it loaded into before the grid model was typed
(issue 33: the argv round trip through eval.run's parser replaced by eval.runs.flags.RunFlags): the
same cells, keys (the MLflow tag a cell's runs are found by), variants, call bounds and RunConfigs.
The fixture is what the earlier loader produced (captured before the change), with the index and data
directories written as {index} and {data}."""

import json
from pathlib import Path

import pytest

import eval.grid as grid_module
from tests.fixtures.grids import write_full_index

ROOT = Path(__file__).resolve().parents[3]

FIXTURE = Path(__file__).parent / "fixtures" / "grid_configs.json"
# A grid naming compiled programs (grids/compiled.toml, issue 42) needs their files and came after the
# change this fixture pins: tests/eval/grid/test_compiled_grid.py loads it.
GRIDS = sorted(p.stem for p in (ROOT / "grids").glob("*.toml") if "\nprogram = " not in p.read_text())


def test_the_fixture_covers_every_committed_grid():
    assert sorted(json.loads(FIXTURE.read_text())) == GRIDS and "paper-main" in GRIDS


@pytest.mark.parametrize("name", GRIDS)
def test_a_committed_grid_loads_exactly_as_before(name, tmp_path, monkeypatch):
    index, data = write_full_index(tmp_path), tmp_path / "data"
    monkeypatch.setenv("EIR_INDEX_DIR", str(index))
    monkeypatch.setenv("EIR_DATA_DIR", str(data))
    grid = grid_module.load_grid(ROOT / "grids" / f"{name}.toml")
    got = {"reference": grid.reference, "families": grid.families,
           "cells": [{"title": c.title, "key": c.key, "variants": list(c.variants), "certain": c.certain,
                      "calls_per_question": c.calls_per_question, "flags": c.flags, "data": c.data,
                      "config": c.config.to_dict(), "run_config": grid.run_config(c).to_dict()} for c in grid.cells]}
    text = json.dumps(got, sort_keys=True).replace(str(index), "{index}").replace(str(data), "{data}")
    assert json.loads(text) == json.loads(FIXTURE.read_text())[name]
