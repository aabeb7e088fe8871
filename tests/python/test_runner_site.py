"""The HTML report: sections, the warnings banner and page, and a browser test: headless
Chromium opens the report of a small real experiment from a local HTTP server, every image
loads, every link resolves, a figure opens its rows and a row its raw output; a screenshot is
saved."""
import html
import re

import pytest

from cdsbench import sitecheck
from runner_support import fake_experiment, runner, write_experiment

SMALL = """
EXPERIMENT = Experiment(
    title="Small site test",
    grid={"ds": registered_structures(only=["null", "locked_std_set"]), "threads": [1, 2], "updates": [0, 50]},
    trials=2,
    fixed={"key_range": 2000, "duration_ms": 40, "latency_sample": 10, "pin": "none"},
    options=lambda p: {"ds": p["ds"], "threads": p["threads"], "insert": p["updates"] / 2, "delete": p["updates"] / 2},
    plots=[
        Line(x="threads", y="throughput_ops_per_s", facets=["updates"], logy=True),
        Bar(x="ds", y="ns_per_op_per_thread", facets=["updates"], where={"threads": 1}),
        Histogram(op="search", facets=["updates"], where={"threads": 2}),
        Heatmap(x="threads", y="updates", value="throughput_ops_per_s", facets=["ds"]),
    ],
    timeout_s=60,
)
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    d = tmp_path_factory.mktemp("site")
    exp = write_experiment(d, SMALL, name="small")
    p = runner(exp, "run", "database", "plots", "site", "--results", d / "results")
    assert p.returncode == 0, p.stdout + p.stderr
    report = d / "results" / "small" / "index.html"
    assert p.stdout.rstrip().endswith(f"report: {report}")
    return d / "results" / "small", d


def test_browser_opens_the_report_every_image_loads_every_link_resolves(site):
    out, d = site
    shot = d / "screenshot.png"
    r = sitecheck.check(out, shot)
    assert r.broken_images == [] and r.broken_links == [], (r.broken_images, r.broken_links)
    figures = len(list((out / "plots").glob("*.svg")))
    assert figures == 2 + 2 + 2 + 2  # four plots, each faceted in two
    index_images = [i for i in r.images if i[0].endswith("/index.html")]
    assert len(index_images) == figures and all(w > 0 for _, _, w in r.images)
    pages = {p.split("/", 3)[3] for p in r.pages}
    assert {f"rows/{p.stem}.html" for p in (out / "plots").glob("*.svg")} <= pages  # every figure's rows
    assert len([p for p in pages if p.startswith("runs/")]) == 16  # every run's raw output
    assert {"index.html", "warnings.html", "runs.html"} <= pages
    assert any(u.endswith("/results.db") for u in r.links) and any(u.endswith("/export/runs.csv") for u in r.links)
    assert "/rows/" in r.clicks[0] and "/runs/" in r.clicks[1] and r.clicks[2] == "raw output shown"
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    print(f"screenshot: {shot}")


def test_report_sections_and_run_pages(site):
    out, _ = site
    index = (out / "index.html").read_text()
    for section in ("overview", "plot-line-throughput_ops_per_s-by-threads", "summary", "experiment", "data"):
        assert f'id="{section}"' in index
    assert "16 of 16 done" in index
    run_dir = next((out / "runs").iterdir())
    page = (run_dir / "index.html").read_text()
    raw = (run_dir / "stdout.txt").read_text()
    assert html.escape(raw.splitlines()[0]) in page and "throughput_ops_per_s=" in page
    assert html.escape((run_dir / "command.txt").read_text().split(" && ", 1)[1].strip()) in page


def test_banner_and_warnings_page_when_there_are_warnings(tmp_path):
    exp = fake_experiment(tmp_path, {"mode": ["ok", "usage", "unfair"]}, extra="plots=[Bar(x='mode', y='throughput_ops_per_s')],")
    p = runner(exp, "--results", tmp_path / "r", "run", "database", "plots", "site")
    assert p.returncode == 0, p.stderr
    assert "warnings: 2, listed in" in p.stdout
    index = (tmp_path / "r" / "exp" / "index.html").read_text()
    assert 'id="warnings-banner"' in index and "No warnings" not in index
    assert re.search(r'href="warnings.html#failed_run">Failed runs</a>: 1', index)
    assert re.search(r'href="warnings.html#unfair_threads">Unfair threads</a>: 1', index)
    page = (tmp_path / "r" / "exp" / "warnings.html").read_text()
    assert 'id="failed_run"' in page and 'id="unfair_threads"' in page and "ran at 25% of the fastest" in page
    assert "cdsbench: error: --threads" in page


def test_no_banner_without_warnings(tmp_path):
    exp = fake_experiment(tmp_path, {"mode": ["ok"], "ds": ["a", "b"]})
    p = runner(exp, "--results", tmp_path / "r", "run", "database", "plots", "site")
    assert p.returncode == 0, p.stderr
    index = (tmp_path / "r" / "exp" / "index.html").read_text()
    assert 'id="warnings-banner"' not in index and 'id="no-warnings"' in index
