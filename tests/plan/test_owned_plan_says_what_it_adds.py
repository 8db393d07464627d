"""A brownfield `planner solve --owned`: the plan says what it ADDS to the owned servers.

A plan that runs on 4 owned nodes and buys nothing says 'nothing to buy: runs on 4 owned nodes' on the command line
and the app's card -- 'buy at us-colo' would tell the user to buy servers they have -- and the alternatives tables
count the owned nodes. Owned servers past their service life are said in the terms of the interface they were
given in (a flag, an app label, a field name).
"""

from __future__ import annotations

from typing import Any

import pytest

from planner.cli.plan import render_result
from planner.data import Catalog
from planner.plan import PlanRequest, PlanResult, purchase_text, solve
from planner.present import alternatives_frame, plan_card

JOB = {"model": "llama3-8b", "tokens": 1e11, "deadline_days": 30, "gpus": ["A100"], "objective": "cost"}


@pytest.fixture(scope="module")
def brownfield(shipped: Catalog) -> PlanResult:
    """4 owned DGX A100 (no capex) carry a 10^11-token Llama-3 8B run within 30 days: the cheapest plan, by cost,
    runs on them and buys nothing."""
    return solve(PlanRequest(**JOB, owned=[{"server": "dgx-a100-80gb", "count": 4}]), shipped)


def test_a_plan_on_owned_servers_only_says_nothing_to_buy(brownfield: PlanResult) -> None:
    p = brownfield.plan
    assert p is not None and p.owned_nodes == p.nodes == 4 and p.upfront_usd == 0
    text = render_result(brownfield)
    head = text.splitlines()[1]
    assert head.endswith("nothing to buy: runs on 4 owned nodes at us-colo"), head
    assert "buy at" not in head
    assert plan_card(brownfield)["Purchase"] == "nothing to buy: runs on 4 owned nodes at us-colo"
    assert plan_card(brownfield)["Owned servers"] == "4 used, 0 new"  # no '0 unused (0 kW idle if left on)'


def test_the_alternatives_say_their_owned_nodes(brownfield: PlanResult) -> None:
    df = alternatives_frame(brownfield)
    assert list(df.columns).index("owned_nodes") == list(df.columns).index("nodes") + 1
    every = [brownfield.plan, *brownfield.alternatives]
    assert list(df["owned_nodes"]) == [a.owned_nodes for a in every if a is not None]
    header = next(line for line in render_result(brownfield).splitlines() if line.startswith("server "))
    assert "owned_nodes" in header


class _Plan:
    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)


@pytest.mark.parametrize(
    ("purchase", "nodes", "owned", "text"),
    [
        ("buy", 92, 64, "buy 28 new nodes (+ 64 owned) at us-colo"),
        ("buy", 65, 64, "buy 1 new node (+ 64 owned) at us-colo"),
        ("buy", 1, 1, "nothing to buy: runs on 1 owned node at us-colo"),
        ("buy", 8, 0, "buy at us-colo"),
        ("rent", 8, 0, "rent at us-colo"),
    ],
)
def test_purchase_text(purchase: str, nodes: int, owned: int, text: str) -> None:
    assert purchase_text(_Plan(purchase=purchase, nodes=nodes, owned_nodes=owned, site="us-colo")) == text


def test_without_owned_servers_the_tables_are_unchanged(shipped: Catalog) -> None:
    res = solve(PlanRequest(**JOB, alternatives=1), shipped)
    assert "owned_nodes" not in alternatives_frame(res).columns
    assert render_result(res).splitlines()[1].endswith("buy at us-colo")


@pytest.mark.parametrize(
    ("style", "said", "not_said"),
    [
        ("cli", "(--life-years; raise it", "life_years"),
        ("app", "(the service life of bought servers; raise it", "--life-years"),
        ("fields", "(life_years; raise it", "--life-years"),
    ],
)
def test_owned_servers_past_their_life_are_said_in_the_terms_of_where_they_were_given(
    shipped: Catalog, style: str, said: str, not_said: str
) -> None:
    """The note names the service life in the terms of the interface the request came from: '--life-years' on the
    command line, the app's label in the app, 'life_years' in a batch row -- never a flag the app or a batch file
    does not have."""
    from planner.plan import plan_notes

    req = PlanRequest(**JOB, owned=[{"server": "dgx-a100-80gb", "count": 4, "age_years": 9}])
    plan = solve(req, shipped).plan
    assert plan is not None and plan.owned_nodes == 0
    (note,) = [n for n in plan_notes(shipped, req, plan, style=style) if "owned" in n]
    assert "9 years old, past the end of their service at 4 years" in note and said in note and not_said not in note
