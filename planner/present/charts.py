"""Charts for people (Altair / Vega-Lite), units on every axis: the Pareto front, scaling over node counts, power
caps, the cost and energy of the plan and its alternatives; HTML and PNG export."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from planner.checks import allowed_servers, catalog_for
from planner.data import Catalog
from planner.formatting import color_scheme, precision_caveat, round_sig
from planner.physics import (
    acquisition_problem,
    compute,
    evaluate_space,
)
from planner.plan import PLAN_METRIC, PlanRequest, PlanResult, work_of
from planner.present.tables import RUN_TERM_COLUMNS, VIEW_CONSTANT, compact_view, human, readable

SCALING_NODES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def chart_html(chart: Any) -> str:
    """A self-contained HTML page of the chart: Vega, Vega-Lite and vega-embed inlined from the installed
    vl-convert bundle, so it renders offline (no CDN)."""
    return str(chart.to_html(inline=True))


def chart_png(chart: Any) -> bytes:
    """The chart as a PNG (vl-convert, offline)."""
    import vl_convert as vlc

    return bytes(vlc.vegalite_to_png(chart.to_json(), scale=2))


# each objective as an axis reads it: the quantity, then its unit (energy is the facility's, at the meter)
OBJECTIVE_AXIS_TITLES = {
    "cost": "cost (USD)",
    "energy": "energy (facility kWh)",
    "carbon": "carbon (kg CO2e)",
    "time": "time to train (days)",  # drawn from time_to_train_days: the unit of every table of plans
}


def pareto_chart(front: pd.DataFrame, x: str, y: str) -> Any:
    """The front as a line of its points. Both axes span the front's own range (not from 0): a front from 307,000
    to 336,000 kWh fills the chart instead of lying flat at its top. A time objective is drawn in days, the unit
    of the table beside the chart (``pareto_view``), from the front's ``time_to_train_days``."""
    alt = altair()
    titles = OBJECTIVE_AXIS_TITLES
    column = {x: x, y: y, "time": "time_to_train_days"}
    return (
        alt.Chart(front)
        .mark_line(point=True)
        .encode(
            x=alt.X(f"{column[x]}:Q", title=titles[x], scale=alt.Scale(zero=False, nice=False, padding=12)),
            y=alt.Y(f"{column[y]}:Q", title=titles[y], scale=alt.Scale(zero=False, nice=False, padding=12)),
            tooltip=[
                alt.Tooltip(f"{column[x]}:Q", title=titles[x], format=",.4~r"),
                alt.Tooltip(f"{column[y]}:Q", title=titles[y], format=",.4~r"),
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


def pareto_named(front: pd.DataFrame, x: str, y: str) -> pd.DataFrame:
    """The front's columns under their plan names: the two objectives with their units (cost -> cost_usd, time ->
    time_to_train_h) and epsilon as the limit it puts on y (facility_energy_limit_kwh)."""
    return front.rename(columns={"epsilon": pareto_limit_column(y), x: PLAN_METRIC[x], y: PLAN_METRIC[y]})


def pareto_limit_column(y: str) -> str:
    """The column of the limit epsilon puts on y: energy -> facility_energy_limit_kwh, time -> time_to_train_limit_h."""
    base, unit = PLAN_METRIC[y].rsplit("_", 1)
    return f"{base}_limit_{unit}"


def pareto_table(front: pd.DataFrame, x: str, y: str) -> pd.DataFrame:
    """The front for people: the two objectives under their plan names with units (cost -> 'Cost (USD)', energy ->
    'Facility energy (kWh)', as `planner pareto` prints them) and epsilon as the limit it puts on y ('Facility
    energy limit (kWh)')."""
    return readable(pareto_named(front, x, y))


# the Pareto view's hardware columns, in the alternatives table's order
PARETO_HARDWARE = ["server", "gpu", "precision", "nodes", "owned_nodes", "fabric", "power_cap", "purchase", "site"]
# said once above the Pareto view when every point has the same value: the alternatives view's, the owned nodes a
# point uses (often all of them) and the solver status
PARETO_CONSTANT = (*VIEW_CONSTANT, "owned_nodes", "solver_status")


def pareto_view(front: pd.DataFrame, x: str, y: str) -> tuple[pd.DataFrame, str]:
    """(the front as the app shows it, a line saying what every point shares), as alternatives_view shows the plan's
    alternatives: the objectives first -- x, y, then the time to train where neither is time (one time column: a
    time objective is it), with its terms where the run has them --, then the hardware (server, GPU, nodes, fabric,
    cap), the facility power, the limit put on y and any other column last; precision, buy / rent, site, start-up,
    owned nodes and solver status said once above the table when every point shares them; compact headers ('Cost
    (USD)', 'Energy (kWh)', 'Time (days)', 'Cap (of TDP)'): the objectives and the hardware fit beside the sidebar
    at 1,366 px. Figures as pareto_table writes them."""
    named = pareto_named(front, x, y)
    if "time" in (x, y):
        named = named.drop(columns=["time_to_train_days"], errors="ignore")
    objectives = [PLAN_METRIC[x], PLAN_METRIC[y], "time_to_train_days"]
    time_col = PLAN_METRIC["time"] if "time" in (x, y) else "time_to_train_days"
    at = objectives.index(time_col) + 1
    objectives[at:at] = RUN_TERM_COLUMNS  # the terms that sum to the time, beside it
    lead = [*objectives, *PARETO_HARDWARE, "facility_power_kw", pareto_limit_column(y)]
    order = [c for c in lead if c in named] + [c for c in named.columns if c not in lead]
    return compact_view(named[order], PARETO_CONSTANT)


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
    wl = catalog.workload(req.model)  # fp4 for a CNN: an extrapolation (plan_notes says it of a plan)
    frozen = wl.trainable_params is not None
    notes += [c for u in dict.fromkeys(used.values()) if (c := precision_caveat(req.model, wl.family, u, frozen))]
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
    throughput relative to the GPU type's first plotted (smallest fitting) point. Only servers the request can
    have are plotted (``obtainable_servers``): a rent-only GPU beside a plan that buys would read as an option."""
    catalog = catalog_for(catalog, req)
    wl = catalog.workload(req.model)
    nodes = [n for n in SCALING_NODES if n <= req.max_nodes]
    if req.max_nodes not in nodes and req.max_nodes < SCALING_NODES[-1]:
        nodes.append(req.max_nodes)
    servers = obtainable_servers(catalog, req)
    if not servers:
        return pd.DataFrame()
    df = evaluate_space(
        catalog,
        wl,
        servers=servers,
        fabrics=list(req.fabrics) if req.fabrics else None,
        caps=[1.0],
        nodes=nodes,
        work=work_of(catalog, req),
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
    # the layout says why per-GPU throughput can rise with nodes: on few nodes memory forces tensor parallelism over
    # PCIe or recomputation (Llama 3 8B on one 4 x L40S node: TP4 with recomputation, 2.3x slower per GPU than
    # pipelined on four)
    best["layout"] = best["layout"].astype(str)
    cols = ["gpu", "server", "precision", "nodes", "gpus", "throughput_samples_per_s", "scaling_efficiency"]
    return best[[*cols, "bottleneck", "layout"]]


def obtainable_servers(catalog: Catalog, req: PlanRequest) -> list[str]:
    """The allowed servers (``allowed_servers``) the request can have: priced to buy where it buys, to rent where it
    rents (either where it may do either), and those it already owns."""
    owned = {o.server for o in req.owned}
    buy, rent = req.purchase in ("buy", "either"), req.purchase in ("rent", "either")

    def obtainable(sid: str) -> bool:  # at full power: the cap a rental whose limit is fixed runs at
        s = catalog.server(sid)
        return (
            sid in owned
            or (buy and acquisition_problem(s, "buy", 1.0) is None)
            or (rent and acquisition_problem(s, "rent", 1.0) is None)
        )

    return [sid for sid in allowed_servers(catalog, req) if obtainable(sid)]


def gpu_colors(gpus: pd.Series) -> Any:
    """A colour scale with a colour of its own for each GPU type (textfmt.color_scheme): Vega's default scheme has
    10 colours and repeats them, so with the whole catalog (14+ GPU types) two curves -- a100-pcie and mi325x --
    shared one blue and the legend could not tell them apart."""
    alt = altair()
    n = int(pd.Series(gpus).nunique())
    scheme = color_scheme(n)
    return alt.Scale(scheme=scheme, count=n) if scheme == "rainbow" else alt.Scale(scheme=scheme)


def scaling_chart(
    frame: pd.DataFrame, res: PlanResult | None, max_nodes: int | None = None, deadline_days: float | None = None
) -> Any:
    alt = altair()
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
            *(["layout"] if "layout" in frame else []),
        ],
    )
    eff = base.mark_line(point=True).encode(
        y=alt.Y("scaling_efficiency:Q", title="per-GPU throughput vs first point"),
        tooltip=[
            "server",
            "nodes",
            alt.Tooltip("scaling_efficiency:Q", format=".2f"),
            *(["layout"] if "layout" in frame else []),
        ],
    )
    layers = [thr]
    if res is not None and res.plan is not None:
        mark = pd.DataFrame(
            [
                {
                    "nodes": res.plan.nodes,
                    "throughput_samples_per_s": res.plan.throughput_samples_per_s,
                    "gpu": res.plan.gpu,
                    "label": f"plan: {res.plan.nodes:,} x {res.plan.server}",
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
        work=work_of(catalog, req),
    )
    df = df.assign(
        time_to_train_days=df["time_to_train_h"] / 24.0,
        label=[f"{c:.0%}" for c in df["power_cap"]],
        plan=np.isclose(df["power_cap"], p.power_cap),
    ).reset_index(drop=True)
    # caps above the load's demand do not bind: equal points get one label ("90%, 100%") instead of overprinting
    key = [
        (round_sig(t, 6), round_sig(e, 6))
        for t, e in zip(df["time_to_train_days"], df["facility_energy_kwh"], strict=True)
    ]
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
    alt = altair()
    base = alt.Chart(frame).encode(
        # ticks at 4 significant figures: an axis of one point (a rented server's one cap) ticks at the point's
        # own value, which Vega would write out to 6 decimals (284,600.773060)
        # (and a handful of ticks: the axis of one point and the deadline beside it spans a fraction of a day)
        x=alt.X(
            "time_to_train_days:Q",
            title="time to train (days)",
            scale=alt.Scale(zero=False),
            axis=alt.Axis(format=",.4~r", tickCount=6),
        ),
        y=alt.Y(
            "facility_energy_kwh:Q",
            title="facility energy (kWh)",
            scale=alt.Scale(zero=False),
            axis=alt.Axis(format=",.4~r", tickCount=6),
        ),
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


def breakdown_chart(frame: pd.DataFrame) -> Any:
    alt = altair()
    charts = []
    for kind in ("cost (USD)", "energy (kWh)"):
        sub = frame[frame["kind"] == kind]
        charts.append(
            alt.Chart(sub)
            .mark_bar()
            .encode(
                # the frame's order: the plan first, then alt 1, 2, ...; labels whole (the fabric and cap at their
                # end tell apart the same servers)
                y=alt.Y("plan:N", title=None, sort=None, axis=alt.Axis(labelLimit=0)),
                x=alt.X("value:Q", stack="zero", title=kind, axis=alt.Axis(format="~s")),  # 12M, not 12,000,000
                color=alt.Color("part:N", title=f"part of the {kind.split(' ')[0]}"),
                tooltip=[
                    "plan",
                    "part",
                    alt.Tooltip("value:Q", title=kind, format=",.2f" if kind.startswith("cost") else ",.4~r"),
                ],
            )
            .properties(title=kind, width=460, height=30 * max(1, sub["plan"].nunique()))
        )
    # a legend per chart: the cost's parts (hardware, energy, rent) are not the energy's (GPUs, cooling, host, ...)
    return alt.vconcat(*charts).resolve_scale(color="independent")


def ladder(max_nodes: int) -> list[int]:
    return node_ladder(max_nodes)


LADDER_DENSE_UP_TO = 32


LADDER_STEP = 1.05


def node_ladder(max_nodes: int) -> list[int]:
    """Every count up to 32, then steps of at most 5%, and max_nodes itself (for charts; the optimizer
    does not use a ladder: it evaluates every integer count)."""
    out = list(range(1, min(max_nodes, LADDER_DENSE_UP_TO) + 1))
    x = float(LADDER_DENSE_UP_TO)
    while out[-1] < max_nodes:
        x *= LADDER_STEP
        n = min(max_nodes, max(out[-1] + 1, round(x)))
        out.append(n)
    return out


def altair() -> Any:
    import altair as alt

    return alt
