"""Dedup, the PARSEC deduplicating compressor, with every map and queue: the benchmark of issue 17
(`make bench-dedup`, which writes docs/results-dedup.md).

Each run is one `cdsbench-dedup` encoding (archive to /dev/null: the disk is not measured), its
figures read from its `--json` report. The inputs (scripts/dedup-inputs, made once by the build
step into results/dedup-inputs) are prefixes of one tar of /usr/share then /usr/include and
generated data, at the sizes of PARSEC's three inputs (10.1, 30.7 and 671.6 MB) and 100 MiB; each
run records its input's SHA-256. The dedup study's grids (Feldman et al., SPLASH 2013), scaled to
two cores, in parts, one section of the page each:

- `maps` (its Fig. 5): every map dedup can use x the six inputs x 1, 2, 4 threads per stage (TPPS),
  PARSEC's queue, MTPQ 4, 20 items per batch, rabin, gzip.
- `queues` (Fig. 7): every queue dedup can use x TPPS 1, 2, 4, PARSEC's map, the 30.7 MB tar.
- `sweep` (Fig. 8): four queues x MTPQ 1, 2, 4 x batches (EDITEMS) 1, 5, 20, 50 at TPPS 4 (so
  that MTPQ decides between 4, 2 and 1 queues per stage), the 30.7 MB tar.
- `combos` (Fig. 10): every map x four queues at TPPS 2, the 30.7 MB tar.
- `utilisation` (Fig. 11): the original (PARSEC's map and queue), oneTBB's and a non-blocking
  configuration at TPPS 2 on the 671.6 MB tar: each thread's CPU utilisation over time.
- `goal`: our configuration (DEFAULT_MAP, DEFAULT_QUEUE, gear) against the PARSEC-equivalent one
  (PARSEC's map, queue and hash, rabin) at TPPS 2 on the 100 MiB tar, gzip at PARSEC's level 6 and
  zstd, with each stage measured alone (`--measure-stages`): the speed and efficiency goals.
- `chunking`: each chunker alone on one thread (`--measure-stages`, no compression) on the
  generated 100 MiB: gear's speed goal.

About half an hour on 2 cores (28 minutes of runs here), most of it the 671.6 MB inputs. The
environment shrinks it (lists are comma-separated):

    CDSBENCH_DEDUP_PARTS=queues,sweep            these parts only
    CDSBENCH_DEDUP_MAPS=dedup_chaining_map       these maps only (where a part has several)
    CDSBENCH_DEDUP_QUEUES=locked_ring_queue      these queues only (where a part has several)
    CDSBENCH_DEDUP_INPUTS=tar-10.1MB,gen-10.1MB  maps: these inputs only
    CDSBENCH_DEDUP_INPUT_DIR=/data/inputs        the inputs' folder (results/dedup-inputs), made
                                                 there by the build step unless present

and `--trials N` the trials per point (the goal part has 9 by default, the others 3).
"""
from pathlib import Path

from cdsbench.experiment import Experiment, Line, env, registered_structures
from cdsbench.markdown import (DASH, cell, compare, failed_points, parts_not_measured, ratio_text, spread_line, table,
                               used_values)

ROOT = Path(__file__).resolve().parent.parent
INPUTS = (ROOT / env("CDSBENCH_DEDUP_INPUT_DIR", "results/dedup-inputs")).resolve()

# The configurations the study names, by name: the registry has no field for "PARSEC's map".
CHAIN, RING = "dedup_chaining_map", "locked_ring_queue"
TBB_MAP, TBB_QUEUE = "tbb.concurrent_hash_map", "tbb.concurrent_queue"
WAIT_FREE_MAP, LOCK_FREE_QUEUE = "feldman_wait_free_map", "michael_scott_queue"
# cdsbench-dedup's defaults (apps/dedup/main.cpp), chosen from this experiment's results.
DEFAULT_MAP, DEFAULT_QUEUE = "feldman_wait_free_map", "locked_ring_queue"
SWEEP_QUEUES = [RING, "batch_queue", LOCK_FREE_QUEUE, TBB_QUEUE]
CONFIGS = {  # name: (map, queue, chunker, hash)
    "PARSEC-equivalent": (CHAIN, RING, "rabin", "parsec3"),
    "ours": (DEFAULT_MAP, DEFAULT_QUEUE, "gear", "even"),
    "original": (CHAIN, RING, "rabin", "even"),
    "oneTBB": (TBB_MAP, TBB_QUEUE, "rabin", "even"),
    "non-blocking": (WAIT_FREE_MAP, LOCK_FREE_QUEUE, "rabin", "even"),
}
SPEED_GOAL, EFFICIENCY_GOAL, GEAR_GOAL_B_PER_S = 1.5, 0.9, 1e9
GOAL_TRIALS = 9  # the goal part's trials per point (the other parts: 3)
RSS_BASE, RSS_PER_UNIQUE_CHUNK = 64 << 20, 48

SIZES = ["10.1MB", "30.7MB", "671.6MB"]
ALL_INPUTS = ["tar-" + s for s in SIZES] + ["gen-" + s for s in SIZES]
CHOSEN_MAPS = env("CDSBENCH_DEDUP_MAPS", [], kind=str)
CHOSEN_QUEUES = env("CDSBENCH_DEDUP_QUEUES", [], kind=str)
MAPS = registered_structures(where=lambda s: bool(s["application_map_hashes"]) and (not CHOSEN_MAPS or s["name"] in CHOSEN_MAPS))
QUEUES = registered_structures(where=lambda s: s["application_queue"] and (not CHOSEN_QUEUES or s["name"] in CHOSEN_QUEUES))
ANY = None  # a part's axis that takes every value of the grid

PARTS = {
    "maps": {"map": ANY, "queue": [RING], "threads": [1, 2, 4], "dataset": env("CDSBENCH_DEDUP_INPUTS", ALL_INPUTS,
                                                                                 choices=ALL_INPUTS)},
    "queues": {"map": [CHAIN], "queue": ANY, "threads": [1, 2, 4]},
    "sweep": {"map": [CHAIN], "queue": SWEEP_QUEUES, "threads": [4], "mtpq": [1, 2, 4], "batch": [1, 5, 20, 50]},
    "combos": {"map": ANY, "queue": SWEEP_QUEUES, "threads": [2]},
    "utilisation": {"config": ["original", "oneTBB", "non-blocking"], "threads": [2], "dataset": ["tar-671.6MB"]},
    "goal": {"config": ["PARSEC-equivalent", "ours"], "threads": [2], "dataset": ["tar-100MiB"],
             "compress": ["gzip", "zstd"]},
    "chunking": {"config": ["PARSEC-equivalent", "ours"], "threads": [1], "dataset": ["gen-100MiB"],
                 "compress": ["none"]},
}
DEFAULT_AXES = {"mtpq": [4], "batch": [20], "dataset": ["tar-30.7MB"], "compress": ["gzip"]}
SELECTED = env("CDSBENCH_DEDUP_PARTS", list(PARTS), choices=list(PARTS))
STAGES = ("fragment", "refine", "dedup", "compress", "write")


def axis(part, name):
    return PARTS[part].get(name, DEFAULT_AXES.get(name, ANY))


def union(name, default):
    values = []
    for part in SELECTED:
        values += axis(part, name) or []
    return list(dict.fromkeys(values)) or default


def config_of(p):
    """(map, queue, chunker, hash) of a point, or None for a part without named configurations."""
    return CONFIGS[p["config"]] if p["config"] != "none" else None


def outside(p):
    """A combination of the grid that is no point of its part."""
    part = p["part"]
    for name in ("threads", "mtpq", "batch", "dataset", "compress"):
        values = axis(part, name)
        if values is not ANY and p[name] not in values:
            return True
    if "config" in PARTS[part]:
        if p["config"] not in PARTS[part]["config"]:
            return True
        m, q, _, _ = CONFIGS[p["config"]]
        return (p["map"], p["queue"]) != (m, q)
    if p["config"] != "none":
        return True
    return any(axis(part, name) is not ANY and p[name] not in axis(part, name) for name in ("map", "queue"))


def command(p, dedup):
    config = config_of(p)
    chunker, hash_name = (config[2], config[3]) if config else ("rabin", "even")
    argv = [dedup, "-o", "/dev/null", "-T", p["threads"], "--threads-per-queue", p["mtpq"], "--batch", p["batch"],
            "--map", p["map"], "--hash", hash_name, "--queue", p["queue"], "--chunker", chunker,
            "--compress", p["compress"], INPUTS / p["dataset"]]
    return argv + (["--measure-stages"] if p["part"] in ("goal", "chunking") else [])


def input_sha256(row):
    """The SHA-256 scripts/dedup-inputs recorded beside the run's input."""
    sidecar = Path(str(row["input"]) + ".sha256")
    return sidecar.read_text().strip() if sidecar.is_file() else None


# ---------------------------------------------------------------------------------------------
# The page


def mib(v):
    return "%.1f" % v


def percent(v):
    return "%.0f%%" % (100 * v)


def point(results, part, **params):
    return results.point(part=part, **params)


def spread_and_failures(w, cells):
    """Below a table of input MiB/s: how far its runs spread, and its failed points (if any)."""
    w(spread_line(cells, "input_mib_per_s"))
    w("")
    section = failed_points(cells)
    if section:
        w(section)


def render_goals(w, results):
    w("## Goals")
    w("")
    ours_gzip = results.point(part="goal", config="ours", compress="gzip")
    parsec_gzip = results.point(part="goal", config="PARSEC-equivalent", compress="gzip")
    if ours_gzip and parsec_gzip:
        c = compare(ours_gzip, parsec_gzip, "input_mib_per_s")
        met = c is not None and c.has_ci and c.low >= SPEED_GOAL
        ratio_ok = (ours_gzip.median("ratio") or 0) >= (parsec_gzip.median("ratio") or float("inf"))
        w("- Ours (`%s`, `%s`, gear) against the PARSEC-equivalent configuration (`%s`, `%s`, rabin, hash `parsec3`),"
          % (DEFAULT_MAP, DEFAULT_QUEUE, CHAIN, RING))
        w("  gzip level 6, 2 threads per stage, the 100 MiB tar, %d trials a side, at least %.1fx at a ratio at least "
          "as good: %s. "
          "Input MiB/s %s against %s: %s; ratio %s against %s."
          % (min(len(ours_gzip.ok), len(parsec_gzip.ok)), SPEED_GOAL, "met" if met and ratio_ok else "NOT met",
             cell(ours_gzip, "input_mib_per_s", "%.1f"),
             cell(parsec_gzip, "input_mib_per_s", "%.1f"), ratio_text(c), cell(ours_gzip, "ratio", "%.2f"),
             cell(parsec_gzip, "ratio", "%.2f")))
    for config in ("ours", "PARSEC-equivalent"):
        p = results.point(part="goal", config=config, compress="zstd")
        if p:
            w("- With zstd (level 3), %s: %s MiB/s, ratio %s." % (config, cell(p, "input_mib_per_s", "%.1f"),
                                                                   cell(p, "ratio", "%.2f")))
    for config in ("ours", "PARSEC-equivalent"):
        p = results.point(part="goal", config=config, compress="gzip")
        if p:
            e = p.median("efficiency")
            w("- Efficiency at 2 threads per stage, %s, gzip: %s of the bound (%s MiB/s; goal at least %.0f%%): %s "
              "(min %s, max %s over the trials)."
              % (config, cell(p, "efficiency", "%.2f"), cell(p, "bound_mib_per_s", "%.1f"), 100 * EFFICIENCY_GOAL,
                 "met" if e is not None and e >= EFFICIENCY_GOAL else "NOT met", cell(p, "efficiency", "%.2f", "min"),
                 cell(p, "efficiency", "%.2f", "max")))
    gear = results.point(part="chunking", config="ours")
    if gear:
        v = gear.median("stage_chunk_mib_per_s_per_core")
        w("- gear alone on one thread, in memory, generated data of compressibility 0.5: %s MiB/s = %s B/s (goal at "
          "least 10^9 B/s): %s. Rabin (PARSEC's): %s MiB/s."
          % (cell(gear, "stage_chunk_mib_per_s_per_core", "%.0f"), "%.3g" % (v * 2**20) if v else DASH,
             "met" if v and v * 2**20 >= GEAR_GOAL_B_PER_S else "NOT met",
             cell(results.point(part="chunking", config="PARSEC-equivalent"), "stage_chunk_mib_per_s_per_core", "%.0f")))
    big = [p for p in results.points(part="maps", dataset=["tar-671.6MB", "gen-671.6MB"]) if p.status == "ok"]
    if big:
        over = [(p, r) for p in big for r in p.ok if r["peak_rss_bytes"] > r["rss_allowance_bytes"]]
        worst = max((r["peak_rss_bytes"] / r["rss_allowance_bytes"], p) for p in big for r in p.ok)
        w("- Peak RSS at most 64 MiB + 48 B per unique chunk, over the %d runs on the 671.6 MB inputs: %s (largest "
          "peak %.0f MiB, %.2f of its allowance, %s)."
          % (sum(len(p.ok) for p in big), "met" if not over else "NOT met in %d runs" % len(over),
             max(r["peak_rss_bytes"] for p in big for r in p.ok) / 2**20, worst[0], worst[1].label))
    w("")
    w("A speed goal is met only where the 95% interval of the ratio lies at or above it.")
    w("")


def render_inputs(w, results):
    w("## Inputs")
    w("")
    rows = []
    for name in results.values("dataset"):
        runs = [r for p in results.points(dataset=name) for r in p.ok]
        if runs:
            r = runs[0]
            rows.append(["`%s`" % name, "{:,}".format(r["input_bytes"]), "`%s`" % (r.get("input_sha256") or "?")])
    w(table(["input", "bytes", "SHA-256"], rows))
    w("")


def render_maps(w, results):
    if not results.points(part="maps"):
        return
    maps = used_values(results, "maps", "map")
    inputs = used_values(results, "maps", "dataset")
    threads = used_values(results, "maps", "threads")
    w("## Maps in the pipeline (the study's Fig. 5)")
    w("")
    w("Input MiB/s, median of %d runs; `%s`, MTPQ 4, batches of 20, rabin, gzip 6. Columns: input, threads per" % (
        results.trials, RING))
    w("stage. Dedup ratio (input / unique bytes) and compression ratio (input / archive) per input below.")
    w("")
    cols = [(i, t) for i in inputs for t in threads]
    body = [["`%s`" % m] + [cell(point(results, "maps", map=m, dataset=i, threads=t), "input_mib_per_s", "%.1f")
                            for i, t in cols] for m in maps]
    w(table(["map"] + ["%s %dT" % (i, t) for i, t in cols], body))
    w("")
    cells = [(point(results, "maps", map=m, dataset=i, threads=t), "`%s`, %s %dT" % (m, i, t)) for m in maps for i, t in cols]
    spread_and_failures(w, cells)
    any_map = maps[0]
    w(table(["input", "dedup ratio", "ratio", "chunks", "unique"],
            [["`%s`" % i] + [cell(point(results, "maps", map=any_map, dataset=i, threads=threads[0]), k, f)
                             for k, f in (("dedup_ratio", "%.3f"), ("ratio", "%.3f"), ("chunks", "{:,.0f}".format),
                                          ("chunks_unique", "{:,.0f}".format))] for i in inputs]))
    w("")


def render_queues(w, results):
    if not results.points(part="queues"):
        return
    queues = used_values(results, "queues", "queue")
    threads = used_values(results, "queues", "threads")
    w("## Queues in the pipeline (the study's Fig. 7)")
    w("")
    w("Input MiB/s, median of %d runs; `%s`, MTPQ 4, batches of 20, the 30.7 MB tar, rabin, gzip 6. At 2 threads" % (
        results.trials, CHAIN))
    w("per stage, the CPU the compressors got and the writer took (each over its threads' wall time): a consumer")
    w("with nothing to take sleeps in the locked ring, and spins then yields in the generic wrapper of any other")
    w("queue, taking CPU from the compressors on these 2 cores.")
    w("")
    body = []
    for q in queues:
        row = ["`%s`" % q] + [cell(point(results, "queues", queue=q, threads=t), "input_mib_per_s", "%.1f") for t in threads]
        two = point(results, "queues", queue=q, threads=2)
        row += [cell(two, "compress_cpu_utilisation", percent), cell(two, "write_cpu_utilisation", percent)]
        body.append(row)
    w(table(["queue"] + ["%dT" % t for t in threads] + ["compress CPU, 2T", "writer CPU, 2T"], body))
    w("")
    spread_and_failures(w, [(point(results, "queues", queue=q, threads=t), "`%s` %dT" % (q, t))
                            for q in queues for t in threads])


def render_sweep(w, results):
    if not results.points(part="sweep"):
        return
    w("## MTPQ and batch size (the study's Fig. 8)")
    w("")
    w("Input MiB/s, median of %d runs; 4 threads per stage (so MTPQ 1, 2, 4 give 4, 2, 1 queues per stage), `%s`," % (
        results.trials, CHAIN))
    w("the 30.7 MB tar, rabin, gzip 6. Last columns: batches of 20 and of 50 against batches of 1, per row (the")
    w("study: 20 items +9% over 1, 50 items best).")
    w("")
    batches = sorted(used_values(results, "sweep", "batch"))
    body, cells = [], []
    for q in used_values(results, "sweep", "queue"):
        for m in sorted(used_values(results, "sweep", "mtpq")):
            pts = {b: point(results, "sweep", queue=q, mtpq=m, batch=b) for b in batches}
            ratios = [ratio_text(compare(pts.get(b), pts.get(1), "input_mib_per_s")) for b in (20, 50)]
            body.append(["`%s`" % q, str(m)] + [cell(pts[b], "input_mib_per_s", "%.1f") for b in batches] + ratios)
            cells += [(pts[b], "`%s` MTPQ %d batch %d" % (q, m, b)) for b in batches]
    w(table(["queue", "MTPQ"] + ["batch %d" % b for b in batches] + ["batch 20 / batch 1", "batch 50 / batch 1"], body))
    w("")
    spread_and_failures(w, cells)


def render_combos(w, results):
    if not results.points(part="combos"):
        return
    w("## Map x queue (the study's Fig. 10)")
    w("")
    w("Input MiB/s, median of %d runs; 2 threads per stage, MTPQ 4, batches of 20, the 30.7 MB tar, rabin, gzip 6." %
      results.trials)
    w("")
    queues = used_values(results, "combos", "queue")
    maps = used_values(results, "combos", "map")
    cells = [(point(results, "combos", map=m, queue=q), "`%s` + `%s`" % (m, q)) for m in maps for q in queues]
    w(table(["map"] + ["`%s`" % q for q in queues],
            [["`%s`" % m] + [cell(point(results, "combos", map=m, queue=q), "input_mib_per_s", "%.1f") for q in queues]
             for m in maps]))
    w("")
    spread_and_failures(w, cells)


def render_utilisation(w, results):
    configs = [c for c in PARTS["utilisation"]["config"] if results.point(part="utilisation", config=c)]
    if not configs:
        return
    w("## CPU utilisation over time (the study's Fig. 11)")
    w("")
    w("2 threads per stage on the 671.6 MB tar, rabin, gzip 6; one run of each configuration (its first trial): each")
    w("thread's CPU time over wall time, in percent, averaged over tenths of the run. A stage's threads share the 2")
    w("cores with the other stages' (8 threads), so the compressors' share is what the machine gave them.")
    w("")
    for config in configs:
        p = results.point(part="utilisation", config=config)
        m, q, _, _ = CONFIGS[config]
        w("### %s (`%s`, `%s`)" % (config, m, q))
        w("")
        if p.status != "ok":
            w("No run: %s." % p.status)
            w("")
            continue
        run = p.ok[0]
        timeline = results.series(run, "utilisation_timeline")
        end = run["elapsed_s"]
        if not timeline:
            w("No samples: the run took %.2f s, less than a sampling interval (%.1f s)." % (end, run["utilisation_interval_s"]))
            w("")
            continue
        rows = []
        for name in sorted(timeline, key=lambda n: (STAGES.index(n.split(".")[0]), int(n.split(".")[1]))):
            tenths = []
            for k in range(10):
                lo, hi = end * k / 10, end * (k + 1) / 10
                covered = sum(max(0.0, min(b, hi) - max(a, lo)) * u for a, b, u in timeline[name])
                span = sum(max(0.0, min(b, hi) - max(a, lo)) for a, b, _ in timeline[name])
                tenths.append("%.0f" % (100 * covered / span) if span > 0 else DASH)
            rows.append(["`%s`" % name] + tenths)
        w(table(["thread"] + ["%d%%" % (10 * k) for k in range(10)], rows))
        w("")
        w("Input %s MiB/s in this run; each stage's CPU over its threads' wall time: %s." % (
            mib(run["input_mib_per_s"]),
            ", ".join("%s %.0f%%" % (s, 100 * run["%s_cpu_utilisation" % s]) for s in STAGES)))
        w("")


def page(results):
    out = []
    w = out.append
    w("Each section is one part of the experiment (issue 17), its configurations measured side by side. A")
    w("ratio is A's runs against B's: the ratio of the medians with its 95% bootstrap interval. Each run encodes")
    w("its input to /dev/null (no disk), every middle stage with the threads named, beside the one fragmenter and")
    w("the one writer: on this machine's 2 cores, 2 threads per stage is 8 threads.")
    w("")
    render_goals(w, results)
    render_inputs(w, results)
    render_maps(w, results)
    render_queues(w, results)
    render_sweep(w, results)
    render_combos(w, results)
    render_utilisation(w, results)
    missing = parts_not_measured(results, PARTS, "CDSBENCH_DEDUP_PARTS")
    if missing:
        w(missing)
        w("")
    return "\n".join(out)


EXPERIMENT = Experiment(
    title="Dedup with every map and queue: results",
    description="Issue 17: the PARSEC dedup pipeline with each map and queue of the project and its peers, the "
                "dedup study's figures on two cores, and the goals; see the docstring of experiments/dedup.py.",
    grid={"part": SELECTED, "config": ["none"] + union("config", []), "map": MAPS, "queue": QUEUES,
          "threads": union("threads", [2]), "mtpq": union("mtpq", [4]), "batch": union("batch", [20]),
          "dataset": union("dataset", ["tar-30.7MB"]), "compress": union("compress", ["gzip"])},
    exclude=[outside],
    trials=3,
    # The goal's configurations side by side: with 3 trials a side, this machine's noise alone
    # put the ratio's interval from [1.53, 2.44] one day to [1.45, 2.34] the next, its median 2.0.
    trials_for=lambda p: GOAL_TRIALS if p["part"] == "goal" else 3,
    harness="build/cdsbench-dedup",
    build=[["cmake", "--build", "build", "--target", "cdsbench-dedup"], ["scripts/dedup-inputs", INPUTS]],
    command=command,
    validate=['result == "PASS"', "input_mib_per_s > 0"],
    derived={
        "input_sha256": input_sha256,
        "rss_allowance_bytes": ("64 MiB + 48 B per unique chunk",
                                lambda r: RSS_BASE + RSS_PER_UNIQUE_CHUNK * r["chunks_unique"]),
    },
    plots=[
        Line(x="threads", y="input_mib_per_s", series="map", facets=["part", "dataset"], where={"part": ["maps"]},
             title="Maps: input MiB/s by threads per stage"),
        Line(x="threads", y="input_mib_per_s", series="queue", facets=["part"], where={"part": ["queues"]},
             title="Queues: input MiB/s by threads per stage"),
        Line(x="batch", y="input_mib_per_s", series="queue", facets=["part", "mtpq"], where={"part": ["sweep"]},
             logx=True, title="Sweep: input MiB/s by batch size"),
    ],
    metric="input_mib_per_s",
    timeout_s=600,
    page=page,
)
