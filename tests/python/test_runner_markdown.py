"""The markdown step: an experiment's page written from results.db alone (header with the
command that reproduces it and the machine and commit that measured it; medians, spreads and
ratios with their bootstrap interval), atomically, the same page every time; and the status
module the sweep, the database and the report share."""
import re
import sqlite3
import subprocess
import sys

import pytest

from cdsbench.markdown import Results
from conftest import ROOT
from runner_support import db, rows, runner, write_experiment

# Trial t of a point measures value * (1 + 0.05 t): three trials a point, a spread of 10%.
# `a` and `same` measure the same values; `b` three times as much.
SMALL = """
from cdsbench.experiment import env
from cdsbench.markdown import cell, compare, failed_points, ratio_text, spread_line, table

SCALE = env("FAKE_SCALE", 1.0, minimum=0.001)

def page(results):
    cols = results.values("threads")
    body = [[ds] + [cell(results.point(ds=ds, threads=t), "throughput_ops_per_s", "%.1f") for t in cols]
            for ds in results.values("ds")]
    for other in ("b", "same"):
        body.append(["*%s / a*" % other] + ["*%s*" % ratio_text(compare(results.point(ds=other, threads=t),
                                                                        results.point(ds="a", threads=t),
                                                                        "throughput_ops_per_s"))
                                             for t in cols])
    cells = [(results.point(ds=ds, threads=t), "%s, %dT" % (ds, t)) for ds in results.values("ds") for t in cols]
    return ("## Throughput\\n\\n" + table(["structure"] + ["%dT" % t for t in cols], body) + "\\n\\n"
            + spread_line(cells, "throughput_ops_per_s") + "\\n\\n" + failed_points(cells))

VALUE = {"a": 100.0, "same": 100.0, "b": 300.0, "broken": 100.0}

EXPERIMENT = Experiment(
    title="Small page",
    grid={"ds": ["a", "b", "same", "broken"], "threads": [1, 2]},
    trials=3,
    command=lambda p, harness, trial: [sys.executable, FAKE, "--ds", p["ds"], "--threads", str(p["threads"]),
                                       "--seed", str(1 + trial),
                                       "--mode", "usage" if p["ds"] == "broken" else "ok",
                                       "--value", str(SCALE * VALUE[p["ds"]] * (1 + 0.05 * trial))],
    page=page,
)
"""


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    d = tmp_path_factory.mktemp("markdown")
    exp = write_experiment(d, SMALL, name="small")
    out = d / "pages" / "small.md"
    p = runner(exp, "run", "database", "markdown", "--out", out, "--results", d / "r", env={"FAKE_SCALE": "2"})
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"markdown: {out}" in p.stdout
    return exp, d, out, out.read_text()


def table_rows(text, heading):
    lines = text.splitlines()
    start = lines.index(heading)
    out = {}
    for line in lines[start + 4:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        out[cells[0]] = cells[1:]
    return out


def test_the_header_says_how_to_reproduce_and_what_measured(page):
    exp, d, out, text = page
    assert text.startswith("# Small page\n")
    assert f"FAKE_SCALE=2 .venv/bin/cdsbench-run {exp} --out {out}" in text  # the setting read, repeated
    assert "- Machine: Fake CPU; 2 CPUs" in text and "compiler fake 1.0" in text
    assert "commit " + "0" * 40 in text
    assert re.search(r"- Runs: 24 of 24 planned, started \S+ to \S+, 0:00:\d\d \(h:m:s\) of runs in all; "
                     r"1-minute load average as a run began: median \d+\.\d, largest \d+\.\d\.", text)
    assert "6 run(s) did not succeed" in text
    meta = dict(db(d / "r", "small").execute("SELECT key, value FROM meta").fetchall())
    assert meta["command"] == f"FAKE_SCALE=2 .venv/bin/cdsbench-run {exp}"
    assert meta["env"] == '{"FAKE_SCALE": "2"}'


def test_medians_statuses_and_spreads_come_from_the_database(page):
    _, d, _, text = page
    got = table_rows(text, "## Throughput")
    con = db(d / "r", "small")
    medians = {(r["ds"], r["threads"]): r["median"] for r in rows(con, "SELECT ds, threads, median FROM summary")}
    assert got["a"] == ["%.1f" % medians["a", 1], "%.1f" % medians["a", 2]] == ["210.0", "210.0"]
    assert got["b"] == ["630.0", "630.0"]
    assert got["broken"] == ["error", "error"]  # the harness refused it: its status, no number
    assert "Spread of the 3 trials of a point, (max - min) / median: median 10% over the table's 6 points" in text


def test_failed_points_say_why_and_how_to_replay_them(page):
    _, d, _, text = page
    section = text[text.index("### Failed points"):]
    lines = [line for line in section.splitlines() if line.startswith("- ")]
    # Only the broken structure's points, each with the harness's last word and its command.
    assert [line.split(":")[0] for line in lines] == ["- broken, 1T", "- broken, 2T"]
    con = db(d / "r", "small")
    for line, threads in zip(lines, (1, 2)):
        run = rows(con, "SELECT run_command, run_stderr FROM runs WHERE ds = 'broken' AND threads = ? "
                        "ORDER BY run_id LIMIT 1", threads)[0]
        why = run["run_stderr"].strip().splitlines()[-1]
        assert line == "- broken, %dT: error: %s — `%s`" % (threads, why, run["run_command"])


def test_ratios_carry_their_interval_and_call_no_difference_the_noise_explains(page):
    _, _, _, text = page
    got = table_rows(text, "## Throughput")
    # b is 3 x a in every trial: 630 / 210 with the interval of the extremes (3 trials a side).
    low, high = 600 / 220, 660 / 200
    assert got["*b / a*"] == [f"*3.00 [{low:.2f}, {high:.2f}]*"] * 2
    # `same` measures what `a` measures: its interval holds 1.
    low, high = 200 / 220, 220 / 200
    assert got["*same / a*"] == [f"*no measurable difference [{low:.2f}, {high:.2f}]*"] * 2


def test_the_page_is_the_same_every_time_and_written_whole(page):
    exp, d, out, text = page
    p = runner(exp, "markdown", "--out", out, "--results", d / "r", env={"FAKE_SCALE": "2"})
    assert p.returncode == 0, p.stderr
    assert out.read_text() == text
    assert [f.name for f in out.parent.iterdir()] == ["small.md"]  # no temporary file left


def test_default_path_and_default_page(tmp_path):
    exp = write_experiment(tmp_path, """
        EXPERIMENT = Experiment(grid={"ds": ["a", "b"]}, trials=2,
                                command=lambda p, h, t: [sys.executable, FAKE, "--ds", p["ds"], "--seed", str(t)])
        """)
    p = runner(exp, "database", "markdown", "--results", tmp_path / "r")  # before any run
    assert p.returncode == 0, p.stderr
    page = (tmp_path / "r" / "exp" / "results.md").read_text()
    assert "- **Incomplete: 4 of 4 planned runs have not run**" in page and "| a | not run | — | 0 | — |" in page
    p = runner(exp, "--results", tmp_path / "r")  # every step, markdown included
    assert p.returncode == 0, p.stderr
    page = (tmp_path / "r" / "exp" / "results.md").read_text()
    assert "Incomplete" not in page
    assert p.stdout.rstrip().splitlines()[-1].startswith("report: ")  # the site step still ends the run
    assert "## throughput_ops_per_s per point" in page
    assert "| a | 1000 | 1000 - 1000 | 2 | 0.0% |" in page


def test_bad_uses_are_one_line_exit_2(tmp_path):
    def error(p, needle):
        assert p.returncode == 2, p.stdout + p.stderr
        (line,) = p.stderr.strip().splitlines()
        assert line.startswith("cdsbench-run: error: ") and needle in line, line

    def tiny(name, page):
        return write_experiment(tmp_path, f"""
            EXPERIMENT = Experiment(grid={{"ds": ["a"]}}, trials=1, command=lambda p, h: [sys.executable, FAKE],
                                    page={page})
            """, name=name)

    exp = tiny("raises", "lambda r: 1 / 0")
    error(runner(exp, "markdown", "--results", tmp_path / "r"), "no database (allowed: run the database step first")
    assert runner(exp, "run", "database", "--results", tmp_path / "r").returncode == 0
    error(runner(exp, "markdown", "--results", tmp_path / "r"), "raises.py: page() raised ZeroDivisionError")
    error(runner(exp, "database", "--out", tmp_path / "x.md", "--results", tmp_path / "r"),
          "--out: only with the markdown step")
    error(runner(exp, "markdown", "--out", tmp_path / "x.txt", "--results", tmp_path / "r"),
          "--out: '" + str(tmp_path / "x.txt") + "' is not allowed (allowed: a Markdown file path ending in .md)")
    wrong = tiny("wrong", "lambda r: 3")
    assert runner(wrong, "run", "database", "--results", tmp_path / "r").returncode == 0
    error(runner(wrong, "markdown", "--results", tmp_path / "r"), "page() returned int")
    error(runner(write_experiment(tmp_path, SMALL, name="scaled"), "markdown", "--results", tmp_path / "r",
                 env={"FAKE_SCALE": "big"}),
          "scaled.py:8: $FAKE_SCALE: 'big' is not allowed (allowed: a number >= 0.001)")
    error(runner(write_experiment(tmp_path, 'EXPERIMENT = Experiment(grid={"t": [1]}, page="x")', name="bad"),
                 "run", "--results", tmp_path / "r"), "page: 'x' is not a function of the results")


def test_results_select_points_by_their_parameters(page):
    _, d, _, _ = page
    r = Results(d / "r" / "small" / "results.db")
    assert r.params == ["ds", "threads"] and r.values("threads") == [1, 2] and r.trials == 3
    assert [p.label for p in r.points(ds=["a", "b"], threads=2)] == ["ds=a threads=2", "ds=b threads=2"]
    a = r.point(ds="a", threads=1.0)  # 1.0 is the parameter 1
    assert a.status == "ok" and a.median("throughput_ops_per_s") == 210
    assert sorted(a.values("throughput_ops_per_s")) == pytest.approx([200, 210, 220])
    assert r.point(ds="nope", threads=1) is None and r.point(ds="broken", threads=1).status == "error"
    from cdsbench.errors import UsageError
    with pytest.raises(UsageError, match="matches 4 points, not one"):
        r.point(threads=1)
    with pytest.raises(UsageError, match="'updates' is not a grid parameter"):
        r.points(updates=0)


def test_database_and_site_do_not_import_the_sweep():
    code = ("import sys, cdsbench.database, cdsbench.site, cdsbench.markdown; "
            "print('cdsbench.runner' in sys.modules)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "False"
    from cdsbench import runner, status
    assert runner.classify is status.classify and runner.plan_fingerprint is status.plan_fingerprint
    assert set(status.STATUS_MEANING) == set(status.STATUSES)


def test_the_structures_table_keeps_the_registry_the_plan_read(tmp_path):
    from runner_support import fake_harness_binary
    harness = fake_harness_binary(tmp_path)
    exp = write_experiment(tmp_path, """
        EXPERIMENT = Experiment(grid={"ds": registered_structures(kind="black_box")}, trials=1,
                                command=lambda p, h: [sys.executable, FAKE, "--ds", p["ds"]])
        """)
    p = runner(exp, "run", "database", "--harness", harness, "--results", tmp_path / "r")
    assert p.returncode == 0, p.stderr
    got = rows(db(tmp_path / "r"), "SELECT name, kind, library, method, sequential FROM structures")
    assert len(got) == 10 and {"name": "nr.fake_pq", "kind": "black_box", "library": "cdsbench", "method": "nr",
                               "sequential": "fake_pq"} in got
    assert Results(tmp_path / "r" / "exp" / "results.db").structures["their_map"]["concurrent_erase"] is False
    assert isinstance(sqlite3.connect(tmp_path / "r" / "exp" / "results.db")
                      .execute("SELECT run_load_avg FROM runs").fetchone()[0], float)


def test_a_paired_comparison_matches_the_trials_by_their_round():
    from cdsbench.markdown import Point, compare

    def point(values, status="ok"):
        return Point(0, "p", {}, len(values), runs=[{"run_status": status, "run_trial": t, "x": v}
                                                    for t, v in values.items()])
    ours = point({0: 110.0, 1: 220.0, 2: 55.0, 3: 330.0})
    theirs = point({0: 100.0, 1: 200.0, 2: 50.0, 4: 1.0})  # its trial 3 failed, trial 4 has no partner
    c = compare(ours, theirs, "x", paired=True)
    assert (c.n_a, c.estimate, c.low, c.high) == (3, pytest.approx(1.1), pytest.approx(1.1), pytest.approx(1.1))
    unpaired = compare(ours, theirs, "x")
    assert unpaired.n_a == 4 and unpaired.n_b == 4 and unpaired.low < 1.1 < unpaired.high
    assert compare(ours, point({0: 1.0}, status="failed"), "x", paired=True) is None
