"""Statistics per grid point: median, mean, 95% confidence interval (Student's t), CV."""
import math
import statistics

import pytest

from cdsbench.stats import summarize, t975


def test_three_trials():
    s = summarize([1, 2, 3])
    assert (s.n, s.mean, s.median, s.stdev, s.min, s.max) == (3, 2.0, 2.0, 1.0, 1.0, 3.0)
    half = 4.3027 / math.sqrt(3)  # t(0.975, 2) * s / sqrt(n)
    assert s.ci95_low == pytest.approx(2 - half) and s.ci95_high == pytest.approx(2 + half)
    assert s.cv == pytest.approx(0.5)


def test_even_count_median_and_against_the_statistics_module():
    values = [10.0, 12.5, 9.0, 30.0, 11.0, 10.5]
    s = summarize(values)
    assert s.median == statistics.median(values) == 10.75
    assert s.mean == pytest.approx(statistics.fmean(values))
    assert s.stdev == pytest.approx(statistics.stdev(values))
    assert s.cv == pytest.approx(statistics.stdev(values) / statistics.fmean(values))
    half = 2.5706 * statistics.stdev(values) / math.sqrt(6)
    assert s.ci95_high - s.mean == pytest.approx(half)


def test_one_value_has_no_spread_and_none_is_skipped():
    s = summarize([None, 5, float("nan"), "unavailable", True])
    assert s.n == 1 and s.mean == 5 and s.median == 5
    assert s.stdev is None and s.ci95_low is None and s.cv is None
    assert summarize([]).n == 0 and summarize([]).mean is None


def test_zero_mean_has_no_cv():
    s = summarize([-1, 1])
    assert s.mean == 0 and s.cv is None and s.stdev == pytest.approx(math.sqrt(2))


@pytest.mark.parametrize("df, t", [(1, 12.7062), (2, 4.3027), (10, 2.2281), (30, 2.0423),
                                   (40, 2.0211), (60, 2.0003), (120, 1.9799), (10**6, 1.95997)])
def test_t_quantiles(df, t):
    assert t975(df) == pytest.approx(t, abs=2e-4)


def test_identical_trials_have_zero_width():
    s = summarize([7, 7, 7, 7])
    assert s.ci95_low == s.ci95_high == 7 and s.cv == 0
