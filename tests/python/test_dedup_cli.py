"""cdsbench-dedup's command line as a user meets it: round trips through files and pipes, the
gzip-style output rules (derived names, -c, -o, -f, nothing partial left, the input untouched),
one-line errors with exit status 2 for usage and 1 for a bad archive, the generator, and the
pipeline's choices (every map, queue, chunker, compressor, format, thread count and batch, each
pair of them at least once) all writing the same archive."""
import hashlib
import itertools
import json
import os
import pathlib
import random
import re
import stat
import subprocess

import pytest

from conftest import BUILD, ROOT, structures

DEDUP = BUILD / "cdsbench-dedup"
PARSEC_ARCHIVES = ROOT / "tests" / "data" / "dedup"


def dedup(*args, stdin=None, cwd=None):
    if not DEDUP.exists():
        pytest.fail(f"{DEDUP} is missing: build it first (make build, or make test)")
    p = subprocess.run([str(DEDUP), *map(str, args)], input=stdin, capture_output=True, timeout=120, cwd=cwd)
    return p.returncode, p.stdout, p.stderr.decode()


def one_line_error(err, status, code, *words):
    assert code == status, err
    assert err.count("\n") == 1 and err.startswith("cdsbench-dedup: "), err
    for w in words:
        assert w in err, err


@pytest.fixture
def sample(tmp_path):
    path = tmp_path / "sample.dat"
    code, _, err = dedup("--generate", "3MiB", "--dup-ratio", "0.4", "--seed", "7", "-o", path)
    assert code == 0, err
    return path


def digest(path):
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


@pytest.mark.parametrize("fmt,codec,chunker", [("cdsbench", "gzip", "rabin"), ("cdsbench", "zstd", "gear"),
                                               ("cdsbench", "bzip2", "gear"), ("cdsbench", "none", "rabin"),
                                               ("parsec", "gzip", "gear"), ("parsec", "bzip2", "rabin"),
                                               ("parsec", "none", "gear")])
def test_round_trip_through_files(tmp_path, sample, fmt, codec, chunker):
    before = (digest(sample), os.stat(sample).st_mtime_ns)
    code, out, err = dedup("--format", fmt, "--compress", codec, "--chunker", chunker, sample)
    assert code == 0 and out == b"" and err == "", err
    archive = tmp_path / "sample.dat.ddp"
    assert archive.exists() and archive.stat().st_size > 0
    assert (digest(sample), os.stat(sample).st_mtime_ns) == before  # the input untouched
    code, _, err = dedup("-t", archive)
    assert code == 0, err
    code, _, err = dedup("-d", archive, "-o", tmp_path / "back")
    assert code == 0, err
    assert digest(tmp_path / "back") == before[0]
    # Only the outputs: no temporary file left beside them.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["back", "sample.dat", "sample.dat.ddp"]


def test_round_trip_through_pipes(sample):
    """Standard input to standard output both ways; the decoder's repeats come from its spool."""
    data = sample.read_bytes()
    code, archive, err = dedup("-c", "--chunker", "gear", stdin=data)
    assert code == 0, err
    code, back, err = dedup("-d", "-c", stdin=archive)
    assert code == 0, err
    assert back == data
    # The same archive as a file, decoded to a pipe.
    assert dedup("--chunker", "gear", sample)[0] == 0
    code, back, err = dedup("-dc", str(sample) + ".ddp")
    assert code == 0 and back == data, err


def test_archives_PARSEC_wrote_decode_and_ours_match_them(tmp_path):
    expected = None
    for codec in ("gzip", "bzip2", "none"):
        code, back, err = dedup("-dc", PARSEC_ARCHIVES / f"M.{codec}.ddp")
        assert code == 0, err
        expected = expected or back
        assert back == expected
        code, again, err = dedup("--format", "parsec", "--chunker", "rabin", "--compress", codec, "-c", stdin=back)
        assert code == 0, err
        assert again == (PARSEC_ARCHIVES / f"M.{codec}.ddp").read_bytes()
    assert len(expected) == 41006


def test_outputs_are_named_like_gzips_and_never_clobbered(tmp_path, sample):
    assert dedup(sample)[0] == 0
    archive = pathlib.Path(str(sample) + ".ddp")
    first = archive.read_bytes()
    code, _, err = dedup("--compress", "none", sample)
    one_line_error(err, 2, code, "sample.dat.ddp", "already exists", "-f")
    assert archive.read_bytes() == first
    code, _, err = dedup("-f", "--compress", "none", sample)
    assert code == 0, err
    assert archive.read_bytes() != first
    # -d restores FILE from FILE.ddp, and refuses the existing input file without -f.
    code, _, err = dedup("-d", archive)
    one_line_error(err, 2, code, "sample.dat", "already exists")
    moved = sample.with_name("copy.dat.ddp")
    archive.rename(moved)
    code, _, err = dedup("-d", moved)
    assert code == 0, err
    assert sample.with_name("copy.dat").read_bytes() == sample.read_bytes()
    # Never the input as its own output, even with -f.
    code, _, err = dedup("-f", "-d", moved, "-o", moved)
    one_line_error(err, 2, code, "is the input itself")


def test_list_names_what_map_and_queue_allow():
    harness = [s for s in structures() if s["application_map_hashes"] or s["application_queue"]]
    listed = structures("cdsbench-dedup")
    assert listed == harness and listed  # the harness's entries, the same fields
    code, out, err = dedup("--list")
    assert code == 0, err
    lines = out.decode().splitlines()
    assert [line.split()[1].rstrip(":") for line in lines] == [s["name"] for s in harness]
    for s, line in zip(harness, lines):
        assert line.startswith("map " if s["application_map_hashes"] else "queue "), line
        assert all(h in line for h in s["application_map_hashes"]), line
    code, _, err = dedup("--list", "x")
    one_line_error(err, 2, code, "--list", "alone")


def test_a_device_or_fifo_output_is_written_in_place(tmp_path, sample):
    # /dev/null takes an archive and a restored file without -f, and stays the device it was (a temporary file
    # renamed over it would replace the node).
    assert dedup("-o", "/dev/null", sample)[0] == 0
    archive = tmp_path / "a.ddp"
    assert dedup("-o", archive, sample)[0] == 0
    assert dedup("-d", "-o", "/dev/null", archive)[0] == 0
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode) and not list(pathlib.Path("/dev").glob(".null.*"))
    # A named pipe: its reader gets the archive, which restores the input.
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = tmp_path / "received"
    with received.open("wb") as sink:
        reader = subprocess.Popen(["cat", str(fifo)], stdout=sink)
        code, _, err = dedup("-o", fifo, sample)
        assert code == 0, err
        assert reader.wait(timeout=60) == 0
    assert received.read_bytes() == archive.read_bytes()
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


@pytest.mark.parametrize("args,words", [
    (["--compress", "lz4", "x"], ["--compress", "lz4"]),
    (["--level", "10", "x"], ["--level 10", "gzip allows 1 to 9"]),
    (["--compress", "zstd", "--level", "0", "x"], ["zstd allows 1 to 19"]),
    (["--format", "parsec", "--compress", "zstd", "x"], ["no zstd"]),
    (["--format", "zip", "x"], ["--format", "zip"]),
    (["--chunker", "fixed", "x"], ["--chunker", "fixed"]),
    (["-d", "archive.bin"], ["does not end in .ddp", "-o FILE"]),
    ([], ["standard input", "-o FILE", "-c"]),
    (["-d", "-t", "x.ddp"], ["-d and -t"]),
    (["-c", "-o", "y", "x"], ["-c and -o"]),
    (["--generate", "12XB", "-o", "y"], ["--generate", "12XB", "MiB"]),
    (["--generate", "2^60", "-o", "y"], ["--generate"]),
    (["--generate", "1MiB", "--dup-ratio", "1", "-o", "y"], ["--dup-ratio", "R < 1"]),
    (["--generate", "1MiB", "--compressibility", "-0.1", "-o", "y"], ["--compressibility"]),
    (["--generate", "1MiB"], ["--generate", "-o FILE"]),
    (["--dup-ratio", "0.5", "x"], ["--dup-ratio", "--generate"]),
    (["--level", "10", "missing_input"], ["--level 10", "gzip allows 1 to 9"]),  # before the input is opened
    (["--no-such-option"], ["--no-such-option"]),
    (["--map", "no_such_map", "x"], ["--map", "no_such_map", "allowed", "feldman_wait_free_map"]),
    (["--map", "libcds.michael_hash_map", "x"], ["--map", "digest or byte-string keys", "allowed"]),
    (["--map", "libcuckoo.map", "x"], ["--map", "libcuckoo.map", "allowed"]),
    (["--map", "dedup_chaining_map", "--hash", "md5", "x"], ["--hash", "md5", "allowed", "even"]),
    (["--queue", "treiber_stack", "x"], ["--queue", "treiber_stack", "allowed", "michael_scott_queue"]),
    (["--queue", "libcds.segmented_queue", "x"], ["--queue", "not a FIFO queue"]),
    (["--threads", "-1", "x"], ["--threads -1", "0 (the CPUs) to 1024"]),
    (["-T", "1025", "x"], ["--threads 1025", "0 (the CPUs) to 1024"]),
    (["-T", "many", "x"], ["--threads", "many"]),
    (["--threads-per-queue", "0", "x"], ["--threads-per-queue 0"]),
    (["--batch", "0", "x"], ["--batch 0", "1 to 4096"]),
])
def test_usage_errors_are_one_line_with_status_2(tmp_path, args, words):
    (tmp_path / "x").write_bytes(b"x" * 100)
    code, out, err = dedup(*args, cwd=tmp_path)
    one_line_error(err, 2, code, *words)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x"]  # nothing written


def test_bad_archives_fail_with_the_byte_and_leave_nothing(tmp_path, sample):
    assert dedup(sample)[0] == 0
    good = pathlib.Path(str(sample) + ".ddp").read_bytes()
    cases = {
        "truncated.ddp": good[:-100],
        "flipped.ddp": good[:40] + bytes([good[40] ^ 1]) + good[41:],
        "text.ddp": b"hello, world\n",
        "empty.ddp": b"",
    }
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
        for mode in ("-d", "-t"):
            code, _, err = dedup(mode, tmp_path / name)
            one_line_error(err, 1, code, name, "byte ")
        assert not (tmp_path / name[:-4]).exists()  # -d left no output behind
    code, _, err = dedup("-d", tmp_path / "missing.ddp")
    one_line_error(err, 1, code, "missing.ddp", "cannot open")
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert leftovers == []


def test_generator_is_deterministic_and_exact(tmp_path):
    def generated(*args):
        code, out, err = dedup("--generate", *args, "-c")
        assert code == 0, err
        return out
    a = generated("1000000", "--seed", "5", "--dup-ratio", "0.5")
    assert len(a) == 1_000_000
    assert generated("1000000", "--seed", "5", "--dup-ratio", "0.5") == a
    assert generated("1000000", "--seed", "6", "--dup-ratio", "0.5") != a
    assert len(generated("1KiB")) == 1024 and len(generated("2kB")) == 2000 and generated("0") == b""
    # More text, smaller archives; more repeats, fewer unique chunks (gear finds repeats anywhere).
    sizes = {}
    for c in ("0", "0.5", "1"):
        data = generated("2MiB", "--compressibility", c)
        code, archive, err = dedup("-c", "--chunker", "gear", stdin=data)
        assert code == 0, err
        sizes[c] = len(archive)
    assert sizes["0"] > sizes["0.5"] > sizes["1"]
    assert sizes["0"] > 2 * 1024 * 1024  # random bytes do not shrink
    unique = {}
    for r in ("0", "0.6"):
        data = generated("4MiB", "--dup-ratio", r)
        code, archive, err = dedup("-c", "--chunker", "gear", "--compress", "none", stdin=data)
        assert code == 0, err
        unique[r] = len(archive)
    assert unique["0.6"] < 0.6 * unique["0"]


# ---- the pipeline's choices ------------------------------------------------------------------

def pairwise(parameters, allowed, seed=1):
    """Rows (dicts) in which every pair of values of two parameters that `allowed` accepts appears
    at least once: greedy, each row the best of 50 random candidates at covering new pairs."""
    names = list(parameters)
    wanted = set()
    for a, b in itertools.combinations(names, 2):
        for va in parameters[a]:
            for vb in parameters[b]:
                if allowed({a: va, b: vb}):
                    wanted.add(((a, va), (b, vb)))
    rng = random.Random(seed)
    rows = []
    while wanted:
        best, best_new = None, set()
        # Seed each candidate with an uncovered pair, so that every row covers at least one.
        for _ in range(50):
            (a, va), (b, vb) = rng.choice(sorted(wanted))
            row = {n: rng.choice(parameters[n]) for n in names}
            row[a], row[b] = va, vb
            if not allowed(row):
                continue
            new = {((x, row[x]), (y, row[y])) for x, y in itertools.combinations(names, 2)} & wanted
            if len(new) > len(best_new):
                best, best_new = row, new
        assert best is not None, "no allowed candidate"
        rows.append(best)
        wanted -= best_new
    return rows


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """A generated input with repeats, and a real one: a tar of the system's license texts."""
    d = tmp_path_factory.mktemp("pipeline-inputs")
    generated = d / "generated.dat"
    code, _, err = dedup("--generate", "640KiB", "--dup-ratio", "0.5", "--seed", "9", "-o", generated)
    assert code == 0, err
    real = d / "licenses.tar"
    tar = subprocess.run(["tar", "-cf", "-", "-C", "/usr/share", "common-licenses"], capture_output=True, check=True)
    real.write_bytes(tar.stdout)
    assert len(tar.stdout) > 100_000
    return {"generated": generated, "real": real}


def test_every_pair_of_pipeline_choices_writes_the_one_thread_archive(tmp_path, inputs):
    listed = structures()
    hashes = {s["name"]: s["application_map_hashes"] for s in listed if s["application_map_hashes"]}
    queues = [s["name"] for s in listed if s["application_queue"]]
    assert len(hashes) == 6 and "libcuckoo.map" not in hashes and len(queues) >= 10
    parameters = {
        "map": [f"{name}:{h}" for name, hs in hashes.items() for h in hs],
        "queue": queues,
        "chunker": ["rabin", "gear"],
        "compress": ["gzip", "bzip2", "zstd", "none"],
        "format": ["cdsbench", "parsec"],
        "threads": ["1", "2", "3"],
        "threads_per_queue": ["1", "2", "4"],
        "batch": ["1", "5", "20"],
        "input": ["generated", "real"],
    }
    rows = pairwise(parameters, lambda r: not (r.get("format") == "parsec" and r.get("compress") == "zstd"))
    references = {}
    for row in rows:
        map_name, hash_name = row["map"].split(":")
        common = ["--format", row["format"], "--compress", row["compress"], "--chunker", row["chunker"]]
        key = (row["input"], row["format"], row["compress"], row["chunker"])
        if key not in references:  # one thread per stage, PARSEC's map and queue
            code, archive, err = dedup(*common, "-T", "1", "-c", inputs[row["input"]])
            assert code == 0, err
            references[key] = archive
        code, archive, err = dedup(*common, "--map", map_name, "--hash", hash_name, "--queue", row["queue"],
                                   "-T", row["threads"], "--threads-per-queue", row["threads_per_queue"],
                                   "--batch", row["batch"], "-c", inputs[row["input"]])
        assert code == 0, (row, err)
        assert archive == references[key], row
        code, back, err = dedup("-d", "-c", stdin=archive)
        assert code == 0, (row, err)
        assert back == inputs[row["input"]].read_bytes(), row


# ---- what a run measures ---------------------------------------------------------------------

def kv(text):
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def test_utilisation_timeline_samples_every_thread_over_the_run(tmp_path):
    # bzip2 at its level 9 takes at least a few tenths of a second over 8 MiB on any machine: samples to check.
    sample = tmp_path / "g8"
    assert dedup("--generate", "8MiB", "--compressibility", "0.5", "-o", sample)[0] == 0
    report = tmp_path / "run.json"
    code, _, err = dedup("--json", report, "-T", "2", "--compress", "bzip2", "-c", sample)
    assert code == 0, err
    r = json.loads(report.read_text())["trials"][0]
    timeline, interval = r["utilisation_timeline"], r["utilisation_interval_s"]
    assert r["elapsed_s"] >= 3 * interval, "the run was too short to sample"
    assert all(all(0 <= u <= 1.01 for _, _, u in t) for t in timeline.values())  # a thread's CPU over wall time
    # The same samples for every thread: consecutive from the start, each at least an interval long, within the
    # run; so at most one sample per interval the run lasted (fewer when the sampler ran late).
    spans = [(a, b) for a, b, _ in timeline["write.0"]]
    assert all([(a, b) for a, b, _ in t] == spans for t in timeline.values()) and spans
    assert spans[0][0] == 0 and all(b - a >= interval * 0.999 for a, b in spans) and spans[-1][1] <= r["elapsed_s"]
    assert all(spans[k][1] == spans[k + 1][0] for k in range(len(spans) - 1))
    # The compressors did the work: their CPU over the run is most of what the samples show.
    busy = sum(u * (b - a) for name, t in timeline.items() if name.startswith("compress.") for a, b, u in t)
    assert busy >= 0.5 * r["compress_cpu_s"] * spans[-1][1] / r["elapsed_s"]


def test_stats_and_json_report_the_same_run_and_every_key_is_documented(tmp_path, sample):
    report = tmp_path / "run.json"
    code, archive, err = dedup("--stats", "--json", report, "--measure-stages", "-T", "2", "--chunker", "gear", "-c", sample)
    assert code == 0, err
    stats = kv(err)
    doc = json.loads(report.read_text())
    assert list(doc) == ["config", "machine", "warnings", "trials", "summary"]  # the harness's shape
    assert doc["summary"] == {"trials_run": 1, "result": "PASS"} and stats["result"] == "PASS"
    assert len(doc["trials"]) == 1
    r = doc["trials"][0]
    # key=value is the JSON's scalars, the same values (doubles printed to 3 decimals or 6 digits).
    for block in (doc["config"], r):
        for key, value in block.items():
            if isinstance(value, bool):
                assert stats[key] == str(value).lower(), key
            elif isinstance(value, int):
                assert stats[key] == str(value), key
            elif isinstance(value, float):
                assert float(stats[key]) == pytest.approx(value, rel=1e-5, abs=1e-3), key
            elif isinstance(value, str):
                assert stats[key] == value, key
    assert r["input_bytes"] == sample.stat().st_size and r["archive_bytes"] == len(archive)
    assert r["chunks"] == r["chunks_unique"] + r["chunks_duplicate"] and r["chunks_duplicate"] > 0
    assert r["dedup_ratio"] > 1 and abs(r["ratio"] - r["input_bytes"] / r["archive_bytes"]) < 1e-9
    assert sum(c for _, _, c in r["chunk_size_log2_histogram"]) == r["chunks"]
    assert r["dedup_items"] == r["chunks"] and r["compress_items"] == r["chunks_unique"]
    assert r["map_operations"] >= 2 * r["chunks"] + r["chunks_unique"]
    for key in ("stage_chunk_mib_per_s_per_core", "stage_hash_mib_per_s_per_core", "stage_compress_mib_per_s_per_core",
                "bound_mib_per_s", "efficiency"):
        assert isinstance(r[key], float) and r[key] > 0, key
    assert list(r["utilisation_timeline"]) == ["fragment.0", "refine.0", "refine.1", "dedup.0", "dedup.1", "compress.0",
                                               "compress.1", "write.0"]
    documented = set(re.findall(r"`([a-z0-9_<>]+)`", (ROOT / "docs" / "dedup.md").read_text()))
    stages = ("fragment", "refine", "dedup", "compress", "write")
    machine = set(doc["machine"])
    undocumented = [k for k in stats if k not in documented and k not in machine
                    and not any(k.startswith(s + "_") and "<stage>" + k[len(s):] in documented for s in stages)]
    assert undocumented == []


def test_stage_costs_need_a_file_and_a_report(sample):
    code, _, err = dedup("--stats", "--measure-stages", "-c", stdin=sample.read_bytes())
    assert code == 0, err
    assert kv(err)["bound_mib_per_s"] == "unavailable"  # a pipe cannot be read twice
    code, _, err = dedup("--stats", "-c", sample)
    assert code == 0 and kv(err)["efficiency"] == "none", err
    code, _, err = dedup("--measure-stages", "-c", sample)
    one_line_error(err, 2, code, "--measure-stages", "--stats or --json")
    code, _, err = dedup("--stats", "-t", sample)
    one_line_error(err, 2, code, "--stats", "encoding run")


def on_terminal(*args):
    """Runs cdsbench-dedup with standard error on a pseudo-terminal: its exit status and what it showed there."""
    import pty
    leader, follower = pty.openpty()
    try:
        p = subprocess.run([str(DEDUP), *map(str, args)], stdout=subprocess.DEVNULL, stderr=follower, timeout=120)
        os.close(follower)
        shown = b""
        while True:
            try:
                piece = os.read(leader, 65536)
            except OSError:  # the terminal's other side is closed: all read
                break
            if not piece:
                break
            shown += piece
    finally:
        os.close(leader)
    return p.returncode, shown


def test_a_progress_bar_only_on_a_terminal_for_a_large_input(tmp_path, sample):
    large = tmp_path / "large.dat"
    assert dedup("--generate", "65MiB", "--compressibility", "1", "-o", large)[0] == 0
    code, shown = on_terminal("--compress", "none", "-T", "1", "-c", large)
    assert code == 0
    assert b"MiB/s" in shown and b"% " in shown and b"of 65 MiB" in shown, shown[-300:]
    assert shown.endswith(b"\r\x1b[K")  # the bar is wiped at the end
    # Not for a small input, nor on a pipe.
    assert on_terminal("--compress", "none", "-c", sample) == (0, b"")
    code, _, err = dedup("--compress", "none", "-c", large)
    assert code == 0 and err == ""
