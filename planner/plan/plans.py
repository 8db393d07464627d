"""A plan from a candidate row: the configuration re-evaluated by the exact model (planner.evaluate) and priced as
the request asks."""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.checks.request import PlanRequest
from planner.data import Catalog, Configuration, Estimate, Layout
from planner.physics import (
    compute,
    cost,
    estimate_from_row,
    evaluate,
    evaluate_space,
)
from planner.physics.space import LAYOUT_COLUMNS
from planner.plan.limits import (
    samples_of,
    work_of,
)
from planner.plan.owned import owned_credit_usd, owned_use
from planner.plan.result import Plan


def plan_from_row(catalog: Catalog, req: PlanRequest, row: pd.Series) -> Plan:
    """Re-evaluate a candidate with the exact scalar path (planner.evaluate) at the layout the search chose for it
    (``chosen_layout``) and in the precision the scan priced it in:
    the request's where its GPU has it (fp16 stays fp16: its gradients reduce in fp16, bf16's in fp32 under
    Megatron), else the fallback the GPU computes it in (a plan on a GPU without fp4 computes in fp8, and says so)."""
    server = catalog.server(str(row["server"]))
    gpu = catalog.gpu(server.gpu or "")
    precision: str | None = req.precision
    if precision is not None and not compute.has_precision(gpu, precision):
        precision = compute.precision_used(gpu, precision)
    est = evaluate(
        catalog,
        Configuration(
            model=req.model,
            server=str(row["server"]),
            nodes=int(row["nodes"]),
            fabric=str(row["fabric"]),
            power_cap=float(row["power_cap"]),
            global_batch=req.global_batch,
            samples=samples_of(catalog, req),
            precision=precision,
            site=str(row["site"]),
            purchase=row["purchase"],
            life_years=req.life_years,
            layout=chosen_layout(row),
            startup_s=req.startup_s,
            evaluations=req.evaluations,
            evaluation_samples=req.evaluation_samples,
        ),
    )
    return _plan_from_estimate(catalog, req, est)


def chosen_layout(row: pd.Series) -> Layout | None:
    """The layout the search chose for a candidate row (its layout columns and interleave), so that the plan is
    re-evaluated at that layout instead of searched again: the same step terms, hence the same figures. None for
    a row without them (then the search runs)."""
    if "tensor_parallel" not in row.index:
        return None
    kinds = {"recompute": str, "sequence_parallel": bool}
    fields = {c: kinds.get(c, int)(row[c]) for c in LAYOUT_COLUMNS}
    virtual = int(row["virtual_stages"]) if int(row["pipeline_parallel"]) > 1 else None
    return Layout(**fields, virtual_stages=virtual)


def _plan_from_estimate(catalog: Catalog, req: PlanRequest, est: Estimate) -> Plan:
    """A plan from the exact model's estimate, with the request's owned servers credited (owned_credit_usd)."""
    capex_usd, cost_usd = est.capex_usd, est.cost_usd
    if est.purchase == "buy" and req.owned:
        credit = float(owned_credit_usd(catalog, req, est.server, est.fabric, [est.nodes], [est.time_to_train_h])[0])
        capex_usd -= credit
        cost_usd -= float(cost.amortized_usd(credit, est.time_to_train_h, req.life_years))
    upfront = capex_usd if est.purchase == "buy" else cost_usd
    used, unused, unused_kw = owned_use(catalog, req, est) if req.owned else (0, 0, 0.0)
    return Plan(
        owned_nodes=used,
        owned_unused_nodes=unused,
        owned_unused_idle_kw=unused_kw,
        server=est.server,
        gpu=est.gpu,
        nodes=est.nodes,
        gpus=est.gpus,
        fabric=est.fabric,
        switches=est.switches,
        power_cap=est.power_cap,
        power_cap_w=est.power_cap_w,
        site=est.site,
        purchase=est.purchase,
        layout=est.layout,
        global_batch=est.global_batch,
        time_to_train_h=est.time_to_train_h,
        time_to_train_days=est.time_to_train_h / 24.0,
        evaluation_h=est.evaluation_s / 3600.0,
        startup_h=est.startup_s / 3600.0,
        power_kw=est.power_kw,
        facility_power_kw=est.facility_power_kw,
        energy_kwh=est.energy_kwh,
        facility_energy_kwh=est.facility_energy_kwh,
        cost_usd=cost_usd,
        capex_usd=capex_usd,
        upfront_usd=upfront,
        carbon_kg=est.carbon_kg,
        rack_units=est.nodes * catalog.server(est.server).rack_units,
        throughput_samples_per_s=est.throughput_samples_per_s,
        mfu=est.mfu,
        bottleneck=est.bottleneck,
        estimate=est,
    )


def plans_from_rows(catalog: Catalog, req: PlanRequest, rows: pd.DataFrame) -> list[Plan]:
    """Re-evaluate several candidates with the exact model in one `evaluate_space` call per (site, purchase):
    the computation `planner.evaluate` does for one configuration (`evaluate_space` on an explicit space,
    then `estimate_from_row`), batched, with the search among the layouts the full search chose for them (each
    is its configuration's fastest, so the search among them finds it again: ``search_among``)."""
    out: dict[int, Plan] = {}
    work = work_of(catalog, req)
    pos = np.arange(len(rows))
    sites = rows["site"].astype(str).to_numpy()
    buys = rows["purchase"].astype(str).to_numpy()
    for site, purchase in sorted(set(zip(sites, buys, strict=True))):
        sel = pos[(sites == site) & (buys == purchase)]
        sub = rows.iloc[sel]
        space = pd.DataFrame(
            {
                "server": sub["server"].astype(str).to_numpy(),
                "fabric": sub["fabric"].astype(str).to_numpy(),
                "power_cap": sub["power_cap"].to_numpy(dtype=float),
                "nodes": sub["nodes"].to_numpy(dtype=np.int64),
            }
        )
        chosen = [chosen_layout(r) for _, r in sub.iterrows()]
        among = None if None in chosen else [c.model_copy(update={"virtual_stages": None}) for c in chosen if c]
        df = evaluate_space(
            catalog,
            req.model,
            site=site,
            purchase=purchase,
            work=work,
            life_years=req.life_years,
            space=space,
            search_among=among,
        )
        for k, i in enumerate(sel):
            out[int(i)] = _plan_from_estimate(catalog, req, estimate_from_row(df.iloc[k]))
    return [out[i] for i in range(len(rows))]
