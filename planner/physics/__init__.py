"""The exact model of distributed training: one named function per physical term, the step-time equation, the layout
search over a space of configurations, its pricing, and the on-disk physics store."""

from __future__ import annotations

from planner.physics.compute import mfu_max, samples_factor
from planner.physics.cost import HOURS_PER_YEAR, cable_count, capex_usd, switch_count
from planner.physics.model import (
    DEFAULT_CAPS,
    WORK_PROPORTIONAL_COLUMNS,
    Space,
    Work,
    candidate_layouts,
    check_catalog,
    estimate_from_row,
    evaluate,
    evaluate_space,
    price_space,
    scale_work,
    validated,
    work_from,
)

__all__ = [
    "DEFAULT_CAPS",
    "HOURS_PER_YEAR",
    "WORK_PROPORTIONAL_COLUMNS",
    "Space",
    "Work",
    "cable_count",
    "candidate_layouts",
    "capex_usd",
    "check_catalog",
    "estimate_from_row",
    "evaluate",
    "evaluate_space",
    "mfu_max",
    "price_space",
    "samples_factor",
    "scale_work",
    "switch_count",
    "validated",
    "work_from",
]
