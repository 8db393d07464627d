"""Fitting the model's empirical curves to published measurements (reference/).

Three fits, each reproducible with ``planner calibrate``:

* **Power-cap curves** (catalog/power_caps.yaml) from the Zeus traces. A cap only binds when the
  workload would draw more than it: a run whose uncapped board power is d x TDP behaves at cap c like
  any other run at the same *relative* cap x = c / d. So every (network, batch, optimizer) run is put on
  that common axis -- throughput relative to its highest limit and power relative to d, against x -- and
  the normalized curve is the median over runs at each x (throughput made monotone). The catalog curve of
  a GPU class is that normalized curve at the class's typical training demand d (the median over runs),
  expressed per cap level c: throughput factor f(c / d), power fraction d x q(c / d). Held-out networks
  are predicted with their own demand (planner/validation/cases.py::zeus_cases).
* **Convergence vs batch** (the ``convergence`` of models/resnet50.yaml and models/bert_large.yaml) from
  the MLPerf medians: isotonic (non-decreasing) regression of samples-to-converge on global batch,
  weighted by the number of submissions, expressed relative to the reference batch.
* **Achievable MFU** (catalog/calibration.yaml) per GPU family and workload family; see planner/validation/fit.py
  (the fit) and planner/validation/run.py (the fitting split); planner/validation/report.py writes
  docs/VALIDATION.md.

``read_calibration`` reads catalog/calibration.yaml back, checked against ``schemas.CalibrationFile``.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml
from pydantic import ValidationError

from planner.data.schemas import WORKLOAD_FAMILIES, CalibrationFile
from planner.errors import PlannerInputError


def read_calibration(path: Path) -> dict[str, Any]:
    """catalog/calibration.yaml as the mapping the model reads, checked against schemas.CalibrationFile: malformed
    YAML, a file that is not a mapping, or a known key of the wrong type, out of range or naming an unknown workload
    family is a PlannerInputError naming the file, the key and the valid values (exit 2 from the CLI)."""
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise PlannerInputError(f"{path}: not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise PlannerInputError(
            f"{path}: the calibration is a YAML mapping of keys (mfu, default_mfu, fallback_references, "
            f"half_batch_scale, ...), not a {type(data).__name__}"
        )
    try:
        CalibrationFile.model_validate(data)
    except ValidationError as exc:
        raise PlannerInputError("\n".join(_calibration_problem(path, e) for e in exc.errors())) from None
    return data


def _calibration_problem(path: Path, error: Any) -> str:
    """One line per problem: the key path, what is wrong, the value given and, for a workload family, the valid
    ones and the form the key takes."""
    loc = [str(p) for p in error["loc"] if p != "[key]"]
    key = ".".join(loc) or "(root)"
    got = error.get("input")
    shown = "" if isinstance(got, dict | list) else f" (got {got!r})"
    line = f"{path}: {key}: {error['msg']}{shown}"
    if loc and loc[0] in ("half_batch_scale_families", "default_mfu", "mfu"):
        valid = ", ".join(WORKLOAD_FAMILIES)
        if loc[0] == "half_batch_scale_families":
            line += (
                f"; give a YAML list of workload families among {valid}, e.g. half_batch_scale_families: [cnn, encoder]"
            )
        elif error["type"] == "literal_error":
            line += f"; workload families are {valid}"
    return line


ZEUS_GPUS: dict[str, dict[str, Any]] = {
    # curve id -> trace file, TDP used to normalise, what it stands in for
    "datacenter-v100": {"file": "zeus_v100.csv", "tdp_w": 250, "gpu": "V100 SXM2 (250 W)"},
    "workstation-a40": {"file": "zeus_a40.csv", "tdp_w": 300, "gpu": "A40 (300 W)"},
    "workstation-rtx6000": {"file": "zeus_rtx6000.csv", "tdp_w": 260, "gpu": "Quadro RTX 6000 (260 W)"},
    "datacenter-p100": {"file": "zeus_p100.csv", "tdp_w": 250, "gpu": "P100 (250 W)"},
}
CAP_LEVELS = (0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def zeus_traces(reference: Path) -> pd.DataFrame:
    """Every Zeus trace (reference/zeus/) with its curve id, and cap and average power as fractions of TDP."""
    frames = []
    for curve_id, meta in ZEUS_GPUS.items():
        df = pd.read_csv(reference / "zeus" / meta["file"])
        df["curve"] = curve_id
        df["cap_fraction"] = df["power_limit"] / meta["tdp_w"]
        df["power_fraction"] = df["average_power"] / meta["tdp_w"]
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def relative_runs(traces: pd.DataFrame) -> pd.DataFrame:
    """Per run (network, batch, optimizer): time and energy relative to the highest power limit."""
    keys = ["curve", "dataset", "network", "batch_size", "optimizer"]
    out = []
    for _, g in traces.groupby(keys):
        top = g.loc[g["power_limit"].idxmax()]
        g = g.copy()
        g["throughput_factor"] = top["time_per_epoch"] / g["time_per_epoch"]
        g["time_ratio"] = g["time_per_epoch"] / top["time_per_epoch"]
        g["energy_ratio"] = (g["time_per_epoch"] * g["average_power"]) / (top["time_per_epoch"] * top["average_power"])
        g["top_cap_fraction"] = top["cap_fraction"]
        out.append(g)
    return pd.concat(out, ignore_index=True)


X_GRID = tuple(round(0.25 + 0.025 * i, 3) for i in range(71))  # relative cap x = c / demand, 0.25 .. 2.0


def demand(runs: pd.DataFrame) -> pd.Series:
    """Uncapped demand of each run: average power / TDP at its highest limit."""
    keys = ["curve", "network", "batch_size", "optimizer"]
    top = runs[np.isclose(runs["cap_fraction"], runs["top_cap_fraction"])]
    return top.groupby(keys)["power_fraction"].median()


def normalized_curve(runs: pd.DataFrame) -> pd.DataFrame:
    """Median over runs of throughput factor f and power / demand q against x = cap / demand (index x)."""
    keys = ["curve", "network", "batch_size", "optimizer"]
    d_of = demand(runs)
    xs = np.asarray(X_GRID)
    f_rows, q_rows = [], []
    for key, g in runs.groupby(keys):
        d = float(d_of.loc[key])
        g = g.sort_values("cap_fraction")
        x = g["cap_fraction"].to_numpy() / d
        f = np.interp(xs, x, g["throughput_factor"].to_numpy(), left=np.nan, right=1.0)
        q = np.interp(xs, x, g["power_fraction"].to_numpy() / d, left=np.nan)
        q = np.where(xs > x.max(), g["power_fraction"].to_numpy()[-1] / d, q)
        f_rows.append(f)
        q_rows.append(q)
    with warnings.catch_warnings():  # grid points no run reaches are all-NaN: dropped below
        warnings.simplefilter("ignore", RuntimeWarning)
        f_med = np.nanmedian(np.vstack(f_rows), axis=0)
        q_med = np.nanmedian(np.vstack(q_rows), axis=0)
    ok = np.isfinite(f_med) & np.isfinite(q_med)
    f_med = np.minimum.accumulate(np.minimum(f_med[ok], 1.0)[::-1])[::-1]  # monotone non-decreasing in x
    return pd.DataFrame({"throughput_factor": f_med, "power_ratio": q_med[ok]}, index=xs[ok])


def curve_at(norm: pd.DataFrame, demand_fraction: float, caps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(throughput factor, power / TDP) at the caps for a workload of the given uncapped demand."""
    x = np.asarray(caps, dtype=float) / demand_fraction
    grid = norm.index.to_numpy(dtype=float)
    f = np.interp(x, grid, norm["throughput_factor"].to_numpy())
    q = np.interp(x, grid, norm["power_ratio"].to_numpy())
    return f, np.minimum(demand_fraction * q, caps)


def fit_power_curve(runs: pd.DataFrame, levels: tuple[float, ...] = CAP_LEVELS) -> list[dict[str, float]]:
    """Catalog points at ``levels`` (fractions of TDP) for the typical demand of the runs."""
    norm = normalized_curve(runs)
    d_typ = float(demand(runs).median())
    lowest = float(runs["cap_fraction"].min())
    caps = np.asarray([c for c in levels if c >= lowest - 1e-9], dtype=float)
    f, p = curve_at(norm, d_typ, caps)
    f = f / f[-1]  # the TDP level is exactly 1.0 throughput
    return [
        {
            "cap_fraction": float(c),
            "throughput_factor": round(float(min(t, 1.0)), 4),
            "power_fraction": round(float(w), 4),
        }
        for c, t, w in zip(caps, f, p, strict=True)
    ]


def power_curves(reference: Path) -> list[dict[str, Any]]:
    """The catalog entry of each ``ZEUS_GPUS`` curve: its points (``fit_power_curve``), description and source."""
    runs = relative_runs(zeus_traces(reference))
    curves = []
    for curve_id, meta in ZEUS_GPUS.items():
        r = runs[runs["curve"] == curve_id]
        curves.append(
            {
                "id": curve_id,
                "description": (
                    f"{r.groupby(['network', 'batch_size', 'optimizer']).ngroups} Zeus runs "
                    f"({', '.join(sorted(r['network'].unique()))}) on {meta['gpu']}, normalized by each "
                    f"run's uncapped demand; curve at the median demand {float(demand(r).median()):.2f} x TDP: "
                    "throughput relative to the highest limit and average power / TDP at standard cap levels"
                ),
                "points": fit_power_curve(r),
                "source": f"reference/zeus/{meta['file']} (ml-energy/zeus NSDI'23 traces, Apache-2.0)",
            }
        )
    return curves


def write_power_caps(reference: Path, out: Path) -> None:
    """Write catalog/power_caps.yaml (``out``): the fitted curves under a header saying how they were made."""
    header = (
        "# Power-cap curves, generated by `planner calibrate` from reference/zeus (do not edit by hand).\n"
        "# throughput_factor: throughput at the cap / throughput at TDP; power_fraction: average board\n"
        "# power under training load / TDP, for the GPU class's median uncapped demand (a cap binds only\n"
        "# below the demand; see planner/data/calibration.py). GPUs without measurements use the curve named in\n"
        "# gpus.yaml\n"
        "# (datacenter-v100 stands in for A100/H100/H200/B200/MI300X; workstation-a40 for L40S and RTX\n"
        "# A6000; workstation-rtx6000 for RTX 4000 Ada).\n"
    )
    out.write_text(header + yaml.safe_dump(power_curves(reference), sort_keys=False))


def isotonic(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Pool-adjacent-violators: the non-decreasing sequence closest to x in weighted least squares."""
    blocks: list[list[float]] = []  # [value, weight, count]
    for xi, wi in zip(x, w, strict=True):
        blocks.append([float(xi), float(wi), 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            v2, w2, c2 = blocks.pop()
            v1, w1, c1 = blocks.pop()
            blocks.append([(v1 * w1 + v2 * w2) / (w1 + w2), w1 + w2, c1 + c2])
    return np.concatenate([[v] * int(c) for v, _, c in blocks])


def at_scale_convergence(reference: Path, benchmark: str) -> pd.DataFrame:
    """The convergence-vs-batch table (as in mlperf_convergence_vs_batch.csv) of a benchmark that file lacks, from
    mlperf_training_at_scale.csv: per global batch, the median over results of each result's mean converged
    samples, and the number of results."""
    df = pd.read_csv(reference / "mlperf_training_at_scale.csv")
    df = df[df["benchmark"] == benchmark]
    per_result = df["converged_at_per_run"].map(lambda v: float(np.mean([float(x) for x in str(v).split(";") if x])))
    grouped = per_result.groupby(df["global_batch"])
    return pd.DataFrame(
        {
            "benchmark": benchmark,
            "global_batch": grouped.median().index.astype(int),
            "submissions": grouped.size().to_numpy(),
            "median_converged_at": grouped.median().to_numpy(),
        }
    )


def convergence_points(reference: Path, benchmark: str, reference_batch: int) -> tuple[float, list[dict[str, Any]]]:
    """(samples at the reference batch, [{global_batch, samples_factor}]) from the MLPerf medians
    (mlperf_convergence_vs_batch.csv, or the at-scale results for a benchmark it does not list)."""
    df = pd.read_csv(reference / "mlperf_convergence_vs_batch.csv")
    df = df[df["benchmark"] == benchmark].sort_values("global_batch")
    if df.empty:
        df = at_scale_convergence(reference, benchmark).sort_values("global_batch")
    fit = isotonic(df["median_converged_at"].to_numpy(float), df["submissions"].to_numpy(float))
    base = float(np.interp(np.log(reference_batch), np.log(df["global_batch"].to_numpy(float)), fit))
    pts = []
    last = None
    for b, v in zip(df["global_batch"], fit, strict=True):
        f = round(float(v) / base, 4)
        if f != last:  # keep the knots only
            pts.append({"global_batch": int(b), "samples_factor": max(0.5, f)})
            last = f
    return base, pts
