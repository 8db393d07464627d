"""Rentals are billed in whole billing periods of their offer (planner/physics/cost.py): hand-derived cases on the
shipped catalog's offers, a monthly dedicated server and an hourly cloud GPU server."""

from __future__ import annotations

import math

import pytest

from planner.data import Catalog, Configuration
from planner.physics import cost, evaluate


def test_billed_periods_by_hand() -> None:
    assert cost.billed_periods(36.0, cost.BILLING_PERIOD_H["month"]) == 1  # 1.5 days of a monthly offer
    assert cost.billed_periods(2.5, 1.0) == 3
    assert cost.billed_periods(3.0, 1.0) == 3  # exactly k periods pay k
    assert cost.billed_periods(0.01, 24.0) == 1
    assert cost.billed_periods(731.0, 730.0) == 2
    assert math.isinf(float(cost.billed_periods(math.inf, 1.0)))


def test_rent_usd_by_hand() -> None:
    # two RTX 4000 workstations at USD 260 per month for 1.5 days: two whole months
    assert cost.rent_usd(2, 260.0, 36.0, 730.0) == pytest.approx(520.0)
    # an hourly offer of USD 730 per month (= USD 1 per hour) for 2.5 h: three hours per node
    assert cost.rent_usd(4, 730.0, 2.5, 1.0) == pytest.approx(12.0)
    # a daily offer for 30 h: two days of 730 x 24 / 730 = USD 24
    assert cost.rent_usd(1, 730.0, 30.0, 24.0) == pytest.approx(48.0)


def _evaluate_for_hours(cat: Catalog, server: str, nodes: int, hours: float, model: str = "resnet50") -> float:
    """The rent of a run of about ``hours`` (time to train is linear in the amount of work)."""
    probe = evaluate(cat, Configuration(model=model, server=server, nodes=nodes, purchase="rent", samples=1e6))
    samples = 1e6 * hours / probe.time_to_train_h
    est = evaluate(cat, Configuration(model=model, server=server, nodes=nodes, purchase="rent", samples=samples))
    assert est.time_to_train_h == pytest.approx(hours, rel=1e-6)
    return est.cost_usd


def test_a_monthly_offer_used_for_one_and_a_half_days_costs_one_month(shipped: Catalog) -> None:
    srv = shipped.server("rental-i5-13500-rtx4000")
    assert srv.rent_billing_period == "month" and srv.rent_usd_per_month == 260
    assert _evaluate_for_hours(shipped, srv.id, 2, 36.0) == pytest.approx(2 * 260.0)
    assert _evaluate_for_hours(shipped, srv.id, 2, 800.0) == pytest.approx(2 * 2 * 260.0)  # 800 h > one month


def test_an_hourly_offer_costs_its_hours(shipped: Catalog) -> None:
    srv = shipped.server("dgx-h100")
    assert srv.rent_billing_period == "hour" and srv.rent_usd_per_month is not None
    per_hour = srv.rent_usd_per_month / 730.0
    assert _evaluate_for_hours(shipped, srv.id, 2, 2.5) == pytest.approx(2 * 3 * per_hour)
    assert _evaluate_for_hours(shipped, srv.id, 2, 36.0) == pytest.approx(2 * 36 * per_hour)


def test_rented_cloud_gpus_run_at_tdp_when_their_cap_is_not_settable(shipped: Catalog) -> None:
    from planner.plan import PlanRequest, solve

    assert not shipped.server("dgx-h100").power_cap_settable
    res = solve(PlanRequest(model="llama3-8b", tokens=1e11, deadline_days=20, purchase="rent", alternatives=3), shipped)
    assert res.plan is not None
    for p in [res.plan, *res.alternatives]:
        if not shipped.server(p.server).power_cap_settable:
            assert p.power_cap == 1.0
