"""Queues and stacks and their peers: the benchmark of issue 16 (`make bench-queue`, which writes
docs/results-queue.md).

Two parts, each measuring its structures side by side, one section of the page each:

- `throughput`: every queue the registry holds (kind queue: ours and the peers') and every stack
  (kind stack, the workload's LIFO mode) x threads 1, 2, 4 x modes `pairs` (each thread
  enqueues then dequeues) and `split` (the dedup study's Fig. 9: half the threads only enqueue,
  the rest dequeue until the producers are done and the queue is empty; 2 threads or more) x
  batches of 1 and 20 items (native batch operations where a queue has them, else one operation
  per item). Each point 5 trials of 1 s. The page reports items moved per second (a batch of 20
  counts 20), and the goals' ratios: our fastest linearizable FIFO queue against the best
  linearizable peer at batch 1, and batch_queue against locked_ring_queue (PARSEC dedup's queue)
  and against our fastest queue without native batches, at batch 20.
- `memory`: every queue and stack, one thread, 1,000,000 items prefilled, a short pairs trial:
  the bytes the structure holds per item in it at the end (`memory_per_queued_item_bytes`),
  where the structure counts them.

About 20 minutes on 2 cores. The environment shrinks it (lists are comma-separated):

    CDSBENCH_QUEUE_PARTS=throughput              these parts only (throughput, memory)
    CDSBENCH_QUEUE_STRUCTURES=batch_queue,locked_ring_queue   these rows only
    CDSBENCH_QUEUE_THREADS=1,2                   throughput: these thread counts
    CDSBENCH_QUEUE_MODES=split                   throughput: these modes
    CDSBENCH_QUEUE_BATCHES=20                    throughput: these batch sizes
    CDSBENCH_QUEUE_DURATION_MS=200               throughput: the measured phase of a trial (1000)

and `--trials N` the trials per point. oneTBB's queue runs with its default 8 micro-queues.
"""
from cdsbench.experiment import Experiment, Line, env, registered_structures
from cdsbench.markdown import (DASH, cell, compare, failed_points, fastest, measured_rows, parts_not_measured,
                               ratio_text, spread_line, table, used_values)

# The goals' queues (issue 16), by name: the registry has no field for "the batch queue" or "the
# dedup study's baseline".
BATCH, RING = "batch_queue", "locked_ring_queue"
FIFO_GOAL, RING_SPLIT_GOAL, RING_PAIRS_GOAL, SINGLE_GOAL = 1.2, 2.0, 1.2, 1.5
GOAL_BATCH = 20
MEMORY_ITEMS = 1_000_000

PARTS = {
    "throughput": {"threads": env("CDSBENCH_QUEUE_THREADS", [1, 2, 4], kind=int, minimum=1),
                   "modes": env("CDSBENCH_QUEUE_MODES", ["pairs", "split"], choices=["pairs", "split"]),
                   "batches": env("CDSBENCH_QUEUE_BATCHES", [1, 20], kind=int, minimum=1)},
    "memory": {"threads": [1], "modes": ["pairs"], "batches": [1]},
}
SELECTED = env("CDSBENCH_QUEUE_PARTS", list(PARTS), choices=list(PARTS))
CHOSEN = env("CDSBENCH_QUEUE_STRUCTURES", [], kind=str)
DURATION_MS = env("CDSBENCH_QUEUE_DURATION_MS", 1000, minimum=1)

STRUCTURES = registered_structures(kind=["queue", "stack"], where=lambda s: not CHOSEN or s["name"] in CHOSEN)


def union(name):
    return list(dict.fromkeys(v for part in SELECTED for v in PARTS[part][name]))


def outside(p):
    """A combination of the grid that is no point of its part (split mode needs a producer and a consumer)."""
    axes = PARTS[p["part"]]
    if p["mode"] == "split" and p["threads"] < 2:
        return True
    return not (p["threads"] in axes["threads"] and p["mode"] in axes["modes"] and p["batch"] in axes["batches"])


def options(p):
    o = {"ds": p["ds"], "threads": p["threads"], "queue_mode": p["mode"], "batch": p["batch"], "pin": "compact"}
    if p["mode"] == "split":
        o["producers"] = p["threads"] // 2
    if p["part"] == "throughput":
        o["duration_ms"] = DURATION_MS
    else:
        o.update({"prefill_items": MEMORY_ITEMS, "duration_ms": 100})
    return o


# ---------------------------------------------------------------------------------------------
# The page


def mitems(v):
    return "%.2g" % v if 0 < v < 0.01 else "%.3f" % v


def linearizable_fifo(entry):
    return entry["kind"] == "queue" and entry["order"] == "fifo" and not entry["known_violation"]


def ours(entry):
    return entry["library"] == "cdsbench"


def columns(results, batch):
    """The throughput part's columns at one batch size: (heading, point params)."""
    return [("%s %dT" % (m, t), {"part": "throughput", "batch": batch, "mode": m, "threads": t})
            for m in used_values(results, "throughput", "mode") for t in used_values(results, "throughput", "threads")
            if results.points(part="throughput", batch=batch, mode=m, threads=t)]


def goals(results):
    """The goals (issue 16) the rows allow: (label, pick, goal, applies, names_vary), pick(params) ->
    (a, b) or None, applies(params) -> whether the goal is stated for that column, names_vary:
    whether pick's structures depend on the column (then the tables name them)."""
    rows = measured_rows(results, "throughput")
    entry = results.structures
    our_fifo = [n for n in rows if ours(entry[n]) and linearizable_fifo(entry[n])]
    peer_fifo = [n for n in rows if not ours(entry[n]) and linearizable_fifo(entry[n])]
    single = [n for n in our_fifo if not entry[n]["native_batch"]]
    out = []
    if our_fifo and peer_fifo:
        def best_vs_best(params):
            a, b = fastest(results, our_fifo, params, "mitems"), fastest(results, peer_fifo, params, "mitems")
            return (a, b) if a and b else None
        out.append(("our fastest linearizable FIFO queue / the best linearizable peer", best_vs_best, FIFO_GOAL,
                    lambda params: params["batch"] == 1, True))
    if BATCH in rows and RING in rows:
        out.append(("%s / %s, split 2T" % (BATCH, RING), lambda params: (BATCH, RING), RING_SPLIT_GOAL,
                    lambda params: params["batch"] == GOAL_BATCH and params["mode"] == "split" and params["threads"] == 2,
                    False))
        out.append(("%s / %s, pairs 1T and 2T" % (BATCH, RING), lambda params: (BATCH, RING), RING_PAIRS_GOAL,
                    lambda params: params["batch"] == GOAL_BATCH and params["mode"] == "pairs" and params["threads"] <= 2,
                    False))
    if BATCH in rows and single:
        def batch_vs_single(params):
            b = fastest(results, single, params, "mitems")
            return (BATCH, b) if b else None
        out.append(("%s / our fastest single-item queue" % BATCH, batch_vs_single, SINGLE_GOAL,
                    lambda params: params["batch"] == GOAL_BATCH, True))
    return out


def comparisons(results, pick, cols):
    out = []
    for _, params in cols:
        pair = pick(params)
        c = (compare(results.point(ds=pair[0], **params), results.point(ds=pair[1], **params), "mitems", paired=True)
             if pair else None)
        out.append((params, c, pair))
    return out


def render_goals(w, results):
    w("## Goals")
    w("")
    cols = [c for b in used_values(results, "throughput", "batch") for c in columns(results, b)]
    for label, pick, goal, applies, _ in goals(results):
        found = [(params, c, pair) for params, c, pair in comparisons(results, pick, cols) if c is not None and applies(params)]
        certain = sum(c.has_ci and c.low >= goal for _, c, _ in found)
        detail = "; ".join("%s batch %d: %s (`%s` / `%s`)" % ("%s %dT" % (p["mode"], p["threads"]), p["batch"],
                                                              ratio_text(c), pair[0], pair[1]) for p, c, pair in found)
        w("- %s at least %.1fx: %s (%d of %d columns with the 95%% interval at or above it). %s."
          % (label, goal, "met" if found and certain == len(found) else "NOT met", certain, len(found), detail or DASH))
    w("")
    w("A goal is met only where every 95% interval lies at or above it: a median ratio above it with")
    w("an interval reaching below it is a difference this machine's noise cannot confirm. A goal's ratio is")
    w("paired: the structures of a column run back to back in each trial round, and the ratio is the median of")
    w("the rounds' ratios with a bootstrap over them, so a drift of the machine between rounds cancels.")
    w("")


def structure_line(results, name):
    e = results.structures[name]
    order = {"fifo": "linearizable FIFO", "per_producer_fifo": "FIFO per producer only", "relaxed": "relaxed order",
             "lifo": "a stack"}.get(e["order"], e["order"])
    batch = "native batches" if e["native_batch"] else "one operation per item"
    return "- `%s` (%s; %s; %s): %s" % (name, e["library"], order, batch, e["description"])


def render_throughput(w, results):
    rows = measured_rows(results, "throughput")
    w("## Throughput (million items per second, all threads)")
    w("")
    w("Every figure is the median of %d trials, each its own `cdsbench` process, threads pinned" % results.trials)
    w("`compact`; every trial counted passed its validation (every item once, none lost, each producer's")
    w("items in order for the queues that promise it). Split mode: half the threads produce. On this")
    w("machine's 2 cores the 4-thread columns are oversubscribed: threads that are descheduled")
    w("mid-operation are what lock-free and wait-free progress are for, and what a lock holder's")
    w("preemption costs a locked queue.")
    w("")
    for name in rows:
        w(structure_line(results, name))
    w("")
    failures = []
    for batch in used_values(results, "throughput", "batch"):
        cols = columns(results, batch)
        w("### Batches of %d item%s" % (batch, "s" if batch != 1 else ""))
        w("")
        body = [[n] + [cell(results.point(ds=n, **params), "mitems", mitems) for _, params in cols] for n in rows]
        for label, pick, _, applies, names_vary in goals(results):
            ratios = [(params, c, pair) for params, c, pair in comparisons(results, pick, cols)]
            if any(applies(params) for params, _, _ in ratios):
                body.append(["*%s*" % label] + [
                    "*%s%s*" % (ratio_text(c), " (`%s` / `%s`)" % pair if names_vary else "")
                    if applies(params) and c is not None else DASH for params, c, pair in ratios])
        w(table(["structure"] + [h for h, _ in cols], body))
        w("")
        w(spread_line([(results.point(ds=n, **params), "`%s`, %s" % (n, h)) for n in rows for h, params in cols],
                      "mitems"))
        w("")
        failures += [(results.point(ds=n, **params), "`%s`, batch %d, %s" % (n, batch, h)) for n in rows for h, params in cols]
    section = failed_points(failures)
    if section:
        w(section)


def render_memory(w, results):
    rows = measured_rows(results, "memory")
    w("## Memory per queued item")
    w("")
    w("One thread, %s items prefilled, then a 100 ms pairs trial (which leaves the queue as full): the"
      % "{:,}".format(MEMORY_ITEMS))
    w("bytes the structure holds at the end (its nodes, rings, segments or array, retired ones not yet")
    w("freed included) per item in it; `unavailable` where the structure does not count them (the peers).")
    w("Peak RSS per item counts the whole process (the harness's item logs included). Median of %d trials."
      % results.trials)
    w("")
    body = [[n, cell(results.point(ds=n, part="memory"), "items_remaining", "{:,.0f}".format),
             cell(results.point(ds=n, part="memory"), "memory_per_queued_item_bytes", "%.1f"),
             cell(results.point(ds=n, part="memory"), "rss_per_item", "%.0f")] for n in rows]
    w(table(["structure", "items", "held B/item", "peak RSS B/item"], body))
    w("")
    section = failed_points([(results.point(ds=n, part="memory"), "`%s`" % n) for n in rows])
    if section:
        w(section)


def page(results):
    out = []
    w = out.append
    w("Each section is one part of the experiment (issue 16), its structures measured side by side. A")
    w("ratio is A's trials against B's: the ratio of the medians with its 95% bootstrap interval.")
    w("")
    if results.points(part="throughput"):
        render_goals(w, results)
        render_throughput(w, results)
    if results.points(part="memory"):
        render_memory(w, results)
    missing = parts_not_measured(results, PARTS, "CDSBENCH_QUEUE_PARTS")
    if missing:
        w(missing)
        w("")
    return "\n".join(out)


EXPERIMENT = Experiment(
    title="Queues and stacks and their peers: results",
    description="Issue 16: our queues and stacks beside oneTBB's, moodycamel's, Boost's and libcds's, single items "
                "and batches of 20, pairs and split modes, and their memory per item; see the docstring of "
                "experiments/queue.py.",
    # `ds` last: the runner runs a trial of every point before the next trial, in grid order, so
    # the structures of a column run back to back and a goal's ratio is taken trial by trial.
    grid={"part": SELECTED, "threads": union("threads"), "mode": union("modes"), "batch": union("batches"),
          "ds": STRUCTURES},
    exclude=[outside],
    trials=5,
    seed=16,
    options=options,
    derived={
        "mitems": "throughput_items_per_s / 1e6",
        "rss_per_item": ("peak_rss_bytes / items_remaining",
                         lambda r: r["peak_rss_bytes"] / r["items_remaining"]
                         if isinstance(r.get("peak_rss_bytes"), int) and r.get("items_remaining") else None),
    },
    plots=[
        Line(x="threads", y="mitems", series="ds", facets=["part", "mode", "batch"], where={"part": ["throughput"]},
             title="Throughput by threads (million items per second, all threads)"),
    ],
    metric="throughput_items_per_s",
    timeout_s=300,
    page=page,
)
