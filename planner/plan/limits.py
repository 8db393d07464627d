"""The request's limits (deadline, budget, power envelope, nodes, rack units) and the one definition of meeting them;
check_plan re-checks a returned plan against every requirement."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from planner.checks.hardware import allowed_servers
from planner.checks.owned import in_service
from planner.checks.request import PlanRequest
from planner.checks.search import BINDING_STEP, node_step
from planner.data import Catalog
from planner.physics import Work, compute, run_time, work_from
from planner.plan.formulation import REL_TOL, Limits
from planner.plan.result import Plan

LIMIT_NAMES = ("deadline", "budget", "power", "nodes", "rack")


def limits_for(catalog: Catalog, req: PlanRequest) -> Limits:
    power = req.power_kw if req.power_kw is not None else max(catalog.site(s).power_envelope_kw for s in req.sites)
    return Limits(
        deadline_h=None if req.deadline_days is None else req.deadline_days * 24.0,
        budget_usd=req.budget_usd,
        budget_kind=req.budget_kind,
        power_kw=power,
        max_nodes=req.max_nodes,
        max_rack_units=req.max_rack_units,
    )


def limit_columns(lim: Limits) -> dict[str, str]:
    """The candidate column each limit bounds."""
    return {
        "deadline": "time_to_train_h",
        "budget": lim.budget_column(),
        "power": "facility_power_kw",
        "nodes": "nodes",
        "rack": "rack_units",
    }


def limit_bounds(cand: pd.DataFrame, lim: Limits, req: PlanRequest, cat: Catalog) -> dict[str, Any]:
    """Right-hand side of each limit for the candidates: None (not limited), or (bound, rows) -- one bound for
    every candidate (rows None), or the power limit when the request sets none: each site's envelope (bound, an
    array over the table's site categories) and each candidate's site (rows, indices into it)."""
    out: dict[str, Any] = {
        "deadline": lim.deadline_h,
        "budget": lim.budget_usd,
        "power": lim.power_kw,
        "nodes": lim.max_nodes,
        "rack": lim.max_rack_units,
    }
    out = {k: None if v is None else (v, None) for k, v in out.items()}
    if req.power_kw is None and len(cand):
        site = cand["site"].cat
        env = np.asarray([cat.site(str(s)).power_envelope_kw for s in site.categories], dtype=float)
        out["power"] = (env, np.asarray(site.codes))
    return out


def threshold(bound: Any, name: str, relaxed: bool = False) -> Any:
    """The largest value that meets limit `name` of `bound` (relaxed: by the binding step): `within` is
    value <= threshold. Integer limits are exact; the others allow a relative 1e-9 for rounding."""
    if name in ("nodes", "rack"):
        return bound + (node_step(int(bound)) if relaxed else 0)
    return bound * ((1 + BINDING_STEP) if relaxed else 1.0) * (1 + REL_TOL)


def within(value: Any, bound: Any, name: str, relaxed: bool = False) -> Any:
    """value <= bound for limit `name` (relaxed: by the binding step): value <= ``threshold(bound, name, relaxed)``.
    The one definition of meeting a limit, for tables and plans."""
    return value <= threshold(bound, name, relaxed)


PLAN_METRIC = {"energy": "facility_energy_kwh", "cost": "cost_usd", "carbon": "carbon_kg", "time": "time_to_train_h"}


PLAN_LIMIT_FIELDS = {
    "deadline": "time_to_train_h",
    "power": "facility_power_kw",
    "nodes": "nodes",
    "rack": "rack_units",
}


def check_plan(plan: Plan, req: PlanRequest, catalog: Catalog, lim: Limits | None = None) -> list[str]:
    """Every requirement of the request that a (re-evaluated) plan breaks; [] = the plan is feasible.

    The one check used for the MIP's plan, every alternative and the tests: memory fit, allowed hardware /
    site / purchase mode, availability (a price), a bought plan's run within its servers' life (in_service),
    deadline, budget, power envelope (the request's or the plan's site's), node limit and rack units."""
    lim = lim or limits_for(catalog, req)
    bad: list[str] = []
    if not plan.estimate.fits_memory:
        bad.append("memory")
    server = catalog.server(plan.server)
    if (
        plan.server not in allowed_servers(catalog, req)
        or plan.fabric not in server.fabrics
        or (req.fabrics is not None and plan.fabric not in req.fabrics)
        or not any(math.isclose(plan.power_cap, c, rel_tol=1e-9) for c in req.power_caps)
    ):
        bad.append("hardware")
    if plan.site not in req.sites or plan.purchase not in purchases_of(req):
        bad.append("site/purchase")
    if not (math.isfinite(plan.cost_usd) and math.isfinite(plan.upfront_usd)):
        bad.append("availability")
    if plan.purchase == "buy" and not in_service(0.0, plan.time_to_train_h, req.life_years):
        bad.append("life")
    values = {k: float(getattr(plan, f)) for k, f in PLAN_LIMIT_FIELDS.items()}
    values["budget"] = plan.upfront_usd if lim.budget_kind == "upfront" else plan.cost_usd
    envelope = req.power_kw if req.power_kw is not None else catalog.site(plan.site).power_envelope_kw
    rhs = {
        "deadline": lim.deadline_h,
        "budget": lim.budget_usd,
        "power": envelope,
        "nodes": lim.max_nodes,
        "rack": lim.max_rack_units,
    }
    for k in LIMIT_NAMES:
        if rhs[k] is not None and not within(values[k], rhs[k], k):
            bad.append(k)
    return bad


def purchases_of(req: PlanRequest) -> tuple[str, ...]:
    return ("buy", "rent") if req.purchase == "either" else (req.purchase,)


def samples_of(catalog: Catalog, req: PlanRequest) -> float | None:
    return work_from(catalog.workload(req.model), req.samples, req.tokens, req.epochs)


def work_of(catalog: Catalog, req: PlanRequest, run_terms: bool = True) -> Work:
    """What the request trains as the model's ``Work``: samples, batch and precision, and (``run_terms``) the run's
    start-up and evaluations (``evaluation_samples_of``). Without them it is the physics every start-up and
    evaluation shares (plan.candidates adds them when it prices)."""
    return Work(
        samples_of(catalog, req),
        req.global_batch,
        req.precision,
        startup_s=req.startup_s if run_terms else 0.0,
        evaluation_samples=evaluation_samples_of(catalog, req) if run_terms else 0.0,
    )


def evaluation_samples_of(catalog: Catalog, req: PlanRequest) -> float:
    """The request's evaluations in training-sample equivalents (run_time.evaluation_sample_equivalents)."""
    wl = catalog.workload(req.model)
    return run_time.evaluation_sample_equivalents(
        req.evaluations, req.evaluation_samples, compute.forward_flops_share(wl)
    )
