"""The Markdown page of an experiment (``cdsbench-run EXP markdown [--out PATH]``), written from
results.db alone, so every figure on it can be read back with ``--query`` and made again with
the one command the page names.

The page is a header the runner writes (the command that reproduces it; the machine, commit and
harness that measured it; how quiet the machine was) above the experiment's ``page`` function of
a ``Results`` (default: the metric per point). The helpers here are the one way a page shows
numbers:

- ``Results.point(**params)``, ``Results.points(**params)``: grid points, with their runs and
  the statistics the database step computed (``stats``: median, min, max, ...).
- ``cell(point, column, fmt)``: the median of the point's trials, or why there is none (the
  runs' status, ``not run``, ``unavailable`` when the harness did not report the figure).
- ``spread_line``: how far apart the trials of a table's points were.
- ``compare(a, b, column)``: A against B, the ratio (or difference) of the medians with the 95%
  bootstrap interval over the trials of both sides (``stats.compare``); ``ratio_text`` shows it
  as ``1.82 [1.61, 2.05]``, or as ``no measurable difference [0.91, 1.12]`` when the interval
  contains 1 (0 for a difference): a page never calls a difference the noise can explain. A
  goal "A >= k x B" is met when the interval's lower bound is >= k (``Comparison.at_least``).
  ``paired=True``: trial k of A against trial k of B (``stats.compare_paired``), for a grid
  that runs the compared points back to back.
- ``table(header, rows)``: a Markdown table.
"""
from __future__ import annotations

import json
import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from . import stats
from .checks import by_machine_kind
from .database import connect_readonly
from .errors import UsageError
from .experiment import Loaded, format_value
from .status import STATUSES

DASH = "—"


# ---------------------------------------------------------------------------------------------
# The results, read back


@dataclass
class Point:
    """One grid point: its parameters, its runs (every status) and its statistics."""

    id: int
    label: str
    params: dict
    planned: int
    runs: list[dict] = field(default_factory=list)
    stats: dict = field(default_factory=dict)   # column -> the stats row (n, median, min, max, ...)

    @property
    def ok(self) -> list[dict]:
        return [r for r in self.runs if r["run_status"] == "ok"]

    @property
    def status(self) -> str:
        """ok when every run done is ok; else the first of STATUSES among them; `not run`."""
        if not self.runs:
            return "not run"
        found = {r["run_status"] for r in self.runs}
        return next((s for s in STATUSES[1:] if s in found), "ok")

    def values(self, column: str) -> list[float]:
        """The column's numbers over the ok runs (NULL and text skipped)."""
        return [r[column] for r in self.ok
                if isinstance(r.get(column), (int, float)) and not isinstance(r.get(column), bool)]

    def stat(self, column: str, name: str = "median"):
        """A statistic of the column over the ok runs (the stats table): n, mean, median, stdev,
        ci95_low, ci95_high, cv, min, max; None when there is no number."""
        row = self.stats.get(column)
        return row[name] if row else None

    def median(self, column: str):
        return self.stat(column, "median")

    def value(self, column: str):
        """A column the same in every run of the point (a configuration key such as the reclaimer
        used), or None."""
        values = {r.get(column) for r in self.ok} or {r.get(column) for r in self.runs}
        return values.pop() if len(values) == 1 else None


def _same(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) \
            and not isinstance(b, bool):
        return float(a) == float(b)
    return format_value(a) == format_value(b)


def _key(values) -> tuple:
    return tuple(format_value(float(v)) if isinstance(v, (int, float)) and not isinstance(v, bool)
                 else format_value(v) for v in values)


class Results:
    """An experiment's results.db, read once: meta, the grid, the points with their runs and
    statistics, the machine, and the harness's registry (``structures``)."""

    def __init__(self, db_path: Path):
        self.path = db_path
        con = connect_readonly(db_path)
        try:
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            self.meta = {r["key"]: r["value"] for r in con.execute("SELECT key, value FROM meta")}
            self.params = [r["name"] for r in con.execute(
                "SELECT name FROM columns WHERE source = 'param' ORDER BY position")]
            runs = [dict(r) for r in con.execute("SELECT * FROM runs ORDER BY run_id")]
            point_rows = [dict(r) for r in con.execute("SELECT * FROM points ORDER BY point_id")]
            stat_rows = [dict(r) for r in con.execute("SELECT * FROM stats")]
            self.structures = {}
            if "structures" in tables:
                self.structures = {r["name"]: json.loads(r["entry"])
                                   for r in con.execute("SELECT name, entry FROM structures")}
        finally:
            con.close()
        self.grid = json.loads(self.meta.get("grid", "{}"))
        self.runs = runs
        self._points = []
        by_id = {}
        for p in point_rows:
            point = Point(id=p["point_id"], label=p["point_label"], params={k: p[k] for k in self.params},
                          planned=p["runs_planned"])
            self._points.append(point)
            by_id[point.id] = point
        self._by_params = {_key(p.params[k] for k in self.params): p for p in self._points}
        for r in runs:
            if r["point_id"] in by_id:
                by_id[r["point_id"]].runs.append(r)
        for s in stat_rows:
            if s["point_id"] in by_id:
                by_id[s["point_id"]].stats[s["metric"]] = s

    def points(self, **where) -> list[Point]:
        """The points whose parameters match: a value, or a list/tuple/set of values."""
        unknown = [k for k in where if k not in self.params]
        if unknown:
            raise UsageError(f"page: {unknown[0]!r} is not a grid parameter (allowed: {', '.join(self.params)})")

        def match(point):
            for k, v in where.items():
                options = v if isinstance(v, (list, tuple, set, frozenset)) else [v]
                if not any(_same(point.params[k], o) for o in options):
                    return False
            return True

        return [p for p in self._points if match(p)]

    def point(self, **where) -> Point | None:
        """The one point with these parameters (None if the grid has none)."""
        if set(where) == set(self.params) and not any(isinstance(v, (list, tuple, set, frozenset))
                                                      for v in where.values()):
            return self._by_params.get(_key(where[k] for k in self.params))  # every parameter given
        found = self.points(**where)
        if len(found) > 1:
            raise UsageError(f"page: {where} matches {len(found)} points, not one "
                             f"(allowed: a value for each of {', '.join(self.params)} that varies)")
        return found[0] if found else None

    def series(self, run: dict, key: str) -> dict:
        """A run's bucket series ``key`` (a JSON histogram, or a timeline such as dedup's
        ``utilisation_timeline``): {name: [(lower, upper, value)]}, buckets in order."""
        con = connect_readonly(self.path)
        try:
            rows = con.execute("SELECT name, lower, upper, count FROM histograms WHERE run_id = ? AND histogram = ? "
                               "ORDER BY name, lower", (run["run_id"], key)).fetchall()
        finally:
            con.close()
        out: dict = {}
        for r in rows:
            out.setdefault(r["name"], []).append((r["lower"], r["upper"], r["count"]))
        return out

    def values(self, name: str) -> list:
        """The grid's values of a parameter, in grid order."""
        return list(self.grid.get(name, []))

    @property
    def env(self) -> dict:
        """The settings the experiment read from the environment when the database was made."""
        return json.loads(self.meta.get("env") or "{}")

    @property
    def trials(self) -> int:
        return int(self.meta.get("trials", 0) or 0)

    @property
    def machine(self) -> dict:
        """The machine keys of the first ok run (else of the first run)."""
        first = next((r for r in self.runs if r["run_status"] == "ok"), self.runs[0] if self.runs else {})
        return {k: v for k, v in first.items() if (k.startswith("machine_") or k in ("compiler",)) and v is not None}

    def commits(self) -> list[str]:
        return sorted({r["git_commit"] for r in self.runs if r.get("git_commit")})


# ---------------------------------------------------------------------------------------------
# Cells, comparisons, tables


def number(v, fmt="%.3f") -> str:
    if v is None:
        return "unavailable"
    return fmt(v) if callable(fmt) else fmt % v


def cell(point: Point | None, column: str, fmt="%.3f", stat: str = "median") -> str:
    """The point's median of ``column`` (or another statistic), or why there is none."""
    if point is None:
        return DASH
    if point.status != "ok":
        return point.status
    return number(point.stat(column, stat), fmt)


def compare(a: Point | None, b: Point | None, column: str, kind: str = "ratio",
            paired: bool = False) -> stats.Comparison | None:
    """A's trials against B's (ok points only; None otherwise). Paired: each trial of A against
    B's trial of the same number (the runner's round), the trials one side lacks left out."""
    if a is None or b is None or a.status != "ok" or b.status != "ok":
        return None
    if paired:
        theirs = {r["run_trial"]: r.get(column) for r in b.ok}
        return stats.compare_paired([(r.get(column), theirs[r["run_trial"]]) for r in a.ok if r["run_trial"] in theirs],
                                    kind)
    return stats.compare(a.values(column), b.values(column), kind)


def ratio_text(c: stats.Comparison | None, fmt="%.2f") -> str:
    """``1.82 [1.61, 2.05]``; ``no measurable difference [0.91, 1.12]`` when the interval holds
    1 (a difference: 0); ``1.05 (1 trial: no interval)`` when a side has one trial."""
    if c is None:
        return DASH
    show = (lambda v: fmt(v)) if callable(fmt) else (lambda v: fmt % v)
    if not c.has_ci:
        n = min(c.n_a, c.n_b)
        return f"{show(c.estimate)} ({n} trial{'s' if n != 1 else ''}: no interval)"
    interval = f"[{show(c.low)}, {show(c.high)}]"
    return f"{show(c.estimate)} {interval}" if c.measurable else f"no measurable difference {interval}"


def table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table: the first column left-aligned, the others right-aligned."""
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def spread_line(cells: list[tuple[Point | None, str]], column: str) -> str:
    """How far apart a table's trials were: (max - min) / median of each point with two or more
    ok trials, the median over the table and the largest (with the label given for its point)."""
    spreads = []
    for point, label in cells:
        if point is None or point.status != "ok" or (point.stat(column, "n") or 0) < 2:
            continue
        med, lo, hi = point.median(column), point.stat(column, "min"), point.stat(column, "max")
        if med:
            spreads.append(((hi - lo) / abs(med), label))
    if not spreads:
        return "Spread of the trials: no point has two trials."
    worst = max(spreads, key=lambda s: s[0])
    n = {p.stat(column, "n") for p, _ in cells if p is not None and p.status == "ok"}
    trials = f"{n.pop()} trials" if len(n) == 1 else "trials"
    return (f"Spread of the {trials} of a point, (max - min) / median: median "
            f"{100 * statistics.median(s for s, _ in spreads):.0f}% over the table's {len(spreads)} points; "
            f"largest {100 * worst[0]:.0f}% ({worst[1]}).")


def failed_points(cells: list[tuple[Point | None, str]]) -> str:
    """The "Failed points" section of a page: for each point (with its label) whose trials did not
    all pass, why and the command that replays it; "" when none failed."""
    lines = []
    for point, label in cells:
        if point is None or point.status in ("ok", "not run"):
            continue
        bad = next(r for r in point.runs if r["run_status"] != "ok")
        last_err = (bad.get("run_stderr") or "").strip().splitlines()[-1:]
        why = bad.get("validation_error") or (last_err[0] if last_err else "exit %s" % bad["run_exit_code"])
        lines.append(f"- {label}: {point.status}: {why} {DASH} `{bad['run_command']}`")
    if not lines:
        return ""
    return "\n".join(["### Failed points", "", "A failed validation is an error, never a number. Each line replays "
                      "the point:", "", *lines, ""])


def parts_not_measured(results: Results, parts, variable: str) -> str:
    """The line naming an experiment's parts (grid parameter ``part``) that have no point yet, and
    the setting that measures them; "" when every part has points."""
    missing = [part for part in parts if not results.points(part=part)]
    if not missing:
        return ""
    return "Not measured yet: %s (`%s=%s`)." % (", ".join("`%s`" % p for p in missing), variable, ",".join(missing))


def measured_rows(results: Results, part: str) -> list:
    """The structures (grid parameter ``ds``) with a point in the experiment's part ``part``."""
    return [n for n in results.values("ds") if results.points(part=part, ds=n)]


def used_values(results: Results, part: str, name: str) -> list:
    """The values of grid parameter ``name`` with a point in part ``part``."""
    return [v for v in results.values(name) if results.points(part=part, **{name: v})]


def fastest(results: Results, names, params: dict, column: str):
    """The name among ``names`` whose point at ``params`` has the highest median ``column``
    (None if none ran)."""
    ran = [(results.point(ds=n, **params), n) for n in names]
    ran = [(p.median(column), n) for p, n in ran if p is not None and p.status == "ok" and p.median(column)]
    return max(ran)[1] if ran else None


def thousands(n) -> str:
    return f"{int(n):,}" if float(n).is_integer() else f"{n:,}"


# ---------------------------------------------------------------------------------------------
# The page


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root))
    except ValueError:
        return str(path)


def _hms(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def header(results: Results, title: str, command: str, db_shown: str) -> str:
    m = results.machine
    runs = results.runs
    lines = [f"# {title}", "",
             f"Written by `cdsbench-run` from `{db_shown}`; do not edit by hand. Every figure is in that "
             "database (`--query`), and this command measures and writes the page again:", "",
             "```sh", command, "```", ""]
    if m:
        lines.append(f"- Machine: {m.get('machine_cpu_model', '?')}; {m.get('machine_cpus', '?')} CPUs "
                     f"({m.get('machine_cores', '?')} cores) in {m.get('machine_numa_nodes', '?')} NUMA node(s), "
                     f"{m.get('machine_packages', '?')} package(s); kernel {m.get('machine_kernel', '?')}; "
                     f"compiler {m.get('compiler', '?')}.")
    kinds = by_machine_kind(runs)
    if len(kinds) > 1:  # a cluster's nodes: the points that mix kinds are in the warnings
        lines.append(f"- Machines of {len(kinds)} kinds: " + "; ".join(
            f"{kind} ({len(rs)} runs)" for kind, rs in sorted(kinds.items())) + ".")
    commits = results.commits()
    sha = results.meta.get("harness_sha256", "")
    lines.append(f"- Harness: commit {', '.join(commits) or 'unknown'}"
                 + (f", binary sha256 {sha[:16]}" if sha else "") + ".")
    started = sorted(r["run_started_at"] for r in runs if r.get("run_started_at"))
    loads = [r["run_load_avg"] for r in runs if isinstance(r.get("run_load_avg"), (int, float))]
    if started:
        text = (f"- Runs: {len(runs)} of {results.meta.get('runs_planned', '?')} planned, started "
                f"{started[0]} to {started[-1]}, {_hms(float(results.meta.get('run_wall_s_total', 0)))} "
                "(h:m:s) of runs in all")
        if loads:
            text += (f"; 1-minute load average as a run began: median {statistics.median(loads):.1f}, "
                     f"largest {max(loads):.1f}")
        lines.append(text + ".")
    done, planned = len(runs), int(results.meta.get("runs_planned", 0) or 0)
    if done < planned:
        lines.append(f"- **Incomplete: {planned - done} of {planned} planned runs have not run**; "
                     "the command above finishes the sweep.")
    bad = sum(r["run_status"] != "ok" for r in runs)
    if bad:
        lines.append(f"- {bad} run(s) did not succeed: their points show their status instead of a number.")
    lines += ["- Every figure is a median over a point's trials (each trial its own harness process); "
              "A / B is the ratio of the medians with its 95% bootstrap interval over the trials of both "
              "sides in brackets, shown as *no measurable difference* when the interval contains 1.", ""]
    return "\n".join(lines) + "\n"


def default_page(results: Results, metric: str) -> str:
    """The metric per point: median, min-max, trials and coefficient of variation."""
    rows = []
    for p in results.points():
        rows.append([format_value(p.params[k]) for k in results.params]
                     + [cell(p, metric, "%.6g"), f"{number(p.stat(metric, 'min'), '%.6g')} - "
                        f"{number(p.stat(metric, 'max'), '%.6g')}" if p.status == "ok" else DASH,
                        str(p.stat(metric, "n") or 0), f"{100 * p.stat(metric, 'cv'):.1f}%"
                        if p.status == "ok" and p.stat(metric, "cv") is not None else DASH])
    return (f"## {metric} per point\n\n"
            + table(results.params + ["median", "min - max", "trials", "CV"], rows) + "\n")


def write(loaded: Loaded, results_dir: Path, out: Path | None, command: str = "") -> Path:
    """Writes the page (to ``out``, else RESULTS/EXP/results.md) from results.db; returns its path."""
    db_path = results_dir / "results.db"
    if not db_path.exists():
        raise UsageError(f"{db_path}: no database (allowed: run the database step first: "
                         f"cdsbench-run {loaded.path.name} database)")
    results = Results(db_path)
    exp = loaded.experiment
    target = out or results_dir / "results.md"
    command = command or results.meta.get("command") or f".venv/bin/cdsbench-run {loaded.path.name}"
    if out is not None:
        command += f" --out {_shown(out, loaded.root)}"
    if exp.page is not None:
        try:
            body = exp.page(results)
        except UsageError:
            raise
        except Exception as e:  # noqa: BLE001 (the experiment's code on the database's data)
            raise UsageError(f"{loaded.path.name}: page() raised {type(e).__name__}: {e}") from None
        if not isinstance(body, str):
            raise UsageError(f"{loaded.path.name}: page() returned {type(body).__name__} "
                             "(allowed: the page's Markdown as one string)")
    else:
        body = default_page(results, exp.metric)
    text = header(results, exp.title, command, _shown(db_path, loaded.root)) + body.strip("\n") + "\n"
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(text)
        os.replace(tmp, target)  # a reader sees the old page or the new one, never half of one
    finally:
        if tmp.exists():
            tmp.unlink()
    return target
