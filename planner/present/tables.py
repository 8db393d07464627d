"""Plan tables for people: readable column names with their units, numbers with separators, the alternatives, the
cost breakdown, CSV and JSON of a plan."""

from __future__ import annotations

import json
import re
import typing
from typing import Any

import numpy as np
import pandas as pd

from planner.data import Precision
from planner.formatting import (
    OBJECTIVE_UNITS_TEXT,
    cap_text,
    duration_text,
    duration_unit,
    money_value,
    number_text,
    round_sig,
    significant_text,
)
from planner.plan import PLAN_METRIC, PlanResult

PRECISIONS: list[str] = list(typing.get_args(Precision))


PLAN_COLUMNS = [
    "server",
    "gpu",
    "precision",  # what the plan computes in: an fp4 request runs in fp8 on a GPU without fp4 (to_frame says)
    "nodes",
    "fabric",
    "power_cap",
    "purchase",
    "site",
    "time_to_train_days",
    "facility_energy_kwh",
    "cost_usd",
    "carbon_kg",
]


COST_EXPLAINED = (
    "**Cost** is what this run costs: the bought hardware's share over the run (capex x run time / life) plus "
    "facility energy, or, when renting, the rent for the whole billing periods the run occupies (power and network "
    "included). **Up-front** is what must be spent before the run starts: the whole capex when buying, the whole "
    "rent when renting. A budget of kind *upfront* limits the up-front spend; *total* limits the cost. Bought "
    "servers serve their life (years): a bought run must end within it, so its hardware share is at most the capex."
)


OBJECTIVE_UNITS = OBJECTIVE_UNITS_TEXT


OBJECTIVE_METRIC = PLAN_METRIC  # objective -> the plan column it is measured in (with its unit)


READABLE = {
    "role": "Role",
    "server": "Server",
    "gpu": "GPU",
    "precision": "Precision",
    "nodes": "Nodes",
    "owned_nodes": "Owned nodes (of Nodes)",
    "fabric": "Fabric",
    "power_cap": "Power cap (of TDP)",
    "purchase": "Buy / rent",
    "site": "Site",
    "time_to_train_days": "Time to train (days)",
    # a run's start-up, in the unit readable_column writes it in
    "startup_s": "Start-up (s)",
    "startup_min": "Start-up (min)",
    "startup_h": "Start-up (h)",
    "startup_days": "Start-up (days)",
    "facility_energy_kwh": "Facility energy (kWh)",
    "cost_usd": "Cost (USD)",
    "upfront_usd": "Up-front (USD)",
    "carbon_kg": "Carbon (kg CO2e)",
    "bottleneck": "Bottleneck",
    "layout": "Layout",
    # acronyms of the catalog's fabric and site tables
    "nic_price_usd": "NIC price (USD)",
    "nic_power_w": "NIC power (W)",
    "pue": "PUE",
}


def human(x: float, digits: int = 4) -> str:
    """A number for people: ``digits`` significant figures with thousands separators, never an exponent between
    0.001 and 10^15 (1,555; 365,400; 9.79; 0.0123): planner.formatting.significant_text."""
    return significant_text(x, digits)


UNIT_SUFFIXES = {
    "_usd": "(USD)",
    "_years": "(years)",
    "_gbps": "(Gb/s)",
    "_tflops": "(TFLOP/s)",
    "_ms": "(ms)",
    "_us": "(us)",
    "_mb": "(MB)",
    "_kwh": "(kWh)",
    "_kw": "(kW)",
    "_w": "(W)",
    "_kg": "(kg CO2e)",
    "_days": "(days)",
    "_h": "(h)",
    "_min": "(min)",
    "_s": "(s)",
    "_gb": "(GB)",
    "_pct": "(%)",
}


def readable_header(col: str) -> str:
    """snake_case with a unit suffix -> 'Sentence case (unit)': facility_energy_kwh -> 'Facility energy (kWh)'."""
    if col in READABLE:
        return READABLE[col]
    per = re.fullmatch(r"(.+?)_(usd|kg|kwh|kw|w|h)_per_(.+)", col)  # penalty_usd_per_slot -> Penalty (USD per slot)
    if per:
        words, unit, base = per.group(1).replace("_", " "), per.group(2), per.group(3).replace("_", " ")
        unit = UNIT_SUFFIXES[f"_{unit}"].strip("()")
        base = {"kwh": "kWh", "gpu hour": "GPU hour"}.get(base, base)
        return f"{words[:1].upper()}{words[1:]} ({unit} per {base})"
    for suffix, unit in UNIT_SUFFIXES.items():
        if col.endswith(suffix) and len(col) > len(suffix):
            words = col[: -len(suffix)].replace("_", " ")
            return f"{words[:1].upper()}{words[1:]} {unit}"
    words = col.replace("_", " ")
    return words[:1].upper() + words[1:]


def display_number(v: float) -> float:
    """A figure for a table: whole units from 1,000 on (a capex of $6,069,200 stays 6,069,200, as the summary beside
    it and the command line's tables write it; 4 significant figures made it 6,069,000), else 4 significant
    figures."""
    x = float(v)
    return float(round(x)) if np.isfinite(x) and abs(x) >= 1000 else round_sig(x, 4)


# columns of a duration, by the unit their name ends in: how many of it make a day
DURATION_SUFFIXES = {"_days": 1.0, "_h": 24.0}


def readable_column(col: str, values: pd.Series) -> tuple[str, pd.Series]:
    """One column for people, as planner.formatting writes each quantity (the same on the plan card): a power cap
    as a share of TDP ('50%'), money to the cent under $10 and in whole dollars above, a duration in the unit its
    longest value reads in (a column of runs under an hour in minutes: 'time_to_train_min'), other figures as
    display_number rounds them."""
    if col == "power_cap" or col.endswith("_power_cap"):
        return col, values.map(lambda c: cap_text(c) if isinstance(c, int | float) and np.isfinite(c) else c)
    if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        return col, values
    if col.endswith("_usd"):
        return col, values.astype(float).map(money_value)
    suffix = next((s for s in DURATION_SUFFIXES if col.endswith(s) and len(col) > len(s)), None)
    if suffix is not None:
        days = values.astype(float) / DURATION_SUFFIXES[suffix]
        longest = days.abs().max()
        unit, per_day = duration_unit(longest if pd.notna(longest) else 1.0)
        name = f"{col[: -len(suffix)]}_{unit}"  # s, min, h or days: a column of zeros (no evaluations) reads in s
        return name, (days * per_day).map(display_number)
    if pd.api.types.is_float_dtype(values):
        return col, values.map(display_number)
    return col, values


def readable(df: Any) -> pd.DataFrame:
    """A table for people: readable headers with units, each column as readable_column writes it."""
    out = pd.DataFrame(df).copy()
    columns = {}
    for col in list(out.columns):
        name, values = readable_column(str(col), out[col])
        columns[readable_header(name)] = values
    return pd.DataFrame(columns, index=out.index)


def separated_columns(df: pd.DataFrame) -> list[str]:
    """The number columns a table shows with thousands separators: those with a value of 1,000 or more (a column
    of small fractions keeps its digits)."""
    cols = []
    for col in df.columns:
        values = df[col]
        if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
            top = pd.to_numeric(values, errors="coerce").abs().max()
            if pd.notna(top) and top >= 1000:
                cols.append(str(col))
    return cols


def blank_missing(df: pd.DataFrame) -> pd.DataFrame:
    """The table with every missing value (a field a job or server leaves unset) shown as an empty cell: each column
    that has one written as text, numbers with thousands separators, the missing ones empty (a data grid writes
    them 'None', which reads as a value). Columns without a missing value stay as they are."""
    out = df.copy()
    for col in out.columns:
        values = out[col]
        missing = values.isna().to_numpy()
        if not missing.any():
            continue
        numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
        out[col] = [
            "" if gone else (number_text(v) if numeric else str(v))
            for v, gone in zip(values.tolist(), missing, strict=True)
        ]
    return out


def alternatives_frame(res: PlanResult) -> pd.DataFrame:
    """Plan and alternatives, machine columns (for CSV)."""
    df = res.to_frame()  # with the precision each row computes in
    if df.empty:
        return df
    cols = ["role", *PLAN_COLUMNS, "upfront_usd", "bottleneck"]
    if res.request.owned:  # of each plan's nodes, those owned (the others are bought or rented)
        cols.insert(cols.index("nodes") + 1, "owned_nodes")
    if res.request.startup_s or res.request.evaluations:  # the time's terms, beside it: they sum to it
        df["training_days"] = df["training_h"] / 24.0
        at = cols.index("time_to_train_days") + 1
        cols[at:at] = RUN_TERM_COLUMNS
    return df[cols]


# a plan's time to train in its terms (training + evaluations + start-up), shown where the request states a run term
RUN_TERM_COLUMNS = ["training_days", "evaluation_h", "startup_h"]


def alternatives_table(res: PlanResult) -> pd.DataFrame:
    """Plan and alternatives for people: readable headers, each column as readable_column writes it (caps as a
    share of TDP, money to the cent under $10, times in the unit that reads)."""
    df = alternatives_frame(res)
    if df.empty:
        return df
    return readable(df)


# the app's alternatives table: headers short enough that the table fits beside the sidebar at 1,400 px
COMPACT_HEADERS = {
    "Time to train": "Time",
    "Training": "Train",
    "Evaluation": "Eval",
    "Facility energy": "Energy",
    "Facility power": "Power",
    "Power cap": "Cap",
    "Carbon (kg CO2e)": "Carbon (kg)",
    "Carbon limit (kg CO2e)": "Carbon limit (kg)",  # the Pareto view's epsilon on carbon
}
# left out of the app's alternatives table (in the plan CSV): the card says the plan's
VIEW_LEFT_OUT = ("bottleneck",)
# said once above the table when every row has the same value (the start-up is the request's: always)
VIEW_CONSTANT = ("precision", "purchase", "site", "startup_h")


def compact_header(header: str) -> str:
    """'Time to train (days)' -> 'Time (days)', 'Facility energy (kWh)' -> 'Energy (kWh)', 'Facility power (kW)' ->
    'Power (kW)', 'Power cap (of TDP)' -> 'Cap (of TDP)', 'Carbon (kg CO2e)' -> 'Carbon (kg)' (and a limit on each:
    'Facility energy limit (kWh)' -> 'Energy limit (kWh)'); other headers as they are."""
    for long, short in COMPACT_HEADERS.items():
        if header.startswith(long):
            return short + header[len(long) :]
    return header


def alternatives_view(res: PlanResult) -> tuple[pd.DataFrame, str]:
    """(the plan and its alternatives as the app shows them, a line saying what every row shares): rows named 'plan',
    'alt 1', 'alt 2', ...; precision, buy / rent and site left out when every row has the same one (said in the
    line: 'Every row: Precision: bf16; Buy / rent: buy; Site: us-colo.'), the bottleneck left out (the card says the
    plan's; the CSV has every row's), compact headers ('Time (days)'): the table fits beside the sidebar at 1,400 px.
    Figures as alternatives_table writes them."""
    df = alternatives_frame(res)
    if df.empty:
        return df, ""
    df = df.drop(columns=[c for c in VIEW_LEFT_OUT if c in df])
    df["role"] = ["plan" if r == "plan" else f"alt {i}" for i, r in enumerate(df["role"])]
    return compact_view(df, VIEW_CONSTANT)


def compact_view(df: pd.DataFrame, constant: tuple[str, ...] = VIEW_CONSTANT) -> tuple[pd.DataFrame, str]:
    """(a table of machine columns as the app shows it, a line saying what every row shares): the ``constant``
    columns that have the same value in every row left out and said once in the line ('Every row: Precision: bf16;
    Buy / rent: buy.'), the others as readable writes them under compact headers ('Time (days)'). The app's
    alternatives and Pareto tables."""
    same = [c for c in constant if c in df and df[c].notna().all() and df[c].nunique() == 1]
    line = ("Every row: " + "; ".join(constant_text(c, df[c].iloc[0]) for c in same) + ".") if same else ""
    table = readable(df.drop(columns=same))
    return table.rename(columns={c: compact_header(c) for c in table.columns}), line


def constant_text(col: str, value: Any) -> str:
    """'Precision: bf16', 'Start-up: 1 h': a column every row shares, as the line above the app's table says it."""
    if col == "startup_h":
        return f"Start-up: {duration_text(float(value) / 24.0)}"
    return f"{readable_header(col)}: {value}"


def plan_csv(res: PlanResult) -> str:
    return alternatives_frame(res).to_csv(index=False)


def plan_cost_breakdown(plan: Any) -> dict[str, float]:
    """The plan's cost in its two parts, summing to plan.cost_usd: the hardware share (or rent) and energy. The
    hardware share is the plan's, net of owned servers' credit (plan.owned.owned_credit_usd); the estimate's own
    breakdown is the exact model's for the configuration bought new."""
    energy = float(plan.estimate.cost_breakdown_usd["energy"])
    return {"hardware": float(plan.cost_usd) - energy, "energy": energy}


def breakdown_frame(res: PlanResult) -> pd.DataFrame:
    """Cost (hardware vs energy) and facility energy (GPUs, host, network, cooling/PUE) per plan."""
    rows = []
    for role, p in [("plan", res.plan)] + [(f"alt {i + 1}", a) for i, a in enumerate(res.alternatives)]:
        if p is None:
            continue
        e = p.estimate
        # the hardware that tells alternatives apart (the same servers often differ in fabric or cap only)
        label = f"{role}: {p.nodes}x {p.server}, {p.fabric}, cap {p.power_cap:.0%}" + (
            ", rent" if p.purchase == "rent" else ""
        )
        h = e.time_to_train_h
        gpu_kwh = e.gpus * e.gpu_power_w * h / 1000.0
        node_kwh = e.nodes * e.node_power_w * h / 1000.0
        it_kwh = e.energy_kwh
        money = plan_cost_breakdown(p)
        rows += [
            {"plan": label, "kind": "cost (USD)", "part": "hardware / rent", "value": money["hardware"]},
            {"plan": label, "kind": "cost (USD)", "part": "energy", "value": money["energy"]},
            {"plan": label, "kind": "energy (kWh)", "part": "GPUs", "value": gpu_kwh},
            {"plan": label, "kind": "energy (kWh)", "part": "host + PSU loss", "value": max(node_kwh - gpu_kwh, 0.0)},
            {"plan": label, "kind": "energy (kWh)", "part": "switches", "value": max(it_kwh - node_kwh, 0.0)},
            {"plan": label, "kind": "energy (kWh)", "part": "cooling (PUE)", "value": e.facility_energy_kwh - it_kwh},
        ]
    return pd.DataFrame(rows)


def result_json(res: PlanResult) -> str:
    return json.dumps(json.loads(res.model_dump_json()), indent=2)
