"""Plans that tie exactly on the objective (planner/plan/fabric_ties.py ``objective_ties``): HiGHS returns one of
several exact optima by its search path; the plan is the first by the other objectives -- the cheapest, then the
least energy, carbon and time -- then fewer nodes, then the catalog's fabric order, whichever optimum the MIP
returned. Alternatives of equal objective come in the same order."""

from __future__ import annotations

import pytest

import planner
from planner.data import Catalog
from planner.plan import solve
from planner.plan.fabric_ties import objective_ties
from tests.plan.test_fabric_ties import mip_returns_the_last_tie


@pytest.fixture(scope="module")
def boards() -> Catalog:
    """Two copies of dgx-h100, the same board and host power under two prices, the dearer listed first."""
    cat = planner.load_catalog()
    h100 = cat.server("dgx-h100")
    price = h100.price_usd or 0.0
    copies = {
        "h100-dear": h100.model_copy(update={"id": "h100-dear", "price_usd": 1.2 * price}),
        "h100-cheap": h100.model_copy(update={"id": "h100-cheap", "price_usd": 0.8 * price}),
    }
    return cat.replace(servers={**cat.servers, **copies})


def test_of_two_copies_of_a_board_at_equal_energy_the_plan_is_the_cheaper(
    boards: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    returned = mip_returns_the_last_tie(boards, monkeypatch, objective_ties, "server")
    request = dict(model="llama3-8b", tokens=1e12, deadline_days=30, servers=["h100-dear", "h100-cheap"])
    res = solve({**request, "objective": "energy", "alternatives": 1, "max_nodes": 16}, boards)
    assert returned == ["h100-dear"]  # the MIP returned the dearer copy
    assert res.plan is not None and res.plan.server == "h100-cheap"
    alt = res.alternatives[0]
    assert (alt.server, alt.facility_energy_kwh) == ("h100-dear", res.plan.facility_energy_kwh)
    assert alt.cost_usd > res.plan.cost_usd


def test_of_rented_plans_at_equal_cost_the_plan_uses_the_least_energy(
    shipped: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rent is paid in whole billing periods and includes the network: fabrics and caps of one node count can cost
    exactly the same, and differ in energy."""
    returned = mip_returns_the_last_tie(shipped, monkeypatch, objective_ties)
    res = solve(
        dict(
            model="llama3-8b",
            tokens=1e12,
            deadline_days=30,
            servers=["dgx-h100"],
            purchase="rent",
            objective="cost",
            alternatives=5,
            max_nodes=16,
        ),
        shipped,
    )
    assert res.plan is not None and returned and returned[0] != res.plan.fabric  # the MIP returned another tie
    same_cost = [a for a in res.alternatives if a.cost_usd == res.plan.cost_usd]
    assert same_cost  # the plan's ties are listed among its alternatives
    assert all(a.facility_energy_kwh > res.plan.facility_energy_kwh for a in same_cost)
    energies = [a.facility_energy_kwh for a in same_cost]
    assert energies == sorted(energies)  # alternatives of equal cost: least energy first
