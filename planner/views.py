"""Data and charts for the front ends (Streamlit app, reports). No Streamlit here: app.py stays a thin layer.

Charts are Altair (Vega-Lite) objects with units on every axis; they export to HTML with ``chart.to_html()``.
"""

from __future__ import annotations

import io
import json
import shlex
from typing import Any

import numpy as np
import pandas as pd
import yaml
from pydantic import BaseModel, ValidationError

from planner.data import Catalog, parse_records
from planner.errors import PlannerInputError, describe_validation_error
from planner.model import Work, evaluate_space, work_from
from planner.optimize import PlanRequest, PlanResult, node_ladder
from planner.schemas import Gpu, Server, Workload

SCALING_NODES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
PLAN_COLUMNS = [
    "server",
    "gpu",
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


# --------------------------------------------------------------------------------------------- tables
def plan_card(res: PlanResult) -> dict[str, str]:
    """Human-readable figures of the recommended plan."""
    p = res.plan
    if p is None:
        return {}
    return {
        "Servers": f"{p.nodes} x {p.server}",
        "GPUs": f"{p.gpus} x {p.gpu}",
        "Fabric": f"{p.fabric} ({p.switches} switches)",
        "Power cap": f"{p.power_cap:.0%} ({p.power_cap_w:.0f} W)",
        "Layout": p.layout,
        "Time to train": f"{p.time_to_train_days:,.2f} days",
        "Facility power": f"{p.facility_power_kw:,.1f} kW",
        "Facility energy": f"{p.facility_energy_kwh:,.0f} kWh",
        "Cost": f"${p.cost_usd:,.0f}",
        "Up-front": f"${p.upfront_usd:,.0f}",
        "Carbon": f"{p.carbon_kg / 1000:,.2f} t CO2e",
        "Bottleneck": p.bottleneck,
        "Binding": ", ".join(res.binding) or "none",
        "Purchase": f"{p.purchase} at {p.site}",
    }


def alternatives_frame(res: PlanResult) -> pd.DataFrame:
    df = res.to_frame()
    if df.empty:
        return df
    cols = ["role", *PLAN_COLUMNS, "bottleneck"]
    return df[cols]


def plan_csv(res: PlanResult) -> str:
    return alternatives_frame(res).to_csv(index=False)


def cli_command(req: PlanRequest) -> str:
    """The `planner solve` command that reproduces the app's request."""
    parts = ["planner", "solve", "--model", req.model]
    for name in ("samples", "tokens", "epochs"):
        v = getattr(req, name)
        if v is not None:
            parts += [f"--{name}", f"{v:g}"]
    if req.deadline_days is not None:
        parts += ["--deadline-days", f"{req.deadline_days:g}"]
    if req.budget_usd is not None:
        parts += ["--budget-usd", f"{req.budget_usd:g}", "--budget-kind", req.budget_kind]
    if req.power_kw is not None:
        parts += ["--power-kw", f"{req.power_kw:g}"]
    parts += ["--site", ",".join(req.sites), "--objective", req.objective, f"--{req.purchase}"]
    if req.gpus:
        parts += ["--gpus", ",".join(req.gpus)]
    if req.fabrics:
        parts += ["--fabrics", ",".join(req.fabrics)]
    if req.max_nodes != 1024:
        parts += ["--max-nodes", str(req.max_nodes)]
    return " ".join(shlex.quote(p) for p in parts)


# --------------------------------------------------------------------------------------------- charts
def _alt() -> Any:
    import altair as alt

    return alt


def pareto_chart(front: pd.DataFrame, x: str, y: str) -> Any:
    alt = _alt()
    units = {"cost": "USD", "energy": "kWh (facility)", "carbon": "kg CO2e", "time": "h"}
    return (
        alt.Chart(front)
        .mark_line(point=True)
        .encode(
            x=alt.X(f"{x}:Q", title=f"{x} ({units[x]})"),
            y=alt.Y(f"{y}:Q", title=f"{y} ({units[y]})"),
            tooltip=["server", "nodes", "fabric", "power_cap", "time_to_train_days"],
        )
        .properties(title=f"Pareto front: {x} vs {y}", width=520, height=320)
    )


def scaling_frame(catalog: Catalog, req: PlanRequest) -> pd.DataFrame:
    """Throughput and scaling efficiency vs node count, best server per GPU type, cap 1.0."""
    wl = catalog.workload(req.model)
    samples = work_from(wl, req.samples, req.tokens, req.epochs)
    servers = [s.id for s in catalog.gpu_servers()]
    df = evaluate_space(
        catalog,
        wl,
        servers=servers,
        caps=[1.0],
        nodes=list(SCALING_NODES),
        work=Work(samples, req.global_batch, req.precision),
    )
    df = df[df["fits_memory"]]
    if df.empty:
        return df
    best = df.sort_values("throughput_samples_per_s", ascending=False).drop_duplicates(["gpu", "nodes"])
    best = best.sort_values(["gpu", "nodes"]).copy()
    base = best.groupby("gpu", observed=True).apply(
        lambda g: (g["throughput_samples_per_s"] / g["gpus"]).iloc[0], include_groups=False
    )
    best["scaling_efficiency"] = best["throughput_samples_per_s"] / best["gpus"] / best["gpu"].map(base).astype(float)
    best["gpu"] = best["gpu"].astype(str)
    return best[["gpu", "server", "nodes", "gpus", "throughput_samples_per_s", "scaling_efficiency", "bottleneck"]]


def scaling_chart(frame: pd.DataFrame, res: PlanResult | None) -> Any:
    alt = _alt()
    base = alt.Chart(frame).encode(x=alt.X("nodes:Q", scale=alt.Scale(type="log"), title="nodes"), color="gpu:N")
    thr = base.mark_line(point=True).encode(
        y=alt.Y("throughput_samples_per_s:Q", scale=alt.Scale(type="log"), title="throughput (samples/s)"),
        tooltip=["server", "nodes", "throughput_samples_per_s", "bottleneck"],
    )
    eff = base.mark_line(point=True).encode(
        y=alt.Y("scaling_efficiency:Q", title="scaling efficiency (per-GPU vs 1 node)")
    )
    layers = [thr]
    if res is not None and res.plan is not None:
        mark = pd.DataFrame(
            [
                {
                    "nodes": res.plan.nodes,
                    "throughput_samples_per_s": res.plan.throughput_samples_per_s,
                    "gpu": res.plan.gpu,
                }
            ]
        )
        layers.append(
            alt.Chart(mark)
            .mark_point(shape="diamond", size=250, filled=True, color="black")
            .encode(x="nodes:Q", y="throughput_samples_per_s:Q", tooltip=["gpu", "nodes"])
        )
    return alt.vconcat(
        alt.layer(*layers).properties(title="Scaling (chosen plan: black diamond)", width=520, height=260),
        eff.properties(width=520, height=180),
    )


def power_cap_frame(catalog: Catalog, req: PlanRequest, res: PlanResult) -> pd.DataFrame:
    p = res.plan
    assert p is not None
    wl = catalog.workload(req.model)
    samples = work_from(wl, req.samples, req.tokens, req.epochs)
    caps = sorted(set(req.power_caps) | {0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0})
    df = evaluate_space(
        catalog,
        wl,
        space=pd.DataFrame({"server": p.server, "fabric": p.fabric, "power_cap": caps, "nodes": p.nodes}),
        site=p.site,
        purchase=p.purchase,
        work=Work(samples, req.global_batch, req.precision),
    )
    df = df.assign(time_to_train_days=df["time_to_train_h"] / 24.0)
    return df[["power_cap", "power_cap_w", "time_to_train_days", "facility_energy_kwh", "cost_usd"]]


def power_cap_chart(frame: pd.DataFrame) -> Any:
    alt = _alt()
    return (
        alt.Chart(frame)
        .mark_line(point=True)
        .encode(
            x=alt.X("time_to_train_days:Q", title="time to train (days)"),
            y=alt.Y("facility_energy_kwh:Q", title="facility energy (kWh)"),
            tooltip=["power_cap", "power_cap_w", "time_to_train_days", "facility_energy_kwh"],
        )
        .properties(title="Power-cap trade-off (each point a cap level)", width=520, height=300)
    )


def breakdown_frame(res: PlanResult) -> pd.DataFrame:
    """Cost (hardware vs energy) and facility energy (GPUs, host, network, cooling/PUE) per plan."""
    rows = []
    for role, p in [("plan", res.plan)] + [(f"alt {i + 1}", a) for i, a in enumerate(res.alternatives)]:
        if p is None:
            continue
        e = p.estimate
        label = f"{role}: {p.nodes}x {p.server}"
        h = e.time_to_train_h
        gpu_kwh = e.gpus * e.gpu_power_w * h / 1000.0
        node_kwh = e.nodes * e.node_power_w * h / 1000.0
        it_kwh = e.energy_kwh
        rows += [
            {"plan": label, "kind": "cost (USD)", "part": "hardware / rent", "value": e.cost_breakdown_usd["hardware"]},
            {"plan": label, "kind": "cost (USD)", "part": "energy", "value": e.cost_breakdown_usd["energy"]},
            {"plan": label, "kind": "energy (kWh)", "part": "GPUs", "value": gpu_kwh},
            {"plan": label, "kind": "energy (kWh)", "part": "host + PSU loss", "value": max(node_kwh - gpu_kwh, 0.0)},
            {"plan": label, "kind": "energy (kWh)", "part": "switches", "value": max(it_kwh - node_kwh, 0.0)},
            {"plan": label, "kind": "energy (kWh)", "part": "cooling (PUE)", "value": e.facility_energy_kwh - it_kwh},
        ]
    return pd.DataFrame(rows)


def breakdown_chart(frame: pd.DataFrame) -> Any:
    alt = _alt()
    charts = []
    for kind in ("cost (USD)", "energy (kWh)"):
        sub = frame[frame["kind"] == kind]
        charts.append(
            alt.Chart(sub)
            .mark_bar()
            .encode(
                y=alt.Y("plan:N", title=None),
                x=alt.X("value:Q", stack="zero", title=kind),
                color="part:N",
                tooltip=["plan", "part", "value"],
            )
            .properties(title=kind, width=460, height=30 * max(1, sub["plan"].nunique()))
        )
    return alt.vconcat(*charts)


# ------------------------------------------------------------------------------------ catalog editing
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
    except (yaml.YAMLError, UnicodeDecodeError, pd.errors.ParserError, ValueError) as exc:
        raise PlannerInputError(f"{name}: not valid YAML/CSV: {exc}") from None
    if isinstance(loaded, dict):
        loaded = [loaded]
    if not isinstance(loaded, list) or not all(isinstance(r, dict) for r in loaded):
        raise PlannerInputError(f"{name}: expected a list of mappings (one per entry)")
    return pd.DataFrame(loaded)


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


def result_json(res: PlanResult) -> str:
    return json.dumps(json.loads(res.model_dump_json()), indent=2)


def ladder(max_nodes: int) -> list[int]:
    return node_ladder(max_nodes)


# ------------------------------------------------------------------------------------------- fleet
def fleet_gantt(plan: Any, slot_hours: float) -> Any:
    """Gantt-style schedule (one bar per job over the slots it runs) and facility power per slot."""
    alt = _alt()
    rows = []
    for a in plan.assignments:
        for t in a["slots"]:
            rows.append(
                {
                    "job": a["job"],
                    "server": f"{a['nodes']} x {a['server']}",
                    "start_slot": t,
                    "end_slot": t + 1,
                    "start_h": t * slot_hours,
                    "end_h": (t + 1) * slot_hours,
                }
            )
    bars = (
        alt.Chart(pd.DataFrame(rows))
        .mark_bar()
        .encode(
            x=alt.X("start_slot:Q", title="slot"),
            x2="end_slot:Q",
            y=alt.Y("job:N", title=None),
            color="server:N",
            tooltip=["job", "server", "start_slot"],
        )
        .properties(title="Schedule", width=560, height=28 * len(plan.assignments))
    )
    power = pd.DataFrame(plan.schedule).groupby("slot", as_index=False)["facility_power_kw"].sum()
    line = (
        alt.Chart(power)
        .mark_bar()
        .encode(x=alt.X("slot:O", title="slot"), y=alt.Y("facility_power_kw:Q", title="facility power (kW)"))
        .properties(title="Power per slot", width=560, height=160)
    )
    return alt.vconcat(bars, line)


def read_fleet_upload(name: str, data: bytes) -> Any:
    from planner.fleet import FleetRequest

    try:
        loaded = yaml.safe_load(data.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise PlannerInputError(f"{name}: not valid YAML: {exc}") from None
    try:
        return FleetRequest.model_validate(loaded)
    except ValidationError as exc:
        raise PlannerInputError(describe_validation_error(exc, name)) from None


def read_batch_upload(name: str, data: bytes) -> list[dict[str, Any]]:
    from planner.batch import expand

    if name.lower().endswith(".csv"):
        from planner.data import _csv_cell

        df = pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False)
        rows = [{k: _csv_cell(v) for k, v in r.items()} for r in df.to_dict(orient="records")]
        return expand(rows)
    try:
        spec = yaml.safe_load(data.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise PlannerInputError(f"{name}: not valid YAML: {exc}") from None
    return expand(spec)
