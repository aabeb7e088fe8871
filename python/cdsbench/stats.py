"""Statistics of a grid point's trials: median, mean, 95% confidence interval of the mean
(Student's t), coefficient of variation (sample standard deviation / mean); and two points side
by side: the ratio or difference of their medians with a 95% bootstrap interval (``compare``),
or, for trials measured in pairs, the median of the pairs' ratios (``compare_paired``)."""
from __future__ import annotations

import math
import random
from dataclasses import dataclass

# Two-sided 95% quantiles of Student's t, t(0.975, df), for df = 1..30.
T975 = (12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
        2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
        2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423)
Z975 = 1.959963984540054


def t975(df: int) -> float:
    """t(0.975, df): the table up to 30, then the Cornish-Fisher expansion (error < 1e-4)."""
    if df < 1:
        raise ValueError("df must be >= 1")
    if df <= len(T975):
        return T975[df - 1]
    z = Z975
    return (z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
            + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3))


@dataclass
class Summary:
    n: int
    mean: float | None
    median: float | None
    stdev: float | None
    ci95_low: float | None
    ci95_high: float | None
    cv: float | None
    min: float | None
    max: float | None


def median(values) -> float:
    v = sorted(values)
    n = len(v)
    if n == 0:
        raise ValueError("median of no values")
    return float(v[n // 2]) if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2.0


def summarize(values) -> Summary:
    """Summary of the finite numbers among ``values`` (None and NaN are skipped)."""
    v = [float(x) for x in values if x is not None and not isinstance(x, bool)
         and isinstance(x, (int, float)) and math.isfinite(x)]
    n = len(v)
    if n == 0:
        return Summary(0, None, None, None, None, None, None, None, None)
    mean = math.fsum(v) / n
    if n == 1:
        return Summary(1, mean, v[0], None, None, None, None, v[0], v[0])
    stdev = math.sqrt(math.fsum((x - mean) ** 2 for x in v) / (n - 1))
    half = t975(n - 1) * stdev / math.sqrt(n)
    cv = stdev / abs(mean) if mean != 0 else None
    return Summary(n, mean, median(v), stdev, mean - half, mean + half, cv, min(v), max(v))


# ---------------------------------------------------------------------------------------------
# Side by side: is A different from B beyond the noise of their trials?

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 14  # fixed: a page rendered twice from the same database is the same page


@dataclass(frozen=True)
class Comparison:
    """A against B: the ratio (or difference) of their medians, with the 95% percentile bootstrap
    interval over the trials of both sides (each side resampled with replacement on its own); or,
    from ``compare_paired``, the median of the pairs' ratios with the interval over the pairs
    (``n_a == n_b``: the pairs). ``low``/``high`` are None when a side has fewer than 2 trials: no
    interval, so no difference can be called."""

    kind: str             # "ratio" (A / B) or "difference" (A - B)
    estimate: float
    low: float | None
    high: float | None
    n_a: int
    n_b: int

    @property
    def null(self) -> float:
        """The value that means "no difference"."""
        return 1.0 if self.kind == "ratio" else 0.0

    @property
    def has_ci(self) -> bool:
        return self.low is not None

    @property
    def measurable(self) -> bool:
        """The interval excludes "no difference": a difference the trials' noise cannot explain."""
        return self.has_ci and not (self.low <= self.null <= self.high)

    @property
    def sign(self) -> int:
        """+1: A measurably above B; -1: measurably below; 0: no measurable difference."""
        if not self.measurable:
            return 0
        return 1 if self.low > self.null else -1

    def at_least(self, k: float) -> bool:
        """A goal "A >= k x B" is met when the interval's lower bound is >= k."""
        return self.has_ci and self.low >= k


def _finite(values) -> list[float]:
    return sorted(float(x) for x in values if x is not None and not isinstance(x, bool)
                  and isinstance(x, (int, float)) and math.isfinite(x))


def compare(a, b, kind: str = "ratio", resamples: int = BOOTSTRAP_RESAMPLES,
            seed: int = BOOTSTRAP_SEED) -> Comparison | None:
    """The trials of A against those of B (None and NaN skipped); None when a side has no value,
    or, for a ratio, when B's median is 0. Deterministic: the values are sorted and the
    generator seeded, so neither the order of the runs nor an earlier call changes the result."""
    if kind not in ("ratio", "difference"):
        raise ValueError(f"compare: kind {kind!r} (allowed: ratio, difference)")
    a, b = _finite(a), _finite(b)
    if not a or not b:
        return None

    def combine(ma, mb):
        if kind == "difference":
            return ma - mb
        return ma / mb if mb != 0 else None

    estimate = combine(median(a), median(b))
    if estimate is None:
        return None
    if len(a) < 2 or len(b) < 2:
        return Comparison(kind, estimate, None, None, len(a), len(b))
    rng = random.Random(seed)
    draws = []
    for _ in range(resamples):
        v = combine(median(rng.choices(a, k=len(a))), median(rng.choices(b, k=len(b))))
        if v is not None:
            draws.append(v)
    if len(draws) < resamples // 2:  # B's resampled median is mostly 0: no ratio to speak of
        return Comparison(kind, estimate, None, None, len(a), len(b))
    return _interval(kind, estimate, draws, len(a), len(b))


def _interval(kind, estimate, draws, n_a, n_b) -> Comparison:
    """The 2.5th and 97.5th percentiles of the bootstrap's draws."""
    draws.sort()
    low = draws[int(0.025 * len(draws))]
    high = draws[max(0, math.ceil(0.975 * len(draws)) - 1)]
    return Comparison(kind, estimate, low, high, n_a, n_b)


def compare_paired(pairs, kind: str = "ratio", resamples: int = BOOTSTRAP_RESAMPLES,
                   seed: int = BOOTSTRAP_SEED) -> Comparison | None:
    """A against B from trials measured in pairs ``(a, b)``, each pair at one moment (the runner
    runs a trial of every point before the next trial, so a grid that puts the compared systems
    next to each other runs each pair back to back): the median of the pairs' ratios (or
    differences), with the 95% percentile bootstrap interval over the pairs. A drift of the
    machine that moves both sides of a pair cancels in its ratio, where ``compare`` counts it as
    noise. Pairs with a missing side (None, NaN), or B = 0 for a ratio, are left out; None when no
    pair is left. Deterministic, as ``compare``."""
    if kind not in ("ratio", "difference"):
        raise ValueError(f"compare_paired: kind {kind!r} (allowed: ratio, difference)")
    values = []
    for a, b in pairs:
        a, b = _finite([a]), _finite([b])
        if a and b and (kind == "difference" or b[0] != 0):
            values.append(a[0] - b[0] if kind == "difference" else a[0] / b[0])
    values.sort()
    if not values:
        return None
    estimate = median(values)
    if len(values) < 2:
        return Comparison(kind, estimate, None, None, 1, 1)
    rng = random.Random(seed)
    draws = [median(rng.choices(values, k=len(values))) for _ in range(resamples)]
    return _interval(kind, estimate, draws, len(values), len(values))
