"""Node Replication and the black-box baselines: the benchmark grid of issue 8 (`make bench-nr`,
which writes docs/results-nr.md).

Every black-box structure of the registry (each method over each sequential structure: NR, SL,
RWL, FC, FC+, and LF where there is one) x update ratio {0, 10, 100}% x threads {1, 2, 4}, NR
with 1 and 2 virtual replicas; each point 5 trials of 200 ms, each its own harness process; plus
the memory each method uses. About 15 to 20 minutes on 2 cores.

The environment shrinks it (lists are comma-separated):

    CDSBENCH_NR_STRUCTURES=stack,sorted_set   these sequential structures only
    CDSBENCH_NR_THREADS=1,2,4,8,16            these thread counts (1,2,4)
    CDSBENCH_NR_DURATION_MS=100               the measured phase of a trial (200)

and `--trials N` the trials per point.
"""
from cdsbench.experiment import Experiment, Line, env, registered_structures
from cdsbench.markdown import cell, compare, spread_line, table

UPDATES = [0, 10, 100]
# The workload's mapping of add, remove and read for each sequential structure (the paper's
# table, bench/workloads/blackbox/), and its key range: the registry carries neither. A
# sequential structure not named here runs with 1,000,000 keys and its NR entry's description.
KEY_RANGE = {"synthetic": 100_000, "sorted_set": 10_000}
DEFAULT_KEY_RANGE = 1_000_000
MAPPING = {
    "skiplist_pq": "skip-list priority queue: add = insert, remove = delete-min, read = find-min",
    "pairing_heap": "pairing-heap priority queue: add = insert, remove = delete-min, read = find-min",
    "skiplist_dict": "skip-list dictionary, uniform keys: add = insert, remove = erase, read = find",
    "stack": "stack: add = push, remove = pop, read = top",
    "synthetic": "synthetic buffer of {key_range:,} entries, 8 touched per op + one hot: add/remove = update, "
                 "read = read",
    "sorted_set": "Redis 7.0's sorted set of {key_range:,} members: add/remove = ZINCRBY (+d/-d), read = ZRANK",
}
# How the page names the methods (the registry's `method`).
LABELS = {"nr": "NR", "sl": "SL", "rwl": "RWL", "fc": "FC", "fcplus": "FC+", "lf": "LF"}

SEQUENTIAL = env("CDSBENCH_NR_STRUCTURES", [], kind=str)
THREADS = env("CDSBENCH_NR_THREADS", [1, 2, 4], minimum=1)
DURATION_MS = env("CDSBENCH_NR_DURATION_MS", 200, minimum=1)

STRUCTURES = registered_structures(kind="black_box", where=lambda s: not SEQUENTIAL or s["sequential"] in SEQUENTIAL)


def key_range(sequential):
    return KEY_RANGE.get(sequential, DEFAULT_KEY_RANGE)


def options(p):
    entry = STRUCTURES.entry(p["ds"])
    o = {"ds": p["ds"], "threads": p["threads"], "key_range": key_range(entry["sequential"]),
         "insert": p["updates"] / 2, "delete": p["updates"] / 2, "duration_ms": DURATION_MS, "pin": "compact"}
    if p["nr_replicas"]:
        o["nr_replicas"] = p["nr_replicas"]
    return o


def not_a_point(p):
    """NR runs with 1 and 2 virtual replicas; the other methods have none (nr_replicas 0)."""
    return (STRUCTURES.entry(p["ds"])["method"] == "nr") != (p["nr_replicas"] > 0)


# ---------------------------------------------------------------------------------------------
# The page


def label(results, point):
    method = results.structures[point.params["ds"]]["method"]
    name = LABELS.get(method, method)
    if point.params["nr_replicas"]:
        n = point.params["nr_replicas"]
        return "%s, %d replica%s" % (name, n, "s" if n > 1 else "")
    return name


def mib(point, column):
    return cell(point, column, lambda v: "%.1f" % (v / 2**20))


def fastest(results, points):
    """The method with the highest median, and those not measurably slower than it."""
    ok = [p for p in points if p is not None and p.status == "ok"]
    if not ok:
        return None, []
    best = max(ok, key=lambda p: p.median("mops"))
    tied = [p for p in ok if p is not best and not compare(best, p, "mops").measurable]
    return best, sorted(tied, key=lambda p: -p.median("mops"))


def page(results):
    m = results.machine
    threads = results.values("threads")
    cpus = m.get("machine_cpus")
    durations = sorted({r["duration_ms"] for r in results.runs if isinstance(r.get("duration_ms"), int)})
    out = []
    w = out.append
    w("Every throughput is the median of %d trial%s of %s ms (each trial its own `cdsbench` process), in"
      % (results.trials, "s" if results.trials != 1 else "", " or ".join(map(str, durations)) or "?"))
    w("million operations per second over all threads; every trial passed its validation (multiset")
    w("checksum; for NR every replica brought up to date and compared equal). Threads pinned")
    w("`compact`; update ratio r means `--insert r/2 --delete r/2` (add and remove), reads are the rest.")
    w("")
    w("## The machine, and what it can and cannot show")
    w("")
    w("- The machine may be shared with other work, so absolute numbers are noisy; compare methods")
    w("  within one table (measured side by side in this one sweep), not across sweeps.")
    if m.get("machine_numa_nodes") == 1:
        w("- **One NUMA node.** Node Replication exists to avoid cross-node traffic: one replica per")
        w("  node, threads of a node combine locally and touch the shared log once per batch, reads")
        w("  stay on local memory. On one node there is no remote memory to avoid, so that advantage")
        w("  cannot show here. `--nr-replicas 2` splits the threads into two *virtual* nodes on the same")
        w("  socket: every update is then executed twice (once per replica), which costs CPU; in")
        w("  exchange a replica's readers wait only for their own node's combiner. With one thread and")
        w("  two replicas the second replica has no thread and is kept up to date by the updater")
        w("  whenever the log fills (the idle-replica rule): pure overhead.")
    over = [t for t in threads if cpus and t > cpus]
    if over:
        w("- **%s CPUs.** With %s threads the machine is oversubscribed: threads are preempted inside"
          % (cpus, " and ".join(map(str, over))))
        w("  critical sections and while combining, so those columns measure scheduling as much")
        w("  as synchronization. Flat combining and NR batch well only when several threads post")
        w("  operations at once, which few cores rarely give them (see the mean batch sizes).")
    w("")

    cols = [(u, t) for u in UPDATES for t in threads]
    nr_wins = {u: [0, 0, 0] for u in UPDATES}        # NR measurably fastest, tied with the fastest, columns
    two_vs_one = {u: [0, 0, 0, 0] for u in UPDATES}  # 2 replicas measurably faster, slower, no difference, columns
    sequentials = list(dict.fromkeys(results.structures[ds]["sequential"] for ds in results.values("ds")))
    for seq in sequentials:
        names = [ds for ds in results.values("ds") if results.structures[ds]["sequential"] == seq]
        rows = [p for p in results.points(ds=names, updates=UPDATES[0], threads=threads[0])]
        keys = [(p.params["ds"], p.params["nr_replicas"]) for p in rows]
        nr_entry = next((results.structures[n] for n in names if results.structures[n]["method"] == "nr"), None)
        kr = key_range(seq)
        if seq in MAPPING:
            what = MAPPING[seq].format(key_range=kr)
        else:
            what = (nr_entry or results.structures[names[0]])["description"]
        prefill = next((p.median("prefill_target_size") for p in results.points(ds=names)
                        if p.median("prefill_target_size") is not None), None)
        w("## %s" % seq)
        w("")
        w("%s; key range %s; prefill %s items." % (what, "{:,}".format(kr),
                                                   "{:,}".format(int(prefill)) if prefill is not None else "?"))
        w("")

        def point(key, u, t):
            return results.point(ds=key[0], nr_replicas=key[1], updates=u, threads=t)

        body = []
        for key, first in zip(keys, rows):
            body.append([label(results, first)] + [cell(point(key, u, t), "mops", "%.2f") for u, t in cols])
        best_row = []
        for u, t in cols:
            best, tied = fastest(results, [point(key, u, t) for key in keys])
            if best is None:
                best_row.append("*—*")
                continue
            names_shown = "; ".join(label(results, p) for p in [best] + tied)  # labels hold commas
            best_row.append("*%s*" % names_shown if not tied else "*%s (no measurable difference)*" % names_shown)
            is_nr = [results.structures[p.params["ds"]]["method"] == "nr" for p in [best] + tied]
            nr_wins[u][2] += 1
            if not tied and is_nr[0]:
                nr_wins[u][0] += 1
            elif tied and any(is_nr):
                nr_wins[u][1] += 1
            if t > 1 and nr_entry is not None:
                c = compare(results.point(ds=nr_entry["name"], nr_replicas=2, updates=u, threads=t),
                            results.point(ds=nr_entry["name"], nr_replicas=1, updates=u, threads=t), "mops")
                if c is not None:
                    two_vs_one[u][{1: 0, -1: 1, 0: 2}[c.sign]] += 1
                    two_vs_one[u][3] += 1
        body.append(["*fastest*"] + best_row)
        w(table(["method"] + ["%d%% upd, %dT" % c for c in cols], body))
        w("")
        w(spread_line([(point(key, u, t), "%s, %d%% upd, %dT" % (label(results, first), u, t))
                       for key, first in zip(keys, rows) for u, t in cols], "mops"))
        w("")
        mem_u, mem_t = (10 if 10 in UPDATES else UPDATES[0]), threads[-1]
        w("Memory (median over trials, %d%% updates, %d threads): what the method holds (structure," % (mem_u, mem_t))
        w("locks, slots); for NR the log and the replicas (with their locks and combining slots) apart.")
        w("")
        mem = []
        for key, first in zip(keys, rows):
            p = point(key, mem_u, mem_t)
            if key[1]:
                mem.append([label(results, first), mib(p, "structure_memory_bytes"), mib(p, "nr_log_bytes"),
                            mib(p, "nr_replica_bytes"), cell(p, "nr_log_wraps", "%d"), cell(p, "nr_avg_batch", "%.2f")])
            else:
                mem.append([label(results, first), mib(p, "structure_memory_bytes"), "", "", "", ""])
        w(table(["method", "total MiB", "NR log MiB", "NR replicas MiB", "NR log wraps", "NR mean batch"], mem))
        w("")

    w("## Summary of this sweep (computed from the tables)")
    w("")
    for u in UPDATES:
        won, tied, n = nr_wins[u]
        faster, slower, same, m2 = two_vs_one[u]
        w("- %d%% updates: NR (1 or 2 replicas) is measurably the fastest method in %d of %d columns, and among"
          % (u, won, n))
        w("  the fastest (no measurable difference) in %d more; with 2+ threads, 2 virtual replicas are" % tied)
        w("  measurably faster than 1 in %d of %d, measurably slower in %d, no measurable difference in %d."
          % (faster, m2, slower, same))
    w("")
    w("## What each method does with reads and updates")
    w("")
    w("- Reads: RWL, FC+ and NR run them in parallel (NR on the local replica under the distributed")
    w("  readers-writer lock, after waiting for `completedTail`); SL and FC serialize them with the")
    w("  updates; LF reads the top with one protected load.")
    w("- Updates: every method but LF serializes them. FC and NR amortize the lock (and NR the log")
    w("  append) over a batch when several threads post at once; NR additionally writes each update")
    w("  to the log and executes it once per replica.")
    w("- Memory: NR holds its log plus one structure per replica, so with 2 replicas about twice the")
    w("  others' structure; LF's nodes carry the reclaimer's header and its limbo lists.")
    w("- The *fastest* row names the method with the highest median in each column when it is")
    w("  measurably faster than every other (the 95% bootstrap interval of the ratio of medians")
    w("  excludes 1); otherwise it names it with every method whose difference from it is not")
    w("  measurable on this machine.")
    w("")
    return "\n".join(out)


EXPERIMENT = Experiment(
    title="Node Replication and the black-box baselines: results",
    description="Issue 8: every black-box method over every sequential structure, NR with 1 and 2 virtual "
                "replicas; see the docstring of experiments/nr.py.",
    grid={"ds": STRUCTURES, "nr_replicas": [0, 1, 2], "updates": UPDATES, "threads": THREADS},
    exclude=[not_a_point],
    trials=5,
    seed=8,
    options=options,
    derived={"mops": "throughput_ops_per_s / 1e6"},
    plots=[Line(x="threads", y="mops", series="ds", facets=["blackbox_structure", "updates"], logy=True,
                where=lambda r: r["nr_replicas"] != 2,
                title="Throughput by threads (Mops/s, all threads; NR with 1 replica)")],
    timeout_s=120,
    page=page,
)
