#!/usr/bin/env python3
"""A stand-in for build/cdsbench in the runner's tests: prints the harness's output layout
(docs/output.md) and misbehaves on request, in milliseconds.

    fake_harness.py --mode MODE [--ds NAME] [--threads N] [--value OPS_PER_S] [--sleep S]
                    [--counter FILE] [--json FILE]

Modes: ok, newkey (keys the real harness does not print yet), fail-validation, prefill-timeout,
usage (exit 2), hang (sleeps until killed), crash (SIGSEGV half-way), garbage (binary, exit 0),
truncated (output cut mid-line, exit 0), oversub (a warning= line), unfair (slowest thread at
20%), noisy (throughput 100, 10, 200, ... from a counter file), collide (a trial key named like
a summary key).
"""
import argparse
import json
import os
import signal
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--mode", default="ok")
ap.add_argument("--ds", default="fake_set")
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--value", type=float, default=1000.0)
ap.add_argument("--sleep", type=float, default=0.0)
ap.add_argument("--counter")
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--json")
a = ap.parse_args()

if a.mode == "usage":
    print("cdsbench: error: --threads: 'x' is not allowed (allowed: an integer in 1..4096)", file=sys.stderr)
    sys.exit(2)
if a.sleep:
    time.sleep(a.sleep)

value = a.value
if a.mode == "noisy" and a.counter:
    n = int(open(a.counter).read()) if os.path.exists(a.counter) else 0
    open(a.counter, "w").write(str(n + 1))
    value = [100.0, 10.0, 200.0][n % 3]

config = {"ds": a.ds, "threads": a.threads, "rq_threads": 0, "key_range": 1000, "insert_pct": 10.0,
          "delete_pct": 10.0, "duration_ms": 100, "ops": "none", "seed": a.seed, "seed_source": "given",
          "thread_cpus": ["none"] * a.threads, "trials": 1}
machine = {"machine_cpu_model": "Fake CPU", "machine_cpus": 2, "machine_pmu": "unavailable",
           "git_commit": "0" * 40, "compiler": "fake 1.0"}
warnings = []
if a.mode == "oversub":
    config["threads"] = 8
    warnings.append("oversubscribed: 8 threads on 2 CPUs (threads will wait for a CPU)")
lo, hi = value / a.threads, value / a.threads
if a.mode == "unfair":
    lo, hi = value * 0.2, value * 0.8
trial = {"trial": 0, "trial_seed": a.seed, "prefill_time_ms": 1.5, "elapsed_ms": 100.25,
         "total_ops": int(value / 10), "throughput_ops_per_s": value, "ns_per_op_per_thread": 1e9 / value,
         "thread_throughput_min_ops_per_s": lo, "thread_throughput_max_ops_per_s": hi,
         "thread_ops": [int(value / 10)] * a.threads, "cycles": "unavailable", "task_clock_ns": 99000000,
         "prefill": "steady", "prefill_target_size": 500, "prefill_size": 498, "prefill_converged": True,
         "expected_key_sum": 18446744073709551615, "actual_key_sum": 18446744073709551615,
         "invariants": "not provided", "validation": "PASS",
         "latency_histogram_ns": {"search": [[10, 12, 5], [12, 14, 15]], "insert": [[20, 22, 4]]}}
summary = {"trials_run": 1, "validation_failures": 0, "throughput_ops_per_s_median": value, "result": "PASS"}
code = 0
if a.mode == "newkey":
    trial["reclaim_retired"] = 1234
    trial["reclaim_avg_batch"] = 2.5
    trial["reclaim_scheme"] = "ebr"
    trial["reclaim"] = {"freed": 5, "pending": 2}                     # JSON only: an object of scalars
    trial["retire_log2_histogram"] = [[0, 0, 1], [1, 1, 3], [2, 3, 7], [4, 7, 2], [8, 15, 1],
                                      [9223372036854775808, 18446744073709551615, 1]]
    trial["cycles"] = 5000
if a.mode == "collide":
    trial["validation_failures"] = 17  # a structure's counter named like the summary's key
if a.mode == "fail-validation":
    trial["validation"] = "FAIL"
    trial["validation_error"] = "size differs: expected 500, found 499"
    summary = {"trials_run": 1, "validation_failures": 1, "result": "FAIL"}
    code = 1
if a.mode == "prefill-timeout":
    trial["prefill_converged"] = False
    trial["prefill_size"] = 120
    trial["validation"] = "FAIL"
    trial["validation_error"] = "prefill did not converge"
    summary = {"trials_run": 1, "validation_failures": 1, "result": "FAIL"}
    code = 1


def text(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return ",".join(text(x) for x in v)
    return str(v)


def kv(obj):
    return "".join(f"{k}={text(v)}\n" for k, v in obj.items()
                   if not isinstance(v, dict) and not (isinstance(v, list) and v and isinstance(v[0], list)))


out = kv(config) + kv(machine) + "".join(f"warning={w}\n" for w in warnings) + kv(trial) + kv(summary)
if a.mode == "hang":
    sys.stdout.write(kv(config))
    sys.stdout.flush()
    time.sleep(600)
if a.mode == "crash":
    sys.stdout.write(out[: len(out) // 2])
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGSEGV)
if a.mode == "garbage":
    sys.stdout.buffer.write(b"\x00\xff\xfe garbage \x89PNG\r\n\x1a\n no key here\n")
    sys.exit(0)
if a.mode == "truncated":
    sys.stdout.write(out[: out.index("throughput_ops_per_s=") + 25])  # ends mid-line, before the summary
    sys.exit(0)
sys.stdout.write(out)
if a.json:
    with open(a.json, "w") as f:
        json.dump({"config": config, "machine": machine, "warnings": warnings, "trials": [trial], "summary": summary},
                  f, indent=2)
sys.exit(code)
