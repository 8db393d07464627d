"""Plans that differ only by the fabric (planner/plan/fabric_ties.py): a one-node plan uses no fabric, so its
candidates on the server's fabrics carry the same figures -- one hardware choice, shown once; where the fabric
changes a figure (more than one node, or owned servers cabled to one fabric) each fabric is its own choice.

Toy world of conftest.py with two fabrics, "toy-net" (free) and "toy-eth" (NICs at 10 USD and 1 W per port, used
only where a plan spans nodes: planner/physics/cost.py, power.py), both on toy-a (10,000 USD) and toy-b (20,000
USD). T(n) = 1000 (20/n + 1) s at cap 1.0 and 1000 (25/n + 1) s at cap 0.5 (tests/plan/test_solve.py); the run's
cost, capex x T / life + energy, grows with n, so a loose deadline gives one node.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import pytest

from planner.data import Catalog
from planner.plan import Plan, PlanRequest, pareto, solve
from planner.plan.fabric_ties import objective_ties, same_choice
from tests.conftest import toy_catalog, toy_server

H = 1 / 24.0  # one hour in days
solve_module = importlib.import_module("planner.plan.solve")  # the module (planner.plan.solve is its function)


def two_fabrics(order: tuple[str, str] = ("toy-net", "toy-eth")) -> Catalog:
    """The toy world with fabrics "toy-net" (free) and "toy-eth" (NICs at 10 USD and 1 W per port), listed in the
    catalog in ``order``; toy-a and toy-b on both."""
    base = toy_catalog(
        servers=[
            toy_server(fabrics=["toy-net", "toy-eth"]),
            toy_server(id="toy-b", name="Toy B", price_usd=20000.0, fabrics=["toy-net", "toy-eth"]),
        ]
    )
    net = base.fabric("toy-net")
    eth = net.model_copy(update={"id": "toy-eth", "nic_price_usd": 10.0, "nic_power_w": 1.0})
    by_id = {"toy-net": net, "toy-eth": eth}
    return base.replace(fabrics={f: by_id[f] for f in order})


def req(**kw: Any) -> PlanRequest:
    base: dict[str, Any] = {
        "model": "toy-model",
        "sites": ["clean"],
        "power_caps": [0.5, 1.0],
        "deadline_days": 1.0,
        "objective": "cost",
        "alternatives": 3,
    }
    return PlanRequest.model_validate({**base, **kw})


def rows(plans: list[Plan]) -> list[tuple[str, float, int, str]]:
    return [(p.server, p.power_cap, p.nodes, p.fabric) for p in plans]


def repeats(plans: list[Plan]) -> list[tuple[int, int]]:
    """Pairs (i, j) of plans equal in every figure that differ only by the fabric or the power cap."""
    return [(i, j) for j in range(len(plans)) for i in range(j) if same_choice(plans[i], plans[j])]


def test_a_one_node_plan_on_either_fabric_has_the_same_figures() -> None:
    # the data the rule rests on: one node buys no NIC, switch or cable and spans no nodes
    cat = two_fabrics()
    res = solve(req(servers=["toy-a"], power_caps=[1.0], fabrics=["toy-net"], alternatives=0), cat)
    other = solve(req(servers=["toy-a"], power_caps=[1.0], fabrics=["toy-eth"], alternatives=0), cat)
    assert res.plan is not None and other.plan is not None
    assert res.plan.nodes == other.plan.nodes == 1
    assert same_choice(res.plan, other.plan)
    assert res.plan.model_dump(exclude={"fabric", "estimate"}) == other.plan.model_dump(exclude={"fabric", "estimate"})


def test_a_one_node_plans_alternatives_do_not_repeat_a_plan_under_another_fabric() -> None:
    # Options in cost order, each at one node on either fabric (the two fabrics tie): toy-a cap 1.0 (the plan:
    # 5.83 h, 10,000 USD x 5.83 h / 4 years + 0.40 kWh x 1 USD/kWh = 2.07 USD), toy-a cap 0.5 (7.22 h, 2.39 USD),
    # toy-b cap 1.0 (3.73 USD), toy-b cap 0.5 (4.45 USD). Listed once each, on toy-net (first in the catalog); not
    # toy-a cap 1.0 again on toy-eth, nor toy-a cap 0.5 twice.
    res = solve(req(), two_fabrics())
    assert res.plan is not None and res.alternatives
    shown = [res.plan, *res.alternatives]
    assert repeats(shown) == []
    assert rows(shown) == [
        ("toy-a", 1.0, 1, "toy-net"),
        ("toy-a", 0.5, 1, "toy-net"),
        ("toy-b", 1.0, 1, "toy-net"),
        ("toy-b", 0.5, 1, "toy-net"),
    ]


def test_the_shipped_one_node_plan_lists_no_fabric_repeat() -> None:
    # the walk's case: 1 x mi350x-8 at cap 0.5 ties on its five fabrics (15.71 kWh); the alternatives listed them
    # three times with the plan's figures. The plan takes eth25, the first of them in catalog/fabrics.yaml.
    res = solve({"model": "llama3-8b", "tokens": 1e9, "deadline_days": 30, "alternatives": 3})
    assert res.plan is not None and res.plan.nodes == 1
    assert (res.plan.server, res.plan.fabric, res.plan.power_cap) == ("mi350x-8", "eth25", 0.5)
    assert repeats([res.plan, *res.alternatives]) == []
    head = [(a.server, a.power_cap) for a in res.alternatives[:3]]
    assert head == [("mi350x-8", 0.6), ("mi350x-8", 0.4), ("mi350x-8", 0.7)]


def test_a_cap_above_what_the_gpus_draw_is_not_listed_again_at_the_cap_above_it() -> None:
    # The walk's case: the cost plan of llama3-8b in 30 days (buy or rent) is 35 x mi350x-8 at cap 0.8; the same 35
    # nodes at caps 0.9 and 1.0 have equal figures (an MI350X draws 90% of its TDP while training: a cap of 90% or
    # more does not bind), and were the first two alternatives. Listed once, at the lower cap.
    res = solve({"model": "llama3-8b", "deadline_days": 30, "purchase": "either", "objective": "cost"})
    assert res.plan is not None and res.alternatives
    shown = [res.plan, *res.alternatives]
    assert repeats(shown) == []
    same_nodes = [(p.power_cap, p.time_to_train_h) for p in shown if (p.server, p.nodes) == (res.plan.server, 35)]
    caps = [c for c, _ in same_nodes]
    assert res.plan.server == "mi350x-8" and 0.9 in caps and 1.0 not in caps, same_nodes


def test_a_multi_node_plans_other_fabric_is_listed_when_it_is_next_best() -> None:
    # A 2 h deadline needs 4 nodes at cap 1.0 (T(4) = 6000 s). On toy-eth the 4 nodes add 4 NICs (40 USD of capex)
    # and 4 W: a higher cost and energy than toy-net, but far below toy-b's extra 40,000 USD of capex. So the plan is
    # 4 x toy-a on toy-net and the next best option the same servers on toy-eth, listed.
    res = solve(req(power_caps=[1.0], deadline_days=2 * H, alternatives=1), two_fabrics())
    assert res.plan is not None
    assert rows([res.plan]) == [("toy-a", 1.0, 4, "toy-net")]
    assert rows(res.alternatives) == [("toy-a", 1.0, 4, "toy-eth")]
    alt = res.alternatives[0]
    assert alt.cost_usd > res.plan.cost_usd and alt.facility_energy_kwh > res.plan.facility_energy_kwh
    assert not same_choice(res.plan, alt)


def test_a_one_node_plan_on_owned_servers_keeps_the_other_fabric_that_costs_more() -> None:
    # One owned toy-a cabled to toy-eth: the one-node plan on toy-eth runs on it (no capex: its cost is the energy,
    # about 0.40 USD); the same plan on toy-net buys a server (10,000 USD of capex). The fabric changes the figures,
    # so both are listed, the owned one first.
    owned = [{"server": "toy-a", "count": 1, "fabric": "toy-eth"}]
    res = solve(req(servers=["toy-a"], power_caps=[1.0], owned=owned), two_fabrics())
    assert res.plan is not None
    assert rows([res.plan, *res.alternatives]) == [("toy-a", 1.0, 1, "toy-eth"), ("toy-a", 1.0, 1, "toy-net")]
    assert res.plan.owned_nodes == 1 and res.plan.capex_usd == 0.0
    assert res.alternatives[0].capex_usd == pytest.approx(10000.0)


def mip_returns_the_last_tie(
    cat: Catalog, monkeypatch: pytest.MonkeyPatch, ties: Callable[..., list[int]] = objective_ties, what: str = "fabric"
) -> list[str]:
    """Make solve's MIP return, of the candidates that tie exactly with its optimum (``ties``), the last in their
    order -- HiGHS returns one of several exact optima by its search path; the ``what`` (fabric, server) of each it
    returned is appended to the list returned."""
    mip = solve_module.solve_mip
    returned: list[str] = []

    def last_tie(pool: Any, lim: Any, column: str, options: Any, exclude: Any = ()) -> Any:
        pos, report = mip(pool, lim, column, options, exclude=exclude)
        if pos is not None:
            pos = ties(cat, pool, pos, column, list(exclude))[-1]
            returned.append(str(pool[what].iloc[pos]))
        return pos, report

    monkeypatch.setattr(solve_module, "solve_mip", last_tie)
    return returned


@pytest.mark.parametrize("order", [("toy-net", "toy-eth"), ("toy-eth", "toy-net")])
def test_a_tie_between_fabrics_is_the_catalogs_first_fabric_whichever_tie_the_mip_returns(
    order: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # HiGHS returns one of several exact optima by its search path. Here the MIP is made to return the tie whose
    # fabric comes last in the catalog; the plan is still the one on the catalog's first fabric.
    cat = two_fabrics(order)
    returned = mip_returns_the_last_tie(cat, monkeypatch)
    res = solve(req(servers=["toy-a"], power_caps=[1.0], alternatives=0), cat)
    assert returned == [order[1]]
    assert res.plan is not None and (res.plan.nodes, res.plan.fabric) == (1, order[0])


@pytest.mark.parametrize("order", [("toy-net", "toy-eth"), ("toy-eth", "toy-net")])
def test_a_one_node_tie_taken_without_evaluating_it_again_is_the_plan_its_evaluation_gives(
    order: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the MIP returns the tie on the catalog's last fabric; the plan on the first is that plan under the other
    # fabric's name (fabric_ties.same_plan_on) -- equal, figure for figure, to the plan evaluated again from its row
    cat = two_fabrics(order)
    mip_returns_the_last_tie(cat, monkeypatch)
    request = req(servers=["toy-a"], power_caps=[1.0], alternatives=0)
    shortcut = solve(request, cat).plan
    monkeypatch.setattr(solve_module, "same_plan_on", lambda *a: None)
    evaluated = solve(request, cat).plan
    assert shortcut is not None and evaluated is not None
    assert (shortcut.nodes, shortcut.fabric, evaluated.fabric) == (1, order[0], order[0])
    assert same_choice(shortcut, evaluated)


@pytest.mark.parametrize("order", [("toy-net", "toy-eth"), ("toy-eth", "toy-net")])
def test_a_pareto_point_of_one_node_names_the_catalogs_first_fabric_as_solve_does(order: tuple[str, str]) -> None:
    cat = two_fabrics(order)
    request = req(servers=["toy-a"], power_caps=[1.0], alternatives=0)
    front = pareto(request, "cost", "energy", points=3, catalog=cat)
    one_node = front[front["nodes"] == 1]
    assert len(one_node) and set(one_node["fabric"].astype(str)) == {order[0]}
    plan = solve(request, cat).plan
    assert plan is not None and plan.fabric == order[0]
