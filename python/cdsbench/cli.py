"""cdsbench-run EXPERIMENT.py [STEP ...]: the experiment runner's command line.

Steps, run in this order whichever order they are given: build (the harness), run (the sweep,
resumable), database (results.db from the runs), plots (SVG + PNG), markdown (the experiment's
page, from results.db), site (the HTML report). No step named: all six, unless --query or
--export alone was asked for.

Exit status: 0 done (failed runs are results: they are in the report), 1 the build failed,
2 bad input (one line on stderr naming what is wrong and what is allowed), 130 interrupted
(what ran is kept: the same command resumes).
"""
from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

from . import experiment as experiment_mod
from .errors import UsageError

STEPS = ("build", "run", "database", "plots", "markdown", "site")


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse would print the usage too)
        raise UsageError(message)


def parser() -> Parser:
    p = Parser(prog="cdsbench-run", description=__doc__.split("\n\n")[0],
               formatter_class=argparse.RawDescriptionHelpFormatter,
               epilog="Steps: " + ", ".join(STEPS) + " (default: all). Report: RESULTS/EXPERIMENT/index.html.")
    p.add_argument("experiment", metavar="EXPERIMENT.py", help="experiment file, e.g. experiments/demo.py")
    p.add_argument("steps", metavar="STEP", nargs="*", help="build, run, database, plots, markdown, site, or all")
    p.add_argument("--query", metavar="SQL", help="print the result of one SQL query over results.db as a table")
    p.add_argument("--export", metavar="FORMAT", help="csv: every table to RESULTS/EXPERIMENT/export/*.csv "
                                                      "(with --query: the query's result as CSV on stdout)")
    p.add_argument("--harness", metavar="PATH", help="harness binary (default: $CDSBENCH_HARNESS, else the "
                                                     "experiment's, build/cdsbench, taken from $CDSBENCH_BUILD/ "
                                                     "when that is set and the path is relative)")
    p.add_argument("--results", metavar="DIR", help="results directory (default: results/ in the repository)")
    p.add_argument("--timeout", metavar="SECONDS", help="per-run timeout, instead of the experiment's")
    p.add_argument("--trials", metavar="N", help="trials per point, instead of the experiment's")
    p.add_argument("--fresh", action="store_true", help="discard the experiment's earlier runs before running")
    p.add_argument("--executor", metavar="NAME", default="local",
                   help="where the run step executes the runs: local (default, one at a time here) or slurm "
                        "(job arrays on a cluster; README \"On a Slurm cluster\")")
    p.add_argument("--partition", metavar="P", help="slurm: the partition to submit to (default: the cluster's)")
    p.add_argument("--exclusive", action="store_true", help="slurm: each run on a whole node (the default)")
    p.add_argument("--shared", action="store_true", help="slurm: let runs share nodes (not for measurement)")
    p.add_argument("--max-parallel", metavar="K", help="slurm: at most K runs of an array at once")
    p.add_argument("--sbatch-arg", metavar="ARG", action="append", default=[],
                   help="slurm: one more sbatch option, e.g. --sbatch-arg=--account=A (repeatable)")
    p.add_argument("--no-wait", action="store_true", help="slurm: submit and return; the run step waits later")
    p.add_argument("--out", metavar="PATH", help="the markdown step's page (default: RESULTS/EXPERIMENT/results.md), "
                                                 "e.g. docs/results-bst.md")
    return p


def _positive(option: str, text: str, kind):
    try:
        v = kind(text)
    except ValueError:
        v = None
    if v is None or v <= 0:
        what = "an integer >= 1" if kind is int else "a number of seconds > 0"
        raise UsageError(f"{option}: {text!r} is not allowed (allowed: {what})")
    return v


SLURM_ONLY = ("partition", "exclusive", "shared", "max_parallel", "sbatch_arg", "no_wait")


def _slurm_options(args):
    """The Slurm executor's options, or None for the local executor (which allows none of them)."""
    if args.executor not in ("local", "slurm"):
        raise UsageError(f"--executor: {args.executor!r} is not allowed (allowed: local, slurm)")
    if args.executor == "local":
        given = [f"--{name.replace('_', '-')}" for name in SLURM_ONLY if getattr(args, name)]
        if given:
            raise UsageError(f"{given[0]}: only with --executor slurm (allowed: --executor slurm {given[0]} ...)")
        return None
    if args.exclusive and args.shared:
        raise UsageError("--exclusive and --shared: one of them (allowed: --exclusive, the default, or --shared)")
    from .slurm import SlurmOptions, check_sbatch_args

    check_sbatch_args(args.sbatch_arg)
    return SlurmOptions(partition=args.partition, exclusive=not args.shared,
                        max_parallel=_positive("--max-parallel", args.max_parallel, int) if args.max_parallel else None,
                        sbatch_args=list(args.sbatch_arg), wait=not args.no_wait)


def resolve_harness(option: str | None, default: str, root: Path) -> Path:
    if option:
        return Path(option).resolve()
    if os.environ.get("CDSBENCH_HARNESS"):
        return Path(os.environ["CDSBENCH_HARNESS"]).resolve()
    p = Path(default)
    if p.is_absolute():
        return p
    if os.environ.get("CDSBENCH_BUILD"):  # another build tree for the repository's build/cdsbench
        return (Path(os.environ["CDSBENCH_BUILD"]) / p.name).resolve()
    return root / p


def show(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def build_step(loaded, harness: Path, log) -> None:
    exp = loaded.experiment
    if exp.build is not None:
        commands = [[str(a) for a in c] for c in exp.build]
    elif exp.command is not None:
        log("build: nothing to build (the experiment gives its own command and no build setting)")
        return
    else:
        bdir = harness.parent
        target = "cdsbench-bin" if harness.name == "cdsbench" else harness.name
        commands = []
        if not (bdir / "CMakeCache.txt").exists():
            generator = ["-G", "Ninja"] if shutil.which("ninja") else []
            commands.append(["cmake", "-S", str(loaded.root), "-B", str(bdir), *generator,
                             "-DCMAKE_BUILD_TYPE=Release"])
        commands.append(["cmake", "--build", str(bdir), "--target", target])
    for cmd in commands:
        log("build: " + experiment_mod.command_line(cmd))
        try:
            rc = subprocess.run(cmd, cwd=loaded.root).returncode
        except OSError as e:
            raise BuildFailed(f"build: cannot run {cmd[0]}: {e.strerror or e}") from None
        if rc != 0:
            raise BuildFailed(f"build: `{experiment_mod.command_line(cmd)}` exited with {rc}")


class BuildFailed(Exception):
    pass


def reproduce_command(loaded, args, harness: Path) -> str:
    """The command line that makes these runs again: the settings the experiment read from the
    environment, then the runner with the options that change the runs (the page shows it)."""
    words = [f"{name}={shlex.quote(value)}" for name, value in loaded.env.items()]
    try:
        exp_file = str(loaded.path.relative_to(loaded.root))
    except ValueError:
        exp_file = str(loaded.path)
    words += [".venv/bin/cdsbench-run", shlex.quote(exp_file)]
    if args.trials is not None:
        words += ["--trials", args.trials]
    if args.timeout is not None:
        words += ["--timeout", args.timeout]
    if loaded.experiment.command is None and harness != (loaded.root / loaded.experiment.harness).resolve():
        words += ["--harness", shlex.quote(str(harness))]
    return " ".join(words)


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(sys.argv[1:] if argv is None else argv)
    except UsageError as e:
        print(f"cdsbench-run: error: {e}", file=sys.stderr)
        return 2
    except BuildFailed as e:
        print(f"cdsbench-run: error: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `--query ... | head`
        return 0
    except KeyboardInterrupt:  # outside a sweep (which handles it itself): run the step again
        print("cdsbench-run: interrupted", file=sys.stderr)
        return 130


def _main(argv: list[str]) -> int:
    started = time.monotonic()
    args = parser().parse_intermixed_args(argv)
    steps = []
    for s in args.steps:
        if s == "all":
            steps += STEPS
        elif s in STEPS:
            steps.append(s)
        else:
            raise UsageError(f"unknown step {s!r} (allowed: {', '.join(STEPS)}, all)")
    if args.export is not None and args.export not in ("csv",):
        raise UsageError(f"--export: {args.export!r} is not allowed (allowed: csv)")
    if not steps and args.query is None and args.export is None:
        steps = list(STEPS)
    steps = [s for s in STEPS if s in steps]
    if args.out is not None and "markdown" not in steps:
        raise UsageError("--out: only with the markdown step (allowed: e.g. "
                         f"`cdsbench-run {args.experiment} markdown --out docs/results-X.md`, or no step: all)")
    out = Path(args.out).resolve() if args.out is not None else None
    if out is not None and (out.is_dir() or out.suffix != ".md"):
        raise UsageError(f"--out: {args.out!r} is not allowed (allowed: a Markdown file path ending in .md)")
    slurm_options = _slurm_options(args)
    trials = _positive("--trials", args.trials, int) if args.trials is not None else None
    timeout = _positive("--timeout", args.timeout, float) if args.timeout is not None else None

    loaded = experiment_mod.load(args.experiment)
    exp = loaded.experiment
    if trials:
        exp.trials, exp.trials_for = trials, None
    if timeout:
        exp.timeout_s = timeout
    results_base = Path(args.results).resolve() if args.results else loaded.root / "results"
    results_dir = results_base / loaded.name
    harness = resolve_harness(args.harness, exp.harness, loaded.root)

    def log(msg):
        print(msg, flush=True)

    if slurm_options is not None and "run" not in steps:
        raise UsageError("--executor slurm: only with the run step (allowed: `cdsbench-run EXP run --executor slurm`, "
                         "then `database plots site`)")
    if steps:
        from . import slurm
        from .runner import Interrupted, Lock

        with Lock(results_dir):
            if "build" in steps and slurm.still_queued(results_dir):
                raise UsageError("build: runs of this experiment are queued on Slurm and will run the current build "
                                 "(allowed: build once they ended, or after scancel; or steps without build)")
            if "build" in steps:
                build_step(loaded, harness, log)
            if exp.command is None and not harness.exists():
                raise UsageError(f"harness {harness} not found (allowed: a built harness: "
                                 f"`cdsbench-run {args.experiment} build`, `make build`, or --harness PATH)")
            plan = experiment_mod.make_plan(loaded, harness)
            if "run" in steps:
                from .runner import sweep

                if slurm_options is None:  # runs of a Slurm submission must not run twice, nor be removed
                    slurm.refuse_local_while_queued(results_dir, args.experiment)
                if args.fresh:
                    if slurm.still_queued(results_dir):
                        raise UsageError("--fresh: runs of this experiment are still queued on Slurm "
                                         "(allowed: --fresh once they ended, or after scancel)")
                    for old in (results_dir / "runs", results_dir / "slurm"):  # the arrays' records too
                        if old.exists():
                            shutil.rmtree(old)
                try:
                    if slurm_options is None:
                        res = sweep(plan, results_dir / "runs", loaded.root, exp.timeout_s, exp.json_output, log=log)
                    else:
                        res = slurm.sweep(plan, results_dir, loaded.name, loaded.root, exp.timeout_s,
                                          exp.json_output, slurm_options, log=log)
                except Interrupted as e:
                    print(f"cdsbench-run: interrupted ({e}): the runs done are kept; "
                          f"run the same command again to resume", file=sys.stderr)
                    return 130
                if res.ran:
                    counts = ", ".join(f"{n} {s}" for s, n in sorted(res.by_status.items()))
                    log(f"run: {res.ran} runs in {res.wall_s:.0f} s ({counts})")
            if "database" in steps:
                from . import database

                info = database.build(loaded, plan, results_dir, reproduce_command(loaded, args, harness))
                log(f"database: {show(info['path'])}: {info['runs']} of {info['planned']} runs "
                    f"({info['ok']} ok), {info['warnings']} warnings")
            if "plots" in steps:
                from . import plots

                plots.draw(loaded, plan, results_dir, log=lambda m: log(m.replace(str(results_dir / 'plots'), show(results_dir / 'plots'))))
            if "markdown" in steps:
                from . import markdown

                log(f"markdown: {show(markdown.write(loaded, results_dir, out))}")
            if "site" in steps:
                from . import site
                from .database import connect_readonly

                index = site.build(loaded, plan, results_dir, log=lambda m: None)
                con = connect_readonly(results_dir / "results.db")
                try:
                    n_warn = con.execute("SELECT count(*) FROM warnings").fetchone()[0]
                finally:
                    con.close()
                if n_warn:
                    log(f"warnings: {n_warn}, listed in {show(results_dir / 'warnings.html')}")
                log(f"time: {time.monotonic() - started:.0f} s")
                log(f"report: {show(index)}")

    if args.query is not None or args.export is not None:
        from . import export

        db = results_dir / "results.db"
        if args.query is not None:
            names, rows = export.query(db, args.query, args.experiment)
            if args.export == "csv":
                sys.stdout.write(export.to_csv(names, rows))
            else:
                print(export.format_table(names, rows))
        else:
            for path in export.export_tables(db, results_dir / "export", args.experiment):
                print(show(path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
