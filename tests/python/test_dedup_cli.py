"""cdsbench-dedup's command line as a user meets it: round trips through files and pipes, the
gzip-style output rules (derived names, -c, -o, -f, nothing partial left, the input untouched),
one-line errors with exit status 2 for usage and 1 for a bad archive, and the generator."""
import hashlib
import os
import pathlib
import subprocess

import pytest

from conftest import BUILD, ROOT

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
        code, again, err = dedup("--format", "parsec", "--compress", codec, "-c", stdin=back)
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
