import json
import os
import pathlib
import subprocess
import tempfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("CDSBENCH_BUILD", ROOT / "build"))


def run(binary, *args, timeout=120):
    """Runs a harness binary; returns (exit status, stdout, stderr)."""
    path = BUILD / binary
    if not path.exists():
        pytest.fail(f"{path} is missing: build it first (make build, or make test)")
    p = subprocess.run([str(path), *map(str, args)], capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def structures(binary="cdsbench"):
    """The harness's registry: the entries of `BINARY --list --json FILE` (dicts: name, kind,
    library, method, sequential, search_depths, variants, ...), in registry order."""
    with tempfile.TemporaryDirectory() as d:
        path = pathlib.Path(d) / "structures.json"
        code, _, err = run(binary, "--list", "--json", path)
        assert code == 0, err
        return json.loads(path.read_text())["structures"]


def parse_kv(text):
    """key=value lines -> list of dicts: the header block, then one per trial, then the summary."""
    blocks, current = [], {}
    for line in text.splitlines():
        if "=" not in line:
            continue
        key, value = line.split("=", 1)
        if key in ("trial", "trials_run"):
            blocks.append(current)
            current = {}
        if key == "warning":
            current.setdefault("warning", []).append(value)
        else:
            current[key] = value
    blocks.append(current)
    return blocks
