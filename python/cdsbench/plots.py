"""Plots from the database: matplotlib, each figure as SVG and PNG under ``plots/``.

One figure per combination of a plot's facet values. Each structure keeps one colour (and
marker) in every figure of an experiment: colours follow the order of the ``ds`` grid values
(the registry's order for ``registered_structures()``). Points and bars are the mean of the ok
trials with the 95% confidence interval as error bars. ``plots/manifest.json`` lists every
figure with the runs it was drawn from (the report links each figure to them).
"""
from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import matplotlib

from . import stats
from .database import connect_readonly
from .errors import UsageError
from .experiment import Bar, Heatmap, Histogram, Line, Loaded, Plan, format_value, slug

STRUCTURE_COLUMN = "ds"
# Colour-blind-friendly first (Okabe-Ito), then tab20's; markers cycle independently.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000",
           "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p"]
matplotlib.use("Agg")  # files only, never a window

OTHER_SERIES = ["#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C"]


def structure_styles(plan: Plan, rows: list[dict]) -> dict:
    """structure -> (colour, marker): unique pairs for the first len(PALETTE) * len(MARKERS)."""
    names = list(plan.grid.get(STRUCTURE_COLUMN, []))
    for r in rows:
        v = r.get(STRUCTURE_COLUMN)
        if v is not None and v not in names:
            names.append(v)
    return {name: (PALETTE[i % len(PALETTE)], MARKERS[(i % len(MARKERS) + i // len(PALETTE)) % len(MARKERS)])
            for i, name in enumerate(names)}


class Styler:
    def __init__(self, structures: dict):
        self.structures = structures

    def style(self, column: str | None, value, index: int):
        if column == STRUCTURE_COLUMN and value in self.structures:
            return self.structures[value]
        return OTHER_SERIES[index % len(OTHER_SERIES)], MARKERS[index % len(MARKERS)]


def ordered_values(column: str, rows: list[dict], plan: Plan) -> list:
    """A column's values: grid order for a parameter, ascending for numbers, else the order they
    first appear in (plan order, e.g. a derived structure family in registry order)."""
    present = {r.get(column) for r in rows}
    if column in plan.grid:
        return [v for v in plan.grid[column] if v in present]
    vals = [v for v in present if v is not None]
    if _numeric(vals):
        return sorted(vals)
    first = []
    for r in rows:
        v = r.get(column)
        if v is not None and v not in first:
            first.append(v)
    return first


def matches(where, row: dict) -> bool:
    if where is None:
        return True
    if callable(where):
        try:
            return bool(where(row))
        except Exception:  # noqa: BLE001 (a row the filter cannot judge is left out)
            return False
    for k, v in where.items():
        if isinstance(v, (list, tuple, set)):
            if row.get(k) not in v:
                return False
        elif row.get(k) != v:
            return False
    return True


def draw(loaded: Loaded, plan: Plan, results_dir: Path, log=print) -> dict:
    import matplotlib.pyplot as plt

    db_path = results_dir / "results.db"
    if not db_path.exists():
        raise UsageError(f"{db_path}: no database (allowed: run the database step first: "
                         f"cdsbench-run {loaded.path.name} database)")
    con = connect_readonly(db_path)
    try:
        columns = {r["name"]: r["type"] for r in con.execute("SELECT name, type FROM columns")}
        rows = [dict(r) for r in con.execute("SELECT * FROM runs WHERE run_status = 'ok' ORDER BY run_id")]
        hist_rows = con.execute("SELECT run_id, histogram, name, lower, upper, count FROM histograms").fetchall()
    finally:
        con.close()
    histograms: dict[tuple, list] = {}
    for r in hist_rows:
        histograms.setdefault((r["run_id"], r["histogram"], r["name"]), []).append((r["lower"], r["upper"], r["count"]))

    exp = loaded.experiment
    # Before any run succeeded the output keys are not columns yet: nothing to check or draw.
    for plot in exp.plots if rows else []:
        for c in plot.columns():
            if c not in columns:
                raise UsageError(f"plots: {plot.id}: no column {c!r} in the database (allowed: grid parameters "
                                 f"{', '.join(plan.grid)}, the harness's output keys, derived columns; "
                                 "list them with --query 'SELECT name FROM columns')")
        for c in plot.value_columns():
            if columns[c] not in ("INTEGER", "REAL"):
                raise UsageError(f"plots: {plot.id}: column {c!r} is {columns[c]}, not a number "
                                 "(allowed: a numeric column)")

    plt.rcParams.update({
        "svg.hashsalt": "cdsbench", "figure.figsize": (6.4, 4.2), "axes.grid": True, "grid.alpha": 0.3,
        "axes.spines.top": False, "axes.spines.right": False, "font.size": 10, "legend.fontsize": 8,
        "legend.frameon": False,
    })
    styler = Styler(structure_styles(plan, rows))
    out_dir = results_dir / "plots"
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("*"):
        if old.suffix in (".svg", ".png") or old.name == "manifest.json":
            old.unlink()
    figures, notes = [], []
    for plot in exp.plots:
        if not rows:
            notes.append({"category": "plot", "point_id": None, "message": f"plot {plot.id}: no data to draw (no ok run yet)"})
            continue
        subset = [r for r in rows if matches(plot.where, r)]
        facet_values = [ordered_values(f, subset, plan) for f in plot.facets]
        drawn = 0
        for combo in itertools.product(*facet_values) if plot.facets else [()]:
            facet = dict(zip(plot.facets, combo))
            frows = [r for r in subset if all(r.get(k) == v for k, v in facet.items())]
            fig_id = plot.id + ("--" + slug("_".join(f"{k}-{format_value(v)}" for k, v in facet.items()))
                                if facet else "")
            subtitle = ", ".join(f"{k}={format_value(v)}" for k, v in facet.items())
            fig, ax, used, axes_note = figure(plot, frows, plan, histograms, styler, subset, subtitle)
            if not used:
                plt.close(fig)
                continue
            title = plot.title or plot.id
            svg, png = out_dir / f"{fig_id}.svg", out_dir / f"{fig_id}.png"
            fig.savefig(svg, metadata={"Date": None})
            fig.savefig(png, dpi=110)
            plt.close(fig)
            drawn += 1
            figures.append({
                "id": fig_id, "plot": plot.id, "kind": plot.kind, "title": title, "facet": facet,
                "subtitle": subtitle, "svg": f"plots/{svg.name}", "png": f"plots/{png.name}",
                "run_ids": sorted(used), "note": axes_note,
                "columns": [c for c in plot.columns() if c not in facet],
            })
        if not drawn:
            notes.append({"category": "plot", "point_id": None,
                          "message": f"plot {plot.id}: no data to draw"
                                     + (" (the runs have no histogram: give the harness --latency-sample N)"
                                        if isinstance(plot, Histogram) else " (no ok run matches it)")})
    manifest = {"figures": figures, "plots": [{"id": p.id, "kind": p.kind, "title": p.title or p.id} for p in exp.plots]}
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n")
    from .database import add_warnings
    add_warnings(db_path, "plot", notes)
    log(f"plots: {len(figures)} figures (SVG and PNG) in {out_dir}")
    return manifest


def figure(plot, rows, plan, histograms, styler, all_rows, subtitle=""):
    """One figure of ``plot`` from ``rows`` (ok runs as dicts); returns (fig, ax, run ids used, note)."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import EngFormatter

    fig, ax = plt.subplots()
    if isinstance(plot, Histogram):
        used, note = _histogram(ax, plot, rows, plan, histograms, styler)
    elif isinstance(plot, Line):
        used, note = _line(ax, plot, rows, plan, styler)
    elif isinstance(plot, Bar):
        used, note = _bar(ax, plot, rows, plan, styler)
    elif isinstance(plot, Heatmap):
        used, note = _heatmap(fig, ax, plot, rows, plan, all_rows)
    else:  # pragma: no cover (Experiment checks the kinds)
        raise UsageError(f"plots: unknown plot {plot!r}")
    title = plot.title or plot.id
    ax.set_title(f"{title}\n{subtitle}" if subtitle else title, fontsize=11)
    if isinstance(plot, (Line, Bar)) and not getattr(plot, "logy", False):
        ax.yaxis.set_major_formatter(EngFormatter(sep=""))
    fig.tight_layout()
    return fig, ax, used, note


def _numeric(values) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def _errorbars(summaries):
    lo = [s.mean - s.ci95_low if s.ci95_low is not None else 0 for s in summaries]
    hi = [s.ci95_high - s.mean if s.ci95_high is not None else 0 for s in summaries]
    return [lo, hi]


def _line(ax, plot: Line, rows, plan, styler):
    used = set()
    xs_all = ordered_values(plot.x, rows, plan)
    numeric_x = _numeric(xs_all)
    series_values = ordered_values(plot.series, rows, plan) if plot.series else [None]
    for i, sv in enumerate(series_values):
        srows = [r for r in rows if plot.series is None or r.get(plot.series) == sv]
        xs, sums = [], []
        for x in xs_all:
            group = [r for r in srows if r.get(plot.x) == x and r.get(plot.y) is not None]
            if not group:
                continue
            xs.append(x if numeric_x else xs_all.index(x))
            sums.append(stats.summarize(r[plot.y] for r in group))
            used.update(r["run_id"] for r in group)
        if not xs:
            continue
        color, marker = styler.style(plot.series, sv, i)
        ax.errorbar(xs, [s.mean for s in sums], yerr=_errorbars(sums), color=color, marker=marker, capsize=3,
                    linewidth=1.6, markersize=5, label=format_value(sv) if sv is not None else plot.y)
    if not used:
        return used, ""
    if numeric_x:
        ax.set_xticks(xs_all)
        ax.set_xticklabels([format_value(v) for v in xs_all])
    else:
        ax.set_xticks(range(len(xs_all)))
        ax.set_xticklabels([format_value(v) for v in xs_all], rotation=20, ha="right")
    if plot.logx:
        ax.set_xscale("log", base=2 if numeric_x and all(v > 0 for v in xs_all) else 10)
        if numeric_x:
            ax.set_xticks(xs_all)
            ax.set_xticklabels([format_value(v) for v in xs_all])
            ax.minorticks_off()
    if plot.logy:
        ax.set_yscale("log")
    ax.set_xlabel(plot.x)
    ax.set_ylabel(plot.y)
    _legend(ax, plot.series, len(series_values))
    return used, "points: mean of the ok trials; error bars: 95% confidence interval of the mean"


def _legend(ax, title, n):
    if n > 1 or title:
        if n > 6:  # beside the axes, in a wider figure
            ax.figure.set_size_inches(6.4 + 1.6 * (1 + n // 18), 4.2 + 0.12 * max(0, min(n, 18) - 12))
            ax.legend(title=title, loc="upper left", bbox_to_anchor=(1.0, 1.0), ncols=1 + n // 18)
        else:
            ax.legend(title=title)


def _bar(ax, plot: Bar, rows, plan, styler):
    used = set()
    cats = ordered_values(plot.x, rows, plan)
    series_values = ordered_values(plot.series, rows, plan) if plot.series else [None]
    width = 0.8 / len(series_values)
    for i, sv in enumerate(series_values):
        pos, sums, colors = [], [], []
        for j, c in enumerate(cats):
            group = [r for r in rows if r.get(plot.x) == c and (plot.series is None or r.get(plot.series) == sv)
                     and r.get(plot.y) is not None]
            if not group:
                continue
            pos.append(j - 0.4 + width * (i + 0.5))
            sums.append(stats.summarize(r[plot.y] for r in group))
            used.update(r["run_id"] for r in group)
            colors.append(styler.style(plot.series, sv, i)[0] if plot.series else styler.style(plot.x, c, j)[0])
        if pos:
            ax.bar(pos, [s.mean for s in sums], width=width * 0.95, color=colors, yerr=_errorbars(sums), capsize=3,
                   label=format_value(sv) if sv is not None else None, ecolor="#333333")
    if not used:
        return used, ""
    ax.figure.set_size_inches(max(6.4, 1.5 + 0.45 * len(cats) * len(series_values)), 4.2)
    ax.set_xticks(range(len(cats)))
    ax.set_xticklabels([format_value(c) for c in cats], rotation=25 if len(cats) > 3 else 0,
                       ha="right" if len(cats) > 3 else "center", rotation_mode="anchor")
    if plot.logy:
        ax.set_yscale("log")
    ax.set_xlabel(plot.x)
    ax.set_ylabel(plot.y)
    ax.grid(axis="x", visible=False)
    if plot.series:
        _legend(ax, plot.series, len(series_values))
    return used, "bars: mean of the ok trials; error bars: 95% confidence interval of the mean"


def _histogram(ax, plot: Histogram, rows, plan, histograms, styler):
    used = set()
    series_values = ordered_values(plot.series, rows, plan) if plot.series else [None]
    ids = {r["run_id"] for r in rows}
    present = {name for (rid, hist, name) in histograms if rid in ids and hist == plot.histogram}
    ops = [op for op in plot.ops() if op in present]  # one line style when one op is drawn
    k = 0
    for sv in series_values:
        for op in ops:
            srows = [r for r in rows if plot.series is None or r.get(plot.series) == sv]
            buckets: dict[tuple, int] = {}
            for r in srows:
                for lo, hi, n in histograms.get((r["run_id"], plot.histogram, op), []):
                    buckets[(lo, hi)] = buckets.get((lo, hi), 0) + n
                    used.add(r["run_id"])
            total = sum(buckets.values())
            if not total:
                continue
            edges, values = [], []
            for (lo, hi) in sorted(buckets):
                if edges and edges[-1] + 1 < lo:  # [lo, hi] buckets of integers may meet at hi + 1
                    values.append(0.0)  # a gap between non-empty buckets
                    edges.append(lo)
                if not edges:
                    edges.append(lo)
                values.append(buckets[(lo, hi)] / total)
                edges.append(hi)
            color, _ = styler.style(plot.series, sv, k)
            label = " ".join(x for x in (format_value(sv) if sv is not None else "", op if len(ops) > 1 else "") if x)
            ax.stairs(values, edges, color=color, linewidth=1.4, label=label or op or plot.histogram,
                      linestyle=["-", "--", ":", "-."][ops.index(op) % 4])
            k += 1
    if not used:
        return used, ""
    if plot.logx:
        ax.set_xscale("log")
    if plot.logy:
        ax.set_yscale("log")
    ops_text = ", ".join(o for o in ops if o)
    ax.set_xlabel(f"{plot.histogram} ({ops_text})" if ops_text else plot.histogram)
    ax.set_ylabel("fraction of samples")
    _legend(ax, plot.series, k)
    return used, "buckets of every ok run summed, as the fraction of the samples in each bucket"


def _heatmap(fig, ax, plot: Heatmap, rows, plan, all_rows):
    import matplotlib.colors as mcolors

    xs = ordered_values(plot.x, rows, plan)
    ys = ordered_values(plot.y, rows, plan)
    used = set()
    grid = [[math.nan] * len(xs) for _ in ys]
    for i, y in enumerate(ys):
        for j, x in enumerate(xs):
            group = [r for r in rows if r.get(plot.x) == x and r.get(plot.y) == y and r.get(plot.value) is not None]
            if group:
                grid[i][j] = stats.summarize(r[plot.value] for r in group).mean
                used.update(r["run_id"] for r in group)
    if not used:
        return used, ""
    fig.set_size_inches(6.4 + 0.25 * max(0, len(xs) - 6), max(4.2, 1.7 + 0.3 * len(ys)))  # rows stay readable
    # One colour scale for every facet of this plot, so the heatmaps compare.
    every = [r[plot.value] for r in all_rows if isinstance(r.get(plot.value), (int, float))]
    vmin, vmax = min(every), max(every)
    if plot.log and vmin > 0:
        norm = mcolors.LogNorm(vmin=vmin, vmax=vmax)
    else:
        norm = mcolors.Normalize(vmin=vmin, vmax=vmax if vmax > vmin else vmin + 1)
    # Numbers grow upwards; categories (structures) read top-down in their order.
    im = ax.imshow(grid, cmap="viridis", norm=norm, aspect="auto", origin="lower" if _numeric(ys) else "upper")
    for i in range(len(ys)):
        for j in range(len(xs)):
            v = grid[i][j]
            if not math.isnan(v):
                r, g, b, _ = im.cmap(norm(v))
                ax.text(j, i, _short(v), ha="center", va="center", fontsize=8,
                        color="black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white")
    ax.set_xticks(range(len(xs)))
    ax.set_xticklabels([format_value(v) for v in xs])
    ax.set_yticks(range(len(ys)))
    ax.set_yticklabels([format_value(v) for v in ys])
    ax.set_xlabel(plot.x)
    ax.set_ylabel(plot.y)
    ax.grid(False)
    from matplotlib.ticker import EngFormatter

    bar = fig.colorbar(im, ax=ax, label=plot.value, aspect=max(20, 6 * fig.get_size_inches()[1]))
    if not plot.log:
        bar.ax.yaxis.set_major_formatter(EngFormatter(sep=""))
    return used, "cells: mean of the ok trials; one colour scale for every facet"


def _short(v: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(v) >= scale:
            return f"{v / scale:.3g}{unit}"
    return f"{v:.3g}"
