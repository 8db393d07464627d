"""Batch results for people: the results table led by what a reader looks for, and the upload of a scenario file."""

from __future__ import annotations

import io
from typing import Any

import pandas as pd
import yaml

from planner.batch import expand, parse_yaml, scenario_number
from planner.data import csv_cell
from planner.errors import PlannerInputError
from planner.present.catalog_edit import first_line
from planner.present.tables import PLAN_COLUMNS, readable

BATCH_LEAD_COLUMNS = [
    "id",
    "status",
    *PLAN_COLUMNS[: PLAN_COLUMNS.index("time_to_train_days")],  # the hardware, as in the plan tables
    "time_to_train_days",
    "cost_usd",
    "upfront_usd",
    "facility_energy_kwh",
    "carbon_kg",
    "layout",
    "message",
]


def batch_results_table(df: pd.DataFrame) -> tuple[str, pd.DataFrame]:
    """(a headline, the table) of a batch's results for people: the counts per status ('6 scenarios: 5 optimal,
    1 bad_input'), then per scenario its status and plan first -- server, nodes, fabric, time, money -- and its
    message, the scenario's fields (JSON) and the run's bookkeeping after them; 'gpus' (the plan's GPU count, not the
    request's allowed GPUs) named so. The results' own columns (results.csv) are unchanged."""
    counts = df["status"].astype(str).value_counts() if "status" in df else pd.Series(dtype=int)
    head = f"{len(df):,} scenarios: " + ", ".join(f"{n:,} {k}" for k, n in counts.items())
    lead = [c for c in BATCH_LEAD_COLUMNS if c in df]
    table = df[lead + [c for c in df.columns if c not in lead]].rename(columns={"gpus": "gpu_count"})
    return head, readable(table)


def read_batch_upload(name: str, data: bytes) -> list[dict[str, Any]]:
    """The scenarios of an uploaded file, read as `planner batch FILE` reads it (numbers as YAML 1.2 / CSV cells
    spelling numbers are numbers), so the app and the command line give the same scenarios and ids."""

    if name.lower().endswith(".csv"):
        try:
            df = pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as exc:
            raise PlannerInputError(f"{name}: not a valid CSV scenario table: {first_line(exc)}") from None
        rows = [{k: scenario_number(csv_cell(v)) for k, v in r.items()} for r in df.to_dict(orient="records")]
        return expand(rows)
    try:
        spec = parse_yaml(data.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise PlannerInputError(f"{name}: not valid YAML: {exc}") from None
    return expand(spec)
