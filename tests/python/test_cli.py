"""The harness command line end to end: exit statuses, one-line errors, output keys, JSON."""
import json
import re

import pytest

from conftest import ROOT, parse_kv, run, structures

SHORT = ["--threads", "2", "--key-range", "2000", "--duration-ms", "100", "--pin", "none", "--seed", "5"]


@pytest.mark.parametrize(
    "args, option",
    [
        (["--ds", "no_such_set"], "--ds"),
        ([], "--ds"),
        (["--ds", "null", "--threads", "0"], "--threads"),
        (["--ds", "null", "--threads", "-3"], "--threads"),
        (["--ds", "null", "--threads", "two"], "--threads"),
        (["--ds", "null", "--threads", "1e3"], "--threads"),
        (["--ds", "null", "--insert", "-5"], "--insert"),
        (["--ds", "null", "--delete", "abc"], "--delete"),
        (["--ds", "null", "--insert", "60", "--delete", "30", "--rq", "20"], "--insert/--delete/--rq"),
        (["--ds", "null", "--key-range", "0"], "--key-range"),
        (["--ds", "null", "--key-range", "99999999999999999999999"], "--key-range"),
        (["--ds", "null", "--distribution", "zipf:"], "--distribution"),
        (["--ds", "null", "--distribution", "zipf:0"], "--distribution"),
        (["--ds", "null", "--distribution", "hotspot:10"], "--distribution"),
        (["--ds", "null", "--distribution", "pareto"], "--distribution"),
        (["--ds", "null", "--prng", "rand"], "--prng"),
        (["--ds", "null", "--pin", "0,x"], "--pin"),
        (["--ds", "null", "--pin", "0,999999", "--threads", "2"], "--pin"),
        (["--ds", "null", "--prefill", "full"], "--prefill"),
        (["--ds", "null", "--prefill-tolerance", "2"], "--prefill-tolerance"),
        (["--ds", "null", "--prefill-aging", "-1"], "--prefill-aging"),
        (["--ds", "null", "--duration-ms", "10", "--ops", "10"], "--duration-ms/--ops"),
        (["--ds", "null", "--ops", "0"], "--ops"),
        (["--ds", "null", "--rq-size", "0"], "--rq-size"),
        (["--ds", "null", "--reclaimer", "rcu"], "--reclaimer"),
        (["--ds", "null", "--allocator", "jemalloc"], "--allocator"),
        (["--ds", "lazy_list", "--reclaimer", "hp"], "--reclaimer"),
        (["--ds", "harris_michael_list", "--allocator", "arena"], "--allocator"),
        (["--ds", "null", "--malloc", "hoard"], "--malloc"),
        (["--ds", "null", "--malloc"], "--malloc"),
        (["--ds", "null", "--trials", "0"], "--trials"),
        (["--ds", "null", "--seed", "-1"], "--seed"),
        (["--ds", "null", "--json", "/nonexistent-dir/x.json"], "--json"),
        (["--ds", "null", "--frobnicate"], "--frobnicate"),
        (["--ds", "null", "--threads"], "--threads"),
        (["--ds", "null", "--keys", "digest"], "--keys"),
        (["--ds", "michael_hash_map", "--keys", "sha1"], "--keys"),
        (["--ds", "michael_hash_map", "--hash", "bytesum"], "--hash"),
        (["--ds", "michael_hash_map", "--keys", "digest", "--hash", "crc32"], "--hash"),
        (["--ds", "harris_michael_list", "--keys", "bytes"], "--keys"),
        (["--ds", "seqlock_probe_map", "--keys", "bytes", "--hash", "parsec3"], "--hash"),
        (["--ds", "michael_hash_map", "--keys", "digest", "--reclaimer", "hp"], "--reclaimer"),
        (["--ds", "seqlock_probe_map", "--presize", "maybe"], "--presize"),
    ],
)
def test_bad_input_is_one_line_naming_the_option_exit_2(args, option):
    code, out, err = run("cdsbench", *args)
    assert code == 2, (args, code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("cdsbench: error: ")
    assert option in lines[0], lines[0]
    assert out == ""


def test_bad_values_say_what_is_allowed():
    _, _, err = run("cdsbench", "--ds", "null", "--threads", "0")
    assert "allowed: an integer in 1..4096" in err
    _, _, err = run("cdsbench", "--ds", "nope")
    assert "allowed: null, locked_std_set, rwlocked_std_set" in err


def test_list_names_every_structure_with_reclaimers():
    code, out, _ = run("cdsbench", "--list")
    assert code == 0
    lines = {line.split()[0]: line for line in out.splitlines()}
    assert list(lines)[:5] == ["null", "locked_std_set", "rwlocked_std_set", "harris_michael_list", "lazy_list"]
    assert all("reclaimers:" in line for line in out.splitlines())
    assert "[kind: ordered_set; reclaimers: ebr,hp,ibr,none; allocators: system,segregated,pool,segregated_pool;" in lines["harris_michael_list"]
    assert "[kind: ordered_set; reclaimers: ebr,none;" in lines["lazy_list"]  # no hp, no ibr: see set/list/lazy.hpp
    assert "node 24 B" in lines["harris_michael_list"]
    code, out, _ = run("cdsbench-testing", "--list")
    assert "broken_drops_inserts" in out


@pytest.mark.parametrize("binary", ["cdsbench", "cdsbench-dedup"])
def test_version_names_the_program_its_commit_and_compiler(binary):
    """What the Slurm executor's probe task runs on a node."""
    code, out, err = run(binary, "--version")
    assert code == 0 and err == ""
    assert re.fullmatch(rf"{binary} ([0-9a-f]{{40}}(-dirty)?|unknown) \(g\+\+ \S+.*\)\n", out), out
    code, out, _ = run(binary, "--version", "--json", "/nonexistent/x.json")  # and nothing else
    assert code == 0 and out.startswith(binary + " ")


def test_a_trial_prints_config_machine_trial_and_summary():
    code, out, err = run("cdsbench", "--ds", "locked_std_set", *SHORT, "--latency-sample", "10")
    assert code == 0, err
    header, trial, summary = parse_kv(out)
    assert header["ds"] == "locked_std_set" and header["seed"] == "5" and header["seed_source"] == "given"
    assert header["thread_cpus"] == "none,none"
    assert re.fullmatch(r"[0-9a-f]{40}(-dirty)?|unknown", header["git_commit"])
    assert int(header["machine_cpus"]) >= 1
    assert trial["validation"] == "PASS"
    assert float(trial["throughput_ops_per_s"]) > 0
    assert trial["prefill_target_size"] == "1000"  # 2000 keys x 10 / (10 + 10)
    assert abs(int(trial["prefill_size"]) - 1000) <= 10  # --prefill-tolerance 0.01
    assert float(trial["latency_search_p50_ns"]) > 0
    assert trial["task_clock_ns"] != "unavailable"
    assert summary["result"] == "PASS" and summary["trials_run"] == "1"


def test_seed_is_drawn_and_printed_when_not_given():
    seeds = set()
    for _ in range(2):
        code, out, _ = run("cdsbench", "--ds", "null", "--duration-ms", "10", "--pin", "none")
        header = parse_kv(out)[0]
        assert header["seed_source"] == "drawn"
        seeds.add(header["seed"])
    assert len(seeds) == 2


def test_same_seed_same_operations():
    args = ["--ds", "locked_std_set", "--threads", "1", "--key-range", "500", "--ops", "5000",
            "--pin", "none", "--seed", "99"]
    runs = [parse_kv(run("cdsbench", *args)[1])[1] for _ in range(2)]
    for key in ("insert_successes", "delete_successes", "search_successes", "actual_key_sum", "prefill_size"):
        assert runs[0][key] == runs[1][key], key


def test_trials_print_each_trial_and_the_median():
    code, out, _ = run("cdsbench", "--ds", "null", "--trials", "3", "--duration-ms", "20", "--pin", "none")
    blocks = parse_kv(out)
    trials, summary = blocks[1:-1], blocks[-1]
    assert [t["trial"] for t in trials] == ["0", "1", "2"]
    values = sorted(float(t["throughput_ops_per_s"]) for t in trials)
    assert float(summary["throughput_ops_per_s_median"]) == pytest.approx(values[1], rel=1e-3)


def test_json_matches_the_key_value_lines(tmp_path):
    path = tmp_path / "out.json"
    code, out, _ = run("cdsbench", "--ds", "rwlocked_std_set", *SHORT, "--rq", "5", "--json", path)
    assert code == 0
    doc = json.loads(path.read_text())
    header, trial, summary = parse_kv(out)
    assert doc["config"]["ds"] == "rwlocked_std_set"
    assert str(doc["trials"][0]["actual_key_sum"]) == trial["actual_key_sum"]
    assert doc["summary"]["result"] == summary["result"] == "PASS"


@pytest.mark.parametrize("name, reason", [
    ("broken_drops_inserts", "size differs"),
    ("broken_lying_contains", "disagrees"),
    ("broken_invariant", "invariant violated"),
])
def test_broken_structures_fail_validation_with_exit_1(name, reason):
    code, out, _ = run("cdsbench-testing", "--ds", name, *SHORT, "--insert", "30", "--delete", "20")
    assert code == 1
    trial = parse_kv(out)[1]
    assert trial["validation"] == "FAIL"
    assert reason in trial["validation_error"]
    assert "throughput_ops_per_s_median" not in out  # a failed trial is never a number
    assert "result=FAIL" in out


def test_prefill_timeout_is_an_error_with_the_size_reached():
    code, out, _ = run("cdsbench", "--ds", "locked_std_set", "--key-range", "50000000",
                       "--prefill-timeout-ms", "1", "--pin", "none")
    assert code == 1
    trial = parse_kv(out)[1]
    assert trial["prefill_converged"] == "false"
    assert int(trial["prefill_size"]) < int(trial["prefill_target_size"])


def test_oversubscription_warns():
    code, out, _ = run("cdsbench", "--ds", "null", "--threads", "64", "--duration-ms", "20")
    assert code == 0
    assert any(w.startswith("oversubscribed: 64 threads") for w in parse_kv(out)[0]["warning"])


@pytest.mark.parametrize("option", ["--rq", "--rq-threads"])
def test_range_queries_need_a_structure_that_has_them(option):
    code, out, err = run("cdsbench-testing", "--ds", "test_no_range_query", option, "1", "--duration-ms", "10")
    assert code == 2 and out == ""
    assert err.startswith(f"cdsbench: error: {option}: structure 'test_no_range_query' has no range query")
    code, out, err = run("cdsbench-testing", "--ds", "test_no_range_query", "--duration-ms", "10",
                         "--key-range", "100", "--pin", "none")
    assert code == 0, err


@pytest.mark.parametrize("option", ["--find-or-insert", "--assign"])
def test_map_operations_need_a_map(option):
    a_set = next(s["name"] for s in structures() if s["kind"] == "ordered_set" and s["model"])
    code, out, err = run("cdsbench", "--ds", a_set, option, "5", "--duration-ms", "10")
    assert code == 2 and out == ""
    assert err.startswith(f"cdsbench: error: {option}: structure '{a_set}' is not a map")


def test_every_map_runs_find_or_insert_and_assign_with_its_values_checked():
    maps = [s for s in structures() if s["map_operations"]]
    assert maps and all(s["model"] == "map" for s in maps)
    assert all(s["map_assign"] for s in maps if s["library"] == "cdsbench")  # ours all have assign
    for s in maps:
        assign = "15" if s["map_assign"] else "0"
        delete = "20" if s["concurrent_erase"] else "0"  # a peer without a thread-safe erase
        code, out, err = run("cdsbench", "--ds", s["name"], *SHORT, "--insert", "10", "--delete", delete,
                             "--find-or-insert", "15", "--assign", assign)
        assert code == 0, (s["name"], err)
        header, trial, summary = parse_kv(out)
        assert header["find_or_insert_pct"] == "15" and header["assign_pct"] == assign
        assert trial["validation"] == "PASS", (s["name"], trial.get("validation_error"))
        for op in ["find_or_insert", "search"] + (["assign"] if s["map_assign"] else []):
            assert int(trial[f"{op}_attempts"]) > 0, (s["name"], op)
        assert trial["wrong_values_read"] == "0" and trial["wrong_values_held"] == "0"


def test_assign_needs_a_map_that_has_a_linearizable_one():
    no_assign = next(s["name"] for s in structures() if s["map_operations"] and not s["map_assign"])
    code, out, err = run("cdsbench", "--ds", no_assign, "--assign", "5", "--duration-ms", "10")
    assert code == 2 and out == ""
    assert err.startswith(f"cdsbench: error: --assign: structure '{no_assign}' has no linearizable assign")


EVENTS = "(cycles|instructions|l1d_misses|llc_misses|dtlb_misses|branch_misses|task_clock_ns|page_faults|context_switches|cpu_migrations)"


KINDS = {"ordered_set", "unordered_map", "queue", "stack", "black_box"}
METHODS = {"nr", "sl", "rwl", "fc", "fcplus", "lf"}
TINY = ["--threads", "1", "--key-range", "1000", "--duration-ms", "10", "--pin", "none", "--seed", "5"]


def our_trees():
    """Our trees, from the registry's data: (name, reclaimer) of the structures that report
    search depths, with EBR where they have it, else their default reclaimer."""
    trees = [s for s in structures() if s["search_depths"] and s["library"] == "cdsbench"]
    return [(t["name"], "ebr" if any(v["reclaimer"] == "ebr" for v in t["variants"]) else t["variants"][0]["reclaimer"])
            for t in trees]


def test_list_json_has_every_structure_of_list_in_registry_order(tmp_path):
    code, out, err = run("cdsbench", "--list", "--json", tmp_path / "structures.json")
    assert code == 0, err
    doc = json.loads((tmp_path / "structures.json").read_text())
    assert list(doc) == ["structures"]
    code, text, _ = run("cdsbench", "--list")
    assert code == 0
    assert [s["name"] for s in doc["structures"]] == [line.split()[0] for line in text.splitlines() if line.strip()]


def test_list_json_entries_follow_the_contract():
    entries = structures()
    assert len({s["name"] for s in entries}) == len(entries)
    for s in entries:
        assert s["kind"] in KINDS, s
        assert isinstance(s["library"], str) and s["library"], s
        assert isinstance(s["description"], str) and s["description"], s
        for key in ("range_queries", "concurrent_erase", "search_depths"):
            assert isinstance(s[key], bool), (s["name"], key)
        for key in ("layout", "model", "known_violation"):
            assert isinstance(s[key], str), (s["name"], key)
        if s["kind"] == "black_box":
            assert s["method"] in METHODS and isinstance(s["sequential"], str) and s["sequential"], s
        else:
            assert s["method"] is None and s["sequential"] is None, s
        assert s["variants"], s["name"]
        for v in s["variants"]:
            assert isinstance(v["reclaimer"], str) and isinstance(v["allocator"], str) and isinstance(v["test"], bool)
    libraries = {s["library"] for s in entries}
    assert "cdsbench" in libraries and len(libraries) > 1  # ours and the peers
    assert {s["kind"] for s in entries} >= {"ordered_set", "black_box"}
    assert our_trees()  # the trees that report search_depth_mean (test_every_printed_key_is_documented)


def test_list_json_of_the_testing_harness_names_its_broken_structures():
    code, out, _ = run("cdsbench-testing", "--list")
    assert code == 0
    entries = structures("cdsbench-testing")
    assert [s["name"] for s in entries] == [line.split()[0] for line in out.splitlines() if line.strip()]
    assert "broken_drops_inserts" in [s["name"] for s in entries]


def test_every_structure_runs_its_first_variant_by_default_and_reports_its_registry_data():
    """--ds NAME without --reclaimer/--allocator runs variants[0]; the configuration block says
    what the listing says of the structure (structure_kind, structure_library, blackbox_*)."""
    for s in structures():
        code, out, err = run("cdsbench", "--ds", s["name"], *TINY)
        assert code == 0, (s["name"], err)
        header = parse_kv(out)[0]
        first = s["variants"][0]
        assert header["reclaimer"] == first["reclaimer"], s["name"]
        if "allocator" in header:
            assert header["allocator"] == first["allocator"], s["name"]
        assert header["structure_kind"] == s["kind"] and header["structure_library"] == s["library"], s["name"]
        assert header["blackbox_method"] == (s["method"] or "none"), s["name"]
        assert header["blackbox_structure"] == (s["sequential"] or "none"), s["name"]


def test_every_peer_validates_a_set_large_enough_for_the_parallel_invariant_check():
    """From 65,536 keys the invariant walk runs on a thread of its own beside the traversal: a
    peer's library must accept it (libcds serves attached threads only)."""
    peers = [s for s in structures() if s["library"] != "cdsbench" and s["kind"] == "ordered_set"]
    assert peers, "the release harness registers the libraries' ordered sets"
    for s in peers:
        code, out, err = run("cdsbench", "--ds", s["name"], "--key-range", "140000", "--duration-ms", "20",
                             "--pin", "none", "--seed", "3")
        assert code == 0, (s["name"], err)
        _, trial, _ = parse_kv(out)
        assert int(trial["actual_size"]) >= 65_536 and trial["validation"] == "PASS", s["name"]


def test_json_config_carries_the_structure_data(tmp_path):
    entries = structures()
    black_box = [e for e in entries if e["kind"] == "black_box"]
    for s in ([e for e in entries if e["kind"] != "black_box"][0], black_box[0]):
        path = tmp_path / f"{s['name']}.json"
        code, _, err = run("cdsbench", "--ds", s["name"], *TINY, "--json", path)
        assert code == 0, err
        config = json.loads(path.read_text())["config"]
        assert config["structure_kind"] == s["kind"] and config["structure_library"] == s["library"]
        assert config["blackbox_method"] == (s["method"] or "none")
        assert config["blackbox_structure"] == (s["sequential"] or "none")


def test_every_printed_key_is_documented():
    doc = (ROOT / "docs" / "output.md").read_text()
    documented = set(re.findall(r"`([a-z0-9_]+)`", doc))
    code, out, _ = run("cdsbench", "--ds", "locked_std_set", *SHORT, "--rq", "5", "--rq-threads", "1",
                       "--latency-sample", "5", "--trials", "2")
    assert code == 0
    keys = {line.split("=", 1)[0] for line in out.splitlines()}
    for ds, reclaimer in (("harris_michael_list", "ebr"), ("harris_michael_list", "hp"), ("harris_michael_list", "ibr"),
                          ("lazy_list", "none"), *our_trees()):
        code, more, _ = run("cdsbench", "--ds", ds, "--reclaimer", reclaimer, *SHORT)
        assert code == 0
        keys |= {line.split("=", 1)[0] for line in more.splitlines()}
    for m in (s["name"] for s in structures() if s["map_assign"] and s["library"] == "cdsbench"):
        code, more, _ = run("cdsbench", "--ds", m, *SHORT, "--find-or-insert", "5", "--assign", "5")
        assert code == 0
        keys |= {line.split("=", 1)[0] for line in more.splitlines()}
    patterns = [re.compile(p.replace("<op>", "(search|insert|delete|range_query|find_or_insert|assign)")
                           .replace("<event>", EVENTS) + "$")
                for p in re.findall(r"`([a-z0-9_<>]+)`", doc) if "<" in p]
    undocumented = sorted(k for k in keys if k not in documented and not any(p.match(k) for p in patterns))
    assert undocumented == []
    assert "cycles_per_op" in keys and "latency_range_query_p99_9_ns" in keys  # the patterns were exercised
    assert "search_depth_mean" in keys  # a tree's shape figures
    assert "wrong_values_held" in keys and "buckets" in keys  # a map's


def test_every_reclaimer_reports_its_figures_and_they_add_up():
    for reclaimer in ("none", "ebr", "hp", "ibr"):
        code, out, err = run("cdsbench", "--ds", "harris_michael_list", "--reclaimer", reclaimer, *SHORT,
                             "--insert", "40", "--delete", "40")
        assert code == 0, err
        header, trial, _ = parse_kv(out)
        assert header["reclaimer"] == reclaimer and header["allocator"] == "system"
        allocated, retired, freed, limbo = (int(trial[k]) for k in
                                            ("nodes_allocated", "nodes_retired", "nodes_freed", "nodes_in_limbo"))
        assert retired > 0 and allocated >= retired
        # Every freed node was retired or never published (a failed insert's node).
        assert freed <= allocated and retired - limbo <= freed
        if reclaimer == "none":
            assert limbo == retired  # never frees while the structure lives
        else:
            assert limbo < retired // 2
        assert ("epochs_advanced" in trial) == (reclaimer in ("ebr", "ibr"))
        assert ("scans" in trial) == (reclaimer in ("hp", "ibr"))
        assert int(trial["node_bytes"]) == (32 if reclaimer == "ibr" else 24)  # IBR adds the birth epoch


@pytest.mark.parametrize("malloc", ["glibc", "jemalloc", "mimalloc", "tcmalloc"])
def test_malloc_runs_the_harness_under_the_chosen_allocator(malloc):
    code, out, err = run("cdsbench", "--ds", "lazy_list", "--malloc", malloc, "--allocator", "segregated", *SHORT)
    assert code == 0, err
    header, trial, summary = parse_kv(out)
    assert header["malloc"] == malloc  # what actually serves malloc, found at run time
    assert trial["validation"] == "PASS" and summary["result"] == "PASS"


def test_reclaim_eager_is_reported_and_reclaims_in_tiny_batches():
    code, out, err = run("cdsbench", "--ds", "harris_michael_list", "--reclaimer", "hp", "--reclaim-eager", *SHORT)
    assert code == 0, err
    header, trial, _ = parse_kv(out)
    assert header["reclaim_eager"] == "true"
    assert int(trial["scans"]) >= int(trial["nodes_retired"])  # a scan at every retire
    assert float(trial["reclaim_batch_avg"]) < 3


def test_presize_no_makes_the_trial_grow_the_map_and_a_huge_key_range_sizes_by_ops():
    """--presize no starts a map at its default size, so the trial doubles it; sized by the hint,
    it never doubles. With a key range of 2^40 and no prefill, the hint is what --ops can insert
    (a table for 2^40 keys was a bad_alloc)."""
    args = ["--ds", "seqlock_probe_map", "--prefill", "none", "--insert", "100", "--delete", "0", "--ops", "100000",
            "--key-range", str(1 << 40), "--pin", "none"]
    resizes = {}
    for presize in ["yes", "no"]:
        code, out, err = run("cdsbench", *args, "--presize", presize)
        header, trial, summary = parse_kv(out)
        assert code == 0 and summary["result"] == "PASS", (presize, err)
        assert header["presize"] == ("true" if presize == "yes" else "false")
        resizes[presize] = int(trial["resizes"])
    assert resizes["yes"] == 0 and resizes["no"] >= 8, resizes


def test_a_structure_too_large_for_memory_is_a_one_line_error():
    """A map sized for half of a key range of 2^62 cannot be allocated: one line, exit 1."""
    code, out, err = run("cdsbench", "--ds", "michael_hash_map", "--key-range", str(1 << 62), "--duration-ms", "10",
                         "--pin", "none")
    assert code == 1, (out, err)
    (line,) = err.strip().splitlines()
    assert line.startswith("cdsbench: error: out of memory building 'michael_hash_map' for --key-range "), line


def test_byte_string_keys_run_in_every_map_of_ours():
    """Byte-string keys (8 to 64 bytes each): every map of ours is built with them and runs the
    map mix, and its trial validates (keys decoded back, sums and values checked)."""
    byte_maps = {s["name"]: s for s in structures() if "bytes" in s["key_hashes"]}
    assert {"dedup_chaining_map", "michael_hash_map", "split_ordered_map", "feldman_wait_free_map",
            "seqlock_probe_map"} <= set(byte_maps)
    for name, s in byte_maps.items():
        assert s["key_hashes"]["bytes"] == ["even"], name
        code, out, err = run("cdsbench", "--ds", name, "--keys", "bytes", "--insert", "20", "--delete", "20",
                             "--find-or-insert", "10", "--assign", "10", "--threads", "2", "--key-range", "5000",
                             "--ops", "40000", "--pin", "none")
        header, trial, summary = parse_kv(out)
        assert code == 0 and summary["result"] == "PASS", (name, err)
        assert header["keys"] == "bytes", name


def test_digest_keys_run_every_named_hash_and_bytesum_crowds_the_buckets():
    """The dedup study's synthetic mix on digest keys: every map built with digest keys runs
    (and validates) with each of its hashes; PARSEC's table shows bytesum's clustering."""
    digest_maps = [s for s in structures() if s["key_hashes"].get("digest", [])]
    assert {"dedup_chaining_map", "feldman_wait_free_map", "tbb.concurrent_hash_map"} <= {s["name"] for s in digest_maps}
    used = {}
    for s in digest_maps:
        for h in s["key_hashes"].get("digest", []):
            code, out, err = run("cdsbench", "--ds", s["name"], "--keys", "digest", "--hash", h, "--insert", "16",
                                 "--delete", "0", "--prefill", "none", "--threads", "2", "--key-range", "20000",
                                 "--ops", "60000", "--pin", "none")
            header, trial, summary = parse_kv(out)
            assert code == 0 and summary["result"] == "PASS", (s["name"], h, err)
            assert (header["keys"], header["hash"]) == ("digest", h)
            if s["name"] == "dedup_chaining_map":
                used[h] = int(trial["buckets_used"])
    # About 7,600 distinct digests in a table sized for the 9,600 inserts of 60,000 operations
    # (12,289 buckets): spread alike by parsec3 and even (about 5,600 buckets used), crowded by
    # bytesum, whose values near its mean of 2,550 take most digests (about 1,400).
    assert used["bytesum"] < used["even"] / 3 and used["parsec3"] > 0.9 * used["even"], used
