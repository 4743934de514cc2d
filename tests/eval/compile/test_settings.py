"""The optimizer settings a compile logs as params."""

from eval.compile.optimizers import Settings


def test_gepa_seed_is_logged_as_gepa_seed_not_seed():
    # Under "seed" it overwrote the question sample's --seed param in the compile run.
    params = Settings(seed=7).params("gepa", "bootstrap")
    assert params["gepa_seed"] == 7
    assert "seed" not in params
    assert params == {"gepa_auto": "light", "gepa_max_metric_calls": None, "gepa_seed": 7}
