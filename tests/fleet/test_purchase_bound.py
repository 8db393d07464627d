"""The purchase-branching bound (planner/fleet/bound.py): never above the optimum, never below the root LP.

Toy world of conftest.py: one toy-model job on one toy-a node takes T(1) = 5.83 h, one 6 h slot; toy-a costs
10,000 USD; switches, NICs and cables are free.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.data import Catalog
from planner.fleet import FleetRequest, build_fleet_model, fleet, job_modes, pools_of, purchase_bound
from planner.physics import HOURS_PER_YEAR
from tests.fleet.test_fleet import _enumerate, _settings, _tiny, freq


def _model(cat: Catalog, req: FleetRequest) -> Any:
    """The fleet MIP's Pyomo model of the request."""
    pools = pools_of(cat, req)
    return build_fleet_model(cat, req, job_modes(cat, req, pools=pools), pools).model


def test_three_one_slot_jobs_in_two_slots_buy_two_nodes_not_one_and_a_half(toy: Catalog) -> None:
    # Three jobs of one node-slot each (T(1) = 5.83 h < 6 h), all in slots 0..1: 3 node-slots in 2 slots. The LP
    # relaxation buys 1.5 toy-a (node-slots row (12)); N <= 1 holds only 2 node-slots (infeasible), N >= 2 is
    # the optimum's purchase -- so one branch closes the gap: root < bound = optimum.
    req = freq(
        slots=2,
        slot_hours=6.0,
        servers=["toy-a"],
        node_counts=[1],
        jobs=[{"id": j, "model": "toy-model", "due_slot": 1} for j in ("a", "b", "c")],
    )
    best = fleet(req, toy)
    assert best.status == "optimal" and best.objective_value is not None
    assert best.totals["capex_usd"] == pytest.approx(20_000)
    res = purchase_bound(_model(toy, req), None, 30.0)
    assert res.complete and res.nodes == 3  # root, N <= 1 (infeasible), N >= 2
    # the root saves at least half a node's capex share (12 h of a 4-year life) and its idle energy
    assert res.root <= best.objective_value - 0.5 * 10_000 * 12.0 / (4 * HOURS_PER_YEAR) * (1 - 1e-9)
    assert res.bound == pytest.approx(best.objective_value, rel=1e-6, abs=1e-4)


@_settings(15)
@given(data=st.data(), leaf_mip=st.booleans())
def test_the_purchase_bound_lies_between_the_root_lp_and_the_optimum(data: Any, leaf_mip: bool) -> None:
    # brute force over every schedule and purchase (test_fleet._enumerate) is the optimum; the bound is valid
    # (<= it) and at least the root LP; with every leaf solved as a MIP the finished search proves the optimum
    cat, req = _tiny(data)
    brute = _enumerate(cat, req)
    pools = pools_of(cat, req)
    modes = job_modes(cat, req, pools=pools)
    if any(not len(modes) or not (modes["job"] == j.id).any() for j in req.jobs):
        assert math.isinf(brute)  # a job with no mode: no model to bound (fleet() reports it infeasible)
        return
    m = build_fleet_model(cat, req, modes, pools).model
    res = purchase_bound(m, None, 30.0, leaf_mip_s=30.0 if leaf_mip else 0.0)
    assert res.complete
    if math.isinf(res.root):  # the LP relaxation is infeasible: so is every plan
        assert math.isinf(brute) and math.isinf(res.bound)
        return
    assert res.bound >= res.root - 1e-6 * max(1.0, abs(res.root)) - 1e-6
    if math.isinf(brute):
        assert not leaf_mip or math.isinf(res.bound)  # every leaf MIP is infeasible
        return
    assert res.bound <= brute + 1e-6 * max(1.0, abs(brute)) + 1e-3
    if leaf_mip:
        assert res.bound == pytest.approx(brute, rel=1e-6, abs=1e-3)
        assert res.incumbent == pytest.approx(brute, rel=1e-6, abs=1e-3)


def test_on_ten_jobs_the_bound_never_exceeds_the_mip_optimum(toy: Catalog) -> None:
    # ten toy jobs (1-4 node-slots each) with staggered windows on toy-a / toy-b: HiGHS proves the optimum;
    # the purchase bound, stopped early or run to the end, stays at or below it, and at or above the root LP
    jobs = [
        {
            "id": f"j{i}",
            "model": "toy-model",
            "samples": 1e6 * (1 + i % 3),
            "release_slot": i % 3,
            "due_slot": min(5, i % 3 + 1 + i % 4),
        }
        for i in range(10)
    ]
    req = freq(slots=6, slot_hours=6.0, node_counts=[1, 2, 3, 4], jobs=jobs)
    best = fleet(req, toy)
    assert best.status == "optimal" and best.objective_value is not None
    m = _model(toy, req)
    for limit, leaf in ((0.5, 0.0), (30.0, 0.0), (30.0, 5.0)):
        res = purchase_bound(m, best.objective_value, limit, leaf_mip_s=leaf)
        assert res.root - 1e-6 <= res.bound <= best.objective_value * (1 + 1e-6) + 1e-3, (limit, leaf)


class _Replay:
    """A hypothesis ``data`` stand-in that returns recorded draws in order (replays a found example exactly)."""

    def __init__(self, draws: list[Any]) -> None:
        self.draws = list(draws)

    def draw(self, strategy: Any, label: Any = None) -> Any:
        return self.draws.pop(0)


def test_an_infeasible_lp_that_the_dual_simplex_leaves_unknown_is_proved_infeasible() -> None:
    # A draw of test_the_purchase_bound_lies_between_the_root_lp_and_the_optimum: one server type, a toy-cheap
    # fabric whose switches cost 6.4e-81 USD, two jobs due in the one 6-hour slot, two owned nodes that retire
    # within it, a 0.33 kW site. The LP is infeasible; the warm-started dual simplex without presolve ends 'Unknown'
    # on it, and the bound re-solves with presolve (not stopping at its root with complete False, root -inf).
    draws = [1, 27114.41940360533, 15929.233678469489, "month", 47.4820283362757, 2.00001, 624.1666927690313]
    draws += [6.392772871494956e-81, 241.34920561638233, 3716.4429772847634, 1, 6.0, 2, 0, 1000000.0, 0]
    draws += [87.29458427827647, 0, 2999999.9999999995, 0, None, True, "s0", 1.0826637845194451, 2, "toy-cheap", 1]
    draws += ["buy", "cost", None, 0.333738349333926]
    cat, req = _tiny(_Replay(draws))
    pools = pools_of(cat, req)
    modes = job_modes(cat, req, pools=pools)
    res = purchase_bound(build_fleet_model(cat, req, modes, pools).model, None, 30.0, leaf_mip_s=30.0)
    assert res.complete and math.isinf(res.root) and math.isinf(res.bound)
    assert math.isinf(_enumerate(cat, req))  # brute force: no plan either
