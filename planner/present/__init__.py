"""Presentation: what the command line, the app and the batch report show people.

Tables with readable names and units (``tables``), the plan card and why-this-plan text (``plan_card``), charts
(``charts``), the Plan page's inputs, their defaults and the request they make (``plan_inputs``), the catalog tables
the app edits and what an edit changed (``catalog_edit``), fleet, batch and validation views (``fleet_views``,
``batch_views``, ``validation_views``) and the command line that reproduces an app request (``cli_command``).
Numbers are written by planner.formatting, one formatter for every layer.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from planner.present.catalog_edit import (
    TABLES,
    TableChange,
    add_workload,
    apply_table,
    catalog_table,
    first_line,
    read_upload,
    table_changes,
    table_yaml,
    upload_warning,
    yaml_problem,
)
from planner.present.charts import (
    LADDER_DENSE_UP_TO,
    LADDER_STEP,
    OBJECTIVE_AXIS_TITLES,
    SCALING_NODES,
    altair,
    breakdown_chart,
    chart_html,
    chart_png,
    front_with_precision,
    gpu_colors,
    ladder,
    node_ladder,
    pareto_chart,
    pareto_note,
    pareto_table,
    pareto_view,
    power_cap_chart,
    power_cap_frame,
    scaling_chart,
    scaling_frame,
)
from planner.present.cli_command import cli_command, cli_number
from planner.present.fleet_views import (
    fleet_bought_table,
    fleet_gantt,
    fleet_job_order,
    fleet_owned_service_notes,
    fleet_owned_table,
    fleet_power_frame,
    fleet_progress_text,
    fleet_rented_table,
    read_fleet_upload,
)
from planner.present.plan_card import plan_card, plan_card_html, why_this_plan
from planner.present.plan_inputs import (
    DEFAULT_DEADLINE_DAYS,
    amount_default,
    amount_key,
    amount_units,
    common_inputs,
    deadline_that_plans,
    default_inputs,
    inputs_request,
    trainable_gpus,
    workload_inputs,
)
from planner.present.tables import (
    COST_EXPLAINED,
    OBJECTIVE_METRIC,
    OBJECTIVE_UNITS,
    PLAN_COLUMNS,
    PRECISIONS,
    READABLE,
    UNIT_SUFFIXES,
    alternatives_frame,
    alternatives_table,
    alternatives_view,
    blank_missing,
    breakdown_frame,
    compact_header,
    compact_view,
    display_number,
    human,
    plan_cost_breakdown,
    plan_csv,
    readable,
    readable_column,
    readable_header,
    result_json,
    separated_columns,
)

if TYPE_CHECKING:
    from planner.present.batch_views import (
        BATCH_LEAD_COLUMNS,
        RESULTS_ID,
        batch_results_table,
        read_batch_upload,
        scenario_labels,
    )
    from planner.present.validation_views import (
        VALIDATION_TITLES,
        validation_frame,
        validation_scatter,
        validation_summary,
    )

# The batch and validation views, imported on first use (PEP 562): they import planner.batch and planner.validation,
# which `planner solve`, `evaluate` and the Plan page do not need.
_LAZY = {
    **dict.fromkeys(
        ("BATCH_LEAD_COLUMNS", "RESULTS_ID", "batch_results_table", "read_batch_upload", "scenario_labels"),
        "planner.present.batch_views",
    ),
    **dict.fromkeys(
        ("VALIDATION_TITLES", "validation_frame", "validation_scatter", "validation_summary"),
        "planner.present.validation_views",
    ),
}


def __getattr__(name: str) -> Any:
    """The batch and validation views' names, imported on first use."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'planner.present' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "BATCH_LEAD_COLUMNS",
    "COST_EXPLAINED",
    "DEFAULT_DEADLINE_DAYS",
    "LADDER_DENSE_UP_TO",
    "LADDER_STEP",
    "OBJECTIVE_AXIS_TITLES",
    "OBJECTIVE_METRIC",
    "OBJECTIVE_UNITS",
    "PLAN_COLUMNS",
    "PRECISIONS",
    "READABLE",
    "RESULTS_ID",
    "SCALING_NODES",
    "TABLES",
    "UNIT_SUFFIXES",
    "VALIDATION_TITLES",
    "TableChange",
    "add_workload",
    "altair",
    "alternatives_frame",
    "alternatives_table",
    "alternatives_view",
    "amount_default",
    "amount_key",
    "amount_units",
    "apply_table",
    "batch_results_table",
    "blank_missing",
    "breakdown_chart",
    "breakdown_frame",
    "catalog_table",
    "chart_html",
    "chart_png",
    "cli_command",
    "cli_number",
    "common_inputs",
    "compact_header",
    "compact_view",
    "deadline_that_plans",
    "default_inputs",
    "display_number",
    "first_line",
    "fleet_bought_table",
    "fleet_gantt",
    "fleet_job_order",
    "fleet_owned_service_notes",
    "fleet_owned_table",
    "fleet_power_frame",
    "fleet_progress_text",
    "fleet_rented_table",
    "front_with_precision",
    "gpu_colors",
    "human",
    "inputs_request",
    "ladder",
    "node_ladder",
    "pareto_chart",
    "pareto_note",
    "pareto_table",
    "pareto_view",
    "plan_card",
    "plan_card_html",
    "plan_cost_breakdown",
    "plan_csv",
    "power_cap_chart",
    "power_cap_frame",
    "read_batch_upload",
    "read_fleet_upload",
    "read_upload",
    "readable",
    "readable_column",
    "readable_header",
    "result_json",
    "scaling_chart",
    "scaling_frame",
    "scenario_labels",
    "separated_columns",
    "table_changes",
    "table_yaml",
    "trainable_gpus",
    "upload_warning",
    "validation_frame",
    "validation_scatter",
    "validation_summary",
    "why_this_plan",
    "workload_inputs",
    "yaml_problem",
]
