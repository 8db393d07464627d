"""The plan read back from a solution of the fleet MIP, re-checked and priced exactly, as a ``FleetPlan``."""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.data import Catalog
from planner.fleet.billing import group_rent_usd, owned_capex_usd
from planner.fleet.evaluate import FleetEvaluation, evaluate_fleet
from planner.fleet.formulation import FleetMIP, Index
from planner.fleet.modes import ANY_FABRIC
from planner.fleet.request import FleetRequest
from planner.fleet.result import AssignmentRow, FleetPlan, PurchaseRow, ScheduleRow
from planner.solver import PlanStatus, Solved, SolverReport, SolverStatus

TOTALS = (
    "capex_usd",
    "rent_usd",
    "cost_usd",
    "penalty_usd",
    "site_energy_kwh",
    "facility_energy_kwh",
    "carbon_kg",
    "peak_site_power_kw",
)  # the figures of evaluate_fleet a plan reports in its totals


def extract_plan(cat: Catalog, req: FleetRequest, mip: FleetMIP, solved: Solved, rep: SolverReport) -> FleetPlan:
    """The plan of a solution (``solved``): each job's mode and slots, the nodes bought per (type, fabric), the owned
    nodes kept -- priced by ``evaluate_fleet``, never reported when it breaks a rule -- as the plan's rows and totals,
    with HiGHS's report (``rep``). Status optimal when HiGHS proved it, else time_limit."""
    ix = mip.index
    z = solved.values["z"]
    r = solved.keyed.get("r", {})
    chosen = {j: ix.modes.loc[next(k for k in ix.by_job[j] if z[k] > 0.5)] for j in ix.by_job}
    slots = {j: [t for t in ix.window[j] if r.get((j, t), 0.0) > 0.5] for j in ix.by_job}
    nvals = solved.keyed.get("N", {})
    bought = {(p, f): round(nvals.get((p, f), 0.0)) for p, f in mip.model.BUY}
    kvals = solved.values.get("K", np.zeros(len(ix.pools.owned)))
    # owned nodes in service in no slot (past their life at the start) cost nothing either way: reported retired
    kept = [round(float(kvals[i])) if any(e.avail) else 0 for i, e in enumerate(ix.pools.owned)]
    ev = evaluate_fleet(cat, req, ix.pools, chosen, slots, bought, kept)
    if ev is None:  # cannot happen for a solution of the MIP; never report a plan that breaks a rule
        raise RuntimeError("the fleet MIP returned a plan that breaks its own rules; please report this")
    assignments = [assignment_row(cat, req, j, chosen[j], slots[j], bought) for j in ix.by_job]
    purchases = site_purchase_rows(cat, req, ix, bought, kept, ev) + rental_rows(cat, req, ix, chosen, ev)
    totals = {k: float(ev[k]) for k in TOTALS}  # type: ignore[literal-required]
    totals["peak_power_kw"] = totals["peak_site_power_kw"]
    return FleetPlan(
        status=PlanStatus.OPTIMAL if rep.status is SolverStatus.OPTIMAL else PlanStatus.TIME_LIMIT,
        objective=req.objective,
        objective_value=float(ev["value"]),
        purchases=purchases,
        assignments=assignments,
        schedule=schedule_rows(req, ix, assignments, purchases, bought, kept),
        totals=totals,
        solver=rep,
    )


def assignment_row(
    cat: Catalog, req: FleetRequest, j: str, row: pd.Series, slots: list[int], bought: dict[tuple[str, str], int]
) -> AssignmentRow:
    """Job j in its mode (``row``) and slots: its pool, the fabric it runs on (a one-node mode: the fabric its type
    was bought on), the precision it computes in and asked for, and when it runs."""
    job = next(x for x in req.jobs if x.id == j)
    fab = str(row["fabric"])
    if fab == ANY_FABRIC:  # a one-node mode: on the fabric its type was bought on
        fab = next(f for (q, f), n in bought.items() if q == row["server"] and n > 0)
    pool = f"{row['server']}|{fab}" + (" (rent)" if row["kind"] == "rent" else "")
    return AssignmentRow(
        job=j,
        model=job.model,
        server=str(row["server"]),
        gpu=str(row["gpu"]),
        pool=pool,
        kind="rent" if row["kind"] == "rent" else "site",
        nodes=int(row["nodes"]),
        fabric=fab,
        power_cap=float(row["power_cap"]),
        layout=str(row["layout"]),
        precision=str(row["precision"]),  # what it computes in: a GPU without fp4 runs fp4 in fp8
        precision_asked=job.precision or cat.workload(job.model).precision,
        workload_family=cat.workload(job.model).family,  # cnn, encoder, llm, recsys
        frozen_base=cat.workload(job.model).trainable_params is not None,
        time_to_train_h=float(row["time_to_train_h"]),
        slots=slots,
        first_slot=min(slots),
        last_slot=max(slots),
        late_slots=max(0, max(slots) - job.due_slot),
        facility_energy_kwh=float(row["facility_energy_kwh"]),
        facility_power_kw=float(row["facility_power_kw"]),
    )


def site_purchase_rows(
    cat: Catalog,
    req: FleetRequest,
    ix: Index,
    bought: dict[tuple[str, str], int],
    kept: list[int],
    ev: FleetEvaluation,
) -> list[PurchaseRow]:
    """One row per site cluster (type and fabric) owned or bought: owned, kept, retired and added nodes, its peak
    use, the switches added and the capex of what is added."""
    rows = []
    pools = ix.pools
    types = sorted({e.server for e in pools.owned} | {p for (p, f), n in bought.items() if n > 0})
    for p in types:
        s = cat.server(p)
        fabs = sorted(
            {e.fabric for e in pools.owned if e.server == p} | {f for (q, f), n in bought.items() if q == p and n > 0}
        )
        for f in fabs:
            own = [(i, e) for i, e in enumerate(pools.owned) if e.server == p and e.fabric == f]
            n_add = bought.get((p, f), 0)
            capex, sw = owned_capex_usd(cat, p, f, pools.serving_on(p, f), n_add, pools.kept_on(p, f, kept))
            busy = ev["usage"].get(pools.site_group(p, f), np.zeros(req.slots))
            rows.append(
                PurchaseRow(
                    server=p,
                    gpu=s.gpu,
                    fabric=f,
                    kind="owned+buy" if own and n_add else "owned" if own else "buy",
                    nodes=sum(kept[i] for i, _ in own) + n_add,
                    owned=sum(e.count for _, e in own),
                    kept=sum(kept[i] for i, _ in own),
                    retired=sum(e.count - kept[i] for i, e in own),
                    added=n_add,
                    peak_busy_nodes=int(busy.max()),
                    switches_added=sw,
                    capex_usd=capex,
                    rent_usd=0.0,
                    node_periods=0,
                )
            )
    return rows


def rental_rows(
    cat: Catalog, req: FleetRequest, ix: Index, chosen: dict[str, pd.Series], ev: FleetEvaluation
) -> list[PurchaseRow]:
    """One row per rental offer in use: the most nodes rented in any slot, the rent and the node billing periods."""
    rows = []
    for g, arr in ev["usage"].items():
        p, tag = g.split("|")
        if tag != "rent":
            continue
        usd, periods = group_rent_usd(cat, req, g, arr, chosen)
        rows.append(
            PurchaseRow(
                server=p,
                gpu=cat.server(p).gpu,
                fabric=ix.pools.rent[p],
                kind="rent",
                nodes=int(arr.max()),
                owned=0,
                kept=0,
                retired=0,
                added=int(arr.max()),
                peak_busy_nodes=int(arr.max()),
                switches_added=0,
                capex_usd=0.0,
                rent_usd=usd,
                node_periods=periods,
            )
        )
    return rows


def schedule_rows(
    req: FleetRequest,
    ix: Index,
    assignments: list[AssignmentRow],
    purchases: list[PurchaseRow],
    bought: dict[tuple[str, str], int],
    kept: list[int],
) -> list[ScheduleRow]:
    """One row per slot and pool in use: nodes busy, the jobs running and the facility power (the jobs' and, on
    site, the idle nodes' of the pool)."""
    rows = []
    pools_used = sorted(
        {a["pool"] for a in assignments} | {f"{q['server']}|{q['fabric']}" for q in purchases if q["kind"] != "rent"}
    )
    for t in range(req.slots):
        for pool in pools_used:
            running = [a for a in assignments if a["pool"] == pool and t in a["slots"]]
            p = pool.split("|")[0]
            idle_nodes = 0.0
            if not pool.endswith("(rent)"):
                f = pool.split("|")[1]
                cap = bought.get((p, f), 0) + sum(
                    e.avail[t] * kept[i] for i, e in enumerate(ix.pools.owned) if e.server == p and e.fabric == f
                )
                idle_nodes = cap - sum(a["nodes"] for a in running)
            rows.append(
                ScheduleRow(
                    slot=t,
                    server=p,
                    pool=pool,
                    nodes=sum(a["nodes"] for a in running),
                    jobs=",".join(a["job"] for a in running),
                    facility_power_kw=sum(a["facility_power_kw"] for a in running)
                    + ix.pools.idle_kw.get(p, 0.0) * idle_nodes,
                    on_site=not pool.endswith("(rent)"),
                )
            )
    return rows
