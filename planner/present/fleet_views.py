"""A fleet plan for people: the Gantt chart of its jobs, its owned, bought and rented tables, power per slot,
progress text and the upload of a fleet file."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd
import yaml
from pydantic import ValidationError

from planner.data import Catalog
from planner.errors import PlannerInputError, describe_validation_error
from planner.present.catalog_edit import yaml_problem
from planner.present.charts import altair


def fleet_job_order(plan: Any) -> list[str]:
    """The jobs by their first slot (then last slot, then id): the order a schedule is read in."""
    runs = [a for a in plan.assignments if a.get("slots")]
    return [a["job"] for a in sorted(runs, key=lambda a: (min(a["slots"]), max(a["slots"]), str(a["job"])))]


def fleet_gantt(plan: Any, slot_hours: float) -> Any:
    """Gantt-style schedule (one bar per job over the slots it runs; a job may pause between slots) and facility
    power per slot, over the whole horizon."""
    alt = altair()
    slots_seen = [int(r["slot"]) for r in plan.schedule] + [t for a in plan.assignments for t in a.get("slots", [])]
    horizon = max(slots_seen, default=0) + 1
    rows = []
    for a in plan.assignments:
        for t in a["slots"]:
            rows.append(
                {
                    "job": a["job"],
                    "server": f"{a['nodes']:,} x {a['server']}",
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
    jobs = f"{len(req.jobs)} job{'' if len(req.jobs) == 1 else 's'}"
    slots = f"{req.slots} slot{'' if req.slots == 1 else 's'}"
    return (
        f"Planning the fleet ({jobs} over {slots}): {so_far}Every job is evaluated on every "
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
                "billed": f"{p['node_periods']:,} node-{period}{'' if p['node_periods'] == 1 else 's'}",
                "rent_usd": p["rent_usd"],
            }
        )
    return pd.DataFrame(rows)


def fleet_owned_service_notes(catalog: Catalog, req: Any) -> list[str]:
    """Owned servers out of service for some or all of the horizon, and why (never silently retired): the rule of
    planner/fleet/pools.py (pools_of), an owned node serves a slot if its age at the slot's end is at most its end of
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
        raise PlannerInputError(yaml_problem(name, exc, text)) from None
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
