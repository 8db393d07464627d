"""A start from the LP relaxation: the MIP restricted to the modes the LP uses."""

from __future__ import annotations

import time

import numpy as np

from planner.fleet.formulation import FleetMIP
from planner.fleet.starts.state import StartState, load_solution
from planner.fleet.tuning import DEFAULT_TUNING, FleetTuning
from planner.solver import SolverOptions, SolverStatus, solve_model


def restricted_start(
    mip: FleetMIP, state: StartState, options: SolverOptions, tuning: FleetTuning = DEFAULT_TUNING
) -> dict[str, float]:
    """A better starting solution: solve the LP relaxation (within ``options.time_limit_s``, without presolve and
    without a start), then the MIP restricted to the modes the LP uses (z > ``tuning.restricted_support``) and the
    modes of the current start (the greedy plan), with ``tuning.restricted_share`` of the time limit left after
    the LP. Every solution of the restricted MIP is a solution of the full MIP (the other z are fixed at 0, a value
    they may take), so HiGHS gets it as a start and checks it; the full MIP is then solved from it and its bound,
    gap and optimality are HiGHS's own on the full model. The LP's z go to ``state.lp_z``. Returns the seconds
    spent in each solve (lp_s, restricted_s) and the figures (start_objective: the start it began from, lp_bound,
    lp_optimal, restricted_objective)."""
    m = mip.model
    t0 = time.perf_counter()
    out = {"start_objective": state.value(mip)} if state.has_start else {}
    lp = solve_model(m, options.model_copy(update={"presolve": False}), relax=True)
    out["lp_s"] = time.perf_counter() - t0
    if "z" not in lp.values or lp.report.objective is None:
        return out
    out["lp_bound"] = lp.report.objective
    out["lp_optimal"] = float(lp.report.status is SolverStatus.OPTIMAL)
    state.lp_z = lp.values["z"]
    keep = state.lp_z > tuning.restricted_support
    if state.has_start:
        keep |= np.asarray([(m.z[k].value or 0.0) > 0.5 for k in m.M])
    fixed = [k for k in m.M if not keep[k]]
    for k in fixed:
        m.z[k].fix(0)
    t1 = time.perf_counter()
    try:
        rest = options.time_limit_s - out["lp_s"]
        limit = max(tuning.min_solve_s, tuning.restricted_share * rest)
        sub = solve_model(m, options.model_copy(update={"time_limit_s": limit}))
    finally:
        for k in fixed:
            m.z[k].unfix()
    out["restricted_s"] = time.perf_counter() - t1
    if sub.report.status.has_solution and sub.report.objective is not None:
        load_solution(m, sub)
        state.start_set(mip, feasible=True)  # a solution of the restricted MIP is a plan of the full MIP
        out["restricted_objective"] = sub.report.objective
    return out
