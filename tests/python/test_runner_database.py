"""The results database: a typed column per output key (made from the outputs, so new keys
become columns), every run kept whatever its fate, statistics per point, and the warnings."""
import json
import math

import pytest

from cdsbench.stats import summarize
from runner_support import db, fake_experiment, rows, runner, write_experiment


@pytest.fixture(scope="module")
def schema_db(tmp_path_factory):
    d = tmp_path_factory.mktemp("schema")
    exp = fake_experiment(d, {"mode": ["ok", "newkey"], "ds": ["a"]}, trials=2,
                          extra='derived={"kops": "throughput_ops_per_s / 1000", "retired_x2": "reclaim_retired * 2"},')
    p = runner(exp, "run", "database", "--results", d / "results")
    assert p.returncode == 0, p.stdout + p.stderr
    return db(d / "results")


def test_one_row_per_run_with_runner_columns(schema_db):
    runs = rows(schema_db, "SELECT * FROM runs ORDER BY run_id")
    assert len(runs) == 4
    assert [r["mode"] for r in runs] == ["ok", "ok", "newkey", "newkey"]
    assert [r["run_trial"] for r in runs] == [0, 1, 0, 1]
    assert all(r["run_status"] == "ok" and r["run_exit_code"] == 0 for r in runs)
    assert all(r["run_command"].startswith(("/", "python")) and "--mode" in r["run_command"] for r in runs)
    assert [r["trial_seed"] for r in runs] == [1, 2, 1, 2]  # each run's own output, not another's
    assert len({r["run_key"] for r in runs}) == 4


def test_columns_are_typed_from_the_values(schema_db):
    types = {r["name"]: (r["type"], r["source"]) for r in rows(schema_db, "SELECT * FROM columns")}
    assert types["mode"] == ("TEXT", "param")
    assert types["threads"] == ("INTEGER", "output")
    assert types["throughput_ops_per_s"] == ("REAL", "output")
    assert types["thread_cpus"] == ("TEXT", "output")
    assert types["prefill_converged"] == ("INTEGER", "output")
    assert types["expected_key_sum"] == ("TEXT", "output")  # beyond int64: kept exact as text
    assert types["kops"] == ("REAL", "derived")
    decl = {r["name"]: r["type"] for r in rows(schema_db, "PRAGMA table_info(runs)")}
    assert decl["throughput_ops_per_s"] == "REAL" and decl["expected_key_sum"] == "TEXT"
    r = rows(schema_db, "SELECT * FROM runs WHERE mode = 'ok' LIMIT 1")[0]
    assert r["expected_key_sum"] == "18446744073709551615"
    assert r["prefill_converged"] == 1
    assert r["kops"] == pytest.approx(r["throughput_ops_per_s"] / 1000)


def test_keys_the_harness_adds_become_columns(schema_db):
    types = {r["name"]: r["type"] for r in rows(schema_db, "SELECT * FROM columns")}
    assert types["reclaim_retired"] == "INTEGER" and types["reclaim_avg_batch"] == "REAL"
    assert types["reclaim_scheme"] == "TEXT" and types["reclaim_freed"] == "INTEGER"  # a JSON object, flattened
    got = rows(schema_db, "SELECT mode, reclaim_retired, reclaim_freed, cycles, retired_x2 FROM runs ORDER BY run_id")
    assert [g["reclaim_retired"] for g in got] == [None, None, 1234, 1234]
    assert [g["reclaim_freed"] for g in got] == [None, None, 5, 5]
    assert [g["retired_x2"] for g in got] == [None, None, 2468, 2468]
    # `cycles` is "unavailable" in some runs, a count in others: a number column, NULL where unavailable.
    assert types["cycles"] == "INTEGER" and [g["cycles"] for g in got] == [None, None, 5000, 5000]


def test_histograms_table(schema_db):
    h = rows(schema_db, "SELECT * FROM histograms WHERE histogram = 'latency_histogram_ns' AND name = 'search'")
    assert sorted((x["lower"], x["upper"], x["count"]) for x in h) == [(10, 12, 5)] * 4 + [(12, 14, 15)] * 4
    log2 = rows(schema_db, "SELECT * FROM histograms WHERE histogram = 'retire_log2_histogram' ORDER BY lower")
    assert len(log2) == 12 and log2[-1]["upper"] == pytest.approx(1.8446744073709552e19)
    assert "retire_log2_histogram" not in {r["name"] for r in rows(schema_db, "SELECT name FROM columns")}


def test_stats_per_point(schema_db):
    s = rows(schema_db, "SELECT * FROM stats JOIN points USING (point_id) WHERE mode = 'newkey' "
                        "AND metric = 'reclaim_retired'")[0]
    assert s["n"] == 2 and s["mean"] == 1234 and s["cv"] == 0
    assert not rows(schema_db, "SELECT * FROM stats WHERE metric IN ('mode', 'ds')")  # parameters are not metrics
    summary = rows(schema_db, "SELECT * FROM summary ORDER BY point_id")
    assert [(p["mode"], p["runs_planned"], p["runs_done"], p["runs_ok"], p["n"]) for p in summary] == [
        ("ok", 2, 2, 2, 2), ("newkey", 2, 2, 2, 2)]


@pytest.fixture(scope="module")
def warn_db(tmp_path_factory):
    d = tmp_path_factory.mktemp("warn")
    modes = ["ok", "fail-validation", "prefill-timeout", "usage", "crash", "garbage", "truncated", "oversub",
             "unfair", "hang"]
    exp = fake_experiment(d, {"mode": modes}, trials=1, extra="timeout_s=1.5,")
    p = runner(exp, "run", "database", "--results", d / "results")
    assert p.returncode == 0, p.stdout + p.stderr
    con = db(d / "results")
    return con, {r["mode"]: r for r in rows(con, "SELECT * FROM runs")}


def _warnings(con, mode):
    return rows(con, "SELECT category, message FROM warnings JOIN runs USING (run_id) WHERE mode = ?", mode)


@pytest.mark.parametrize("mode, status, exit_code", [
    ("ok", "ok", 0), ("fail-validation", "failed", 1), ("prefill-timeout", "failed", 1), ("usage", "error", 2),
    ("crash", "crashed", -11), ("garbage", "malformed", 0), ("truncated", "malformed", 0), ("oversub", "ok", 0),
    ("unfair", "ok", 0), ("hang", "timeout", None),
])
def test_every_run_is_kept_with_its_status(warn_db, mode, status, exit_code):
    con, runs = warn_db
    r = runs[mode]
    assert r["run_status"] == status
    if exit_code is not None:
        assert r["run_exit_code"] == exit_code


def test_failed_runs_keep_stderr_and_partial_output(warn_db):
    con, runs = warn_db
    assert "--threads: 'x' is not allowed" in runs["usage"]["run_stderr"]
    assert "killed after the timeout of 1.5 s" in runs["hang"]["run_stderr"]
    assert runs["hang"]["run_wall_s"] < 10
    assert runs["hang"]["ds"] == "fake_set"  # what it printed before it hung is kept
    assert "truncated" in runs["truncated"]["run_problems"]
    assert runs["crash"]["ds"] == "fake_set"


@pytest.mark.parametrize("mode, category, text", [
    ("fail-validation", "validation", "size differs: expected 500, found 499"),
    ("prefill-timeout", "prefill", "prefill reached 120 of 500 keys"),
    ("usage", "failed_run", "error (exit 2): cdsbench: error: --threads"),
    ("crash", "failed_run", "crashed (exit -11)"),
    ("garbage", "failed_run", "malformed (exit 0)"),
    ("truncated", "failed_run", "malformed"),
    ("hang", "failed_run", "timeout"),
    ("oversub", "oversubscribed", "oversubscribed: 8 threads on 2 CPUs"),
    ("unfair", "unfair_threads", "ran at 25% of the fastest"),
])
def test_each_problem_is_a_warning(warn_db, mode, category, text):
    con, _ = warn_db
    ws = _warnings(con, mode)
    assert any(w["category"] == category and text in w["message"] for w in ws), ws


def test_a_clean_run_has_no_warning_and_categories_do_not_double(warn_db):
    con, _ = warn_db
    assert _warnings(con, "ok") == []
    cats = [w["category"] for w in _warnings(con, "fail-validation")]
    assert "failed_run" not in cats  # a validation failure is reported as one, not also as a failed run
    assert [w["category"] for w in _warnings(con, "oversub")] == ["oversubscribed"]


def test_rules_and_cv(tmp_path):
    exp = fake_experiment(tmp_path, {"mode": ["ok", "noisy"], "value": [100.0, 1000.0],
                                     "counter": [str(tmp_path / "counter")]}, trials=3,
                          extra='validate=["throughput_ops_per_s > 500", "no_such_column > 1", '
                                '("thread_cpus named", lambda r: r["thread_cpus"] == "none")],')
    p = runner(exp, "run", "database", "--results", tmp_path / "results")
    assert p.returncode == 0, p.stdout + p.stderr
    con = db(tmp_path / "results")
    ws = rows(con, "SELECT w.category, w.message, w.point_id, r.mode, r.value FROM warnings w "
                   "LEFT JOIN runs r USING (run_id)")
    failed = [w for w in ws if "rule `throughput_ops_per_s > 500` failed" in w["message"]]
    assert failed and all(w["value"] == 100.0 or w["mode"] == "noisy" for w in failed)
    assert any(w["message"] == "rule `throughput_ops_per_s > 500` failed (throughput_ops_per_s=100)" for w in failed)
    assert not [w for w in failed if w["mode"] == "ok" and w["value"] == 1000.0]
    assert sum("no column 'no_such_column'" in w["message"] for w in ws) == 12
    assert sum("rule `thread_cpus named` failed" in w["message"] for w in ws) == 12
    cv = [w for w in ws if w["category"] == "cv"]
    points = {r["point_id"]: r for r in rows(con, "SELECT * FROM points")}
    assert cv and all(points[w["point_id"]]["mode"] == "noisy" for w in cv)
    s = rows(con, "SELECT s.* FROM stats s JOIN points p USING (point_id) WHERE p.mode = 'noisy' "
                  "AND metric = 'throughput_ops_per_s'")
    want = [summarize(v) for v in ([100, 10, 200], [10, 200, 100])]
    assert sorted(round(x["cv"], 9) for x in s) == sorted(round(w.cv, 9) for w in want)
    assert all(math.isclose(x["median"], 100) for x in s)
    assert any(f"coefficient of variation {100 * want[0].cv:.1f}%" in w["message"] for w in cv)


def test_database_before_any_run_lists_the_missing_runs(tmp_path):
    exp = fake_experiment(tmp_path, {"mode": ["ok"], "ds": ["a", "b"]}, trials=2)
    p = runner(exp, "database", "--results", tmp_path / "results")
    assert p.returncode == 0, p.stderr
    con = db(tmp_path / "results")
    assert rows(con, "SELECT count(*) AS n FROM runs")[0]["n"] == 0
    w = rows(con, "SELECT * FROM warnings")
    assert [x["category"] for x in w] == ["missing_runs"] and "4 of 4 planned runs have not run" in w[0]["message"]
    meta = {r["key"]: r["value"] for r in rows(con, "SELECT * FROM meta")}
    assert meta["runs_planned"] == "4" and json.loads(meta["grid"]) == {"mode": ["ok"], "ds": ["a", "b"]}


def test_a_key_in_two_blocks_is_two_columns_with_one_meaning_each(tmp_path):
    exp = fake_experiment(tmp_path, {"mode": ["ok", "collide"]})
    assert runner(exp, "run", "database", "--results", tmp_path / "r").returncode == 0
    got = rows(db(tmp_path / "r"), "SELECT mode, validation_failures, summary_validation_failures FROM runs")
    assert got == [{"mode": "ok", "validation_failures": None, "summary_validation_failures": 0},
                   {"mode": "collide", "validation_failures": 17, "summary_validation_failures": 0}]


def test_a_point_measured_on_machines_of_two_kinds_is_a_warning_and_the_report_names_the_kinds(tmp_path):
    """A cluster's nodes: each run records its machine's kind (CPU model, cores, NUMA nodes,
    memory); a point whose ok runs mix kinds is warned of; the page and report list the kinds."""
    body = ("EXPERIMENT = Experiment(grid={'ds': ['a', 'b']}, trials=2,\n"
            "    command=lambda p, harness, trial: [sys.executable, FAKE, '--mode', 'ok', '--ds', p['ds'], '--seed',\n"
            "                                       str(1 + trial), '--machine-cores', str(2 + trial * (p['ds'] == 'a'))])\n")
    exp = write_experiment(tmp_path, body)
    p = runner(exp, "run", "database", "markdown", "site", "--results", tmp_path / "results")
    assert p.returncode == 0, p.stdout + p.stderr
    con = db(tmp_path / "results")
    kinds = rows(con, "SELECT ds, run_trial, run_machine_kind FROM runs ORDER BY ds, run_trial")
    assert [k["run_machine_kind"] for k in kinds] == [
        "Fake CPU, 2 cores, 1 NUMA node(s), 8 GiB", "Fake CPU, 3 cores, 1 NUMA node(s), 8 GiB",
        "Fake CPU, 2 cores, 1 NUMA node(s), 8 GiB", "Fake CPU, 2 cores, 1 NUMA node(s), 8 GiB"]
    warned = rows(con, "SELECT points.ds, message FROM warnings JOIN points USING (point_id) "
                       "WHERE category = 'mixed_machines'")
    assert len(warned) == 1 and warned[0]["ds"] == "a"  # b's runs ran on one kind
    assert warned[0]["message"].startswith("runs on 2 kinds of machine: Fake CPU, 2 cores, 1 NUMA node(s), 8 GiB (1 runs, on ")
    page = (tmp_path / "results" / "exp" / "results.md").read_text()
    assert "- Machines of 2 kinds: Fake CPU, 2 cores, 1 NUMA node(s), 8 GiB (3 runs); Fake CPU, 3 cores" in page
    index = (tmp_path / "results" / "exp" / "index.html").read_text()
    assert "machines of 2 kinds" in index and "Fake CPU, 3 cores, 1 NUMA node(s), 8 GiB: 1 runs on" in index
