"""pack_start (planner/fleet/starts/pack.py): every job on one bought cluster of as few nodes as it packs them into.

Its plans must be plans of the full MIP (every row, every exact rule of evaluate_fleet, priced alike) and never
below the optimum found by brute force; on a hand-made instance it finds the optimum the stacked start misses.
"""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
import time
from typing import Any
from unittest import mock

import numpy as np
import pyomo.environ as pyo
import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.data import Catalog
from planner.fleet import FleetMIP, build_fleet_model, evaluate_fleet, fleet, job_modes, pools_of
from planner.fleet.starts import (
    StartPlan,
    StartState,
    cluster_fits,
    current_plan,
    pack_cluster,
    pack_options,
    pack_size_bound,
    pack_start,
    plan_value,
    set_plan_start,
    smallest_packing,
    squeeze_start,
)
from planner.fleet.starts import pack as pack_mod
from planner.fleet.starts import squeeze as squeeze_mod
from tests.conftest import toy_catalog
from tests.fleet.test_fleet import (
    _enumerate,
    _row_violations,
    _settings,
    _tiny,
    draw_toy_jobs,
    freq,
    side_by_side_start,
)


def _check_installed(mip: FleetMIP, cat: Catalog, req: Any, out: dict[str, float]) -> float:
    """The plan pack_start installed: within every MIP row and evaluate_fleet's rules, priced as reported."""
    plan = current_plan(mip)
    assert plan is not None
    assert _row_violations(mip.model) == []
    ix = mip.index
    rows = {j: ix.modes.loc[k] for j, (k, _s) in plan.chosen.items()}
    slots = {j: s for j, (_k, s) in plan.chosen.items()}
    kept = plan.kept if plan.kept is not None else [e.count for e in ix.pools.owned]
    ev = evaluate_fleet(cat, req, ix.pools, rows, slots, plan.bought, kept)
    assert ev is not None
    assert ev["value"] == pytest.approx(out["pack_objective"], rel=1e-6, abs=1e-3)
    assert len({p for p, _f in plan.bought}) == 1 and out["pack_nodes"] == sum(plan.bought.values())
    return float(ev["value"])


def _pack_and_check(mip: FleetMIP, cat: Catalog, req: Any, state: StartState) -> float | None:
    """pack_start on the MIP, counted in PACKED; the installed plan checked (``_check_installed``) and its value,
    or None when packing left the start alone."""
    out = pack_start(mip, cat, req, state, 10.0)
    PACKED["runs"] += 1
    if "pack_objective" not in out:
        return None
    PACKED["installed"] += 1
    return _check_installed(mip, cat, req, out)


def _two_jobs_on_toy_a(toy: Catalog) -> tuple[Any, FleetMIP, dict[str, int], str]:
    """(request, MIP, each job's one-node mode, toy-a's fabric) of two 5.83 h jobs free in slots 0 and 1."""
    req = freq(slots=2, servers=["toy-a"], jobs=[{"id": j, "model": "toy-model", "due_slot": 1} for j in ("a", "b")])
    pools = pools_of(toy, req)
    modes = job_modes(toy, req, pools=pools)
    mip = build_fleet_model(toy, req, modes, pools)
    ix = mip.index
    one = {j: next(k for k in ix.by_job[j] if ix.modes.at[k, "nodes"] == 1) for j in ("a", "b")}
    return req, mip, one, pools.buy["toy-a"][0]


def test_pack_runs_two_jobs_one_after_another_on_one_node(toy: Catalog) -> None:
    # two 5.83 h jobs on one toy-a node, both free in slots 0 and 1: a start that stacks both in slot 0 buys 2
    # nodes (20,000 USD); packing finds that one node holds both (the fluid bound: 2 node-slots / 2 slots = 1)
    req, mip, one, fab = _two_jobs_on_toy_a(toy)
    start = StartPlan({j: (k, [0]) for j, k in one.items()}, {("toy-a", fab): 2})
    state = StartState()
    set_plan_start(mip, toy, req, start, state, feasible=True)
    before = pyo.value(mip.model.objective)
    out = pack_start(mip, toy, req, state, 10.0)
    assert out["pack_nodes"] == 1 and out["pack_objective"] < before
    value = _check_installed(mip, toy, req, out)
    plan = current_plan(mip)
    assert plan is not None and sorted(s for _k, s in plan.chosen.values()) == [[0], [1]]
    best = fleet(req, toy).objective_value
    assert best is not None and value == pytest.approx(best, abs=1e-4)


def test_pack_keeps_a_cheaper_start(toy: Catalog) -> None:
    # the start is already the one-node optimum: packing finds nothing cheaper and leaves it alone
    req, mip, one, fab = _two_jobs_on_toy_a(toy)
    start = StartPlan({"a": (one["a"], [0]), "b": (one["b"], [1])}, {("toy-a", fab): 1})
    state = StartState()
    set_plan_start(mip, toy, req, start, state, feasible=True)
    out = pack_start(mip, toy, req, state, 10.0)
    assert "pack_objective" not in out
    assert current_plan(mip) == StartPlan({"a": (one["a"], [0]), "b": (one["b"], [1])}, {("toy-a", fab): 1}, [])


PACKED = {"runs": 0, "installed": 0}


@_settings(30)
@given(data=st.data())
def test_pack_plans_are_plans_never_below_the_brute_force_optimum(data: Any) -> None:
    # tiny instances of the brute-force test (fabric choice, owned servers, rentals, penalties, power, budget):
    # from no start, whatever pack_start installs is a plan of the full MIP priced as evaluate_fleet prices it,
    # and never below the optimum by enumeration
    cat, req = _tiny(data)
    pools = pools_of(cat, req)
    modes = job_modes(cat, req, pools=pools)
    if not len(modes) or any(not (modes["job"] == j.id).any() for j in req.jobs):
        return
    mip = build_fleet_model(cat, req, modes, pools)
    value = _pack_and_check(mip, cat, req, StartState())
    if value is None:
        return
    brute = _enumerate(cat, req)
    assert math.isfinite(brute) and value >= brute * (1 - 1e-6) - 1e-3


@_settings(25)
@given(data=st.data())
def test_pack_from_a_stacked_start_is_a_plan_never_below_the_optimum(data: Any) -> None:
    # 2-5 jobs of random sizes and windows on toy-a and toy-b, stacked in the first slots of their windows: packing
    # them onto one cluster needs the repair moves; its plan is a plan, never below fleet()'s exact optimum
    cat = toy_catalog()
    slots, jobs, objective = draw_toy_jobs(data)
    req = freq(slots=slots, node_counts=[1, 2, 3], objective=objective, jobs=jobs)
    pools = pools_of(cat, req)
    modes = job_modes(cat, req, pools=pools)
    mip = build_fleet_model(cat, req, modes, pools)
    ix = mip.index
    fab = pools.buy["toy-a"][0]
    chosen: dict[str, tuple[int, list[int]]] = {}
    usage = np.zeros(slots)
    for j in ix.by_job:
        on_a = ix.modes["server"].to_numpy() == "toy-a"
        ks = [k for k in ix.by_job[j] if on_a[k] and ix.modes.at[k, "fabric"] in (fab, "any")]
        k = data.draw(st.sampled_from(ks))
        sl = list(ix.window[j][: int(ix.modes.at[k, "slots_needed"])])
        chosen[j] = (int(k), sl)
        usage[sl] += int(ix.modes.at[k, "nodes"])
    state = StartState()
    set_plan_start(mip, cat, req, StartPlan(chosen, {("toy-a", fab): round(usage.max())}), state, feasible=True)
    value = _pack_and_check(mip, cat, req, state)
    if value is None:
        return
    exact = req.solver.model_copy(update={"time_limit_s": 60, "mip_rel_gap": 1e-9})
    best = fleet(req.model_copy(update={"solver": exact}), cat, explain=False)
    assert best.objective_value is not None
    assert value >= best.objective_value * (1 - 1e-6) - 1e-3


def test_pack_installed_plans_in_many_examples() -> None:
    # the property tests above are not vacuous (runs in file order)
    if PACKED["runs"] < 20:
        pytest.skip("runs only after the property tests above")
    assert PACKED["installed"] >= PACKED["runs"] // 4, PACKED


def test_squeeze_gives_its_solve_only_the_time_its_build_left(toy: Catalog) -> None:
    # squeeze_start builds a MIP per step, then solves it: the solve gets what is left of squeeze's limit after
    # that build (it got the time left before the build, so a slow build overran the whole call's limit at 50 jobs)
    req, mip, state = side_by_side_start(toy)
    real_build, real_solve = squeeze_mod.build_fleet_model, squeeze_mod.solve_model
    limits: list[float] = []

    def slow_build(*a: Any, **kw: Any) -> Any:
        time.sleep(0.6)
        return real_build(*a, **kw)

    def solve(model: Any, options: Any, *a: Any, **kw: Any) -> Any:
        limits.append(options.time_limit_s)
        return real_solve(model, options, *a, **kw)

    opts = req.solver.model_copy(update={"time_limit_s": 2.0})
    with (
        mock.patch.object(squeeze_mod, "build_fleet_model", slow_build),
        mock.patch.object(squeeze_mod, "solve_model", solve),
    ):
        squeeze_start(mip, toy, req, state, opts)
    assert limits and limits[0] <= 2.0 - 0.6


def test_pack_runs_a_penalised_job_before_one_that_can_wait(toy: Catalog) -> None:
    # one toy-a node, 4 slots: job b is due in slot 0 at 1,000 USD a slot late, job a may run until slot 3. The repair
    # search may leave a in slot 0 and b in slot 1 (1,000 USD late); laid out earliest due first, b runs in slot 0
    # and a after it, as the optimum does (12.50 USD, not 1,012.50)
    jobs = [
        {"id": "a", "model": "toy-model", "due_slot": 3},
        {"id": "b", "model": "toy-model", "due_slot": 0, "penalty_usd_per_slot": 1000.0},
    ]
    req = freq(slots=4, servers=["toy-a"], jobs=jobs, node_counts=[1])
    pools = pools_of(toy, req)
    mip = build_fleet_model(toy, req, job_modes(toy, req, pools=pools), pools)
    out = pack_start(mip, toy, req, StartState(), 10.0)
    plan = current_plan(mip)
    assert plan is not None and plan.chosen["b"][1] == [0] and plan.chosen["a"][1] != [0]
    best = fleet(req, toy).objective_value
    assert best is not None and out["pack_objective"] == pytest.approx(best, rel=1e-6)


def test_evaluate_fleet_refuses_a_plan_outside_a_window_short_of_slots_or_over_max_nodes(toy: Catalog) -> None:
    # the re-check every plan passes, the heuristics' plans too: the same valid one-node plan, then each rule broken
    # once -- a slot outside the job's window (due slot 1 of 2; no penalty), fewer slots than its mode needs, a job
    # without a mode, more nodes bought than max_nodes
    req, mip, one, fab = _two_jobs_on_toy_a(toy)
    ix = mip.index
    rows = {j: ix.modes.loc[k] for j, k in one.items()}
    assert all(int(r["slots_needed"]) == 1 for r in rows.values())
    kept: list[int] = []
    ok = evaluate_fleet(toy, req, ix.pools, rows, {"a": [0], "b": [1]}, {("toy-a", fab): 1}, kept)
    assert ok is not None
    wide = req.model_copy(update={"slots": 3})  # a third slot exists, outside both windows
    assert evaluate_fleet(toy, wide, ix.pools, rows, {"a": [0], "b": [2]}, {("toy-a", fab): 1}, kept) is None
    assert evaluate_fleet(toy, req, ix.pools, rows, {"a": [0], "b": []}, {("toy-a", fab): 1}, kept) is None
    assert evaluate_fleet(toy, req, ix.pools, {"a": rows["a"]}, {"a": [0], "b": [1]}, {("toy-a", fab): 1}, kept) is None
    small = req.model_copy(update={"max_nodes": 1})
    assert evaluate_fleet(toy, small, ix.pools, rows, {"a": [0], "b": [1]}, {("toy-a", fab): 2}, kept) is None
    assert evaluate_fleet(toy, small, ix.pools, rows, {"a": [0], "b": [1]}, {("toy-a", fab): 1}, kept) is not None


def test_pack_sizes_200_one_slot_jobs_due_in_slot_1_from_their_window_bound(toy: Catalog) -> None:
    # 200 toy-model jobs of one node-slot each (T(1) = 5.83 h < 6 h), all in slots 0..1 of 52, need 200 node-slots in
    # 2 slots: 100 nodes, and 100 nodes hold them (100 in slot 0, 100 in slot 1). The windowless fluid bound is
    # ceil(200 / 52) = 4, far below; the bound over the window [0, 1] is 100, so each option is packed once, at 100
    # nodes, within 2 s
    jobs = [{"id": f"j{i}", "model": "toy-model", "due_slot": 1} for i in range(200)]
    req = freq(slots=52, slot_hours=6.0, servers=["toy-a"], jobs=jobs, node_counts=[1, 2], max_nodes=4096)
    pools = pools_of(toy, req)
    mip = build_fleet_model(toy, req, job_modes(toy, req, pools=pools), pools)
    real = pack_mod.pack_cluster
    sizes: list[int] = []

    def counted(*a: Any, **kw: Any) -> Any:
        sizes.append(a[5])  # cap
        return real(*a, **kw)

    state = StartState()
    with mock.patch.object(pack_mod, "pack_cluster", counted):
        out = pack_start(mip, toy, req, state, 2.0)
    assert out["pack_nodes"] == 100 and sizes and set(sizes) == {100}
    _check_installed(mip, toy, req, out)
    # packed at its window bound, the size is proved the fewest (pack_size_bound); the proof's value bound is the
    # cluster at 100 nodes plus each job's least energy, never above the plan's value
    proof = state.pack_proof
    assert proof is not None
    assert out["pack_min_proved"] == 1.0 and proof.nodes == 100 and proof.server == "toy-a"
    plan = current_plan(mip)
    assert plan is not None
    value = plan_value(toy, req, mip.index, plan)
    assert value is not None and proof.bound <= value + 1e-6


def test_smallest_packing_gallops_up_then_bisects() -> None:
    # a search that packs from 77 nodes on, started at 4: 4, 5, 7, 11, 19, 35, 67, 131 (the step doubles), then
    # bisection of (67, 131]: 99, 83, 75, 79, 77, 76 -- 14 sizes tried, not the 74 of a climb one node at a time
    tried: list[int] = []

    def packs(n: int) -> str | None:
        tried.append(n)
        return f"packing at {n}" if n >= 77 else None

    assert smallest_packing(packs, 4, 4096, lambda: True) == (77, "packing at 77")
    assert tried == [4, 5, 7, 11, 19, 35, 67, 131, 99, 83, 75, 79, 77, 76]
    assert smallest_packing(packs, 4, 76, lambda: True) is None  # no size up to hi packs
    assert smallest_packing(packs, 4, 100, lambda: True) == (77, "packing at 77")  # hi tried last
    assert smallest_packing(packs, 80, 100, lambda: True) == (80, "packing at 80")
    assert smallest_packing(packs, 4, 4096, lambda: False) is None  # out of time before any size


def _packs_at(cap: int, choices: list[list[tuple[int, int, list[int]]]], slots: int) -> bool:
    """Whether one choice per job (nodes, d, window) has d slots of its window each such that no slot holds more than
    ``cap`` nodes: depth-first over every job's modes and slot subsets (brute force for tiny instances)."""
    usage = [0] * slots

    def place(i: int) -> bool:
        if i == len(choices):
            return True
        for n, d, win in choices[i]:
            for sl in itertools.combinations(win, d):
                if all(usage[t] + n <= cap for t in sl):
                    for t in sl:
                        usage[t] += n
                    ok = place(i + 1)
                    for t in sl:
                        usage[t] -= n
                    if ok:
                        return True
        return False

    return place(0)


@_settings(25)
@given(data=st.data())
def test_pack_size_bound_is_never_above_the_smallest_cluster_by_brute_force(data: Any) -> None:
    # 2-5 toy jobs of random sizes and windows, each 1-3 times: no cluster of one toy-a fabric with fewer nodes than
    # pack_size_bound runs every job (a packing of bound - 1 nodes is searched over every mode and slot subset and not
    # found), and the bound is never below the windowless fluid bound it replaced
    cat = toy_catalog()
    slots, jobs, objective = draw_toy_jobs(data)
    # identical jobs lift the bound above one or two nodes; at most 8 jobs in all, as the search below is exponential
    # (15 jobs take up to 18 s on some draws)
    copies = data.draw(st.integers(1, max(1, min(3, 8 // len(jobs)))))
    jobs = [{**j, "id": f"{j['id']}-{c}"} for j in jobs for c in range(copies)]
    req = freq(slots=slots, node_counts=[1, 2, 3], objective=objective, jobs=jobs, servers=["toy-a"])
    pools = pools_of(cat, req)
    modes = job_modes(cat, req, pools=pools)
    if any(not (modes["job"] == j["id"]).any() for j in jobs):
        return
    ix = build_fleet_model(cat, req, modes, pools).index
    fab = pools.buy["toy-a"][0]
    window = {j: np.asarray(ts, dtype=np.int64) for j, ts in ix.window.items()}
    cands = {
        j: [k for k in ks if ix.modes.at[k, "kind"] == "site" and ix.modes.at[k, "fabric"] in (fab, "any")]
        for j, ks in ix.by_job.items()
    }
    if any(not ks for ks in cands.values()):
        return
    nd = {
        j: sorted({(int(ix.modes.at[k, "nodes"]), int(ix.modes.at[k, "slots_needed"])) for k in ks})
        for j, ks in cands.items()
    }
    area = {j: min(n * d for n, d in pairs) for j, pairs in nd.items()}
    fewest = max(min(n for n, _d in pairs) for pairs in nd.values())
    lb = pack_size_bound(area, fewest, window)
    assert lb >= max(fewest, math.ceil(sum(area.values()) / slots))
    choices = [[(n, d, [int(t) for t in window[j]]) for n, d in nd[j]] for j in sorted(nd)]
    assert not _packs_at(lb - 1, choices, slots)


def test_pack_searches_no_option_whose_bound_is_not_below_the_plan_in_hand(toy: Catalog) -> None:
    # the start is already the one-node optimum (a in slot 0, b in slot 1). Any plan that runs both jobs on one toy-a
    # cluster has at least one node and each job's least energy: that bound (pack_options) equals the start's value,
    # so no option is searched at all, and the start stays
    req, mip, one, fab = _two_jobs_on_toy_a(toy)
    start = StartPlan({"a": (one["a"], [0]), "b": (one["b"], [1])}, {("toy-a", fab): 1})
    state = StartState()
    set_plan_start(mip, toy, req, start, state, feasible=True)
    value = plan_value(toy, req, mip.index, start)
    options = pack_options(mip, toy, req)
    assert options and all(o.size_bound == 1 for o in options)
    assert value is not None and min(o.bound for o in options) == pytest.approx(value, rel=1e-9)
    calls: list[int] = []
    real = pack_mod.pack_cluster

    def counted(*a: Any, **kw: Any) -> Any:
        calls.append(a[5])
        return real(*a, **kw)

    with mock.patch.object(pack_mod, "pack_cluster", counted):
        out = pack_start(mip, toy, req, state, 10.0)
    assert calls == [] and "pack_objective" not in out


def test_pack_start_with_no_time_left_bounds_and_packs_nothing(toy: Catalog) -> None:
    # bounding the options takes time too (0.3 s for 126 options at 50 jobs): it comes out of pack_start's limit.
    # Past its deadline pack_options bounds no option, and no time means no search
    req, mip, _one, _fab = _two_jobs_on_toy_a(toy)
    assert pack_options(mip, toy, req, deadline=0.0) == []
    assert len(pack_options(mip, toy, req)) >= 1
    assert pack_start(mip, toy, req, StartState(), 0.0) == {"pack_s": 0.0}


def _one_node_jobs() -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Two one-node one-slot jobs (modes 0 and 1): a may run in slot 0 or 1, b only in slot 0."""
    cands = {"a": np.asarray([0]), "b": np.asarray([1])}
    window = {"a": np.asarray([0, 1]), "b": np.asarray([0])}
    return cands, np.asarray([1, 1]), np.asarray([1, 1]), window


def test_pack_cluster_repairs_a_first_placement_and_gives_up_at_its_deadline() -> None:
    # placed in order, a takes slot 0 (free, earliest) and b, which may only run in slot 0, overloads it on one node:
    # the repair moves a to slot 1. With its deadline already passed, the search stops at its first repair move
    cands, nodes, d, window = _one_node_jobs()
    rng = np.random.default_rng(0)
    found = pack_cluster(cands, nodes, d, window, 2, 1, ["a", "b"], 400, rng)
    assert found == {"a": (0, [1]), "b": (1, [0])}
    assert pack_cluster(cands, nodes, d, window, 2, 1, ["a", "b"], 400, rng, deadline=0.0) is None
    # no repair is needed in the other order: the deadline does not matter
    assert pack_cluster(cands, nodes, d, window, 2, 1, ["b", "a"], 400, rng, deadline=0.0) == found


def test_a_packing_one_repair_search_may_miss_is_found_within_eight() -> None:
    # five jobs on 4 slots; brute force packs them on 6 nodes, not on 5. One search of 2,000 moves misses at 6 for 49
    # of 300 seeds (measured); eight fresh searches find it for every one of them -- here the first 40 seeds
    spec = {
        "j0": [(4, 2), (2, 3)],
        "j1": [(4, 1), (4, 1)],
        "j2": [(3, 2), (2, 1)],
        "j3": [(3, 1), (4, 1)],
        "j4": [(4, 1), (3, 1), (4, 1)],
    }
    win = {"j0": [0, 1, 2], "j1": [3], "j2": [1, 2], "j3": [1, 2, 3], "j4": [1]}
    nodes: list[int] = []
    d: list[int] = []
    cands: dict[str, np.ndarray] = {}
    for j, ms in spec.items():
        cands[j] = np.arange(len(nodes), len(nodes) + len(ms))
        nodes += [n for n, _ in ms]
        d += [x for _, x in ms]
    window = {j: np.asarray(w) for j, w in win.items()}
    choices = [[(nodes[k], d[k], win[j]) for k in cands[j]] for j in sorted(cands)]
    assert _packs_at(6, choices, 4) and not _packs_at(5, choices, 4)
    n_arr, d_arr = np.asarray(nodes), np.asarray(d)
    for seed in range(40):
        assert any(
            pack_cluster(cands, n_arr, d_arr, window, 4, 6, sorted(cands), 2000, np.random.default_rng([seed, retry]))
            is not None
            for retry in range(8)
        )


def _draw_packing(data: Any) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], list[int], list[int], int]:
    """2-6 jobs over 4 slots, each with 1-3 modes (nodes 1-4, slots 1..its window) and a window of consecutive
    slots: (modes of each job, window of each job, nodes and slots of each mode, the number of jobs)."""
    slots = 4
    n_jobs = data.draw(st.integers(2, 6))
    cands: dict[str, np.ndarray] = {}
    window: dict[str, np.ndarray] = {}
    nodes: list[int] = []
    d: list[int] = []
    for i in range(n_jobs):
        a = data.draw(st.integers(0, slots - 1))
        b = data.draw(st.integers(a, slots - 1))
        window[f"j{i}"] = np.arange(a, b + 1)
        ks = []
        for _ in range(data.draw(st.integers(1, 3))):
            ks.append(len(nodes))
            nodes.append(data.draw(st.integers(1, 4)))
            d.append(data.draw(st.integers(1, b - a + 1)))
        cands[f"j{i}"] = np.asarray(ks)
    return cands, window, nodes, d, n_jobs


def _assert_packing(
    packing: dict[str, tuple[int, list[int]]],
    cands: dict[str, np.ndarray],
    window: dict[str, np.ndarray],
    nodes: list[int],
    d: list[int],
    cap: int,
) -> None:
    """Every job in one of its modes on that many distinct slots of its window, no slot over ``cap`` nodes."""
    assert set(packing) == set(cands)
    usage = np.zeros(4)
    for j, (k, sl) in packing.items():
        assert k in cands[j] and len(set(sl)) == d[k] and set(sl) <= set(window[j].tolist())
        usage[sl] += nodes[k]
    assert usage.max() <= cap


@_settings(60)
@given(data=st.data())
def test_pack_cluster_packs_at_the_smallest_size_by_brute_force(data: Any) -> None:
    # 2-6 jobs, each with 1-3 modes (nodes 1-4, slots 1-3) and a window of consecutive slots in 4: every packing the
    # repair search returns is a packing (one of the job's modes, that many distinct slots of its window, no slot over
    # the size), and at the smallest size that packs (depth-first over every mode and slot subset) it finds one
    # within 8 fresh searches: the search is randomised and one search alone misses on some instances (38 of 200
    # seeds on one 5-job instance, about 1 in 6,000 random instances), so the test asks 8 -- a miss on all of them
    # at 19% each is ~2e-6 -- and never accepts a wrong packing
    slots = 4
    cands, window, nodes, d, n_jobs = _draw_packing(data)
    n_arr, d_arr = np.asarray(nodes), np.asarray(d)
    choices = [[(nodes[k], d[k], [int(t) for t in window[j]]) for k in cands[j]] for j in sorted(cands)]
    smallest = next(c for c in range(1, 4 * n_jobs + 1) if _packs_at(c, choices, slots))
    order = sorted(cands)
    seed = data.draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    assert pack_cluster(cands, n_arr, d_arr, window, slots, smallest - 1, order, 2000, rng) is None
    found = None
    for retry in range(8):
        rng = np.random.default_rng([seed, retry])
        found = pack_cluster(cands, n_arr, d_arr, window, slots, smallest, order, 2000, rng)
        if found is not None:
            break
    assert found is not None
    _assert_packing(found, cands, window, nodes, d, smallest)


@_settings(60)
@given(data=st.data())
def test_cluster_fits_answers_as_brute_force_does(data: Any) -> None:
    # the exact MIP of pack_start's cluster-size question (cluster_fits) against depth-first enumeration of every
    # mode and slot subset (_packs_at), on 2-6 jobs over 4 slots: packs exactly when brute force packs, and any
    # packing it returns is one (a mode of the job, that many distinct slots of its window, no slot over the size)
    slots = 4
    cands, window, nodes, d, _n_jobs = _draw_packing(data)
    choices = [[(nodes[k], d[k], [int(t) for t in window[j]]) for k in cands[j]] for j in sorted(cands)]
    cap = data.draw(st.integers(1, 12))
    fits, packing = cluster_fits(cands, np.asarray(nodes), np.asarray(d), window, cap, 30.0)
    assert fits is _packs_at(cap, choices, slots)
    if fits:
        assert packing is not None
        _assert_packing(packing, cands, window, nodes, d, cap)
    else:
        assert packing is None


def test_cluster_fits_proves_the_hand_derived_smallest_size() -> None:
    # a (1 node, slot 0 or 1), b (1 node, slot 0 only), c (3 nodes, slot 0 only): slot 0 holds b and c, 4 nodes,
    # so 3 nodes cannot run them (proved) and 4 can, with a in slot 1
    cands = {"a": np.asarray([0]), "b": np.asarray([1]), "c": np.asarray([2])}
    nodes, d = np.asarray([1, 1, 3]), np.asarray([1, 1, 1])
    window = {"a": np.asarray([0, 1]), "b": np.asarray([0]), "c": np.asarray([0])}
    assert cluster_fits(cands, nodes, d, window, 3, 30.0) == (False, None)
    fits, packing = cluster_fits(cands, nodes, d, window, 4, 30.0)
    assert fits is True and packing == {"a": (0, [1]), "b": (1, [0]), "c": (2, [0])}


@pytest.mark.parametrize("objective", ["cost", "energy", "carbon"])
def test_pack_start_proves_its_cluster_the_fewest_when_the_window_bound_is_below_it(
    toy: Catalog, objective: str
) -> None:
    # three 2-node one-slot toy jobs due in slot 1 of 2 (node_counts [2]): the window bound is
    # ceil(6 node-slots / 2 slots) = 3, but two jobs share a slot, so 4 nodes are the fewest. pack_start packs at 4,
    # its repair search fails at 3, HiGHS proves 3 infeasible, and the proof's bound (the cluster at 4 nodes plus
    # each job's least energy) is never above the plan's value, whatever the objective
    jobs = [{"id": f"j{i}", "model": "toy-model", "due_slot": 1} for i in range(3)]
    req = freq(slots=2, slot_hours=6.0, servers=["toy-a"], jobs=jobs, node_counts=[2], objective=objective)
    pools = pools_of(toy, req)
    mip = build_fleet_model(toy, req, job_modes(toy, req, pools=pools), pools)
    asked: list[tuple[int, bool | None]] = []
    real = pack_mod.cluster_fits

    def spy(*a: Any) -> Any:
        got = real(*a)
        asked.append((a[4], got[0]))
        return got

    state = StartState()
    with mock.patch.object(pack_mod, "cluster_fits", spy):
        out = pack_start(mip, toy, req, state, 10.0)
    assert (3, False) in asked and out["pack_nodes"] == 4 and out["pack_min_proved"] == 1.0
    proof = state.pack_proof
    plan = current_plan(mip)
    assert proof is not None and plan is not None
    value = plan_value(toy, req, mip.index, plan)
    assert proof.nodes == 4 and value is not None and proof.bound <= value + 1e-9 * abs(value)


def test_cluster_fits_decides_after_a_solve_on_more_threads() -> None:
    # HiGHS shares one thread pool per process; asking for another thread count than an earlier solve's (the fleet
    # LP on a machine of 4+ cores runs 2) fails the solve, and every question would come back undecided. In a child
    # process, so that this test's thread pool does not reach the others
    code = (
        "import highspy, numpy as np\n"
        "from planner.fleet.starts import cluster_fits\n"
        "h = highspy.Highs(); h.setOptionValue('output_flag', False); h.setOptionValue('threads', 2)\n"
        "h.addVars(2, np.zeros(2), np.ones(2)); h.changeColsCost(2, np.arange(2, dtype=np.int32), np.ones(2))\n"
        "h.addRow(1.0, 2.0, 2, np.arange(2, dtype=np.int32), np.ones(2)); h.run()\n"
        "c = {'a': np.asarray([0]), 'b': np.asarray([1]), 'c': np.asarray([2])}\n"
        "w = {'a': np.asarray([0, 1]), 'b': np.asarray([0]), 'c': np.asarray([0])}\n"
        "n, d = np.asarray([1, 1, 3]), np.asarray([1, 1, 1])\n"
        "print(cluster_fits(c, n, d, w, 3, 30.0)[0], cluster_fits(c, n, d, w, 4, 30.0)[0])\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "True"]
