"""Single-job planning: the request, candidate configurations, the MIP formulation, the solve, alternatives,
explanations of infeasibility and Pareto fronts."""

from __future__ import annotations

from planner.checks import Objective, OwnedServers, PlanRequest
from planner.plan.formulation import OBJECTIVE_COLUMNS
from planner.plan.optimize import (
    PLAN_METRIC,
    Plan,
    PlanResult,
    Relaxation,
    ceil_sig,
    check_plan,
    node_ladder,
    pareto,
    purchase_text,
    relaxation_horizon,
    solve,
)

__all__ = [
    "OBJECTIVE_COLUMNS",
    "PLAN_METRIC",
    "Objective",
    "OwnedServers",
    "Plan",
    "PlanRequest",
    "PlanResult",
    "Relaxation",
    "ceil_sig",
    "check_plan",
    "node_ladder",
    "pareto",
    "purchase_text",
    "relaxation_horizon",
    "solve",
]
