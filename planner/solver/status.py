"""The outcome of a plan, single-job or fleet: one type, so every caller compares against the same names."""

from __future__ import annotations

import enum


class PlanStatus(enum.StrEnum):
    """What a solve answered. A ``StrEnum``: ``status == "optimal"`` holds, and it prints as its value."""

    OPTIMAL = "optimal"  # proven optimal within the MIP's relative tolerance
    TIME_LIMIT = "time_limit"  # the best plan found within the time limit, with its proven gap
    INFEASIBLE = "infeasible"  # no plan meets the request; an explanation says what would
    NO_SOLUTION = "no_solution"  # the time limit passed before any plan was found

    @property
    def has_plan(self) -> bool:
        return self in (PlanStatus.OPTIMAL, PlanStatus.TIME_LIMIT)
