"""Validation of the physics against published runs, the calibration fit and the accuracy report.

cases (MLPerf on <= 128 GPUs, MLPerf Power, Megatron-LM, Llama 3, Megatron-Core, Zeus) and at_scale (MLPerf at
scale and on newer GPUs) predict the published measurements; run gathers them (``run_cases``, ``validate``); fit
fits the calibration (``calibrate``); summary and report turn the cases into docs/VALIDATION.md; moe holds the
Mixture-of-Experts cases (``python -m planner.validation.moe``); steady judges the steady-state step time at each
MLPerf submission's own layout and at the model's (``python -m planner.validation.steady``).
"""

from __future__ import annotations

from planner.data import reference_dir
from planner.validation.at_scale import (
    AT_SCALE_FIRST_ROUND,
    AT_SCALE_FP4_RUNS,
    AT_SCALE_GPUS,
    NVLINK_DOMAIN_MAX,
    at_scale_cases,
    at_scale_configuration,
    at_scale_table,
    nvlink_domain,
)
from planner.validation.cases import Case, megatron_workload
from planner.validation.fit import calibrate, fit_all, fit_mfu
from planner.validation.moe import moe_cases, moe_summary, moe_table
from planner.validation.report import lora_gap_text, round_trend_text, write_report
from planner.validation.run import (
    family_cases_fitted_and_unseen,
    run_cases,
    run_cases_fit_only,
    unseen_family_cases,
    validate,
)
from planner.validation.steady import steady_cases, steady_findings, steady_report, steady_summary
from planner.validation.summary import round_trend, step_gap_table, summarize, summarize_binned

__all__ = [
    "AT_SCALE_FIRST_ROUND",
    "AT_SCALE_FP4_RUNS",
    "AT_SCALE_GPUS",
    "NVLINK_DOMAIN_MAX",
    "Case",
    "at_scale_cases",
    "at_scale_configuration",
    "at_scale_table",
    "calibrate",
    "family_cases_fitted_and_unseen",
    "fit_all",
    "fit_mfu",
    "lora_gap_text",
    "megatron_workload",
    "moe_cases",
    "moe_summary",
    "moe_table",
    "nvlink_domain",
    "reference_dir",
    "round_trend",
    "round_trend_text",
    "run_cases",
    "run_cases_fit_only",
    "steady_cases",
    "steady_findings",
    "steady_report",
    "steady_summary",
    "step_gap_table",
    "summarize",
    "summarize_binned",
    "unseen_family_cases",
    "validate",
    "write_report",
]
