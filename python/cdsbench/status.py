"""What a run's fate is called, and which build of the program made it: shared by the sweep
(runner.py), the database and the report, so none of them imports another for it."""
from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from .experiment import Plan

STATUSES = ("ok", "failed", "error", "timeout", "crashed", "malformed")
STATUS_MEANING = {
    "ok": "exit 0 and complete output",
    "failed": "exit 1: a trial failed validation or its prefill timed out",
    "error": "exit 2 or another status: the command was refused or could not start",
    "timeout": "killed after the experiment's timeout",
    "crashed": "killed by a signal",
    "malformed": "exit 0 but the output is incomplete or unreadable",
}


def classify(exit_code: int | None, timed_out: bool, complete: bool) -> str:
    if timed_out:
        return "timeout"
    if exit_code is None:
        return "error"
    if exit_code < 0:
        return "crashed"
    if exit_code == 0:
        return "ok" if complete else "malformed"
    if exit_code == 1:
        return "failed"
    return "error"


def fingerprint(path: str | Path) -> str | None:
    """sha256 of the program a run executes (a rebuilt harness makes earlier runs stale)."""
    p = Path(path)
    if not p.is_file():
        found = shutil.which(str(path))
        if not found:
            return None
        p = Path(found)
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def plan_program(plan: Plan) -> str | None:
    """The program whose build the runs depend on: the harness, else the command's first word."""
    if plan.harness is not None and Path(plan.harness).is_file():
        return str(plan.harness)
    return plan.runs[0].argv[0] if plan.runs else None


def plan_fingerprint(plan: Plan) -> str | None:
    program = plan_program(plan)
    return fingerprint(program) if program else None
