"""The Slurm executor (`cdsbench-run --executor slurm`) on a real single-node Slurm (munge,
slurmctld, slurmd, and slurmdbd over MariaDB where accounting is tested), started by these tests
on free ports of 127.0.0.1 and stopped after them: arrays split at MaxArraySize, a task killed
with kill -9 and a pending one cancelled with scancel run again by the next run step, and the
database then equal to the local executor's; job states from sacct, and from squeue and
scontrol without accounting; the probe's refusal of a node that lacks a library. A task stopped
at Slurm's time limit is tests/long's (Slurm's limit is in minutes, checked every 30 s)."""
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from conftest import BUILD
from runner_support import db, fake_experiment, rows, runner, write_experiment
from slurm_cluster import LocalSlurm
from test_runner_sweep import done_runs, processes_mentioning

SLEEPY = {"mode": ["ok", "fail-validation"], "ds": ["a", "b", "c", "d"], "sleep": [1]}  # 8 runs, 2 statuses


@pytest.fixture(scope="class")
def cluster(tmp_path_factory, request):
    with LocalSlurm(tmp_path_factory.mktemp("slurm"), accounting=request.param, max_array_size=4) as c:
        yield c


def slurm_env(cluster):
    return dict(cluster.env(), CDSBENCH_SLURM_POLL_S="0.3")


def start_runner(exp, results, cluster, *args):
    log = open(results.parent / "runner.log", "w")
    return subprocess.Popen([sys.executable, "-m", "cdsbench", str(exp), "run", "--executor", "slurm",
                             "--results", str(results), *args], stdout=log, stderr=subprocess.STDOUT,
                            env=dict(slurm_env(cluster), CDSBENCH_BUILD=str(BUILD)))


def queued(cluster):
    out = cluster.run("squeue", "-h", "-r", "-o", "%i %T").stdout.split("\n")
    return dict(line.split() for line in out if line.strip())


def running_task_pid(results, limit=60):
    """The pid of a running array task (`python -m cdsbench.slurm task ...`): the parent of a
    run's program (a forked child shows its parent's command line until it executes its own)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        for pid in processes_mentioning(str(results)):
            try:
                parent = int(pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
                if b"cdsbench.slurm\0task" in pathlib.Path(f"/proc/{parent}/cmdline").read_bytes():
                    return parent
            except (OSError, ValueError, IndexError):
                pass
        time.sleep(0.02)
    raise AssertionError("no array task started")


def statuses(results):
    return rows(db(results), "SELECT run_key, run_status FROM runs ORDER BY run_key")


def settle_and_compare(exp, results, cluster, tmp_path, lost_states):
    """After the first run step: lost.json names the lost tasks; the next run step submits
    exactly those again; the database then equals the local executor's."""
    lost = json.loads((results / "exp" / "slurm" / "lost.json").read_text())
    assert sorted(v["state"].split()[0] for v in lost.values()) == sorted(lost_states)
    for v in lost.values():  # a task that started has its Slurm log; one cancelled while pending, none
        assert (v["log"] is not None and os.path.isfile(v["log"])) == (v["state"] != "NO_RECORD"), v
    assert len(done_runs(results / "exp" / "runs")) == 8 - len(lost)

    p = runner(exp, "run", "database", "--executor", "slurm", "--results", results, env=slurm_env(cluster))
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"{len(lost)} to run" in p.stdout and f"submitted {len(lost)} runs as 1 job array(s)" in p.stdout
    assert json.loads((results / "exp" / "slurm" / "lost.json").read_text()) == {}
    assert json.loads((results / "exp" / "slurm" / "jobs.json").read_text()) == []

    local = tmp_path / "local"
    p = runner(exp, "run", "database", "--results", local)
    assert p.returncode == 0, p.stdout + p.stderr
    got, want = statuses(results), statuses(local)
    assert got == want and len(got) == 8
    assert sorted(r["run_status"] for r in got) == ["failed"] * 4 + ["ok"] * 4
    assert rows(db(results), "SELECT DISTINCT run_host FROM runs") == [{"run_host": cluster.node}]


@pytest.mark.parametrize("cluster", [True], indirect=True, ids=["accounting"])
class TestWithAccounting:
    def test_a_killed_and_a_cancelled_task_run_again_and_the_database_equals_the_local_one(self, cluster, tmp_path):
        exp = fake_experiment(tmp_path, SLEEPY)
        results = tmp_path / "results"
        proc = start_runner(exp, results, cluster)
        os.kill(running_task_pid(results), signal.SIGKILL)
        pending = sorted(t for t, s in queued(cluster).items() if s == "PENDING")
        assert pending, "every task started at once: nothing pending to cancel"
        cluster.run("scancel", pending[-1])
        assert proc.wait(120) == 0, (tmp_path / "runner.log").read_text()
        log = (tmp_path / "runner.log").read_text()
        assert "submitted 8 runs as 2 job array(s)" in log  # MaxArraySize 4
        assert "2 runs ended without a result by the cluster's doing" in log
        settle_and_compare(exp, results, cluster, tmp_path, ["FAILED", "NO_RECORD"])  # none for a pending one

    def test_no_wait_returns_at_once_and_a_later_run_step_waits_and_settles(self, cluster, tmp_path):
        exp = fake_experiment(tmp_path, {"mode": ["ok"], "ds": ["a", "b", "c", "d", "e"], "sleep": [1]})
        results = tmp_path / "results"
        env = slurm_env(cluster)
        p = runner(exp, "run", "--executor", "slurm", "--no-wait", "--shared", "--max-parallel", "1",
                   "--results", results, env=env)
        assert p.returncode == 0, p.stdout + p.stderr
        assert "submitted 5 runs as 2 job array(s)" in p.stdout and "--no-wait" in p.stdout
        assert len(queued(cluster)) == 5
        # At most one at once over both arrays (MaxArraySize 4): the second waits for the first.
        first, second = (j["job_id"] for j in json.loads((results / "exp" / "slurm" / "jobs.json").read_text()))
        assert cluster.run("squeue", "-h", "-j", second, "-o", "%E").stdout.split()[0].startswith(f"afterany:{first}")
        # As if the runner had stopped before sbatch answered: the arrays are known by name only.
        jobs_path = results / "exp" / "slurm" / "jobs.json"
        jobs_path.write_text(json.dumps([dict(j, job_id=None) for j in json.loads(jobs_path.read_text())]))
        # Neither the local executor nor a second submission may run them again meanwhile.
        p = runner(exp, "run", "--results", results, env=env)
        assert p.returncode == 2 and "runs of this experiment are queued or running on Slurm" in p.stderr
        p = runner(exp, "run", "--executor", "slurm", "--no-wait", "--results", results, env=env)
        assert p.returncode == 0 and "still queued or running; nothing submitted" in p.stdout
        p = runner(exp, "run", "database", "--executor", "slurm", "--results", results, env=env)
        assert p.returncode == 0, p.stdout + p.stderr
        assert "waiting for 5 runs submitted before" in p.stdout and "0 to run" in p.stdout
        assert [r["run_status"] for r in statuses(results)] == ["ok"] * 5
        # Each run ran once: one task log per run, no second submission.
        assert len(list((results / "exp" / "slurm").glob("*/*.out"))) == 5

    def test_the_probe_names_a_library_the_node_lacks_and_nothing_is_submitted(self, cluster, tmp_path):
        # A real program linked to a library that is then removed: the loader's own failure.
        lib = tmp_path / "libcdsbprobe.so"
        subprocess.run(["gcc", "-shared", "-fPIC", "-x", "c", "-", "-o", str(lib)], input="int f(void){return 0;}",
                       text=True, check=True)
        prog = tmp_path / "harness"
        subprocess.run(["gcc", "-x", "c", "-", "-o", str(prog), f"-L{tmp_path}", "-lcdsbprobe"],
                       input="int f(void); int main(void){return f();}", text=True, check=True)
        lib.unlink()
        exp = write_experiment(tmp_path, f"""
            EXPERIMENT = Experiment(grid={{"x": [1]}}, harness={str(prog)!r}, command=lambda p, harness: [harness])
            """)
        results = tmp_path / "results"
        p = runner(exp, "run", "--executor", "slurm", "--results", results, env=slurm_env(cluster))
        assert p.returncode == 2
        assert "the probe task failed" in p.stderr and "the library libcdsbprobe.so is missing there" in p.stderr
        assert len(p.stderr.strip().splitlines()) == 1
        assert not (results / "exp" / "slurm" / "jobs.json").exists()


@pytest.mark.parametrize("cluster", [False], indirect=True, ids=["no-accounting"])
class TestWithoutAccounting:
    def test_a_killed_task_is_seen_through_scontrol_and_runs_again(self, cluster, tmp_path):
        assert "accounting_storage/none" in cluster.run("scontrol", "show", "config").stdout
        exp = fake_experiment(tmp_path, SLEEPY)
        results = tmp_path / "results"
        proc = start_runner(exp, results, cluster)
        os.kill(running_task_pid(results), signal.SIGKILL)
        assert proc.wait(120) == 0, (tmp_path / "runner.log").read_text()
        assert "1 runs ended without a result by the cluster's doing (1 FAILED" in (tmp_path / "runner.log").read_text()
        settle_and_compare(exp, results, cluster, tmp_path, ["FAILED"])


def test_the_slurm_options_are_usage_errors_elsewhere(tmp_path):
    exp = fake_experiment(tmp_path, {"mode": ["ok"]})
    for args, message in ((["--partition", "p"], "--partition: only with --executor slurm"),
                          (["--no-wait"], "--no-wait: only with --executor slurm"),
                          (["--executor", "pbs"], "--executor: 'pbs' is not allowed (allowed: local, slurm)"),
                          (["--executor", "slurm", "--exclusive", "--shared"], "one of them"),
                          (["--executor", "slurm", "--max-parallel", "0"], "--max-parallel: '0' is not allowed"),
                          (["--executor", "slurm", "--sbatch-arg=--array=0-3"], "--sbatch-arg: '--array=0-3' is not allowed"),
                          (["--executor", "slurm", "--sbatch-arg=-oX"], "--sbatch-arg: '-oX' is not allowed")):
        p = runner(exp, "run", *args, "--results", tmp_path / "results")
        assert p.returncode == 2 and message in p.stderr, (args, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1


def test_the_slurm_executor_needs_the_run_step(tmp_path):
    p = runner(fake_experiment(tmp_path, {"mode": ["ok"]}), "database", "--executor", "slurm")
    assert p.returncode == 2 and "--executor slurm: only with the run step" in p.stderr


def test_the_probe_task_refuses_a_results_folder_the_node_does_not_see(tmp_path):
    p = subprocess.run([sys.executable, "-m", "cdsbench.slurm", "probe", str(tmp_path / "slurm" / ".probe-x"),
                        sys.executable, ""], capture_output=True, text=True)
    assert p.returncode == 1 and "does not see" in p.stdout and "shared with the nodes" in p.stdout
