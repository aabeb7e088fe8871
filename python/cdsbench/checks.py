"""Warnings: everything about the results a reader must not miss.

A warning has a category, a message, and the run or grid point it is about. The categories, in
the order the report shows them:
"""
from __future__ import annotations

import math

from .experiment import Experiment, MissingColumn, format_value
from .parse import SENTINELS

CATEGORIES = {
    "failed_run": ("Failed runs",
                   "Runs that timed out, crashed, were refused by the harness or gave unreadable output. "
                   "They are kept (status and stderr) but give no numbers."),
    "validation": ("Validation failures",
                   "Runs that broke a validation rule of the experiment (the harness's own check included): "
                   "their numbers are not to be trusted."),
    "prefill": ("Prefill not converged",
                "The structure did not reach its steady-state size before the prefill timeout."),
    "oversubscribed": ("Oversubscription",
                       "More threads than CPUs: threads wait for a CPU, so the run measures the scheduler too."),
    "cv": ("Noisy points",
           "Grid points whose trials vary by more than the experiment's threshold "
           "(coefficient of variation = standard deviation / mean): more trials or a quieter machine."),
    "unfair_threads": ("Unfair threads",
                       "The slowest update thread ran at less than the experiment's threshold of the fastest: "
                       "the throughput hides starvation."),
    "harness_warning": ("Other harness warnings", "warning= lines of the harness output."),
    "parameter": ("Parameter mismatches",
                  "A grid parameter and the harness's report of it disagree: the command line is not what was meant."),
    "derived": ("Derived column errors", "A derived column could not be computed for a run that succeeded."),
    "output": ("Output problems", "Runs whose output had lines or parts the parser could not read."),
    "missing_runs": ("Runs not done", "Planned runs that have not run yet: run the run step to finish the sweep."),
    "stale": ("Runs of another build", "Runs made by a harness binary other than the current one."),
    "mixed_machines": ("Points measured on machines of several kinds",
                       "A grid point whose runs ran on machines of different kinds (CPU model, cores, NUMA nodes, "
                       "memory): its median and spread mix them. Pick one kind of node (e.g. --sbatch-arg=--constraint=X)."),
    "plot": ("Plots not drawn", "A plot of the experiment found no data to draw."),
}


def warning(category: str, message: str, run_key=None, point_id=None) -> dict:
    assert category in CATEGORIES, category
    return {"category": category, "message": message, "run_key": run_key, "point_id": point_id}


def machine_kind(row: dict) -> str | None:
    """What must be equal for two machines' numbers to be one sample: CPU model, cores, NUMA
    nodes and memory (GiB to two significant figures: two nodes of one kind differ by what
    their kernels reserve)."""
    if row.get("machine_cpu_model") is None:
        return None
    memory = _num(row.get("machine_memory_bytes"))
    gib = round(memory / 2**30, 1 - math.floor(math.log10(memory / 2**30))) if memory else None
    return (f"{row['machine_cpu_model']}, {row.get('machine_cores')} cores, {row.get('machine_numa_nodes')} NUMA node(s)"
            + (f", {gib:g} GiB" if gib else ""))


def by_machine_kind(runs: list[dict]) -> dict[str, list[dict]]:
    """Runs (rows with run_machine_kind) grouped by the kind of machine they ran on."""
    kinds: dict[str, list[dict]] = {}
    for r in runs:
        if r.get("run_machine_kind"):
            kinds.setdefault(r["run_machine_kind"], []).append(r)
    return kinds


def mixed_machines(runs: list[dict]) -> str | None:
    """The warning's message when a point's runs (rows with run_machine_kind and run_host) ran on
    machines of more than one kind, else None."""
    kinds = by_machine_kind(runs)
    if len(kinds) < 2:
        return None
    return f"runs on {len(kinds)} kinds of machine: " + "; ".join(
        f"{kind} ({len(rs)} runs, on {', '.join(sorted({str(r.get('run_host')) for r in rs}))})"
        for kind, rs in sorted(kinds.items()))


def rule_namespace(row: dict) -> dict:
    """A row for rules and derived columns: the harness's "no number here" words are None."""
    return {k: (None if isinstance(v, str) and v in SENTINELS else v) for k, v in row.items()}


def evaluate_rule(rule, row: dict) -> str | None:
    """None when the rule holds, else the message of the failure."""
    ns = rule_namespace(row)
    try:
        ok = rule(ns)
    except MissingColumn as e:
        return f"rule `{rule.text}` could not be checked: no column {e.args[0]!r} in this run"
    except Exception as e:  # noqa: BLE001 (a rule over odd values fails, it does not stop the report)
        return f"rule `{rule.text}` could not be checked: {type(e).__name__}: {e}"
    if ok:
        return None
    shown = [f"{n}={format_value(row[n]) if row.get(n) is not None else 'none'}" for n in rule.names if n in row]
    return f"rule `{rule.text}` failed" + (f" ({', '.join(shown)})" if shown else "")


def _num(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def check_run(exp: Experiment, key: str, point_id: int, status: str, output, row: dict, stderr: str) -> list[dict]:
    out = []

    def add(category, message):
        out.append(warning(category, message, run_key=key, point_id=point_id))

    validation_fail = row.get("validation") == "FAIL"
    prefill_fail = row.get("prefill_converged") is False
    if status != "ok" and not (status == "failed" and (validation_fail or prefill_fail)):
        last = [l for l in stderr.strip().splitlines() if l.strip()][-1:] or [""]
        detail = f": {last[0][:200]}" if last[0] else ""
        code = row.get("run_exit_code")
        add("failed_run", f"{status} (exit {'none' if code is None else code}){detail}")
    if not output.has_trial or status not in ("ok", "failed"):
        return out  # no whole trial, no numbers to check: the failed run says it all
    for rule in exp.rules:
        msg = evaluate_rule(rule, row)
        if msg:
            if validation_fail and rule.text.replace(" ", "") == 'validation=="PASS"':
                msg += f": {row.get('validation_error', 'no reason given')}"
            add("validation", msg)
    if prefill_fail:
        limit = f" (timeout {format_value(row['prefill_timeout_ms'])} ms)" if "prefill_timeout_ms" in row else ""
        add("prefill", f"prefill reached {row.get('prefill_size', '?')} of {row.get('prefill_target_size', '?')} keys "
                       f"in {format_value(row.get('prefill_time_ms', '?'))} ms{limit}")
    over = [w for w in output.warnings if "oversubscri" in w]
    threads = (_num(row.get("threads")) or 0) + (_num(row.get("rq_threads")) or 0)
    cpus = _num(row.get("machine_cpus"))
    if over:
        add("oversubscribed", over[0])
    elif cpus and threads > cpus:
        add("oversubscribed", f"{threads} threads on {cpus} CPUs")
    for w in output.warnings:
        if "oversubscri" not in w:
            add("harness_warning", w)
    lo, hi = _num(row.get("thread_throughput_min_ops_per_s")), _num(row.get("thread_throughput_max_ops_per_s"))
    if lo is not None and hi and lo / hi < exp.fairness_threshold:
        add("unfair_threads", f"the slowest update thread ran at {100 * lo / hi:.0f}% of the fastest "
                              f"({lo:,.0f} vs {hi:,.0f} ops/s; threshold {100 * exp.fairness_threshold:.0f}%)")
    if status == "ok" and output.problems:
        add("output", "; ".join(output.problems))
    return out


def param_mismatches(point: dict, output_row: dict) -> list[str]:
    msgs = []
    for name, value in point.items():
        if name not in output_row:
            continue
        got = output_row[name]
        same = (float(value) == float(got) if _num(value) is not None and _num(got) is not None
                else format_value(value) == format_value(got))
        if not same:
            msgs.append(f"parameter {name}={format_value(value)} but the harness reported {name}={format_value(got)}")
    return msgs
