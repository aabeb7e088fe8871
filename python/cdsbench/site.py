"""The report: static HTML under ``results/EXPERIMENT/`` (open ``index.html``, or serve the folder).

- ``index.html``: overview, a banner when there are warnings, one section per plot (each figure
  links to the rows it was drawn from), the per-point summary, the experiment's definition, the
  downloads (SQLite database, CSV).
- ``warnings.html``: every warning by category, each linked to its run or point.
- ``rows/FIGURE.html``: the runs one figure was drawn from; each row links to its run.
- ``runs.html``: every run; ``runs/KEY/index.html``: one run's command, status, stderr, values
  and raw output (the raw files sit beside it).
"""
from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path

from .checks import CATEGORIES, by_machine_kind
from .database import connect_readonly
from .errors import UsageError
from .experiment import Loaded, Plan, format_value
from .export import export_tables
from .status import STATUS_MEANING

RAW_FILES = ("stdout.txt", "stderr.txt", "command.txt", "output.json", "run.json")
RAW_LIMIT = 400_000  # characters of stdout shown inline; the file is linked whole


def eng(v, digits: int = 4) -> str:
    """7257326.01 -> '7.257 M'; small numbers as they are."""
    if v is None:
        return ""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    a = abs(v)
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if a >= scale:
            return f"{v / scale:.{digits}g} {unit}"
    if isinstance(v, int):
        return str(v)
    return f"{v:.{digits}g}"


def pct(v) -> str:
    return "" if v is None else f"{100 * v:.1f}%"


def _env():
    from jinja2 import Environment, PackageLoader, select_autoescape

    # The default Undefined renders a missing column as nothing: the key set changes over time.
    env = Environment(loader=PackageLoader("cdsbench", "templates"), autoescape=select_autoescape(["html"]),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["eng"] = eng
    env.filters["pct"] = pct
    env.filters["fv"] = lambda v: "" if v is None else format_value(v)
    return env


def build(loaded: Loaded, plan: Plan, results_dir: Path, log=print) -> Path:
    db_path = results_dir / "results.db"
    if not db_path.exists():
        raise UsageError(f"{db_path}: no database (allowed: run the database step first: "
                         f"cdsbench-run {loaded.path.name} database)")
    exp = loaded.experiment
    con = connect_readonly(db_path)
    try:
        meta = {r["key"]: r["value"] for r in con.execute("SELECT key, value FROM meta")}
        columns = [dict(r) for r in con.execute("SELECT * FROM columns ORDER BY position")]
        runs = [dict(r) for r in con.execute("SELECT * FROM runs ORDER BY run_id")]
        points = [dict(r) for r in con.execute("SELECT * FROM summary ORDER BY point_id")]
        warnings = [dict(r) for r in con.execute("SELECT * FROM warnings ORDER BY warning_id")]
        point_stats = {}
        for r in con.execute("SELECT * FROM stats"):
            point_stats[(r["point_id"], r["metric"])] = dict(r)
    finally:
        con.close()
    manifest_path = results_dir / "plots" / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {"figures": [], "plots": []}
    export_paths = export_tables(db_path, results_dir / "export", loaded.path.name)

    params = list(plan.grid)
    run_by_id = {r["run_id"]: r for r in runs}
    runs_by_point: dict[int, list] = {}
    for r in runs:
        runs_by_point.setdefault(r["point_id"], []).append(r)
    labels = {p["point_id"]: p["point_label"] for p in points}
    status_counts: dict[str, int] = {}
    for r in runs:
        status_counts[r["run_status"]] = status_counts.get(r["run_status"], 0) + 1

    # Warnings, grouped by category, each with its link.
    groups = []
    for cat, (title, explanation) in CATEGORIES.items():
        items = [w for w in warnings if w["category"] == cat]
        if not items:
            continue
        for w in items:
            run = run_by_id.get(w["run_id"])
            w["run"] = run
            w["point_label"] = labels.get(w["point_id"], "") if w["point_id"] is not None else ""
        if cat == "cv":
            title = f"{title} (CV over {100 * exp.cv_threshold:.0f}%)"
        groups.append({"category": cat, "title": title, "explanation": explanation, "entries": items})
    banner = [(g["title"], len(g["entries"]), g["category"]) for g in groups]

    first_ok = next((r for r in runs if r["run_status"] == "ok"), runs[0] if runs else None)
    machine = {k: first_ok.get(k) for k in ("machine_cpu_model", "machine_cpus", "machine_cores", "machine_numa_nodes",
                                             "machine_kernel", "machine_hostname", "machine_pmu", "compiler")
               if first_ok and first_ok.get(k) is not None}
    machine_kinds = [{"kind": kind, "runs": len(rs), "hosts": sorted({str(r.get("run_host")) for r in rs})}
                     for kind, rs in sorted(by_machine_kind(runs).items())]
    commits = sorted({r.get("git_commit") for r in runs if r.get("git_commit")})
    durations = sorted({r["duration_ms"] for r in runs if isinstance(r.get("duration_ms"), (int, float))})
    plots = []
    for p in manifest["plots"]:
        figs = [f for f in manifest["figures"] if f["plot"] == p["id"]]
        plots.append({**p, "figures": figs})

    metric = exp.metric
    for p in points:
        p["runs"] = runs_by_point.get(p["point_id"], [])
        p["noisy"] = p.get("cv") is not None and p["cv"] > exp.cv_threshold
    common = {
        "exp": exp, "name": loaded.name, "meta": meta, "params": params, "n_warnings": len(warnings),
        "banner": banner, "generated": dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M:%S %Z"),
    }
    env = _env()

    def render(template: str, path: Path, root: str, **ctx):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(env.get_template(template).render(root=root, **common, **ctx))

    total_wall = sum(r["run_wall_s"] or 0 for r in runs)
    render("index.html", results_dir / "index.html", "",
           plots=plots, points=points, metric=metric, machine=machine, machine_kinds=machine_kinds, commits=commits,
           status_counts=status_counts, n_runs=len(runs), durations=durations, n_planned=len(plan.runs), n_points=len(plan.points),
           total_wall=total_wall, grid=plan.grid, rules=exp.rules, derived=exp.derived_columns,
           example=(first_ok or {}).get("run_command", ""), source=loaded.source, file=loaded.path.name,
           exports=[p.relative_to(results_dir).as_posix() for p in export_paths],
           has_figures=bool(manifest["figures"]), groups=groups, status_meaning=STATUS_MEANING)
    render("warnings.html", results_dir / "warnings.html", "", groups=groups)
    render("runs.html", results_dir / "runs.html", "", runs=runs, metric=metric, status_meaning=STATUS_MEANING)

    rows_dir = results_dir / "rows"
    rows_dir.mkdir(exist_ok=True)
    for old in rows_dir.glob("*.html"):
        old.unlink()
    for fig in manifest["figures"]:
        fig_runs = [run_by_id[i] for i in fig["run_ids"] if i in run_by_id]
        value_cols = [c for c in fig["columns"] if c not in params]
        shown_cols = params + [c for c in value_cols if c not in params]
        pids = sorted({r["point_id"] for r in fig_runs})
        fig_stats = []
        for pid in pids:
            for c in value_cols:
                s = point_stats.get((pid, c))
                if s:
                    fig_stats.append({"label": labels.get(pid, pid), "metric": c, **s})
        render("rows.html", rows_dir / f"{fig['id']}.html", "../", fig=fig, runs=fig_runs, columns=shown_cols,
               stats=fig_stats)

    for r in runs:
        d = results_dir / r["run_dir"]
        stdout = (d / "stdout.txt").read_bytes().decode(errors="replace") if (d / "stdout.txt").exists() else ""
        shown = stdout[:RAW_LIMIT]
        groups_of_values = []
        for source in ("param", "output", "derived"):
            vals = [(c["name"], r.get(c["name"])) for c in columns if c["source"] == source and r.get(c["name"]) is not None]
            if vals:
                groups_of_values.append((source, vals))
        run_warnings = [w for w in warnings if w["run_id"] == r["run_id"]]
        render("run.html", d / "index.html", "../../", run=r, stdout=shown, truncated=len(stdout) > len(shown),
               files=[f for f in RAW_FILES if (d / f).exists()], values=groups_of_values,
               run_warnings=run_warnings, status_meaning=STATUS_MEANING)
    log(f"site: {results_dir / 'index.html'}")
    return results_dir / "index.html"
