"""cdsbench-lincheck end to end: sound structures pass, broken ones are caught and replayable."""
import pathlib
import re

import pytest

from conftest import run


def summary(out, ds):
    line = next(l for l in out.splitlines() if l.startswith(f"ds={ds} "))
    return dict(kv.split("=", 1) for kv in line.split())


def test_sound_structures_pass(tmp_path):
    # `--ds all` and its report; the structures' own checks are the ctest lincheck_* tests.
    code, out, err = run("cdsbench-lincheck", "--ds", "all", "--histories", "40", "--split-variants", "--out", tmp_path,
                         timeout=600)
    assert code == 0, out + err
    for ds in ("locked_std_set", "rwlocked_std_set"):
        s = summary(out, ds)
        assert s["histories"] == "43" and s["violations"] == "0" and s["unknown"] == "0"
        lines = pathlib.Path(s["histories_file"]).read_text().splitlines()
        assert lines[0].startswith('{"meta":')
        assert len(lines) > 43 * 3 * 5  # every operation of every history recorded
    assert "null" not in out.replace("null,", "")  # null stores nothing: not a set to check


def test_stale_reads_are_caught_by_the_checker_within_the_default_histories(tmp_path):
    code, out, _ = run("cdsbench-lincheck-testing", "--ds", "broken_stale_contains", "--seed", "7",
                       "--out", tmp_path, timeout=300)
    assert code == 1
    s = summary(out, "broken_stale_contains")
    assert int(s["not_linearizable"]) > 0
    replay = re.search(r'violation ds=broken_stale_contains reclaimer=immediate allocator=system keys=u64 history=(\d+) '
                       r'seed=(\d+) reason="not linearizable[^"]*" replay="([^"]+)"', out)
    assert replay and int(replay.group(2)) == 7 + int(replay.group(1))
    assert "--seed " + replay.group(2) in replay.group(3)
    html = re.search(r"visualization=(\S+)", out).group(1)
    assert pathlib.Path(html).read_text().lower().startswith("<!doctype html") or "<html" in pathlib.Path(html).read_text()[:500].lower()
    assert out.rstrip().endswith("result=FAIL")


@pytest.mark.parametrize("ds", ["broken_drops_inserts", "broken_lying_contains", "broken_stale_find_map"])
def test_other_broken_structures_are_caught(tmp_path, ds):
    code, out, _ = run("cdsbench-lincheck-testing", "--ds", ds, "--histories", "2000", "--key-range", "128", "--out", tmp_path)
    assert code == 1
    assert int(summary(out, ds)["violations"]) > 0


@pytest.mark.parametrize("ds", ["broken_queue_stale_empty", "broken_queue_reorders", "broken_queue_duplicates",
                                "broken_stack_pops_bottom"])
def test_broken_queues_and_stacks_are_caught(tmp_path, ds):
    """broken_queue_stale_empty loses no item (its trials validate): only the checker sees its
    empty answers; nor does broken_stack_pops_bottom, whose order only the stack model checks."""
    code, out, _ = run("cdsbench-lincheck-testing", "--ds", ds, "--histories", "1000", "--out", tmp_path)
    assert code == 1
    assert int(summary(out, ds)["not_linearizable"]) > 0


def test_the_wait_free_queues_slow_paths_are_linearizable(tmp_path):
    """wait_free_queue_slow_paths (tests/support/broken_sets.cpp, sound): 2-cell segments and one
    fast-path try, so requests, helping and segment frees happen in every trial; its histories,
    recorded with its slow paths, must all be linearizable."""
    code, out, err = run("cdsbench-testing", "--ds", "wait_free_queue_slow_paths", "--threads", "4",
                         "--queue-mode", "pairs", "--duration-ms", "200")
    assert code == 0, out + err
    figures = dict(line.split("=", 1) for line in out.splitlines() if "=" in line and " " not in line.split("=", 1)[0])
    assert figures["validation"] == "PASS"
    for stat in ("slow_enqueues", "slow_dequeues", "segments_freed"):
        assert int(figures[stat]) > 0, stat
    code, out, err = run("cdsbench-lincheck-testing", "--ds", "wait_free_queue_slow_paths", "--histories", "5000",
                         "--out", tmp_path)
    assert code == 0, out + err
    s = summary(out, "wait_free_queue_slow_paths")
    assert s["violations"] == "0" and s["unknown"] == "0"


def test_a_queue_with_native_batches_is_checked_with_batch_operations(tmp_path):
    """Odd seeds record batches of 3 as single operations of the queue model: enqueue_batch(first,
    count) and dequeue_batch(max) -> [items]; a queue without native batches only single ones."""
    for ds, batches in (("batch_queue", True), ("locked_ring_queue", True), ("michael_scott_queue", False)):
        code, out, err = run("cdsbench-lincheck", "--ds", ds, "--reclaimer", "ebr" if ds != "locked_ring_queue" else "immediate",
                             "--histories", "200", "--out", tmp_path / ds)
        assert code == 0, out + err
        text = pathlib.Path(summary(out, ds)["histories_file"]).read_text()
        assert ('"op":"dequeue_batch","args":[3],"result":[' in text) == batches
        assert ('"op":"enqueue_batch","args":[' in text) == batches
        assert '"op":"dequeue","args":[],"result":' in text


def test_a_stack_is_checked_with_the_stack_model_as_pushes_and_pops(tmp_path):
    code, out, err = run("cdsbench-lincheck", "--ds", "elimination_stack", "--reclaimer", "hp", "--histories", "200",
                         "--out", tmp_path)
    assert code == 0, out + err
    text = pathlib.Path(summary(out, "elimination_stack")["histories_file"]).read_text()
    assert '"op":"push","args":[' in text and '"op":"pop","args":[],"result":' in text
    assert "enqueue" not in text and "dequeue" not in text


def test_every_variant_of_a_list_is_checked_and_split_variants_shares_the_histories(tmp_path):
    code, out, err = run("cdsbench-lincheck", "--ds", "harris_michael_list", "--histories", "70",
                         "--long-histories", "0", "--out", tmp_path)
    assert code == 0, out + err
    checked = re.findall(r"^ds=harris_michael_list reclaimer=(\w+) allocator=(\w+) keys=u64 histories=(\d+) violations=0", out, re.M)
    assert [(r, a) for r, a, _ in checked] == [("ebr", "system"), ("hp", "system"), ("ibr", "system"), ("none", "system"),
                                               ("ebr", "segregated"), ("ebr", "pool"), ("ebr", "segregated_pool")]
    assert all(h == "70" for _, _, h in checked)
    code, out, err = run("cdsbench-lincheck", "--ds", "harris_michael_list", "--histories", "70", "--split-variants",
                         "--long-histories", "0", "--out", tmp_path / "split")
    assert code == 0, out + err
    assert set(re.findall(r"^ds=harris_michael_list .* histories=(\d+) ", out, re.M)) == {"10"}  # 70 / 7 variants
    code, out, err = run("cdsbench-lincheck", "--ds", "lazy_list", "--reclaimer", "none",
                         "--histories", "50", "--out", tmp_path / "one")
    assert code == 0, out + err
    assert re.findall(r"^ds=lazy_list reclaimer=(\w+) allocator=(\w+) ", out, re.M) == [("none", "system")]


def test_a_map_built_with_byte_string_keys_is_checked_with_them_too(tmp_path):
    """A map with byte-string keys: its test variants with 64-bit keys and its default variant
    with byte strings, the histories shared among them; --keys picks either."""
    code, out, err = run("cdsbench-lincheck", "--ds", "seqlock_probe_map", "--histories", "90", "--long-histories", "0",
                         "--split-variants", "--out", tmp_path)
    assert code == 0, out + err
    checked = re.findall(r"^ds=seqlock_probe_map reclaimer=(\w+) allocator=\w+ keys=(\w+) histories=(\d+) violations=0", out, re.M)
    assert sorted(checked) == [("ebr", "bytes", "30"), ("ebr", "u64", "30"), ("none", "u64", "30")]
    code, out, err = run("cdsbench-lincheck", "--ds", "seqlock_probe_map", "--keys", "bytes", "--histories", "20",
                         "--long-histories", "0", "--out", tmp_path / "bytes")
    assert code == 0, out + err
    assert re.findall(r"^ds=seqlock_probe_map reclaimer=(\w+) allocator=\w+ keys=(\w+) ", out, re.M) == [("ebr", "bytes")]
    history = (tmp_path / "bytes" / "seqlock_probe_map" / "ebr-system-bytes" / "histories.jsonl").read_text()
    assert '"keys":"bytes"' in history.splitlines()[0]


@pytest.mark.parametrize("args, option", [
    (["--ds", "lazy_list", "--reclaimer", "ibr"], "--reclaimer"),
    (["--ds", "lazy_list", "--allocator", "arena"], "--allocator"),
    (["--ds", "lazy_list", "--reclaimer", "none", "--allocator", "pool"], "--reclaimer/--allocator"),
    (["--ds", "nope"], "--ds"),
    (["--ds", "null"], "--ds"),
    (["--ds", "all", "--histories", "0"], "--histories"),
    (["--ds", "all", "--seed", "x1"], "--seed"),
    (["--ds", "all", "--checker", "/nonexistent"], "--checker"),
    (["--histories", "5"], "--ds"),
    (["--ds", "all", "--kind", "tree"], "--kind"),
    (["--ds", "all", "--keys", "sha1"], "--keys"),
    (["--ds", "lazy_list", "--keys", "bytes"], "--keys"),
])
def test_bad_input_exit_2(args, option):
    code, out, err = run("cdsbench-lincheck", *args)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and option in err
