"""experiments/bst.py, hash.py, queue.py, dedup.py, nr.py, reclaim.py and prefill.py, the experiments behind docs/results-*.md: the grids
they plan from the harness's registry, and each one's page from a shrunk sweep of the real
harness (the assertions of scripts/bench-bst, which they replace, moved here)."""
import hashlib
import re
import statistics
import subprocess
from collections import Counter

import pytest

from cdsbench.experiment import load, make_plan
from conftest import BUILD, ROOT, structures
from runner_support import db, rows, runner

EXTERNAL = ["natarajan_mittal_bst", "ellen_bst", "bst_tk", "libcds.ellen_bst", "libcds.skiplist_map",
            "tbb.concurrent_map"]
INTERNAL = ["howley_jones_bst", "ramachandran_mittal_bst", "drachsler_bst", "citrus_bst", "bronson_avl",
            "libcds.bronson_avl", "ellen_bst"]


@pytest.fixture
def clean_env(monkeypatch):
    import os
    for name in list(os.environ):
        if name.startswith(tuple(f"CDSBENCH_{e}_" for e in ("BST", "HASH", "QUEUE", "DEDUP", "NR", "RECLAIM", "PREFILL",
                                                             "ZSET"))):
            monkeypatch.delenv(name)


def options(run):
    argv = run.argv
    return {argv[i]: (argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("--") else True)
            for i in range(1, len(argv)) if argv[i].startswith("--")}


def plan_of(name):
    return make_plan(load(str(ROOT / "experiments" / f"{name}.py")), BUILD / "cdsbench")


def table_rows(page, title, start_at=0):
    """The rows of the first table at or after the line starting with title: {label: [cells]}."""
    lines = page[start_at:].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    header = next(i for i in range(start, len(lines)) if lines[i].startswith("|"))
    out = {}
    for line in lines[header + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        out[cells[0]] = cells[1:]
    return out


def interval(text):
    """'1.82 [1.61, 2.05]' or 'no measurable difference [0.91, 1.12]' -> (estimate or None, low, high)."""
    m = re.fullmatch(r"\*?(?:(\d+\.\d+)|no measurable difference) \[(\d+\.\d+), (\d+\.\d+)\]\*?", text)
    assert m, text
    return (float(m.group(1)) if m.group(1) else None), float(m.group(2)), float(m.group(3))


def median_of(con, column, **where):
    clause = " AND ".join(f"{k} = ?" for k in where)
    # NULLs skipped, as the page's statistics skip them (cdsbench.markdown.Point.values).
    values = [r[column] for r in rows(con, f"SELECT {column} FROM runs WHERE run_status = 'ok' AND {clause}",
                                      *where.values()) if r[column] is not None]
    return statistics.median(values)


# ---------------------------------------------------------------------------------------------
# bst.py


def test_bst_plans_the_three_parts_of_issues_5_and_6(clean_env):
    registry = {s["name"]: s for s in structures()}
    ours = [n for n, s in registry.items() if s["library"] == "cdsbench" and s["kind"] == "ordered_set"
            and s["search_depths"]]
    assert len(ours) == 8  # the trees of issues 5 and 6, found by their data
    plan = plan_of("bst")
    assert plan.grid["part"] == ["external", "internal", "sizes"]
    assert plan.grid["key_range"] == [2_000_000, 20_000_000] and plan.grid["updates"] == [0, 10, 50, 100]
    assert plan.grid["distribution"] == ["uniform", "zipf:0.99"] and plan.grid["threads"] == [1, 2, 4]
    by_part = {part: [p for p in plan.points if p["part"] == part] for part in plan.grid["part"]}
    assert list(dict.fromkeys(p["ds"] for p in by_part["external"])) == [n for n in plan.grid["ds"] if n in EXTERNAL]
    assert set(p["ds"] for p in by_part["internal"]) == set(INTERNAL)
    assert set(p["ds"] for p in by_part["sizes"]) == set(ours) | {"libcds.ellen_bst", "libcds.bronson_avl"}
    # 2 distributions x 4 update ratios x 3 thread counts; a structure without a thread-safe erase
    # (tbb.concurrent_map) has no update points beside other threads: 2 x 3 x 2 fewer.
    refused = 2 * 3 * 2
    assert len(by_part["external"]) == sum(24 if registry[n]["concurrent_erase"] else 24 - refused for n in EXTERNAL)
    assert len(by_part["internal"]) == 24 * len(INTERNAL)
    assert len(by_part["sizes"]) == 2 * (len(ours) + 2)
    assert all(p["updates"] == 0 and p["threads"] == 2 and p["distribution"] == "uniform" for p in by_part["sizes"])
    assert len(plan.runs) == 5 * len(plan.points)
    for run in plan.runs:
        o = options(run)
        p = run.point
        assert o["--ds"] == p["ds"] and o["--threads"] == str(p["threads"]) and o["--key-range"] == str(p["key_range"])
        assert o["--insert"] == o["--delete"] == "%g" % (p["updates"] / 2) and o["--distribution"] == p["distribution"]
        assert o["--duration-ms"] == "3000" and o["--pin"] == "compact" and o["--trials"] == "1"
        assert o["--seed"] == str(5 + run.trial)
        assert (o.get("--prefill") == "insert-only") == (not registry[p["ds"]]["concurrent_erase"])
        assert (o.get("--prefill-timeout-ms") == "900000") == (p["part"] == "sizes")


def test_bst_shrinks_through_the_environment(clean_env, monkeypatch):
    monkeypatch.setenv("CDSBENCH_BST_PARTS", "internal")
    monkeypatch.setenv("CDSBENCH_BST_STRUCTURES", "ellen_bst,libcds.ellen_bst")
    monkeypatch.setenv("CDSBENCH_BST_THREADS", "1,2")
    monkeypatch.setenv("CDSBENCH_BST_DURATION_MS", "200")
    plan = plan_of("bst")
    assert plan.grid["part"] == ["internal"] and plan.grid["ds"] == ["ellen_bst", "libcds.ellen_bst"]
    assert len(plan.points) == 2 * 2 * 4 * 2
    assert {options(r)["--duration-ms"] for r in plan.runs} == {"200"}


@pytest.fixture(scope="module")
def bst_page(tmp_path_factory):
    """Parts internal and sizes, both shrunk to trees of 2,000 and 10,000 keys, one thread, 0% and
    50% updates, 2 trials of 50 ms; a structure the harness does not register is asked for too."""
    d = tmp_path_factory.mktemp("bst")
    env = {"CDSBENCH_BST_PARTS": "internal,sizes",
           "CDSBENCH_BST_STRUCTURES": "bronson_avl,howley_jones_bst,libcds.bronson_avl,no_such_tree",
           "CDSBENCH_BST_KEY_RANGES": "4000,20000", "CDSBENCH_BST_UPDATES": "0,50",
           "CDSBENCH_BST_DISTRIBUTIONS": "uniform", "CDSBENCH_BST_THREADS": "1", "CDSBENCH_BST_DURATION_MS": "50"}
    out = d / "bst.md"
    p = runner(ROOT / "experiments" / "bst.py", "run", "database", "markdown", "--trials", "2", "--out", out,
               "--results", d / "r", env=env, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    return d, out, out.read_text(), env


def test_bst_page_has_the_parts_measured_and_names_what_is_missing(bst_page):
    d, out, text, env = bst_page
    assert "## Internal and balanced trees (issue 6)" in text and "## Read-only work on 1M" in text
    assert "Not measured yet: `external`" in text
    assert "- Not registered in the binary measured, so not in the tables: `no_such_tree`." in text
    assert "CDSBENCH_BST_PARTS=internal,sizes " in text and "experiments/bst.py --trials 2 --out " in text

    rows_ = table_rows(text, "### Throughput (Mops/s, all threads), uniform")
    assert list(rows_) == ["bronson_avl", "howley_jones_bst", "libcds.bronson_avl",
                           "*bronson_avl / libcds.bronson_avl*"]
    ours, peer, ratio = rows_["bronson_avl"], rows_["libcds.bronson_avl"], rows_["*bronson_avl / libcds.bronson_avl*"]
    assert len(ours) == 4  # two tree sizes x 0% and 50% updates, one thread
    for a, b, r in zip(ours, peer, ratio):
        estimate, low, high = interval(r)
        # The ratio of the medians, within its interval; "no measurable difference" iff it holds 1.
        assert low - 0.01 <= float(a) / float(b) <= high + 0.01
        # The page prints the bounds to 2 decimals: a bound within rounding of 1 (1.004 shows
        # as 1.00) cannot tell which side of 1 it was.
        if min(abs(low - 1), abs(high - 1)) > 0.005:
            assert (estimate is None) == (low <= 1 <= high)
        if estimate is not None:
            assert abs(estimate - float(a) / float(b)) < 0.01

    # The columns name the tree size (half the key range, the steady prefill).
    sizes_text = text[text.index("## Read-only"):]
    header = next(line for line in sizes_text.splitlines() if line.startswith("| structure |"))
    assert "2,000 keys, 0% upd, 1T" in header and "10,000 keys, 0% upd, 1T" in header

    # Written again from the database alone: the same page.
    p = runner(ROOT / "experiments" / "bst.py", "markdown", "--trials", "2", "--out", out, "--results", d / "r",
               env=env)
    assert p.returncode == 0, p.stderr
    assert out.read_text() == text


def test_bst_search_depths_and_time_per_node_read(bst_page):
    d, _, text, _ = bst_page
    con = db(d / "r", "bst")
    start = text.index("## Read-only")
    depths = table_rows(text, "### Search depth, uniform keys", start)
    assert depths["libcds.bronson_avl"] == ["unavailable"] * 4  # libcds's tree cannot be walked
    where = {"part": "sizes", "key_range": 4000, "updates": 0, "threads": 1}
    for label in ("bronson_avl", "howley_jones_bst"):
        mean, deepest = depths[label][0].replace("(", "").replace(")", "").split()
        depth = median_of(con, "search_depth_mean", ds=label, **where)
        most = max(r["search_depth_max"] for r in rows(con, "SELECT search_depth_max FROM runs WHERE ds = ? AND "
                                                            "part = 'sizes' AND key_range = 4000 AND updates = 0",
                                                       label))
        assert float(mean) == round(depth, 1) and int(deepest) == most
        # ~2,000 keys: no binary tree is shallower on average than log2(n + 1) - 1 (plus a sentinel).
        assert 10.0 <= depth <= most
    # The AVL tree: at most 1.44 log2(n + 2) deep below its root holder (routing nodes included).
    assert max(r["search_depth_max"] for r in rows(con, "SELECT search_depth_max FROM runs WHERE ds = 'bronson_avl' "
                                                        "AND key_range = 4000")) <= 1 + 1.4405 * 11.97

    per_node = table_rows(text, "### Time per node read (ns), uniform keys", start)
    for label in ("bronson_avl", "howley_jones_bst"):
        for r in rows(con, "SELECT * FROM runs WHERE ds = ? AND updates = 0", label):
            if r["throughput_ops_per_s"] == 0:  # a 50 ms trial whose thread the loaded suite never ran: no time per read
                assert r["ns_per_node_read"] is None
                continue
            assert r["ns_per_node_read"] == pytest.approx(
                r["threads"] * 1e9 / (r["throughput_ops_per_s"] * r["search_depth_mean"]))
        ns = median_of(con, "ns_per_node_read", ds=label, **where)
        assert abs(float(per_node[label][0]) - ns) <= 0.5  # "%.1f" below 10 ns
    assert per_node["libcds.bronson_avl"] == ["unavailable", "unavailable"]
    assert "the fastest unbalanced tree (`howley_jones_bst`)" in text


def test_bst_bad_settings_are_one_line_exit_2(tmp_path):
    p = runner(ROOT / "experiments" / "bst.py", "run", "--results", tmp_path / "r",
               env={"CDSBENCH_BST_PARTS": "nonsense"})
    assert p.returncode == 2
    (line,) = p.stderr.strip().splitlines()
    assert "bst.py:" in line and ("$CDSBENCH_BST_PARTS: 'nonsense' is not allowed (allowed: one of external, "
                                  "internal, sizes, comma-separated)") in line
    p = runner(ROOT / "experiments" / "bst.py", "run", "--results", tmp_path / "r",
               env={"CDSBENCH_BST_THREADS": "0"})
    assert p.returncode == 2 and "'0' is not allowed (allowed: an integer >= 1, comma-separated)" in p.stderr


# ---------------------------------------------------------------------------------------------
# hash.py


def test_hash_plans_its_three_parts_from_the_registry(clean_env):
    maps = [s for s in structures() if s["kind"] == "unordered_map"]
    registry = {s["name"]: s for s in maps}
    digest = [s["name"] for s in maps if s["key_hashes"].get("digest", [])]
    plan = plan_of("hash")
    assert plan.grid["part"] == ["maps", "memory", "synthetic"] and plan.grid["ds"] == [s["name"] for s in maps]
    by_part = {part: [p for p in plan.points if p["part"] == part] for part in plan.grid["part"]}
    # maps: 2 key ranges x 3 update ratios x 2 distributions x 3 thread counts; a map without a
    # thread-safe erase has no update points beside other threads (2 x 2 x 2 x 2 fewer).
    assert len(by_part["maps"]) == sum(36 if s["concurrent_erase"] else 36 - 16 for s in maps)
    assert [p["ds"] for p in by_part["memory"]] == [s["name"] for s in maps]
    assert Counter(p["ds"] for p in by_part["synthetic"]) == {s["name"]: 3 * len(s["key_hashes"].get("digest", [])) for s in maps
                                                              if s["key_hashes"].get("digest", [])}
    assert {"dedup_chaining_map", "feldman_wait_free_map", "tbb.concurrent_hash_map"} <= set(digest)
    assert len(plan.runs) == 5 * len(plan.points)
    for run in plan.runs:
        o, p = options(run), run.point
        assert o["--ds"] == p["ds"] and o["--threads"] == str(p["threads"]) and o["--seed"] == str(15 + run.trial)
        if p["part"] == "maps":
            assert o["--key-range"] in ("10000", "1000000") and o["--duration-ms"] == "1000"
            assert o["--insert"] == o["--delete"] == "%g" % (p["updates"] / 2) and "--keys" not in o
            assert (o.get("--prefill") == "insert-only") == (not registry[p["ds"]]["concurrent_erase"])
        elif p["part"] == "memory":
            assert (o["--key-range"], o["--ops"], o["--presize"], o["--prefill"], o["--insert"], o["--delete"],
                    o["--threads"]) == (str(1 << 40), str(1 << 20), "no", "none", "100", "0", "1")
        else:
            assert (o["--keys"], o["--key-range"], o["--ops"], o["--insert"], o["--delete"], o["--prefill"]) == \
                ("digest", "2400000", "15000000", "16", "0", "none")
            assert o["--hash"] in registry[p["ds"]]["key_hashes"].get("digest", [])


@pytest.fixture(scope="module")
def hash_page(tmp_path_factory):
    """The three parts, shrunk: 1,000 keys, 0% and 50% updates, one thread, 2 trials of 50 ms; the
    synthetic test on 60,000 operations with two hashes; four maps."""
    d = tmp_path_factory.mktemp("hash")
    env = {"CDSBENCH_HASH_STRUCTURES": "dedup_chaining_map,feldman_wait_free_map,seqlock_probe_map,"
                                       "libcds.feldman_hash_map",
           "CDSBENCH_HASH_KEY_RANGES": "2000", "CDSBENCH_HASH_UPDATES": "0,50",
           "CDSBENCH_HASH_DISTRIBUTIONS": "uniform", "CDSBENCH_HASH_THREADS": "1", "CDSBENCH_HASH_DURATION_MS": "50",
           "CDSBENCH_HASH_SYNTHETIC_OPS": "60000", "CDSBENCH_HASH_HASHES": "bytesum,even"}
    out = d / "hash.md"
    p = runner(ROOT / "experiments" / "hash.py", "run", "database", "markdown", "--trials", "2", "--out", out,
               "--results", d / "r", env=env, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    return d, out, out.read_text(), env


def test_hash_page_maps_part_compares_our_maps_with_the_peers(hash_page):
    d, out, text, env = hash_page
    rows_ = table_rows(text, "### Throughput (Mops/s, all threads), uniform keys")
    assert list(rows_) == ["dedup_chaining_map", "feldman_wait_free_map", "seqlock_probe_map",
                           "libcds.feldman_hash_map", "*seqlock_probe_map / best peer*",
                           "*feldman_wait_free_map / libcds.feldman_hash_map*"]
    assert len(rows_["seqlock_probe_map"]) == 2  # 1,000 keys x 0% and 50% updates, one thread
    # The only peer here is the best peer of every column, named beside the ratio.
    for a, b, best, r in zip(rows_["seqlock_probe_map"], rows_["libcds.feldman_hash_map"],
                             rows_["*seqlock_probe_map / best peer*"], rows_["*feldman_wait_free_map / "
                                                                            "libcds.feldman_hash_map*"]):
        assert best.endswith("(`libcds.feldman_hash_map`)*")
        estimate, low, high = interval(best[:best.index(" (`")] + "*")
        assert low - 0.01 <= float(a) / float(b) <= high + 0.01
        interval(r)
    # Under the table, in how many columns each goal was reached; above every part, the goals.
    assert re.search(r"`seqlock_probe_map / best peer`: the median ratio is at least 1.2 in [0-2] of 2 columns of 1 "
                     r"and 2 threads, its 95% interval entirely at or above 1.2 in [0-2]\.", text)
    assert re.search(r"`feldman_wait_free_map / libcds.feldman_hash_map`: the median ratio is at least 1.2 in [0-2] of "
                     r"2 columns, its 95% interval", text)
    goals = text[text.index("## Goals"):text.index("## Maps side by side")]
    assert re.search(r"- `seqlock_probe_map` at least 1.2x the best peer in every column of 1 and 2 threads: "
                     r"(NOT )?met\. Over the tables below, the median ratio is at least 1.2 in [0-2] of 2 columns",
                     goals)
    assert re.search(r"- `feldman_wait_free_map` at least 1.2x `libcds.feldman_hash_map` in every column: "
                     r"(NOT )?met\.", goals)
    assert re.search(r"- `seqlock_probe_map` at most 40 bytes per key at 1,048,576 keys: met\. "
                     r"It holds 3[23]\.\d bytes", goals)
    assert "Not measured yet" not in text and "CDSBENCH_HASH_HASHES=bytesum,even " in text

    # Written again from the database alone: the same page.
    p = runner(ROOT / "experiments" / "hash.py", "markdown", "--trials", "2", "--out", out, "--results", d / "r",
               env=env)
    assert p.returncode == 0, p.stderr
    assert out.read_text() == text


def test_hash_page_memory_part_shows_the_bytes_held_after_growth_and_at_the_peak(hash_page):
    d, _, text, _ = hash_page
    con = db(d / "r", "hash")
    memory = table_rows(text, "## Memory")
    keys = 1 << 20
    for name, (size, held, peak, rss, resizes, _) in memory.items():
        assert abs(int(size.replace(",", "")) - keys) <= 3, (name, size)  # 2^20 draws from 2^40
        assert float(rss) > 8  # at least the key itself, from the process's peak RSS
    # seqlock_probe_map grows from its default size to 2^19 buckets of 64 bytes (3 keys each):
    # 32 bytes a key once the old tables are freed, 48 at the peak of the last doubling.
    size, held, peak, rss, resizes, _ = memory["seqlock_probe_map"]
    assert 32 <= float(held) <= 33 and 48 <= float(peak) <= 50 and int(resizes) >= 10
    assert float(held) == round(median_of(con, "held_per_key", part="memory", ds="seqlock_probe_map"), 1)
    assert "It holds %s bytes per key after growth and %s at the peak" % (held, peak) in text
    # The others do not count the bytes they hold; the chaining table never resizes.
    assert memory["libcds.feldman_hash_map"][1:3] == ["unavailable", "unavailable"]
    assert memory["dedup_chaining_map"][4] == "unavailable"


def test_hash_page_synthetic_part_shows_bytesum_crowding_the_chaining_table(hash_page):
    _, _, text, _ = hash_page
    start = text.index("## The dedup study's synthetic test")
    assert "60,000 operations in all per trial (fewer than the study's 15 M)" in text
    rows_ = table_rows(text, "### Throughput (Mops/s, all threads)", start)
    # Only the maps built with digest keys; the ratios the study gives.
    assert list(rows_) == ["dedup_chaining_map", "feldman_wait_free_map",
                           "*feldman_wait_free_map / dedup_chaining_map*"]
    occupancy = table_rows(text, "### Occupancy at the end", start)
    used = occupancy["`dedup_chaining_map` buckets used"]
    assert int(used[0].replace(",", "")) < int(used[1].replace(",", "")) / 3  # bytesum, even
    assert int(occupancy["`feldman_wait_free_map` deepest key (arrays)"][0]) >= 1


def test_hash_bad_settings_are_one_line_exit_2(tmp_path):
    p = runner(ROOT / "experiments" / "hash.py", "run", "--results", tmp_path / "r",
               env={"CDSBENCH_HASH_HASHES": "sha1"})
    assert p.returncode == 2
    (line,) = p.stderr.strip().splitlines()
    assert "hash.py:" in line
    assert "$CDSBENCH_HASH_HASHES: 'sha1' is not allowed (allowed: one of bytesum, parsec3, even" in line


# ---------------------------------------------------------------------------------------------
# nr.py


def test_nr_plans_every_black_box_structure(clean_env):
    registry = [s for s in structures() if s["kind"] == "black_box"]
    plan = plan_of("nr")
    assert plan.grid["ds"] == [s["name"] for s in registry]
    assert plan.grid["updates"] == [0, 10, 100] and plan.grid["threads"] == [1, 2, 4]
    count = Counter(p["ds"] for p in plan.points)
    for s in registry:
        assert count[s["name"]] == (2 if s["method"] == "nr" else 1) * 3 * 3
    ranges = {"synthetic": "100000", "sorted_set": "10000"}
    method = {s["name"]: s for s in registry}
    for run in plan.runs:
        o = options(run)
        entry = method[run.point["ds"]]
        assert o["--key-range"] == ranges.get(entry["sequential"], "1000000")
        assert o.get("--nr-replicas") == (str(run.point["nr_replicas"]) if entry["method"] == "nr" else None)
        assert o["--duration-ms"] == "200" and o["--seed"] == str(8 + run.trial) and o["--pin"] == "compact"
    assert len(plan.runs) == 5 * len(plan.points)


def test_nr_page_from_a_shrunk_sweep(tmp_path):
    out = tmp_path / "nr.md"
    env = {"CDSBENCH_NR_STRUCTURES": "stack", "CDSBENCH_NR_THREADS": "2", "CDSBENCH_NR_DURATION_MS": "20"}
    p = runner(ROOT / "experiments" / "nr.py", "run", "database", "markdown", "--trials", "2", "--out", out,
               "--results", tmp_path / "r", env=env, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    text = out.read_text()
    assert "## stack" in text and "stack: add = push, remove = pop, read = top; key range 1,000,000" in text
    got = table_rows(text, "| method |")
    assert list(got) == ["NR, 1 replica", "NR, 2 replicas", "SL", "RWL", "FC", "FC+", "LF", "*fastest*"]
    labels = list(got)[:-1]
    for i, best in enumerate(got["*fastest*"]):
        named = best.strip("*").replace(" (no measurable difference)", "").split("; ")
        values = {label: float(got[label][i]) for label in labels}
        assert named[0] == max(values, key=values.get)  # the highest median comes first
    memory = table_rows(text, "| method | total MiB |")
    one, two = memory["NR, 1 replica"], memory["NR, 2 replicas"]
    assert two[1] == one[1] and float(two[2]) == pytest.approx(2 * float(one[2]), rel=0.05)  # one log, 2 replicas
    assert memory["SL"][1:] == ["", "", "", ""]
    assert text.count("% updates: NR (1 or 2 replicas) is measurably the fastest method in ") == 3
    con = db(tmp_path / "r", "nr")
    assert rows(con, "SELECT count(*) AS n FROM runs WHERE run_status = 'ok'") == [{"n": 2 * 3 * 7}]


# ---------------------------------------------------------------------------------------------
# reclaim.py


def test_reclaim_plans_the_four_parts_from_the_registry(clean_env):
    registry = {s["name"]: s for s in structures()}
    plan = plan_of("reclaim")

    def variants(name, field, **fixed):
        return list(dict.fromkeys(v[field] for v in registry[name]["variants"]
                                  if all(v[k] == x for k, x in fixed.items())))

    got = Counter(p["part"] for p in plan.points)
    assert got["guard"] == len(variants("null", "reclaimer", allocator="system"))
    assert got["lists"] == 2 * sum(len(variants(n, "reclaimer", allocator="system"))
                                   for n in ("harris_michael_list", "lazy_list"))
    assert got["allocators"] == len(variants("harris_michael_list", "allocator", reclaimer="ebr"))
    assert got["memory"] == len(variants("harris_michael_list", "reclaimer", allocator="system"))
    assert plan.grid["reclaimer"][:4] == ["none", "ebr", "hp", "ibr"]
    for run in plan.runs:
        o = options(run)
        part = run.point["part"]
        assert o["--duration-ms"] == ("20000" if part == "memory" else "1000")
        assert o.get("--key-range") == (None if part == "guard" else "1000")
        assert o.get("--insert") == {"guard": None, "lists": "10", "allocators": "25", "memory": "50"}[part]


def test_reclaim_page_from_a_shrunk_sweep(tmp_path):
    out = tmp_path / "reclaim.md"
    env = {"CDSBENCH_RECLAIM_DURATION_MS": "20", "CDSBENCH_RECLAIM_MEMORY_MS": "100"}
    p = runner(ROOT / "experiments" / "reclaim.py", "run", "database", "markdown", "--trials", "2", "--out", out,
               "--results", tmp_path / "r", env=env, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    text = out.read_text()
    guard = table_rows(text, "## Cost of an empty guarded operation")
    assert list(guard) == ["none", "ebr", "hp", "ibr"] and guard["none"][1] == "(reference)"
    hml = table_rows(text, "## `harris_michael_list` throughput per reclaimer")
    assert list(hml) == ["none", "ebr", "hp", "ibr"] and hml["ebr"][2] == "(reference)"
    for r in ("none", "hp", "ibr"):
        interval(hml[r][2])
    assert list(table_rows(text, "## `lazy_list` throughput per reclaimer")) == ["none", "ebr"]
    alloc = table_rows(text, "## `harris_michael_list` with `ebr`, per allocation policy")
    assert list(alloc) == ["system", "segregated", "pool", "segregated_pool"] and alloc["system"][1] == "(reference)"
    memory = table_rows(text, "## Memory boundedness: 0.1 s at 100% updates")
    assert list(memory) == ["none", "ebr", "hp", "ibr"]
    assert all(row[-1] in ("yes", "no") for row in memory.values())
    assert memory["ebr"][-1] == "yes"  # epochs bound the limbo lists


def test_prefill_plans_three_prefills_of_every_tree_and_peer(clean_env):
    registry = structures()
    plan = plan_of("prefill")
    small = [s["name"] for s in registry if s["kind"] == "ordered_set"
             and (s["search_depths"] or s["library"] != "cdsbench")]
    alone = [s["name"] for s in registry if not s["concurrent_erase"]]
    got = Counter((p["part"], p["ds"]) for p in plan.points)
    assert {ds for part, ds in got if part == "small"} == set(small)
    assert {ds for part, ds in got if part == "large"} == {"ellen_bst"}
    for (part, ds), n in got.items():
        assert n == (2 if ds in alone else 3), (part, ds)  # no `aged` point for an erase that runs alone
    for run in plan.runs:
        o = options(run)
        assert o["--threads"] == "1" and o["--insert"] == "10" and o["--delete"] == "10"
        assert o["--key-range"] == {"small": "131072", "large": "2000000"}[run.point["part"]]
        assert o.get("--prefill-aging") == ("10" if run.point["mode"] == "aged" else None)
        assert o.get("--prefill") == ("insert-only" if run.point["mode"] == "insert-only" else None)


def test_prefill_page_from_a_shrunk_sweep(tmp_path):
    out = tmp_path / "prefill.md"
    env = {"CDSBENCH_PREFILL_PARTS": "small", "CDSBENCH_PREFILL_STRUCTURES": "ellen_bst,bronson_avl",
           "CDSBENCH_PREFILL_DURATION_MS": "20"}
    p = runner(ROOT / "experiments" / "prefill.py", "run", "database", "markdown", "--trials", "2", "--out", out,
               "--results", tmp_path / "r", env=env, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    text = out.read_text()
    times = table_rows(text, "Prefill time")
    assert list(times) == ["`ellen_bst`", "`bronson_avl`"]
    steady, aged, insert_only = (float(c) for c in times["`ellen_bst`"])
    assert aged > steady, "ten times the key range of aging updates take longer than 0.05 times"
    depth = table_rows(text, "Mean search depth")
    assert list(depth) == ["`ellen_bst`", "`bronson_avl`"]
    for row in depth.values():
        assert all(float(c) > 10 for c in row[:3])  # about 65,536 keys: 16 levels at the least
        interval(row[3])
        interval(row[4])
    assert list(table_rows(text, "Throughput")) == ["`ellen_bst`", "`bronson_avl`"]


# ---------------------------------------------------------------------------------------------
# queue.py


def test_queue_plans_every_queue_and_stack_in_both_modes_and_batches(clean_env):
    queues = [s["name"] for s in structures() if s["kind"] in ("queue", "stack")]
    plan = plan_of("queue")
    assert plan.grid["part"] == ["throughput", "memory"] and plan.grid["ds"] == queues
    assert {"wait_free_queue", "batch_queue", "locked_ring_queue", "tbb.concurrent_queue", "elimination_stack"} <= set(queues)
    by_part = {part: [p for p in plan.points if p["part"] == part] for part in plan.grid["part"]}
    # throughput: pairs at 1, 2, 4 threads and split at 2 and 4 (a producer and a consumer at
    # least), each at batches of 1 and 20; memory: one point per structure.
    assert Counter(p["ds"] for p in by_part["throughput"]) == {n: 10 for n in queues}
    # The structures of a column are consecutive points: a goal's pair runs back to back.
    columns = [by_part["throughput"][i:i + len(queues)] for i in range(0, len(by_part["throughput"]), len(queues))]
    assert all([p["ds"] for p in c] == queues and len({(p["threads"], p["mode"], p["batch"]) for p in c}) == 1
               for c in columns)
    assert not [p for p in by_part["throughput"] if p["mode"] == "split" and p["threads"] < 2]
    assert [p["ds"] for p in by_part["memory"]] == queues
    assert len(plan.runs) == 5 * len(plan.points)
    for run in plan.runs:
        o, p = options(run), run.point
        assert (o["--ds"], o["--threads"], o["--queue-mode"], o["--batch"], o["--seed"]) == \
            (p["ds"], str(p["threads"]), p["mode"], str(p["batch"]), str(16 + run.trial))
        assert o.get("--producers") == (str(p["threads"] // 2) if p["mode"] == "split" else None)
        if p["part"] == "throughput":
            assert o["--duration-ms"] == "1000" and "--prefill-items" not in o
        else:
            assert (o["--prefill-items"], o["--duration-ms"], o["--threads"]) == ("1000000", "100", "1")


# ---------------------------------------------------------------------------------------------
# dedup.py


def test_dedup_plans_the_studys_grids_from_dedups_listing(clean_env):
    listed = structures("cdsbench-dedup")
    maps = [s["name"] for s in listed if s["application_map_hashes"]]
    queues = [s["name"] for s in listed if s["application_queue"]]
    plan = make_plan(load(str(ROOT / "experiments" / "dedup.py")), BUILD / "cdsbench-dedup")
    assert plan.grid["map"] == maps and plan.grid["queue"] == queues
    by_part = {part: [p for p in plan.points if p["part"] == part] for part in plan.grid["part"]}
    assert list(by_part) == ["maps", "queues", "sweep", "combos", "utilisation", "goal", "chunking"]
    # Fig. 5: every map x the six inputs x 1, 2, 4 threads, PARSEC's queue.
    assert Counter(p["map"] for p in by_part["maps"]) == {m: 18 for m in maps}
    assert {p["queue"] for p in by_part["maps"]} == {"locked_ring_queue"}
    assert {p["dataset"] for p in by_part["maps"]} == {f"{k}-{s}" for k in ("tar", "gen") for s in ("10.1MB", "30.7MB", "671.6MB")}
    assert Counter(p["queue"] for p in by_part["queues"]) == {q: 3 for q in queues}
    # Fig. 8: four queues x MTPQ 1, 2, 4 x batches 1, 5, 20, 50 at 4 threads.
    assert len(by_part["sweep"]) == 4 * 3 * 4 and {p["threads"] for p in by_part["sweep"]} == {4}
    assert len(by_part["combos"]) == len(maps) * 4
    assert [(p["config"], p["map"], p["queue"]) for p in by_part["utilisation"]] == [
        ("original", "dedup_chaining_map", "locked_ring_queue"), ("oneTBB", "tbb.concurrent_hash_map", "tbb.concurrent_queue"),
        ("non-blocking", "feldman_wait_free_map", "michael_scott_queue")]
    assert Counter(p["config"] for p in by_part["goal"]) == {"PARSEC-equivalent": 2, "ours": 2}
    for run in plan.runs:
        argv, p = run.argv, run.point
        o = {argv[i]: argv[i + 1] for i in range(1, len(argv) - 1) if argv[i].startswith("-") and argv[i] != "--measure-stages"}
        assert argv[0] == str(BUILD / "cdsbench-dedup") and o["-o"] == "/dev/null"
        assert (o["-T"], o["--threads-per-queue"], o["--batch"], o["--map"], o["--queue"], o["--compress"]) == \
            (str(p["threads"]), str(p["mtpq"]), str(p["batch"]), p["map"], p["queue"], p["compress"])
        assert argv[-1 if "--measure-stages" not in argv else -2].endswith("/dedup-inputs/" + p["dataset"])
        assert ("--measure-stages" in argv) == (p["part"] in ("goal", "chunking"))
        parsec = p["config"] == "PARSEC-equivalent"
        assert (o["--chunker"], o["--hash"]) == (("rabin", "parsec3") if parsec else ("gear", "even") if p["config"] == "ours"
                                                 else ("rabin", "even"))
    # Ours is cdsbench-dedup's own default: the page's goal is about what a user gets.
    help_text = subprocess.run([str(BUILD / "cdsbench-dedup"), "--help"], capture_output=True, text=True).stdout
    ours = next(p for p in by_part["goal"] if p["config"] == "ours")
    assert f"[{ours['map']}]" in help_text and f"[{ours['queue']}]" in help_text and "[gear]" in help_text


def test_dedup_page_from_a_shrunk_sweep(tmp_path):
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    # Small stand-ins named as the experiment's inputs: the build step (which makes the real ones) does not run.
    # The utilisation part's input takes a few tenths of a second, so that it has samples.
    for seed, (name, size) in enumerate([("tar-30.7MB", "3MiB"), ("tar-100MiB", "3MiB"), ("gen-100MiB", "3MiB"),
                                         ("tar-671.6MB", "16MiB")]):
        made = subprocess.run([str(BUILD / "cdsbench-dedup"), "--generate", size, "--dup-ratio", "0.3", "--seed",
                               str(seed + 1), "-o", inputs / name], capture_output=True, text=True)
        assert made.returncode == 0, made.stderr
        (inputs / (name + ".sha256")).write_text(hashlib.sha256((inputs / name).read_bytes()).hexdigest() + "\n")
    out = tmp_path / "dedup.md"
    env = {"CDSBENCH_DEDUP_PARTS": "queues,utilisation,goal,chunking", "CDSBENCH_DEDUP_INPUT_DIR": str(inputs),
           "CDSBENCH_DEDUP_QUEUES": "locked_ring_queue,batch_queue,michael_scott_queue,tbb.concurrent_queue"}
    p = runner(ROOT / "experiments" / "dedup.py", "run", "database", "markdown", "--trials", "2", "--out", out,
               "--results", tmp_path / "r", env=env, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    text = out.read_text()
    sizes = table_rows(text, "## Inputs")
    assert sizes["`tar-30.7MB`"] == ["3,145,728", "`%s`" % (inputs / "tar-30.7MB.sha256").read_text().strip()]
    queues = table_rows(text, "## Queues")
    assert list(queues) == ["`locked_ring_queue`", "`michael_scott_queue`", "`batch_queue`", "`tbb.concurrent_queue`"]
    assert all(float(c) > 0 for row in queues.values() for c in row[:3])
    goal = text[text.index("## Goals"):text.index("## Inputs")]
    assert re.search(r"at least 1\.5x at a ratio at least as good: (met|NOT met)\. Input MiB/s \d+\.\d against \d+\.\d", goal)
    assert re.search(r"gear alone on one thread.*: \d+ MiB/s = [\d.e+]+ B/s", goal)
    assert goal.count("Efficiency at 2 threads per stage") == 2 and goal.count("With zstd") == 2
    # One thread table per configuration of the study's Fig. 11, every stage's threads in it.
    for config in ("original", "oneTBB", "non-blocking"):
        assert f"### {config} (" in text
    threads = table_rows(text, "### original")
    assert list(threads) == ["`fragment.0`", "`refine.0`", "`refine.1`", "`dedup.0`", "`dedup.1`", "`compress.0`",
                             "`compress.1`", "`write.0`"]
    con = db(tmp_path / "r", "dedup")
    try:
        assert {r[0] for r in con.execute("SELECT DISTINCT histogram FROM histograms")} == {
            "chunk_size_log2_histogram", "utilisation_timeline"}
        assert con.execute("SELECT count(*) FROM runs WHERE run_status != 'ok'").fetchone()[0] == 0
    finally:
        con.close()


# ---------------------------------------------------------------------------------------------
# zset_server.py


def test_zset_server_plans_the_studys_experiment_with_the_compared_servers_back_to_back(clean_env):
    plan = make_plan(load(str(ROOT / "experiments" / "zset_server.py")), BUILD / "cdsbench-zset-load")
    by_part = {part: [p for p in plan.points if p["part"] == part] for part in plan.grid["part"]}
    methods = ["nr", "sl", "rwl", "fc", "fcplus"]
    # In process: every method x 1, 2, 4 threads x 0, 10, 50, 100% updates; through the network:
    # every method, `sl` polling before it sleeps, and redis-server at 10% (both drivers, with and
    # without pipelining), and through redis-benchmark at 0, 50, 100% (no polled `sl` there).
    assert len(by_part["in_process"]) == 5 * 3 * 4 and {p["system"] for p in by_part["in_process"]} == set(methods)
    assert len(by_part["network"]) == 7 * 2 * 2 and len(by_part["network_ratios"]) == 6 * 3 * 2
    trials = Counter(run.point["part"] for run in plan.runs)
    assert trials == {"in_process": 3 * 60, "network": 10 * 28, "network_ratios": 3 * 36}
    # The runner goes trial-major, in point order: the seven systems of a network cell are
    # consecutive points, so the servers a ratio compares run back to back.
    for i in range(0, len(by_part["network"]), 7):
        cell = by_part["network"][i:i + 7]
        assert [p["system"] for p in cell] == methods + ["sl-poll", "redis"]
        assert len({(p["driver"], p["pipeline"]) for p in cell}) == 1
    for run in plan.runs:
        argv, p = run.argv, run.point
        if p["part"] == "in_process":
            assert argv[argv.index("--method") + 1] == p["system"] and "--" not in argv
        else:
            server = argv[argv.index("--") + 1:]
            assert server[0] == ("redis-server" if p["system"] == "redis" else "build/cdsbench-zset-server")
            assert argv[argv.index("--server-cpus") + 1] == "1" and argv[argv.index("--client-cpus") + 1] == "0"
            if p["system"] != "redis":
                method, poll = ("sl", "10") if p["system"] == "sl-poll" else (p["system"], "0")
                assert server[server.index("--method") + 1] == method and server[server.index("--idle-poll-us") + 1] == poll


# ---------------------------------------------------------------------------------------------
# overhead.py


def test_overhead_plans_every_generator_and_distribution_the_harness_knows(clean_env):
    plan = plan_of("overhead")
    by_part = {part: [p for p in plan.points if p["part"] == part] for part in plan.grid["part"]}
    # The experiment's lists are the harness's own: its usage errors name what is allowed.
    allowed = {}
    for option in ("--prng", "--distribution"):
        err = subprocess.run([str(BUILD / "cdsbench"), "--ds", "null", option, "bogus"], capture_output=True,
                             text=True).stderr
        allowed[option] = err.split("allowed: ")[1].strip()
    assert [p["prng"] for p in by_part["generator"]] == allowed["--prng"].split(", ")
    named = [d.split(":")[0] for d in (p["distribution"] for p in by_part["distribution"])]
    assert named == [w.split(":")[0].split(" ")[0] for w in allowed["--distribution"].split(", ")]
    assert {p["threads"] for p in by_part["generator"] + by_part["distribution"]} == {1}
    assert by_part["threads"][0]["threads"] == 1 and len(by_part["threads"]) <= 2
    assert Counter(run.point["part"] for run in plan.runs) == {part: 5 * len(by_part[part]) for part in by_part}
    for run in plan.runs:
        o, p = options(run), run.point
        assert (o["--ds"], o["--prng"], o["--distribution"], o["--threads"]) == (
            "null", p["prng"], p["distribution"], str(p["threads"]))
        assert o["--duration-ms"] == "1000" and o["--trials"] == "1"
