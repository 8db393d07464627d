"""Data and charts for the front ends (Streamlit app, reports). No Streamlit here: app.py stays a thin layer.

Charts are Altair (Vega-Lite) objects with units on every axis; they export to HTML with ``chart.to_html()``.
"""

from __future__ import annotations

import io
import json
import re
import shlex
import typing
from typing import Any

import numpy as np
import pandas as pd
import yaml
from pydantic import BaseModel, ValidationError

from planner.checks import allowed_servers, catalog_for, format_owned, in_service, owned_fabric
from planner.data import Catalog, Gpu, Precision, Server, Workload, parse_records
from planner.errors import PlannerInputError, describe_validation_error
from planner.formatting import OBJECTIVE_UNITS_TEXT, color_scheme, precision_caveat
from planner.physics import Work, compute, evaluate_space, work_from
from planner.plan import PLAN_METRIC, PlanRequest, PlanResult, node_ladder, purchase_text

PRECISIONS: list[str] = list(typing.get_args(Precision))
SCALING_NODES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
PLAN_COLUMNS = [
    "server",
    "gpu",
    "precision",  # what the plan computes in: an fp4 request runs in fp8 on a GPU without fp4 (plan_precisions)
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
    "facility_energy_kwh": "Facility energy (kWh)",
    "cost_usd": "Cost (USD)",
    "upfront_usd": "Up-front (USD)",
    "carbon_kg": "Carbon (kg CO2e)",
    "bottleneck": "Bottleneck",
    "layout": "Layout",
}


def _sig(x: float, digits: int = 3) -> float:
    """x rounded to ``digits`` significant figures (for display)."""
    if not np.isfinite(x) or x == 0:
        return float(x)
    return float(round(x, -int(np.floor(np.log10(abs(x)))) + digits - 1))


def human(x: float, digits: int = 4) -> str:
    """A number for people: ``digits`` significant figures with thousands separators, never an exponent between
    0.001 and 10^15 (1,555; 365,400; 9.79; 0.0123)."""
    v = _sig(float(x), digits)
    if not np.isfinite(v):
        return str(v)
    if v == 0 or abs(v) >= 10 ** (digits - 1):
        return f"{v:,.0f}"
    decimals = max(digits - 1 - int(np.floor(np.log10(abs(v)))), 0)
    text = f"{v:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if decimals else text


def plan_card(res: PlanResult) -> dict[str, str]:
    """Human-readable figures of the recommended plan."""
    p = res.plan
    if p is None:
        return {}
    return {
        "Servers": f"{p.nodes} x {p.server}",
        "GPUs": f"{p.gpus} x {p.gpu}",
        "Fabric": f"{p.fabric} ({p.switches:,} switch{'' if p.switches == 1 else 'es'})",
        "Power cap": f"{p.power_cap:.0%} of TDP ({p.power_cap_w:.0f} W)",
        "Layout": p.layout,
        "Precision": p.estimate.precision,
        "Time to train": f"{human(p.time_to_train_days, 3)} days",
        "Facility power": f"{human(p.facility_power_kw)} kW",
        "Facility energy": f"{human(p.facility_energy_kwh)} kWh",
        "Cost (this run)": f"${p.cost_usd:,.0f}",
        "Up-front": f"${p.upfront_usd:,.0f}",
        "Carbon": f"{human(p.carbon_kg / 1000, 3)} t CO2e",
        "Bottleneck": p.bottleneck,
        "Binding": ", ".join(res.binding) or "none",
        "Purchase": purchase_text(p),
        **(
            {
                "Owned servers": f"{p.owned_nodes:,} used, {p.nodes - p.owned_nodes:,} new"
                + (
                    f"; {p.owned_unused_nodes:,} unused ({human(p.owned_unused_idle_kw)} kW idle if left on)"
                    if p.owned_unused_nodes
                    else ""  # was '; 0 unused (0 kW idle if left on)' on every plan that uses them all
                )
            }
            if res.request.owned
            else {}
        ),
    }


def plan_card_html(card: dict[str, str]) -> str:
    """The card as a wrapping grid: values are never cut off, whatever the window width."""
    import html

    cells = "".join(
        '<div style="padding:0.4rem 0.6rem;border:1px solid rgba(128,128,128,0.3);border-radius:0.4rem">'
        f'<div style="font-size:0.8rem;opacity:0.7">{html.escape(k)}</div>'
        f'<div class="plan-value" style="font-size:1.1rem;overflow-wrap:anywhere;word-break:break-word">'
        f"{html.escape(v)}</div></div>"
        for k, v in card.items()
    )
    return (
        '<div class="plan-card" style="display:grid;grid-template-columns:repeat(auto-fill,minmax(15rem,1fr));'
        f'gap:0.5rem">{cells}</div>'
    )


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
    return float(round(x)) if np.isfinite(x) and abs(x) >= 1000 else _sig(x, 4)


def readable(df: Any) -> pd.DataFrame:
    """A table for people: readable headers, floats as display_number rounds them."""
    out = pd.DataFrame(df).copy()
    for col in out.columns:
        if pd.api.types.is_float_dtype(out[col]):
            out[col] = out[col].map(display_number)
    return out.rename(columns={c: readable_header(str(c)) for c in out.columns})


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


def plan_precisions(res: PlanResult) -> list[str]:
    """The precision the plan and each alternative compute in, in to_frame's order (where some allowed GPUs lack
    the precision asked for, their plans compute in its fallback: fp4 in fp8, fp8 in bf16)."""
    return [p.estimate.precision for p in [res.plan, *res.alternatives] if p is not None]


def alternatives_frame(res: PlanResult) -> pd.DataFrame:
    """Plan and alternatives, machine columns (for CSV)."""
    df = res.to_frame()
    if df.empty:
        return df
    df["precision"] = plan_precisions(res)
    cols = ["role", *PLAN_COLUMNS, "upfront_usd", "bottleneck"]
    if res.request.owned:  # of each plan's nodes, those owned (the others are bought or rented)
        cols.insert(cols.index("nodes") + 1, "owned_nodes")
    return df[cols]


def alternatives_table(res: PlanResult) -> pd.DataFrame:
    """Plan and alternatives for people: readable headers, rounded numbers."""
    df = alternatives_frame(res)
    if df.empty:
        return df
    df = df.copy()
    for col in ("time_to_train_days", "facility_energy_kwh", "carbon_kg"):
        df[col] = df[col].map(display_number)
    for col in ("cost_usd", "upfront_usd"):
        df[col] = df[col].round(0)
    df["power_cap"] = df["power_cap"].map(lambda c: f"{c:.0%}")
    return df.rename(columns=READABLE)


def why_this_plan(res: PlanResult) -> list[str]:
    """Markdown lines: what decided the plan (binding constraints) and, per other GPU type, its best plan and
    how much better it would have to be to win."""
    p = res.plan
    if p is None:
        return []
    obj = res.objective
    metric = OBJECTIVE_METRIC[obj]
    unit = OBJECTIVE_UNITS[obj]
    best = float(getattr(p, metric))
    what = {
        "deadline": "the deadline (a later deadline would allow a plan with lower {obj})",
        "budget": "the budget (more money would allow a plan with lower {obj})",
        "power": "the power envelope (more kW would allow a plan with lower {obj})",
        "nodes": "the node limit (more nodes would allow a plan with lower {obj})",
        "rack": "the rack space (more rack units would allow a plan with lower {obj})",
    }
    lines = [f"**Minimising {obj}** ({unit}): this plan has {human(best)}."]
    if res.binding:
        lines.append("**Binding constraints:** " + "; ".join(what.get(b, b).format(obj=obj) for b in res.binding) + ".")
    else:
        lines.append(
            "**No constraint binds:** relaxing the deadline, budget, power or node limit by 1% (or one node) would "
            "not give a lower-" + obj + " plan; the limits are met or sit just past what a better plan would need."
        )
    seen = {p.gpu}
    for a in res.alternatives:
        if a.gpu in seen:
            continue
        seen.add(a.gpu)
        v = float(getattr(a, metric))
        need = 1 - best / v if v > 0 else 0.0
        extra = []
        if a.cost_usd < p.cost_usd:
            extra.append(f"${p.cost_usd - a.cost_usd:,.0f} cheaper")
        if a.time_to_train_days < p.time_to_train_days:
            extra.append(f"{p.time_to_train_days - a.time_to_train_days:,.3g} days faster")
        trade = f" (it is {' and '.join(extra)})" if extra else ""
        # in another precision than the plan's: its GPU lacks the one asked for (fp4 -> fp8 -> bf16)
        other = f" in {a.estimate.precision}" if a.estimate.precision != p.estimate.precision else ""
        lines.append(
            f"- Runner-up on **{a.gpu}**: {a.nodes} x {a.server}{other}, {obj} {human(v)} {unit} = "
            f"{(v / best - 1) if best else 0:+.1%}{trade}. To win it would need {need:.1%} less {obj} "
            f"(at most {human(best)} {unit})."
        )
    if len(seen) == 1:
        lines.append("- No other GPU type has a plan within the limits (or alternatives are off).")
    return lines


LIFE_FIELD = {"cli": "--life-years", "app": "the service life of bought servers", "fields": "life_years"}


def plan_notes(catalog: Catalog, req: PlanRequest, plan: Any, style: str = "cli") -> list[str]:
    """What was adjusted in the chosen plan (never silent): fp8 or fp4 on a GPU without it, fp4 for a workload
    no published FP4 recipe trains (textfmt.precision_caveat), a rounded-up global batch, owned servers it cannot
    run on -- the service life named as the command line's flag, the app's input or a batch scenario's field
    (``style`` 'cli', 'app', 'fields')."""
    notes = []
    precision = req.precision or catalog.workload(req.model).precision
    if precision != plan.estimate.precision and precision in ("fp8", "fp4"):
        notes.append(f"{plan.estimate.gpu} has no {precision}: this plan computes in {plan.estimate.precision}")
    caveat = precision_caveat(req.model, catalog.workload(req.model).family, plan.estimate.precision)
    notes += [caveat] if caveat else []  # fp4 for a CNN: no published recipe, an extrapolation
    if req.global_batch is not None and plan.global_batch != req.global_batch:
        notes.append(
            f"global batch {req.global_batch:,} was rounded up to {plan.global_batch:,} (a whole micro-batch for "
            f"each data-parallel replica of layout {plan.layout})"
        )
    notes += owned_notes(catalog, req, style)
    notes += owned_retiring_notes(catalog, req, plan.time_to_train_h, style)
    notes += batch_limit_notes(catalog.workload(req.model), req.global_batch)
    return notes


def batch_limit_notes(wl: Workload, global_batch: int | None) -> list[str]:
    """A global batch given above the workload's stated limit (plans the planner makes never exceed it): said,
    with what the estimate then assumes -- the same tokens for an LLM (Workload.convergence empty: optimistic,
    since beyond the critical batch more tokens reach the same loss), the convergence curve extrapolated for a
    workload with a published convergence point (compute.samples_factor)."""
    if global_batch is None:
        return []
    if wl.max_global_batch_tokens and wl.sequence_length:
        limit = int(wl.max_global_batch_tokens // wl.sequence_length)
        if global_batch <= limit:
            return []
        tokens = global_batch * wl.sequence_length
        assumed = (
            "this estimate trains the same tokens at it, which is optimistic: beyond the critical batch more tokens "
            "are needed to reach the same loss"
            if not wl.convergence
            else "the tokens to converge at it are extrapolated from the convergence data"
        )
        return [
            f"global batch {global_batch:,} sequences ({tokens:,.0f} tokens per step) is above the largest "
            f"'{wl.id}' trains at, {limit:,} sequences ({wl.max_global_batch_tokens:,.0f} tokens): {assumed}"
        ]
    if wl.max_global_batch and global_batch > wl.max_global_batch:
        return [
            f"global batch {global_batch:,} is above the largest with a published convergence point for "
            f"'{wl.id}', {int(wl.max_global_batch):,} samples: the samples to converge at it are extrapolated"
        ]
    return []


def owned_retiring_notes(catalog: Catalog, req: PlanRequest, run_h: float, style: str = "cli") -> list[str]:
    """Owned servers still in service that retire before a run of ``run_h`` hours would end, so the plan cannot
    run on them (a run never changes size: optimize.in_service) -- said, not left as silently unused."""
    out = []
    for o in req.owned:
        end = o.retire_at_age_years if o.retire_at_age_years is not None else req.life_years
        if o.age_years >= end or bool(in_service(o.age_years, run_h, end)):
            continue  # past their service already (owned_notes says so), or they serve the whole run
        left_days = (end - o.age_years) * 365.25
        out.append(
            f"the {o.count} owned {o.server} on {owned_fabric(catalog, o)} leave service in {left_days:,.3g} days "
            f"({o.age_years:g} of {end:g} years), before this plan's {run_h / 24:,.3g}-day run would end, so it "
            f"cannot run on them (a run never changes size); a run that ends by then could ({LIFE_FIELD[style]})"
        )
    return out


def owned_notes(catalog: Catalog, req: PlanRequest, style: str = "cli") -> list[str]:
    """Owned servers no plan of the request can run on, and why (never silently unused)."""
    allowed = set(allowed_servers(catalog, req))
    out = []
    for o in req.owned:
        fab = owned_fabric(catalog, o)
        why = []
        if req.purchase == "rent":
            why.append("the request only rents")
        if o.server not in allowed:
            why.append("the server is outside the allowed GPUs/servers")
        if req.fabrics is not None and fab not in req.fabrics:
            why.append(f"{fab} is outside the allowed fabrics")
        end = o.retire_at_age_years if o.retire_at_age_years is not None else req.life_years
        if o.age_years >= end:
            why.append(
                f"they are {o.age_years:g} years old, past the end of their service at {end:g} years "
                f"({LIFE_FIELD[style]}; raise it to keep them in service)"
            )
        if why:
            out.append(f"the {o.count} owned {o.server} on {fab} cannot serve this request: {'; '.join(why)}")
    return out


def plan_csv(res: PlanResult) -> str:
    return alternatives_frame(res).to_csv(index=False)


def cli_number(value: float) -> str:
    """A number as the command line reads it back exactly (the shortest round-trip form: 14999552000000, not
    1.49996e+13, which would be another request)."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def cli_command(req: PlanRequest) -> str:
    """The `planner solve` command that reproduces the request: every field that differs from the command's
    default, numbers in their exact form."""
    from planner.physics import DEFAULT_CAPS
    from planner.solver import SolverOptions

    parts = ["planner", "solve", "--model", req.model]
    for name in ("samples", "tokens", "epochs"):
        v = getattr(req, name)
        if v is not None:
            parts += [f"--{name}", cli_number(v)]
    if req.deadline_days is not None:
        parts += ["--deadline-days", cli_number(req.deadline_days)]
    if req.budget_usd is not None:
        parts += ["--budget-usd", cli_number(req.budget_usd), "--budget-kind", req.budget_kind]
    if req.power_kw is not None:
        parts += ["--power-kw", cli_number(req.power_kw)]
    parts += ["--site", ",".join(req.sites), "--objective", req.objective, f"--{req.purchase}"]
    for flag, items in (("--gpus", req.gpus), ("--servers", req.servers), ("--fabrics", req.fabrics)):
        if items:
            parts += [flag, ",".join(items)]
    if tuple(req.power_caps) != tuple(DEFAULT_CAPS):
        parts += ["--power-caps", ",".join(cli_number(c) for c in req.power_caps)]
    if req.global_batch is not None:
        parts += ["--global-batch", str(req.global_batch)]
    if req.max_nodes != 1024:
        parts += ["--max-nodes", str(req.max_nodes)]
    if req.max_rack_units is not None:
        parts += ["--max-rack-units", str(req.max_rack_units)]
    if req.precision is not None:
        parts += ["--precision", req.precision]
    if req.framework is not None:
        parts += ["--framework", req.framework]
    if req.owned:
        parts += ["--owned", format_owned(req.owned)]
    if req.life_years != 4.0:
        parts += ["--life-years", cli_number(req.life_years)]
    if req.alternatives != 3:
        parts += ["--alternatives", str(req.alternatives)]
    default = SolverOptions()
    if req.solver.time_limit_s != default.time_limit_s:
        parts += ["--time-limit", cli_number(req.solver.time_limit_s)]
    if req.solver.mip_rel_gap != default.mip_rel_gap:
        parts += ["--gap", cli_number(req.solver.mip_rel_gap)]
    if req.solver.threads is not None:
        parts += ["--threads", str(req.solver.threads)]
    return " ".join(shlex.quote(p) for p in parts)


# --------------------------------------------------------------------------------------------- charts
def _alt() -> Any:
    import altair as alt

    return alt


def chart_html(chart: Any) -> str:
    """A self-contained HTML page of the chart: Vega, Vega-Lite and vega-embed inlined from the installed
    vl-convert bundle, so it renders offline (no CDN)."""
    return str(chart.to_html(inline=True))


def chart_png(chart: Any) -> bytes:
    """The chart as a PNG (vl-convert, offline)."""
    import vl_convert as vlc

    return bytes(vlc.vegalite_to_png(chart.to_json(), scale=2))


def pareto_chart(front: pd.DataFrame, x: str, y: str) -> Any:
    alt = _alt()
    units = {"cost": "USD", "energy": "kWh (facility)", "carbon": "kg CO2e", "time": "h"}
    return (
        alt.Chart(front)
        .mark_line(point=True)
        .encode(
            x=alt.X(f"{x}:Q", title=f"{x} ({units[x]})"),
            y=alt.Y(f"{y}:Q", title=f"{y} ({units[y]})"),
            tooltip=[
                alt.Tooltip(f"{x}:Q", title=f"{x} ({units[x]})", format=",.4~r"),
                alt.Tooltip(f"{y}:Q", title=f"{y} ({units[y]})", format=",.4~r"),
                "server",
                *(["precision"] if "precision" in front else []),  # front_with_precision's column
                "nodes",
                "fabric",
                alt.Tooltip("power_cap:Q", title="cap (of TDP)", format=".0%"),
                alt.Tooltip("time_to_train_days:Q", title="time to train (days)", format=",.4~r"),
            ],
        )
        .properties(title=f"Pareto front: {x} vs {y}", width=520, height=320)
    )


def pareto_table(front: pd.DataFrame, x: str, y: str) -> pd.DataFrame:
    """The front for people: the two objectives under their plan names with units (cost -> 'Cost (USD)', energy ->
    'Facility energy (kWh)', as `planner pareto` prints them) and epsilon as the limit it puts on y ('Facility
    energy limit (kWh)'); were 'Cost', 'Energy', 'Epsilon'."""
    base, unit = PLAN_METRIC[y].rsplit("_", 1)
    named = front.rename(columns={"epsilon": f"{base}_limit_{unit}", x: PLAN_METRIC[x], y: PLAN_METRIC[y]})
    return readable(named)


def front_with_precision(catalog: Catalog, req: PlanRequest, front: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """(the Pareto front with the precision each point computes in, a note per GPU of the front that lacks the
    precision asked for: '<gpu> has no fp4: the front's plans on it compute in fp8', and textfmt.precision_caveat's
    for a precision no published recipe backs), as plan_notes says it of a plan: a front may mix GPUs with and
    without the precision, never silently."""
    if front.empty or "gpu" not in front:
        return front, []
    asked = req.precision or catalog.workload(req.model).precision
    used = {g: compute.precision_used(catalog.gpu(g), asked) for g in dict.fromkeys(front["gpu"])}
    front = front.copy()
    front.insert(list(front.columns).index("gpu") + 1, "precision", front["gpu"].map(used))
    notes = [
        f"{g} has no {asked}: the front's plans on it compute in {u}"
        for g, u in used.items()
        if asked in compute.LOW_PRECISION_FIELDS and u != asked
    ]
    family = catalog.workload(req.model).family  # fp4 for a CNN: an extrapolation (plan_notes says it of a plan)
    notes += [c for u in dict.fromkeys(used.values()) if (c := precision_caveat(req.model, family, u))]
    return front, notes


def pareto_note(front: pd.DataFrame, points: int) -> str:
    """Why the front may show fewer points than epsilon values were solved."""
    if len(front) >= points:
        return f"{len(front)} optimal plans, one per epsilon value."
    return (
        f"{len(front)} distinct optimal plans from {points} epsilon values: the front is a staircase of a few "
        "hardware choices, so several epsilon values share the same optimal plan (each is shown once)."
    )


def scaling_frame(catalog: Catalog, req: PlanRequest) -> pd.DataFrame:
    """Throughput and scaling efficiency vs node count (up to the request's max nodes), best allowed server per
    allowed GPU type (the request's GPUs, servers and fabrics, as the plan), cap 1.0. Efficiency = per-GPU
    throughput relative to the GPU type's first plotted (smallest fitting) point."""
    catalog = catalog_for(catalog, req)
    wl = catalog.workload(req.model)
    samples = work_from(wl, req.samples, req.tokens, req.epochs)
    nodes = [n for n in SCALING_NODES if n <= req.max_nodes]
    if req.max_nodes not in nodes and req.max_nodes < SCALING_NODES[-1]:
        nodes.append(req.max_nodes)
    df = evaluate_space(
        catalog,
        wl,
        servers=allowed_servers(catalog, req),
        fabrics=list(req.fabrics) if req.fabrics else None,
        caps=[1.0],
        nodes=nodes,
        work=Work(samples, req.global_batch, req.precision),
    )
    df = df[df["fits_memory"]]
    if df.empty:
        return df
    best = df.sort_values("throughput_samples_per_s", ascending=False).drop_duplicates(["gpu", "nodes"])
    best = best.sort_values(["gpu", "nodes"]).copy()
    per_gpu = best["throughput_samples_per_s"] / best["gpus"]
    first = per_gpu.groupby(best["gpu"], observed=True).transform("first")
    best["scaling_efficiency"] = per_gpu / first
    best["gpu"] = best["gpu"].astype(str)
    best["server"] = best["server"].astype(str)
    best["bottleneck"] = best["bottleneck"].astype(str)
    best["precision"] = best["precision"].astype(str)  # a GPU without the precision asked for: its fallback
    cols = ["gpu", "server", "precision", "nodes", "gpus", "throughput_samples_per_s", "scaling_efficiency"]
    return best[[*cols, "bottleneck"]]


def gpu_colors(gpus: pd.Series) -> Any:
    """A colour scale with a colour of its own for each GPU type (textfmt.color_scheme): Vega's default scheme has
    10 colours and repeats them, so with the whole catalog (14+ GPU types) two curves -- a100-pcie and mi325x --
    shared one blue and the legend could not tell them apart."""
    alt = _alt()
    n = int(pd.Series(gpus).nunique())
    scheme = color_scheme(n)
    return alt.Scale(scheme=scheme, count=n) if scheme == "rainbow" else alt.Scale(scheme=scheme)


def scaling_chart(
    frame: pd.DataFrame, res: PlanResult | None, max_nodes: int | None = None, deadline_days: float | None = None
) -> Any:
    alt = _alt()
    top = max_nodes or int(frame["nodes"].max())
    ticks = sorted({n for n in SCALING_NODES if n <= top} | {top})  # the plotted counts (were 2,0003,000 overlapping)
    xs = alt.X(
        "nodes:Q", scale=alt.Scale(type="log", domain=[1, top]), title="nodes (servers)", axis=alt.Axis(values=ticks)
    )
    series, legend = "gpu", "GPU"
    if "precision" in frame and frame["precision"].nunique() > 1:
        # GPUs without the precision asked for compute in its fallback (fp4 in fp8, fp8 in bf16): said in the legend,
        # not only in a tooltip -- never silent
        frame = frame.assign(series=frame["gpu"] + " (" + frame["precision"] + ")")
        series, legend = "series", "GPU (precision)"
    base = alt.Chart(frame).encode(x=xs, color=alt.Color(f"{series}:N", title=legend, scale=gpu_colors(frame[series])))
    thr = base.mark_line(point=True).encode(
        y=alt.Y("throughput_samples_per_s:Q", scale=alt.Scale(type="log"), title="throughput (samples/s)"),
        tooltip=[
            "server",
            *(["precision"] if "precision" in frame else []),
            "nodes",
            alt.Tooltip("throughput_samples_per_s:Q", format=",.4g"),
            "bottleneck",
        ],
    )
    eff = base.mark_line(point=True).encode(
        y=alt.Y("scaling_efficiency:Q", title="per-GPU throughput vs first point"),
        tooltip=["server", "nodes", alt.Tooltip("scaling_efficiency:Q", format=".2f")],
    )
    layers = [thr]
    if res is not None and res.plan is not None:
        mark = pd.DataFrame(
            [
                {
                    "nodes": res.plan.nodes,
                    "throughput_samples_per_s": res.plan.throughput_samples_per_s,
                    "gpu": res.plan.gpu,
                    "label": f"plan: {res.plan.nodes} x {res.plan.server}",
                }
            ]
        )
        pt = alt.Chart(mark).encode(x=xs, y="throughput_samples_per_s:Q")
        layers += [
            pt.mark_point(shape="diamond", size=250, filled=True, color="black").encode(tooltip=["label"]),
            pt.mark_text(align="left", dx=10, dy=-8).encode(text="label"),
        ]
        if deadline_days:
            # throughput that finishes the plan's amount of work (at the plan's batch) by the deadline
            need = res.plan.estimate.samples_to_train / (deadline_days * 86400.0)
            rule = pd.DataFrame({"need": [need], "label": [f"deadline {deadline_days:g} days: >= {human(need)}/s"]})
            r = alt.Chart(rule).encode(y="need:Q")
            layers += [
                r.mark_rule(color="firebrick", strokeDash=[6, 4]),
                r.mark_text(color="firebrick", align="left", x=5, dy=-6).encode(text="label:N"),
            ]
    return alt.vconcat(
        alt.layer(*layers).properties(
            title="Scaling: best allowed server per GPU type at full power (diamond: the plan; dashed: the deadline)",
            width=520,
            height=260,
        ),
        eff.properties(
            title="Scaling efficiency: per-GPU throughput relative to each GPU type's first plotted point",
            width=520,
            height=180,
        ),
    )


def power_cap_frame(catalog: Catalog, req: PlanRequest, res: PlanResult) -> pd.DataFrame:
    p = res.plan
    assert p is not None
    catalog = catalog_for(catalog, req)
    wl = catalog.workload(req.model)
    samples = work_from(wl, req.samples, req.tokens, req.epochs)
    server = catalog.server(p.server)
    gpu = catalog.gpu(server.gpu or "")
    lowest = gpu.min_power_limit_w / gpu.tdp_w
    caps = sorted(c for c in set(req.power_caps) | {0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0} if c >= lowest - 1e-9)
    if p.purchase == "rent" and not server.power_cap_settable:
        caps = [1.0]  # the rented offer does not let the renter set the GPU power limit
    df = evaluate_space(
        catalog,
        wl,
        space=pd.DataFrame({"server": p.server, "fabric": p.fabric, "power_cap": caps, "nodes": p.nodes}),
        site=p.site,
        purchase=p.purchase,
        work=Work(samples, req.global_batch, req.precision),
    )
    df = df.assign(
        time_to_train_days=df["time_to_train_h"] / 24.0,
        label=[f"{c:.0%}" for c in df["power_cap"]],
        plan=np.isclose(df["power_cap"], p.power_cap),
    ).reset_index(drop=True)
    # caps above the load's demand do not bind: equal points get one label ("90%, 100%") instead of overprinting
    key = [(_sig(t, 6), _sig(e, 6)) for t, e in zip(df["time_to_train_days"], df["facility_energy_kwh"], strict=True)]
    groups: dict[tuple[float, float], list[int]] = {}
    for i, k in enumerate(key):
        groups.setdefault(k, []).append(i)
    labels = [""] * len(df)
    for rows in groups.values():
        labels[rows[0]] = ", ".join(str(df.at[i, "label"]) for i in rows)
    df["label"] = labels
    return df[["power_cap", "power_cap_w", "label", "plan", "time_to_train_days", "facility_energy_kwh", "cost_usd"]]


def power_cap_chart(frame: pd.DataFrame, deadline_days: float | None = None) -> Any:
    """Time vs energy at each cap level of the plan's hardware: points labelled with the cap, the plan's cap
    circled, the deadline as a vertical rule."""
    alt = _alt()
    base = alt.Chart(frame).encode(
        x=alt.X("time_to_train_days:Q", title="time to train (days)", scale=alt.Scale(zero=False)),
        y=alt.Y("facility_energy_kwh:Q", title="facility energy (kWh)", scale=alt.Scale(zero=False)),
    )
    line = base.mark_line(point=True).encode(
        tooltip=[
            alt.Tooltip("power_cap:Q", title="cap (of TDP)", format=".0%"),
            alt.Tooltip("power_cap_w:Q", title="cap (W)", format=".0f"),
            alt.Tooltip("time_to_train_days:Q", title="days", format=",.3g"),
            alt.Tooltip("facility_energy_kwh:Q", title="kWh", format=",.4g"),
        ]
    )
    text = base.mark_text(align="left", dx=6, dy=-8).encode(text="label:N")
    chosen = (
        alt.Chart(frame[frame["plan"]])
        .mark_point(size=300, color="black", strokeWidth=2)
        .encode(x="time_to_train_days:Q", y="facility_energy_kwh:Q")
    )
    layers = [line, text, chosen]
    if deadline_days is not None:
        rule = pd.DataFrame({"deadline_days": [deadline_days], "label": [f"deadline {deadline_days:g} days"]})
        r = alt.Chart(rule).encode(x="deadline_days:Q")
        layers += [
            r.mark_rule(color="firebrick", strokeDash=[6, 4]),
            r.mark_text(color="firebrick", angle=270, align="left", dx=4, dy=-6, baseline="bottom").encode(
                text="label:N"
            ),
        ]
    return alt.layer(*layers).properties(
        title="Power-cap trade-off (labels: cap as share of TDP; circled: the plan; dashed: the deadline)",
        width=520,
        height=300,
    )


def plan_cost_breakdown(plan: Any) -> dict[str, float]:
    """The plan's cost in its two parts, summing to plan.cost_usd: the hardware share (or rent) and energy. The
    hardware share is the plan's, net of owned servers' credit (optimize.owned_credit_usd); the estimate's own
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


def breakdown_chart(frame: pd.DataFrame) -> Any:
    alt = _alt()
    charts = []
    for kind in ("cost (USD)", "energy (kWh)"):
        sub = frame[frame["kind"] == kind]
        charts.append(
            alt.Chart(sub)
            .mark_bar()
            .encode(
                y=alt.Y("plan:N", title=None, sort=None),  # the frame's order: the plan first, then alt 1, 2, ...
                x=alt.X("value:Q", stack="zero", title=kind, axis=alt.Axis(format="~s")),  # 12M, not 12,000,000
                color="part:N",
                tooltip=[
                    "plan",
                    "part",
                    alt.Tooltip("value:Q", title=kind, format=",.2f" if kind.startswith("cost") else ",.4~r"),
                ],
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
    except (yaml.YAMLError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        raise PlannerInputError(f"{name}: not valid YAML/CSV: {_first_line(exc)}") from None
    if isinstance(loaded, dict):
        loaded = [loaded]
    if not isinstance(loaded, list) or not all(isinstance(r, dict) for r in loaded):
        raise PlannerInputError(f"{name}: expected a list of mappings (one per entry)")
    return pd.DataFrame(loaded)


def _first_line(exc: Exception) -> str:
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


def result_json(res: PlanResult) -> str:
    return json.dumps(json.loads(res.model_dump_json()), indent=2)


def ladder(max_nodes: int) -> list[int]:
    return node_ladder(max_nodes)


# ------------------------------------------------------------------------------------------- fleet
def fleet_job_order(plan: Any) -> list[str]:
    """The jobs by their first slot (then last slot, then id): the order a schedule is read in."""
    runs = [a for a in plan.assignments if a.get("slots")]
    return [a["job"] for a in sorted(runs, key=lambda a: (min(a["slots"]), max(a["slots"]), str(a["job"])))]


def fleet_gantt(plan: Any, slot_hours: float) -> Any:
    """Gantt-style schedule (one bar per job over the slots it runs; a job may pause between slots) and facility
    power per slot, over the whole horizon."""
    alt = _alt()
    slots_seen = [int(r["slot"]) for r in plan.schedule] + [t for a in plan.assignments for t in a.get("slots", [])]
    horizon = max(slots_seen, default=0) + 1
    rows = []
    for a in plan.assignments:
        for t in a["slots"]:
            rows.append(
                {
                    "job": a["job"],
                    "server": f"{a['nodes']} x {a['server']}",
                    "pool": f"{a['server']} on {a['fabric']}" + (" (rented)" if a["kind"] == "rent" else ""),
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
            # the whole horizon (the axis ended where the last job ends: idle slots at the end were not shown)
            x=alt.X("start_slot:Q", title=f"slot ({slot_hours:g} h each)", scale=alt.Scale(domain=[0, horizon])),
            x2="end_slot:Q",
            # jobs in the order they start (a Gantt chart's order; was alphabetical)
            y=alt.Y("job:N", title=None, sort=fleet_job_order(plan)),
            # whole cluster names ('a100-pcie-4 on hdr200 (rented)': Vega cut them at 160 px, '(r…')
            color=alt.Color("pool:N", title="cluster", legend=alt.Legend(labelLimit=0)),
            tooltip=["job", "server", "pool", "start_slot"],
        )
        .properties(title="Schedule (one bar per slot a job runs)", width=560, height=28 * len(plan.assignments))
    )
    power = fleet_power_frame(plan, slot_hours)
    line = (
        alt.Chart(power)
        .mark_bar()
        .encode(
            x=alt.X("slot:O", title="slot", axis=alt.Axis(labelAngle=0)),
            y=alt.Y("facility_power_kw:Q", title="facility power (kW)", stack="zero"),
            color=alt.Color("where:N", title="drawn"),
            tooltip=["slot", "where", alt.Tooltip("facility_power_kw:Q", format=",.4g", title="kW")],
        )
        .properties(
            title="Facility power per slot (on site: counts against the envelope; rented: the provider's)",
            width=560,
            height=160,
        )
    )
    return alt.vconcat(bars, line).resolve_scale(color="independent")


def fleet_progress_text(req: Any, used_s: float | None = None) -> str:
    """What a fleet solve is doing and when it stops (the app's progress bar and `planner fleet`'s stderr)."""
    so_far = f"{used_s:.0f} s so far. " if used_s is not None else ""
    return (
        f"Planning the fleet ({len(req.jobs)} jobs over {req.slots} slots): {so_far}Every job is evaluated on every "
        "allowed server, fabric and node count, then HiGHS solves the MIP from a start plan; all of it stops at "
        f"{req.solver.time_limit_s:g} s (the whole call's limit) with the best plan found, unless evaluating and "
        "building alone take longer (then the plan may be only the start). Portfolios of many jobs take a minute "
        "or more."
    )


def fleet_owned_table(plan: Any) -> pd.DataFrame:
    """Owned servers: how many the plan keeps (in service, drawing idle power when not training) and retires."""
    rows = [
        {
            "server": p["server"],
            "fabric": p["fabric"],
            "owned": p["owned"],
            "kept": p["kept"],
            "retired": p["retired"],
            "added_on_this_cluster": p["added"],
            "peak_busy_nodes": p["peak_busy_nodes"],
        }
        for p in plan.purchases
        if p["kind"] != "rent" and p["owned"] > 0
    ]
    return pd.DataFrame(rows)


def fleet_bought_table(plan: Any) -> pd.DataFrame:
    """What the plan buys: server, fabric (a decision per server type), nodes, switches added and capex."""
    rows = [
        {
            "server": p["server"],
            "gpu": p["gpu"],
            "fabric": p["fabric"],
            "nodes_bought": p["added"],
            "extends": f"the {p['owned']} owned" if p["owned"] else "a new cluster",
            "switches_added": p["switches_added"],
            "capex_usd": p["capex_usd"],
        }
        for p in plan.purchases
        if p["kind"] != "rent" and p["added"] > 0
    ]
    return pd.DataFrame(rows)


def fleet_rented_table(plan: Any, catalog: Catalog) -> pd.DataFrame:
    """What the plan rents: the offer's server and network, peak nodes, whole billing periods paid and rent."""
    rows = []
    for p in plan.purchases:
        if p["kind"] != "rent":
            continue
        period = catalog.server(p["server"]).rent_billing_period
        rows.append(
            {
                "server": p["server"],
                "gpu": p["gpu"],
                "fabric": p["fabric"],
                "peak_nodes": p["nodes"],
                "billed": f"{p['node_periods']:,} node-{period}s",
                "rent_usd": p["rent_usd"],
            }
        )
    return pd.DataFrame(rows)


def fleet_owned_service_notes(catalog: Catalog, req: Any) -> list[str]:
    """Owned servers out of service for some or all of the horizon, and why (never silently retired): the rule of
    planner/fleet/fleet.py (pools_of), an owned node serves a slot if its age at the slot's end is at most its end of
    service (retire_at_age_years, default the request's life_years)."""
    from planner.fleet import pools_of

    notes = []
    for o, entry in zip(req.owned, pools_of(catalog, req).owned, strict=True):
        end = o.retire_at_age_years if o.retire_at_age_years is not None else req.life_years
        how = "retire_at_age_years of the entry" if o.retire_at_age_years is not None else "life_years"
        if not any(entry.avail):
            notes.append(
                f"the {o.count:,} owned {o.server} on {entry.fabric} are {o.age_years:g} years old, past the end of "
                f"their service at {end:g} years ({how}): they serve no slot and are retired; raise {how} to keep "
                "them in service"
            )
        elif not all(entry.avail):
            k = entry.avail.index(0)
            notes.append(
                f"the {o.count:,} owned {o.server} on {entry.fabric} reach the end of their service at {end:g} years "
                f"of age ({how}) during slot {k}: they serve slots 0-{k - 1} only"
            )
    return notes


def fleet_power_frame(plan: Any, slot_hours: float) -> pd.DataFrame:
    """Facility power per slot, on site (counts against the envelope) and rented (the provider's)."""
    df = pd.DataFrame(plan.schedule)
    if df.empty:
        return pd.DataFrame(columns=["slot", "where", "facility_power_kw"])
    df["where"] = np.where(df["on_site"], "on site", "rented")
    out = df.groupby(["slot", "where"], as_index=False)["facility_power_kw"].sum()
    out["start_h"] = out["slot"] * slot_hours
    return out


def read_fleet_upload(name: str, data: bytes) -> Any:
    from planner.fleet import FleetRequest

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise PlannerInputError(f"{name} is not a text file (not UTF-8); give a YAML fleet request") from None
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise PlannerInputError(f"{name}: not valid YAML: {exc}") from None
    if loaded is None:
        raise PlannerInputError(
            f"{name} is empty (nothing but blanks or comments); give a fleet request (see examples/portfolio.yaml)"
        )
    if not isinstance(loaded, dict):
        raise PlannerInputError(
            f"{name}: a fleet request is a YAML mapping (slots, slot_hours, jobs, ...; see examples/portfolio.yaml), "
            f"not a {type(loaded).__name__}"
        )
    if "jobs" not in loaded and set(loaded) & {"base", "grid", "scenarios"}:  # the other kind of file
        raise PlannerInputError(
            f"{name} is a batch scenario file (base/grid/scenarios), not a fleet request: run it with `planner batch "
            f"{name} --out DIR` (the app's Batch page); a fleet request has slots and jobs (examples/portfolio.yaml)"
        )
    try:
        return FleetRequest.model_validate(loaded)
    except ValidationError as exc:
        raise PlannerInputError(_name_jobs(describe_validation_error(exc, name), loaded)) from None


def _name_jobs(text: str, loaded: dict[str, Any]) -> str:
    """'jobs.1: Value error, due_slot ...' -> 'jobs.1 (job burst-8b): due_slot ...': a job's problem names the job
    by its id, and pydantic's 'Value error, ' prefix is dropped."""
    jobs = loaded.get("jobs")

    def job(m: re.Match[str]) -> str:
        i = int(m.group(1))
        jid = jobs[i].get("id") if isinstance(jobs, list) and i < len(jobs) and isinstance(jobs[i], dict) else None
        return m.group(0) + (f" (job {jid})" if jid is not None else "")

    return re.sub(r"\bjobs\.(\d+)(?=[.:])", job, text).replace("Value error, ", "")


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
    from planner.batch import expand, parse_yaml, scenario_number

    if name.lower().endswith(".csv"):
        from planner.data import csv_cell

        try:
            df = pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as exc:
            raise PlannerInputError(f"{name}: not a valid CSV scenario table: {_first_line(exc)}") from None
        rows = [{k: scenario_number(csv_cell(v)) for k, v in r.items()} for r in df.to_dict(orient="records")]
        return expand(rows)
    try:
        spec = parse_yaml(data.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise PlannerInputError(f"{name}: not valid YAML: {exc}") from None
    return expand(spec)


# -------------------------------------------------------------------------------------------- validation
VALIDATION_TITLES = {
    "time_to_train": "time to train (MLPerf Training)",
    "energy": "energy to train (MLPerf Power)",
    "throughput": "throughput per GPU (Megatron-LM)",
    "power_cap_time": "power cap: time ratio (Zeus)",
    "power_cap_energy": "power cap: energy ratio (Zeus)",
}


def validation_frame(catalog: Catalog | None = None) -> pd.DataFrame:
    """Every validation case (planner/validation/validation.py): published vs predicted, one row each."""
    from planner.data import load_catalog
    from planner.validation import reference_dir, run_cases

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
    """Per metric: cases, median and worst absolute error, share within 10% and 25%."""
    rows = []
    for metric, g in frame.groupby("metric", sort=False):
        err = g["error_pct"].abs()
        rows.append(
            {
                "Metric": metric,
                "Cases": len(g),
                "Held-out (test) cases": int((g["split"] == "test").sum()),
                "Median |error| (%)": round(float(err.median()), 1),
                "Worst |error| (%)": round(float(err.max()), 1),
                "Within 10%": f"{(err <= 10).mean():.0%}",
                "Within 25%": f"{(err <= 25).mean():.0%}",
            }
        )
    return pd.DataFrame(rows)


def validation_scatter(frame: pd.DataFrame) -> Any:
    """Predicted vs published, log-log, one panel per unit; the diagonal is a perfect prediction."""
    alt = _alt()
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
