"""The harness's own cost per operation (`make bench-overhead`, which writes
docs/results-overhead.md): `cdsbench --ds null`, a set that does nothing, so a trial measures
what the harness adds to every operation: the generator's draws, the key distribution, the choice
of the operation, the counters and the measured loop. Issue 14's goal: at most 5 ns per operation
per thread with the defaults (xoshiro256**, uniform keys) and one thread.

Parts, one table each:

- `generator`: each generator (`--prng`), uniform keys, one thread;
- `distribution`: each key distribution, xoshiro256**, one thread;
- `threads`: the defaults on one thread per CPU this machine gives the runner.

1 s trials, 5 per point, each its own harness process: about 2 minutes. The isolated cost of each
generator and distribution per sample (no loop around it) is `build/cdsbench-rng-bench`'s, which
`make bench-overhead` prints after the page.
"""
import os

from cdsbench.experiment import Bar, Experiment
from cdsbench.markdown import cell, spread_line, table
from cdsbench.stats import summarize

# The harness's generators and distributions (its --prng and --distribution; the plan test checks
# these against the harness's own list). rdrand fails where the CPU lacks the instruction: its
# point then says so.
GENERATORS = ["xoshiro256starstar", "splitmix64", "xorshift64star", "murmur3_counter", "murmur2_counter",
              "mt19937_64", "fnv1a_counter", "rdrand"]
DISTRIBUTIONS = ["uniform", "zipf:0.99", "zipf-unscrambled:0.99", "hotspot:10:90"]
DEFAULT = {"prng": GENERATORS[0], "distribution": DISTRIBUTIONS[0], "threads": 1}
CPUS = len(os.sched_getaffinity(0))
PARTS = {
    "generator": {"prng": GENERATORS, "distribution": [DEFAULT["distribution"]], "threads": [1]},
    "distribution": {"prng": [DEFAULT["prng"]], "distribution": DISTRIBUTIONS, "threads": [1]},
    "threads": {"prng": [DEFAULT["prng"]], "distribution": [DEFAULT["distribution"]],
                "threads": sorted({1, CPUS})},
}
GOAL_NS = 5.0
COLUMN = "ns_per_op_per_thread"


def outside(p):
    return any(p[name] not in values for name, values in PARTS[p["part"]].items())


def options(p):
    return {"ds": "null", "threads": p["threads"], "prng": p["prng"], "distribution": p["distribution"],
            "duration_ms": 1000}


def page(results):
    out = []
    w = out.append
    w("Nanoseconds per operation per thread with `--ds null` (elapsed x threads / operations), median of %d "
      "trials, each its own `cdsbench` process." % results.trials)
    w("")
    w("## Goal")
    w("")
    goal = results.point(part="generator", **DEFAULT)
    s = summarize(goal.values(COLUMN)) if goal is not None and goal.status == "ok" else None
    if s is None or s.n < 2:
        why = ("left out of this run" if goal is None else goal.status if goal.status != "ok"
               else "one trial: no interval")
        w("- The defaults (xoshiro256**, uniform keys, one thread) at most %.0f ns per operation: not shown (%s)."
          % (GOAL_NS, why))
    else:
        w("- The defaults (xoshiro256**, uniform keys, one thread) at most %.0f ns per operation: median %.2f ns, "
          "95%% interval of the mean [%.2f, %.2f]: %s (met when the interval's high end is at most %.0f)." % (
              GOAL_NS, s.median, s.ci95_low, s.ci95_high, "met" if s.ci95_high <= GOAL_NS else "NOT met", GOAL_NS))
    w("")
    for part, axis, title in (("generator", "prng", "Each generator (uniform keys, one thread)"),
                              ("distribution", "distribution", "Each key distribution (xoshiro256**, one thread)"),
                              ("threads", "threads", "Threads (xoshiro256**, uniform keys)")):
        cells = [(results.point(part=part, **{**DEFAULT, axis: v}), "%s %s" % (part, v))
                 for v in PARTS[part][axis]]
        if not any(p for p, _ in cells):
            continue
        w("## " + title)
        w("")
        w(table([axis, "ns per operation per thread", "min - max"],
                [["`%s`" % v, cell(p, COLUMN, "%.2f"), "%s - %s" % (cell(p, COLUMN, "%.2f", "min"),
                                                                   cell(p, COLUMN, "%.2f", "max"))]
                 for (p, _), v in zip(cells, PARTS[part][axis])]))
        w("")
        w(spread_line(cells, COLUMN))
        w("")
    return "\n".join(out)


EXPERIMENT = Experiment(
    title="The harness's own cost per operation",
    description="cdsbench --ds null per generator, key distribution and thread count; see the docstring of "
                "experiments/overhead.py.",
    grid={"part": list(PARTS), "prng": GENERATORS, "distribution": DISTRIBUTIONS, "threads": sorted({1, CPUS})},
    exclude=[outside],
    trials=5,
    seed=1,
    options=options,
    plots=[Bar(x="prng", y=COLUMN, where={"part": ["generator"]}, title="ns per operation per thread, each generator"),
           Bar(x="distribution", y=COLUMN, where={"part": ["distribution"]},
               title="ns per operation per thread, each key distribution")],
    timeout_s=120,
    page=page,
)
