"""Paired bootstrap, exact McNemar and Holm against hand-computed cases."""

import numpy as np
import pytest
from scipy.stats import bootstrap

from eval.scoring.stats import holm, mcnemar_exact, mean_interval, paired_bootstrap


def pairs(b: int, c: int, both: int = 0, neither: int = 0):
    """Exact-match vectors with b questions only the baseline got, c only the other."""
    base = [True] * b + [False] * c + [True] * both + [False] * neither
    other = [False] * b + [True] * c + [True] * both + [False] * neither
    return base, other


@pytest.mark.parametrize("b,c,p", [
    (1, 9, 22 / 1024),  # 2 * (C(10,0) + C(10,1)) / 2**10
    (2, 6, 74 / 256),  # 2 * (1 + 8 + 28) / 2**8
    (0, 5, 2 / 32),  # 2 * (1/2)**5
    (5, 5, 1.0),
    (0, 0, 1.0),  # no discordant pairs: no evidence either way
])
def test_mcnemar_exact_matches_hand_computed_binomial_tails(b, c, p):
    base, other = pairs(b, c, both=4, neither=3)
    result = mcnemar_exact(base, other)
    assert (result.b, result.c) == (b, c)
    assert result.p == pytest.approx(p, abs=1e-12)


def test_mcnemar_counts_b_for_the_baseline_and_is_symmetric_in_p():
    base, other = pairs(1, 9)
    swapped = mcnemar_exact(other, base)
    assert (swapped.b, swapped.c) == (9, 1) and swapped.p == pytest.approx(22 / 1024)
    with pytest.raises(ValueError, match="equal-length"):
        mcnemar_exact([True], [True, False])


def test_holm_on_the_textbook_example():
    # Holm (1979) as usually taught: four tests at alpha 0.05; H1 and H4 are rejected.
    result = holm({"H1": 0.01, "H2": 0.04, "H3": 0.03, "H4": 0.005})
    assert list(result) == ["H1", "H2", "H3", "H4"]  # the caller's order is kept
    adjusted = {k: v.adjusted for k, v in result.items()}
    assert adjusted == pytest.approx({"H1": 0.03, "H2": 0.06, "H3": 0.06, "H4": 0.02})
    assert {k for k, v in result.items() if v.significant} == {"H1", "H4"}
    assert result["H2"].p == 0.04  # the raw p is kept next to the adjusted one


def test_holm_is_monotone_capped_and_checks_its_input():
    result = holm({"a": 0.02, "b": 0.021, "c": 0.9})
    assert result["a"].adjusted == pytest.approx(0.06) and result["b"].adjusted == pytest.approx(0.06)
    assert result["c"].adjusted == 0.9 and not result["a"].significant
    assert holm({"only": 0.04})["only"].adjusted == 0.04 and holm({}) == {}
    assert holm({"x": 0.7, "y": 0.8})["x"].adjusted == 1.0  # 2 * 0.7, capped
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        holm({"bad": 1.5})


def test_bootstrap_of_a_constant_difference_is_that_constant():
    result = paired_bootstrap([0.2, 0.5, 0.1], [0.7, 1.0, 0.6], resamples=2000)
    assert (result.diff, result.low, result.high) == pytest.approx((0.5, 0.5, 0.5))
    assert result.p == pytest.approx(2 / 2001)  # every resample is on one side of zero


def test_bootstrap_of_identical_runs_is_zero_with_p_one():
    scores = [0.0, 1.0, 0.5, 0.25]
    result = paired_bootstrap(scores, scores, resamples=500)
    assert (result.diff, result.low, result.high, result.p) == (0.0, 0.0, 0.0, 1.0)


def test_bootstrap_interval_agrees_with_scipy_and_is_reproducible():
    rng = np.random.default_rng(7)
    baseline = rng.uniform(0, 1, 300)
    other = baseline + rng.normal(0.1, 0.2, 300)
    ours = paired_bootstrap(baseline, other)
    assert ours.resamples == 10_000 and ours.seed == 20260806 and ours.confidence == 0.95  # the paper's seed
    theirs = bootstrap(((other - baseline),), np.mean, n_resamples=10_000, method="percentile",
                       random_state=1).confidence_interval
    assert ours.diff == pytest.approx(float(np.mean(other - baseline)))
    assert ours.low == pytest.approx(theirs.low, abs=0.004) and ours.high == pytest.approx(theirs.high, abs=0.004)
    assert 0 < ours.low < ours.diff < ours.high and ours.p < 0.05  # the interval excludes 0
    assert paired_bootstrap(baseline, other) == ours  # same seed, same numbers
    assert paired_bootstrap(baseline, other, seed=1).low != ours.low


def test_bootstrap_p_is_large_when_the_interval_covers_zero():
    rng = np.random.default_rng(3)
    a = rng.uniform(0, 1, 40)
    b = a + rng.normal(0, 0.3, 40)
    b -= b.mean() - a.mean()  # no mean difference at all
    result = paired_bootstrap(a, b)
    assert result.low < 0 < result.high and result.p > 0.5


def test_mean_interval_brackets_the_mean():
    low, high = mean_interval([0, 0, 1, 1, 1, 0, 1, 0], resamples=4000)
    assert 0.0 <= low < 0.5 < high <= 1.0
    with pytest.raises(ValueError, match="no paired questions"):
        paired_bootstrap([], [])
