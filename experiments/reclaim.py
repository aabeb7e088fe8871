"""The reclamation layer's benchmark (`make bench-reclaim`, which writes docs/results-reclaim.md).

1. The cost of an empty guarded operation per reclaimer: `null` with each reclaimer, one
   thread, minus `null` with `none` (the harness alone), side by side.
2. List throughput per reclaimer at 1 and 2 threads, and per allocation policy at 2 threads.
3. Memory boundedness: 20-second trials at 100% updates on a small key range; peak RSS against
   RSS after prefill, per reclaimer.

The reclaimers and allocation policies are the registry's (every variant of the structures
below), so one added there joins the page. Each point: 5 trials, each its own harness process.
About 9 minutes (the memory part is 4 x 5 trials of 20 s). The environment changes it:

    CDSBENCH_RECLAIM_DURATION_MS=100   the measured phase of parts 1 and 2 (1000)
    CDSBENCH_RECLAIM_MEMORY_MS=2000    the measured phase of part 3 (20000)

and `--trials N` the trials per point, `--harness PATH` the harness.
"""
from cdsbench.experiment import Bar, Experiment, env, registered_structures, registered_variants
from cdsbench.markdown import DASH, cell, compare, ratio_text, table

# The page's subjects: the harness's structure that does nothing (what remains is the guard) and
# the two lists the reclamation layer was built with; the registry has no field for either.
NULL = "null"
LISTS = ["harris_michael_list", "lazy_list"]
MEMORY_LIST = "harris_michael_list"
# The reclaimer that reclaims nothing: its `null` cost is the harness alone.
BASELINE = "none"

DURATION_MS = env("CDSBENCH_RECLAIM_DURATION_MS", 1000, minimum=1)
MEMORY_MS = env("CDSBENCH_RECLAIM_MEMORY_MS", 20_000, minimum=1)

STRUCTURES = registered_structures(where=lambda s: s["name"] in [NULL, *LISTS])

# Per part: which points it has (a function of the registry entry and the point) and its options.
PARTS = {
    "guard": {"keep": lambda e, p: e["name"] == NULL and p["allocator"] == default(e, "allocator")
                                   and p["threads"] == 1,
              "options": {"duration_ms": DURATION_MS}},
    "lists": {"keep": lambda e, p: e["name"] in LISTS and p["allocator"] == default(e, "allocator"),
              "options": {"key_range": 1000, "insert": 10, "delete": 10, "duration_ms": DURATION_MS}},
    "allocators": {"keep": lambda e, p: e["name"] == MEMORY_LIST and p["reclaimer"] == default(e, "reclaimer")
                                        and p["threads"] == 2,
                   "options": {"key_range": 1000, "insert": 25, "delete": 25, "duration_ms": DURATION_MS}},
    "memory": {"keep": lambda e, p: e["name"] == MEMORY_LIST and p["allocator"] == default(e, "allocator")
                                    and p["threads"] == 2,
               "options": {"key_range": 1000, "insert": 50, "delete": 50, "duration_ms": MEMORY_MS}},
}


def default(entry, field):
    """The structure's default reclaimer or allocator: its first variant's."""
    return entry["variants"][0][field]


def has(entry, reclaimer, allocator):
    return any(v["reclaimer"] == reclaimer and v["allocator"] == allocator for v in entry["variants"])


def outside(p):
    e = STRUCTURES.entry(p["ds"])
    return not (has(e, p["reclaimer"], p["allocator"]) and PARTS[p["part"]]["keep"](e, p))


def options(p):
    return {"ds": p["ds"], "reclaimer": p["reclaimer"], "allocator": p["allocator"], "threads": p["threads"],
            "pin": "compact", **PARTS[p["part"]]["options"]}


# ---------------------------------------------------------------------------------------------
# The page


def with_spread(point, column, fmt):
    """The median and, in brackets, the smallest and largest trial."""
    text = cell(point, column, fmt)
    if point is None or point.status != "ok" or point.stat(column, "n") in (None, 0, 1):
        return text
    return "%s (%s–%s)" % (text, fmt % point.stat(column, "min"), fmt % point.stat(column, "max"))


def mib(v):
    return "%.1f" % (v / 2**20)


def against(point, reference, column, kind="ratio"):
    if point is reference:
        return "(reference)"
    return ratio_text(compare(point, reference, column, kind))


def page(results):
    m = results.machine
    reclaimers, allocators = results.values("reclaimer"), results.values("allocator")
    out = []
    w = out.append
    w("Compare rows side by side, not with other machines. Every figure is the median of %d trial%s, each"
      % (results.trials, "s" if results.trials != 1 else ""))
    w("its own `cdsbench` process (in brackets: the smallest and the largest trial); threads pinned `compact`.")
    if (m.get("machine_cpus") or 0) <= 2 or m.get("machine_numa_nodes") == 1:
        w("The effects of many threads and of several NUMA nodes cannot show on %s CPUs in %s NUMA node(s)."
          % (m.get("machine_cpus", "?"), m.get("machine_numa_nodes", "?")))
    w("")

    guard = [(r, results.point(part="guard", ds=NULL, reclaimer=r, threads=1)) for r in reclaimers]
    guard = [(r, p) for r, p in guard if p is not None]
    if guard:
        base = dict(guard).get(BASELINE)
        w("## Cost of an empty guarded operation (1 thread)")
        w("")
        w("`%s` with each reclaimer: ns per operation per thread (the harness, plus entering and leaving the"
          % NULL)
        w("reclaimer's guard); the guard alone is the difference from `%s` (the harness alone), with its 95%%"
          % BASELINE)
        w("bootstrap interval.")
        w("")
        w(table(["reclaimer", "ns/op (harness + guard)", "guard alone (minus `%s`)" % BASELINE],
                [[r, with_spread(p, "ns_per_op_per_thread", "%.2f"),
                  against(p, base, "ns_per_op_per_thread", "difference") if base else DASH] for r, p in guard]))
        w("")

    for ds in LISTS:
        rows = [(r, results.point(part="lists", ds=ds, reclaimer=r, threads=1),
                 results.point(part="lists", ds=ds, reclaimer=r, threads=2)) for r in reclaimers]
        rows = [row for row in rows if row[1] is not None or row[2] is not None]
        if not rows:
            continue
        entry = results.structures[ds]
        ref = default(entry, "reclaimer")
        ref2 = next((two for r, _, two in rows if r == ref), None)
        w("## `%s` throughput per reclaimer (key range 1000, 10%% insert, 10%% delete, allocator %s)"
          % (ds, default(entry, "allocator")))
        w("")
        w(table(["reclaimer", "1 thread (Mops/s)", "2 threads (Mops/s)", "2 threads vs `%s`" % ref],
                [[r, with_spread(one, "mops", "%.3f"), with_spread(two, "mops", "%.3f"),
                  against(two, ref2, "mops") if ref2 else DASH] for r, one, two in rows]))
        w("")

    alloc = [(a, results.point(part="allocators", ds=MEMORY_LIST, allocator=a)) for a in allocators]
    alloc = [(a, p) for a, p in alloc if p is not None]
    if alloc:
        entry = results.structures[MEMORY_LIST]
        ref = dict(alloc).get(default(entry, "allocator"))
        w("## `%s` with `%s`, per allocation policy (2 threads, key range 1000, 50%% updates)"
          % (MEMORY_LIST, default(entry, "reclaimer")))
        w("")
        w(table(["allocator", "Mops/s", "vs `%s`" % default(entry, "allocator")],
                [[a, with_spread(p, "mops", "%.3f"), against(p, ref, "mops") if ref else DASH] for a, p in alloc]))
        w("")

    memory = [(r, results.point(part="memory", ds=MEMORY_LIST, reclaimer=r)) for r in reclaimers]
    memory = [(r, p) for r, p in memory if p is not None]
    if memory:
        seconds = sorted({r["duration_ms"] / 1000 for _, p in memory for r in p.runs
                          if isinstance(r.get("duration_ms"), int)})
        w("## Memory boundedness: %s s at 100%% updates (50%% insert, 50%% delete), key range 1000, 2 threads, `%s`"
          % (" or ".join("%g" % s for s in seconds) or "?", MEMORY_LIST))
        w("")
        w("Bounded: the peak RSS of every trial at most twice the RSS after prefill.")
        w("")

        def bounded(p):
            if p.status != "ok" or p.stat("peak_over_prefill", "max") is None:
                return cell(p, "peak_over_prefill")
            return "yes" if p.stat("peak_over_prefill", "max") <= 2 else "no"

        w(table(["reclaimer", "RSS after prefill (MiB)", "peak RSS (MiB)", "peak / after prefill", "nodes retired",
                 "in limbo at end", "bounded (peak ≤ 2× after prefill)"],
                [[r, cell(p, "rss_after_prefill_bytes", mib), cell(p, "peak_rss_bytes", mib),
                  with_spread(p, "peak_over_prefill", "%.2f"), cell(p, "nodes_retired", "%d"),
                  cell(p, "nodes_in_limbo", "%d"), bounded(p)] for r, p in memory]))
        w("")
    return "\n".join(out)


EXPERIMENT = Experiment(
    title="Reclamation and allocation: measured figures",
    description="The reclamation layer: guard cost, list throughput per reclaimer and allocation policy, memory "
                "boundedness; see the docstring of experiments/reclaim.py.",
    grid={"part": list(PARTS), "ds": STRUCTURES, "reclaimer": registered_variants("reclaimer", of=STRUCTURES),
          "allocator": registered_variants("allocator", of=STRUCTURES), "threads": [1, 2]},
    exclude=[outside],
    trials=5,
    seed=1,
    options=options,
    derived={
        "mops": "throughput_ops_per_s / 1e6",
        "peak_over_prefill": ("peak_rss_bytes / rss_after_prefill_bytes",
                              lambda r: r["peak_rss_bytes"] / r["rss_after_prefill_bytes"]
                              if isinstance(r.get("peak_rss_bytes"), int) and r.get("rss_after_prefill_bytes")
                              else None),
    },
    plots=[Bar(x="reclaimer", y="mops", series="threads", facets=["ds"], where={"part": "lists"},
               title="List throughput per reclaimer (Mops/s)"),
           Bar(x="reclaimer", y="peak_rss_bytes", where={"part": "memory"}, logy=True,
               title="Peak RSS at 100% updates per reclaimer (bytes)")],
    timeout_s=MEMORY_MS / 1000 + 100,
    page=page,
)
