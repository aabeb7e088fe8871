"""registered_structures(): the grid's structures picked from the harness's registry by its data
(`HARNESS --list --json FILE`: kind, library, anything of an entry), never by their names; the
fake harness's registry names its structures against every convention on purpose."""
import json
import subprocess

import pytest

from cdsbench import checks
from cdsbench.errors import UsageError
from cdsbench.experiment import KINDS, load, make_plan, registered_structures
from conftest import ROOT
from runner_support import db, fake_harness_binary, rows, runner, write_experiment

ALL = ["fake_set", "fake_tree", "fake_map", "fake_queue", "fake_stack", "libcds.fake_tree", "their_map",
       "nr.fake_pq", "fc.fake_pq", "locked_fake_stack"]


@pytest.fixture
def harness(tmp_path):
    return fake_harness_binary(tmp_path)


def test_the_fake_listing_matches_its_human_list(harness, tmp_path):
    text = subprocess.run([str(harness), "--list"], capture_output=True, text=True, check=True).stdout
    subprocess.run([str(harness), "--list", "--json", str(tmp_path / "l.json")], capture_output=True, check=True)
    doc = json.loads((tmp_path / "l.json").read_text())
    assert [s["name"] for s in doc["structures"]] == [line.split()[0] for line in text.splitlines()] == ALL


def test_no_filter_is_every_structure_in_registry_order(harness):
    assert registered_structures().resolve(harness) == ALL


@pytest.mark.parametrize("kwargs, names", [
    ({"kind": "black_box"}, ["nr.fake_pq", "fc.fake_pq", "locked_fake_stack"]),
    ({"kind": ["stack", "queue"]}, ["fake_queue", "fake_stack"]),  # registry order, not the argument's
    ({"kind": ("unordered_map",)}, ["fake_map"]),
    ({"library": "cdsbench"}, [n for n in ALL if n not in ("libcds.fake_tree", "their_map")]),
    ({"library": ["oneTBB", "libcds"]}, ["libcds.fake_tree", "their_map"]),
    ({"where": lambda s: s["search_depths"]}, ["fake_tree"]),
    ({"where": lambda s: s["method"] == "sl"}, ["locked_fake_stack"]),
    ({"where": lambda s: s["sequential"] == "fake_pq"}, ["nr.fake_pq", "fc.fake_pq"]),
    ({"where": lambda s: not s["concurrent_erase"]}, ["their_map"]),
    ({"kind": "ordered_set", "library": "cdsbench"}, ["fake_set", "fake_tree"]),
    ({"kind": "ordered_set", "where": lambda s: not s["range_queries"]}, ["fake_set", "libcds.fake_tree", "their_map"]),
    ({"kind": "ordered_set", "library": "cdsbench", "where": lambda s: s["range_queries"]}, ["fake_tree"]),
    ({"kind": "black_box", "exclude": ["fc.fake_pq"]}, ["nr.fake_pq", "locked_fake_stack"]),
    ({"kind": "black_box", "exclude": "fc.fake_pq"}, ["nr.fake_pq", "locked_fake_stack"]),
    ({"only": ["locked_fake_stack", "fake_set", "nr.fake_pq"], "kind": "black_box"},
     ["nr.fake_pq", "locked_fake_stack"]),
    ({"only": ["their_map", "fake_set"]}, ["fake_set", "their_map"]),
])
def test_filters_by_data_combine_with_and_and_keep_registry_order(harness, kwargs, names):
    assert registered_structures(**kwargs).resolve(harness) == names


def test_where_sees_a_copy_of_each_whole_entry(harness):
    seen = []

    def keep(s):
        seen.append(s)
        s["name"] = "changed"  # a copy: the registry is not changed
        return True

    rs = registered_structures(where=keep)
    assert rs.resolve(harness) == ALL
    assert [s["kind"] for s in seen][:5] == ["ordered_set", "ordered_set", "unordered_map", "queue", "stack"]
    assert set(seen[0]) >= {"name", "description", "kind", "library", "method", "sequential", "range_queries",
                            "concurrent_erase", "layout", "model", "known_violation", "search_depths", "variants"}
    assert seen[0]["variants"][0] == {"reclaimer": "ebr", "allocator": "system", "test": True}
    assert rs.entry("nr.fake_pq")["method"] == "nr" and rs.entry("fake_set")["method"] is None


def test_entry_needs_the_resolved_registry_and_a_registered_name(harness):
    rs = registered_structures(kind="queue")
    with pytest.raises(UsageError, match="the registry is read when the plan is made"):
        rs.entry("fake_queue")
    rs.resolve(harness)
    assert rs.entry("their_map")["concurrent_erase"] is False  # any registered structure, not just the chosen
    with pytest.raises(UsageError, match=r"unknown structure 'nope' \(allowed: fake_set, fake_tree,"):
        rs.entry("nope")


def test_an_unknown_kind_is_an_error_naming_the_allowed_kinds():
    assert KINDS == ("ordered_set", "unordered_map", "queue", "stack", "black_box")
    for kind in ("tree", ["queue", "set"]):
        with pytest.raises(UsageError) as e:
            registered_structures(kind=kind)
        assert "is not a kind (allowed: ordered_set, unordered_map, queue, stack, black_box)" in str(e.value)


@pytest.mark.parametrize("kwargs, needle", [
    ({"library": "tbb"}, "no structure of library 'tbb' is registered (allowed: cdsbench, libcds, oneTBB)"),
    ({"only": ["nope"]}, "unknown structure 'nope' (allowed: fake_set, fake_tree"),
    ({"kind": "queue", "library": "libcds"}, "registered_structures(kind='queue', library='libcds'): no registered "
                                            "structure matches (registered: fake_set,"),
    ({"where": lambda s: s["no_such_field"]}, "registered_structures(where=...) raised KeyError: 'no_such_field' "
                                              "on structure 'fake_set'"),
])
def test_a_selection_that_cannot_be_made_is_a_usage_error(harness, kwargs, needle):
    with pytest.raises(UsageError) as e:
        registered_structures(**kwargs).resolve(harness)
    assert needle in str(e.value)


@pytest.mark.parametrize("kwargs, needle", [
    ({"where": "search_depths"}, "is not a function of a structure's entry"),
    ({"library": 3}, "registered_structures(library=...): 3 is not allowed (allowed: a string or a list of strings)"),
    ({"only": [1, 2]}, "registered_structures(only=...)"),
])
def test_bad_arguments_are_usage_errors(kwargs, needle):
    with pytest.raises(UsageError) as e:
        registered_structures(**kwargs)
    assert needle in str(e.value)


@pytest.mark.parametrize("mode, needle", [
    ("list-fail", "--list --json FILE` exited with 3"),
    ("list-garbage", "--list --json FILE` wrote FILE that is not JSON"),
    ("list-nofile", "--list --json FILE` wrote no FILE"),
    ("list-layout", "--list --json FILE` wrote FILE without the expected layout"),
])
def test_a_listing_that_fails_is_a_usage_error(tmp_path, mode, needle):
    with pytest.raises(UsageError) as e:
        registered_structures().resolve(fake_harness_binary(tmp_path, mode))
    assert needle in str(e.value)


def test_a_missing_harness_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="harness .* not found"):
        registered_structures().resolve(tmp_path / "cdsbench")


def test_repr_names_the_filters():
    assert repr(registered_structures()) == "registered_structures()"

    def deep(s):
        return s["search_depths"]

    assert (repr(registered_structures(kind=["queue", "stack"], library="cdsbench", where=deep, exclude=["x"]))
            == "registered_structures(exclude='x', kind=['queue', 'stack'], library='cdsbench', where=deep)")


def test_the_listing_leaves_no_file_behind(harness, tmp_path, monkeypatch):
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    registered_structures().resolve(harness)
    assert list((tmp_path / "tmp").iterdir()) == []


def test_an_experiment_with_an_unknown_kind_is_one_line_exit_2(tmp_path, harness):
    exp = write_experiment(tmp_path, 'EXPERIMENT = Experiment(grid={"ds": registered_structures(kind="tree")})')
    p = runner(exp, "run", "--harness", harness, "--results", tmp_path / "r")
    assert p.returncode == 2, p.stdout + p.stderr
    (line,) = p.stderr.strip().splitlines()
    assert line.startswith("cdsbench-run: error: ") and "exp.py:4:" in line
    assert "'tree' is not a kind (allowed: ordered_set, unordered_map, queue, stack, black_box)" in line


def test_an_experiment_whose_listing_is_not_json_is_one_line_exit_2(tmp_path):
    exp = write_experiment(tmp_path, 'EXPERIMENT = Experiment(grid={"ds": registered_structures()})')
    p = runner(exp, "run", "--harness", fake_harness_binary(tmp_path, "list-garbage"), "--results", tmp_path / "r")
    assert p.returncode == 2, p.stdout + p.stderr
    (line,) = p.stderr.strip().splitlines()
    assert "wrote FILE that is not JSON" in line and "Traceback" not in p.stderr


def test_rows_carry_the_structure_data_and_a_family_from_it(tmp_path, harness):
    """A sweep over the structures picked by data; each row has the trial's structure_kind,
    structure_library, blackbox_method, blackbox_structure, and the demo's family column
    computes from them."""
    family = load(str(ROOT / "experiments" / "demo.py")).experiment.derived["family"]
    exp = write_experiment(tmp_path, f"""
        EXPERIMENT = Experiment(
            grid={{"ds": registered_structures(kind=["black_box", "stack"]), "threads": [1]}},
            trials=1,
            command=lambda p, harness: [sys.executable, FAKE, "--ds", p["ds"], "--threads", str(p["threads"])],
            derived={{"family": {family!r}}},
        )
        """)
    p = runner(exp, "run", "database", "--harness", harness, "--results", tmp_path / "r")
    assert p.returncode == 0, p.stdout + p.stderr
    got = rows(db(tmp_path / "r"), "SELECT ds, structure_kind, structure_library, blackbox_method, blackbox_structure, "
                                   "family FROM runs ORDER BY run_id")
    assert [tuple(r.values()) for r in got] == [
        ("fake_stack", "stack", "cdsbench", "none", "none", "queues"),
        ("nr.fake_pq", "black_box", "cdsbench", "nr", "fake_pq", "fake_pq"),
        ("fc.fake_pq", "black_box", "cdsbench", "fc", "fake_pq", "fake_pq"),
        ("locked_fake_stack", "black_box", "cdsbench", "sl", "fake_stack", "fake_stack"),
    ]


def test_demo_family_is_queues_for_queues_the_sequential_structure_of_black_box_rows_else_sets():
    family = load(str(ROOT / "experiments" / "demo.py")).experiment.derived_columns["family"]
    for row, expected in [
        ({"ds": "nr.stack", "structure_kind": "black_box", "blackbox_method": "nr", "blackbox_structure": "stack"},
         "stack"),
        ({"ds": "locked_fake_stack", "structure_kind": "black_box", "blackbox_method": "sl",
          "blackbox_structure": "fake_stack"}, "fake_stack"),
        ({"ds": "tbb.concurrent_map", "structure_kind": "map", "blackbox_method": "none",
          "blackbox_structure": "none"}, "sets"),
        ({"ds": "nr.looks_black_box", "structure_kind": "set", "blackbox_method": "none",
          "blackbox_structure": "none"}, "sets"),
        ({"ds": "lcrq", "structure_kind": "queue", "blackbox_method": "none", "blackbox_structure": "none"},
         "queues"),
        ({"ds": "treiber_stack", "structure_kind": "stack", "blackbox_method": "none", "blackbox_structure": "none"},
         "queues"),
    ]:
        assert family(checks.rule_namespace(row)) == expected, row


def test_demo_plans_from_the_registry_data(tmp_path, harness, monkeypatch):
    """experiments/demo.py against the fake registry: every structure; a structure without a
    thread-safe erase (their_map, named like no peer) has no 2-thread point (its mix deletes)."""
    monkeypatch.delenv("CDSBENCH_DEMO_TRIAL_MS", raising=False)
    plan = make_plan(load(str(ROOT / "experiments" / "demo.py")), harness)
    assert plan.grid == {"ds": ALL, "threads": [1, 2], "updates": [20]}
    assert len(plan.runs) == len(ALL) * 2 * 3 - 3
    kept = {(r.point["threads"], r.point["updates"]) for r in plan.runs if r.point["ds"] == "their_map"}
    assert kept == {(1, 20)}


def test_demo_runs_and_groups_by_family_against_the_fake_harness(tmp_path, harness):
    p = runner(ROOT / "experiments" / "demo.py", "run", "database", "--trials", "1", "--harness", harness,
               "--results", tmp_path / "r", timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    got = rows(db(tmp_path / "r", "demo"), "SELECT DISTINCT ds, family FROM runs ORDER BY run_id")
    assert [(r["ds"], r["family"]) for r in got] == [
        (n, {"nr.fake_pq": "fake_pq", "fc.fake_pq": "fake_pq", "locked_fake_stack": "fake_stack",
             "fake_queue": "queues", "fake_stack": "queues"}.get(n, "sets"))
        for n in ALL]
    assert rows(db(tmp_path / "r", "demo"), "SELECT count(*) AS n, sum(run_status = 'ok') AS ok FROM runs") == [
        {"n": len(ALL) * 2 - 1, "ok": len(ALL) * 2 - 1}]
    warned = rows(db(tmp_path / "r", "demo"), "SELECT message FROM warnings WHERE category = 'derived'")
    assert warned == []


def test_registered_variants_are_the_chosen_structures_reclaimers_or_allocators(harness):
    from cdsbench.experiment import ExperimentError, registered_variants

    ours = registered_structures(kind="ordered_set", library="cdsbench")
    assert registered_variants("reclaimer", of=ours).resolve(harness) == ["ebr", "none"]  # registry order
    assert registered_variants("allocator", of=ours).resolve(harness) == ["system", "segregated"]
    peers = registered_structures(library=["libcds", "oneTBB"])
    assert registered_variants("reclaimer", of=peers).resolve(harness) == ["hp", "rcu", "immediate"]
    with pytest.raises(ExperimentError, match=r"registered_variants\('layout'\): not a field of a variant "
                                              r"\(allowed: reclaimer, allocator\)"):
        registered_variants("layout", of=ours)
    with pytest.raises(ExperimentError, match="is not a selection of structures"):
        registered_variants("reclaimer", of=["fake_set"])


def test_a_grid_of_registered_variants_plans_and_records_the_registry(tmp_path, harness):
    exp = write_experiment(tmp_path, """
        from cdsbench.experiment import registered_variants
        S = registered_structures(only=["fake_set", "libcds.fake_tree"])
        EXPERIMENT = Experiment(
            grid={"ds": S, "reclaimer": registered_variants("reclaimer", of=S)},
            exclude=[lambda p: p["reclaimer"] not in [v["reclaimer"] for v in S.entry(p["ds"])["variants"]]],
            command=lambda p, h: [sys.executable, FAKE, "--ds", p["ds"]])
        """)
    plan = make_plan(load(str(exp)), harness)
    assert plan.grid["reclaimer"] == ["ebr", "none", "hp", "rcu"]
    assert [(p["ds"], p["reclaimer"]) for p in plan.points] == [
        ("fake_set", "ebr"), ("fake_set", "none"), ("libcds.fake_tree", "hp"), ("libcds.fake_tree", "rcu")]
    assert [s["name"] for s in plan.registry] == ALL


@pytest.mark.parametrize("value, default, kwargs, expected", [
    (None, 3000, {}, 3000),
    ("", [1, 2, 4], {}, [1, 2, 4]),
    ("200", 3000, {}, 200),
    (" 1, 2 ", [1, 2, 4], {}, [1, 2]),
    ("0.5", 1.0, {}, 0.5),
    ("internal,sizes", ["external"], {"choices": ["external", "internal", "sizes"]}, ["internal", "sizes"]),
    ("a,b", [], {"kind": str}, ["a", "b"]),
    ("20000", [], {"kind": int, "minimum": 1}, [20000]),
])
def test_env_reads_a_setting_typed_like_its_default(monkeypatch, value, default, kwargs, expected):
    from cdsbench import experiment

    if value is None:
        monkeypatch.delenv("CDSBENCH_TEST_X", raising=False)
    else:
        monkeypatch.setenv("CDSBENCH_TEST_X", value)
    monkeypatch.setattr(experiment, "_env_read", {})
    assert experiment.env("CDSBENCH_TEST_X", default, **kwargs) == expected
    assert experiment._env_read == ({"CDSBENCH_TEST_X": value.strip()} if value and value.strip() else {})


@pytest.mark.parametrize("value, default, kwargs, needle", [
    ("soon", 3000, {}, "$CDSBENCH_TEST_X: 'soon' is not allowed (allowed: an integer)"),
    ("0", 3000, {"minimum": 1}, "'0' is not allowed (allowed: an integer >= 1)"),
    ("1,,2", [1], {}, "'1,,2' is not allowed (allowed: an integer, comma-separated)"),
    ("1,1", [1], {}, "'1,1' lists a value twice"),
    ("inf", 1.0, {}, "'inf' is not allowed (allowed: a number)"),
    ("middle", ["a"], {"choices": ["a", "b"]}, "'middle' is not allowed (allowed: one of a, b, comma-separated)"),
])
def test_env_refuses_a_value_that_does_not_fit(monkeypatch, value, default, kwargs, needle):
    from cdsbench.experiment import ExperimentError, env

    monkeypatch.setenv("CDSBENCH_TEST_X", value)
    with pytest.raises(ExperimentError) as e:
        env("CDSBENCH_TEST_X", default, **kwargs)
    assert needle in str(e.value)


def test_the_settings_an_experiment_read_are_its_loaded_env(tmp_path, monkeypatch):
    exp = write_experiment(tmp_path, """
        from cdsbench.experiment import env
        EXPERIMENT = Experiment(grid={"t": env("CDSBENCH_TEST_T", [1, 2])}, command=lambda p, h: [sys.executable, FAKE])
        """)
    monkeypatch.setenv("CDSBENCH_TEST_T", "4,8")
    loaded = load(str(exp))
    assert loaded.experiment.grid == {"t": [4, 8]} and loaded.env == {"CDSBENCH_TEST_T": "4,8"}
    monkeypatch.delenv("CDSBENCH_TEST_T")
    assert load(str(exp)).env == {}  # each load records its own
