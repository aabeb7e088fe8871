import os
import pathlib
import subprocess

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
