"""The Slurm executor's long tests, outside `make test` for time (Slurm's time limit is in whole
minutes and enforced every 30 s: about 4 minutes): a task Slurm stops at its time limit is
recorded as a timeout run, as the local executor records a run past the experiment's timeout,
not lost; also on a cluster without accounting whose controller forgot the task before the run
step looked (after --no-wait), from the task's Slurm log."""
import json
import pathlib
import sys
import time

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "python"))
from runner_support import fake_experiment, runner  # noqa: E402
from slurm_cluster import LocalSlurm  # noqa: E402
from test_runner_slurm import slurm_env, statuses  # noqa: E402
from test_runner_sweep import done_runs  # noqa: E402


@pytest.fixture
def cluster(tmp_path_factory, request):
    with LocalSlurm(tmp_path_factory.mktemp("slurm"), accounting=request.param) as c:
        yield c


@pytest.mark.parametrize("cluster", [True], indirect=True, ids=["accounting"])
def test_a_task_stopped_at_slurms_time_limit_is_a_timeout_run_as_the_local_executor_records(cluster, tmp_path):
    exp = fake_experiment(tmp_path, {"mode": ["hang"], "ds": ["a"]}, extra="timeout_s=300,")
    results = tmp_path / "results"
    p = runner(exp, "run", "database", "--executor", "slurm", "--sbatch-arg=--time=1", "--results", results,
               env=slurm_env(cluster))
    assert p.returncode == 0, p.stdout + p.stderr
    assert [r["run_status"] for r in statuses(results)] == ["timeout"]
    (run,) = done_runs(results / "exp" / "runs")
    assert "TIMEOUT" in (run / "stderr.txt").read_text() and json.loads((run / "run.json").read_text())["timed_out"]
    assert json.loads((results / "exp" / "slurm" / "lost.json").read_text()) == {}


@pytest.mark.parametrize("cluster", [False], indirect=True, ids=["no-accounting"])
def test_a_forgotten_task_past_its_time_limit_is_read_from_its_log(cluster, tmp_path):
    exp = fake_experiment(tmp_path, {"mode": ["hang"], "ds": ["a"]}, extra="timeout_s=300,")
    results = tmp_path / "results"
    p = runner(exp, "run", "--executor", "slurm", "--no-wait", "--sbatch-arg=--time=1", "--results", results,
               env=slurm_env(cluster))
    assert p.returncode == 0, p.stdout + p.stderr
    (job,) = json.loads((results / "exp" / "slurm" / "jobs.json").read_text())
    deadline = time.monotonic() + 300
    while "Invalid job id" not in cluster.run("scontrol", "show", "job", job["job_id"], check=False).stderr:
        assert time.monotonic() < deadline, "the controller never forgot the job"
        time.sleep(2)
    p = runner(exp, "run", "database", "--executor", "slurm", "--results", results, env=slurm_env(cluster))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "0 to run" in p.stdout
    assert [r["run_status"] for r in statuses(results)] == ["timeout"]
