"""Every validation case predicted with a catalog, the measure of a GPU family no fit has seen, and
``planner validate``.

Fit split, over all the cases (planner/validation/cases.py, at_scale.py): the MLPerf results of the first round each
GPU type was available in (<= 128 GPUs: A100 v2.0, H100 v3.0; at scale ``AT_SCALE_FIRST_ROUND``: A100 v1.1, H100
v3.0, H200 and B200 v5.0, L40S v3.1, MI300X and MI325X v5.0, MI350X, MI355X and B300 v5.1; "preview" submissions are
never fit data; a result resubmitted unchanged later counts in its first round), and the Megatron rows on at most
512 GPUs. Rack-scale NVL72 systems (GB200, GB300) are test data only, as is everything else (later rounds, Megatron
>= 1024 GPUs, all energy cases). How the model carries to a GPU family it has never seen is measured apart
(``unseen_family_cases``: each family with its own fit removed, predicted by the fallback rule). Power, memory and
convergence figures are physical/catalog values, not fitted. Power-cap curves are refitted leaving the validated
network out for their own validation rows.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from pathlib import Path

import numpy as np
import pandas as pd

from planner.data import Catalog, load_catalog, reference_dir
from planner.validation.at_scale import at_scale_cases, power_at_scale_cases
from planner.validation.cases import (
    Case,
    llama3_cases,
    megatron_cases,
    megatron_core_cases,
    mlperf_power_cases,
    mlperf_time_cases,
    zeus_cases,
)
from planner.validation.moe import moe_cases
from planner.validation.report import write_report
from planner.validation.steady import mlperf_run_terms, steady_cases, steady_step_cases
from planner.validation.summary import summarize_binned


def run_cases(
    cat: Catalog, ref: Path, fit_only: bool = False, gpu_families: Collection[str] | None = None
) -> list[Case]:
    """Every validation case, predicted with ``cat``, in the report's order: MLPerf time-to-train on <= 128 GPUs,
    MLPerf Power v4.0, Megatron-LM Table 1, MLPerf at scale, Llama 3 and Megatron-Core, MLPerf Power at scale and
    the Zeus power-cap ratios. ``fit_only``: the cases a fit may use (the fit rows of the first three and of the
    at-scale results). ``gpu_families``: only the time and throughput cases on GPUs of these families (the power,
    energy and power-cap cases are left out)."""
    everything = gpu_families is None
    cases = mlperf_time_cases(cat, ref, fit_only, gpu_families)
    if not fit_only and everything:
        cases += mlperf_power_cases(cat, ref)
    if gpu_families is None or "ampere" in gpu_families:
        cases += megatron_cases(cat, ref, fit_only)
    # at scale, a fit scores the physics on the steady step (no start-up or evaluation in it); the report shows the
    # timed window (with those terms) and the steady step both
    if not fit_only:
        cases += at_scale_cases(cat, ref, fit_only, gpu_families)
    if fit_only or everything:
        cases += steady_step_cases(cat, ref, fit_only, gpu_families)
    if gpu_families is not None:
        if not fit_only and "hopper" in gpu_families:
            cases += [c for c in llama3_cases(cat) + megatron_core_cases(cat) if c.kind == "throughput"]
        return cases
    if not fit_only:
        cases += llama3_cases(cat)
        cases += megatron_core_cases(cat)
        cases += power_at_scale_cases(cat, ref)
        cases += zeus_cases(ref)
    return cases


def run_cases_fit_only(cat: Catalog, ref: Path) -> list[Case]:
    """The fit cases only, predicted with ``cat``: what every fit scores itself on."""
    return [c for c in run_cases(cat, ref, fit_only=True) if c.split == "fit"]


def family_cases_fitted_and_unseen(cat: Catalog, ref: Path, family: str) -> tuple[list[Case], list[Case]]:
    """The time and throughput cases on GPUs of ``family``, predicted with the calibration as it is and with the
    family's own MFU entries removed (the fallback rule then supplies them), in the same order."""
    kinds = ("time_to_train", "throughput")
    fitted = [c for c in run_cases(cat, ref, gpu_families={family}) if c.kind in kinds]
    mfu = cat.calibration.get("mfu", {})
    unseen_cal = {**cat.calibration, "mfu": {k: v for k, v in mfu.items() if k != family}}
    unseen = [c for c in run_cases(cat.replace(calibration=unseen_cal), ref, gpu_families={family}) if c.kind in kinds]
    return fitted, unseen


def unseen_family_cases(cat: Catalog, ref: Path, families: Collection[str] | None = None) -> pd.DataFrame:
    """How the model carries to a GPU family no fit has seen: each GPU family with a fitted MFU, its time and
    throughput cases predicted with its own MFU entries removed from the calibration, so that its efficiency comes
    from the fallback rule of calibration.yaml (the first fallback reference family with a value, scaled by the
    GPUs' measured matmul efficiency) -- as a new GPU is predicted. The shared fitted parameters (overlap shares,
    small-batch scale) keep their values, which the family's own fit cases helped set. One row per family: its
    cases (fit and test splits together, since none is fitted here), median and worst |error| and cases within 25%,
    beside the same cases with the family's fit. ``families``: only these (default: every fitted family)."""
    mfu: dict[str, dict[str, float]] = cat.calibration.get("mfu", {})
    rows = []
    for family in sorted(f for f in mfu if families is None or f in families):
        fitted, unseen = family_cases_fitted_and_unseen(cat, ref, family)
        if not unseen:
            continue
        err_unseen = [100 * abs(c.error) for c in unseen]
        err_fitted = [100 * abs(c.error) for c in fitted]
        rows.append(
            {
                "GPU family": family,
                "cases": len(unseen),
                "median_abs_error_pct (unseen)": float(np.median(err_unseen)),
                "max_abs_error_pct (unseen)": float(np.max(err_unseen)),
                "within_25pct (unseen)": int(sum(e <= 25 for e in err_unseen)),
                "median_abs_error_pct (fitted)": float(np.median(err_fitted)) if err_fitted else math.nan,
            }
        )
    return pd.DataFrame(rows)


def validate(out: Path, catalog_path: Path | None = None, reference: Path | None = None) -> pd.DataFrame:
    """``planner validate``: predict every case with the catalog, write the report to ``out`` (docs/VALIDATION.md,
    with each GPU family predicted as unseen) and return the table the goals are stated against (median and worst
    |error| by scale, workload family and GPU family)."""
    cat = load_catalog(catalog_path)
    ref = reference_dir(reference)
    cases = run_cases(cat, ref)
    steady = steady_cases(cat, ref)
    steady.attrs["run_terms"] = mlperf_run_terms(ref)
    write_report(cases, out, cat.calibration, unseen_family_cases(cat, ref), steady, moe_cases(cat))
    return summarize_binned(cases)
