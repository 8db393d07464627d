"""The exact model of distributed training: one named function per physical term (compute, communication, memory,
power, reliability, cost), the step-time equation (step), the parallel layouts and their exact search (layouts),
the vectorized space of configurations (space) and its pricing (pricing), the scalar estimate (estimate), the
start-up and evaluation terms of a time-to-train (run_time), the arguments' checks (work) and the on-disk physics
store (store)."""

from __future__ import annotations

from planner.physics.compute import mfu_max, samples_factor
from planner.physics.cost import HOURS_PER_YEAR, cable_count, capex_usd, switch_count
from planner.physics.estimate import BREAKDOWN, acquisition_problem, estimate_from_row, evaluate, layout_cluster_problem
from planner.physics.layouts import LayoutSearch, candidate_layouts, pipeline_depths, virtual_options
from planner.physics.pricing import price_space
from planner.physics.run_time import (
    evaluation_sample_equivalents,
    evaluation_time_from_step_s,
    evaluation_time_s,
    startup_time_s,
)
from planner.physics.space import (
    DEFAULT_CAPS,
    DEFAULT_NODE_COUNTS,
    WORK_PROPORTIONAL_COLUMNS,
    Space,
    build_space,
    evaluate_space,
    scale_work,
)
from planner.physics.work import PRECISIONS, Work, check_catalog, validated, work_from

__all__ = [
    "BREAKDOWN",
    "DEFAULT_CAPS",
    "DEFAULT_NODE_COUNTS",
    "HOURS_PER_YEAR",
    "PRECISIONS",
    "WORK_PROPORTIONAL_COLUMNS",
    "LayoutSearch",
    "Space",
    "Work",
    "acquisition_problem",
    "build_space",
    "cable_count",
    "candidate_layouts",
    "capex_usd",
    "check_catalog",
    "estimate_from_row",
    "evaluate",
    "evaluate_space",
    "evaluation_sample_equivalents",
    "evaluation_time_from_step_s",
    "evaluation_time_s",
    "layout_cluster_problem",
    "mfu_max",
    "pipeline_depths",
    "price_space",
    "samples_factor",
    "scale_work",
    "startup_time_s",
    "switch_count",
    "validated",
    "virtual_options",
    "work_from",
]
