"""Handing a Pyomo model to HiGHS and reading the answer back, honestly.

The model is compiled with Pyomo's LinearStandardFormCompiler (mixed form) to sparse arrays and passed
to ``highspy`` directly: the lowest-overhead route measured on this stack (../shared/SOLVER-NOTES.md).
Nothing is loaded silently: the report says whether the solution is proven optimal, a time-limited
incumbent (with its gap), or absent, and the caller decides what to load.
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field
from typing import Any

import highspy
import numpy as np
import pyomo.core as pyo  # not pyomo.environ: its plugin registry costs ~0.5 s of a cold run and is not used
from pydantic import BaseModel, ConfigDict, Field
from pyomo.repn.plugins.standard_form import LinearStandardFormCompiler

_THREADS: int | None = None  # HiGHS's thread pool is process-wide: set once


def _skip_scipy_stats() -> None:
    """Pyomo resolves its deferred ``scipy`` import with a callback that also imports scipy.stats, integrate
    and spatial (~1 s of a cold CLI run, ../shared/SOLVER-NOTES.md); the standard-form compiler only needs
    scipy.sparse, which scipy loads on first use. Drop that callback before anything imports scipy. Pinned
    pyomo (6.10); if its internals differ, nothing is changed."""
    try:
        from pyomo.common import dependencies as deps

        indicator = deps.__dict__.get("scipy_available")
        if isinstance(indicator, deps.DeferredImportIndicator) and indicator._module is None:
            indicator._callback = None
    except (ImportError, AttributeError):  # pragma: no cover - other pyomo versions
        pass


_skip_scipy_stats()


class SolverStatus(enum.StrEnum):
    OPTIMAL = "optimal"
    TIME_LIMIT = "time_limit"  # best incumbent returned, with its gap
    INFEASIBLE = "infeasible"
    NO_SOLUTION = "no_solution"  # stopped without an incumbent
    ERROR = "error"

    @property
    def has_solution(self) -> bool:
        return self in (SolverStatus.OPTIMAL, SolverStatus.TIME_LIMIT)


class SolverOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    time_limit_s: float = Field(60.0, gt=0, description="HiGHS time limit, seconds")
    mip_rel_gap: float = Field(1e-9, ge=0, lt=1, description="relative MIP gap at which HiGHS stops")
    threads: int | None = Field(None, ge=1, le=256, description="HiGHS threads (process-wide; first call wins)")
    presolve: bool = Field(
        False,
        description="HiGHS MIP presolve; off by default: on the plan MIP (one-hot "
        "selection, already presolved exactly) its probing costs seconds and saves nothing",
    )


class SolverReport(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    status: SolverStatus
    highs_status: str
    objective: float | None
    bound: float | None
    gap: float | None
    solve_time_s: float
    build_time_s: float
    handoff_time_s: float
    nodes: int
    simplex_iterations: int
    variables: int
    constraints: int


@dataclass
class Solved:
    report: SolverReport
    values: dict[str, np.ndarray] = field(default_factory=dict)  # RangeSet-indexed variables -> dense arrays
    keyed: dict[str, dict[Any, float]] = field(default_factory=dict)  # other variables -> {index: value}


def _var_index(v: Any) -> Any:
    return v.index()


def deadline_interrupt(deadline_s: float) -> Any:
    """A HiGHS interrupt callback that stops the solve once ``time.perf_counter()`` passes ``deadline_s``: HiGHS
    polls it inside the MIP search and every simplex solve, so the time limit holds within a poll interval
    (the solve then reports HiGHS's interrupt status, read here as the time limit)."""

    def stop(event: Any) -> None:
        if time.perf_counter() > deadline_s:
            event.interrupt()

    return stop


def _compile(m: pyo.ConcreteModel) -> Any:
    """The model in standard form (LinearStandardFormCompiler, mixed form). A model that sets ``m.reuse_compiled``
    is compiled once, with every variable free of its fixing (a fixed variable stays a column; its value becomes
    both bounds at each solve), and the arrays are kept on the model for the next solves: a model re-solved with
    other variables fixed (the fleet's LP relaxation, restricted MIP and full MIP) is not compiled again. Only
    variables may change between such solves (values, bounds, fixing), not constraints."""
    if not getattr(m, "reuse_compiled", False):
        return LinearStandardFormCompiler().write(m, mixed_form=True, set_sense=None)
    repn = getattr(m, "_compiled", None)
    if repn is None:
        fixed = [v for v in m.component_data_objects(pyo.Var, descend_into=True) if v.fixed]
        for v in fixed:
            v.unfix()
        try:
            repn = LinearStandardFormCompiler().write(m, mixed_form=True, set_sense=None)
        finally:
            for v in fixed:
                v.fix()
        m._compiled = repn
    return repn


def solve_model(m: pyo.ConcreteModel, options: SolverOptions, build_time_s: float = 0.0, relax: bool = False) -> Solved:
    """Solve m with HiGHS (``relax``: its LP relaxation, every integer column continuous within its bounds, and
    no starting solution) and read the answer back."""
    global _THREADS
    t0 = time.perf_counter()
    repn = _compile(m)
    cols = repn.columns
    ncol, nrow = len(cols), repn.A.shape[0]
    lower = np.array([v.value if v.fixed else -highspy.kHighsInf if v.lb is None else v.lb for v in cols], dtype=float)
    upper = np.array([v.value if v.fixed else highspy.kHighsInf if v.ub is None else v.ub for v in cols], dtype=float)
    integer = np.array([(v.is_integer() or v.is_binary()) and not relax for v in cols], dtype=bool)
    sense = np.array([s for _, s in repn.rows], dtype=int)
    rhs = np.asarray(repn.rhs, dtype=float)
    row_lo = np.where(sense >= 0, np.where(sense == 0, rhs, -highspy.kHighsInf), rhs)
    row_hi = np.where(sense <= 0, np.where(sense == 0, rhs, highspy.kHighsInf), rhs)
    A = repn.A.tocsc()
    cost = np.asarray(repn.c.toarray()).ravel() if repn.c.shape[0] else np.zeros(ncol)
    offset = float(repn.c_offset[0]) if len(repn.c_offset) else 0.0

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("time_limit", float(options.time_limit_s))
    h.setOptionValue("mip_rel_gap", float(options.mip_rel_gap))
    h.setOptionValue("presolve", "on" if options.presolve else "off")
    if options.threads is not None and _THREADS is None:
        h.setOptionValue("threads", int(options.threads))
        _THREADS = options.threads
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = ncol, nrow
    lp.col_cost_ = cost
    lp.col_lower_, lp.col_upper_ = lower, upper
    lp.row_lower_, lp.row_upper_ = row_lo, row_hi
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = A.indptr
    lp.a_matrix_.index_ = A.indices
    lp.a_matrix_.value_ = A.data
    lp.offset_ = offset
    if integer.any():
        lp.integrality_ = [highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous for i in integer]
    h.passModel(lp)
    if not relax and getattr(m, "warm_start", False) and all(v.value is not None for v in cols):
        # a starting solution (e.g. a greedy plan) from the variables' values: HiGHS keeps it if it is feasible
        start = highspy.HighsSolution()
        start.col_value = [float(v.value) for v in cols]
        start.value_valid = True
        h.setSolution(start)
    handoff = time.perf_counter() - t0
    t1 = time.perf_counter()
    stop = deadline_interrupt(t1 + float(options.time_limit_s))
    h.cbMipInterrupt += stop  # HiGHS checks its own time limit only between phases (its root cut rounds and
    h.cbSimplexInterrupt += stop  # presolve probing overran it by 13-39 s on the fleet benchmark)
    h.run()
    solve_s = time.perf_counter() - t1
    ms = h.getModelStatus()
    info = h.getInfo()
    has_sol = info.primal_solution_status == 2  # kSolutionStatusFeasible
    if ms == highspy.HighsModelStatus.kOptimal:
        status = SolverStatus.OPTIMAL
    elif ms in (highspy.HighsModelStatus.kInfeasible,):
        status = SolverStatus.INFEASIBLE
    elif ms in (
        highspy.HighsModelStatus.kTimeLimit,
        highspy.HighsModelStatus.kIterationLimit,
        highspy.HighsModelStatus.kSolutionLimit,
        highspy.HighsModelStatus.kInterrupt,
    ):
        status = SolverStatus.TIME_LIMIT if has_sol else SolverStatus.NO_SOLUTION
    else:
        status = SolverStatus.ERROR if not has_sol else SolverStatus.TIME_LIMIT
    scale = float(getattr(m, "objective_scale", 1.0))
    obj = float(info.objective_function_value) * scale if status.has_solution else None
    bound = float(info.mip_dual_bound) * scale if status.has_solution and np.isfinite(info.mip_dual_bound) else None
    gap = None
    if obj is not None and bound is not None:
        gap = abs(obj - bound) / max(abs(obj), 1e-12)
    report = SolverReport(
        status=status,
        highs_status=h.modelStatusToString(ms),
        objective=obj,
        bound=bound,
        gap=gap,
        solve_time_s=solve_s,
        build_time_s=build_time_s,
        handoff_time_s=handoff,
        nodes=int(max(info.mip_node_count, 0)),
        simplex_iterations=int(max(info.simplex_iteration_count, 0)),
        variables=ncol,
        constraints=nrow,
    )
    values: dict[str, np.ndarray] = {}
    keyed: dict[str, dict[Any, float]] = {}
    if status.has_solution:
        x = np.asarray(h.getSolution().col_value)
        by_comp: dict[str, dict[Any, float]] = {}
        for v, val in zip(cols, x, strict=True):
            by_comp.setdefault(v.parent_component().name, {})[_var_index(v)] = float(val)
        for name, d in by_comp.items():
            if all(isinstance(i, int) for i in d):  # a RangeSet-indexed variable: a dense array
                arr = np.zeros(len(getattr(m, name)))
                for idx, val in d.items():
                    arr[idx] = val
                values[name] = arr
            else:
                keyed[name] = d
    return Solved(report, values, keyed)
