"""Pareto fronts of two objectives over the same exact candidates as solve: each point a plan, checked like solve's."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from planner.checks.request import Objective, PlanRequest
from planner.data import Catalog
from planner.errors import PlannerInputError
from planner.plan.candidates import run_terms_h
from planner.plan.fabric_ties import fabric_rank
from planner.plan.formulation import OBJECTIVE_COLUMNS
from planner.plan.limits import limits_for
from planner.plan.plans import plan_from_row
from planner.plan.reduce import Masks, frontier, scan
from planner.plan.result import OBJECTIVE_UNITS
from planner.plan.solve import prepare_request, solve, solve_mip


def pareto(
    request: PlanRequest | dict[str, Any],
    x: Objective = "cost",
    y: Objective = "energy",
    points: int = 8,
    catalog: Catalog | None = None,
) -> pd.DataFrame:
    """Pareto front between two objectives by the epsilon-constraint method: min x s.t. y <= eps.

    The candidates are the plans at every integer node count that meet every requirement, reduced exactly to
    their (x, y) non-dominated set; each point is the MIP optimum of its epsilon problem over that set, hence a
    non-dominated plan of the whole space. Of candidates at the same point (a one-node plan on several fabrics),
    the set keeps the one on the catalog's first fabric, as ``solve`` names a plan's.

    ``x``, ``y``: two of energy, cost, carbon, time; ``points``: epsilon values to solve, a whole number >= 2 [8].
    Returns one row per distinct optimal plan: the columns named ``x`` and ``y`` hold the objectives in their
    units (energy: facility kWh, cost: USD, carbon: kgCO2e, time: hours) and ``epsilon`` the limit put on ``y``
    (y's unit); ``front.attrs["units"]`` maps each of them to its unit (``planner.present.charts.pareto_table`` renames
    them with units, as ``planner pareto`` prints them). No feasible plan raises PlannerInputError with the
    smallest relaxation."""
    for name, v in (("x", x), ("y", y)):
        if v not in OBJECTIVE_COLUMNS:
            raise PlannerInputError(f"pareto {name} must be one of {', '.join(OBJECTIVE_COLUMNS)} (got {v!r})")
    if x == y:
        raise PlannerInputError("pareto needs two different objectives")
    if isinstance(points, bool) or not isinstance(points, int | np.integer) or points < 2:
        raise PlannerInputError(f"pareto points must be a whole number >= 2 (got {points!r})")
    req, cat = prepare_request(request, catalog)
    lim = limits_for(cat, req)
    xc, yc = OBJECTIVE_COLUMNS[x], OBJECTIVE_COLUMNS[y]

    def reducer(cand: pd.DataFrame) -> np.ndarray:
        m = Masks(cand, lim, req, cat)
        x_, y_ = cand[xc].to_numpy(dtype=float), cand[yc].to_numpy(dtype=float)
        return frontier(x_, y_, m.all, fabric_rank(cat, cand))

    timings: dict[str, float] = {}
    kept, _ = scan(cat, req, 1, req.max_nodes, reducer, timings)
    front_idx = (
        frontier(
            kept[xc].to_numpy(dtype=float),
            kept[yc].to_numpy(dtype=float),
            Masks(kept, lim, req, cat).all,
            fabric_rank(cat, kept),
        )
        if len(kept)
        else np.zeros(0, dtype=np.int64)
    )
    if not front_idx.size:
        res = solve(req.model_copy(update={"alternatives": 0}), cat)
        raise PlannerInputError(res.explanation.message if res.explanation else "no feasible plan")
    pool = kept.iloc[front_idx].reset_index(drop=True)
    y_min, y_max = float(pool[yc].min()), float(pool[yc].iloc[0])  # pool is x ascending: row 0 has the least x
    has_terms = bool(req.startup_s or req.evaluations)

    def run_terms(r: pd.Series) -> dict[str, float]:
        """A point's time to train in its terms, where the request states a start-up or evaluations (they sum to
        time_to_train_days, as price_chunk formed it: candidates.with_run_terms_h)."""
        if not has_terms:
            return {}
        evaluation_h, startup_h = run_terms_h(cat, req, float(r["throughput_samples_per_s"]))
        training_h = float(r["time_to_train_h"]) - float(evaluation_h) - startup_h
        return {"training_days": training_h / 24.0, "evaluation_h": float(evaluation_h), "startup_h": startup_h}

    rows = []
    for eps in np.linspace(y_max, y_min, points):
        pos, rep = solve_mip(pool, lim, xc, req.solver, epsilon=[(yc, float(eps) * (1 + 1e-12))])
        if pos is None:
            continue
        r = pool.iloc[pos]
        rows.append(
            {
                "epsilon": float(eps),
                x: float(r[xc]),
                y: float(r[yc]),
                "server": r["server"],
                "gpu": r["gpu"],
                "nodes": int(r["nodes"]),
                "fabric": r["fabric"],
                "power_cap": float(r["power_cap"]),
                "site": r["site"],
                "purchase": r["purchase"],
                "time_to_train_days": float(r["time_to_train_h"]) / 24.0,
                **run_terms(r),
                "facility_power_kw": float(r["facility_power_kw"]),
                "solver_status": rep.status.value,
                # of the point's nodes, those already owned (the rest are bought), as a plan of it says
                **({"owned_nodes": plan_from_row(cat, req, r).owned_nodes} if req.owned else {}),
            }
        )
    front = pd.DataFrame(rows).drop_duplicates(subset=[x, y]).reset_index(drop=True)
    front.attrs["units"] = {
        "epsilon": OBJECTIVE_UNITS[y],
        x: OBJECTIVE_UNITS[x],
        y: OBJECTIVE_UNITS[y],
        "power_cap": "fraction of TDP",
        "time_to_train_days": "days",
        **({"training_days": "days", "evaluation_h": "hours", "startup_h": "hours"} if has_terms else {}),
        "facility_power_kw": "kW",
    }
    return front
