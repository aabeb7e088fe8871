"""The results database (SQLite, ``results/EXPERIMENT/results.db``), rebuilt from the run
directories at each database step.

Tables:
- ``runs``: one row per run. Runner columns (``run_id``, ``run_key``, ``point_id``, ``run_trial``,
  ``run_status``, ``run_exit_code``, ``run_wall_s``, ``run_started_at``, ``run_load_avg`` (the
  1-minute load average as the run began), ``run_host`` (the machine, or cluster node, it ran on),
  ``run_machine_kind`` (its CPU model, cores, NUMA nodes and memory), ``run_command``,
  ``run_stderr``, ...), then one column per grid parameter, then one typed column per key the
  harness printed (the schema is made from the outputs themselves: a key the harness adds
  tomorrow is a column tomorrow), then the experiment's derived columns.
- ``points``: one row per grid point, with the runs planned, done and ok.
- ``stats``: per point and numeric column, over the point's ok runs: n, mean, median, stdev,
  95% confidence interval of the mean, coefficient of variation, min, max.
- ``summary`` (a view): points with the stats of the experiment's metric.
- ``warnings``: category, message, run and point.
- ``histograms``: the buckets of each run's JSON histograms (e.g. ``latency_histogram_ns``) and
  timelines (``utilisation_timeline``: ``count`` holds each bucket's value, a float there).
- ``structures``: the harness's registry as the plan read it (name, kind, library, method,
  sequential, description, layout, and the whole entry as JSON), when the grid reads it.
- ``columns``: every column of ``runs`` with its type and source; ``meta``: about the experiment
  (``command``: the command line that makes these runs again).
"""
from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from . import checks, stats
from .experiment import Loaded, MissingColumn, Plan, Run, command_line, format_value
from .parse import SENTINELS, HarnessOutput, parse_run
from .status import classify, plan_fingerprint

INT64 = (-(2**63), 2**63 - 1)
STDERR_KEEP = 4000

RUNNER_COLUMNS = [
    ("run_id", "INTEGER"), ("run_key", "TEXT"), ("point_id", "INTEGER"), ("run_trial", "INTEGER"),
    ("run_status", "TEXT"), ("run_exit_code", "INTEGER"), ("run_wall_s", "REAL"),
    ("run_started_at", "TEXT"), ("run_load_avg", "REAL"), ("run_host", "TEXT"), ("run_machine_kind", "TEXT"),
    ("run_command", "TEXT"), ("run_stderr", "TEXT"),
    ("run_output_source", "TEXT"), ("run_problems", "TEXT"), ("run_dir", "TEXT"),
]
RUNNER_NAMES = {name for name, _ in RUNNER_COLUMNS}


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def value_kind(v) -> str | None:
    """INTEGER, REAL or TEXT for one value; None for "no value"."""
    if v is None or (isinstance(v, str) and v in SENTINELS):
        return None
    if isinstance(v, bool):
        return "INTEGER"
    if isinstance(v, int):
        return "INTEGER" if INT64[0] <= v <= INT64[1] else "TEXT"  # a 64-bit checksum stays exact
    if isinstance(v, float):
        return "REAL"
    return "TEXT"


def column_type(values) -> str:
    kinds = {k for k in map(value_kind, values) if k}
    if not kinds or "TEXT" in kinds:
        return "TEXT"
    return "REAL" if "REAL" in kinds else "INTEGER"


def sql_value(v, ctype: str):
    if v is None:
        return None
    if ctype == "TEXT":
        if isinstance(v, bool):
            return "true" if v else "false"
        return v if isinstance(v, str) else format_value(v) if isinstance(v, float) else str(v)
    if isinstance(v, str):
        return None  # "unavailable", "none": no number
    if isinstance(v, bool):
        return int(v)
    return float(v) if ctype == "REAL" else v


def _fits(v):
    """SQLite integers are 64-bit signed: a bound such as UINT64_MAX is kept as a float."""
    return float(v) if isinstance(v, int) and not INT64[0] <= v <= INT64[1] else v


@dataclass
class RunData:
    run: Run
    record: dict
    output: HarnessOutput
    stderr: str
    row: dict = field(default_factory=dict)

    @property
    def status(self) -> str:
        return self.row["run_status"]


def read_run(run: Run, runs_dir: Path) -> RunData | None:
    d = runs_dir / run.key
    try:
        record = json.loads((d / "run.json").read_text())
    except (OSError, json.JSONDecodeError):
        return None
    stdout = (d / "stdout.txt").read_bytes().decode(errors="replace") if (d / "stdout.txt").exists() else ""
    stderr = (d / "stderr.txt").read_bytes().decode(errors="replace") if (d / "stderr.txt").exists() else ""
    json_path = d / "output.json"
    output = parse_run(stdout, json_path.read_text(errors="replace") if json_path.exists() else None)
    return RunData(run=run, record=record, output=output, stderr=stderr)


def build(loaded: Loaded, plan: Plan, results_dir: Path, command: str = "") -> dict:
    """Builds results.db from the plan's run directories; returns counts for the caller.
    ``command`` is the command line that makes these runs again (kept in meta)."""
    exp = loaded.experiment
    runs_dir = results_dir / "runs"
    data: list[RunData] = []
    run_ids = {}
    warnings: list[dict] = []
    current_sha = plan_fingerprint(plan)
    for index, run in enumerate(plan.runs, 1):
        rd = read_run(run, runs_dir) if (runs_dir / run.key / "run.json").is_file() else None
        if rd is None:
            continue
        run_ids[run.key] = index
        data.append(rd)

    # Rows: runner columns, parameters, output keys, derived columns.
    param_names = list(plan.grid)
    output_order: dict[str, None] = {}
    renamed = set().union(*(rd.output.collisions() for rd in data)) if data else set()
    for rd in data:
        # An output key named like a runner column (run_*) keeps its value as KEY_output.
        out_row = {(f"{k}_output" if k in RUNNER_NAMES else k): v for k, v in rd.output.row(renamed).items()}
        for k in out_row:
            output_order.setdefault(k, None)
        status = classify(rd.record.get("exit_code"), rd.record.get("timed_out", False), rd.output.complete)
        row = {
            "run_id": run_ids[rd.run.key], "run_key": rd.run.key, "point_id": rd.run.point_id,
            "run_trial": rd.run.trial, "run_status": status, "run_exit_code": rd.record.get("exit_code"),
            "run_wall_s": rd.record.get("wall_s"), "run_started_at": rd.record.get("started_at"),
            "run_load_avg": rd.record.get("load_avg_1min"), "run_host": rd.record.get("host"),
            "run_command": command_line(rd.record.get("argv", rd.run.argv)),
            "run_stderr": rd.stderr[-STDERR_KEEP:], "run_output_source": rd.output.source,
            "run_problems": "; ".join(rd.output.problems) or None, "run_dir": f"runs/{rd.run.key}",
        }
        row.update(rd.run.point)
        for k, v in out_row.items():
            if v is not None or k not in row:
                row[k] = v
        row["run_machine_kind"] = checks.machine_kind(row)
        for msg in checks.param_mismatches(rd.run.point, out_row):
            warnings.append(checks.warning("parameter", msg, run_key=rd.run.key, point_id=rd.run.point_id))
        if current_sha and rd.record.get("harness_sha256") and rd.record["harness_sha256"] != current_sha:
            warnings.append(checks.warning("stale", "made by another build of the harness than the current one",
                                           run_key=rd.run.key, point_id=rd.run.point_id))
        ns = checks.rule_namespace(row)
        for name, expr in exp.derived_columns.items():
            try:
                row[name] = expr(ns)
            except Exception as e:  # noqa: BLE001
                row[name] = None
                if status == "ok":
                    detail = f"no column {e.args[0]!r}" if isinstance(e, MissingColumn) else f"{type(e).__name__}: {e}"
                    warnings.append(checks.warning("derived", f"derived column {name} = `{expr.text}`: {detail}",
                                                   run_key=rd.run.key, point_id=rd.run.point_id))
        rd.row = row
        warnings += checks.check_run(exp, rd.run.key, rd.run.point_id, status, rd.output, row, rd.stderr)

    # The schema, from the values.
    columns: list[tuple[str, str, str]] = [(n, t, "runner") for n, t in RUNNER_COLUMNS]
    seen = {n.lower() for n, _, _ in columns}
    rename: dict[str, str] = {}
    for source, names in (("param", param_names), ("output", [k for k in output_order if k not in param_names]),
                          ("derived", list(exp.derived_columns))):
        for name in names:
            col = name
            k = 2
            while col.lower() in seen:  # SQLite names are case-insensitive
                col, k = f"{name}_{k}", k + 1
            seen.add(col.lower())
            rename[name] = col
            values = [rd.row.get(name) for rd in data]
            if source == "param":
                values += plan.grid[name]
            columns.append((col, column_type(values), source))

    db_path = results_dir / "results.db"
    tmp_path = results_dir / f".results.db.tmp-{os.getpid()}"
    if tmp_path.exists():
        tmp_path.unlink()
    con = sqlite3.connect(tmp_path)
    try:
        _write_schema(con, columns, param_names, rename, exp.metric)
        types = {name: t for name, t, _ in columns}
        col_names = [name for name, _, _ in columns]
        inv = {v: k for k, v in rename.items()}
        con.executemany(
            f"INSERT INTO runs ({', '.join(map(quote, col_names))}) VALUES ({', '.join('?' * len(col_names))})",
            [[sql_value(rd.row.get(inv.get(c, c)), types[c]) for c in col_names] for rd in data])
        con.executemany("INSERT INTO columns VALUES (?, ?, ?, ?)",
                        [(n, t, s, i) for i, (n, t, s) in enumerate(columns)])
        # Histograms.
        hist_rows = []
        for rd in data:
            for hist, series in rd.output.histogram_buckets().items():
                for name, buckets in series.items():
                    hist_rows += [(run_ids[rd.run.key], hist, name, _fits(lo), _fits(hi), _fits(n))
                                  for lo, hi, n in buckets]
        con.executemany("INSERT INTO histograms VALUES (?, ?, ?, ?, ?, ?)", hist_rows)
        con.executemany("INSERT INTO structures VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        [(e.get("name"), e.get("kind"), e.get("library"), e.get("method"), e.get("sequential"),
                          e.get("description"), e.get("layout"), json.dumps(e)) for e in plan.registry or []])
        # Points and their statistics.
        by_point: dict[int, list[RunData]] = {}
        for rd in data:
            by_point.setdefault(rd.run.point_id, []).append(rd)
        planned: dict[int, int] = {}
        for run in plan.runs:
            planned[run.point_id] = planned.get(run.point_id, 0) + 1
        pcols = [rename[p] for p in param_names]
        con.executemany(
            f"INSERT INTO points (point_id, point_label, {', '.join(map(quote, pcols))}, runs_planned, runs_done, runs_ok) "
            f"VALUES ({', '.join('?' * (len(pcols) + 5))})",
            [[pid, plan.labels[pid], *[sql_value(point[p], types[rename[p]]) for p in param_names],
              planned.get(pid, 0), len(by_point.get(pid, [])), sum(r.status == "ok" for r in by_point.get(pid, []))]
             for pid, point in enumerate(plan.points)])
        metrics = [(n, orig) for orig, n in rename.items()
                   if types[n] in ("INTEGER", "REAL") and orig not in plan.grid]
        checked = {exp.metric}  # other columns' spread shows as error bars and in the stats table
        stat_rows = []
        for pid, rds in sorted(by_point.items()):
            ok = [r for r in rds if r.status == "ok"]
            if not ok:
                continue
            if mixed := checks.mixed_machines([r.row for r in ok]):
                warnings.append(checks.warning("mixed_machines", mixed, point_id=pid))
            for col, orig in metrics:
                values = [r.row.get(orig) for r in ok]
                s = stats.summarize(v for v in values if not isinstance(v, str))
                if s.n == 0:
                    continue
                stat_rows.append((pid, col, s.n, s.mean, s.median, s.stdev, s.ci95_low, s.ci95_high, s.cv, s.min, s.max))
                if orig in checked and s.cv is not None and s.cv > exp.cv_threshold:
                    warnings.append(checks.warning(
                        "cv", f"{orig}: coefficient of variation {100 * s.cv:.1f}% over {s.n} trials "
                              f"(threshold {100 * exp.cv_threshold:.0f}%; mean {s.mean:,.6g}, min {s.min:,.6g}, max {s.max:,.6g})",
                        point_id=pid))
        con.executemany("INSERT INTO stats VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", stat_rows)
        missing = len(plan.runs) - len(data)
        if missing:
            warnings.append(checks.warning(
                "missing_runs", f"{missing} of {len(plan.runs)} planned runs have not run "
                                f"(run `cdsbench-run {loaded.path.name} run` to finish the sweep)"))
        order = list(checks.CATEGORIES)
        warnings.sort(key=lambda w: (order.index(w["category"]), w["point_id"] if w["point_id"] is not None else -1,
                                     run_ids.get(w["run_key"], 0)))
        con.executemany("INSERT INTO warnings (category, run_id, point_id, message) VALUES (?, ?, ?, ?)",
                        [(w["category"], run_ids.get(w["run_key"]), w["point_id"], w["message"]) for w in warnings])
        meta = {
            "experiment": loaded.name, "title": exp.title, "description": exp.description,
            "file": str(loaded.path), "built_at": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
            "harness": str(plan.harness), "harness_sha256": current_sha or "", "trials": exp.trials,
            "runs_planned": len(plan.runs), "runs_done": len(data),
            "runs_ok": sum(r.status == "ok" for r in data), "metric": exp.metric,
            "cv_threshold": exp.cv_threshold, "fairness_threshold": exp.fairness_threshold,
            "timeout_s": exp.timeout_s, "grid": json.dumps(plan.grid),
            "run_wall_s_total": round(sum(r.record.get("wall_s") or 0 for r in data), 3),
            "command": command, "env": json.dumps(loaded.env),
        }
        con.executemany("INSERT INTO meta VALUES (?, ?)", [(k, str(v)) for k, v in meta.items()])
        con.commit()
    finally:
        con.close()
    os.replace(tmp_path, db_path)
    return {"path": db_path, "runs": len(data), "planned": len(plan.runs), "warnings": len(warnings),
            "ok": sum(r.status == "ok" for r in data)}


def _write_schema(con, columns, param_names, rename, metric):
    defs = []
    for name, ctype, _ in columns:
        extra = " PRIMARY KEY" if name == "run_id" else " UNIQUE NOT NULL" if name == "run_key" else ""
        defs.append(f"{quote(name)} {ctype}{extra}")
    con.execute(f"CREATE TABLE runs ({', '.join(defs)})")
    ptypes = {n: t for n, t, s in columns if s == "param"}
    pdefs = [f"{quote(rename[p])} {ptypes[rename[p]]}" for p in param_names]
    con.execute(f"CREATE TABLE points (point_id INTEGER PRIMARY KEY, point_label TEXT, {', '.join(pdefs)}, "
                "runs_planned INTEGER, runs_done INTEGER, runs_ok INTEGER)")
    con.execute("CREATE TABLE stats (point_id INTEGER, metric TEXT, n INTEGER, mean REAL, median REAL, stdev REAL, "
                "ci95_low REAL, ci95_high REAL, cv REAL, min REAL, max REAL, PRIMARY KEY (point_id, metric))")
    con.execute("CREATE TABLE warnings (warning_id INTEGER PRIMARY KEY, category TEXT NOT NULL, run_id INTEGER, "
                "point_id INTEGER, message TEXT NOT NULL)")
    con.execute("CREATE TABLE histograms (run_id INTEGER, histogram TEXT, name TEXT, lower REAL, upper REAL, count INTEGER)")
    con.execute("CREATE TABLE structures (name TEXT PRIMARY KEY, kind TEXT, library TEXT, method TEXT, "
                "sequential TEXT, description TEXT, layout TEXT, entry TEXT)")
    con.execute("CREATE TABLE columns (name TEXT PRIMARY KEY, type TEXT, source TEXT, position INTEGER)")
    con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    con.execute("CREATE VIEW summary AS SELECT points.*, stats.metric, stats.n, stats.mean, stats.median, "
                "stats.ci95_low, stats.ci95_high, stats.cv, stats.min, stats.max FROM points LEFT JOIN stats "
                f"ON stats.point_id = points.point_id AND stats.metric = '{metric.replace(chr(39), chr(39) * 2)}'")


def connect_readonly(db_path: Path) -> sqlite3.Connection:
    con = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    return con


def add_warnings(db_path: Path, category: str, warnings: list[dict]) -> None:
    """Replaces the warnings of one category (the plots step adds its own)."""
    con = sqlite3.connect(db_path)
    try:
        con.execute("DELETE FROM warnings WHERE category = ?", (category,))
        con.executemany("INSERT INTO warnings (category, run_id, point_id, message) VALUES (?, ?, ?, ?)",
                        [(w["category"], None, w["point_id"], w["message"]) for w in warnings])
        con.commit()
    finally:
        con.close()
