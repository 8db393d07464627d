"""The hand-off of a Pyomo model to HiGHS: its standard form, options, status, the time limit and the report."""

from __future__ import annotations

from planner.solver.compiler import StandardForm, gc_paused, standard_form
from planner.solver.highs import (
    ISOLATE_GRACE_S,
    Solved,
    SolverOptions,
    SolverReport,
    SolverStatus,
    current_solution,
    deadline_interrupt,
    process_threads,
    solve_model,
)
from planner.solver.status import PlanStatus

__all__ = [
    "ISOLATE_GRACE_S",
    "PlanStatus",
    "Solved",
    "SolverOptions",
    "SolverReport",
    "SolverStatus",
    "StandardForm",
    "current_solution",
    "deadline_interrupt",
    "gc_paused",
    "process_threads",
    "solve_model",
    "standard_form",
]
