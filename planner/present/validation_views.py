"""The accuracy report for people: the validation cases as a table, the summary by scale and the predicted-against-
published scatter."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from planner.data import Catalog, load_catalog
from planner.present.charts import altair
from planner.validation import reference_dir, run_cases

VALIDATION_TITLES = {
    "time_to_train": "time to train (MLPerf Training)",
    "step_time": "steady step time (MLPerf Training)",
    "goodput": "goodput (Llama 3 405B)",
    "energy": "energy to train (MLPerf Power)",
    "throughput": "throughput per GPU (Megatron-LM)",
    "power_cap_time": "power cap: time ratio (Zeus)",
    "power_cap_energy": "power cap: energy ratio (Zeus)",
}


def validation_frame(catalog: Catalog | None = None) -> pd.DataFrame:
    """Every validation case (planner/validation/run.py::run_cases): published vs predicted, one row each."""

    cases = run_cases(catalog or load_catalog(), reference_dir(None))
    return pd.DataFrame(
        [
            {
                "metric": VALIDATION_TITLES.get(c.kind, c.kind),
                "case": c.name,
                "split": c.split,
                "published": c.published,
                "predicted": c.predicted,
                "unit": c.unit,
                "error_pct": 100 * c.error,
            }
            for c in cases
            if np.isfinite(c.predicted)
        ]
    )


def validation_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Per metric: cases, the median absolute error of the held-out (test) cases -- the figure the README and
    docs/VALIDATION.md quote -- and of all cases, the worst, and the shares within 10% and 25%."""
    rows = []
    for metric, g in frame.groupby("metric", sort=False):
        err = g["error_pct"].abs()
        held_out = err[g["split"] == "test"]
        rows.append(
            {
                "Metric": metric,
                "Cases": len(g),
                "Held-out (test) cases": len(held_out),
                "Median |error|, held-out (%)": round(float(held_out.median()), 1) if len(held_out) else None,
                "Median |error|, all cases (%)": round(float(err.median()), 1),
                "Worst |error| (%)": round(float(err.max()), 1),
                "Within 10%": f"{(err <= 10).mean():.0%}",
                "Within 25%": f"{(err <= 25).mean():.0%}",
            }
        )
    return pd.DataFrame(rows)


def validation_scatter(frame: pd.DataFrame) -> Any:
    """Predicted vs published, log-log, one panel per unit; the diagonal is a perfect prediction."""
    alt = altair()
    charts = []
    for unit, g in frame.groupby("unit", sort=False):
        lo = float(min(g["published"].min(), g["predicted"].min())) * 0.8
        hi = float(max(g["published"].max(), g["predicted"].max())) * 1.25
        log = lo > 0
        scale = alt.Scale(type="log", domain=[lo, hi]) if log else alt.Scale(domain=[lo, hi])
        diag = pd.DataFrame({"published": [lo, hi], "predicted": [lo, hi]})
        pts = (
            alt.Chart(g)
            .mark_circle(size=40, opacity=0.7)
            .encode(
                x=alt.X("published:Q", scale=scale, title=f"published ({unit})"),
                y=alt.Y("predicted:Q", scale=scale, title=f"predicted ({unit})"),
                color=alt.Color("metric:N", title="metric"),
                shape=alt.Shape("split:N", title="split"),
                tooltip=["case", "split", alt.Tooltip("error_pct:Q", title="error %", format="+.1f")],
            )
        )
        line = alt.Chart(diag).mark_line(color="gray", strokeDash=[4, 4]).encode(x="published:Q", y="predicted:Q")
        charts.append(alt.layer(line, pts).properties(title=f"Predicted vs published ({unit})", width=300, height=260))
    return (
        alt.concat(*charts, columns=2)
        .resolve_scale(color="independent", shape="independent")
        .configure_legend(orient="bottom", direction="vertical", labelLimit=320)
    )
