"""--query and --export: reading the database back."""
from __future__ import annotations

import csv
import io
import sqlite3
from pathlib import Path

from .database import connect_readonly
from .errors import UsageError

TABLES = ("runs", "points", "stats", "warnings", "histograms", "structures", "columns", "meta")
FORMATS = ("csv",)
QUERY_HELP = ("allowed: one SQL query over the tables " + ", ".join(TABLES)
              + " and the view summary, e.g. \"SELECT ds, threads, throughput_ops_per_s FROM runs\"")


def open_db(db_path: Path, experiment_file: str) -> sqlite3.Connection:
    if not db_path.exists():
        raise UsageError(f"{db_path}: no database (allowed: run the database step first: "
                         f"cdsbench-run {experiment_file} database)")
    return connect_readonly(db_path)


def query(db_path: Path, sql: str, experiment_file: str) -> tuple[list[str], list[tuple]]:
    con = open_db(db_path, experiment_file)
    try:
        cur = con.execute(sql)
        names = [d[0] for d in cur.description or []]
        return names, [tuple(r) for r in cur.fetchall()]
    except (sqlite3.Error, sqlite3.Warning, ValueError) as e:
        message = str(e).replace("\n", " ")
        raise UsageError(f"--query: {message} ({QUERY_HELP})") from None
    finally:
        con.close()


def cell(v, limit: int | None = 60) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        s = f"{v:.6g}"
    else:
        s = str(v).replace("\r", "").replace("\n", " | ")
    if limit and len(s) > limit:
        s = s[: limit - 1] + "…"
    return s


def format_table(names: list[str], rows: list[tuple]) -> str:
    """An aligned text table; numbers right-aligned."""
    cells = [[cell(v) for v in r] for r in rows]
    widths = [max([len(n)] + [len(c[i]) for c in cells]) for i, n in enumerate(names)]
    numeric = [all(isinstance(r[i], (int, float)) or r[i] is None for r in rows) for i in range(len(names))]

    def fmt(values):
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)).rstrip()

    lines = [fmt(names), "  ".join("-" * w for w in widths)]
    lines += [fmt(c) for c in cells]
    lines.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(lines)


def to_csv(names: list[str], rows: list[tuple]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(names)
    w.writerows(rows)
    return buf.getvalue()


def export_tables(db_path: Path, out_dir: Path, experiment_file: str) -> list[Path]:
    """Every table as CSV under out_dir (runs.csv, points.csv, stats.csv, warnings.csv, ...)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    con = open_db(db_path, experiment_file)
    paths = []
    try:
        present = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        for table in [t for t in (*TABLES, "summary") if t in present]:  # a database of an older runner too
            cur = con.execute(f"SELECT * FROM {table}")
            names = [d[0] for d in cur.description]
            path = out_dir / f"{table}.csv"
            path.write_text(to_csv(names, [tuple(r) for r in cur.fetchall()]))
            paths.append(path)
    finally:
        con.close()
    return paths
