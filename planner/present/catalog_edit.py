"""Catalog tables the app edits: a table per kind (servers, GPUs, fabrics, sites, workloads), uploads read and
checked, edits applied through the same schemas as the YAML files."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pandas as pd
import yaml
from pydantic import BaseModel, ValidationError

from planner.data import Catalog, Gpu, Server, Workload, parse_records
from planner.errors import PlannerInputError, describe_validation_error

TABLES: dict[str, tuple[str, type[BaseModel]]] = {"servers": ("servers", Server), "gpus": ("gpus", Gpu)}


def catalog_table(catalog: Catalog, table: str) -> pd.DataFrame:
    attr, _ = TABLES[table]
    rows = [x.model_dump() for x in getattr(catalog, attr).values()]
    df = pd.DataFrame(rows)
    for col in df.columns:
        if df[col].map(lambda v: isinstance(v, list)).any():
            df[col] = df[col].map(lambda v: ",".join(v) if isinstance(v, list) else v)
    return df


def _row_records(df: pd.DataFrame) -> list[dict[str, Any]]:
    records = []
    for rec in df.to_dict(orient="records"):
        clean: dict[str, Any] = {}
        for k, v in rec.items():
            if isinstance(v, float) and np.isnan(v):
                v = None
            if k == "fabrics" and isinstance(v, str):
                v = [x.strip() for x in v.split(",") if x.strip()]
            clean[str(k)] = v
        records.append(clean)
    return records


def apply_table(catalog: Catalog, table: str, df: pd.DataFrame) -> tuple[Catalog | None, list[str]]:
    """Validate an edited table; (new catalog, []) or (None, one message per bad field)."""
    attr, model = TABLES[table]
    try:
        items = parse_records(_row_records(df), model, table)
        new = catalog.replace(**{attr: {getattr(i, "id"): i for i in items}})  # noqa: B009
    except PlannerInputError as exc:
        return None, str(exc).splitlines()
    return new, []


def read_upload(name: str, data: bytes) -> pd.DataFrame:
    """A YAML (list of mappings) or CSV upload as a table; PlannerInputError with the file name if malformed."""
    try:
        if name.lower().endswith(".csv"):
            return pd.read_csv(io.BytesIO(data))
        loaded = yaml.safe_load(data.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        raise PlannerInputError(f"{name}: not valid YAML/CSV: {first_line(exc)}") from None
    if isinstance(loaded, dict):
        loaded = [loaded]
    if not isinstance(loaded, list) or not all(isinstance(r, dict) for r in loaded):
        raise PlannerInputError(f"{name}: expected a list of mappings (one per entry)")
    return pd.DataFrame(loaded)


def first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def table_yaml(catalog: Catalog, table: str) -> str:
    attr, _ = TABLES[table]
    return yaml.safe_dump([x.model_dump() for x in getattr(catalog, attr).values()], sort_keys=False)


def add_workload(catalog: Catalog, name: str, data: bytes) -> Catalog:
    try:
        loaded = yaml.safe_load(data.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise PlannerInputError(f"{name}: not valid YAML: {exc}") from None
    try:
        wl = Workload.model_validate(loaded)
    except ValidationError as exc:
        raise PlannerInputError(describe_validation_error(exc, name)) from None
    return catalog.replace(workloads={**catalog.workloads, wl.id: wl})
