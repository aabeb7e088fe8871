"""Dedup's long tests, outside `make test` for time (`make test-long`, about 20 minutes on 2 cores):
the full product of the pipeline's choices, and a 1 GiB round trip.

make test covers every pair of choices (tests/python/test_dedup_cli.py); here every combination
of map, queue, chunker, codec, format, threads per stage, threads per queue and batch encodes the
same input, and each archive must equal the one-thread encoder's for its chunker, codec and
format byte for byte (which the pairwise test decodes)."""
import hashlib
import itertools
import json
import os
import pathlib
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "python"))
from conftest import BUILD, structures  # noqa: E402

DEDUP = BUILD / "cdsbench-dedup"


def dedup(*args, stdout=subprocess.PIPE, timeout=600):
    p = subprocess.run([str(DEDUP), *map(str, args)], stdout=stdout, stderr=subprocess.PIPE, timeout=timeout)
    return p.returncode, p.stdout, p.stderr.decode()


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    path = tmp_path_factory.mktemp("long") / "sample.dat"
    code, _, err = dedup("--generate", "1MiB", "--dup-ratio", "0.3", "--compressibility", "0.5", "--seed", "17", "-o", path)
    assert code == 0, err
    return path


def test_every_combination_of_choices_writes_the_one_thread_archive(sample):
    listed = structures("cdsbench-dedup")
    maps = [(s["name"], h) for s in listed for h in s["application_map_hashes"][:1]]
    queues = [s["name"] for s in listed if s["application_queue"]]
    formats = [(f, c) for f in ("cdsbench", "parsec") for c in ("gzip", "bzip2", "zstd", "none")
               if not (f == "parsec" and c == "zstd")]
    reference = {}
    for chunker, (fmt, codec) in itertools.product(("rabin", "gear"), formats):
        path = sample.with_name(f"{chunker}.{fmt}.{codec}.ddp")
        code, _, err = dedup("-T", "1", "--chunker", chunker, "--format", fmt, "--compress", codec, "-o", path, sample)
        assert code == 0, err
        code, back, err = dedup("-dc", path)
        assert code == 0 and back == sample.read_bytes(), err
        reference[chunker, fmt, codec] = path.read_bytes()
    combos = list(itertools.product(maps, queues, ("rabin", "gear"), formats, (1, 2, 4), (1, 2), (1, 20)))

    def one(combo):
        (m, h), q, chunker, (fmt, codec), threads, mtpq, batch = combo
        code, archive, err = dedup("-T", threads, "--threads-per-queue", mtpq, "--batch", batch, "--map", m, "--hash", h,
                                   "--queue", q, "--chunker", chunker, "--format", fmt, "--compress", codec, "-c", sample)
        return combo, code, err, archive == reference[chunker, fmt, codec]

    failures = []
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for combo, code, err, same in pool.map(one, combos):
            if code != 0 or not same:
                failures.append((combo, code, err.strip()[-200:]))
    assert not failures, f"{len(failures)} of {len(combos)} combinations failed, the first: {failures[:3]}"


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def test_one_gibibyte_round_trips_through_a_file_and_a_pipe_in_bounded_memory(tmp_path):
    data, archive, back = tmp_path / "in.dat", tmp_path / "in.ddp", tmp_path / "back.dat"
    code, _, err = dedup("--generate", "1GiB", "--dup-ratio", "0.3", "--compressibility", "0.5", "--seed", "3", "-o", data)
    assert code == 0, err
    report = tmp_path / "run.json"
    code, _, err = dedup("--json", report, "-o", archive, data)
    assert code == 0, err
    r = json.loads(report.read_text())["trials"][0]
    assert r["input_bytes"] == 1 << 30 and r["chunks_duplicate"] > 0
    # The pipeline's memory: at most 64 MiB and 48 bytes per unique chunk for the index (issue 17's goal).
    assert r["peak_rss_bytes"] <= (64 << 20) + 48 * r["chunks_unique"], r["peak_rss_bytes"]
    expected = sha256_of(data)
    code, _, err = dedup("-d", "-o", back, archive)
    assert code == 0, err
    assert sha256_of(back) == expected
    # Through a pipe the decoder serves repeats from its spool; the stream must be the same bytes.
    p = subprocess.Popen([str(DEDUP), "-dc", str(archive)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    h = hashlib.sha256()
    while chunk := p.stdout.read(1 << 20):
        h.update(chunk)
    assert p.wait(timeout=600) == 0, p.stderr.read().decode()
    assert h.hexdigest() == expected
