"""Paired statistics for "method A beats method B" on the same questions: paired bootstrap (F1), exact
McNemar (EM), Holm within a named family (docs/experiments.md, "Comparing runs"). Every function takes
plain per-question arrays, already paired (eval.compare.pairs: `paired_ids`, `records_by_id`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import binomtest

BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 20260806  # the paper's bootstrap seed; --seed overrides it and every run logs the one used


@dataclass(frozen=True)
class Bootstrap:
    """Mean of (other - baseline) with a percentile interval and a two-sided p-value."""

    diff: float
    low: float
    high: float
    p: float
    resamples: int
    seed: int
    confidence: float


@dataclass(frozen=True)
class McNemar:
    b: int  # only the baseline exact
    c: int  # only the other method exact
    p: float


@dataclass(frozen=True)
class Adjusted:
    p: float
    adjusted: float
    significant: bool


def paired_bootstrap(baseline: Sequence[float], other: Sequence[float], resamples: int = BOOTSTRAP_RESAMPLES,
                     seed: int = BOOTSTRAP_SEED, confidence: float = 0.95) -> Bootstrap:
    """Resample question indices with replacement; each resample's mean of (other - baseline).

    The p-value is the two-sided bootstrap p of "mean difference = 0": twice the share of
    resampled means on the far side of zero, with the usual +1 so it is never exactly 0.
    It agrees with the interval: the 95% interval excludes 0 exactly when p < 0.05 (up to that +1).
    """
    a, b = _paired(baseline, other, float)
    if len(a) == 0:
        raise ValueError("no paired questions to compare")
    d = b - a
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    for start in range(0, resamples, 1000):  # chunks keep memory flat for long runs
        stop = min(resamples, start + 1000)
        means[start:stop] = d[rng.integers(0, len(d), size=(stop - start, len(d)))].mean(axis=1)
    tail = (1 - confidence) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    far = min(np.sum(means <= 0), np.sum(means >= 0))
    p = min(1.0, 2 * (far + 1) / (resamples + 1))
    return Bootstrap(float(d.mean()), float(low), float(high), float(p), resamples, seed, confidence)


def mcnemar_exact(baseline_correct: Sequence[bool], other_correct: Sequence[bool]) -> McNemar:
    """Exact two-sided McNemar: under H0 each discordant pair is a fair coin, b ~ Binomial(b + c, 1/2).
    When all k discordant pairs go one way, p = 2 * 0.5^k (the paper's F.2 and F.3 p-values)."""
    base, other = _paired(baseline_correct, other_correct, bool)
    b = int(np.sum(base & ~other))
    c = int(np.sum(~base & other))
    p = 1.0 if b + c == 0 else float(binomtest(b, b + c, 0.5, alternative="two-sided").pvalue)
    return McNemar(b, c, p)


def holm(pvalues: Mapping[str, float], alpha: float = 0.05, size: int | None = None) -> dict[str, Adjusted]:
    """Holm's step-down adjustment: the k-th smallest p (k from 0) times (m - k), made monotone, capped at 1.

    m is `size` when given: a family of `size` comparisons of which only these could be formed. The
    others count as p = 1, which sorts them last, so the given p-values keep the multipliers m, m - 1, ...;
    Holm's adjusted p-values only grow with any raw p, so this bounds the full family's from above.
    """
    if not pvalues:
        return {}
    bad = {k: p for k, p in pvalues.items() if not 0.0 <= p <= 1.0}
    if bad:
        raise ValueError(f"p-values must lie in [0, 1]: {bad}")
    m = len(pvalues) if size is None else size
    if m < len(pvalues):
        raise ValueError(f"a family of {m} comparisons cannot hold {len(pvalues)}")
    names, p = list(pvalues), np.array(list(pvalues.values()), dtype=float)
    order = np.argsort(p, kind="stable")
    adjusted = np.empty_like(p)
    adjusted[order] = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(len(p))) * p[order]))
    return {name: Adjusted(pvalues[name], float(a), bool(a <= alpha)) for name, a in zip(names, adjusted)}


def mean_interval(values: Sequence[float], resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED,
                  confidence: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of one run's mean (the error bars of a plot)."""
    zeros = np.zeros(len(values))
    result = paired_bootstrap(zeros, values, resamples, seed, confidence)
    return result.low, result.high


def _paired(baseline: Sequence, other: Sequence, dtype: type) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(baseline, dtype=dtype), np.asarray(other, dtype=dtype)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"need two equal-length 1-d arrays, got shapes {a.shape} and {b.shape}")
    return a, b


@dataclass(frozen=True)
class Proportion:
    k: int
    n: int
    low: float
    high: float

    @property
    def share(self) -> float:
        return self.k / self.n if self.n else float("nan")


def proportion(k: int, n: int, confidence: float = 0.95) -> Proportion:
    """A share k/n with its Wilson score interval (scipy), which stays inside [0, 1] at small n."""
    if n == 0:
        return Proportion(0, 0, float("nan"), float("nan"))
    ci = binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return Proportion(k, n, float(ci.low), float(ci.high))
