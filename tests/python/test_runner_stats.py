"""Statistics per grid point: median, mean, 95% confidence interval (Student's t), CV; and two
points side by side: the ratio or difference of medians with a seeded 95% bootstrap interval."""
import math
import random
import statistics

import pytest

from cdsbench.markdown import ratio_text
from cdsbench.stats import compare, compare_paired, summarize, t975


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


# ---------------------------------------------------------------------------------------------
# compare(): the bootstrap over the trials of both sides

NOISY = [1.00, 1.10, 0.90, 1.05, 0.95]


def test_identical_samples_have_no_measurable_difference():
    c = compare(NOISY, list(NOISY))
    assert c.estimate == 1.0 and c.low < 1 < c.high
    assert not c.measurable and c.sign == 0 and not c.at_least(1.0)
    text = ratio_text(c)
    assert text.startswith("no measurable difference [") and f"{c.low:.2f}" in text and f"{c.high:.2f}" in text
    d = compare(NOISY, list(NOISY), "difference")
    assert d.estimate == 0 and d.low < 0 < d.high and not d.measurable


def test_clearly_separated_samples_differ_measurably():
    fast, slow = [2.0, 2.1, 1.9, 2.05, 1.95], NOISY
    c = compare(fast, slow)
    assert c.estimate == 2.0 and 1 < c.low <= 2.0 <= c.high and c.measurable and c.sign == 1
    assert ratio_text(c) == f"2.00 [{c.low:.2f}, {c.high:.2f}]"
    assert c.at_least(1.5) and not c.at_least(2.5)  # a goal ">= k x" is the lower bound >= k
    r = compare(slow, fast)
    assert r.measurable and r.sign == -1 and r.high < 1
    d = compare(fast, slow, "difference")
    assert d.measurable and d.sign == 1 and d.estimate == pytest.approx(1.0)


def test_the_bootstrap_is_deterministic():
    a, b = [3.1, 2.7, 3.3, 2.9], [2.8, 3.0, 2.6, 3.2, 2.75]
    first = compare(a, b)
    random.seed(12345)  # the caller's generator is not the bootstrap's
    assert compare(a, b) == first
    assert compare(list(reversed(a)), b[::-1]) == first  # nor is the order of the runs
    assert compare(a, b, seed=first.n_a + 100) != first  # the seed is what fixes the draws


def test_three_trials_a_side_give_the_interval_of_the_extremes():
    # With 3 trials, a resampled median is a side's smallest trial with probability 7/27, so
    # both corners have probability 0.068 > 0.025: the interval is min(A)/max(B) .. max(A)/min(B).
    a, b = [10.0, 11.0, 12.0], [5.0, 6.0, 7.0]
    c = compare(a, b)
    assert (c.low, c.high) == (10 / 7, 12 / 5)


def test_one_trial_a_side_gives_no_interval_and_calls_no_difference():
    c = compare([2.0], [1.0, 1.1])
    assert c.estimate == pytest.approx(2 / 1.05) and c.low is None and c.high is None
    assert not c.measurable and c.sign == 0 and not c.at_least(1.0)
    assert ratio_text(c) == "1.90 (1 trial: no interval)"


def test_nothing_to_compare():
    assert compare([], [1.0]) is None and compare([1.0], [None, float("nan")]) is None
    assert compare([1.0, 2.0], [0.0, 0.0]) is None  # no ratio to a median of 0
    assert ratio_text(None) == "—"
    with pytest.raises(ValueError):
        compare([1.0], [1.0], "quotient")


# compare_paired(): trials measured in pairs, the drift of the machine common to both sides

def test_pairs_see_through_a_drift_that_hides_the_difference_from_unpaired_trials():
    drift = [100, 130, 80, 150, 95, 120, 70, 140, 110, 90]  # the machine's moment, trial by trial
    b = [d * f for d, f in zip(drift, [1.00, 1.01, 0.99, 1.00, 1.02, 0.98, 1.00, 1.01, 0.99, 1.00])]
    a = [x * 1.05 for x in drift]
    unpaired = compare(a, b)
    assert unpaired.low < 1 < unpaired.high  # the drift swamps 5%
    paired = compare_paired(list(zip(a, b)))
    assert paired.n_a == paired.n_b == 10
    assert 1.0 < paired.low <= 1.05 <= paired.high < 1.1 and paired.at_least(1.0)
    assert paired.estimate == pytest.approx(statistics.median(x / y for x, y in zip(a, b)))
    d = compare_paired(list(zip(a, b)), "difference")
    assert d.sign == 1 and d.estimate == pytest.approx(statistics.median(x - y for x, y in zip(a, b)))


def test_pairs_with_no_difference_call_none_and_the_draws_are_fixed():
    pairs = [(1.0, 1.02), (1.1, 1.08), (0.9, 0.93), (1.05, 1.01), (0.95, 0.97)]
    c = compare_paired(pairs)
    assert c.low < 1 < c.high and not c.measurable
    random.seed(12345)  # the caller's generator is not the bootstrap's
    assert compare_paired(list(reversed(pairs))) == c  # nor does the order of the pairs matter


def test_pairs_with_a_missing_side_are_left_out():
    c = compare_paired([(2.0, 1.0), (None, 1.0), (3.0, float("nan")), (4.0, 0.0), (2.2, 1.0), ("x", 1.0)])
    assert (c.n_a, c.estimate) == (2, pytest.approx(2.1))
    one = compare_paired([(2.0, 1.0), (None, 1.0)])
    assert one.estimate == 2.0 and one.low is None and ratio_text(one) == "2.00 (1 trial: no interval)"
    assert compare_paired([]) is None and compare_paired([(1.0, None), (1.0, 0.0)]) is None
    with pytest.raises(ValueError):
        compare_paired([(1.0, 1.0)], "quotient")
