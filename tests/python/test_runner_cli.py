"""cdsbench-run's command line: bad input is one line and exit 2, --query, --export, the plan."""
import csv
import io
import pathlib
import subprocess
import sys

import pytest

from conftest import BUILD, ROOT, run, structures
from runner_support import fake_experiment, runner, write_experiment


def one_line_error(p, *needles):
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("cdsbench-run: error: ")
    assert "Traceback" not in p.stderr
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("body, needles", [
    ('EXPERIMENT = Experiment(grid={"threads": 3})', ["grid: 'threads' must be a non-empty list", "allowed:"]),
    ('EXPERIMENT = Experiment(grid={})', ["grid: missing or empty", "allowed:"]),
    ('EXPERIMENT = Experiment(grid={"Threads": [1]})', ["parameter name 'Threads' is not allowed", "allowed:"]),
    ('EXPERIMENT = Experiment(grid={"run_x": [1]})', ["reserved by the runner"]),
    ('EXPERIMENT = Experiment(grid={"t": [1, 1]})', ["lists a value twice"]),
    ('EXPERIMENT = Experiment(grid={"t": [[1]]})', ["value [1] is not allowed", "allowed: numbers, strings"]),
    ('EXPERIMENT = Experiment(gird={"t": [1]})', ["unknown setting 'gird'", "allowed: title, description, grid"]),
    ('EXPERIMENT = Experiment(grid={"t": [1]}, trials=0)', ["trials: 0 is not allowed", "an integer >= 1"]),
    ('EXPERIMENT = Experiment(grid={"t": [1]}, fixed={"trials": 3})', ["'trials' is set by the runner"]),
    ('EXPERIMENT = Experiment(grid={"t": [1]}, trials_for=5)', ["trials_for: 5 is not a function"]),
    ('EXPERIMENT = Experiment(grid={"t": [1]}, trials_for=lambda p: 0)', ["trials_for(t=1) returned 0",
                                                                         "an integer >= 1"]),
    ('EXPERIMENT = Experiment(grid={"t": [1]}, validate=["throughput >"])', ["not a valid Python expression"]),
    ('EXPERIMENT = Experiment(grid={"t": [1]}, exclude=[{"x": 1}])', ["'x' is not a grid parameter", "allowed: t"]),
    ('EXPERIMENT = Experiment(grid={"t": [1]}, plots=[Line(z=1)])', ["unexpected keyword argument 'z'",
                                                                     "allowed: title, facets, where, name, x, y"]),
    ('EXPERIMENT = Experiment(grid={"t": [1]}, plots=["line"])', ["plots: item 0 is 'line'", "allowed: Line"]),
    ('EXPERIMENT = Experiment(grid={"t": [1]}, exclude=[lambda p: True])', ["every point is excluded"]),
    ('EXPERIMENT = Experiment(grid={"t": [1]}, options=lambda p: p["nope"])', ["options(t=1) raised KeyError"]),
    ('EXPERIMENT = 3', ["defines no EXPERIMENT", "allowed: a Python file that sets EXPERIMENT"]),
    ('EXPERIMENT = Experiment(grid={"t": [1]}', ["exp.py:", "syntax error"]),
    ('import no_such_module_x', ["exp.py:", "ModuleNotFoundError"]),
])
def test_bad_experiment_is_one_line_exit_2(tmp_path, body, needles):
    exp = write_experiment(tmp_path, body)
    one_line_error(runner(exp, "run", "--results", tmp_path / "r",
                          env={"CDSBENCH_HARNESS": str(BUILD / "cdsbench")}), *needles)


@pytest.mark.parametrize("args, needles", [
    (["no/such/experiment.py"], ["no/such/experiment.py: no such experiment file", "allowed:"]),
    (["README.md"], ["not an experiment file", "allowed:"]),
    ([], ["the following arguments are required: EXPERIMENT.py"]),
    (["{exp}", "plot"], ["unknown step 'plot'", "allowed: build, run, database, plots, markdown, site, all"]),
    (["{exp}", "--export", "json"], ["--export: 'json' is not allowed (allowed: csv)"]),
    (["{exp}", "--trials", "0"], ["--trials: '0' is not allowed (allowed: an integer >= 1)"]),
    (["{exp}", "--timeout", "soon"], ["--timeout: 'soon' is not allowed"]),
    (["{exp}", "--frobnicate"], ["unrecognized arguments: --frobnicate"]),
    (["{exp}", "--query", "SELECT 1"], ["no database", "allowed: run the database step first"]),
    (["{exp}", "run", "--harness", "/nonexistent/cdsbench"], ["harness /nonexistent/cdsbench not found", "allowed:"]),
])
def test_bad_command_line_is_one_line_exit_2(tmp_path, args, needles):
    exp = write_experiment(tmp_path, 'EXPERIMENT = Experiment(grid={"threads": [1]})')
    p = runner(*[a.format(exp=exp) for a in args], "--results", tmp_path / "r", cwd=ROOT)
    one_line_error(p, *needles)


@pytest.fixture(scope="module")
def done(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    exp = fake_experiment(d, {"mode": ["ok"], "ds": ["a", "b"], "value": [100.0, 300.0]}, trials=2,
                          extra='plots=[Line(x="value", y="no_such_column")],')
    p = runner(exp, "run", "database", "--results", d / "results")
    assert p.returncode == 0, p.stderr
    return exp, d / "results"


@pytest.mark.parametrize("sql, needles", [
    ("SELEC ds FROM runs", ['near "SELEC": syntax error', "allowed: one SQL query over the tables runs"]),
    ("SELECT nope FROM runs", ["no such column: nope"]),
    ("SELECT * FROM nope", ["no such table: nope"]),
    ("DELETE FROM runs", ["readonly database"]),
    ("SELECT 1; SELECT 2", ["one statement at a time"]),
])
def test_bad_sql_is_one_line_exit_2(done, sql, needles):
    exp, results = done
    one_line_error(runner(exp, "--query", sql, "--results", results), "--query: ", *needles)
    assert runner(exp, "--query", "SELECT count(*) AS n FROM runs", "--results", results).stdout.split()[2] == "8"


def test_a_plot_of_an_unknown_column_is_one_line_exit_2(done):
    exp, results = done
    one_line_error(runner(exp, "plots", "--results", results),
                   "plots: line-no_such_column-by-value: no column 'no_such_column' in the database", "allowed:")


def test_query_prints_a_table(done):
    exp, results = done
    p = runner(exp, "--query", "SELECT ds, value, avg(throughput_ops_per_s) AS mean, count(*) AS n FROM runs "
                               "GROUP BY ds, value ORDER BY ds, value", "--results", results)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].split() == ["ds", "value", "mean", "n"]
    assert set(lines[1]) <= {"-", " "}
    assert [l.split() for l in lines[2:6]] == [["a", "100", "100", "2"], ["a", "300", "300", "2"],
                                                ["b", "100", "100", "2"], ["b", "300", "300", "2"]]
    assert lines[6] == "(4 rows)"


def test_export_csv(done):
    exp, results = done
    p = runner(exp, "--export", "csv", "--results", results)
    assert p.returncode == 0, p.stderr
    paths = [pathlib.Path(line) if pathlib.Path(line).is_absolute() else ROOT / line for line in p.stdout.split()]
    assert {x.name for x in paths} >= {"runs.csv", "points.csv", "stats.csv", "warnings.csv", "summary.csv"}
    runs = list(csv.DictReader(open(results / "exp" / "export" / "runs.csv")))
    assert len(runs) == 8 and {r["ds"] for r in runs} == {"a", "b"}
    assert "throughput_ops_per_s" in runs[0] and "run_status" in runs[0]
    q = runner(exp, "--query", "SELECT ds, run_trial FROM runs ORDER BY run_id LIMIT 2", "--export", "csv",
               "--results", results)
    assert list(csv.reader(io.StringIO(q.stdout))) == [["ds", "run_trial"], ["a", "0"], ["a", "1"]]


def test_the_installed_command_runs(done):
    exp, results = done
    cmd = pathlib.Path(sys.executable).with_name("cdsbench-run")
    assert cmd.exists(), "scripts/install-deps installs the runner into the venv"
    p = subprocess.run([str(cmd), str(exp), "--query", "SELECT count(*) FROM points", "--results", str(results)],
                       capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.splitlines()[2].strip() == "4"


def test_demo_plans_every_registered_structure(monkeypatch):
    """experiments/demo.py: every structure of --list, threads 1 and 2, 20% updates, 3 trials, 1 s
    each unless that would not fit the demo's time budget."""
    from cdsbench.experiment import load, make_plan

    monkeypatch.delenv("CDSBENCH_DEMO_TRIAL_MS", raising=False)
    code, out, _ = run("cdsbench", "--list")
    names = [line.split()[0] for line in out.splitlines() if line.strip()]
    loaded = load(str(ROOT / "experiments" / "demo.py"))
    plan = make_plan(loaded, BUILD / "cdsbench")
    assert plan.grid == {"ds": names, "threads": [1, 2], "updates": [20]}
    # A structure without a thread-safe erase (the registry's concurrent_erase, e.g.
    # tbb.concurrent_map) cannot delete beside other threads: its 2-thread point is left out (the
    # harness would refuse it).
    erases = {s["name"]: s["concurrent_erase"] for s in structures()}
    assert list(erases) == names
    refused = 3 * sum(not e for e in erases.values())
    assert len(plan.runs) == len(names) * 2 * 3 - refused
    assert not any(not erases[r.point["ds"]] and r.point["updates"] and r.point["threads"] > 1
                   for r in plan.runs)
    durations = set()
    for r in plan.runs:
        argv = r.argv
        opt = {argv[i]: argv[i + 1] for i in range(1, len(argv) - 1) if argv[i].startswith("--")}
        assert opt["--ds"] == r.point["ds"] and opt["--threads"] == str(r.point["threads"])
        assert opt["--trials"] == "1" and opt["--seed"] == str(1 + r.trial)
        assert opt["--insert"] == opt["--delete"] == str(r.point["updates"] // 2)
        durations.add(int(opt["--duration-ms"]))
    assert len({r.key for r in plan.runs}) == len(plan.runs)
    (ms,) = durations
    budget = 230 / len(plan.runs) - 0.15
    assert ms == 1000 if budget >= 1 else 100 <= ms <= max(100, budget * 1000) < 1000
    # Three structures (the registry at first) get the full second.
    demo = loaded.experiment
    assert demo.options({"ds": "x", "threads": 1, "updates": 20},
                        {"ds": ["a", "b", "c"], "threads": [1, 2], "updates": [20]})["duration_ms"] == 1000
    monkeypatch.setenv("CDSBENCH_DEMO_TRIAL_MS", "1000")
    assert {r.argv[r.argv.index("--duration-ms") + 1] for r in make_plan(loaded, BUILD / "cdsbench").runs} == {"1000"}


def test_build_step_runs_the_experiments_build_commands(tmp_path):
    ok = write_experiment(tmp_path, """
        EXPERIMENT = Experiment(grid={"ds": ["a"]}, command=lambda p, h: [sys.executable, FAKE],
                                build=[[sys.executable, "-c", "print('built it')"]])
        """, name="ok")
    p = runner(ok, "build", "--results", tmp_path / "r")
    assert p.returncode == 0 and "built it" in p.stdout
    bad = write_experiment(tmp_path, """
        EXPERIMENT = Experiment(grid={"ds": ["a"]}, command=lambda p, h: [sys.executable, FAKE],
                                build=[[sys.executable, "-c", "raise SystemExit(3)"]])
        """, name="bad")
    p = runner(bad, "build", "run", "--results", tmp_path / "r")
    assert p.returncode == 1 and "exited with 3" in p.stderr and not (tmp_path / "r" / "bad" / "runs").exists()
    own = fake_experiment(tmp_path, {"mode": ["ok"]}, name="own")
    p = runner(own, "build", "--results", tmp_path / "r")
    assert p.returncode == 0 and "nothing to build" in p.stdout  # not the repository's build/ tree


def test_a_report_before_any_run(tmp_path):
    exp = fake_experiment(tmp_path, {"mode": ["ok"]}, extra="plots=[Line(x='mode', y='throughput_ops_per_s')],")
    p = runner(exp, "database", "plots", "site", "--results", tmp_path / "r")
    assert p.returncode == 0, p.stderr
    page = (tmp_path / "r" / "exp" / "warnings.html").read_text()
    assert "1 of 1 planned runs have not run" in page and "no data to draw (no ok run yet)" in page
