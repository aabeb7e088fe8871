"""The black-box structures (Node Replication and its baselines) through the command line:
their options, their one-line errors, the keys a trial prints, and the lincheck driver's
--ds patterns and NR options."""
import pytest

from conftest import parse_kv, run

SHORT = ["--threads", "2", "--key-range", "2000", "--duration-ms", "100", "--pin", "none", "--seed", "5"]
METHODS = ["nr", "sl", "rwl", "fc", "fcplus"]
STRUCTURES = ["skiplist_pq", "pairing_heap", "skiplist_dict", "stack", "synthetic", "sorted_set"]


def test_list_has_every_method_structure_pair_and_lf_stack():
    code, out, _ = run("cdsbench", "--list")
    assert code == 0
    names = {line.split()[0] for line in out.splitlines()}
    for m in METHODS:
        for s in STRUCTURES:
            assert f"{m}.{s}" in names
    assert "lf.stack" in names
    assert not any(n.startswith("lf.") and n != "lf.stack" for n in names)  # LF only where one exists


@pytest.mark.parametrize(
    "args, option",
    [
        (["--ds", "nr.stack", "--nr-replicas", "0"], "--nr-replicas"),
        (["--ds", "nr.stack", "--nr-replicas", "two"], "--nr-replicas"),
        (["--ds", "nr.stack", "--nr-replicas", "1025"], "--nr-replicas"),
        (["--ds", "sl.stack", "--nr-replicas", "2"], "--nr-replicas"),
        (["--ds", "locked_std_set", "--nr-replicas", "2"], "--nr-replicas"),
        (["--ds", "nr.stack", "--nr-log-entries", "1"], "--nr-log-entries"),
        (["--ds", "fc.stack", "--nr-log-entries", "64"], "--nr-log-entries"),
        (["--ds", "nr.stack", "--external-work", "-1"], "--external-work"),
        (["--ds", "nr.stack", "--external-work", "5000"], "--external-work"),
        (["--ds", "locked_std_set", "--external-work", "4"], "--external-work"),
        (["--ds", "sl.skiplist_pq", "--prefill-items", "x"], "--prefill-items"),
        (["--ds", "null", "--prefill-items", "10"], "--prefill-items"),
        (["--ds", "nr.synthetic", "--key-range", "2000000"], "--key-range"),
        (["--ds", "nr.stack", "--rq", "5"], "--rq"),
        (["--ds", "lf.stack", "--reclaimer", "immediate"], "--reclaimer"),
    ],
)
def test_bad_input_is_one_line_naming_the_option_exit_2(args, option):
    code, out, err = run("cdsbench", *args)
    assert code == 2, (args, code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("cdsbench: error: ")
    assert option in lines[0] and "allowed: " in lines[0], lines[0]
    assert out == ""


def test_nr_trial_prints_the_thread_map_and_memory():
    code, out, err = run("cdsbench", "--ds", "nr.skiplist_pq", *SHORT[2:], "--threads", "3", "--nr-replicas", "2",
                         "--nr-log-entries", "100", "--prefill-items", "500", "--insert", "30", "--delete", "30")
    assert code == 0, err
    _, trial, summary = parse_kv(out)
    assert trial["nr_replicas"] == "2"
    assert trial["nr_thread_nodes"] == "0,0,1"
    assert trial["nr_log_entries"] == "128"  # rounded up to a power of two
    assert int(trial["nr_log_bytes"]) >= 128 * 16
    assert int(trial["nr_replica_bytes"]) > 0
    assert int(trial["structure_memory_bytes"]) >= int(trial["nr_log_bytes"]) + int(trial["nr_replica_bytes"])
    assert trial["prefill_target_size"] == "500"
    assert int(trial["nr_log_tail"]) >= 500  # the prefill went through the log
    assert trial["invariants"] == "ok"
    assert trial["expected_items"] == trial["actual_items"]
    assert trial["expected_item_checksum"] == trial["actual_item_checksum"]
    assert int(trial["add_attempts"]) > 0 and int(trial["remove_attempts"]) > 0 and int(trial["read_attempts"]) > 0
    assert summary["result"] == "PASS"


def test_default_replicas_follow_the_numa_nodes():
    code, out, _ = run("cdsbench", "--ds", "nr.stack", *SHORT)
    assert code == 0
    header, trial, _ = parse_kv(out)
    assert trial["nr_replicas"] == header["machine_numa_nodes"]


def test_prefill_defaults_are_the_papers_capped_at_the_key_range():
    def prefill(ds, *extra):
        code, out, err = run("cdsbench", "--ds", ds, "--duration-ms", "10", "--pin", "none", *extra)
        assert code == 0, err
        return parse_kv(out)[1]["prefill_target_size"]

    assert prefill("sl.stack") == "200000"
    assert prefill("sl.sorted_set") == "10000"
    assert prefill("sl.skiplist_dict", "--key-range", "5000") == "5000"
    assert prefill("sl.synthetic", "--key-range", "5000") == "0"
    assert prefill("sl.stack", "--prefill", "none") == "0"


def test_lincheck_patterns_and_nr_options():
    code, out, err = run("cdsbench-lincheck", "--ds", "nr.stack,sl.*", "--exclude", "sl.s*", "--histories", "20",
                         "--long-histories", "0", "--nr-replicas", "3", "--nr-log-entries", "4", "--seed", "1",
                         timeout=300)
    assert code == 0, out + err
    checked = sorted(line.split()[0][3:] for line in out.splitlines() if line.startswith("ds="))
    assert checked == ["nr.stack", "sl.pairing_heap"]
    code, _, err = run("cdsbench-lincheck", "--ds", "nr.stack", "--nr-replicas", "0")
    assert code == 2 and "--nr-replicas" in err
