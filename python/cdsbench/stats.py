"""Statistics of a grid point's trials: median, mean, 95% confidence interval of the mean
(Student's t), coefficient of variation (sample standard deviation / mean)."""
from __future__ import annotations

import math
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
