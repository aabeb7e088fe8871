"""scripts/bench-bst: runs measured into one page, each kept when another is measured again."""
import json
import subprocess
import sys

from conftest import BUILD, ROOT

SCRIPT = ROOT / "scripts" / "bench-bst"
TINY = ["--trials", "1", "--duration-ms", "50", "--threads", "1", "--distributions", "uniform"]


def bench(out, *args):
    p = subprocess.run([sys.executable, str(SCRIPT), "--binary", str(BUILD / "cdsbench"), "--out", str(out), *args],
                       capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


def table_rows(page, title):
    """The rows of the first table under a heading starting with title: {label: [cells]}."""
    lines = page.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("### " + title))
    rows = {}
    for line in lines[start + 4:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = cells[1:]
    return rows


def test_runs_accumulate_in_one_page(tmp_path):
    page = tmp_path / "bst.md"
    code, _, err = bench(page, "--run", "internal", "--structures", "bronson_avl,libcds.bronson_avl,no_such_tree",
                         "--key-range", "2000", "--updates", "0,50", *TINY)
    assert code == 0, err
    code, _, err = bench(page, "--run", "sizes", "--structures", "ellen_bst", "--key-range", "2000,20000",
                         "--updates", "0", *TINY)
    assert code == 0, err

    runs = json.loads((tmp_path / "bst.json").read_text())["runs"]
    assert sorted(runs) == ["internal", "sizes"]
    assert runs["internal"]["missing"] == ["no_such_tree"]
    text = page.read_text()
    assert "## Internal and balanced trees (issue 6)" in text and "## Read-only work on 1M" in text
    assert "Not measured yet: `external`" in text
    assert "`no_such_tree`" in text

    rows = table_rows(text, "Throughput (Mops/s, all threads), uniform")
    assert list(rows) == ["bronson_avl", "libcds.bronson_avl", "*bronson_avl / libcds.bronson_avl*"]
    ours, peer, ratio = (rows[k] for k in rows)
    assert len(ours) == 2  # 0% and 50% updates, one thread
    for a, b, r in zip(ours, peer, ratio):
        assert abs(float(r.strip("*")) - float(a) / float(b)) < 0.01

    # The sizes run's columns name the tree size (half the key range, the steady prefill).
    sizes_text = text[text.index("## Read-only"):]
    header = next(line for line in sizes_text.splitlines() if line.startswith("| structure |"))
    assert "1,000 keys, 0% upd, 1T" in header and "10,000 keys, 0% upd, 1T" in header

    # Re-rendering from the raw figures gives the same page.
    code, _, err = bench(page, "--render-only")
    assert code == 0, err
    assert page.read_text() == text


def test_usage_errors(tmp_path):
    code, _, err = bench(tmp_path / "bst.md")
    assert code == 2 and "give one of --run NAME" in err
    code, _, err = bench(tmp_path / "bst.md", "--run", "nonsense")
    assert code == 2 and "invalid choice" in err
    code, _, err = bench(tmp_path / "bst.md", "--render-only")
    assert code == 2 and "holds no run" in err
