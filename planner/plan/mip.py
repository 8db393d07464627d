"""The MIP of a reduced candidate pool (planner/plan/formulation.py) built and handed to HiGHS, with the report of a
search that had nothing to solve."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import pandas as pd

from planner.plan.formulation import Limits, build_model
from planner.plan.reduce import reduce_pool
from planner.solver import SolverOptions, SolverReport, SolverStatus, solve_model


def solve_mip(
    cand: pd.DataFrame,
    lim: Limits,
    column: str,
    options: SolverOptions,
    epsilon: Sequence[tuple[str, float]] = (),
    exclude: Sequence[int] = (),
) -> tuple[int | None, SolverReport]:
    """Minimise candidate column `column` over `cand` (presolved); (chosen row position in cand, report)."""
    t0 = time.perf_counter()
    keep = reduce_pool(cand, column, epsilon, exclude)
    local = cand.iloc[keep].reset_index(drop=True)
    if not len(local):
        return None, empty_report(time.perf_counter() - t0)
    m = build_model(local, lim, column, epsilon=epsilon)
    build_s = time.perf_counter() - t0
    jump = not one_optimum(local, column, float(m.objective_scale))
    solved = solve_model(m, options, build_time_s=build_s, feasibility_jump=jump)
    if not solved.report.status.has_solution:
        return None, solved.report
    x = solved.values["x"]
    return int(keep[int(np.argmax(x))]), solved.report


UNIQUE_MARGIN = 1e-4  # of the scaled objective: a hundred times HiGHS's tolerances (gap, feasibility: 1e-6)


def one_optimum(cand: pd.DataFrame, column: str, scale: float) -> bool:
    """Whether the MIP over ``cand`` (presolved: every candidate meets every row, ``reduce_pool``) has one optimum
    clear of every other solution: the least objective, as HiGHS sees it (divided by the model's ``scale``:
    formulation.add_objective), less than every other candidate's by more than UNIQUE_MARGIN (relative, at least
    1). The optimum is then that candidate on every solve path, HiGHS's heuristics or not (solve_model's
    ``feasibility_jump``): a solution choosing another is worse than the dual bound by more than HiGHS accepts."""
    o = cand[column].to_numpy(dtype=float) / scale
    if not np.isfinite(o).all():
        return False
    if len(o) < 2:
        return True
    first, second = np.partition(o, 1)[:2]
    return bool(second - first > UNIQUE_MARGIN * max(1.0, abs(float(first))))


def empty_report(build_s: float) -> SolverReport:
    return SolverReport(
        status=SolverStatus.INFEASIBLE,
        highs_status="presolve: no candidate",
        objective=None,
        bound=None,
        gap=None,
        solve_time_s=0.0,
        build_time_s=build_s,
        handoff_time_s=0.0,
        nodes=0,
        simplex_iterations=0,
        variables=0,
        constraints=0,
    )
