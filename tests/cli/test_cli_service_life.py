"""A bought plan must end within its servers' service life (--life-years), as owned servers must.

A bought run that outlasts the life is not a plan (the owned-server rule, `in_service`): a plan's hardware share
(capex x T / life) never exceeds its capex (`planner solve --model llama3-405b --tokens 15e12 --deadline-days 6000
--max-nodes 1` buys no GB200 NVL72 rack to run for 15.9 years), relaxations never ask for a deadline past the life of
what would be bought, a deadline past it that only a rental can meet says so, and `evaluate` of such a run exits 1.

Toy world (tests/conftest.py): T(n) = steps x (20/n + 1) s on n toy-a nodes (price $10,000, rent $1 per node-hour).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from planner.data import Catalog
from planner.physics import cost
from planner.plan import PlanRequest, check_plan, solve
from tests import brute
from tests.conftest import toy_catalog, toy_server

from .test_cli_input_errors import planner_process

LIFE_4H = 4.0 / cost.HOURS_PER_YEAR  # a 4-hour life: T(1) = 5.83 h outlasts it, T(2) = 3.06 h does not


def _toy(**kw: Any) -> PlanRequest:
    base: dict[str, Any] = {"model": "toy-model", "sites": ["clean"], "power_caps": [1.0], "alternatives": 0}
    return PlanRequest.model_validate({**base, **kw})


def _cat() -> Catalog:
    return toy_catalog(servers=[toy_server()])


def test_a_bought_run_longer_than_the_life_is_not_a_plan_and_the_relaxation_asks_for_nodes() -> None:
    # One node runs 21,000 s = 5.83 h > a 4 h life (before: the plan, with a hardware share of 10,000 x 5.83 / 4 =
    # $14,583 > the $10,000 capex). Two nodes end in 3.06 h: the smallest relaxation is 2 nodes; no deadline helps.
    cat, r = _cat(), _toy(max_nodes=1, deadline_days=1.0, life_years=LIFE_4H)
    res = solve(r, cat)
    assert res.plan is None and res.explanation is not None
    relax = {x.requirement: x.needed for x in res.explanation.relaxations}
    assert relax == {"nodes": 2}
    assert not brute.check(cat, r, res).problems
    # with two nodes allowed, the plan is the 2-node one and its hardware share is below the capex
    res = solve(r.model_copy(update={"max_nodes": 2}), cat)
    assert res.plan is not None and res.plan.nodes == 2 and check_plan(res.plan, r, cat) == ["nodes"]
    hardware = res.plan.estimate.cost_breakdown_usd["hardware"]
    assert res.plan.capex_usd == 20_000 and res.plan.time_to_train_h == pytest.approx(11_000 / 3600, rel=1e-4)
    assert hardware == pytest.approx(20_000 * res.plan.time_to_train_h / 4.0) and hardware < res.plan.capex_usd


def test_no_deadline_relaxation_past_the_life_of_what_would_be_bought() -> None:
    # 2e10 samples = 2e7 steps: T(1) = 13.3, T(2) = 6.97, T(4) = 3.80 years; life 4 years; at most 2 nodes. No
    # deadline alone suffices (2,546 days, 6.97 years on 2 bought nodes, would outlast the life); every deadline
    # stated (alone or in a pair) is within the 4-year life, and brute force agrees.
    cat, r = _cat(), _toy(samples=2e10, max_nodes=2, deadline_days=30)
    res = solve(r, cat)
    assert res.plan is None and res.explanation is not None
    assert "deadline" not in {x.requirement for x in res.explanation.relaxations}
    stated = [x for p in res.explanation.pairs for x in p.relaxations if x.requirement == "deadline"]
    stated += [x for x in res.explanation.relaxations if x.requirement == "deadline"]
    assert stated and all(x.needed <= 4 * 365.25 for x in stated)
    assert not brute.check(cat, r, res).problems


def test_a_deadline_only_a_rental_can_meet_says_so_in_years() -> None:
    # The same work on one node, buying or renting: only the rental can run 13.3 years (2e7 x 21 s = 4.2e8 s).
    cat, r = _cat(), _toy(samples=2e10, max_nodes=1, deadline_days=30, purchase="either")
    res = solve(r, cat)
    assert res.explanation is not None
    (d,) = [x for x in res.explanation.relaxations if x.requirement == "deadline"]
    assert d.needed == pytest.approx(4.2e8 / 86_400, rel=1e-4)
    past_life = r"\(13\.3 years, past the 4-year life of bought servers: on rented servers only; you gave "
    assert re.search(past_life, d.message)
    assert not brute.check(cat, r, res).problems


def test_when_every_fitting_configuration_outlasts_the_life_the_message_says_so() -> None:
    # Up to 64 nodes (the explanation's horizon) every count takes ~0.8 years (> 2e7 steps x 1.3 s) > a 0.5-year
    # life: the message says so and names the fastest configuration, not GPU memory.
    cat, r = _cat(), _toy(samples=2e10, max_nodes=1, deadline_days=30, life_years=0.5)
    res = solve(r, cat)
    assert res.plan is None and res.explanation is not None
    msg = res.explanation.message
    assert "runs longer than the servers' 0.5-year service life" in msg and "GPU memory" not in msg, msg
    # the fastest configuration named is brute force's fastest bought one up to 64 nodes (with a life long enough)
    every = brute.table(cat, r.model_copy(update={"life_years": 15.0, "purchase": "buy"}), 1, 64)
    best = every.loc[every["time_to_train_h"].idxmin()]
    years = best["time_to_train_h"] / cost.HOURS_PER_YEAR
    assert f"the fastest, {best['nodes']} x toy-a, takes {years:.3g} years" in msg, msg
    # more nodes are advised only where the fastest uses the most searched: above it, every count was slower
    assert ("more nodes (--max-nodes)" in msg) == (best["nodes"] >= 64), msg


def test_more_nodes_are_not_advised_when_the_fastest_configuration_uses_fewer_than_were_searched() -> None:
    """1e30 tokens of Llama 3 8B: the fastest configuration up to 4,096 nodes uses 454 (the recipe's batch limit
    stops more from helping), so the message advises faster GPUs, less work or renting -- not more nodes."""
    res = solve(PlanRequest(model="llama3-8b", tokens=1e30, deadline_days=30))
    assert res.plan is None and res.explanation is not None
    msg = res.explanation.message
    assert "searched up to 4,096 nodes" in msg and "the fastest, 454 x gb300-nvl72" in msg, msg
    assert "--max-nodes" not in msg and "Allow faster GPUs, less work, or renting (--either)." in msg


def test_evaluate_of_a_bought_run_past_the_life_exits_1_and_says_why() -> None:
    # Llama 3 8B on 1e15 tokens on one DGX H100: centuries. Bought: not a plan (exit 1); rented: a (long) rental.
    args = ["evaluate", "--model", "llama3-8b", "--server", "dgx-h100", "--nodes", "1", "--tokens", "1e15", "--json"]
    p = planner_process(*args)
    assert p.returncode == 1, p.stderr
    d = json.loads(p.stdout)
    assert d["fits_memory"] is True and d["within_service_life"] is False
    assert "longer than the bought servers' service life (--life-years 4)" in p.stderr and "Traceback" not in p.stderr
    p = planner_process(*args, "--rent")
    assert p.returncode == 0 and json.loads(p.stdout)["within_service_life"] is True, p.stderr


def test_owned_servers_that_retire_before_the_run_ends_are_said_not_silently_unused() -> None:
    # 4 owned toy-a, 1 hour before the end of their 4-year life; the fastest run takes T(4) = 6,000 s = 1.67 h, so
    # no plan can use them: a note says when they leave service and that the run would end after it.
    from planner.plan import OwnedServers, plan_notes

    old = OwnedServers(server="toy-a", count=4, age_years=4 - 1 / cost.HOURS_PER_YEAR)
    cat, r = _cat(), _toy(max_nodes=4, deadline_days=1.0, objective="time", owned=[old])
    res = solve(r, cat)
    assert res.plan is not None and res.plan.owned_nodes == 0 and res.plan.owned_unused_nodes == 4
    notes = plan_notes(cat, r, res.plan)
    assert any("the 4 owned toy-a on toy-net leave service in 0.0417 days" in n for n in notes), notes
    assert any("before this plan's 0.0694-day run would end" in n for n in notes), notes
    # owned servers that serve the whole run get no such note
    r = r.model_copy(update={"owned": [old.model_copy(update={"age_years": 1.0})]})
    res = solve(r, cat)
    assert res.plan is not None and res.plan.owned_nodes == 4
    assert not any("leave service" in n for n in plan_notes(cat, r, res.plan))
