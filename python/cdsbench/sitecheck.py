"""Checks a generated report in a real browser: headless Chromium (Debian's `chromium`, driven
by Playwright) opens the report from a local HTTP server on 127.0.0.1, visits every page it can
reach from index.html, checks that every image loads (naturalWidth > 0) and that every link
resolves (HTTP 200, and the #anchor exists), follows the drill-down by clicks (a figure -> its
rows -> a run's raw output), and saves a screenshot of the index.

    python -m cdsbench.sitecheck results/demo [--screenshot FILE]
"""
from __future__ import annotations

import argparse
import functools
import http.server
import shutil
import sys
import tempfile
import threading
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]

WAIT_FOR_IMAGES = """async () => {
  const imgs = [...document.images];
  imgs.forEach(i => { i.loading = "eager"; });
  await Promise.all(imgs.map(i => i.complete ? null : new Promise(done => {
    i.addEventListener("load", done); i.addEventListener("error", done); setTimeout(done, 15000);
  })));
  return imgs.map(i => ({src: i.currentSrc || i.src, width: i.naturalWidth}));
}"""


@dataclass
class SiteReport:
    pages: list = field(default_factory=list)          # URLs of the HTML pages visited
    images: list = field(default_factory=list)         # (page, src, naturalWidth)
    links: dict = field(default_factory=dict)          # url -> HTTP status (or error text)
    broken_images: list = field(default_factory=list)
    broken_links: list = field(default_factory=list)   # (page, href, why)
    clicks: list = field(default_factory=list)         # the drill-down path followed by clicks
    screenshot: Path | None = None

    @property
    def ok(self) -> bool:
        return not self.broken_images and not self.broken_links and len(self.clicks) == 3


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(directory: Path):
    """A threaded HTTP server of ``directory`` on 127.0.0.1 (a free port); returns (server, base URL)."""
    handler = functools.partial(_Quiet, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def find_chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    raise FileNotFoundError("chromium is not installed (scripts/install-deps installs Debian's chromium)")


def _status(url: str) -> tuple[int | str, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:  # noqa: S310 (our own server on 127.0.0.1)
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, b""
    except (urllib.error.URLError, OSError) as e:
        return str(e), b""


def check(site_dir: Path, screenshot: Path | None = None, max_pages: int = 2000) -> SiteReport:
    from playwright.sync_api import sync_playwright

    report = SiteReport()
    server, base = serve(site_dir)
    profile = tempfile.mkdtemp(prefix="cdsbench-chromium-")
    try:
        with sync_playwright() as pw:
            ctx = pw.chromium.launch_persistent_context(
                profile, executable_path=find_chromium(), headless=True, args=CHROMIUM_FLAGS,
                viewport={"width": 1400, "height": 1000})
            try:
                page = ctx.new_page()
                _crawl(page, base, report, max_pages)
                _click_through(page, base, report)
                if screenshot is not None:
                    page.goto(base + "index.html", wait_until="load")
                    page.evaluate(WAIT_FOR_IMAGES)
                    screenshot.parent.mkdir(parents=True, exist_ok=True)
                    page.screenshot(path=str(screenshot), full_page=True)
                    report.screenshot = screenshot
            finally:
                ctx.close()
    finally:
        server.shutdown()
        server.server_close()
        shutil.rmtree(profile, ignore_errors=True)
    return report


def _crawl(page, base: str, report: SiteReport, max_pages: int) -> None:
    queue, seen = [base + "index.html"], {base + "index.html"}
    ids_of: dict[str, set] = {}
    anchors: list = []
    while queue and len(report.pages) < max_pages:
        url = queue.pop(0)
        response = page.goto(url, wait_until="load")
        if response is None or response.status != 200:
            report.broken_links.append((url, url, f"HTTP {response.status if response else 'no response'}"))
            continue
        report.pages.append(url)
        for img in page.evaluate(WAIT_FOR_IMAGES):
            report.images.append((url, img["src"], img["width"]))
            if img["width"] <= 0:
                report.broken_images.append((url, img["src"]))
        ids_of[url] = set(page.evaluate("[...document.querySelectorAll('[id]')].map(e => e.id)"))
        for href in page.evaluate("[...document.querySelectorAll('a[href]')].map(a => a.href)"):
            target, _, fragment = href.partition("#")
            if not target.startswith(base):
                report.broken_links.append((url, href, "leaves the report"))
                continue
            if target not in report.links:
                status, _ = _status(target)
                report.links[target] = status
                if status != 200:
                    report.broken_links.append((url, href, f"HTTP {status}"))
            if fragment:
                anchors.append((url, href, target, fragment))
            if target.endswith(".html") and target not in seen and report.links.get(target) == 200:
                seen.add(target)
                queue.append(target)
    for url, href, target, fragment in anchors:
        if target in ids_of and urllib.parse.unquote(fragment) not in ids_of[target]:
            report.broken_links.append((url, href, f"no element with id {fragment!r}"))


def _click_through(page, base: str, report: SiteReport) -> None:
    """index -> click the first figure -> its rows page -> click the first row -> the run's raw output."""
    page.goto(base + "index.html", wait_until="load")
    figure = page.locator("figure a.plot").first
    if figure.count() == 0:
        report.broken_links.append((base + "index.html", "figure a.plot", "no figure to click"))
        return
    with page.expect_navigation():
        figure.click()
    report.clicks.append(page.url)
    if "/rows/" not in page.url or page.locator("#rows-table tbody tr").count() == 0:
        report.broken_links.append((base + "index.html", page.url, "a figure did not open the rows it was drawn from"))
        return
    cell = page.locator("#rows-table tbody tr").first.locator("td").nth(1)  # not the link: the row's own click
    with page.expect_navigation():
        cell.click()
    report.clicks.append(page.url)
    stdout = page.locator("#stdout")
    if "/runs/" not in page.url or stdout.count() == 0 or "=" not in stdout.inner_text():
        report.broken_links.append((report.clicks[0], page.url, "a row did not open its raw output"))
        return
    report.clicks.append("raw output shown")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cdsbench.sitecheck", description=__doc__.split("\n\n")[0])
    ap.add_argument("site", help="the report's directory, e.g. results/demo")
    ap.add_argument("--screenshot", help="PNG of the index (default: SITE/screenshot.png)")
    args = ap.parse_args(argv)
    site = Path(args.site)
    if not (site / "index.html").exists():
        print(f"sitecheck: error: {site}/index.html not found (allowed: a report directory, e.g. results/demo)",
              file=sys.stderr)
        return 2
    shot = Path(args.screenshot) if args.screenshot else site / "screenshot.png"
    r = check(site, shot)
    print(f"pages {len(r.pages)}, images {len(r.images)} ({len(r.broken_images)} broken), "
          f"links {len(r.links)} ({len(r.broken_links)} broken), clicks {' -> '.join(r.clicks)}")
    for b in r.broken_images + r.broken_links:
        print("broken:", *b)
    print(f"screenshot: {r.screenshot}")
    return 0 if r.ok else 1


if __name__ == "__main__":
    sys.exit(main())
