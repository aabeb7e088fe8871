"""Parsing the harness's output: `key=value` lines on stdout and the `--json FILE` document.

The text is the record of every run (the JSON file is written only when a run ends, so a run
that crashes or times out leaves the text alone); the JSON, when it is there and whole, gives
exact types and what the text does not carry (histograms). Nothing here knows the key set:
the harness adds keys over time and each becomes a column of the database.

Layout of the text (docs/output.md): configuration and machine lines, `warning=` lines, one
block per trial starting with `trial=`, then the summary block starting with `trials_run=`.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

# Values that mean "no number here": a figure the machine cannot give, an option not used.
SENTINELS = frozenset({"unavailable", "none", ""})

KEY_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_.\-]*)=(.*)$")
INT_RE = re.compile(r"^[+-]?\d+$")
FLOAT_RE = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$|^[+-]?(inf|nan)$")


def convert(text: str):
    """A text value with its natural type: int, float, bool, or the string itself."""
    t = text.strip()
    if INT_RE.match(t):
        return int(t)
    if FLOAT_RE.match(t):
        return float(t)
    if t == "true":
        return True
    if t == "false":
        return False
    return text


def _is_buckets(value) -> bool:
    return isinstance(value, list) and all(
        isinstance(b, list) and len(b) == 3 and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in b)
        for b in value)


def histogram_series(value) -> dict | None:
    """A JSON histogram as {name: [(lower, upper, count)]}, or None if ``value`` is none.

    Two shapes: {name: [[lower, upper, count], ...]} (`latency_histogram_ns`, one per operation
    type) and a bare [[lower, upper, count], ...] (e.g. `*_log2_histogram`, name "")."""
    if isinstance(value, dict) and value and all(_is_buckets(v) for v in value.values()):
        return {name: [tuple(b) for b in buckets] for name, buckets in value.items()}
    if _is_buckets(value) and value:
        return {"": [tuple(b) for b in value]}
    return None


def is_series_key(key: str) -> bool:
    """Keys whose JSON value may be a bucket series: histograms, and timelines (buckets of time
    with a value each, e.g. dedup's `utilisation_timeline`)."""
    return "histogram" in key or key.endswith("_timeline")


@dataclass
class HarnessOutput:
    header: dict = field(default_factory=dict)        # configuration and machine keys
    warnings: list = field(default_factory=list)      # `warning=` lines
    trials: list = field(default_factory=list)        # one dict per trial
    summary: dict = field(default_factory=dict)       # from `trials_run=` on
    histograms: list = field(default_factory=list)    # per trial: {histogram key: {name: [(lo, hi, n)]}}
    source: str = "none"                              # "json", "text" or "none"
    problems: list = field(default_factory=list)      # what was wrong with the output

    @property
    def complete(self) -> bool:
        """The output reached its end: a summary with a result."""
        return "result" in self.summary

    @property
    def has_trial(self) -> bool:
        return bool(self.trials)

    def blocks(self) -> list[tuple[str, dict]]:
        return [("header", self.header), ("trial", self.trials[-1] if self.trials else {}), ("summary", self.summary)]

    def collisions(self) -> set[tuple[str, str]]:
        """(block, key) of keys a later block repeats from an earlier one (e.g. a structure's
        `validation_failures` counter in the trial and the summary's `validation_failures`)."""
        seen, out = set(), set()
        for name, block in self.blocks():
            for key in block:
                if key in seen:
                    out.add((name, key))
            seen.update(block)
        return out

    def row(self, renamed: set[tuple[str, str]] = frozenset()) -> dict:
        """One flat row: configuration, machine, the run's trial (the last if several) and the
        summary. A (block, key) in ``renamed`` is stored as ``block_key`` so that a key repeated
        by a later block loses nothing (the database renames the same keys in every run, so a
        column means one thing). Lists become comma-separated text (as the text output prints
        them), objects of scalars become `key_subkey` columns, anything deeper is JSON text."""
        row = {}
        for name, block in self.blocks():
            for key, value in block.items():
                _flatten_into(row, f"{name}_{key}" if (name, key) in renamed else key, value)
        if self.warnings:
            row["warning"] = "\n".join(self.warnings)
        return row

    def histogram_buckets(self) -> dict:
        """{histogram key: {name: [(lo, hi, count)]}} of the row's trial."""
        return self.histograms[-1] if self.histograms else {}


def _flatten_into(row: dict, key: str, value) -> None:
    if isinstance(value, list):
        if all(not isinstance(v, (list, dict)) for v in value):
            row[key] = ",".join(_scalar_text(v) for v in value)
        else:
            row[key] = json.dumps(value)
    elif isinstance(value, dict):
        if all(not isinstance(v, (list, dict)) for v in value.values()):
            for sub, v in value.items():
                row[f"{key}_{sub}"] = v
        else:
            row[key] = json.dumps(value)
    else:
        row[key] = value


def _scalar_text(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "none"
    return str(v)


def parse_text(text: str) -> HarnessOutput:
    out = HarnessOutput(source="text")
    if not text.strip():
        out.problems.append("no output")
        return out
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()  # the empty string after the last newline
    else:
        partial = lines.pop()
        out.problems.append(f"output ends in the middle of a line (truncated): {partial[:80]!r}")
    block = out.header
    bad = []
    for number, line in enumerate(lines, 1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        m = KEY_RE.match(line)
        if not m or "\x00" in line:
            bad.append((number, line))
            continue
        key, raw = m.group(1), m.group(2)
        if key == "trial":
            block = {}
            out.trials.append(block)
        elif key == "trials_run":
            block = out.summary
        if key == "warning":
            out.warnings.append(raw)
            continue
        if key in block:
            out.problems.append(f"line {number}: key {key!r} repeated in one block (the last value is kept)")
        block[key] = convert(raw)
    if bad:
        shown = "; ".join(f"line {n}: {l[:60]!r}" for n, l in bad[:3])
        more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
        out.problems.append(f"{len(bad)} line(s) not key=value: {shown}{more}")
    if not out.trials:
        out.problems.append("no trial in the output")
    elif not out.complete:
        out.problems.append("no summary (result=) at the end: the output stops early")
    if len(out.trials) > 1:
        out.problems.append(f"the output holds {len(out.trials)} trials; the row keeps the last")
    return out


class JsonOutputError(ValueError):
    pass


def parse_json(text: str) -> HarnessOutput:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise JsonOutputError(f"not valid JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    if not isinstance(doc, dict):
        raise JsonOutputError("not a JSON object")
    for part, kind in (("config", dict), ("machine", dict), ("trials", list), ("summary", dict)):
        if not isinstance(doc.get(part), kind):
            raise JsonOutputError(f"no {part!r} {'object' if kind is dict else 'list'}")
    out = HarnessOutput(source="json")
    out.header.update(doc["config"])
    out.header.update(doc["machine"])
    warnings = doc.get("warnings", [])
    out.warnings = [str(w) for w in warnings] if isinstance(warnings, list) else [str(warnings)]
    for i, trial in enumerate(doc["trials"]):
        if not isinstance(trial, dict):
            raise JsonOutputError(f"trial {i} is not an object")
        trial = dict(trial)
        hist = {}
        for key in [k for k in trial if is_series_key(k)]:
            series = histogram_series(trial[key])
            if series is not None:
                hist[key] = series
                del trial[key]
        out.trials.append(trial)
        out.histograms.append(hist)
    out.summary.update(doc["summary"])
    if not out.trials:
        out.problems.append("no trial in the output")
    elif not out.complete:
        out.problems.append("no summary result in the JSON output")
    if len(out.trials) > 1:
        out.problems.append(f"the output holds {len(out.trials)} trials; the row keeps the last")
    return out


def parse_run(stdout: str, json_text: str | None) -> HarnessOutput:
    """The best reading of one run: the JSON document if whole, else the text."""
    if json_text is not None:
        try:
            out = parse_json(json_text)
            if out.complete:
                return out
            problem = "JSON output incomplete"
        except JsonOutputError as e:
            problem = f"JSON output unusable: {e}"
        text = parse_text(stdout)
        text.problems.insert(0, problem + "; the key=value text was used")
        return text
    return parse_text(stdout)
