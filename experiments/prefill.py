"""Steady prefill against a tree aged by 10 x R updates (`make bench-prefill`, which writes
docs/results-prefill.md): is the fast prefill's tree in its steady state?

Three prefills of the same trial, side by side:

- `steady`: the harness's default (a uniform set built in the order of a PrefillPlan, then
  0.05 x R updates at the configured mix);
- `aged`: the same, then 10 x R updates at the configured mix (`--prefill-aging 10`): the
  reference, a tree that has lived through ten times as many updates as it has keys' range;
- `insert-only`: uniform random inserts to the target and nothing else (the pitfall, P5).

For each structure: the prefill time, the mean search depth after the trial (trees) and the
throughput of the measured phase, with the ratios of `steady` and `insert-only` to `aged` and
their 95% bootstrap intervals. Two parts: `small`, every ordered structure that keeps keys in a
tree or a skip list (ours with search depths, and the peers), key range 2^17; `large`, the
issue's case, ellen_bst at key range 2M (its `aged` trials take a minute of aging each).
A structure whose erase must run alone (oneTBB's concurrent_map: unsafe_erase walks its list from
the head) has no `aged` point: 10 x R such erases take hours. 1 thread, 10% inserts, 10% deletes, uniform keys, 1 s trials, 5 trials per
point, each its own harness process. About 10 minutes. The environment changes it:

    CDSBENCH_PREFILL_PARTS=small        these parts only (small, large)
    CDSBENCH_PREFILL_STRUCTURES=ellen_bst,bronson_avl   these rows in every part, not the part's
    CDSBENCH_PREFILL_DURATION_MS=200    the measured phase (1000)

and `--trials N` the trials per point.
"""
from cdsbench.experiment import Bar, Experiment, env, registered_structures
from cdsbench.markdown import DASH, cell, compare, ratio_text, spread_line, table

MODES = {"steady": {}, "aged": {"prefill_aging": 10}, "insert-only": {"prefill": "insert-only"}}
REFERENCE = "aged"
PARTS = {
    "small": {"key_range": 2**17, "structures": None},
    # The case: an external tree of 1M keys.
    "large": {"key_range": 2_000_000, "structures": ["ellen_bst"]},
}
SELECTED = env("CDSBENCH_PREFILL_PARTS", list(PARTS), choices=list(PARTS))
CHOSEN = env("CDSBENCH_PREFILL_STRUCTURES", [], kind=str)
DURATION_MS = env("CDSBENCH_PREFILL_DURATION_MS", 1000, minimum=1)


def tree_or_peer(s):
    """A structure the small part measures: a tree of ours (it reports search depths) or a peer
    (libraries' trees and skip lists); not the lists, whose aging at 2^17 keys takes minutes."""
    return s["search_depths"] or s["library"] != "cdsbench"


def subject(part, s):
    if CHOSEN:
        return s["name"] in CHOSEN
    names = PARTS[part]["structures"]
    return tree_or_peer(s) if names is None else s["name"] in names


STRUCTURES = registered_structures(kind="ordered_set", where=lambda s: any(subject(p, s) for p in SELECTED))


def outside(p):
    entry = STRUCTURES.entry(p["ds"])
    return not subject(p["part"], entry) or (p["mode"] == REFERENCE and not entry["concurrent_erase"])


def options(p):
    return {"ds": p["ds"], "threads": 1, "key_range": PARTS[p["part"]]["key_range"], "insert": 10, "delete": 10,
            "duration_ms": DURATION_MS, "pin": "compact", "prefill_timeout_ms": 900_000, **MODES[p["mode"]]}


# ---------------------------------------------------------------------------------------------
# The page


def against_reference(point, reference, column):
    return ratio_text(compare(point, reference, column)) if reference is not None else DASH


def page(results):
    out = []
    w = out.append
    w("Compare rows side by side, not with other machines. Every figure is the median of %d trial%s, each its"
      % (results.trials, "s" if results.trials != 1 else ""))
    w("own `cdsbench` process; a ratio is a median over `aged`'s with its 95% bootstrap interval, and")
    w("\"no measurable difference\" when the interval holds 1. 1 thread, 10% inserts, 10% deletes, uniform keys.")
    w("A structure whose erase must run alone has no `aged` point (see experiments/prefill.py).")
    w("")
    for part in results.values("part"):
        rows = [ds for ds in results.values("ds") if results.points(part=part, ds=ds)]
        if not rows:
            continue
        key_range = PARTS[part]["key_range"]
        w("## Key range %s (about %s keys)" % ("{:,}".format(key_range), "{:,}".format(key_range // 2)))
        w("")
        w("Prefill time, ms (median):")
        w("")
        w(table(["structure"] + list(MODES),
                [[f"`{ds}`"] + [cell(results.point(part=part, ds=ds, mode=m), "prefill_time_ms", "%.0f")
                                for m in MODES] for ds in rows]))
        w("")
        for column, title, fmt in (("search_depth_mean", "Mean search depth after the trial (trees of ours)", "%.2f"),
                                   ("mops", "Throughput, Mops/s", "%.3f")):
            shown = [ds for ds in rows if any(p.status != "ok" or p.values(column)
                                              for p in results.points(part=part, ds=ds))]
            if not shown:
                continue
            w(title + ":")
            w("")
            body = []
            for ds in shown:
                ref = results.point(part=part, ds=ds, mode=REFERENCE)
                by_mode = {m: results.point(part=part, ds=ds, mode=m) for m in MODES}
                body.append([f"`{ds}`"] + [cell(by_mode[m], column, fmt) for m in MODES]
                            + [against_reference(by_mode[m], ref, column) for m in MODES if m != REFERENCE])
            w(table(["structure"] + list(MODES) + ["%s / %s" % (m, REFERENCE) for m in MODES if m != REFERENCE],
                    body))
            w("")
            w(spread_line([(results.point(part=part, ds=ds, mode=m), f"`{ds}` {m}") for ds in shown for m in MODES],
                          column))
            w("")
    return "\n".join(out)


EXPERIMENT = Experiment(
    title="Steady prefill against a tree aged by 10 x R updates",
    description="Prefill time, search depth and throughput after the harness's steady prefill, after 10 x R "
                "updates of aging and after insert-only prefill; see the docstring of experiments/prefill.py.",
    grid={"part": SELECTED, "ds": STRUCTURES, "mode": list(MODES)},
    exclude=[outside],
    trials=5,
    seed=1,
    options=options,
    derived={"mops": "throughput_ops_per_s / 1e6"},
    plots=[Bar(x="ds", y="mops", series="mode", facets=["part"], title="Throughput after each prefill (Mops/s)"),
           Bar(x="ds", y="prefill_time_ms", series="mode", facets=["part"], logy=True,
               title="Prefill time (ms)")],
    timeout_s=1000,
    page=page,
)
