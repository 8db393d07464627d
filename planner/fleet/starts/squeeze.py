"""A large-neighbourhood step on the start: buy one node fewer of the type that costs the most.

From the current start, the bought type p with the largest capex gets N_p <= n - 1 (n its nodes now), in a MIP
over a subset of the modes: the LP relaxation's support, the start's modes, each job's cheapest few by a standalone
estimate (capex share of its node-slots plus energy); the jobs that ran on p on two or more nodes keep only their
modes on p with the most nodes that fit n - 1, so that jobs that ran side by side on n nodes run one after another
on all of the fewer (with every mode on p kept, HiGHS finds no plan in the time such a step has). It is the full
MIP with modes left out and one row added, so each of its plans is a plan of the full MIP.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd
import pyomo.environ as pyo

from planner.data import Catalog
from planner.fleet.billing import owned_capex_usd
from planner.fleet.formulation import FleetMIP, build_fleet_model
from planner.fleet.request import FleetRequest
from planner.fleet.starts.state import StartPlan, StartState, current_plan, load_solution, set_plan_start
from planner.fleet.tuning import DEFAULT_TUNING, FleetTuning
from planner.physics import cost as cost_mod
from planner.solver import SolverOptions, solve_model


def squeeze_start(
    mip: FleetMIP,
    cat: Catalog,
    req: FleetRequest,
    state: StartState,
    options: SolverOptions,
    tuning: FleetTuning = DEFAULT_TUNING,
) -> dict[str, float]:
    """A better start by squeezing the most expensive bought type by one node (module docstring); a squeezed plan
    replaces the start only when cheaper, and then the next type is squeezed (a type squeezed with success is tried
    again after the others), within ``options.time_limit_s`` in all (each MIP's build comes out of it too).
    Returns squeeze_s, squeeze_objective (the start after it, reported only when it is known to be a plan: a
    solution of the restricted or a squeeze MIP; the greedy start leaves power and budget unchecked) and
    squeeze_steps (squeezes that made it cheaper)."""
    t0 = time.perf_counter()
    out: dict[str, float] = {"squeeze_steps": 0.0}
    base = _base_modes(cat, req, mip, state, tuning)
    tried: set[str] = set()
    again: set[str] = set()
    while True:
        left = options.time_limit_s - (time.perf_counter() - t0)
        plan = current_plan(mip)
        if plan is None or left < tuning.min_solve_s or not state.has_start:
            break
        # a start not known to be a plan (the greedy's: power and budget unchecked) is beaten by any plan
        value = state.value(mip) if state.feasible else math.inf
        capex = _capex_per_type(cat, mip, plan)
        todo = sorted((usd, p) for p, (usd, _n) in capex.items() if p not in tried)
        if not todo and again:  # a type squeezed with success is tried again after the others
            tried -= again
            again.clear()
            todo = sorted((usd, p) for p, (usd, _n) in capex.items() if p not in tried)
        if not todo:
            break
        p = todo[-1][1]
        cap = capex[p][1] - 1
        sub_idx = np.flatnonzero(_squeeze_modes(mip, plan, base, p, cap))
        sub = build_fleet_model(cat, req, mip.index.modes.iloc[sub_idx], mip.index.pools)
        sub.model.squeeze = pyo.Constraint(expr=pyo.quicksum(sub.model.N[p, f] for f in mip.index.pools.buy[p]) <= cap)
        left = options.time_limit_s - (time.perf_counter() - t0)  # the build above came out of it
        if left < tuning.min_solve_s:
            break
        solved = solve_model(sub.model, options.model_copy(update={"time_limit_s": left}))
        tried.add(p)
        obj = solved.report.objective
        if not solved.report.status.has_solution or obj is None or obj >= value - 1e-6 * max(1.0, abs(obj)):
            continue
        load_solution(sub.model, solved)
        found = current_plan(sub)
        if found is None:
            continue
        chosen = {j: (int(sub_idx[k]), slots) for j, (k, slots) in found.chosen.items()}
        set_plan_start(mip, cat, req, StartPlan(chosen, found.bought, found.kept), state, feasible=True)
        out["squeeze_steps"] += 1
        again.add(p)
    out["squeeze_s"] = time.perf_counter() - t0
    if state.has_start and state.feasible:
        out["squeeze_objective"] = state.value(mip)
    return out


def _base_modes(cat: Catalog, req: FleetRequest, mip: FleetMIP, state: StartState, tuning: FleetTuning) -> np.ndarray:
    """The modes every squeeze MIP holds: each job's ``tuning.squeeze_top_modes`` cheapest by a standalone estimate
    (capex share of its node-slots plus energy) and the LP relaxation's support (``state.lp_z``)."""
    modes = mip.index.modes
    site = cat.site(req.site)
    share = req.slots * req.slot_hours / (req.life_years * cost_mod.HOURS_PER_YEAR)
    price = np.asarray([cat.server(p).price_usd or 0.0 for p in modes["server"]])
    nodes = modes["nodes"].to_numpy(np.int64)
    weight = site.electricity_usd_per_kwh if req.objective == "cost" else 1.0
    money = 1.0 if req.objective == "cost" else 0.0
    estimate = money * share * price * nodes * modes["slots_needed"].to_numpy() / req.slots
    estimate = estimate + weight * modes["energy_coef_kwh"].to_numpy(float)
    rank = pd.Series(estimate).groupby(modes["job"].to_numpy()).rank(method="first").to_numpy()
    base = rank <= tuning.squeeze_top_modes
    if state.lp_z is not None:
        base |= state.lp_z > tuning.restricted_support
    return np.asarray(base, dtype=bool)


def _capex_per_type(cat: Catalog, mip: FleetMIP, plan: StartPlan) -> dict[str, tuple[float, int]]:
    """(capex, nodes bought) of every type the plan buys, over its fabrics."""
    capex: dict[str, tuple[float, int]] = {}
    pools = mip.index.pools
    kept = plan.kept if plan.kept is not None else [e.count for e in pools.owned]
    for (p, f), n in plan.bought.items():
        usd = owned_capex_usd(cat, p, f, pools.serving_on(p, f), n, pools.kept_on(p, f, kept))[0]
        old = capex.get(p, (0.0, 0))
        capex[p] = (old[0] + usd, old[1] + n)
    return capex


def _squeeze_modes(mip: FleetMIP, plan: StartPlan, base: np.ndarray, p: str, cap: int) -> np.ndarray:
    """Which modes the MIP squeezing type p to ``cap`` bought nodes holds: the jobs that ran on p on two or more
    nodes only their modes on p with the most nodes that fit the cap (they run one after another on all of them);
    every other job its base modes and its start mode."""
    ix = mip.index
    modes = ix.modes
    nodes = modes["nodes"].to_numpy(np.int64)
    keep = base.copy()
    keep[[k for k, _s in plan.chosen.values()]] = True
    limit = cap + sum(e.count for e in ix.pools.owned if e.server == p)
    for j, (k, _s) in plan.chosen.items():
        if modes.at[k, "server"] != p or modes.at[k, "kind"] != "site" or nodes[k] < 2:
            continue
        ks = np.asarray([q for q in ix.by_job[j] if modes.at[q, "server"] == p and modes.at[q, "kind"] == "site"])
        fit = ks[nodes[ks] <= limit]
        if len(fit):
            keep[ix.by_job[j]] = False
            keep[fit[nodes[fit] == nodes[fit].max()]] = True
    return keep
