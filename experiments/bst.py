"""The concurrent BSTs and their peers: the benchmark of issues 5 and 6 (`make bench-bst`, which
writes docs/results-bst.md).

Three parts, each measuring its structures side by side, one section of the page each:

- `external` (issue 5): natarajan_mittal_bst, ellen_bst and bst_tk beside libcds's
  EllenBinTreeMap and SkipListMap and oneTBB's concurrent_map.
- `internal` (issue 6): howley_jones_bst, ramachandran_mittal_bst, drachsler_bst, citrus_bst and
  bronson_avl beside libcds's BronsonAVLTreeMap, with ellen_bst again as the anchor that ties this
  part to the `external` one.
- `sizes` (issue 6): read-only work with 2 threads on trees of 1M and 10M keys (key ranges 2M and
  20M), every tree of ours (the registry's trees with search depths) and libcds's two trees: does
  the balanced tree pull ahead when the tree is deep?

The grid of `external` and `internal`: key range 2,000,000 (prefill 1,000,000, steady state),
0/10/50/100% updates (half inserts, half deletes), uniform and Zipf 0.99 keys, 1, 2 and 4 threads;
each point 5 trials of 3 s, each its own harness process. The page reports Mops/s, bytes per key
(peak RSS / keys), nodes per key (nodes allocated minus freed / keys), the trees' search depth (and,
in read-only columns, the time per node read) and, per column, the ratio of ours to libcds's for
the trees both have, measured in the same sweep.

About 6 hours on 2 cores. The environment shrinks it (lists are comma-separated):

    CDSBENCH_BST_PARTS=internal                 these parts only (external, internal, sizes)
    CDSBENCH_BST_STRUCTURES=ellen_bst,libcds.ellen_bst   these rows in every part, not the part's
    CDSBENCH_BST_KEY_RANGES=20000               these key ranges in every part, not the part's
    CDSBENCH_BST_UPDATES=0,50                   these update percentages
    CDSBENCH_BST_DISTRIBUTIONS=uniform          these key distributions
    CDSBENCH_BST_THREADS=1,2                    these thread counts
    CDSBENCH_BST_DURATION_MS=200                the measured phase of a trial (3000)

and `--trials N` the trials per point, e.g.

    CDSBENCH_BST_PARTS=internal CDSBENCH_BST_KEY_RANGES=20000 CDSBENCH_BST_DURATION_MS=200 \\
        .venv/bin/cdsbench-run experiments/bst.py --trials 2 --out /tmp/bst.md

A structure named here that the harness does not register is left out and named on the page.
A point the harness would refuse (deletes beside other threads on a structure without a
thread-safe erase: the registry's concurrent_erase) is not run, and the page says `refused`.
"""
from cdsbench.experiment import Bar, Experiment, Line, env, registered_structures
from cdsbench.markdown import cell, compare, failed_points, parts_not_measured, ratio_text, spread_line, table

# Each part's subjects are the ones its issue named: the registry has no field for "external
# tree" or "the peer implementing the same algorithm", so the page names them. `sizes` takes
# every tree of ours from the registry (the trees report search depths) and the peers of PAIRS.
PARTS = {
    "external": {"title": "External trees (issue 5)",
                 "structures": ["natarajan_mittal_bst", "ellen_bst", "bst_tk", "libcds.ellen_bst",
                                "libcds.skiplist_map", "tbb.concurrent_map"],
                 "key_ranges": [2_000_000], "updates": [0, 10, 50, 100], "distributions": ["uniform", "zipf:0.99"],
                 "threads": [1, 2, 4]},
    "internal": {"title": "Internal and balanced trees (issue 6)",
                 "structures": ["howley_jones_bst", "ramachandran_mittal_bst", "drachsler_bst", "citrus_bst",
                                "bronson_avl", "libcds.bronson_avl", "ellen_bst"],
                 "key_ranges": [2_000_000], "updates": [0, 10, 50, 100], "distributions": ["uniform", "zipf:0.99"],
                 "threads": [1, 2, 4]},
    # Two threads only: the steady prefill of 10M keys takes a minute with both CPUs (the limit
    # is raised from the default 60 s to 15 min), twice that with one.
    "sizes": {"title": "Read-only work on 1M- and 10M-key trees (issue 6)", "structures": None,
              "key_ranges": [2_000_000, 20_000_000], "updates": [0], "distributions": ["uniform"], "threads": [2],
              "options": {"prefill_timeout_ms": 900_000}},
}
# Ours beside libcds's implementation of the same algorithm: a ratio row where a part has both.
PAIRS = [("ellen_bst", "libcds.ellen_bst"), ("bronson_avl", "libcds.bronson_avl")]
# The balanced tree of issue 6's question (the registry does not say which tree balances).
BALANCED = "bronson_avl"

SELECTED = env("CDSBENCH_BST_PARTS", list(PARTS), choices=list(PARTS))
CHOSEN = env("CDSBENCH_BST_STRUCTURES", [], kind=str)
AXES = {"key_ranges": env("CDSBENCH_BST_KEY_RANGES", [], kind=int, minimum=1),
        "updates": env("CDSBENCH_BST_UPDATES", [], kind=int, minimum=0),
        "distributions": env("CDSBENCH_BST_DISTRIBUTIONS", [], kind=str),
        "threads": env("CDSBENCH_BST_THREADS", [], kind=int, minimum=1)}
DURATION_MS = env("CDSBENCH_BST_DURATION_MS", 3000, minimum=1)


def our_tree(s):
    """A tree of ours, from the registry's data: it reports its search depths."""
    return s["library"] == "cdsbench" and s["kind"] == "ordered_set" and s["search_depths"]


def subject(part, s):
    """Whether registry entry s is a row of the part."""
    if CHOSEN:
        return s["name"] in CHOSEN
    names = PARTS[part]["structures"]
    if names is None:
        return our_tree(s) or s["name"] in [peer for _, peer in PAIRS]
    return s["name"] in names


def axis(part, name):
    return AXES[name] or PARTS[part][name]


def union(name):
    return list(dict.fromkeys(v for part in SELECTED for v in axis(part, name)))


STRUCTURES = registered_structures(kind="ordered_set", where=lambda s: any(subject(part, s) for part in SELECTED))


def refused(entry, updates, threads):
    """The harness refuses deletes beside other threads on a structure without a thread-safe erase."""
    return not entry["concurrent_erase"] and updates > 0 and threads > 1


def outside(p):
    """A combination of the grid that is no point of its part."""
    return not (subject(p["part"], STRUCTURES.entry(p["ds"]))
                and all(p[key] in axis(p["part"], name) for key, name in
                        (("key_range", "key_ranges"), ("updates", "updates"), ("distribution", "distributions"),
                         ("threads", "threads"))))


def options(p):
    o = {"ds": p["ds"], "threads": p["threads"], "key_range": p["key_range"], "insert": p["updates"] / 2,
         "delete": p["updates"] / 2, "distribution": p["distribution"], "duration_ms": DURATION_MS, "pin": "compact"}
    # A structure without a thread-safe erase prefills insert-only (the page says why).
    if not STRUCTURES.entry(p["ds"])["concurrent_erase"]:
        o["prefill"] = "insert-only"
    o.update(PARTS[p["part"]].get("options", {}))
    return o


def nodes_per_key(r):
    """Nodes held per key: nodes (and descriptors, where counted apart) allocated minus freed."""
    if not isinstance(r.get("nodes_allocated"), int) or not isinstance(r.get("nodes_freed"), int) \
            or not r.get("actual_size"):
        return None
    held = r["nodes_allocated"] - r["nodes_freed"]
    if isinstance(r.get("descriptors_allocated"), int) and isinstance(r.get("descriptors_freed"), int):
        held += r["descriptors_allocated"] - r["descriptors_freed"]
    return held / r["actual_size"]


def ns_per_node_read(r):
    """Each thread's time per operation over the mean search depth (read in read-only columns)."""
    if not r.get("search_depth_mean") or not r.get("throughput_ops_per_s"):
        return None
    return r["threads"] * 1e9 / (r["throughput_ops_per_s"] * r["search_depth_mean"])


# ---------------------------------------------------------------------------------------------
# The page


def millions(n):
    return "%gM" % (n / 1e6) if n >= 1_000_000 else "{:,}".format(n)


def mops(v):
    return "%.2g" % v if 0 < v < 0.01 else "%.3f" % v


def rows_of(results, part):
    """The part's rows as measured: its named order (else the registry's), and the requested
    names the harness did not register."""
    measured = [n for n in results.values("ds") if results.points(part=part, ds=n)]
    requested = results.env.get("CDSBENCH_BST_STRUCTURES")
    if requested:
        named = [n.strip() for n in requested.split(",")]
    elif PARTS[part]["structures"] is None:
        named = [n for n in measured if our_tree(results.structures[n])] + [peer for _, peer in PAIRS]
    else:
        named = PARTS[part]["structures"]
    order = {n: i for i, n in enumerate(named)}
    rows = sorted(measured, key=lambda n: (order.get(n, len(order)), results.values("ds").index(n)))
    return rows, [n for n in named if n not in results.structures]


def columns(results, part, dist):
    """The part's columns for one distribution: (header, parameters) pairs."""
    def used(name):
        return [v for v in results.values(name) if results.points(part=part, **{name: v})]

    key_ranges = used("key_range")
    out = []
    for kr in key_ranges:
        for u in used("updates"):
            for t in used("threads"):
                head = "%d%% upd, %dT" % (u, t)
                if len(key_ranges) > 1:
                    head = "%s keys, %s" % (millions(kr // 2), head)
                out.append((head, {"part": part, "distribution": dist, "key_range": kr, "updates": u, "threads": t}))
    return out


def structure_line(results, name, points):
    entry = results.structures[name]
    variants = entry.get("variants", [])
    reclaimers = ",".join(dict.fromkeys(v["reclaimer"] for v in variants))
    allocators = ",".join(dict.fromkeys(v["allocator"] for v in variants))
    used = next((p.value("reclaimer") for p in points if p.status == "ok" and p.value("reclaimer")), "?")
    layout = f"; {entry['layout']}" if entry.get("layout") else ""
    return (f"- `{name}` (reclaimer `{used}`): {entry['description']}  [reclaimers: {reclaimers}; allocators: "
            f"{allocators}; range queries: {'yes' if entry.get('range_queries') else 'no'}{layout}]")


def grid_cell(results, name, params, column, fmt):
    point = results.point(ds=name, **params)
    if point is None and refused(results.structures[name], params["updates"], params["threads"]):
        return "refused"
    return cell(point, column, fmt)


def depth_cell(point):
    text = cell(point, "search_depth_mean", "%.1f")
    if point is None or point.status != "ok" or point.median("search_depth_mean") is None:
        return text
    return "%s (%d)" % (text, point.stat("search_depth_max", "max"))


def render_depths(w, results, dist, cols, rows):
    """Search depths, time per node read in the read-only columns, and the balanced tree beside
    the fastest unbalanced one: what issue 6 asks to be explained from measurements."""
    points = {(n, h): results.point(ds=n, **params) for n in rows for h, params in cols}
    if not any(p is not None and p.median("search_depth_mean") is not None for p in points.values()):
        return
    w("### Search depth, %s keys: nodes a search for a present key reads, mean (deepest key)" % dist)
    w("")
    w(table(["structure"] + [h for h, _ in cols], [[n] + [depth_cell(points[n, h]) for h, _ in cols] for n in rows]))
    w("")
    read_only = [(h, params) for h, params in cols if params["updates"] == 0]
    if not read_only:
        return
    w("### Time per node read (ns), %s keys, read-only columns" % dist)
    w("")
    w("Each thread's time per lookup (threads / throughput) over the mean search depth.")
    w("")

    def per_node(p):
        v = p.median("ns_per_node_read") if p is not None and p.status == "ok" else None
        return ("%.0f" if v >= 10 else "%.1f") % v if v is not None else depth_cell(p)

    w(table(["structure"] + [h for h, _ in read_only], [[n] + [per_node(points[n, h]) for h, _ in read_only]
                                                         for n in rows]))
    w("")
    if BALANCED not in rows:
        return
    lines = []
    for head, _ in read_only:
        b = points[BALANCED, head]
        unbalanced = [(points[n, head], n) for n in rows if n != BALANCED and our_tree(results.structures[n])
                      and points[n, head] is not None and points[n, head].status == "ok"
                      and points[n, head].median("search_depth_mean")]
        if b is None or b.status != "ok" or b.median("search_depth_mean") is None or not unbalanced:
            continue
        u, name = max(unbalanced, key=lambda x: x[0].median("mops"))
        lines.append(
            "- %s: `%s` %.3f Mops/s, the fastest unbalanced tree (`%s`) by median %.3f; ratio: %s. A search in "
            "`%s` reads %.1f nodes, in `%s` %.1f (ratio: %s); a node read takes %.0f ns against %.0f (ratio: %s). "
            "Bytes per key %s against %s."
            % (head, BALANCED, b.median("mops"), name, u.median("mops"), ratio_text(compare(b, u, "mops")),
               BALANCED, b.median("search_depth_mean"), name, u.median("search_depth_mean"),
               ratio_text(compare(b, u, "search_depth_mean")), b.median("ns_per_node_read"),
               u.median("ns_per_node_read"), ratio_text(compare(b, u, "ns_per_node_read")),
               cell(b, "bytes_per_key", "%.0f"), cell(u, "bytes_per_key", "%.0f")))
    if lines:
        w("The balanced tree against the fastest unbalanced one, side by side in this sweep (a lookup takes")
        w("its search depth times the time per node read):")
        w("")
        w("\n".join(lines))
        w("")


def render_part(w, results, part):
    rows, missing = rows_of(results, part)
    points = [p for p in results.points(part=part)]
    cpus = results.machine.get("machine_cpus")
    key_ranges = [v for v in results.values("key_range") if results.points(part=part, key_range=v)]
    durations = sorted({r["duration_ms"] for p in points for r in p.runs if isinstance(r.get("duration_ms"), int)})
    seeds = sorted({r["seed"] for p in points for r in p.runs if isinstance(r.get("seed"), int)})
    w("## %s" % PARTS[part]["title"])
    w("")
    w("Key range%s %s, prefilled to half of it (steady state of the update mix); updates u%% mean"
      % ("s" if len(key_ranges) > 1 else "", " and ".join("{:,}".format(k) for k in key_ranges)))
    w("`--insert u/2 --delete u/2`, searches are the rest. Every figure is the median of %d trial%s of %s ms"
      % (results.trials, "s" if results.trials != 1 else "", " or ".join(map(str, durations)) or "?"))
    w("(each trial its own `cdsbench` process, %s), threads pinned `compact`; every"
      % (f"seeds {seeds[0]} to {seeds[-1]}" if len(seeds) > 1 else f"seed {seeds[0]}" if seeds else "seed ?"))
    w("trial counted here passed its validation (key sum, size, the structure's invariant check,")
    w("`contains` probes).")
    w("")
    w("- The machine may be shared with other work: compare structures within a column (measured side")
    w("  by side in this sweep), not across sweeps.")
    over = [t for t in results.values("threads") if cpus and t > cpus and results.points(part=part, threads=t)]
    if over:
        w("- **%s threads oversubscribe these %d CPUs**: threads are preempted inside operations (and, for"
          % (" and ".join(map(str, over)), cpus))
        w("  the lock-based trees, while holding locks), so those columns measure scheduling as much as")
        w("  synchronization, and per-thread throughput there is not comparable with an unsaturated run.")
    w("")
    for name in rows:
        w(structure_line(results, name, results.points(part=part, ds=name)))
    if missing:
        w("- Not registered in the binary measured, so not in the tables: %s."
          % ", ".join("`%s`" % m for m in missing))
    for name in rows:
        if not results.structures[name]["concurrent_erase"]:
            w("")
            w("`%s` is prefilled insert-only (`--prefill insert-only`): its only erase," % name)
            w("`unsafe_erase`, finds a node's predecessors by walking each of its levels from the head")
            w("(oneTBB 2021.8, `fill_prev_array_for_existing_node`), O(n) for most nodes, so the steady")
            w("prefill's aging deletes would take hours at this size; a skip list's shape does not depend on")
            w("its history (heights are drawn per node, the keys are a uniform random half either way). The")
            w("same walk makes its one-thread update columns collapse with the size of the map.")
    w("")
    pairs = [pr for pr in PAIRS if pr[0] in rows and pr[1] in rows]
    failures = []
    for dist in [d for d in results.values("distribution") if results.points(part=part, distribution=d)]:
        cols = columns(results, part, dist)
        for title, column, fmt in (("Throughput (Mops/s, all threads)", "mops", mops),
                                   ("Bytes per key (peak RSS / keys)", "bytes_per_key", "%.0f"),
                                   ("Nodes per key", "nodes_per_key", "%.2f")):
            w("### %s, %s keys" % (title, dist))
            w("")
            body = [[name] + [grid_cell(results, name, params, column, fmt) for _, params in cols] for name in rows]
            for ours, peer in pairs if column == "mops" else []:
                body.append(["*%s / %s*" % (ours, peer)]
                            + ["*%s*" % ratio_text(compare(results.point(ds=ours, **params),
                                                           results.point(ds=peer, **params), "mops"))
                               for _, params in cols])
            w(table(["structure"] + [h for h, _ in cols], body))
            if column == "mops":
                w("")
                w(spread_line([(results.point(ds=n, **params), "`%s`, %s" % (n, h)) for n in rows
                               for h, params in cols], "mops"))
            w("")
        render_depths(w, results, dist, cols, rows)
        failures += [(results.point(ds=n, **params), "`%s`, %s, %s" % (n, dist, h)) for n in rows for h, params in cols]
    section = failed_points(failures)
    if section:
        w(section)


def page(results):
    out = []
    w = out.append
    w("Each section is one part of the experiment (issues 5 and 6), its structures measured side by side.")
    w("")
    w("Bytes per key: the trial's peak resident set (the whole process: harness, buffers, allocator")
    w("slack and retired nodes included) divided by the keys in the structure at the end. Nodes per")
    w("key: nodes allocated minus nodes freed (descriptors included where a structure counts them")
    w("apart), i.e. reachable nodes plus those retired and not yet freed, divided by the keys;")
    w("`unavailable` where the structure does not count its nodes. *refused*: the harness refuses the")
    w("point (a structure without a thread-safe erase, tbb.concurrent_map, deletes only with one thread),")
    w("so it is not run.")
    w("Search depth: nodes a search for a key in the tree reads (sentinels on the way included), mean")
    w("over the keys after the trial and, in brackets, the deepest key; `unavailable` for the peers,")
    w("whose trees cannot be walked.")
    w("")
    for part in PARTS:
        if results.points(part=part):
            render_part(w, results, part)
    missing = parts_not_measured(results, PARTS, "CDSBENCH_BST_PARTS")
    if missing:
        w(missing)
        w("")
    return "\n".join(out)


EXPERIMENT = Experiment(
    title="Concurrent BSTs and their peers: results",
    description="Issues 5 and 6: our BSTs beside libcds's and oneTBB's ordered structures, in three parts "
                "(external, internal, sizes); see the docstring of experiments/bst.py.",
    grid={"part": SELECTED, "ds": STRUCTURES, "key_range": union("key_ranges"),
          "distribution": union("distributions"), "updates": union("updates"), "threads": union("threads")},
    exclude=[outside, lambda p: refused(STRUCTURES.entry(p["ds"]), p["updates"], p["threads"])],
    trials=5,
    seed=5,
    options=options,
    derived={
        "mops": "throughput_ops_per_s / 1e6",
        "bytes_per_key": ("peak_rss_bytes / actual_size",
                          lambda r: r["peak_rss_bytes"] / r["actual_size"]
                          if isinstance(r.get("peak_rss_bytes"), int) and r.get("actual_size") else None),
        "nodes_per_key": ("(nodes_allocated - nodes_freed [+ descriptors]) / actual_size", nodes_per_key),
        "ns_per_node_read": ("threads * 1e9 / (throughput_ops_per_s * search_depth_mean)", ns_per_node_read),
    },
    plots=[
        Line(x="threads", y="mops", series="ds", facets=["part", "distribution", "updates"],
             where={"part": ["external", "internal"]}, title="Throughput by threads (Mops/s, all threads)"),
        Bar(x="ds", y="mops", facets=["key_range"], where={"part": "sizes"},
            title="Read-only throughput, 2 threads, by tree size (Mops/s)"),
    ],
    # The 10M-key prefill may take its 15 minutes, then the trial and the validation.
    timeout_s=1200,
    page=page,
)
