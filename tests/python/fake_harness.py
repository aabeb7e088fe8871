#!/usr/bin/env python3
"""A stand-in for build/cdsbench in the runner's tests: prints the harness's output layout
(docs/output.md) and misbehaves on request, in milliseconds.

    fake_harness.py --mode MODE [--ds NAME] [--threads N] [--value OPS_PER_S] [--sleep S]
                    [--counter FILE] [--machine-cores N] [--json FILE] [HARNESS OPTIONS]
    fake_harness.py [--mode MODE] --list [--json FILE]

`--list` prints one line per structure of a small fake registry (first word the name), and with
`--json FILE` writes the same registry as the harness's listing (`{"structures": [...]}`, the
layout of `cdsbench --list --json`); its names follow no convention on purpose (a black-box
structure without a dot, a peer without a library prefix), so a test that selects by name
patterns instead of the listing's data fails. A trial's configuration carries the structure's
`structure_kind`, `structure_library`, `blackbox_method` and `blackbox_structure` (a name not in
the registry reads as one of our ordered sets). HARNESS OPTIONS: --key-range, --insert, --delete,
--duration-ms, --latency-sample, --trials, accepted as the real harness's and echoed in the
configuration. List modes: list-fail (exit 3), list-garbage
(FILE is not JSON), list-nofile (FILE not written), list-layout (JSON without "structures").

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
# Options of the real harness that experiments such as experiments/demo.py pass: reported in the
# configuration like the harness does, otherwise without effect.
ap.add_argument("--key-range", type=int, default=1000)
ap.add_argument("--insert", type=float, default=10.0)
ap.add_argument("--delete", type=float, default=10.0)
ap.add_argument("--duration-ms", type=int, default=100)
ap.add_argument("--latency-sample", type=int, default=0)
ap.add_argument("--trials", type=int, default=1)
ap.add_argument("--list", action="store_true")
ap.add_argument("--machine-cores", type=int, default=2)  # another kind of machine, as a cluster's nodes
a = ap.parse_args()


def structure(name, kind="ordered_set", library="cdsbench", method=None, sequential=None, reclaimers=("ebr", "none"),
              allocators=("system", "segregated"), **more):
    entry = {"name": name, "description": f"fake {kind.replace('_', ' ')} {name}", "kind": kind, "library": library,
             "method": method, "sequential": sequential, "range_queries": False, "concurrent_erase": True,
             "layout": "node 32 B", "model": "set", "known_violation": "", "search_depths": False}
    entry.update(more)
    entry["variants"] = ([{"reclaimer": r, "allocator": allocators[0], "test": True} for r in reclaimers]
                         + [{"reclaimer": reclaimers[0], "allocator": al, "test": True} for al in allocators[1:]])
    return entry


REGISTRY = [
    structure("fake_set"),
    structure("fake_tree", range_queries=True, search_depths=True),
    structure("fake_map", kind="unordered_map", layout="bucket 16 B, node 24 B"),
    structure("fake_queue", kind="queue", model="queue"),
    structure("fake_stack", kind="stack", model="stack"),
    structure("libcds.fake_tree", library="libcds", reclaimers=("hp", "rcu"), allocators=("system",),
              search_depths=False),
    structure("their_map", library="oneTBB", reclaimers=("immediate",), allocators=("system",),
              concurrent_erase=False),
    structure("nr.fake_pq", kind="black_box", method="nr", sequential="fake_pq", reclaimers=("none",),
              allocators=("system",), layout="", model="pq"),
    structure("fc.fake_pq", kind="black_box", method="fc", sequential="fake_pq", reclaimers=("none",),
              allocators=("system",), layout="", model="pq"),
    structure("locked_fake_stack", kind="black_box", method="sl", sequential="fake_stack", reclaimers=("none",),
              allocators=("system",), layout="", model="stack"),
]

if a.list:
    if a.mode == "list-fail":
        print("cdsbench: error: --list: cannot list", file=sys.stderr)
        sys.exit(3)
    for s in REGISTRY:
        reclaimers = ",".join(dict.fromkeys(v["reclaimer"] for v in s["variants"]))
        allocators = ",".join(dict.fromkeys(v["allocator"] for v in s["variants"]))
        layout = f"; {s['layout']}" if s["layout"] else ""
        print(f"{s['name']:<22} {s['description']} [kind: {s['kind']}; reclaimers: {reclaimers}; allocators: {allocators}; "
              f"range queries: {'yes' if s['range_queries'] else 'no'}{layout}]")
    if a.json and a.mode != "list-nofile":
        with open(a.json, "w") as f:
            if a.mode == "list-garbage":
                f.write("{\"structures\": [")
            elif a.mode == "list-layout":
                json.dump({"names": [s["name"] for s in REGISTRY]}, f)
            else:
                json.dump({"structures": REGISTRY}, f, indent=2)
    sys.exit(0)

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

config = {"ds": a.ds, "threads": a.threads, "rq_threads": 0, "key_range": a.key_range, "insert_pct": a.insert,
          "delete_pct": a.delete, "duration_ms": a.duration_ms, "ops": "none", "seed": a.seed, "seed_source": "given",
          "thread_cpus": ["none"] * a.threads, "trials": a.trials}
entry = next((s for s in REGISTRY if s["name"] == a.ds), structure(a.ds))
config.update({"structure_kind": entry["kind"], "structure_library": entry["library"],
               "blackbox_method": entry["method"] or "none", "blackbox_structure": entry["sequential"] or "none"})
machine = {"machine_cpu_model": "Fake CPU", "machine_cpus": a.machine_cores, "machine_cores": a.machine_cores,
           "machine_numa_nodes": 1, "machine_memory_bytes": 8 << 30, "machine_pmu": "unavailable",
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
