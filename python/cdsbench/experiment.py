"""Experiment definitions: what an `experiments/*.py` file declares, and the plan of runs it makes.

An experiment file is plain Python that assigns ``EXPERIMENT = Experiment(...)``::

    from cdsbench.experiment import Experiment, Line, registered_structures

    EXPERIMENT = Experiment(
        grid={"ds": registered_structures(), "threads": [1, 2, 4]},
        trials=3,
        fixed={"key_range": 100000, "duration_ms": 1000},
        plots=[Line(x="threads", y="throughput_ops_per_s", series="ds")],
    )

Every combination of grid values is a *point*; every point runs ``trials`` times, each a separate
harness process (one *run*, one row of the database). By default a run's command is the harness
with one option per grid parameter and per ``fixed`` entry (``key_range`` -> ``--key-range``),
``--trials 1``, ``--seed SEED+trial`` and ``--json FILE``.
"""
from __future__ import annotations

import builtins
import hashlib
import inspect
import itertools
import json
import math
import os
import re
import shlex
import subprocess
import tempfile
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .errors import UsageError

NAME_RE = re.compile(r"^[a-z_][a-z0-9_]*$")
# Columns the runner owns in the database; grid parameters and derived columns may not take them.
RESERVED = {"point_id", "point_label", "runs_planned", "runs_done", "runs_ok"}
RESERVED_PREFIX = "run_"

DEFAULT_RULES = ('validation == "PASS"', "throughput_ops_per_s > 0")

# The kinds of structure the harness's listing names (`cdsbench --list --json FILE`).
KINDS = ("ordered_set", "unordered_map", "queue", "stack", "black_box")


class ExperimentError(UsageError):
    """A bad experiment definition (reported with the file name in front)."""


# ---------------------------------------------------------------------------------------------
# Grid values that are known only when the harness is: the registered structures.


class registered_structures:  # noqa: N801 (used like a function in experiment files)
    """The structures the harness registers, in registry order, read from its machine-readable
    listing (`HARNESS --list --json FILE`), so new structures join an experiment without editing
    it, and an experiment picks them by what the registry says of them, never by their names.

    Filters (all optional, combined with AND; the result keeps registry order):

    - ``only``: these names; ``exclude``: not these names (a name or a list of names).
    - ``kind``: a kind or a list of kinds (``KINDS``: ordered_set, unordered_map, queue, stack,
      black_box).
    - ``library``: a library or a list: ``"cdsbench"`` for ours, else the peer library
      (``"libcds"``, ``"oneTBB"``).
    - ``where``: a function of a structure's entry (the listing's dict: name, description,
      kind, library, method, sequential, range_queries, concurrent_erase, layout, model,
      known_violation, search_depths, variants) that keeps it when true, e.g.
      ``where=lambda s: s["search_depths"]``.

    Once the plan is made (the grid resolved), ``entry(name)`` gives any registered structure's
    entry, e.g. for an ``exclude`` function: ``not STRUCTURES.entry(p["ds"])["concurrent_erase"]``.
    """

    def __init__(self, only: str | list[str] | None = None, exclude: str | list[str] | tuple = (), *,
                 kind: str | list[str] | None = None, library: str | list[str] | None = None,
                 where: Callable[[dict], Any] | None = None):
        self.only = _names("only", only) if only is not None else None
        self.exclude = _names("exclude", exclude)
        self.kind = _names("kind", kind) if kind is not None else None
        self.library = _names("library", library) if library is not None else None
        if self.kind is not None:
            for k in self.kind:
                if k not in KINDS:
                    raise ExperimentError(f"grid: registered_structures(kind=...): {k!r} is not a kind "
                                          f"(allowed: {', '.join(KINDS)})")
        if where is not None and not callable(where):
            raise ExperimentError(f"grid: registered_structures(where=...): {where!r} is not a function "
                                  "of a structure's entry (allowed: e.g. where=lambda s: s['range_queries'])")
        self.where = where
        self.registry: list[dict] | None = None   # every entry of the listing, once resolved

    def listing(self, harness: Path) -> list[dict]:
        """Every entry of `HARNESS --list --json FILE`, in registry order."""
        if not harness.exists():
            raise UsageError(
                f"grid: cannot list the registered structures: harness {harness} not found "
                "(allowed: a built harness: run the build step, or `make build`)")
        with tempfile.TemporaryDirectory(prefix="cdsbench-list-") as tmp:
            path = Path(tmp) / "structures.json"
            command = f"`{harness} --list --json FILE`"
            try:
                p = subprocess.run([str(harness), "--list", "--json", str(path)], capture_output=True, text=True,
                                   timeout=60)
            except (OSError, subprocess.TimeoutExpired) as e:
                raise UsageError(f"grid: {command} failed: {e}") from None
            if p.returncode != 0:
                raise UsageError(f"grid: {command} exited with {p.returncode}: "
                                 f"{p.stderr.strip().splitlines()[-1:] or ''}")
            if not path.is_file():
                raise UsageError(f"grid: {command} wrote no FILE (allowed: a harness that writes its structure "
                                 "listing as JSON: rebuild it, e.g. `make build`)")
            text = path.read_text(errors="replace")
        try:
            doc = json.loads(text)
        except ValueError as e:
            raise UsageError(f"grid: {command} wrote FILE that is not JSON: {e}") from None
        structures = doc.get("structures") if isinstance(doc, dict) else None
        if not isinstance(structures, list) or not all(
                isinstance(s, dict) and isinstance(s.get("name"), str) and s["name"] for s in structures):
            raise UsageError(f"grid: {command} wrote FILE without the expected layout "
                             '(allowed: {"structures": [{"name": ..., "kind": ..., ...}, ...]})')
        return structures

    def resolve(self, harness: Path) -> list[str]:
        registry = self.listing(harness)
        self.registry = registry
        names = [s["name"] for s in registry]
        if self.only is not None:
            unknown = [n for n in self.only if n not in names]
            if unknown:
                raise UsageError(f"grid: registered_structures(only=...): unknown structure "
                                 f"{unknown[0]!r} (allowed: {', '.join(names)})")
        if self.library is not None:
            libraries = list(dict.fromkeys(str(s.get("library")) for s in registry))
            unknown = [lib for lib in self.library if lib not in libraries]
            if unknown:
                raise UsageError(f"grid: registered_structures(library=...): no structure of library "
                                 f"{unknown[0]!r} is registered (allowed: {', '.join(libraries)})")
        chosen = []
        for s in registry:
            if self.only is not None and s["name"] not in self.only:
                continue
            if s["name"] in self.exclude:
                continue
            if self.kind is not None and s.get("kind") not in self.kind:
                continue
            if self.library is not None and s.get("library") not in self.library:
                continue
            if self.where is not None:
                try:
                    keep = self.where(dict(s))
                except Exception as e:  # noqa: BLE001 (the experiment's function on the harness's data)
                    raise UsageError(f"grid: registered_structures(where=...) raised {type(e).__name__}: {e} "
                                     f"on structure {s['name']!r}") from None
                if not keep:
                    continue
            chosen.append(s["name"])
        if not chosen:
            raise UsageError(f"grid: {self!r}: no registered structure matches "
                             f"(registered: {', '.join(names) or 'none'})")
        return chosen

    def entry(self, name: str) -> dict:
        """The listing's entry of a registered structure (once the grid is resolved)."""
        if self.registry is None:
            raise UsageError("registered_structures.entry(): the registry is read when the plan is made "
                             "(allowed: in exclude, options and command functions)")
        for s in self.registry:
            if s["name"] == name:
                return s
        raise UsageError(f"registered_structures.entry(): unknown structure {name!r} "
                         f"(allowed: {', '.join(s['name'] for s in self.registry)})")

    def __repr__(self) -> str:
        args = []
        for key in ("only", "exclude", "kind", "library"):
            value = getattr(self, key)
            if value:
                args.append(f"{key}={value[0]!r}" if len(value) == 1 else f"{key}={value!r}")
        if self.where is not None:
            args.append(f"where={getattr(self.where, '__name__', repr(self.where))}")
        return f"registered_structures({', '.join(args)})"


class registered_variants:  # noqa: N801 (used like a function in experiment files)
    """The reclaimers or the allocators of registered structures' variants, as a grid value read
    from the harness's listing like ``registered_structures()``: every value that appears among
    the variants of the structures ``of`` selects, in registry order (a structure's default
    first), so a reclaimer or allocator added to the registry joins the experiment. Which
    (structure, reclaimer, allocator) points exist is the experiment's exclusion, e.g. with
    ``STRUCTURES.entry(p["ds"])["variants"]``."""

    FIELDS = ("reclaimer", "allocator")

    def __init__(self, field: str, of: registered_structures):
        if field not in self.FIELDS:
            raise ExperimentError(f"grid: registered_variants({field!r}): not a field of a variant "
                                  f"(allowed: {', '.join(self.FIELDS)})")
        if not isinstance(of, registered_structures):
            raise ExperimentError(f"grid: registered_variants(of=...): {of!r} is not a selection of structures "
                                  "(allowed: registered_structures(...))")
        self.field = field
        self.of = of

    def resolve(self, harness: Path) -> list[str]:
        names = self.of.resolve(harness)
        return list(dict.fromkeys(v[self.field] for n in names for v in self.of.entry(n).get("variants", [])))

    def __repr__(self) -> str:
        return f"registered_variants({self.field!r}, of={self.of!r})"


def _names(what: str, value) -> list[str]:
    """A name or a list of names, as a list."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple, set, frozenset)) and all(isinstance(v, str) for v in value):
        return list(value)
    raise ExperimentError(f"grid: registered_structures({what}=...): {value!r} is not allowed "
                          "(allowed: a string or a list of strings)")


# ---------------------------------------------------------------------------------------------
# Settings from the environment

# The settings env() read for the experiment loaded last, name -> value as given: the page's
# command repeats them. load() starts a fresh record (Loaded.env is this dict).
_env_read: dict[str, str] = {}


def env(name: str, default, *, kind=None, choices=None, minimum=None):
    """A setting of the experiment from the environment: the one way to shrink or change an
    experiment without editing it (``CDSBENCH_BST_PARTS=internal cdsbench-run experiments/bst.py``).
    Unset or empty: ``default``. The value's type follows the default: an int, a float, a string,
    or a list of one of them (comma-separated, ``1,2,4``; ``kind`` gives the items' type when the
    default list is empty). ``choices`` limits the values (every item of a list), ``minimum`` the
    numbers. A value that does not fit is a usage error naming what is allowed. What was set is
    recorded (``Loaded.env``), so the page's command repeats it."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    many = isinstance(default, (list, tuple))
    sample = (default[0] if default else "") if many else default
    if kind is None:
        kind = int if isinstance(sample, int) and not isinstance(sample, bool) else type(sample)
    if kind not in (int, float, str):
        raise ExperimentError(f"env({name!r}): default {default!r} is not allowed "
                              "(allowed: an int, a float, a string or a list of one of them)")
    what = {int: "an integer", float: "a number", str: "a word"}[kind]
    if minimum is not None:
        what += f" >= {minimum}"
    if choices is not None:
        what = "one of " + ", ".join(map(str, choices))
    allowed = f"allowed: {what}" + (", comma-separated" if many else "")
    items = [t.strip() for t in text.split(",")] if many else [text]
    values = []
    for item in items:
        try:
            v = kind(item)
        except ValueError:
            v = None
        if (v is None or item == "" or (minimum is not None and v < minimum)
                or (choices is not None and v not in choices)
                or (isinstance(v, float) and not math.isfinite(v))):
            raise ExperimentError(f"${name}: {text!r} is not allowed ({allowed})")
        values.append(v)
    if many and len(set(values)) != len(values):
        raise ExperimentError(f"${name}: {text!r} lists a value twice ({allowed})")
    _env_read[name] = text
    return values if many else values[0]


# ---------------------------------------------------------------------------------------------
# Plots


@dataclass(kw_only=True)
class Plot:
    """Common to every plot: one figure per combination of ``facets`` values; ``where`` keeps
    only the rows it matches (a dict column -> value or list of values, or a function of the
    row); ``name`` names the files (default: from kind and columns)."""

    title: str | None = None
    facets: list[str] | tuple = ()
    where: Any = None
    name: str | None = None
    kind = "plot"

    def columns(self) -> list[str]:
        cols = list(self.facets)
        if isinstance(self.where, dict):
            cols += list(self.where)
        return cols

    def default_name(self) -> str:
        return self.kind

    def default_title(self) -> str:
        return self.default_name()

    def value_columns(self) -> list[str]:
        """The columns whose numbers are drawn (they must be numeric)."""
        return [self.value] if hasattr(self, "value") else [self.y] if hasattr(self, "y") else []

    def check(self) -> None:
        if isinstance(self.facets, str):
            self.facets = [self.facets]
        self.facets = list(self.facets)
        if self.where is not None and not (isinstance(self.where, dict) or callable(self.where)):
            raise ExperimentError(f"plots: {self.kind}: where must be a dict or a function of the row, "
                                  f"got {self.where!r}")


@dataclass(kw_only=True)
class Line(Plot):
    """y against x, one line per ``series`` value; points are means over the trials, error bars
    their 95% confidence interval."""

    x: str = "threads"
    y: str = "throughput_ops_per_s"
    series: str | None = "ds"
    logx: bool = False
    logy: bool = False
    kind = "line"

    def columns(self):
        return [self.x, self.y] + ([self.series] if self.series else []) + super().columns()

    def default_name(self):
        return f"line-{self.y}-by-{self.x}"

    def default_title(self):
        return f"{self.y} by {self.x}"


@dataclass(kw_only=True)
class Bar(Plot):
    """Mean y per x category (grouped by ``series`` if given), error bars the 95% CI."""

    x: str = "ds"
    y: str = "throughput_ops_per_s"
    series: str | None = None
    logy: bool = False
    kind = "bar"

    def columns(self):
        return [self.x, self.y] + ([self.series] if self.series else []) + super().columns()

    def default_name(self):
        return f"bar-{self.y}-by-{self.x}"

    def default_title(self):
        return f"{self.y} by {self.x}"


@dataclass(kw_only=True)
class Histogram(Plot):
    """A histogram the harness writes in its JSON output (default ``latency_histogram_ns``, one
    per operation type): the buckets of all matching runs summed, one stepped line per
    ``series`` value, as the fraction of samples per bucket."""

    op: str | list[str] | None = "search"
    histogram: str = "latency_histogram_ns"
    series: str | None = "ds"
    logx: bool = True
    logy: bool = False
    kind = "histogram"

    def ops(self) -> list[str]:
        """Names of the histogram's series to draw; "" is a bare bucket list (op=None)."""
        if self.op is None:
            return [""]
        return [self.op] if isinstance(self.op, str) else list(self.op)

    def columns(self):
        return ([self.series] if self.series else []) + super().columns()

    def default_name(self):
        return "-".join(x for x in ("histogram", self.histogram, *self.ops()) if x)

    def default_title(self):
        ops = ", ".join(o for o in self.ops() if o)
        return f"{self.histogram} ({ops})" if ops else self.histogram


@dataclass(kw_only=True)
class Heatmap(Plot):
    """Mean ``value`` over an x by y grid of parameters, one heatmap per facet combination, all
    on one colour scale."""

    x: str = "threads"
    y: str = "updates"
    value: str = "throughput_ops_per_s"
    log: bool = False
    kind = "heatmap"

    def columns(self):
        return [self.x, self.y, self.value] + super().columns()

    def default_name(self):
        return f"heatmap-{self.value}-{self.x}-by-{self.y}"

    def default_title(self):
        return f"{self.value} by {self.x} and {self.y}"


# ---------------------------------------------------------------------------------------------
# Rules and derived columns: a Python expression over the row's columns, or a function.

SAFE_BUILTINS = {name: getattr(builtins, name) for name in ("abs", "min", "max", "round", "len", "int", "float", "str", "bool", "sum", "any", "all")}


class MissingColumn(Exception):
    pass


class _RowNamespace(dict):
    def __missing__(self, key):
        if key in SAFE_BUILTINS:
            return SAFE_BUILTINS[key]
        if key == "math":
            return math
        raise MissingColumn(key)


@dataclass
class Expression:
    """A rule or derived column: ``text`` for display, ``fn(row)`` to evaluate."""

    text: str
    fn: Callable[[dict], Any]
    names: tuple = ()

    def __call__(self, row: dict):
        return self.fn(row)


def compile_expression(what: str, spec) -> Expression:
    if isinstance(spec, Expression):
        return spec
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str) and callable(spec[1]):
        return Expression(spec[0], spec[1])
    if callable(spec):
        return Expression(getattr(spec, "__name__", repr(spec)), spec)
    if not isinstance(spec, str):
        raise ExperimentError(f"{what}: {spec!r} is not an expression "
                              "(allowed: a string such as 'throughput_ops_per_s > 0', a function of the row, "
                              "or a (text, function) pair)")
    try:
        code = compile(spec, f"<{what}>", "eval")
    except SyntaxError as e:
        raise ExperimentError(f"{what}: {spec!r} is not a valid Python expression: {e.msg}") from None

    def fn(row, code=code):
        return eval(code, {"__builtins__": {}}, _RowNamespace(row))  # noqa: S307 (the experiment is code anyway)

    return Expression(spec, fn, tuple(code.co_names))


# ---------------------------------------------------------------------------------------------
# The experiment


SETTINGS = {
    "title": None, "description": "", "grid": None, "trials": 3, "trials_for": None, "harness": "build/cdsbench",
    "fixed": None, "options": None, "command": None, "json_output": True, "seed": 1, "exclude": None,
    "validate": DEFAULT_RULES, "derived": None, "plots": None, "metric": "throughput_ops_per_s",
    "timeout_s": 120.0, "cv_threshold": 0.10, "fairness_threshold": 0.5, "build": None, "page": None,
}


class Experiment:
    """One experiment. Settings (keyword arguments):

    - ``grid``: parameter name -> list of values (or ``registered_structures()``,
      ``registered_variants()``); required.
    - ``trials``: runs per grid point (3).
    - ``trials_for``: function point -> that point's runs, for the points a goal compares
      side by side, whose interval needs more trials than the rest (default: ``trials``).
    - ``harness``: the binary, relative to the repository root (``build/cdsbench``).
    - ``fixed``: harness options for every run, name -> value (``key_range`` -> ``--key-range``).
    - ``options``: function point -> harness options (default: the point itself); given a
      second parameter it also gets the resolved grid (parameter -> list of values).
    - ``command``: function (point, harness path[, trial]) -> argv, for a program other than
      cdsbench (then ``fixed``, ``options`` and ``seed`` are not used).
    - ``json_output``: append ``--json FILE`` to the command (True).
    - ``seed``: run t of a point gets ``--seed seed+t`` (1); None lets the harness draw it.
    - ``exclude``: list of dicts (parameter -> value, all must match) or functions point -> bool.
    - ``validate``: rules every run must pass: expressions over the row, or functions.
    - ``derived``: column name -> expression or function of the row, stored like output keys.
    - ``plots``: ``Line``, ``Bar``, ``Histogram``, ``Heatmap``.
    - ``metric``: the column the summary table reports (``throughput_ops_per_s``).
    - ``timeout_s``: a run longer than this is killed and recorded as ``timeout`` (120).
    - ``cv_threshold``: warn when a point's coefficient of variation exceeds it (0.10).
    - ``fairness_threshold``: warn when the slowest thread runs below this fraction of the
      fastest (0.5).
    - ``build``: commands (argv lists) of the build step (default: cmake --build of the harness).
    - ``page``: function of the results (``cdsbench.markdown.Results``) -> the Markdown page's
      body, written by the markdown step (default: a table of the metric per point).
    """

    def __init__(self, **settings):
        unknown = [k for k in settings if k not in SETTINGS]
        if unknown:
            raise ExperimentError(f"Experiment: unknown setting {unknown[0]!r} (allowed: {', '.join(SETTINGS)})")
        for key, default in SETTINGS.items():
            value = settings.get(key, default)
            if value is None and key in ("fixed", "derived"):
                value = {}
            if value is None and key in ("exclude", "plots"):
                value = []
            setattr(self, key, value)
        self._check()

    def _check(self):
        grid = self.grid
        if not isinstance(grid, dict) or not grid:
            raise ExperimentError("grid: missing or empty (allowed: a dict of parameter name -> list of values, "
                                  "e.g. grid={'ds': ['locked_std_set'], 'threads': [1, 2]})")
        for name, values in grid.items():
            if not isinstance(name, str) or not NAME_RE.match(name):
                raise ExperimentError(f"grid: parameter name {name!r} is not allowed "
                                      "(allowed: lower-case letters, digits and _, e.g. 'key_range')")
            if name in RESERVED or name.startswith(RESERVED_PREFIX):
                raise ExperimentError(f"grid: parameter name {name!r} is reserved by the runner "
                                      f"(not allowed: {', '.join(sorted(RESERVED))}, run_*)")
            if isinstance(values, (registered_structures, registered_variants)):
                continue
            if not isinstance(values, (list, tuple)) or not values:
                raise ExperimentError(f"grid: {name!r} must be a non-empty list of values, got {values!r} "
                                      "(allowed: a list of numbers or strings, or registered_structures())")
            for v in values:
                if not isinstance(v, (str, int, float, bool)) or (isinstance(v, float) and not math.isfinite(v)):
                    raise ExperimentError(f"grid: {name!r}: value {v!r} is not allowed "
                                          "(allowed: numbers, strings, booleans)")
            if len(set(map(repr, values))) != len(values):
                raise ExperimentError(f"grid: {name!r} lists a value twice: {list(values)!r}")
        if not isinstance(self.trials, int) or isinstance(self.trials, bool) or self.trials < 1:
            raise ExperimentError(f"trials: {self.trials!r} is not allowed (allowed: an integer >= 1)")
        if not isinstance(self.timeout_s, (int, float)) or self.timeout_s <= 0:
            raise ExperimentError(f"timeout_s: {self.timeout_s!r} is not allowed (allowed: seconds > 0)")
        if self.seed is not None and (not isinstance(self.seed, int) or self.seed < 0):
            raise ExperimentError(f"seed: {self.seed!r} is not allowed (allowed: an integer >= 0, or None)")
        if not isinstance(self.fixed, dict):
            raise ExperimentError(f"fixed: {self.fixed!r} is not allowed (allowed: a dict option -> value)")
        for key in ("options", "command"):
            value = getattr(self, key)
            if value is not None and not callable(value):
                raise ExperimentError(f"{key}: {value!r} is not a function of the point")
        if self.command is not None and (self.fixed or self.options):
            raise ExperimentError("command: give either command, or fixed/options (which build the harness's command)")
        for key in ("fixed",):
            for reserved in ("trials", "json"):
                if reserved in getattr(self, key):
                    raise ExperimentError(f"{key}: {reserved!r} is set by the runner "
                                          "(use Experiment(trials=N): each run is one harness trial)")
        if not isinstance(self.exclude, (list, tuple)):
            raise ExperimentError(f"exclude: {self.exclude!r} is not a list of dicts or functions")
        for ex in self.exclude:
            if isinstance(ex, dict):
                bad = [k for k in ex if k not in grid]
                if bad:
                    raise ExperimentError(f"exclude: {bad[0]!r} is not a grid parameter (allowed: {', '.join(grid)})")
            elif not callable(ex):
                raise ExperimentError(f"exclude: {ex!r} is not a dict or a function of the point")
        if isinstance(self.validate, (str, tuple)) and not isinstance(self.validate, list):
            self.validate = [self.validate] if isinstance(self.validate, str) else list(self.validate)
        self.rules = [compile_expression("validate", r) for r in self.validate]
        if not isinstance(self.derived, dict):
            raise ExperimentError(f"derived: {self.derived!r} is not a dict name -> expression")
        self.derived_columns = {}
        for name, spec in self.derived.items():
            if not isinstance(name, str) or not NAME_RE.match(name) or name.startswith(RESERVED_PREFIX) or name in RESERVED:
                raise ExperimentError(f"derived: column name {name!r} is not allowed "
                                      "(allowed: lower-case letters, digits and _, not run_*)")
            self.derived_columns[name] = compile_expression(f"derived {name}", spec)
        if not isinstance(self.plots, (list, tuple)):
            raise ExperimentError(f"plots: {self.plots!r} is not a list")
        names = set()
        for i, plot in enumerate(self.plots):
            if not isinstance(plot, Plot):
                raise ExperimentError(f"plots: item {i} is {plot!r} (allowed: Line, Bar, Histogram, Heatmap)")
            plot.check()
            base = slug(plot.name or plot.default_name())
            name, k = base, 2
            while name in names:
                name, k = f"{base}-{k}", k + 1
            names.add(name)
            plot.id = name
            if plot.title is None:
                plot.title = plot.default_title()
        for key in ("cv_threshold", "fairness_threshold"):
            v = getattr(self, key)
            if not isinstance(v, (int, float)) or v < 0:
                raise ExperimentError(f"{key}: {v!r} is not allowed (allowed: a number >= 0)")
        if not isinstance(self.metric, str):
            raise ExperimentError(f"metric: {self.metric!r} is not a column name")
        if self.trials_for is not None and not callable(self.trials_for):
            raise ExperimentError(f"trials_for: {self.trials_for!r} is not a function (allowed: point -> trials)")
        if self.page is not None and not callable(self.page):
            raise ExperimentError(f"page: {self.page!r} is not a function of the results "
                                  "(allowed: def page(results): return markdown_text)")
        if self.build is not None and not (isinstance(self.build, list)
                                           and all(isinstance(c, (list, tuple)) for c in self.build)):
            raise ExperimentError("build: must be a list of commands, each a list of arguments")


def slug(text: str, limit: int = 80) -> str:
    s = re.sub(r"[^A-Za-z0-9._-]+", "-", str(text)).strip("-.")
    return (s or "x")[:limit]


# ---------------------------------------------------------------------------------------------
# Loading an experiment file


@dataclass
class Loaded:
    path: Path
    name: str
    root: Path
    source: str
    experiment: Experiment
    env: dict = field(default_factory=dict)   # settings env() read: name -> value as given


def find_root(start: Path) -> Path:
    """The repository root: the nearest ancestor with CMakeLists.txt and bench/, else the cwd."""
    for d in [start, *start.parents]:
        if (d / "CMakeLists.txt").exists() and (d / "bench").is_dir():
            return d
    return Path.cwd()


def load(path_text: str) -> Loaded:
    path = Path(path_text)
    allowed = "allowed: a Python file that sets EXPERIMENT = Experiment(...), e.g. experiments/demo.py"
    if not path.exists():
        raise UsageError(f"{path_text}: no such experiment file ({allowed})")
    if path.is_dir() or path.suffix != ".py":
        raise UsageError(f"{path_text}: not an experiment file ({allowed})")
    path = path.resolve()
    source = path.read_text(errors="replace")
    namespace = {"__file__": str(path), "__name__": f"cdsbench_experiment_{path.stem}"}
    global _env_read
    _env_read = {}
    try:
        code = compile(source, str(path), "exec")
        exec(code, namespace)  # noqa: S102 (an experiment file is Python by design)
    except ExperimentError as e:
        raise UsageError(f"{path_text}:{_line_in(path, e)} {e}") from None
    except SyntaxError as e:
        raise UsageError(f"{path_text}:{e.lineno}: syntax error: {e.msg}") from None
    except Exception as e:  # noqa: BLE001 (any error in the user's file is bad input)
        raise UsageError(f"{path_text}:{_line_in(path, e)} {type(e).__name__}: {e}{_allowed_fields(e)}") from None
    exp = namespace.get("EXPERIMENT")
    if not isinstance(exp, Experiment):
        raise UsageError(f"{path_text}: defines no EXPERIMENT ({allowed})")
    if exp.title is None:
        exp.title = path.stem
    return Loaded(path=path, name=slug(path.stem), root=find_root(path.parent), source=source, experiment=exp,
                  env=_env_read)


def _allowed_fields(exc: BaseException) -> str:
    """For Line(z=...) and the like: name the fields that are allowed."""
    m = re.match(r"(\w+)\.__init__\(\) got an unexpected keyword argument", str(exc))
    if isinstance(exc, TypeError) and m:
        cls = {c.__name__: c for c in (Line, Bar, Histogram, Heatmap)}.get(m.group(1))
        if cls is not None:
            return f" (allowed: {', '.join(cls.__dataclass_fields__)})"
    return ""


def _line_in(path: Path, exc: BaseException) -> str:
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if frame.filename == str(path):
            return f"{frame.lineno}:"
    return ""


# ---------------------------------------------------------------------------------------------
# The plan: points and runs


@dataclass
class Run:
    key: str           # stable name of the run (its directory under runs/)
    point_id: int
    point: dict
    label: str         # "ds=null threads=1"
    trial: int
    argv: list[str]    # without the --json FILE the runner appends


@dataclass
class Plan:
    grid: dict                     # resolved: parameter -> list of values
    points: list[dict]
    labels: list[str]
    runs: list[Run] = field(default_factory=list)
    harness: Path | None = None
    registry: list[dict] | None = None   # the harness's listing, when the grid reads it


def format_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, (list, tuple)):
        return ",".join(format_value(x) for x in v)
    return str(v)


def option_args(options: dict) -> list[str]:
    argv = []
    for name, value in options.items():
        if value is None or value is False:
            continue
        flag = name if name.startswith("-") else "--" + name.replace("_", "-")
        argv.append(flag)
        if value is not True:
            argv.append(format_value(value))
    return argv


def point_label(point: dict) -> str:
    return " ".join(f"{k}={format_value(v)}" for k, v in point.items())


def _accepts(fn, n: int) -> bool:
    """Whether fn takes n positional arguments (the optional ones are offered only then)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= n or any(p.kind == p.VAR_POSITIONAL for p in params)


def _call(loaded_path: str, what: str, fn, *args):
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001
        raise UsageError(f"{loaded_path}: {what} raised {type(e).__name__}: {e}") from None


def make_plan(loaded: Loaded, harness: Path) -> Plan:
    exp = loaded.experiment
    where = loaded.path.name
    grid = {}
    registry = None
    for name, values in exp.grid.items():
        if isinstance(values, (registered_structures, registered_variants)):
            grid[name] = values.resolve(harness)
            registry = (values if isinstance(values, registered_structures) else values.of).registry
        else:
            grid[name] = list(values)
    points, labels = [], []
    for combo in itertools.product(*grid.values()):
        point = dict(zip(grid, combo))
        excluded = False
        for ex in exp.exclude:
            if isinstance(ex, dict):
                excluded = all(point[k] == v or (isinstance(v, (list, tuple, set)) and point[k] in v)
                               for k, v in ex.items())
            else:
                excluded = bool(_call(where, f"exclude({point_label(point)})", ex, dict(point)))
            if excluded:
                break
        if not excluded:
            points.append(point)
            labels.append(point_label(point))
    if not points:
        raise UsageError(f"{where}: grid: every point is excluded (allowed: exclusions that leave at least one point)")
    plan = Plan(grid=grid, points=points, labels=labels, harness=harness, registry=registry)
    for pid, point in enumerate(points):
        trials = exp.trials
        if exp.trials_for is not None:
            trials = _call(where, f"trials_for({point_label(point)})", exp.trials_for, dict(point))
            if not isinstance(trials, int) or isinstance(trials, bool) or trials < 1:
                raise UsageError(f"{where}: trials_for({point_label(point)}) returned {trials!r} "
                                 "(allowed: an integer >= 1)")
        for trial in range(trials):
            if exp.command is not None:
                extra = (trial,) if _accepts(exp.command, 3) else ()
                argv = _call(where, f"command({point_label(point)})", exp.command, dict(point), str(harness), *extra)
                if not isinstance(argv, (list, tuple)) or not argv:
                    raise UsageError(f"{where}: command({point_label(point)}) returned {argv!r} "
                                     "(allowed: a non-empty list of arguments)")
                argv = [str(a) for a in argv]
            else:
                opts = dict(exp.fixed)
                if exp.options is not None:
                    more = (grid,) if _accepts(exp.options, 2) else ()
                    extra = _call(where, f"options({point_label(point)})", exp.options, dict(point), *more)
                    if not isinstance(extra, dict):
                        raise UsageError(f"{where}: options({point_label(point)}) returned {extra!r} "
                                         "(allowed: a dict option -> value)")
                    opts.update(extra)
                else:
                    opts.update(point)
                for reserved in ("trials", "json"):
                    if reserved in opts:
                        raise UsageError(f"{where}: option {reserved!r} is set by the runner "
                                         "(use Experiment(trials=N): each run is one harness trial)")
                if exp.seed is not None and "seed" not in opts:
                    opts["seed"] = exp.seed + trial
                argv = [str(harness)] + option_args(opts) + ["--trials", "1"]
            ident = json.dumps({"args": argv[1:], "point": point, "trial": trial}, sort_keys=True, default=str)
            digest = hashlib.sha1(ident.encode()).hexdigest()[:8]
            key = f"{slug('_'.join(f'{k}-{format_value(v)}' for k, v in point.items()))}__t{trial}__{digest}"
            plan.runs.append(Run(key=key, point_id=pid, point=point, label=labels[pid], trial=trial, argv=argv))
    return plan


def command_line(argv: list[str]) -> str:
    return shlex.join(argv)
