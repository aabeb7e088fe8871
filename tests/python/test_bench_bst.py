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


def test_search_depths_and_time_per_node_read(tmp_path):
    page = tmp_path / "bst.md"
    code, _, err = bench(page, "--run", "sizes", "--structures", "bronson_avl,howley_jones_bst,libcds.bronson_avl",
                         "--key-range", "4000", "--updates", "0", *TINY)
    assert code == 0, err
    points = json.loads((tmp_path / "bst.json").read_text())["runs"]["sizes"]["points"]
    text = page.read_text()

    depths = table_rows(text, "Search depth, uniform keys")
    assert depths["libcds.bronson_avl"] == ["unavailable"]  # libcds's tree cannot be walked
    for label in ("bronson_avl", "howley_jones_bst"):
        p = points[label]["uniform,0,1,4000"]
        mean, deepest = depths[label][0].replace("(", "").replace(")", "").split()
        assert float(mean) == round(p["search_depth"], 1) and int(deepest) == p["search_depth_max"]
        # ~2,000 keys: no binary tree is shallower on average than log2(n + 1) - 1 (plus a sentinel).
        assert 10.0 <= p["search_depth"] <= p["search_depth_max"]
    # The AVL tree: at most 1.44 log2(n + 2) deep below its root holder (routing nodes included).
    assert points["bronson_avl"]["uniform,0,1,4000"]["search_depth_max"] <= 1 + 1.4405 * 11.97

    per_node = table_rows(text, "Time per node read (ns), uniform keys")
    for label in ("bronson_avl", "howley_jones_bst"):
        p = points[label]["uniform,0,1,4000"]
        assert abs(float(per_node[label][0]) - 1e3 / (p["mops"] * p["search_depth"])) <= 0.5  # "%.1f" below 10 ns
    assert per_node["libcds.bronson_avl"] == ["unavailable"]
    assert "the fastest unbalanced tree (`howley_jones_bst`)" in text
