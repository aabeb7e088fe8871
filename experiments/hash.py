"""The concurrent hash maps and their peers: the benchmark of issue 15 (`make bench-hash`, which
writes docs/results-hash.md).

Three parts, each measuring its maps side by side, one section of the page each:

- `maps`: every map the registry holds (kind unordered_map: ours and the peers'), 64-bit keys,
  key ranges 10,000 and 1,000,000 (prefilled to half: 5 K and 500 K keys, steady state),
  0/10/50% updates (half inserts, half deletes), uniform and Zipf 0.99 keys, 1, 2 and 4 threads;
  each point 5 trials of 1 s. The page reports Mops/s, bytes per key (peak RSS / keys) and, per
  column, the goals' ratios: seqlock_probe_map (the map of ours built to be the fastest) against
  the fastest peer there, and feldman_wait_free_map against libcds's FeldmanHashMap.
- `memory`: every map, one thread inserting 2^20 random keys (from 2^40) into a map built at its
  default size (`--presize no`), so it grows to its size during the trial: the bytes it holds from
  its allocator per key after growth and at the peak of a doubling (where the map counts them),
  peak RSS per key, and its resizes.
- `synthetic`: the dedup study's synthetic test (its Fig. 6): 15 M operations in all, 16%
  inserts and 84% searches, digest keys (`--keys digest`) drawn from 2.4 M (so about 1.9 M
  distinct digests are inserted), no prefill, with each named hash a map is built with
  (`--hash bytesum|parsec3|even`), 1, 2 and 4 threads. Every map built with digest keys (the
  registry's key_hashes["digest"]) runs. The page reports Mops/s, the occupancy each map reports
  (longest chain, buckets used, deepest key), and the ratios the study gives: the wait-free map
  against the chaining table and oneTBB's.

About half a day on 2 cores at full size (an estimate), most of it the synthetic test's bytesum
points: a trial of the chaining table, oneTBB's map or Michael's map takes 5 to 15 s at 1.5 M
operations, and ten times the operations on chains ten times longer should take 10 to 20 minutes
at 15 M. docs/results-hash.md ran in 43
minutes with CDSBENCH_HASH_DURATION_MS=400 and CDSBENCH_HASH_SYNTHETIC_OPS=1500000. The
environment shrinks it (lists are comma-separated):

    CDSBENCH_HASH_PARTS=maps,memory              these parts only (maps, memory, synthetic)
    CDSBENCH_HASH_STRUCTURES=feldman_wait_free_map,libcds.feldman_hash_map   these rows only
    CDSBENCH_HASH_KEY_RANGES=20000               maps: these key ranges
    CDSBENCH_HASH_UPDATES=0,50                   maps: these update percentages
    CDSBENCH_HASH_DISTRIBUTIONS=uniform          maps: these key distributions
    CDSBENCH_HASH_THREADS=1,2                    maps and synthetic: these thread counts
    CDSBENCH_HASH_DURATION_MS=200                maps: the measured phase of a trial (1000)
    CDSBENCH_HASH_SYNTHETIC_OPS=1500000          synthetic: operations in all (15000000)
    CDSBENCH_HASH_HASHES=bytesum,even            synthetic: these hashes

and `--trials N` the trials per point, e.g.

    CDSBENCH_HASH_PARTS=maps CDSBENCH_HASH_KEY_RANGES=20000 CDSBENCH_HASH_DURATION_MS=200 \\
        .venv/bin/cdsbench-run experiments/hash.py --trials 2 --out /tmp/hash.md

A structure named here that the harness does not register is left out. A point the harness
would refuse (deletes beside other threads on a map without a thread-safe erase: the registry's
concurrent_erase) is not run, and the page says `refused`.
"""
from cdsbench.experiment import Experiment, Line, env, registered_structures
from cdsbench.markdown import (DASH, cell, compare, failed_points, fastest, measured_rows, parts_not_measured,
                               ratio_text, spread_line, table, used_values)

HASHES = ["bytesum", "parsec3", "even"]
# The goals' maps (issue 15), by name: the registry has no field for "our fastest map", "the peer
# of the same algorithm" or "the study's baselines".
FAST = "seqlock_probe_map"
FELDMAN, LIBCDS_FELDMAN = "feldman_wait_free_map", "libcds.feldman_hash_map"
STUDY_BASELINES = ["dedup_chaining_map", "tbb.concurrent_hash_map"]
FAST_GOAL, FELDMAN_GOAL, BYTES_GOAL = 1.2, 1.2, 40

SYNTHETIC_OPS = env("CDSBENCH_HASH_SYNTHETIC_OPS", 15_000_000, minimum=1)
SYNTHETIC_INSERT = 16  # the study's mix: 16% inserts of digests drawn from ops x 16%, the rest finds
MEMORY_KEYS = 1 << 20
MEMORY_KEY_RANGE = 1 << 40  # 2^20 draws from 2^40 repeat a key about once in two trials

PARTS = {
    "maps": {"key_ranges": env("CDSBENCH_HASH_KEY_RANGES", [10_000, 1_000_000], kind=int, minimum=1),
             "updates": env("CDSBENCH_HASH_UPDATES", [0, 10, 50], kind=int, minimum=0),
             "distributions": env("CDSBENCH_HASH_DISTRIBUTIONS", ["uniform", "zipf:0.99"], kind=str),
             "hashes": ["even"]},
    "memory": {"key_ranges": [MEMORY_KEY_RANGE], "updates": [100], "distributions": ["uniform"], "hashes": ["even"],
               "threads": [1]},
    "synthetic": {"key_ranges": [max(1, SYNTHETIC_OPS * SYNTHETIC_INSERT // 100)], "updates": [SYNTHETIC_INSERT],
                  "distributions": ["uniform"], "hashes": env("CDSBENCH_HASH_HASHES", HASHES, choices=HASHES)},
}
THREADS = env("CDSBENCH_HASH_THREADS", [1, 2, 4], kind=int, minimum=1)
for part in ("maps", "synthetic"):
    PARTS[part]["threads"] = THREADS
SELECTED = env("CDSBENCH_HASH_PARTS", list(PARTS), choices=list(PARTS))
CHOSEN = env("CDSBENCH_HASH_STRUCTURES", [], kind=str)
DURATION_MS = env("CDSBENCH_HASH_DURATION_MS", 1000, minimum=1)

STRUCTURES = registered_structures(kind="unordered_map", where=lambda s: not CHOSEN or s["name"] in CHOSEN)


def union(name):
    return list(dict.fromkeys(v for part in SELECTED for v in PARTS[part][name]))


def refused(entry, updates, threads):
    """The harness refuses deletes beside other threads on a map without a thread-safe erase."""
    return not entry["concurrent_erase"] and updates > 0 and threads > 1


def outside(p):
    """A combination of the grid that is no point of its part (a synthetic point needs the hash
    among those its map is built with)."""
    axes = PARTS[p["part"]]
    if p["part"] == "synthetic" and p["hash"] not in STRUCTURES.entry(p["ds"])["key_hashes"].get("digest", []):
        return True
    return not all(p[key] in axes[name] for key, name in (("key_range", "key_ranges"), ("updates", "updates"),
                                                          ("distribution", "distributions"), ("hash", "hashes"),
                                                          ("threads", "threads")))


def options(p):
    o = {"ds": p["ds"], "threads": p["threads"], "key_range": p["key_range"], "distribution": p["distribution"],
         "pin": "compact"}
    if p["part"] == "maps":
        o.update({"insert": p["updates"] / 2, "delete": p["updates"] / 2, "duration_ms": DURATION_MS})
        if not STRUCTURES.entry(p["ds"])["concurrent_erase"]:
            o["prefill"] = "insert-only"  # its erase is not thread-safe (see the page)
    elif p["part"] == "memory":
        o.update({"insert": 100, "delete": 0, "prefill": "none", "ops": MEMORY_KEYS, "presize": "no"})
    else:
        o.update({"keys": "digest", "hash": p["hash"], "insert": SYNTHETIC_INSERT, "delete": 0, "prefill": "none",
                  "ops": SYNTHETIC_OPS})
    return o


def per_key(column):
    """A figure the map reports, per key it holds at the end (None where it does not report it)."""
    def of(r):
        return r[column] / r["actual_size"] if isinstance(r.get(column), int) and r.get("actual_size") else None
    return ("%s / actual_size" % column, of)


# ---------------------------------------------------------------------------------------------
# The page


def thousands_of(n):
    return "%gM" % (n / 1e6) if n >= 1_000_000 else "%gK" % (n / 1e3) if n >= 1000 else str(n)


def mops(v):
    return "%.2g" % v if 0 < v < 0.01 else "%.3f" % v


def grid_cell(results, name, params, column, fmt):
    point = results.point(ds=name, **params)
    if point is None and refused(results.structures[name], params["updates"], params["threads"]):
        return "refused"
    return cell(point, column, fmt)


def structure_line(results, name, part):
    entry = results.structures[name]
    used = next((p.value("reclaimer") for p in results.points(part=part, ds=name)
                 if p.status == "ok" and p.value("reclaimer")), "?")
    return f"- `{name}` (reclaimer `{used}`; {entry['library']}): {entry['description']}"


def maps_columns(results, dist):
    """The columns of the maps part's tables for one key distribution: (heading, point params)."""
    return [("%s keys, %d%% upd, %dT" % (thousands_of(kr // 2), u, t),
             {"part": "maps", "hash": "even", "distribution": dist, "key_range": kr, "updates": u, "threads": t})
            for kr in used_values(results, "maps", "key_range") for u in used_values(results, "maps", "updates")
            for t in used_values(results, "maps", "threads")]


def speed_goals(results):
    """The maps part's goals (issue 15) that its rows allow: (label, pick, goal, the columns it
    applies to, whether the second map varies by column), pick(params) -> (a, b) or None."""
    rows = measured_rows(results, "maps")
    peers = [n for n in rows if results.structures[n]["library"] != "cdsbench"]
    goals = []
    if FAST in rows and peers:
        def best_peer(params):
            peer = fastest(results, peers, params, "mops")
            return (FAST, peer) if peer else None
        goals.append(("%s / best peer" % FAST, best_peer, FAST_GOAL, lambda params: params["threads"] <= 2, True))
    if FELDMAN in rows and LIBCDS_FELDMAN in rows:
        goals.append(("%s / %s" % (FELDMAN, LIBCDS_FELDMAN), lambda params: (FELDMAN, LIBCDS_FELDMAN), FELDMAN_GOAL,
                      lambda params: True, False))
    return goals


def comparisons(results, pick, cols):
    """Per column, the Mops/s comparison of pick(params)'s two maps and the second's name (or None)."""
    out = []
    for _, params in cols:
        pair = pick(params)
        c = compare(results.point(ds=pair[0], **params), results.point(ds=pair[1], **params), "mops") if pair else None
        out.append((params, c, pair[1] if pair else None))
    return out


def tally(results, goal_entry, cols):
    """How the goal fared in the columns it applies to: (columns compared, median ratio at or above
    the goal, 95% interval entirely at or above it)."""
    label, pick, goal, applies, _ = goal_entry
    found = [c for params, c, _ in comparisons(results, pick, cols) if c is not None and applies(params)]
    return len(found), sum(c.estimate >= goal for c in found), sum(c.has_ci and c.low >= goal for c in found)


def tally_text(goal_entry, counts, named=True):
    label, _, goal, _, _ = goal_entry
    compared, reached, certain = counts
    return ("%sthe median ratio is at least %.1f in %d of %d columns%s, its 95%% interval entirely at or above %.1f "
            "in %d." % ("`%s`: " % label if named else "", goal, reached, compared,
                        " of 1 and 2 threads" if goal_entry[4] else "", goal, certain))


def render_goals(w, results):
    """The goals of issue 15, each with the columns that reached it, over the whole page."""
    w("## Goals")
    w("")
    cols = [c for dist in used_values(results, "maps", "distribution") for c in maps_columns(results, dist)]
    for entry in speed_goals(results):
        label, _, goal, _, versus_best = entry
        counts = tally(results, entry, cols)
        a, b = label.split(" / ")
        w("- `%s` at least %.1fx %s in every column%s: %s. Over the tables below, %s"
          % (a, goal, "the best peer" if versus_best else "`%s`" % b, " of 1 and 2 threads" if versus_best else "",
             "met" if counts[0] and counts[2] == counts[0] else "NOT met", tally_text(entry, counts, named=False)))
    fast = results.point(ds=FAST, part="memory")
    if fast is not None and fast.status == "ok" and fast.median("held_per_key") is not None:
        held = fast.median("held_per_key")
        w("- `%s` at most %d bytes per key at %s keys: %s. It holds %.1f bytes per key after growth and %.1f at "
          "the peak of its last doubling (the memory part)."
          % (FAST, BYTES_GOAL, "{:,}".format(MEMORY_KEYS), "met" if held <= BYTES_GOAL else "NOT met", held,
             fast.median("held_peak_per_key")))
    w("")
    w("A speed goal is met only where every 95% interval lies at or above it: a median ratio above it")
    w("with an interval reaching below it is a difference this machine's noise cannot confirm.")
    w("")


def render_maps(w, results):
    rows = measured_rows(results, "maps")
    w("## Maps side by side (64-bit keys)")
    w("")
    w("Key ranges %s, prefilled to half (the steady state of the update mix); updates u%% mean"
      % " and ".join("{:,}".format(k) for k in used_values(results, "maps", "key_range")))
    w("`--insert u/2 --delete u/2`, finds are the rest. Every figure is the median of %d trials, each its own"
      % results.trials)
    w("`cdsbench` process, threads pinned `compact`; every trial counted passed its validation (key sum,")
    w("size, every value read and held belonging to its key, the map's invariant check).")
    no_erase = [n for n in rows if not results.structures[n]["concurrent_erase"]]
    if no_erase:
        w("%s, without a thread-safe erase, %s prefilled by inserts only and updates with one thread only."
          % (", ".join("`%s`" % n for n in no_erase), "is" if len(no_erase) == 1 else "are"))
    w("")
    for name in rows:
        w(structure_line(results, name, "maps"))
    w("")
    failures = []
    for dist in used_values(results, "maps", "distribution"):
        cols = maps_columns(results, dist)
        w("### Throughput (Mops/s, all threads), %s keys" % dist)
        w("")
        body = [[n] + [grid_cell(results, n, params, "mops", mops) for _, params in cols] for n in rows]
        goals = speed_goals(results)
        for entry in goals:
            label, pick, _, _, name_b = entry
            body.append(["*%s*" % label] + ["*%s*" % (DASH if c is None else "%s (`%s`)" % (ratio_text(c), b)
                                                      if name_b else ratio_text(c))
                                            for _, c, b in comparisons(results, pick, cols)])
        w(table(["map"] + [h for h, _ in cols], body))
        w("")
        w(" ".join(["The best peer of a column is named beside its ratio."] * any(e[4] for e in goals)
                   + [tally_text(e, tally(results, e, cols)) for e in goals]))
        w("")
        w(spread_line([(results.point(ds=n, **params), "`%s`, %s" % (n, h)) for n in rows for h, params in cols],
                      "mops"))
        w("")
        w("### Bytes per key (peak RSS / keys), %s keys" % dist)
        w("")
        w(table(["map"] + [h for h, _ in cols],
                [[n] + [grid_cell(results, n, params, "bytes_per_key", "%.0f") for _, params in cols] for n in rows]))
        w("")
        failures += [(results.point(ds=n, **params), "`%s`, %s keys, %s" % (n, dist, h))
                     for n in rows for h, params in cols]
    section = failed_points(failures)
    if section:
        w(section)


def render_memory(w, results):
    rows = measured_rows(results, "memory")
    w("## Memory: %s keys inserted into a map of its default size" % "{:,}".format(MEMORY_KEYS))
    w("")
    w("One thread inserts %s random keys drawn from 2^40 (`--prefill none --insert 100 --ops %d --presize"
      % ("{:,}".format(MEMORY_KEYS), MEMORY_KEYS))
    w("no`), so each map starts at its default size and grows (a table that never resizes keeps its")
    w("default: its chains lengthen instead). *Held*: the bytes the map holds from its allocator (its")
    w("tables and nodes, retired ones not yet freed included) per key at the end, after growth settled,")
    w("and at its peak, while a doubling held the old table and the new; `unavailable` where the map does")
    w("not count them. Peak RSS per key counts the whole process (harness and allocator slack")
    w("included). Median of %d trials." % results.trials)
    w("")
    body = []
    for n in rows:
        p = results.point(ds=n, part="memory")
        body.append([n, cell(p, "actual_size", "{:,.0f}".format), cell(p, "held_per_key", "%.1f"),
                     cell(p, "held_peak_per_key", "%.1f"), cell(p, "bytes_per_key", "%.0f"), cell(p, "resizes", "%.0f"),
                     cell(p, "mops", mops)])
    w(table(["map", "keys", "held B/key", "held B/key at peak", "peak RSS B/key", "resizes", "Mops/s"], body))
    w("")
    section = failed_points([(results.point(ds=n, part="memory"), "`%s`" % n) for n in rows])
    if section:
        w(section)


# What each map reports about its occupancy at the end (docs/output.md).
OCCUPANCY = [("longest_chain", "longest chain"), ("buckets_used", "buckets used"),
             ("deepest_key_depth", "deepest key (arrays)"), ("child_arrays", "child arrays")]


def render_synthetic(w, results):
    rows = measured_rows(results, "synthetic")
    w("## The dedup study's synthetic test (digest keys)")
    w("")
    ops = {r.get("ops") for p in results.points(part="synthetic") for r in p.runs}
    w("%s operations in all per trial (%s), 16%% inserts, 84%% finds, digest keys drawn uniformly from"
      % (" or ".join("{:,}".format(o) for o in sorted(o for o in ops if isinstance(o, int))) or "?",
         "the study's 15 M" if ops == {15_000_000} else "fewer than the study's 15 M"))
    w("%s (each a 20-byte digest of random-looking bytes, `--keys digest`), no prefill; each map with the"
      % ", ".join("{:,}".format(k) for k in used_values(results, "synthetic", "key_range")))
    w("named hashes it is built with. Median of %d trials; every trial counted validated." % results.trials)
    w("")
    for name in rows:
        w(structure_line(results, name, "synthetic"))
    w("")
    cols = [("%s, %dT" % (h, t), {"part": "synthetic", "hash": h, "threads": t})
            for h in used_values(results, "synthetic", "hash") for t in used_values(results, "synthetic", "threads")]
    w("### Throughput (Mops/s, all threads)")
    w("")
    body = [[n] + [cell(results.point(ds=n, **params), "mops", mops) for _, params in cols] for n in rows]
    for base in STUDY_BASELINES:
        if FELDMAN in rows and base in rows:
            ratios = comparisons(results, lambda params, b=base: (FELDMAN, b), cols)
            body.append(["*%s / %s*" % (FELDMAN, base)] + ["*%s*" % ratio_text(c) for _, c, _ in ratios])
    w(table(["map"] + [h for h, _ in cols], body))
    w("")
    w(spread_line([(results.point(ds=n, **params), "`%s`, %s" % (n, h)) for n in rows for h, params in cols], "mops"))
    w("")
    w("### Occupancy at the end")
    w("")
    w("What each map reports of its shape (median of the trials with the fewest threads): a chaining")
    w("table its longest chain and the buckets holding a key, the wait-free map the deepest key (the")
    w("arrays a search reads) and its child arrays.")
    w("")
    hashes = used_values(results, "synthetic", "hash")
    one_thread = min(used_values(results, "synthetic", "threads"))
    occupancy = []
    for n in rows:
        for column, label in OCCUPANCY:
            pts = [results.point(ds=n, part="synthetic", hash=h, threads=one_thread) for h in hashes]
            if any(p is not None and p.status == "ok" and p.median(column) is not None for p in pts):
                occupancy.append(["`%s` %s" % (n, label)] + [cell(p, column, "{:,.0f}".format) for p in pts])
    w(table(["figure (%d thread%s)" % (one_thread, "s" if one_thread != 1 else "")] + hashes, occupancy))
    w("")
    section = failed_points([(results.point(ds=n, **params), "`%s`, %s" % (n, h)) for n in rows for h, params in cols])
    if section:
        w(section)


RENDER = {"maps": render_maps, "memory": render_memory, "synthetic": render_synthetic}


def page(results):
    out = []
    w = out.append
    w("Each section is one part of the experiment (issue 15), its maps measured side by side. Bytes per")
    w("key from RSS: the trial's peak resident set (the whole process: harness, buffers, allocator slack")
    w("and retired nodes included) divided by the keys in the map at the end. *refused*: the harness")
    w("refuses the point (a map without a thread-safe erase deletes only with one thread), so it is not")
    w("run. A ratio is A's trials against B's: the ratio of the medians with its 95% bootstrap interval.")
    w("")
    if results.points(part=["maps", "memory"]):
        render_goals(w, results)
    for part, render in RENDER.items():
        if results.points(part=part):
            render(w, results)
    missing = parts_not_measured(results, PARTS, "CDSBENCH_HASH_PARTS")
    if missing:
        w(missing)
        w("")
    return "\n".join(out)


EXPERIMENT = Experiment(
    title="Concurrent hash maps and their peers: results",
    description="Issue 15: our hash maps beside libcds's, oneTBB's and libcuckoo's, on 64-bit keys, their memory, "
                "and the dedup study's synthetic test; see the docstring of experiments/hash.py.",
    grid={"part": SELECTED, "ds": STRUCTURES, "key_range": union("key_ranges"), "distribution": union("distributions"),
          "updates": union("updates"),
          # in HASHES's order (the synthetic part's columns), the 64-bit keys' `even` among them
          "hash": sorted(union("hashes"), key=HASHES.index), "threads": union("threads")},
    exclude=[outside, lambda p: p["part"] == "maps" and refused(STRUCTURES.entry(p["ds"]), p["updates"], p["threads"])],
    trials=5,
    seed=15,
    options=options,
    derived={
        "mops": "throughput_ops_per_s / 1e6",
        "bytes_per_key": ("peak_rss_bytes / actual_size",
                          lambda r: r["peak_rss_bytes"] / r["actual_size"]
                          if isinstance(r.get("peak_rss_bytes"), int) and r.get("actual_size") else None),
        "held_per_key": per_key("bytes_held"),
        "held_peak_per_key": per_key("bytes_held_peak"),
    },
    plots=[
        Line(x="threads", y="mops", series="ds", facets=["part", "hash", "key_range", "distribution", "updates"],
             where={"part": ["maps", "synthetic"]}, title="Throughput by threads (Mops/s, all threads)"),
    ],
    # The synthetic test's slowest map (the chaining table with bytesum, 15 M operations) takes
    # minutes a trial.
    timeout_s=1800,
    page=page,
)
