"""Queues and stacks through the harness's command line: the queue options' usage errors, every
queue and stack in every mode, the fixed-work form, the item figures and their documentation,
the broken queues."""
import re

import pytest

from conftest import ROOT, parse_kv, run, structures

QUICK = ["--threads", "4", "--duration-ms", "150", "--pin", "none", "--seed", "11"]


def queues(binary="cdsbench"):
    """The queues and the stacks (which run the queue workload in LIFO mode)."""
    return [s for s in structures(binary) if s["kind"] in ("queue", "stack")]


@pytest.mark.parametrize(
    "args, option",
    [
        (["--ds", "michael_scott_queue", "--queue-mode", "fifo"], "--queue-mode"),
        (["--ds", "michael_scott_queue", "--queue-mode", "split", "--threads", "1"], "--queue-mode split"),
        (["--ds", "michael_scott_queue", "--queue-mode", "split", "--threads", "4", "--producers", "4"], "--producers"),
        (["--ds", "michael_scott_queue", "--queue-mode", "split", "--threads", "4", "--producers", "0"], "--producers"),
        (["--ds", "michael_scott_queue", "--producers", "1", "--threads", "2"], "--producers"),
        (["--ds", "michael_scott_queue", "--enqueue", "30"], "--enqueue"),
        (["--ds", "michael_scott_queue", "--queue-mode", "random", "--enqueue", "0"], "--enqueue"),
        (["--ds", "michael_scott_queue", "--queue-mode", "random", "--enqueue", "100"], "--enqueue"),
        (["--ds", "michael_scott_queue", "--queue-mode", "random", "--enqueue", "half"], "--enqueue"),
        (["--ds", "harris_michael_list", "--enqueue", "30"], "--enqueue"),
        (["--ds", "michael_scott_queue", "--batch", "0"], "--batch"),
        (["--ds", "michael_scott_queue", "--batch", "65"], "--batch"),
        (["--ds", "michael_scott_queue", "--items", "100", "--duration-ms", "10"], "--items"),
        (["--ds", "michael_scott_queue", "--items", "0"], "--items"),
        (["--ds", "michael_scott_queue", "--items", "100", "--queue-mode", "random"], "--items"),
        (["--ds", "michael_scott_queue", "--queue-mode", "split", "--threads", "2", "--ops", "100"], "--ops"),
        (["--ds", "locked_ring_queue", "--prefill-items", "2000000"], "--prefill-items"),
        (["--ds", "harris_michael_list", "--queue-mode", "pairs"], "--queue-mode"),
        (["--ds", "harris_michael_list", "--batch", "4"], "--batch"),
        (["--ds", "nr.stack", "--items", "4"], "--items"),
    ],
)
def test_bad_queue_options_are_one_line_errors_exit_2(args, option):
    code, out, err = run("cdsbench", *args)
    assert code == 2, (args, code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cdsbench: error: ") and option in lines[0], err
    assert "allowed" in lines[0]
    assert out == ""


def test_list_describes_each_queue():
    qs = queues()
    assert {"locked_ring_queue", "michael_scott_queue", "treiber_stack", "elimination_stack"} <= {q["name"] for q in qs}
    for q in qs:
        if q["kind"] == "stack":
            assert q["order"] == "lifo" and q["model"] == "stack" and not q["native_batch"], q
            continue
        assert q["order"] in ("fifo", "per_producer_fifo", "relaxed"), q
        assert (q["model"] == "queue") == (q["order"] != "relaxed"), q
        # A queue FIFO per producer only is checked against the FIFO model and says what it violates.
        assert (q["known_violation"] != "") == (q["order"] == "per_producer_fifo"), q
    ring = next(q for q in qs if q["name"] == "locked_ring_queue")
    assert ring["native_batch"] and ring["capacity"] == 1 << 20
    msq = next(q for q in qs if q["name"] == "michael_scott_queue")
    assert not msq["native_batch"] and msq["capacity"] == 0
    assert {v["reclaimer"] for v in msq["variants"]} == {"ebr", "hp", "ibr", "none"}


def accounted(trial):
    """Every item prefilled or enqueued was dequeued or is left."""
    enqueued = int(trial["items_enqueued"]) + int(trial["prefill_items"])
    return enqueued == int(trial["items_dequeued"]) + int(trial["items_remaining"])


@pytest.mark.parametrize("mode", ["pairs", "split", "random"])
@pytest.mark.parametrize("batch", ["1", "20"])
def test_every_queue_runs_every_mode_and_accounts_for_every_item(mode, batch):
    for q in queues():
        code, out, err = run("cdsbench", "--ds", q["name"], *QUICK, "--queue-mode", mode, "--batch", batch,
                             "--prefill-items", "1000")
        assert code == 0, (q["name"], out, err)
        header, trial, summary = parse_kv(out)
        assert header["queue_mode"] == mode and header["batch"] == batch
        assert header["producers"] == ("2" if mode == "split" else "none")
        assert header["enqueue_pct"] == ("50" if mode == "random" else "none")
        assert trial["validation"] == "PASS" and trial["queue_order"] == q["order"], trial
        assert accounted(trial), trial
        if q["order"] in ("fifo", "per_producer_fifo"):  # per-producer order is what the trial checks
            assert int(trial["fifo_reorders"]) == 0
        if mode == "split":
            assert trial["items_remaining"] == "0"  # the consumers drained the queue
        assert float(summary["throughput_items_per_s_median"]) > 0


def test_items_moves_exactly_that_many_items_and_ends_by_itself():
    for mode in ("pairs", "split"):
        code, out, err = run("cdsbench", "--ds", "locked_ring_queue", "--threads", "3", "--pin", "none",
                             "--queue-mode", mode, "--items", "30001", "--batch", "7", "--prefill-items", "10")
        assert code == 0, err
        header, trial, _ = parse_kv(out)
        assert header["items"] == "30001" and header["duration_ms"] == "none"
        assert trial["items_enqueued"] == "30001", trial
        assert trial["items_remaining"] == ("0" if mode == "split" else "10")
        assert accounted(trial)


@pytest.mark.parametrize("share", ["20", "75"])
def test_random_mode_enqueues_the_share_asked_for(share):
    code, out, err = run("cdsbench", "--ds", "michael_scott_queue", "--threads", "2", "--pin", "none", "--seed", "5",
                         "--queue-mode", "random", "--enqueue", share, "--ops", "40000", "--prefill-items", "0")
    assert code == 0, err
    header, trial, _ = parse_kv(out)
    assert header["enqueue_pct"] == share
    enqueues, dequeues = int(trial["enqueue_attempts"]), int(trial["dequeue_attempts"])
    assert enqueues + dequeues == 40000
    # 40,000 draws: the share is within 1 point of what was asked (5 standard deviations).
    assert abs(100 * enqueues / 40000 - int(share)) < 1, (enqueues, dequeues)
    assert accounted(trial) and trial["validation"] == "PASS"


def test_a_split_trial_with_a_blocking_ring_too_small_for_its_producers_still_ends():
    """Producers outpace one consumer and fill the ring; after the stop the consumer drains it
    and the blocked producers end (the termination protocol)."""
    code, out, err = run("cdsbench", "--ds", "locked_ring_queue", "--threads", "4", "--pin", "none", "--queue-mode",
                         "split", "--producers", "3", "--batch", "64", "--duration-ms", "200", timeout=60)
    assert code == 0, err
    trial = parse_kv(out)[1]
    assert trial["validation"] == "PASS" and trial["items_remaining"] == "0"


@pytest.mark.parametrize("name, reason", [
    ("broken_queue_loses", "was lost"),
    ("broken_queue_duplicates", "was dequeued twice"),
    ("broken_queue_reorders", "left their producer's FIFO order"),
])
def test_broken_queues_fail_validation_with_exit_1(name, reason):
    code, out, _ = run("cdsbench-testing", "--ds", name, *QUICK, "--queue-mode", "split")
    assert code == 1
    trial = parse_kv(out)[1]
    assert trial["validation"] == "FAIL" and reason in trial["validation_error"], trial
    assert "throughput_items_per_s_median" not in out


def test_every_queue_key_is_documented():
    doc = (ROOT / "docs" / "output.md").read_text()
    documented = set(re.findall(r"`([a-z0-9_]+)`", doc))
    keys = set()
    for q in queues():
        code, out, _ = run("cdsbench", "--ds", q["name"], *QUICK, "--queue-mode", "split", "--latency-sample", "4",
                           "--prefill-items", "100")
        assert code == 0
        keys |= {line.split("=", 1)[0] for line in out.splitlines()}
    pattern = re.compile(r"(latency_(enqueue|dequeue)_.*|(enqueue|dequeue)_(attempts|successes)|.*_(per_op|source)|"
                         r"reclaim_batch_.*)$")
    undocumented = sorted(k for k in keys if k not in documented and not pattern.match(k))
    assert undocumented == []
    assert "latency_dequeue_p99_ns" in keys and "memory_per_queued_item_bytes" not in keys  # split: drained
