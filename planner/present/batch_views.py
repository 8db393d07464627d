"""Batch results for people: the results table led by what a reader looks for, and the upload of a scenario file."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import yaml

from planner.batch import expand, parse_yaml, scenario_number
from planner.data import csv_records
from planner.errors import PlannerInputError
from planner.present.catalog_edit import yaml_problem
from planner.present.tables import PLAN_COLUMNS, readable

BATCH_LEAD_COLUMNS = [
    "id",
    "status",
    *PLAN_COLUMNS[: PLAN_COLUMNS.index("nodes") + 1],  # what the plan is, as in the plan tables
    "message",  # why a scenario failed, or what its plan adjusted: beside its status, not past the figures
    *PLAN_COLUMNS[PLAN_COLUMNS.index("nodes") + 1 : PLAN_COLUMNS.index("time_to_train_days")],
    "time_to_train_days",
    "cost_usd",
    "upfront_usd",
    "facility_energy_kwh",
    "carbon_kg",
    "layout",
]

RESULTS_ID = "results_id"  # the scenario's stable id in results.csv (a hash of its fields)


def label_value(value: Any) -> str:
    """A scenario field's value in a row's name: lists joined with '+', numbers short (1e+12, 0.7)."""
    if isinstance(value, list | tuple):
        return "+".join(label_value(v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    return str(value)


def scenario_labels(fields: list[dict[str, Any]]) -> list[str]:
    """Each scenario's name for people: its number in the file and the fields that tell it from the others
    ('3: gpus H100, purchase rent, sites us-colo'); the model alone when no field differs."""
    keys = sorted({k for f in fields for k in f})
    varying = [k for k in keys if len({json.dumps(f.get(k), sort_keys=True, default=str) for f in fields}) > 1]
    labels = []
    for n, f in enumerate(fields, start=1):
        said = [f"{k} {label_value(f[k])}" for k in varying if k in f]
        labels.append(f"{n}: " + (", ".join(said) if said else label_value(f.get("model", ""))))
    return labels


def batch_results_table(df: pd.DataFrame, scenarios: list[dict[str, Any]] | None = None) -> tuple[str, pd.DataFrame]:
    """(a headline, the table) of a batch's results for people: the counts per status ('6 scenarios: 5 optimal,
    1 bad_input'), then per scenario its name (its number in the file and the fields that tell it from the others,
    scenario_labels; the hash id results.csv keys it by comes last as 'Results id', and a message's 'scenario
    <hash>' says the number too), its status, the plan's hardware and beside them the message -- why it failed or
    what the plan adjusted -- then the figures, the scenario's fields (JSON) and the run's bookkeeping; 'gpus' (the
    plan's GPU count, not the request's allowed GPUs) named so. Rows in the order of ``scenarios`` when given (the
    file's), else as in ``df``. The results' own columns (results.csv) are unchanged."""
    counts = df["status"].astype(str).value_counts() if "status" in df else pd.Series(dtype=int)
    head = f"{len(df):,} scenario{'' if len(df) == 1 else 's'}: " + ", ".join(f"{n:,} {k}" for k, n in counts.items())
    df = df.copy()
    if scenarios is not None and "id" in df:
        position = {s["id"]: i for i, s in enumerate(scenarios)}
        df = df.iloc[sorted(range(len(df)), key=lambda i: position.get(df["id"].iloc[i], len(position)))]
    if "id" in df:
        fields = [json.loads(j) if isinstance(j, str) else {} for j in df.get("scenario", pd.Series([None] * len(df)))]
        labels = scenario_labels(fields)
        hashes = df["id"].astype(str).tolist()
        if "message" in df:
            df["message"] = [
                m.replace(f"scenario {h}", f"scenario {label.split(':')[0]}") if isinstance(m, str) else m
                for m, h, label in zip(df["message"], hashes, labels, strict=True)
            ]
        df[RESULTS_ID] = hashes
        df["id"] = labels
    lead = [c for c in BATCH_LEAD_COLUMNS if c in df]
    table = df[lead + [c for c in df.columns if c not in lead]].rename(columns={"gpus": "gpu_count"})
    return head, readable(table.reset_index(drop=True))


def read_batch_upload(name: str, data: bytes) -> list[dict[str, Any]]:
    """The scenarios of an uploaded file, read as `planner batch FILE` reads it (numbers as YAML 1.2 / CSV cells
    spelling numbers are numbers), so the app and the command line give the same scenarios and ids."""

    if name.lower().endswith(".csv"):  # read by the command line's reader: every row checked against the header
        return expand([{k: scenario_number(v) for k, v in r.items()} for r in csv_records(data, name)])
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise PlannerInputError(f"{name} is not a text file (not UTF-8); give a YAML or CSV scenario file") from None
    try:
        spec = parse_yaml(text)
    except yaml.YAMLError as exc:
        raise PlannerInputError(yaml_problem(name, exc, text)) from None
    return expand(spec)
