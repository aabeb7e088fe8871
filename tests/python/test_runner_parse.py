"""The runner's reading of harness output: key=value text, JSON, and what goes wrong with them."""
import json

import pytest

from cdsbench.parse import convert, histogram_series, parse_json, parse_run, parse_text
from conftest import run

ARGS = ["--ds", "locked_std_set", "--threads", "2", "--key-range", "2000", "--duration-ms", "50",
        "--pin", "none", "--seed", "3", "--latency-sample", "10", "--insert", "20", "--delete", "20"]


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """One real harness run: (stdout, JSON text)."""
    path = tmp_path_factory.mktemp("real") / "out.json"
    code, out, err = run("cdsbench", *ARGS, "--json", path)
    assert code == 0, err
    return out, path.read_text()


@pytest.mark.parametrize("text, value", [
    ("10", 10), ("-3", -3), ("10.5", 10.5), ("1.78325e-05", 1.78325e-05), ("true", True), ("false", False),
    ("unavailable", "unavailable"), ("none", "none"), ("0,1", "0,1"), ("skipped (no keys)", "skipped (no keys)"),
    ("18446744073709551615", 18446744073709551615), ("g++ 12.2.0", "g++ 12.2.0"),
])
def test_values_get_their_natural_type(text, value):
    got = convert(text)
    assert got == value and type(got) is type(value)


def test_text_of_a_real_run_has_header_trial_and_summary(real):
    out, _ = real
    p = parse_text(out)
    assert p.problems == [] and p.complete and p.source == "text"
    assert p.header["ds"] == "locked_std_set" and p.header["threads"] == 2 and p.header["seed"] == 3
    assert len(p.trials) == 1 and p.trials[0]["validation"] == "PASS"
    assert p.summary["result"] == "PASS"
    row = p.row()
    assert row["thread_cpus"] == "none,none"
    assert isinstance(row["throughput_ops_per_s"], float) and row["throughput_ops_per_s"] > 0


def test_json_and_text_agree_and_json_carries_the_histograms(real):
    out, js = real
    t, j = parse_text(out), parse_json(js)
    assert j.complete and j.problems == []
    tr, jr = t.row(), j.row()
    assert set(tr) == set(jr)  # the same keys: histograms are not columns
    for key, tv in tr.items():
        jv = jr[key]
        if isinstance(jv, float) and isinstance(tv, (int, float)):
            assert tv == pytest.approx(jv, rel=1e-3, abs=1e-6), key
        else:
            assert str(tv) == str(jv) or tv == jv, key
    hist = j.histogram_buckets()["latency_histogram_ns"]
    assert set(hist) >= {"search", "insert", "delete"}
    samples = sum(n for _, _, n in hist["search"])
    assert samples == j.trials[0]["latency_search_samples"]


def test_parse_run_prefers_whole_json_and_falls_back_to_text(real):
    out, js = real
    assert parse_run(out, js).source == "json"
    for broken, why in ((js[: len(js) // 2], "not valid JSON"), ("[1, 2]", "not a JSON object"),
                        (json.dumps({"config": {}}), "no 'machine'")):
        p = parse_run(out, broken)
        assert p.source == "text" and p.complete
        assert why in p.problems[0] and "key=value text was used" in p.problems[0]
    doc = json.loads(js)
    doc["summary"] = {}
    p = parse_run(out, json.dumps(doc))
    assert p.source == "text" and p.complete and p.problems[0].startswith("JSON output incomplete")


@pytest.mark.parametrize("fraction", [0.05, 0.3, 0.5, 0.8, 0.97])
def test_truncated_output_is_marked_and_the_partial_line_dropped(real, fraction):
    out, _ = real
    cut = int(len(out) * fraction)
    if out[cut - 1] == "\n":
        cut -= 1  # make sure the cut is mid-line
    p = parse_text(out[:cut])
    assert not p.complete
    assert any("truncated" in x for x in p.problems)
    partial_key = out[:cut].rsplit("\n", 1)[1].split("=", 1)[0]
    whole = parse_text(out)
    # The cut line's key is absent, or present only from an earlier whole line.
    blocks = [p.header, p.summary] + p.trials
    for b in blocks:
        if partial_key in b and partial_key != "trial":
            assert any(b[partial_key] == w.get(partial_key) for w in [whole.header, whole.summary] + whole.trials)


def test_output_cut_at_a_line_end_before_the_summary_is_incomplete(real):
    out, _ = real
    p = parse_text(out[: out.index("trials_run=")])
    assert not p.complete and p.trials
    assert any("stops early" in x for x in p.problems)
    assert not any("truncated" in x for x in p.problems)


@pytest.mark.parametrize("text, problem", [
    ("", "no output"),
    ("\n\n", "no output"),
    ("Segmentation fault\n", "not key=value"),
    ("ds=x\n\x00\x01\x02garbage\ntrial=0\nvalidation=PASS\ntrials_run=1\nresult=PASS\n", "not key=value"),
    ("ds=x\nthreads=1\n", "no trial"),
    ("ds=x\ntrial=0\nvalidation=PASS\nvalidation=FAIL\ntrials_run=1\nresult=FAIL\n", "repeated"),
])
def test_malformed_output_is_reported_not_raised(text, problem):
    p = parse_text(text)
    assert any(problem in x for x in p.problems), p.problems


def test_malformed_lines_do_not_hide_the_good_ones():
    p = parse_text("ds=x\n=novalue\n  indented\ntrial=0\nthroughput_ops_per_s=5.5\ntrials_run=1\nresult=PASS\n")
    assert p.complete and p.trials[0]["throughput_ops_per_s"] == 5.5
    assert any("2 line(s) not key=value" in x for x in p.problems)


def test_warnings_and_several_trials():
    text = ("ds=x\nwarning=oversubscribed: 4 threads on 2 CPUs\nwarning=second\n"
            "trial=0\nthroughput_ops_per_s=1\ntrial=1\nthroughput_ops_per_s=2\ntrials_run=2\nresult=PASS\n")
    p = parse_text(text)
    assert p.warnings == ["oversubscribed: 4 threads on 2 CPUs", "second"]
    assert len(p.trials) == 2 and p.row()["throughput_ops_per_s"] == 2
    assert p.row()["warning"] == "oversubscribed: 4 threads on 2 CPUs\nsecond"
    assert any("holds 2 trials" in x for x in p.problems)


def test_histogram_shapes_and_nested_values():
    assert histogram_series({"search": [[1, 2, 3]]}) == {"search": [(1, 2, 3)]}
    assert histogram_series([[0, 0, 1], [1, 1, 2]]) == {"": [(0, 0, 1), (1, 1, 2)]}
    assert histogram_series([1, 2, 3]) is None and histogram_series({"a": 1}) is None
    doc = {"config": {"ds": "x", "thread_cpus": ["0", "1"]}, "machine": {}, "warnings": [],
           "trials": [{"trial": 0, "retire_log2_histogram": [[0, 0, 1]], "reclaim": {"freed": 5},
                       "deep": {"a": [1, 2]}, "latency_histogram_ns": {"search": [[1, 2, 3]]},
                       "utilisation_timeline": {"write.0": [[0, 0.1, 0.25], [0.1, 0.2, 1.0]]},
                       "other_timeline_count": 3}],
           "summary": {"result": "PASS"}}
    p = parse_json(json.dumps(doc))
    row = p.row()
    assert row["thread_cpus"] == "0,1" and row["reclaim_freed"] == 5
    assert json.loads(row["deep"]) == {"a": [1, 2]}
    assert "retire_log2_histogram" not in row and "latency_histogram_ns" not in row and "utilisation_timeline" not in row
    assert set(p.histogram_buckets()) == {"retire_log2_histogram", "latency_histogram_ns", "utilisation_timeline"}
    # A timeline's buckets keep their values as they are (floats), a scalar whose name only contains the word stays one.
    assert p.histogram_buckets()["utilisation_timeline"] == {"write.0": [(0, 0.1, 0.25), (0.1, 0.2, 1.0)]}
    assert row["other_timeline_count"] == 3


def test_a_key_repeated_by_a_later_block_loses_nothing():
    text = ("ds=lazy_list\ntrial=0\nvalidation_failures=17\nvalidation=PASS\n"
            "trials_run=1\nvalidation_failures=0\nresult=PASS\n")
    p = parse_text(text)
    assert p.collisions() == {("summary", "validation_failures")}
    row = p.row(p.collisions())
    assert row["validation_failures"] == 17 and row["summary_validation_failures"] == 0
    plain = parse_text("ds=x\ntrial=0\nvalidation=PASS\ntrials_run=1\nvalidation_failures=0\nresult=PASS\n")
    assert plain.collisions() == set()
    # The database renames the same keys in every run, so one column keeps one meaning.
    assert plain.row({("summary", "validation_failures")})["summary_validation_failures"] == 0
    assert "validation_failures" not in plain.row({("summary", "validation_failures")})
