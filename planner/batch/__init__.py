"""Batch: many procurement scenarios solved in parallel, locally or on Ray, resumable through a store, with a report."""

from __future__ import annotations

from planner.batch.report import cost_chart, report_blocks, report_document, write_report
from planner.batch.runner import (
    EXIT_INCOMPLETE,
    BatchInterrupted,
    BatchOutcome,
    expand,
    load_scenarios,
    read_results,
    report,
    run,
    run_batch,
)
from planner.batch.scenarios import (
    MAX_SCENARIOS,
    parse_yaml,
    run_scenario,
    scenario_id,
    scenario_number,
    to_request,
)
from planner.batch.store import (
    STORE,
    BatchStoreError,
    Identity,
    Store,
    StoreDamaged,
    input_files,
    input_values,
    salvage,
    scenarios_sha,
)

__all__ = [
    "EXIT_INCOMPLETE",
    "MAX_SCENARIOS",
    "STORE",
    "BatchInterrupted",
    "BatchOutcome",
    "BatchStoreError",
    "Identity",
    "Store",
    "StoreDamaged",
    "cost_chart",
    "expand",
    "input_files",
    "input_values",
    "load_scenarios",
    "parse_yaml",
    "read_results",
    "report",
    "report_blocks",
    "report_document",
    "run",
    "run_batch",
    "run_scenario",
    "salvage",
    "scenario_id",
    "scenario_number",
    "scenarios_sha",
    "to_request",
    "write_report",
]
