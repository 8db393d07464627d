"""Capacity planning: `solve`, `pareto` and infeasibility explanations over the MIP of planner/plan/formulation.py.

Pipeline: request (validated) -> every configuration (allowed server, fabric, cap, site, buy|rent) at
**every integer node count** 1..N_max (+ the binding step) evaluated by the exact model in chunks (physics
cached) -> each chunk priced and reduced exactly to the rows that can answer one of the request's questions
(`_reduce_chunk`; a bought plan only where its run ends within its servers' life, `in_service`) -> MIP
(Pyomo) -> HiGHS -> chosen plan re-evaluated with `planner.evaluate` and checked against every constraint by
`check_plan` (a violating plan is cut off and the MIP re-solved; it is never returned) -> alternatives
(checked by the same function), binding constraints, solver report. When nothing fits, each requirement's
exact smallest relaxation, and when no single one suffices the smallest pairs.
The exactness argument is stated in planner/plan/formulation.py.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

from planner.checks.before_solve import check_request
from planner.checks.catalog import catalog_for, unknown_ids
from planner.checks.request import PlanRequest
from planner.checks.search import node_step
from planner.data import Catalog, load_catalog
from planner.errors import PlannerInputError
from planner.physics import (
    check_catalog,
    validated,
)
from planner.plan.explain import explain_infeasible
from planner.plan.fabric_ties import (
    likely_repeats,
    objective_ties,
    repeats,
    same_plan_on,
    tie_keys,
)
from planner.plan.formulation import OBJECTIVE_COLUMNS, Limits
from planner.plan.limits import (
    PLAN_METRIC,
    check_plan,
    limits_for,
)
from planner.plan.mip import solve_mip
from planner.plan.plans import Columns, plan_from_row, plans_from_rows
from planner.plan.reduce import Masks, option_codes, reduce_pool, scan, solve_reducer
from planner.plan.result import Plan, PlanResult
from planner.solver import SolverReport, SolverStatus

# ----------------------------------------------------------------------------------------------- candidates


# ------------------------------------------------------------------------------------------------ limits


# ------------------------------------------------------------------------------------------------- solving


MAX_CUTS = 50


def prepare_request(request: Any, catalog: Any) -> tuple[PlanRequest, Catalog]:
    """The request and catalog of a public entry point, checked: a dict is validated field by field, a wrong type
    or value is a PlannerInputError saying which (solve and pareto)."""
    try:
        req = validated(PlanRequest, request, "request")
    except PlannerInputError as exc:  # the ids the catalog lacks, said beside the schema's problems
        if not isinstance(request, dict):
            raise
        unknown = unknown_ids(load_catalog() if catalog is None else check_catalog(catalog), request)
        raise PlannerInputError("\n".join([str(exc), *(f"request: {line}" for line in unknown)])) from None
    cat = catalog_for(load_catalog() if catalog is None else check_catalog(catalog), req)
    check_request(cat, req)  # every check before a solve, as the CLI, the app and batch run them
    return req, cat


def solve(request: PlanRequest | dict[str, Any], catalog: Catalog | None = None) -> PlanResult:
    """Find the optimal capacity plan for the request (see module docstring and planner/plan/formulation.py).

    ``request``: a ``PlanRequest`` or a dict of its fields; ``catalog``: ``planner.load_catalog()`` [the shipped
    catalog, or ``$PLANNER_CATALOG``]. Returns a ``PlanResult``: ``status`` 'optimal', 'time_limit' or
    'infeasible'; ``plan`` (None when infeasible) and ``alternatives`` with units in their field names;
    ``summary()`` says what was decided, ``to_frame()`` is one row per plan. When nothing fits, ``explanation``
    gives each requirement's smallest relaxation (``relaxations``: given, needed, unit) -- an infeasible request
    is a result, not an exception. Bad input (an unknown id, a wrong type or value, caps outside every allowed
    GPU's range, a precision no allowed GPU has) raises PlannerInputError."""
    req, cat = prepare_request(request, catalog)
    timings: dict[str, float] = {}
    lim = limits_for(cat, req)
    column = OBJECTIVE_COLUMNS[req.objective]
    t0 = time.perf_counter()
    hi = req.max_nodes + node_step(req.max_nodes)  # the binding step of the node limit is scanned too
    kept, priced = scan(cat, req, 1, hi, solve_reducer(cat, req, lim, column), timings)
    timings["scan_s"] = time.perf_counter() - t0
    masks = Masks(kept, lim, req, cat) if len(kept) else None
    if masks is None or not masks.all.any():
        return explain_infeasible(cat, req, lim, kept, priced, hi, timings)
    pool = kept[masks.all].reset_index(drop=True)
    exclude: list[int] = []
    report: SolverReport | None = None
    plan: Plan | None = None
    chosen: int | None = None
    rows = Columns(pool)
    t1 = time.perf_counter()
    for _ in range(MAX_CUTS):
        pos, report = solve_mip(pool, lim, column, req.solver, exclude=exclude)
        if pos is None:
            break
        p = plan_from_row(cat, req, rows.row(pos))
        if not check_plan(p, req, cat, lim):
            plan, chosen = p, pos
            break
        exclude.append(pos)  # never return a plan the exact model rejects: cut it off and re-solve
    if plan is None or chosen is None or report is None:
        timings["solve_s"] = time.perf_counter() - t1
        if report is not None and report.status == SolverStatus.NO_SOLUTION:
            raise PlannerInputError(
                f"HiGHS found no plan within the time limit ({req.solver.time_limit_s} s); raise --time-limit"
            )
        return explain_infeasible(cat, req, lim, kept.iloc[0:0], priced, hi, timings)
    plan, chosen = first_of_ties(cat, req, lim, pool, rows, plan, chosen, column, exclude)
    timings["solve_s"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    alts = alternatives(cat, req, lim, pool, chosen, column, plan)
    timings["alternatives_s"] = time.perf_counter() - t2
    binding = binding_limits(kept, masks, float(rows[column][chosen]), column)
    status = "optimal" if report.status == SolverStatus.OPTIMAL else "time_limit"
    return PlanResult(
        request=req,
        status=status,
        plan=plan,
        objective=req.objective,
        objective_value=float(getattr(plan, PLAN_METRIC[req.objective])),
        binding=binding,
        solver=report,
        alternatives=alts,
        explanation=None,
        timings_s=timings,
    )


def first_of_ties(
    cat: Catalog,
    req: PlanRequest,
    lim: Limits,
    pool: pd.DataFrame,
    rows: Columns,
    plan: Plan,
    chosen: int,
    column: str,
    exclude: list[int],
) -> tuple[Plan, int]:
    """The plan among the MIP's optimum and the candidates that tie with it exactly on the objective
    (`objective_ties`): the first, by the other objectives (the cheapest, then the least energy, carbon and time),
    fewer nodes and the catalog's fabric order, that meets every requirement (`check_plan`), with its position in
    ``pool``. HiGHS returns one of several exact optima by its search path; this states which one is the plan. The
    MIP's own optimum meets every requirement, so it is the answer where no tie comes before it. A tie the fabric
    provably does not enter (``same_plan_on``: one node, the same figures) is the plan under the other fabric's
    name; any other is re-evaluated."""
    for pos in objective_ties(cat, pool, chosen, column, exclude):
        if pos == chosen:
            break
        p = same_plan_on(req, pool, chosen, pos, plan) or plan_from_row(cat, req, rows.row(pos))
        if not check_plan(p, req, cat, lim):
            return p, pos
    return plan, chosen


def alternatives(
    cat: Catalog, req: PlanRequest, lim: Limits, pool: pd.DataFrame, chosen: int, column: str, plan: Plan
) -> list[Plan]:
    """The next-best `req.alternatives` hardware options, then the best plan of each other GPU type not listed
    (``chosen``: the plan's position in ``pool``; ``plan``: the plan, re-evaluated).

    Each hardware option (server, fabric, cap, site, purchase) appears at most once, with its best node count.
    Every constraint involves only the chosen plan, so re-solving the MIP with the options found so far cut
    off (no-good cuts) returns exactly the next option in objective order of the presolved pool
    (`reduce_pool`): that order is used directly, equal objectives in the plan's order of ties (the other
    objectives, ``TIE_ORDER``, then fewer nodes, then the catalog's fabric order). Each alternative is
    re-evaluated by the exact model (`plans_from_rows`, one batched call) and checked by `check_plan`; one that
    fails is replaced by the next.

    An alternative is a different hardware choice: a plan that differs from the plan or from an alternative listed
    before it by the fabric or the power cap only, every figure the user sees equal (`same_choice`: time, power,
    energy, cost, carbon, layout, ... -- a one-node plan uses no fabric, a cap above the GPUs' draw under load does
    not bind: planner/plan/fabric_ties.py), is the same choice shown again and is replaced by the next as well.
    Where the fabric or the cap changes a figure, a price or the time, both are listed."""
    if req.alternatives == 0:
        return []
    best = reduce_pool(pool, column)
    keys = tie_keys(cat, pool, best, column)
    best = best[np.lexsort((*keys, pool[column].to_numpy(dtype=float)[best]))]
    codes = option_codes(pool)
    order = [int(i) for i in best[codes[best] != codes[chosen]]]
    gpu = pool["gpu"]
    gpu_of = dict(zip(order, gpu.iloc[order].astype(str).tolist(), strict=True))
    chosen_gpu = str(gpu.iloc[chosen])
    plans: dict[int, Plan] = {}
    failed: set[int] = set()  # check_plan rejects them
    rejected: set[int] = set()  # failed, or the same choice as a plan shown before them

    def pick(usable: list[int]) -> list[int]:
        """The first ``req.alternatives`` of ``usable``, then the first of each GPU type not shown."""
        listed = usable[: req.alternatives]
        shown = {chosen_gpu} | {gpu_of[i] for i in listed}
        for i in usable:
            if gpu_of[i] not in shown:
                shown.add(gpu_of[i])
                listed.append(i)
        return listed

    likely = likely_repeats(pool, chosen, order, column)
    while True:
        usable = [i for i in order if i not in rejected]
        listed = pick(usable)
        todo = [i for i in listed if i not in plans]
        if not todo:
            return [plans[i] for i in listed]
        # in the same batch: the rows listed if the likely repeats are repeats, and the likely repeats before them
        ahead = pick([i for i in usable if i in plans or i not in likely])
        top = ahead[: req.alternatives]
        upto = usable.index(top[-1]) + 1 if top else 0
        todo = list(dict.fromkeys(i for i in [*todo, *usable[:upto], *ahead] if i not in plans))
        for i, p in zip(todo, plans_from_rows(cat, req, pool.iloc[todo]), strict=True):
            plans[i] = p
            if check_plan(p, req, cat, lim):
                failed.add(i)
        rejected = failed | repeats(plan, [(i, plans[i]) for i in order if i in plans and i not in failed])


def binding_limits(kept: pd.DataFrame, m: Masks, best: float, column: str) -> list[str]:
    """A limit binds when relaxing it alone by the binding step (1%, at least one node / rack unit) admits a
    strictly better plan. `kept` holds, per hardware option, the best plan under each such relaxation."""
    obj = kept[column].to_numpy(dtype=float)
    out = []
    for k in m.given:
        ok = m.all_but(k) & m.relaxed[k]
        if ok.any() and float(obj[ok].min()) < best - 1e-9 * abs(best):
            out.append(k)
    return out


# ------------------------------------------------------------------------------------------ infeasibility


# ------------------------------------------------------------------------------------------------ pareto
