"""`make demo`: every registered structure side by side, 1 and 2 threads, 20% updates, 3 trials.

What a newcomer should see first: each family's structures and their peers at the harness's
default mix (10% inserts, 10% deletes), with trials long enough that most points are not noise
(at 100 ms trials, 132 of 292 points of the earlier, wider demo varied by more than 10%). The
structures come from the harness's registry (`cdsbench --list --json FILE`), so a structure
added to the registry joins the demo without an edit here; how the demo treats a structure (its
family, the points the harness refuses) follows the registry's data, never the structure's name.
Each trial lasts 1 s while the whole sweep fits in the demo's budget of about 5 minutes on 2
cores; with more structures registered than that allows, the trials are shortened to fit (never
below 100 ms; about 600 ms with the 49 structures of this writing) and the report says how long
they were. Other mixes, thread counts and oversubscription are the other experiments' business.
CDSBENCH_DEMO_TRIAL_MS=1000 forces 1 s trials whatever it costs. Report: results/demo/index.html.
"""
from cdsbench.experiment import Bar, Experiment, Heatmap, Histogram, Line, env, registered_structures

TRIALS = 3
THREADS = [1, 2]
UPDATES = [20]
BUDGET_S = 230     # the runs' share of 5 minutes (the rest: start, database, plots, report)
OVERHEAD_S = 0.15  # per run besides the measured phase: process start, prefill, validation


def trial_ms(grid) -> int:
    """1000 ms, or less so that every run fits in BUDGET_S."""
    forced = env("CDSBENCH_DEMO_TRIAL_MS", 0, minimum=1)
    if forced:
        return forced
    runs = len(grid["ds"]) * len(grid["threads"]) * len(grid["updates"]) * TRIALS
    ms = int((BUDGET_S / runs - OVERHEAD_S) * 1000) // 50 * 50
    return max(100, min(1000, ms))


STRUCTURES = registered_structures()


def refused(p):
    """A point the harness refuses: a structure without a thread-safe erase (concurrent_erase
    false in the registry, e.g. tbb.concurrent_map: bench/adapters/tbb_sets.hpp) deletes only
    with one thread."""
    return not STRUCTURES.entry(p["ds"])["concurrent_erase"] and p["updates"] > 0 and p["threads"] > 1


def options(p, grid):
    # `updates` is no harness option: half of it inserts, half deletes.
    return {"ds": p["ds"], "threads": p["threads"], "insert": p["updates"] / 2, "delete": p["updates"] / 2,
            "duration_ms": trial_ms(grid)}


EXPERIMENT = Experiment(
    title="cdsbench demo: every registered structure",
    description=(
        "Each registered structure with 1 and 2 threads at the harness's default mix (20% updates: 10% "
        "inserts, 10% deletes, the rest searches), keys uniform in [1, 10000], 3 trials per point, "
        "each its own process (seed 1 + trial); trials last 1 s, or less when many structures are "
        "registered, to keep the demo near 5 minutes: the duration_ms column says how long. Latency is "
        "sampled every 64th operation. Structures are grouped by family, from the registry's data "
        "(the family column): the black-box structures by the sequential structure they run "
        "(blackbox_structure), each under its black-box constructions (blackbox_method: nr = Node "
        "Replication, sl = spin lock, rwl = readers-writer lock, fc = flat combining, fcplus = flat "
        "combining with a readers-writer lock, lf = lock-free), the queues and stacks in 'queues' "
        "(enqueue-dequeue, or push-pop, pairs of single items: the update mix does not apply), and every other structure in 'sets' "
        "(ours and the peers, e.g. libcds and oneTBB, side by side). A structure without a thread-safe "
        "erase (tbb.concurrent_map) runs with one thread only."
    ),
    grid={"ds": STRUCTURES, "threads": THREADS, "updates": UPDATES},
    exclude=[refused],
    trials=TRIALS,
    fixed={"key_range": 10_000, "latency_sample": 64},
    options=options,
    derived={
        # Every trial's configuration says whether its structure is black-box (blackbox_method,
        # blackbox_structure: the harness prints "none" for the others, which reads as None here).
        "family": "'queues' if structure_kind in ('queue', 'stack') else 'sets' if blackbox_structure is None else blackbox_structure",
        "mops_per_s": "throughput_ops_per_s / 1e6",
        "thread_fairness": "thread_throughput_min_ops_per_s / thread_throughput_max_ops_per_s",
    },
    plots=[
        Heatmap(x="threads", y="ds", value="throughput_ops_per_s", log=True,
                title="Throughput of every structure (operations per second)"),
        Bar(x="ds", y="throughput_ops_per_s", facets=["family"], where={"threads": 2}, logy=True,
            title="Throughput side by side, 2 threads (operations per second)"),
        Line(x="threads", y="ns_per_op_per_thread", series="ds", facets=["family"], logy=True,
             title="Cost of one operation on one thread (ns)"),
        Histogram(op=["search", "read"], series="ds", facets=["family"], where={"threads": 2},
                  title="Latency of searches and reads, 2 threads"),
        Bar(x="ds", y="peak_rss_bytes", facets=["family"], where={"threads": 1},
            title="Peak RSS of a trial, 1 thread (bytes)"),
    ],
    timeout_s=90,
)
