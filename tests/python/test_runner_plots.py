"""Plots: SVG and PNG files, one per facet combination, one colour per structure in every plot."""
import json
import re
import struct

import pytest

from cdsbench.plots import PALETTE
from runner_support import fake_experiment, runner

PLOTS = """plots=[
    Line(x="value", y="throughput_ops_per_s", series="ds", facets=["threads"], name="tput"),
    Line(x="value", y="throughput_ops_per_s", series="ds", where={"ds": "b"}, logy=True, logx=True, name="only-b"),
    Bar(x="ds", y="ns_per_op_per_thread", facets=["threads", "value"], name="cost"),
    Histogram(op="search", series="ds", facets=["threads"], name="lat"),
    Histogram(histogram="retire_log2_histogram", op=None, series="ds", name="retire"),
    Heatmap(x="threads", y="value", value="throughput_ops_per_s", facets=["ds"], log=True, name="heat"),
    Line(x="value", y="throughput_ops_per_s", where={"ds": "nobody"}, name="empty"),
],"""


@pytest.fixture(scope="module")
def plotted(tmp_path_factory):
    d = tmp_path_factory.mktemp("plots")
    exp = fake_experiment(d, {"mode": ["newkey"], "ds": ["a", "b", "c"], "threads": [1, 2],
                              "value": [100.0, 200.0, 400.0]}, trials=2, extra=PLOTS)
    p = runner(exp, "run", "database", "plots", "--results", d / "results")
    assert p.returncode == 0, p.stdout + p.stderr
    out = d / "results" / "exp"
    return out, json.loads((out / "plots" / "manifest.json").read_text())


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_svg_and_png_per_facet_combination(plotted):
    out, manifest = plotted
    ids = sorted(f["id"] for f in manifest["figures"])
    assert ids == sorted(["tput--threads-1", "tput--threads-2", "only-b",
                          *[f"cost--threads-{t}_value-{v}" for t in (1, 2) for v in (100, 200, 400)],
                          "lat--threads-1", "lat--threads-2", "retire",
                          "heat--ds-a", "heat--ds-b", "heat--ds-c"])
    for f in manifest["figures"]:
        svg, png = out / f["svg"], out / f["png"]
        assert svg.read_text().lstrip().startswith("<?xml") and "<svg" in svg.read_text()[:500]
        w, h = png_size(png)
        assert w >= 400 and h >= 250
    assert {p.suffix for p in (out / "plots").iterdir()} == {".svg", ".png", ".json"}


def test_figures_know_the_runs_they_were_drawn_from(plotted):
    _, manifest = plotted
    by_id = {f["id"]: f for f in manifest["figures"]}
    assert len(by_id["tput--threads-1"]["run_ids"]) == 3 * 3 * 2  # 3 ds x 3 values x 2 trials
    assert len(by_id["only-b"]["run_ids"]) == 2 * 3 * 2
    assert len(by_id["cost--threads-2_value-400"]["run_ids"]) == 3 * 2
    assert by_id["heat--ds-c"]["facet"] == {"ds": "c"}


def test_a_plot_without_data_is_a_warning(plotted):
    out, manifest = plotted
    assert "empty" not in {f["plot"] for f in manifest["figures"]}
    import sqlite3
    w = sqlite3.connect(out / "results.db").execute("SELECT message FROM warnings WHERE category = 'plot'").fetchall()
    assert w == [("plot empty: no data to draw (no ok run matches it)",)]


def colours(svg_text):
    return set(re.findall(r"stroke: ?(#[0-9a-f]{6})", svg_text)) | set(re.findall(r"fill: ?(#[0-9a-f]{6})", svg_text))


def test_each_structure_keeps_its_colour_in_every_plot(plotted):
    out, _ = plotted
    a, b, c = (PALETTE[i].lower() for i in range(3))
    both = colours((out / "plots" / "tput--threads-1.svg").read_text())
    assert {a, b, c} <= both
    only_b = colours((out / "plots" / "only-b.svg").read_text())
    assert b in only_b and a not in only_b and c not in only_b  # b is not recoloured as the first series
    bars = colours((out / "plots" / "cost--threads-1_value-100.svg").read_text())
    assert {a, b, c} <= bars
    hist = colours((out / "plots" / "lat--threads-2.svg").read_text())
    assert {a, b, c} <= hist


def test_error_bars_are_the_95_percent_ci_and_log_scale_is_optional():
    import matplotlib.pyplot as plt

    from cdsbench.experiment import Line, Plan
    from cdsbench.plots import Styler, figure, structure_styles
    from cdsbench.stats import summarize

    plan = Plan(grid={"ds": ["x", "y"], "threads": [1, 2]}, points=[], labels=[])
    trials = {("x", 1): [10, 12, 14], ("x", 2): [20, 26, 20], ("y", 1): [5, 5, 5], ("y", 2): [7, 9, 8]}
    rows, rid = [], 0
    for (ds, t), values in trials.items():
        for v in values:
            rid += 1
            rows.append({"run_id": rid, "ds": ds, "threads": t, "tput": v})
    for logy in (False, True):
        plot = Line(x="threads", y="tput", series="ds", logy=logy)
        plot.id = "t"
        fig, ax, used, _ = figure(plot, rows, plan, {}, Styler(structure_styles(plan, rows)), rows)
        assert used == set(range(1, 13))
        assert ax.get_yscale() == ("log" if logy else "linear")
        containers = ax.containers
        assert [c.get_label() for c in containers] == ["x", "y"]
        for c, ds in zip(containers, ("x", "y")):
            line, _, (bars,) = c.lines
            assert list(line.get_ydata()) == pytest.approx([summarize(trials[(ds, t)]).mean for t in (1, 2)])
            for seg, t in zip(bars.get_segments(), (1, 2)):
                s = summarize(trials[(ds, t)])
                assert seg[0][1] == pytest.approx(s.ci95_low) and seg[1][1] == pytest.approx(s.ci95_high)
            assert line.get_color() == PALETTE[plan.grid["ds"].index(ds)]
        plt.close(fig)
