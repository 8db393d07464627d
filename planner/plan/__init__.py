"""Single-job planning, as a pipeline of modules.

    request (planner.checks) -> candidates (every configuration's physics, priced) -> reduce (exactly to the rows
    that can answer a question of the request) -> formulation + mip (the MIP, HiGHS) -> plans (the chosen rows
    re-evaluated) -> limits.check_plan (every requirement re-checked) -> result (PlanResult)

``solve`` runs it; ``pareto`` sweeps two objectives over the same candidates; ``explain`` says, for a request with
no plan, each requirement's smallest relaxation.
"""

from __future__ import annotations

from planner.checks import Objective, OwnedServers, PlanRequest
from planner.plan.explain import relaxation_horizon
from planner.plan.formulation import OBJECTIVE_COLUMNS
from planner.plan.limits import PLAN_METRIC, check_plan, within, work_of
from planner.plan.notes import batch_limit_notes, owned_notes, owned_retiring_notes, plan_notes
from planner.plan.pareto import pareto
from planner.plan.result import (
    OBJECTIVE_UNITS,
    Explanation,
    Plan,
    PlanResult,
    Relaxation,
    purchase_text,
    run_terms_text,
)
from planner.plan.solve import solve

__all__ = [
    "OBJECTIVE_COLUMNS",
    "OBJECTIVE_UNITS",
    "PLAN_METRIC",
    "Explanation",
    "Objective",
    "OwnedServers",
    "Plan",
    "PlanRequest",
    "PlanResult",
    "Relaxation",
    "batch_limit_notes",
    "check_plan",
    "owned_notes",
    "owned_retiring_notes",
    "pareto",
    "plan_notes",
    "purchase_text",
    "relaxation_horizon",
    "run_terms_text",
    "solve",
    "within",
    "work_of",
]
