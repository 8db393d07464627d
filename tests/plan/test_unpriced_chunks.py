"""Chunks of node counts an explanation need not price (planner/plan/reduce.py ``physics_may_meet``): a physics
chunk none of whose rows meets the deadline, the power limit at one of the request's sites and the rack units holds
no candidate meeting the limits, so the scan for the least node count beyond the limit skips it unpriced -- and
explains every infeasible request exactly as when it prices every chunk."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest

from planner.checks.request import PlanRequest
from planner.data import Catalog
from planner.plan import candidates, solve
from planner.plan.formulation import Limits
from planner.plan.limits import limits_for

reduce = importlib.import_module("planner.plan.reduce")
explain = importlib.import_module("planner.plan.explain")

INFEASIBLE = [
    # needs more nodes than allowed, found beyond the limit
    dict(model="llama3-8b", tokens=1e11, deadline_days=0.1, objective="energy", max_nodes=2),
    # the deadline cannot be met within the site's power envelope at any node count
    dict(model="gpt3-175b", tokens=3e11, deadline_days=1, objective="cost", max_nodes=64),
    dict(model="llama3-70b", tokens=1e13, deadline_days=2, objective="energy", max_nodes=128, purchase="rent"),
    # rack units and a power limit of the request's own
    dict(model="llama3-8b", tokens=1e13, deadline_days=1, objective="carbon", max_nodes=16, max_rack_units=40),
    dict(model="llama3-8b", tokens=1e12, deadline_days=0.5, objective="time", max_nodes=8, power_kw=200.0),
    dict(model="resnet50", samples=1e10, deadline_days=0.01, objective="cost", max_nodes=4, purchase="either"),
]


def result(res: Any) -> dict[str, Any]:
    """A result's content, without its timings."""
    out: dict[str, Any] = res.model_dump(exclude={"timings_s"})
    return out


@pytest.mark.parametrize("request_", INFEASIBLE)
def test_an_explanation_is_the_same_with_the_chunks_the_physics_rules_out_left_unpriced(
    shipped: Catalog, request_: dict[str, Any], pricings: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    skipping = solve(request_, shipped)
    assert skipping.plan is None and skipping.explanation is not None
    skipped = len(pricings)
    monkeypatch.setattr(explain, "physics_may_meet", lambda *args: True)
    candidates._PRICED.clear()
    pricings.clear()
    assert result(solve(request_, shipped)) == result(skipping)
    assert len(pricings) >= skipped


def test_the_scan_beyond_the_node_limit_prices_no_chunk_where_the_deadline_cannot_be_met(
    shipped: Catalog, pricings: list[int]
) -> None:
    res = solve(INFEASIBLE[1], shipped)
    assert res.explanation is not None
    assert max(pricings) <= 64 + 8  # nothing beyond the node limit and its binding step was priced


@pytest.mark.parametrize("request_", INFEASIBLE)
def test_a_chunk_the_physics_rules_out_holds_no_candidate_meeting_the_limits(
    shipped: Catalog, request_: dict[str, Any]
) -> None:
    """Every chunk up to the relaxation horizon, under the limits without the node limit and with each of the
    deadline and the power limit loosened or tightened: where ``physics_may_meet`` is False, no priced candidate
    meets every limit (``Masks.all``); the condition is exact where it is the only limit."""
    req = PlanRequest.model_validate(request_)
    base = limits_for(shipped, req)
    horizon = explain.relaxation_horizon(req.max_nodes)
    variants: list[Limits] = []
    for factor in (0.01, 0.5, 1.0, 4.0, 100.0):
        d = None if base.deadline_h is None else base.deadline_h * factor
        p = None if base.power_kw is None else base.power_kw * factor
        variants.append(Limits(**{**base.__dict__, "max_nodes": None, "deadline_h": d, "power_kw": p}))
    ruled_out = 0
    for phys in candidates.physics_chunks(shipped, req, 1, horizon):
        cand = candidates.price_chunk(shipped, req, phys, keep=False)
        for lim in variants:
            if not reduce.physics_may_meet(shipped, req, lim, phys):
                ruled_out += 1
                assert not reduce.Masks(cand, lim, req, shipped).all.any()
        deadline_only = Limits(**{**base.__dict__, "max_nodes": None, "power_kw": None, "max_rack_units": None})
        if base.deadline_h is not None:
            hours = cand["time_to_train_h"].to_numpy(dtype=float)
            meets = bool(np.any(hours <= base.deadline_h * (1 + 1e-9)))
            assert reduce.physics_may_meet(shipped, req, deadline_only, phys) == meets
    assert ruled_out > 0
