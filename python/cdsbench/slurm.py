"""The Slurm executor: an experiment's runs as job arrays on a cluster (`--executor slurm`).

Each array task is one run, executed on its node by `python -m cdsbench.slurm task` with the
local executor's own code (runner.execute): the run appears in RESULTS/EXPERIMENT/runs/ as a
whole directory, renamed into place once complete, on the filesystem the nodes share with the
submit host. What the submit host keeps, under RESULTS/EXPERIMENT/slurm/:

    jobs.json            the arrays submitted and not yet settled: name (unique; recorded before
                         sbatch is called), job id, directory, run keys
    SUBMISSION/runs.json one array's runs, indexed by SLURM_ARRAY_TASK_ID, and how to run them
    SUBMISSION/%A_%a.out each task's Slurm log
    lost.json            the runs whose task ended without a result by a failure of the cluster

A task that ends without a result is settled by the next look at its state (sacct where the
cluster keeps accounting, else squeue and scontrol, which forget a job MinJobAge after it
ends): the cluster's failures (cancelled, node failure, preemption, a task killed by a signal,
no record at all: a task cancelled while pending leaves none) leave the run not done, listed in lost.json with its Slurm log, and
the next `cdsbench-run EXP run --executor slurm` submits it again with the runs never started;
the measurement's (Slurm's time limit, out of memory, the task failing on its node with an exit
status) are recorded as runs, timeout, crashed and error, as the local executor records them. So after a crash, a kill or an scancel, the same command
completes the experiment, and the database is the one the local executor gives.
"""
from __future__ import annotations

import json
import math
import os
import re
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .errors import UsageError
from .experiment import Plan, Run
from .runner import SweepResult, execute, raise_interrupted, record_unexecuted, run_dir_done, runs_to_do
from .status import fingerprint, plan_program

# A task's states in which it is still the cluster's (squeue's compact state names included).
ACTIVE = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "RESIZING", "REQUEUED",
          "REQUEUE_HOLD", "REQUEUE_FED", "SIGNALING", "STAGE_OUT", "STOPPED", "RESV_DEL_HOLD"}
# Ended without a result by the measurement's doing: recorded as the local executor would
# (status, exit code: the OOM killer's SIGKILL is a crash).
MEASUREMENT = {"TIMEOUT": ("timeout", None), "OUT_OF_MEMORY": ("crashed", -9)}


# sbatch options the executor sets itself: a run's task index, log and directory depend on them.
RESERVED = ("--array", "-a", "--output", "-o", "--error", "-e", "--chdir", "-D", "--job-name", "-J",
            "--parsable", "--wrap", "--dependency", "-d")


def check_sbatch_args(args: list[str]) -> None:
    for a in args:
        short = a[:2] if a.startswith("-") and not a.startswith("--") else None  # -aVALUE, -a VALUE
        if a.split("=", 1)[0] in RESERVED or short in RESERVED:
            raise UsageError(f"--sbatch-arg: {a!r} is not allowed (allowed: sbatch options other than "
                             f"{', '.join(r for r in RESERVED if r.startswith('--'))}, which the executor sets)")


@dataclass
class SlurmOptions:
    partition: str | None = None
    exclusive: bool = True          # a trial must not share its node
    max_parallel: int | None = None
    sbatch_args: list[str] = field(default_factory=list)
    wait: bool = True
    # Seconds between looks at the queue (CDSBENCH_SLURM_POLL_S; a real cluster's controller
    # should not be asked every second).
    poll_s: float = float(os.environ.get("CDSBENCH_SLURM_POLL_S", "5"))


def slurm(*argv: str, check: bool = True, timeout_s: float | None = 120) -> subprocess.CompletedProcess:
    try:
        p = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout_s)
    except FileNotFoundError:
        raise UsageError(f"--executor slurm: {argv[0]} not found (allowed: a Slurm submit host, with "
                         f"sbatch, squeue and scontrol on PATH)") from None
    except subprocess.TimeoutExpired:
        raise UsageError(f"--executor slurm: `{shlex.join(argv[:3])} ...` did not answer in {timeout_s:g} s "
                         f"(the controller is busy or down; run the same command again)") from None
    if check and p.returncode != 0:
        raise UsageError(f"--executor slurm: `{shlex.join(argv)}` failed: "
                         + (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1])
    return p


def cluster_config() -> dict:
    """`scontrol show config` as a dict (MaxArraySize, AccountingStorageType, ...)."""
    conf = {}
    for line in slurm("scontrol", "show", "config").stdout.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            conf[key.strip()] = value.strip()
    return conf


def has_accounting(conf: dict) -> bool:
    return conf.get("AccountingStorageType", "accounting_storage/none") != "accounting_storage/none"


# ---- task states ----------------------------------------------------------------------------
@dataclass
class TaskState:
    state: str       # Slurm's name: COMPLETED, CANCELLED, FAILED, TIMEOUT, ...
    exit_code: str   # "CODE:SIGNAL"
    node: str


def _expand(task_id: str) -> list[str]:
    """'12_[3-5,7]' -> ['12_3', '12_4', '12_5', '12_7']; '12_3' -> ['12_3']."""
    m = re.fullmatch(r"(\d+)_\[([\d,\-]+)(?:%\d+)?\]", task_id)
    if not m:
        return [task_id]
    out = []
    for part in m.group(2).split(","):
        lo, _, hi = part.partition("-")
        out += [f"{m.group(1)}_{i}" for i in range(int(lo), int(hi or lo) + 1)]
    return out


def queued_tasks(job_ids: list[str]) -> dict[str, str]:
    """The tasks of these arrays the cluster still holds (pending, running, ...): id -> state."""
    if not job_ids:
        return {}
    p = slurm("squeue", "-h", "-r", "-u", str(os.getuid()), "-o", "%i|%T")
    wanted = set(job_ids)
    out = {}
    for line in p.stdout.splitlines():
        task, _, state = line.strip().partition("|")
        if task.split("_")[0] in wanted and state in ACTIVE:
            for t in _expand(task):
                out[t] = state
    return out


def ended_tasks(job_ids: list[str], accounting: bool, since: str = "") -> dict[str, TaskState]:
    """How each task of these arrays ended, as far as the cluster still knows (with accounting,
    among the jobs submitted since `since`: job ids are reused after a controller's reset)."""
    out: dict[str, TaskState] = {}
    if not job_ids:
        return out
    if accounting:
        p = slurm("sacct", "-n", "-P", "-X", "-j", ",".join(job_ids), *(["-S", since] if since else []),
                  "-o", "JobID,State,ExitCode,NodeList")
        for line in p.stdout.splitlines():
            fields = line.split("|")
            if len(fields) == 4:
                for t in _expand(fields[0]):
                    out[t] = TaskState(fields[1].split()[0] if fields[1] else "UNKNOWN", fields[2], fields[3])
        return out
    for job in job_ids:
        p = slurm("scontrol", "-o", "show", "job", job, check=False)  # forgotten MinJobAge after it ends
        for line in p.stdout.splitlines():
            f = dict(w.split("=", 1) for w in line.split() if "=" in w)
            if "ArrayTaskId" in f:
                for t in _expand(f"{f.get('ArrayJobId', job)}_[{f['ArrayTaskId']}]"):
                    out[t] = TaskState(f.get("JobState", "UNKNOWN"), f.get("ExitCode", ""), f.get("NodeList", ""))
    return out


# ---- the experiment's Slurm state -----------------------------------------------------------
class State:
    def __init__(self, results_dir: Path):
        self.dir = results_dir / "slurm"
        self.jobs_path = self.dir / "jobs.json"
        self.lost_path = self.dir / "lost.json"

    def _read(self, path: Path, empty):
        try:
            return json.loads(path.read_text())
        except FileNotFoundError:
            return empty

    def _write(self, path: Path, value) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(value, indent=1) + "\n")
        os.replace(tmp, path)

    jobs = property(lambda self: self._read(self.jobs_path, []))
    lost = property(lambda self: self._read(self.lost_path, {}))

    def set_jobs(self, jobs: list) -> None:
        self._write(self.jobs_path, jobs)

    def set_lost(self, lost: dict) -> None:
        self._write(self.lost_path, lost)


def resolve_submissions(state: State) -> list[dict]:
    """The recorded arrays, each with its job id: an array is recorded under its unique name
    before sbatch is called, so one submitted by a runner that stopped before sbatch answered is
    found by name (squeue, else sacct); one found nowhere was never submitted, and is dropped."""
    jobs = state.jobs
    if all(j["job_id"] for j in jobs):
        return jobs
    known = []
    for j in jobs:
        if not j["job_id"]:
            p = slurm("squeue", "-h", "-u", str(os.getuid()), "-n", j["name"], "-o", "%F", check=False)
            ids = p.stdout.split()
            if not ids and has_accounting(cluster_config()):
                p = slurm("sacct", "-n", "-P", "-X", "--name", j["name"], "-S", j["submitted_at"], "-o", "JobID",
                          check=False)
                ids = [line.split("_")[0] for line in p.stdout.split()]
            if not ids:
                continue
            j["job_id"] = ids[0]
        known.append(j)
    state.set_jobs(known)
    return known


def still_queued(results_dir: Path) -> dict[str, str]:
    """The experiment's tasks the cluster still holds (empty where it never used Slurm)."""
    state = State(results_dir)
    if not state.jobs:
        return {}
    return queued_tasks([j["job_id"] for j in resolve_submissions(state)])


def refuse_local_while_queued(results_dir: Path, experiment: str) -> None:
    queued = still_queued(results_dir)
    if queued:
        jobs = sorted({t.split("_")[0] for t in queued})
        raise UsageError(f"{len(queued)} runs of this experiment are queued or running on Slurm (jobs "
                         f"{', '.join(jobs)}) (allowed: wait for them with `cdsbench-run {experiment} run "
                         f"--executor slurm`, or cancel them with `scancel {' '.join(jobs)}`)")


def _from_log(log_text: str) -> str:
    """A task's end as slurmstepd wrote it into the task's log: for a task the controller forgot."""
    if "DUE TO TIME LIMIT" in log_text:
        return "TIMEOUT"
    if "oom_kill" in log_text or "oom-kill" in log_text:
        return "OUT_OF_MEMORY"
    if re.search(r"\*\*\* JOB \S+ ON \S+ CANCELLED AT", log_text):
        return "CANCELLED"
    return "NO_RECORD"


def settle(plan: Plan, runs_dir: Path, state: State, accounting: bool, cwd: Path, timeout_s: float,
           json_output: bool, log, seen: dict[str, TaskState] | None = None) -> None:
    """Once no task of the recorded arrays is queued: records as runs the ends that are the
    measurement's (Slurm's time limit, out of memory, the task failing on its node), lists the
    cluster's in lost.json; forgets the arrays. `seen`: the ends wait() read."""
    jobs = resolve_submissions(state)
    if not jobs:
        return
    by_key = {r.key: r for r in plan.runs}
    since = min(j["submitted_at"] for j in jobs)

    def unsettled(ended):
        return [(job, index, key) for job in jobs for index, key in enumerate(job["keys"])
                if key in by_key and not run_dir_done(runs_dir, by_key[key])
                and ended.get(f"{job['job_id']}_{index}", TaskState("", "", "")).state in ACTIVE | {"COMPLETED"}]

    # Accounting lags the queue (slurmdbd records asynchronously), and a shared filesystem may
    # show a finished run's directory late: wait a little for both before calling a task lost.
    ended = (seen or {}) | ended_tasks([j["job_id"] for j in jobs], accounting, since)
    for _ in range(10):
        if not unsettled(ended):
            break
        time.sleep(3)
        ended = (seen or {}) | ended_tasks([j["job_id"] for j in jobs], accounting, since)
    lost = state.lost
    counts: dict[str, int] = {}
    for job in jobs:
        for index, key in enumerate(job["keys"]):
            run = by_key.get(key)
            if run is None or run_dir_done(runs_dir, run):
                continue
            task = f"{job['job_id']}_{index}"
            log_path = Path(job["dir"]) / f"{job['job_id']}_{index}.out"
            log_text = log_path.read_text(errors="replace")[-20000:] if log_path.is_file() else ""
            # No record: cancelled while pending (Slurm keeps none, even with accounting), or
            # forgotten (no accounting, MinJobAge): the task's log may still say how it ended.
            st = ended.get(task) or TaskState(_from_log(log_text), "", "")
            code, _, signal_no = st.exit_code.partition(":")
            if st.state in MEASUREMENT or (st.state == "FAILED" and signal_no in ("", "0") and code not in ("", "0")):
                status, exit_code = MEASUREMENT.get(st.state, ("error", None))
                record_unexecuted(run, runs_dir, cwd, timeout_s, json_output, job["harness_sha256"], status,
                                  f"cdsbench-run: Slurm task {task} on {st.node or '?'} ended {st.state} "
                                  f"(exit {st.exit_code or '?'}) without a result\n"
                                  f"--- its Slurm log ({log_path}):\n{log_text}",
                                  host=st.node or None, exit_code=exit_code, slurm_task=task, slurm_state=st.state)
                continue
            why = st.state + (f" (signal {signal_no})" if signal_no not in ("", "0") else "")
            lost[key] = {"task": task, "state": why, "node": st.node, "log": str(log_path) if log_path.is_file() else None}
            counts[why] = counts.get(why, 0) + 1
    state.set_lost({k: v for k, v in lost.items() if k in by_key and not run_dir_done(runs_dir, by_key[k])})
    state.set_jobs([])
    if counts:
        log(f"run: {sum(counts.values())} runs ended without a result by the cluster's doing "
            f"({', '.join(f'{n} {s}' for s, n in sorted(counts.items()))}); each with its Slurm log in "
            f"{state.lost_path}; submitted again by the next run step")


# ---- submitting ----------------------------------------------------------------------------
def probe(plan: Plan, options: SlurmOptions, results_dir: Path, harness_sha: str | None, log) -> None:
    """One small task on the partition before any array: the results folder must be the one the
    submit host sees, the runner's Python must start, and the program must run (`--version`:
    a missing library fails it) and be this build."""
    program = plan_program(plan)
    token = results_dir / "slurm" / f".probe-{secrets.token_hex(8)}"
    token.parent.mkdir(parents=True, exist_ok=True)
    token.write_text(token.name)
    # The arrays' own allocation options (a constraint, an account, a whole node): the probe
    # lands on the kind of node the runs will.
    argv = ["srun", "--job-name=cdsbench-probe", "--nodes=1", "--ntasks=1", "--time=5", "--quiet"]
    if options.partition:
        argv.append(f"--partition={options.partition}")
    if options.exclusive:
        argv.append("--exclusive")
    argv += options.sbatch_args
    argv += [sys.executable, "-m", "cdsbench.slurm", "probe", str(token), program or "", harness_sha or ""]
    log(f"run: probing partition {options.partition or '(default)'} with one task (it waits in the queue "
        f"like the runs will)")
    try:
        p = slurm(*argv, check=False, timeout_s=None)
    finally:
        token.unlink(missing_ok=True)
    if p.returncode == 0:
        return
    text = (p.stdout + p.stderr).strip()
    lines = [line for line in text.splitlines() if line.strip()]
    problem = next((line for line in lines if line.startswith("probe:")), None)
    if problem is None and ("No such file" in text or "execve" in text):
        problem = (f"probe: the runner's Python {sys.executable} does not start there: the nodes need the "
                   f"submit host's filesystem view of the repository and its .venv")
    raise UsageError(f"--executor slurm: the probe task failed: "
                     + (problem[len("probe: "):] if problem else (lines[-1] if lines else f"exit {p.returncode}")))


def probe_main(token: str, program: str, expected_sha: str) -> int:
    """The probe task, on a node: one line `probe: ...` naming what is wrong, exit 1; else exit 0."""
    host = socket.gethostname()
    t = Path(token)
    if not t.is_file() or t.read_text() != t.name:
        print(f"probe: node {host} does not see {t.parent.parent} (allowed: a results folder on a filesystem "
              f"shared with the nodes, e.g. --results /shared/path)")
        return 1
    if program:
        try:
            p = subprocess.run([program, "--version"], capture_output=True, text=True, timeout=60)
        except OSError as e:
            print(f"probe: node {host} cannot run {program}: {e.strerror or e}")
            return 1
        missing = re.search(r"error while loading shared libraries: (\S+?):", p.stderr)
        if missing:
            print(f"probe: node {host} cannot run {program}: the library {missing.group(1)} is missing there "
                  f"(allowed: nodes with the build machine's userland, README \"On a Slurm cluster\")")
            return 1
        if p.returncode != 0:
            print(f"probe: node {host}: `{program} --version` exited {p.returncode}: "
                  + (p.stderr.strip().splitlines() or [""])[-1])
            return 1
        if expected_sha and fingerprint(program) != expected_sha:
            print(f"probe: node {host} sees another build of {program} than the submit host")
            return 1
    return 0


def time_limit_minutes(timeout_s: float) -> int:
    # The run's own timeout, then a margin for the task's start and its files: Slurm's limit
    # ends only a task that hangs outside the program.
    return max(1, math.ceil((timeout_s * 1.1 + 120) / 60))


def submit(todo: list[Run], exp_name: str, runs_dir: Path, state: State, cwd: Path, timeout_s: float,
           json_output: bool, harness_sha: str | None, program: str | None, options: SlurmOptions,
           max_array: int, log) -> list[dict]:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    jobs: list[dict] = []
    for n, first in enumerate(range(0, len(todo), max_array)):
        chunk = todo[first:first + max_array]
        d = state.dir / f"{stamp}-{n}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "runs.json").write_text(json.dumps({
            "runs_dir": str(runs_dir), "cwd": str(cwd), "timeout_s": timeout_s, "json_output": json_output,
            "program": program, "harness_sha256": harness_sha, "runs": [asdict(r) for r in chunk]}, indent=1) + "\n")
        script = d / "task.sh"
        script.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m cdsbench.slurm task "
                          f"{shlex.quote(str(d / 'runs.json'))}\n")
        script.chmod(0o755)
        name = f"cdsbench-{exp_name}-{stamp}-{n}"  # unique: how a runner that stopped mid-sbatch finds it
        array = f"0-{len(chunk) - 1}" + (f"%{options.max_parallel}" if options.max_parallel else "")
        argv = ["sbatch", "--parsable", f"--array={array}", f"--job-name={name}",
                f"--output={d}/%A_%a.out", f"--chdir={cwd}", f"--time={time_limit_minutes(timeout_s)}",
                "--nodes=1", "--ntasks=1"]
        if options.partition:
            argv.append(f"--partition={options.partition}")
        if options.exclusive:
            argv.append("--exclusive")
        if options.max_parallel and jobs:  # K at once over the whole submission: one array after another
            argv.append(f"--dependency=afterany:{jobs[-1]['job_id']}")
        argv += options.sbatch_args + [str(script)]
        entry = {"job_id": None, "name": name, "submitted_at": time.strftime("%Y-%m-%dT%H:%M:%S"), "dir": str(d),
                 "harness_sha256": harness_sha, "keys": [r.key for r in chunk]}
        state.set_jobs(state.jobs + [entry])  # before sbatch: a runner stopped meanwhile finds it by name
        entry["job_id"] = slurm(*argv).stdout.strip().split(";")[0]
        state.set_jobs([j if j["name"] != name else entry for j in state.jobs])
        jobs.append(entry)
    log(f"run: submitted {len(todo)} runs as {len(jobs)} job array(s) ({', '.join(j['job_id'] for j in jobs)})"
        f"{' on partition ' + options.partition if options.partition else ''}"
        f"{', whole nodes' if options.exclusive else ', nodes shared'}")
    return jobs


def wait(jobs: list[dict], runs_dir: Path, total: int, options: SlurmOptions, accounting: bool, log,
         console=None) -> dict[str, TaskState]:
    """Until the cluster holds no task of these arrays, showing how many are done, running, pending.
    Without accounting, returns how the tasks that left the queue ended, read as they left
    (scontrol forgets a job MinJobAge after it ends)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    keys = [k for j in jobs for k in j["keys"]]
    ids = [j["job_id"] for j in jobs]
    ended: dict[str, TaskState] = {}
    before: set[str] | None = None

    def queued_now():
        failing_since = None
        while True:
            try:
                return queued_tasks(ids)
            except UsageError as e:  # a controller that does not answer for a while does not end a long wait
                failing_since = failing_since or time.monotonic()
                if time.monotonic() - failing_since > 600:
                    raise
                log(f"slurm: {e} (trying again)")
                time.sleep(options.poll_s)

    def look():
        nonlocal before
        queued = queued_now()
        if not accounting and before is not None and before - set(queued):
            ended.update(ended_tasks(ids, False))
        before = set(queued)
        running = sum(1 for s in queued.values() if s != "PENDING")
        done = sum(1 for k in keys if (runs_dir / k / "run.json").is_file())
        return queued, done, running, len(queued) - running

    console = console or Console(stderr=True)
    if console.is_terminal:
        with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TextColumn("elapsed"), TimeElapsedColumn(), console=console) as progress:
            task = progress.add_task("slurm", total=total)
            while True:
                queued, done, running, pending = look()
                progress.update(task, completed=done, description=f"slurm: {running} running, {pending} pending")
                if not queued:
                    return ended
                time.sleep(options.poll_s)
    last = None
    while True:
        queued, done, running, pending = look()
        if (done, running, pending) != last:
            log(f"slurm: {done}/{total} done, {running} running, {pending} pending")
            last = (done, running, pending)
        if not queued:
            return ended
        time.sleep(options.poll_s)


def sweep(plan: Plan, results_dir: Path, exp_name: str, cwd: Path, timeout_s: float, json_output: bool,
          options: SlurmOptions, log=print, console=None) -> SweepResult:
    """The Slurm executor's run step: waits for arrays submitted before, settles them, submits
    what is not done, and (unless --no-wait) waits for it and settles it."""
    runs_dir = results_dir / "runs"
    state = State(results_dir)
    conf = cluster_config()
    accounting = has_accounting(conf)
    max_array = int(conf.get("MaxArraySize", "1001"))
    start = time.monotonic()

    old_int = signal.signal(signal.SIGINT, raise_interrupted)  # the arrays go on: the same command waits
    old_term = signal.signal(signal.SIGTERM, raise_interrupted)
    try:
        earlier, seen = resolve_submissions(state), {}
        if earlier:
            queued = queued_tasks([j["job_id"] for j in earlier])
            if queued and not options.wait:
                log(f"run: {len(queued)} runs submitted before are still queued or running; nothing submitted")
                return SweepResult(len(plan.runs), 0, 0, {}, time.monotonic() - start)
            if queued:
                log(f"run: waiting for {len(queued)} runs submitted before")
                seen = wait(earlier, runs_dir, sum(len(j["keys"]) for j in earlier), options, accounting, log, console)
        settle(plan, runs_dir, state, accounting, cwd, timeout_s, json_output, log, seen)
        todo, harness_sha = runs_to_do(plan, runs_dir, log)
        lost = state.lost
        if lost:
            log(f"run: {sum(1 for r in todo if r.key in lost)} of them lost on the cluster before, submitted again")
        if not todo:
            return SweepResult(len(plan.runs), len(plan.runs), 0, {}, time.monotonic() - start)
        probe(plan, options, results_dir, harness_sha, log)
        jobs = submit(todo, exp_name, runs_dir, state, cwd, timeout_s, json_output, harness_sha, plan_program(plan),
                      options, max_array, log)
        if not options.wait:
            log("run: --no-wait: the runs land in the results folder as they finish; "
                "`run --executor slurm` again waits for the rest and settles them")
            return SweepResult(len(plan.runs), len(plan.runs) - len(todo), 0, {}, time.monotonic() - start)
        seen = wait(jobs, runs_dir, len(todo), options, accounting, log, console)
        settle(plan, runs_dir, state, accounting, cwd, timeout_s, json_output, log, seen)
    finally:
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGTERM, old_term)
    by_status: dict[str, int] = {}
    ran = 0
    for r in todo:
        rec = runs_dir / r.key / "run.json"
        if rec.is_file():
            s = json.loads(rec.read_text())["status"]
            by_status[s] = by_status.get(s, 0) + 1
            ran += 1
    return SweepResult(len(plan.runs), len(plan.runs) - len(todo), ran, by_status, time.monotonic() - start)


# ---- on the node ----------------------------------------------------------------------------
def task_main(manifest_path: str) -> int:
    """One array task: the run SLURM_ARRAY_TASK_ID of the manifest, executed and recorded as the
    local executor does. A program that is not the planned build is recorded as an error run."""
    m = json.loads(Path(manifest_path).read_text())
    run = Run(**m["runs"][int(os.environ["SLURM_ARRAY_TASK_ID"])])
    runs_dir, cwd = Path(m["runs_dir"]), Path(m["cwd"])
    if run_dir_done(runs_dir, run):  # a task started twice (requeued) finds its run done
        return 0
    expected = m["harness_sha256"]
    if m["program"] and fingerprint(m["program"]) != expected:
        record_unexecuted(run, runs_dir, cwd, m["timeout_s"], m["json_output"], expected, "error",
                          f"cdsbench-run: {m['program']} on {socket.gethostname()} is not the build the runs "
                          f"were planned with (sha256 {fingerprint(m['program'])}, planned {expected})\n")
        return 0
    execute(run, runs_dir, cwd, m["timeout_s"], m["json_output"], expected)
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["task"] and len(argv) == 2:
        return task_main(argv[1])
    if argv[:1] == ["probe"] and len(argv) == 4:
        return probe_main(*argv[1:])
    print("usage: python -m cdsbench.slurm task RUNS.json | probe TOKEN PROGRAM SHA256 "
          "(the Slurm executor's tasks; see cdsbench-run --executor slurm)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
