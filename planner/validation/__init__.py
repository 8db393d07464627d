"""Validation of the physics against published runs, the calibration fit and the accuracy report."""

from __future__ import annotations

from planner.validation.validation import (
    AT_SCALE_FIRST_ROUND,
    AT_SCALE_GPUS,
    NVLINK_DOMAIN_MAX,
    Case,
    at_scale_table,
    calibrate,
    family_cases_fitted_and_unseen,
    lora_gap_text,
    megatron_workload,
    nvlink_domain,
    reference_dir,
    round_trend,
    round_trend_text,
    run_cases,
    step_gap_table,
    summarize_binned,
    unseen_family_cases,
    validate,
)

__all__ = [
    "AT_SCALE_FIRST_ROUND",
    "AT_SCALE_GPUS",
    "NVLINK_DOMAIN_MAX",
    "Case",
    "at_scale_table",
    "calibrate",
    "family_cases_fitted_and_unseen",
    "lora_gap_text",
    "megatron_workload",
    "nvlink_domain",
    "reference_dir",
    "round_trend",
    "round_trend_text",
    "run_cases",
    "step_gap_table",
    "summarize_binned",
    "unseen_family_cases",
    "validate",
]
