"""Running the plan: one harness process per run, its files kept, resumable after any stop.

Each run lives in ``runs/KEY/``: ``command.txt`` (the command line), ``stdout.txt`` (the raw
output), ``stderr.txt``, ``output.json`` (the harness's `--json`), and ``run.json`` (status, exit
code, times). A run is written into a hidden ``.KEY.partial-PID`` directory and renamed to
``runs/KEY`` only after ``run.json`` is on disk, so a run directory is always whole: a sweep
stopped at any point (Ctrl-C, kill -9, power loss) resumes by running exactly the runs whose
directory is missing, and leftover partial directories are removed. A failed, crashed or
timed-out run is recorded like any other, with its status and stderr.
"""
from __future__ import annotations

import ctypes
import datetime as dt
import fcntl
import functools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import UsageError
from .experiment import Plan, Run, command_line
from .parse import parse_run
from .status import classify, plan_fingerprint, plan_program


class Interrupted(Exception):
    """The sweep was stopped (SIGINT/SIGTERM); what ran is kept, the rest runs next time."""


class Lock:
    """One writer per experiment results directory."""

    def __init__(self, directory: Path):
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / ".lock"
        self.fd = None

    def __enter__(self):
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = os.pread(self.fd, 64, 0).decode(errors="replace").strip()
            os.close(self.fd)
            raise UsageError(f"{self.path.parent}: another cdsbench-run is working on this experiment "
                             f"(pid {other or '?'}); allowed: one at a time") from None
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, str(os.getpid()).encode(), 0)
        return self

    def __exit__(self, *exc):
        os.close(self.fd)


def _child_setup(runner_pid: int):
    # The run dies with the runner (kill -9 included): no orphan keeps measuring, or writing.
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    # A runner killed between the fork and the prctl sends no signal: the child must see it.
    if os.getppid() != runner_pid:
        os._exit(1)


def _kill_group(proc: subprocess.Popen) -> None:
    for sig, grace in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(grace)
            return
        except subprocess.TimeoutExpired:
            continue


def _now() -> str:
    return dt.datetime.now().astimezone().isoformat(timespec="seconds")


def _write(path: Path, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def run_dir_done(runs_dir: Path, run: Run) -> bool:
    return (runs_dir / run.key / "run.json").is_file()


def _begin(run: Run, runs_dir: Path, cwd: Path, timeout_s: float, json_output: bool,
           harness_sha: str | None) -> tuple[Path, list[str], dict]:
    """The run's partial directory with its command.txt, the argv to execute, and its record."""
    final = runs_dir / run.key
    tmp = runs_dir / f".{run.key}.partial-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    argv = list(run.argv)
    recorded = list(run.argv)
    if json_output:
        argv += ["--json", str((tmp / "output.json").resolve())]
        recorded += ["--json", str((final / "output.json").resolve())]
    _write(tmp / "command.txt", f"cd {command_line([str(cwd)])} && {command_line(recorded)}\n")
    record = {"key": run.key, "point_id": run.point_id, "point": run.point, "label": run.label,
              "trial": run.trial, "argv": recorded, "cwd": str(cwd), "timeout_s": timeout_s,
              "harness_sha256": harness_sha, "host": socket.gethostname(), "started_at": _now(),
              # How busy the machine was as the run began: a page says how quiet its runs were.
              "load_avg_1min": round(os.getloadavg()[0], 2)}
    return tmp, argv, record


def _commit(tmp: Path, runs_dir: Path, record: dict) -> dict:
    _write(tmp / "run.json", json.dumps(record, indent=2) + "\n")
    os.rename(tmp, runs_dir / record["key"])  # the run exists from here on, whole
    dfd = os.open(runs_dir, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
    return record


def record_unexecuted(run: Run, runs_dir: Path, cwd: Path, timeout_s: float, json_output: bool,
                      harness_sha: str | None, status: str, stderr: str, **facts) -> dict:
    """Records a run whose program did not run to its end here: `status` and `stderr` say why
    (e.g. a cluster's time limit, with the task's log); `facts` override the record's fields."""
    tmp, _, record = _begin(run, runs_dir, cwd, timeout_s, json_output, harness_sha)
    (tmp / "stdout.txt").write_bytes(b"")
    _write(tmp / "stderr.txt", stderr)
    record.update({"wall_s": None, "finished_at": _now(), "exit_code": None, "timed_out": status == "timeout",
                   "status": status}, **facts)
    return _commit(tmp, runs_dir, record)


def execute(run: Run, runs_dir: Path, cwd: Path, timeout_s: float, json_output: bool,
            harness_sha: str | None) -> dict:
    """Runs one run and records it; returns its run.json record."""
    tmp, argv, record = _begin(run, runs_dir, cwd, timeout_s, json_output, harness_sha)
    start = time.monotonic()
    exit_code, timed_out = None, False
    with open(tmp / "stdout.txt", "wb") as out, open(tmp / "stderr.txt", "wb") as err:
        try:
            proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=cwd,
                                    start_new_session=True, preexec_fn=functools.partial(_child_setup, os.getpid()))
        except OSError as e:
            err.write(f"cdsbench-run: cannot start {argv[0]}: {e.strerror or e}\n".encode())
            proc = None
        if proc is not None:
            try:
                exit_code = proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc)
                exit_code = proc.returncode
                err.flush()
                err.write(f"\ncdsbench-run: killed after the timeout of {timeout_s:g} s\n".encode())
            except BaseException:
                _kill_group(proc)
                raise
    record["wall_s"] = round(time.monotonic() - start, 3)
    record["finished_at"] = _now()
    record["exit_code"] = exit_code
    record["timed_out"] = timed_out
    stdout = (tmp / "stdout.txt").read_bytes().decode(errors="replace")
    json_path = tmp / "output.json"
    parsed = parse_run(stdout, json_path.read_text(errors="replace") if json_path.exists() else None)
    record["status"] = classify(exit_code, timed_out, parsed.complete)
    return _commit(tmp, runs_dir, record)


def remove_partials(runs_dir: Path) -> int:
    n = 0
    if runs_dir.is_dir():
        for p in runs_dir.iterdir():
            if p.name.startswith(".") and ".partial-" in p.name:
                shutil.rmtree(p, ignore_errors=True)
                n += 1
    return n


def raise_interrupted(signum, frame):
    raise Interrupted(signal.Signals(signum).name)


@dataclass
class SweepResult:
    planned: int
    already_done: int
    ran: int
    by_status: dict
    wall_s: float


def runs_to_do(plan: Plan, runs_dir: Path, log=print) -> tuple[list[Run], str | None]:
    """The runs of the plan not yet done, trial-major, and the program's fingerprint; removes
    the partial directories of interrupted runs and the runs of another build, and says so.
    Whoever calls it must know that no run of the experiment is executing now."""
    runs_dir.mkdir(parents=True, exist_ok=True)
    removed = remove_partials(runs_dir)
    harness_sha = plan_fingerprint(plan)
    stale = 0
    for run in plan.runs:
        rec = runs_dir / run.key / "run.json"
        if rec.is_file():
            try:
                old = json.loads(rec.read_text()).get("harness_sha256")
            except (OSError, json.JSONDecodeError):
                old = "unreadable"
            if old != harness_sha:
                shutil.rmtree(runs_dir / run.key)
                stale += 1
    # Trial-major: the n-th trial of every point before any point's (n+1)-th, so a drift of the
    # machine's speed during the sweep (other tenants, heat) falls on every point alike, not on
    # the points that happened to run last; the side-by-side ratios of a page stay honest.
    todo = sorted((r for r in plan.runs if not run_dir_done(runs_dir, r)), key=lambda r: (r.trial, r.point_id))
    keys = {r.key for r in plan.runs}
    foreign = sum(1 for p in runs_dir.iterdir() if not p.name.startswith(".") and p.name not in keys)
    done_before = len(plan.runs) - len(todo)
    notes = []
    if done_before:
        notes.append(f"{done_before} already done")
    if removed:
        notes.append(f"{removed} interrupted run(s) discarded")
    if stale:
        notes.append(f"{stale} made by another build of {Path(plan_program(plan)).name}, run again")
    if foreign:
        notes.append(f"{foreign} of an earlier version of the experiment ignored (--fresh removes them)")
    log(f"run: {len(plan.runs)} runs planned ({len(plan.points)} points x trials)"
        + (f"; {'; '.join(notes)}" if notes else "") + f"; {len(todo)} to run")
    return todo, harness_sha


def sweep(plan: Plan, runs_dir: Path, cwd: Path, timeout_s: float, json_output: bool,
          log=print, console=None) -> SweepResult:
    """Runs every run of the plan not yet done, with a progress bar and an ETA."""
    todo, harness_sha = runs_to_do(plan, runs_dir, log)
    done_before = len(plan.runs) - len(todo)
    by_status = {}
    start = time.monotonic()
    old_int = signal.signal(signal.SIGINT, raise_interrupted)
    old_term = signal.signal(signal.SIGTERM, raise_interrupted)
    try:
        if todo:
            _run_all(todo, runs_dir, cwd, timeout_s, json_output, harness_sha, by_status, log, console)
    finally:
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGTERM, old_term)
        remove_partials(runs_dir)
    return SweepResult(len(plan.runs), done_before, len(todo), by_status, time.monotonic() - start)


def _run_all(todo, runs_dir, cwd, timeout_s, json_output, harness_sha, by_status, log, console):
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)

    console = console or Console(stderr=True)
    if console.is_terminal:
        columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("elapsed"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn())
        with Progress(*columns, console=console, transient=False) as progress:
            task = progress.add_task("runs", total=len(todo))
            for run in todo:
                progress.update(task, description=f"{run.label} #{run.trial}")
                rec = execute(run, runs_dir, cwd, timeout_s, json_output, harness_sha)
                by_status[rec["status"]] = by_status.get(rec["status"], 0) + 1
                if rec["status"] != "ok":
                    progress.console.print(f"[yellow]{run.label} #{run.trial}: {rec['status']}"
                                           f" (exit {rec['exit_code']}, {rec['wall_s']:.1f} s)[/]")
                progress.advance(task)
            progress.update(task, description="runs done")
        return
    # Not a terminal (CI logs, tests): one line per run, with the ETA from the mean run time.
    start = time.monotonic()
    for i, run in enumerate(todo, 1):
        rec = execute(run, runs_dir, cwd, timeout_s, json_output, harness_sha)
        by_status[rec["status"]] = by_status.get(rec["status"], 0) + 1
        elapsed = time.monotonic() - start
        eta = elapsed / i * (len(todo) - i)
        log(f"[{i}/{len(todo)}] {run.label} #{run.trial}: {rec['status']} ({rec['wall_s']:.1f} s), "
            f"ETA {int(eta) // 60}:{int(eta) % 60:02d}")
        sys.stdout.flush()
