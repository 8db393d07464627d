"""Summaries of the validation cases: error statistics by metric, by scale, workload family and GPU family, the
spread between submitters of identical model inputs, the change of a configuration across MLPerf rounds, and the
per-step gap of one benchmark's runs. Each is a table computed from the cases alone."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from planner.validation.cases import Case


def summarize(cases: list[Case]) -> pd.DataFrame:
    """Error statistics (``error_stats``) per metric and split (fit, test, all), metrics with cases only."""
    rows = []
    for kind in ("time_to_train", "energy", "throughput", "goodput", "power_cap_time", "power_cap_energy"):
        for split in ("fit", "test", "all"):
            sel = [abs(c.error) for c in cases if c.kind == kind and (split == "all" or c.split == split)]
            if sel:
                rows.append({"metric": kind, "split": split, **error_stats(sel)})
    return pd.DataFrame(rows)


def error_stats(abs_errors: list[float]) -> dict[str, Any]:
    """Cases, median and worst |error| in percent, and the cases within 25%."""
    return {
        "cases": len(abs_errors),
        "median_abs_error_pct": 100 * float(np.median(abs_errors)),
        "max_abs_error_pct": 100 * float(np.max(abs_errors)),
        "within_25pct": sum(e <= 0.25 for e in abs_errors),
    }


SCALE_BINS = ((1, 64, "<= 64"), (65, 512, "65-512"), (513, 4096, "513-4,096"), (4097, 10**9, "> 4,096"))
METRIC_GROUPS = {
    "steady step": ("step_time",),
    "time / throughput": ("time_to_train", "throughput"),
    "power / energy": ("energy",),
}


def scale_bin(gpus: int) -> str:
    """The label of the ``SCALE_BINS`` bin of a run's GPU count."""
    return next(label for lo, hi, label in SCALE_BINS if lo <= gpus <= hi)


def summarize_binned(cases: list[Case]) -> pd.DataFrame:
    """Median and worst |error| by metric group, split and scale bin (GPUs of the run), then by workload family and
    by GPU family:
    the table the model's goals are stated against (median <= 10% time/throughput and <= 15% power/energy in
    every bin, no case worse than 25%)."""
    rows = []
    for group, kinds in METRIC_GROUPS.items():
        sel = [c for c in cases if c.kind in kinds and c.gpus > 0]
        for split in ("test", "all"):
            part = [c for c in sel if split == "all" or c.split == split]
            keys = [("scale", label, [c for c in part if scale_bin(c.gpus) == label]) for *_, label in SCALE_BINS]
            fams = sorted({c.workload_family for c in part})
            keys += [("family", f, [c for c in part if c.workload_family == f]) for f in fams]
            # per GPU family (ada = L40S, cdna3 / cdna4 = AMD MI300X-MI325X / MI350X-MI355X)
            gfams = sorted({c.gpu_family for c in part if c.gpu_family})
            keys += [("GPU family", f, [c for c in part if c.gpu_family == f]) for f in gfams]
            for by, label, cs in keys:
                if not cs:
                    continue
                errs = [abs(c.error) for c in cs]
                rows.append({"metric": group, "split": split, "by": by, "bin": label, **error_stats(errs)})
    return pd.DataFrame(rows)


def input_spread(cases: list[Case]) -> pd.DataFrame:
    """Published spread within groups of MLPerf cases with identical model inputs (>= 2 cases)."""
    groups: dict[str, list[float]] = {}
    for c in cases:
        if c.kind == "time_to_train" and c.inputs:
            groups.setdefault(c.inputs, []).append(c.published)
    rows = [
        {
            "model inputs": key,
            "results": len(v),
            "fastest (min)": min(v),
            "slowest (min)": max(v),
            "spread % (slowest / fastest - 1)": 100 * (max(v) / min(v) - 1),
        }
        for key, v in groups.items()
        if len(v) >= 2
    ]
    df = pd.DataFrame(rows)
    return df.sort_values("spread % (slowest / fastest - 1)", ascending=False) if len(df) else df


def round_trend(cases: list[Case]) -> pd.DataFrame:
    """Per group of MLPerf-at-scale runs with identical model inputs (one prediction for all of them) measured in
    more than one round: the median published time per optimizer step of its first and of its last round, the
    change between them and the model's time per step -- what a software release does on the same hardware, which
    no hardware term can carry (the fit is on each GPU's first round, so later rounds are test data)."""
    groups: dict[str, list[tuple[str, float, float, str]]] = {}
    for c in cases:
        if c.kind == "time_to_train" and c.inputs and c.steps > 0:
            groups.setdefault(c.inputs, []).append(
                (c.name.split()[0], 60.0 * c.published / c.steps, 60.0 * c.predicted / c.steps, c.split)
            )
    rows = []
    for key, runs in groups.items():
        rounds = sorted({r for r, *_ in runs}, key=lambda r: tuple(int(x) for x in r.lstrip("v").split(".")))
        if len(rounds) < 2:
            continue
        first = [pub for r, pub, _, _ in runs if r == rounds[0]]
        last = [pub for r, pub, _, _ in runs if r == rounds[-1]]
        s_first, s_last = float(np.median(first)), float(np.median(last))
        rows.append(
            {
                "model inputs": key,
                "first round": f"{rounds[0]} ({len(first)})",
                "first s/step": s_first,
                "last round": f"{rounds[-1]} ({len(last)})",
                "last s/step": s_last,
                "change %": 100 * (s_last / s_first - 1),
                "model s/step": runs[0][2],
                "first round is": "fit" if any(r == rounds[0] and sp == "fit" for r, _, _, sp in runs) else "test",
            }
        )
    df = pd.DataFrame(rows)
    return df.sort_values("change %").reset_index(drop=True) if len(df) else df


def step_gap_table(cases: list[Case], benchmark: str = "llama2_70b_lora", min_gpus: int = 1) -> pd.DataFrame:
    """Per MLPerf-at-scale run of one benchmark: the published and predicted time per optimizer step, the seconds
    per step the model misses ((published - predicted) run time / steps) and the seconds per run, ordered by GPU
    family and size. Shows whether a miss is per step (grows with the steps) or per run (the same whatever the
    steps), and where it sits."""
    rows = []
    for c in cases:
        if c.kind != "time_to_train" or c.steps <= 0 or c.gpus < min_gpus or f" {benchmark} " not in c.name:
            continue
        pub, pred = 60.0 * c.published / c.steps, 60.0 * c.predicted / c.steps
        rows.append(
            {
                "case": c.name.split(f" {benchmark} ")[0],
                "family": c.gpu_family,
                "GPU": c.inputs.split()[1] if len(c.inputs.split()) > 1 else "",  # "<benchmark> <gpu> ...": the id
                "GPUs": c.gpus,
                "published s/step": pub,
                "predicted s/step": pred,
                "missed s/step": pub - pred,
                "missed s/run": 60.0 * (c.published - c.predicted),
                "error %": 100 * c.error,
            }
        )
    df = pd.DataFrame(rows)
    return df.sort_values(["family", "GPUs", "case"]).reset_index(drop=True) if len(df) else df
