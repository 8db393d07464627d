"""Fleet planning: many jobs over time on bought, owned and rented servers, as one MIP with its start heuristics.

The pipeline, one module per step: ``request`` (what is asked) -> ``pools`` (what capacity exists) -> ``modes``
(how each job may run, from the exact model) -> ``formulation`` (the MIP) -> ``starts`` (start heuristics, one per
module) -> ``run`` (``fleet()``: the time budget, HiGHS, the explanation) -> ``extract`` (the plan read back) ->
``result`` (``FleetPlan``). ``billing`` and ``evaluate`` price rent, capex and whole decisions; ``tuning`` holds
the knobs (``FleetTuning``); ``bound`` is a purchase-branching lower bound the benchmarks use.
"""

from __future__ import annotations

from planner.fleet.billing import billed_per_job, billing_blocks, billing_period_h, job_rent_usd, period_price_usd
from planner.fleet.bound import purchase_bound
from planner.fleet.evaluate import FleetEvaluation, evaluate_fleet, objective_weights
from planner.fleet.formulation import CUT_FAMILIES, FleetMIP, Index, build_fleet_model, network_envelope
from planner.fleet.modes import ANY_FABRIC, job_modes, job_window, pareto_mask
from planner.fleet.pools import Pools, pools_of
from planner.fleet.request import FleetRequest, Job, Owned, check_fleet_ids, load_fleet_request
from planner.fleet.result import AssignmentRow, FleetPlan, PurchaseRow, ScheduleRow
from planner.fleet.run import fleet
from planner.fleet.starts import PackProof, StartPlan, StartState, improve_start, set_greedy_start
from planner.fleet.tuning import DEFAULT_TUNING, FleetTuning

__all__ = [
    "ANY_FABRIC",
    "CUT_FAMILIES",
    "DEFAULT_TUNING",
    "AssignmentRow",
    "FleetEvaluation",
    "FleetMIP",
    "FleetPlan",
    "FleetRequest",
    "FleetTuning",
    "Index",
    "Job",
    "Owned",
    "PackProof",
    "Pools",
    "PurchaseRow",
    "ScheduleRow",
    "StartPlan",
    "StartState",
    "billed_per_job",
    "billing_blocks",
    "billing_period_h",
    "build_fleet_model",
    "check_fleet_ids",
    "evaluate_fleet",
    "fleet",
    "improve_start",
    "job_modes",
    "job_rent_usd",
    "job_window",
    "load_fleet_request",
    "network_envelope",
    "objective_weights",
    "pareto_mask",
    "period_price_usd",
    "pools_of",
    "purchase_bound",
    "set_greedy_start",
]
