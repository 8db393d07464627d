"""A plan is priced in the precision its request asks for: the plan `solve` returns is the exact model's figure
for its own configuration in that precision (planner.evaluate), and alternatives likewise."""

from __future__ import annotations

import math

import pytest

from planner import Configuration, evaluate, load_catalog
from planner.data import Catalog
from planner.plan import PlanRequest, solve


@pytest.fixture(scope="module")
def shipped() -> Catalog:
    return load_catalog()


def _config(plan: object, req: PlanRequest, precision: str) -> Configuration:
    return Configuration(
        model=req.model,
        server=plan.server,  # type: ignore[attr-defined]
        nodes=plan.nodes,  # type: ignore[attr-defined]
        fabric=plan.fabric,  # type: ignore[attr-defined]
        power_cap=plan.power_cap,  # type: ignore[attr-defined]
        samples=req.samples,
        precision=precision,
        site=plan.site,  # type: ignore[attr-defined]
        purchase=plan.purchase,  # type: ignore[attr-defined]
        life_years=req.life_years,
    )


@pytest.mark.parametrize(
    ("precision", "server"),
    [("fp16", "dgx-h100"), ("bf16", "dgx-h100"), ("fp8", "dgx-h100"), ("tf32", "dgx-h100"), ("fp32", "dgx-h100"),
     ("fp4", "hgx-b200")],
)  # fmt: skip
def test_a_plan_and_its_alternatives_are_the_exact_model_in_the_requested_precision(
    shipped: Catalog, precision: str, server: str
) -> None:
    """fp16 on H100 gives DP504 and 1.0742 h at 63 nodes where bf16 gives DP252 and 1.1190 h: a plan re-priced in
    bf16 for an fp16 request would be 4.2% slower than the configuration it names, and a deadline between the
    two would be called infeasible although the plan meets it."""
    req = PlanRequest(
        model="llama3-8b", samples=2e6, objective="time", servers=[server], max_nodes=64, precision=precision
    )
    res = solve(req, shipped)
    assert res.plan is not None
    for plan in [res.plan, *res.alternatives]:
        est = evaluate(shipped, _config(plan, req, precision))
        assert math.isclose(plan.time_to_train_h, est.time_to_train_h, rel_tol=1e-9), (plan.nodes, plan.layout)
        assert math.isclose(plan.facility_energy_kwh, est.facility_energy_kwh, rel_tol=1e-9)
        assert math.isclose(plan.cost_usd, est.cost_usd, rel_tol=1e-9)
        assert plan.layout == est.layout


def test_an_fp16_deadline_the_fp16_plan_meets_is_feasible(shipped: Catalog) -> None:
    """1.09 h lies between the fp16 plan's 1.0742 h and the 1.1190 h of the same cluster computing in bf16."""
    req = PlanRequest(model="llama3-8b", samples=2e6, objective="energy", servers=["dgx-h100"], max_nodes=64,
                      precision="fp16", deadline_days=1.09 / 24)  # fmt: skip
    res = solve(req, shipped)
    assert res.status != "infeasible" and res.plan is not None
    assert res.plan.time_to_train_h <= 1.09 * (1 + 1e-9)
