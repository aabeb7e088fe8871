"""Helpers of the runner's tests (cdsbench-run, python/cdsbench): experiment files in a temporary
directory, the runner as a subprocess, the fake harness."""
import os
import pathlib
import shlex
import sqlite3
import subprocess
import sys
import textwrap

from conftest import BUILD, ROOT

FAKE = pathlib.Path(__file__).with_name("fake_harness.py")


def write_experiment(directory, body, name="exp"):
    """An experiment file NAME.py in ``directory``; ``body`` is Python after the imports."""
    path = pathlib.Path(directory) / f"{name}.py"
    head = ("import sys\n"
            "from cdsbench.experiment import Experiment, Line, Bar, Histogram, Heatmap, registered_structures\n"
            f"FAKE = {str(FAKE)!r}\n")
    path.write_text(head + textwrap.dedent(body))
    return path


def fake_experiment(directory, grid, trials=1, extra="", name="exp"):
    """An experiment whose runs are the fake harness (each grid parameter is passed as --NAME
    VALUE, run t gets --seed 1+t); ``extra`` is more Experiment(...) arguments."""
    body = ("EXPERIMENT = Experiment(\n"
            f"    grid={grid!r},\n"
            f"    trials={trials},\n"
            "    command=lambda p, harness, trial: [sys.executable, FAKE, '--seed', str(1 + trial)]\n"
            "            + [x for k, v in p.items() for x in ('--' + k, str(v))],\n"
            + textwrap.dedent(extra) + "\n)\n")
    return write_experiment(directory, body, name)


def fake_harness_binary(directory, mode="ok", name="cdsbench"):
    """An executable ``directory/NAME`` that is the fake harness in ``mode`` (the runner calls a
    harness directly, e.g. `HARNESS --list --json FILE` for registered_structures())."""
    path = pathlib.Path(directory) / name
    command = shlex.join([sys.executable, str(FAKE), "--mode", mode])
    path.write_text(f'#!/bin/sh\nexec {command} "$@"\n')
    path.chmod(0o755)
    return path


def runner(*args, env=None, timeout=300, cwd=None):
    """cdsbench-run with this interpreter; returns the CompletedProcess (text)."""
    e = dict(os.environ)
    e.setdefault("CDSBENCH_BUILD", str(BUILD))
    if env:
        e.update(env)
    return subprocess.run([sys.executable, "-m", "cdsbench", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=e, cwd=cwd or ROOT)


def db(results, name="exp"):
    con = sqlite3.connect(pathlib.Path(results) / name / "results.db")
    con.row_factory = sqlite3.Row
    return con


def rows(con, sql, *params):
    return [dict(r) for r in con.execute(sql, params)]
