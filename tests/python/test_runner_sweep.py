"""Sweeps: raw files per run, resume after kill -9 and Ctrl-C with no duplicate and no lost run,
a rebuilt harness re-runs, one runner per experiment, the progress bar and its ETA."""
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time

from conftest import BUILD
from runner_support import FAKE, db, fake_experiment, rows, runner, write_experiment


def start(exp, *args, env=None):
    e = dict(os.environ, CDSBENCH_BUILD=str(BUILD), **(env or {}))
    log = open(pathlib.Path(exp).with_suffix(".log"), "w")
    return subprocess.Popen([sys.executable, "-m", "cdsbench", str(exp), *map(str, args)], stdout=log,
                            stderr=subprocess.STDOUT, env=e)


def done_runs(runs_dir):
    if not runs_dir.exists():
        return []
    return sorted(p for p in runs_dir.iterdir() if not p.name.startswith(".") and (p / "run.json").is_file())


def wait_for(runs_dir, n, proc, limit=120):
    deadline = time.monotonic() + limit
    while len(done_runs(runs_dir)) < n:
        assert proc.poll() is None, "the runner ended before it was stopped"
        assert time.monotonic() < deadline, "the sweep made no progress"
        time.sleep(0.02)


def processes_mentioning(text):
    found = []
    for p in pathlib.Path("/proc").glob("[0-9]*"):
        try:
            if text.encode() in (p / "cmdline").read_bytes():
                found.append(int(p.name))
        except OSError:
            pass
    return found


def test_every_run_keeps_its_command_and_raw_output(tmp_path):
    exp = fake_experiment(tmp_path, {"mode": ["ok"], "ds": ["a", "b"]}, trials=2)
    p = runner(exp, "run", "--results", tmp_path / "results")
    assert p.returncode == 0, p.stderr
    runs = done_runs(tmp_path / "results" / "exp" / "runs")
    assert len(runs) == 4
    for d in runs:
        rec = json.loads((d / "run.json").read_text())
        assert rec["status"] == "ok" and rec["exit_code"] == 0 and rec["wall_s"] > 0
        cmd = (d / "command.txt").read_text()
        assert str(FAKE) in cmd and f"--ds {rec['point']['ds']}" in cmd and str(d / "output.json") in cmd
        assert f"trial_seed={rec['trial'] + 1}\n" in (d / "stdout.txt").read_text()
        assert json.loads((d / "output.json").read_text())["summary"]["result"] == "PASS"
    # Not a terminal: one line per run with an ETA.
    assert "[4/4] mode=ok ds=b #1: ok" in p.stdout and "ETA 0:00" in p.stdout
    # Trial-major: every point's first trial before any point's second, so a drift of the
    # machine during the sweep falls on every point alike.
    assert re.findall(r"\] mode=ok ds=(\w) #(\d)", p.stdout) == [("a", "0"), ("b", "0"), ("a", "1"), ("b", "1")]


def test_a_point_can_have_more_trials_than_the_rest_and_trials_overrides_both(tmp_path):
    """trials_for: the points a goal compares get the trials their interval needs."""
    exp = fake_experiment(tmp_path, {"mode": ["ok"], "ds": ["a", "b"]}, trials=2,
                          extra="trials_for=lambda p: 5 if p['ds'] == 'b' else 2,")
    p = runner(exp, "run", "database", "--results", tmp_path / "results")
    assert p.returncode == 0, p.stderr
    con = db(tmp_path / "results")
    assert rows(con, "SELECT ds, count(*) AS n FROM runs GROUP BY ds ORDER BY ds") == [{"ds": "a", "n": 2}, {"ds": "b", "n": 5}]
    p = runner(exp, "run", "database", "--trials", "1", "--results", tmp_path / "one")
    assert p.returncode == 0, p.stderr
    assert rows(db(tmp_path / "one"), "SELECT count(*) AS n FROM runs") == [{"n": 2}]


def test_progress_bar_with_eta_on_a_terminal(tmp_path):
    exp = fake_experiment(tmp_path, {"mode": ["ok"], "ds": ["a", "b", "c"]})
    p = runner(exp, "run", "--results", tmp_path / "results", env={"FORCE_COLOR": "1", "COLUMNS": "150"})
    assert p.returncode == 0, p.stderr
    assert "3/3" in p.stderr and "ETA" in p.stderr and "elapsed" in p.stderr


def test_killed_sweep_resumes_with_every_run_present_once(tmp_path):
    """kill -9 the runner mid-sweep (real harness), run again: each run exactly once."""
    exp = write_experiment(tmp_path, """
        EXPERIMENT = Experiment(grid={"ds": ["null"], "threads": [1]}, trials=12,
                                fixed={"duration_ms": 150, "key_range": 1000, "pin": "none"}, timeout_s=60)
        """)
    results = tmp_path / "results"
    runs_dir = results / "exp" / "runs"
    proc = start(exp, "run", "--results", results)
    wait_for(runs_dir, 4, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = {d.name: json.loads((d / "run.json").read_text()) for d in done_runs(runs_dir)}
    assert 4 <= len(before) < 12
    # The harness run in flight dies with the runner (no orphan keeps measuring or writing).
    deadline = time.monotonic() + 10
    while processes_mentioning(str(runs_dir)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_mentioning(str(runs_dir)) == []

    p = runner(exp, "run", "database", "--results", results)
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"{len(before)} already done" in p.stdout and f"{12 - len(before)} to run" in p.stdout
    con = db(results)
    got = rows(con, "SELECT run_key, run_trial, trial_seed, run_status, run_started_at FROM runs ORDER BY run_trial")
    assert [r["run_trial"] for r in got] == list(range(12))
    assert len({r["run_key"] for r in got}) == 12
    assert all(r["run_status"] == "ok" and r["trial_seed"] == r["run_trial"] + 1 for r in got)
    for r in got:  # runs done before the kill were kept, not run again
        if r["run_key"] in before:
            assert r["run_started_at"] == before[r["run_key"]]["started_at"]
    assert sorted(p.name for p in runs_dir.iterdir()) == sorted(r["run_key"] for r in got)  # no partial left
    assert rows(con, "SELECT count(*) AS n FROM warnings WHERE category = 'missing_runs'")[0]["n"] == 0


def test_the_run_in_flight_dies_with_a_killed_runner(tmp_path):
    exp = fake_experiment(tmp_path, {"mode": ["hang"], "ds": ["a"]}, extra="timeout_s=300,")
    results = tmp_path / "results"
    proc = start(exp, "run", "--results", results)
    deadline = time.monotonic() + 60
    while not processes_mentioning(str(results)):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    time.sleep(0.3)  # the fake harness is in its sleep
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 5
    while processes_mentioning(str(results)) and time.monotonic() < deadline:
        time.sleep(0.05)
    orphans = processes_mentioning(str(results))
    for pid in orphans:  # this test's own fake harness, should it have survived
        os.kill(pid, signal.SIGKILL)
    assert orphans == [], "an orphaned run would go on for 600 s"


def test_ctrl_c_stops_cleanly_and_the_rest_runs_next_time(tmp_path):
    exp = fake_experiment(tmp_path, {"mode": ["ok"], "sleep": [0.3], "ds": ["a", "b", "c", "d", "e", "f"]})
    results = tmp_path / "results"
    runs_dir = results / "exp" / "runs"
    proc = start(exp, "run", "--results", results)
    wait_for(runs_dir, 2, proc)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(30) == 130
    log = pathlib.Path(exp).with_suffix(".log").read_text()
    assert "interrupted (SIGINT): the runs done are kept; run the same command again to resume" in log
    assert "Traceback" not in log
    kept = done_runs(runs_dir)
    assert 2 <= len(kept) < 6 and len(list(runs_dir.iterdir())) == len(kept)  # the run in flight is discarded
    p = runner(exp, "run", "database", "--results", results)
    assert p.returncode == 0 and f"{len(kept)} already done" in p.stdout
    assert sorted(r["ds"] for r in rows(db(results), "SELECT ds FROM runs")) == list("abcdef")


def test_a_rebuilt_harness_makes_the_runs_stale(tmp_path):
    harness = tmp_path / "fake_copy.py"
    shutil.copy(FAKE, harness)
    exp = write_experiment(tmp_path, f"""
        EXPERIMENT = Experiment(grid={{"ds": ["a", "b"]}}, trials=1, harness={str(harness)!r},
                                command=lambda p, h: [sys.executable, h, "--ds", p["ds"]])
        """)
    results = tmp_path / "results"
    assert "2 to run" in runner(exp, "run", "--results", results).stdout
    assert "2 already done; 0 to run" in runner(exp, "run", "--results", results).stdout
    harness.write_text(harness.read_text() + "\n# rebuilt\n")
    out = runner(exp, "run", "--results", results).stdout
    assert "2 made by another build of fake_copy.py, run again; 2 to run" in out


def test_one_runner_at_a_time(tmp_path):
    exp = fake_experiment(tmp_path, {"mode": ["ok"], "sleep": [0.5], "ds": ["a", "b", "c"]})
    results = tmp_path / "results"
    proc = start(exp, "run", "--results", results)
    wait_for(results / "exp" / "runs", 1, proc)
    p = runner(exp, "run", "--results", results)
    assert p.returncode == 2
    assert "another cdsbench-run is working on this experiment" in p.stderr and len(p.stderr.splitlines()) == 1
    assert proc.wait(60) == 0
