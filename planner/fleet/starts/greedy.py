"""The first start: a greedy fleet, built job by job."""

from __future__ import annotations

import numpy as np

from planner.data import Catalog
from planner.fleet.formulation import FleetMIP, mode_rent_usd
from planner.fleet.modes import ANY_FABRIC
from planner.fleet.request import FleetRequest
from planner.fleet.starts.state import StartPlan, StartState, set_plan_start
from planner.physics import cost as cost_mod


def greedy_plan(mip: FleetMIP, cat: Catalog, req: FleetRequest) -> StartPlan | None:  # noqa: C901 -- one pass over the jobs in due order; its branches are the cases of placing one job
    """A greedy fleet: jobs from the largest (fewest node-slots it can take) down, each in the mode and least-busy
    slots that add the least cost (or energy) to the fleet built so far -- nodes beyond the capacity already bought
    at their capex share, rent by node-slots, energy at its price -- keeping every owned node and one fabric per
    bought type; what is bought is the peak use of each pool. Power and budget are not checked here. None when
    some job has no compatible mode."""
    ix = mip.index
    pools = ix.pools
    modes = ix.modes
    site = cat.site(req.site)
    H = req.slot_hours
    share = req.slots * H / (req.life_years * cost_mod.HOURS_PER_YEAR)
    energy_w = site.electricity_usd_per_kwh if req.objective == "cost" else 1.0
    money_w = 1.0 if req.objective == "cost" else 0.0
    usage: dict[str, np.ndarray] = {}
    bought: dict[tuple[str, str], np.ndarray] = {}  # group capacity bought so far, per (type, fabric)
    fab: dict[str, str] = {}
    owned_cap: dict[str, np.ndarray] = {}
    for e in pools.owned:
        arr = owned_cap.setdefault(pools.site_group(e.server, e.fabric), np.zeros(req.slots))
        arr += np.asarray(e.avail) * e.count
    nodes = modes["nodes"].to_numpy(np.int64)
    d = modes["slots_needed"].to_numpy(np.int64)
    ecoef = modes["energy_coef_kwh"].to_numpy(float)
    kind = modes["kind"].to_numpy()
    server = modes["server"].to_numpy()
    fabric = modes["fabric"].to_numpy()
    group = modes["group"].to_numpy()
    price = {p: (cat.server(p).price_usd or 0.0) for p in pools.buy}
    hourly = {p: (cat.server(p).rent_usd_per_month or 0.0) / cost_mod.HOURS_PER_MONTH for p in pools.rent}
    job_rent = mode_rent_usd(ix, cat)
    chosen: dict[str, tuple[int, list[int]]] = {}
    size = {j: min(int(nodes[k] * d[k]) for k in ks) for j, ks in ix.by_job.items()}
    for job in sorted(req.jobs, key=lambda j: (-size[j.id], j.release_slot, j.id)):
        best: tuple[float, int, list[int]] | None = None
        for k in ix.by_job[job.id]:
            p, f, g = str(server[k]), str(fabric[k]), str(group[k])
            busy = usage.get(g, np.zeros(req.slots))
            slots = sorted(sorted(ix.window[job.id], key=lambda t: (busy[t], t))[: int(d[k])])
            if kind[k] == "rent":
                extra = money_w * (job_rent[k] if p in ix.per_job else hourly[p] * H * int(nodes[k]) * len(slots))
            else:
                needs_y = f != ANY_FABRIC and f not in pools.owned_fabrics.get(p, set())
                if needs_y and fab.get(p, f) != f:
                    continue
                f_buy = f if f != ANY_FABRIC else fab.get(p, pools.buy.get(p, [""])[0])
                cap = owned_cap.get(g, np.zeros(req.slots)) + bought.get((p, f_buy), 0)
                need = usage.get(g, np.zeros(req.slots))[slots] + int(nodes[k]) - cap[slots]
                short = max(0.0, float(need.max()))
                if short > 0 and (f_buy not in pools.buy.get(p, []) or fab.get(p, f_buy) != f_buy):
                    continue
                extra = money_w * short * price.get(p, 0.0) * share
            value = extra + energy_w * float(ecoef[k])
            if best is None or value < best[0]:
                best = (value, k, slots)
        if best is None:
            return None
        _, k, slots = best
        p, f, g = str(server[k]), str(fabric[k]), str(group[k])
        chosen[job.id] = (k, slots)
        arr = usage.setdefault(g, np.zeros(req.slots))
        arr[slots] += int(nodes[k])
        if kind[k] == "site":
            f_buy = f if f != ANY_FABRIC else fab.get(p, pools.buy.get(p, [""])[0])
            short = max(0.0, float((arr - owned_cap.get(g, np.zeros(req.slots))).max()))
            if short > float(bought.get((p, f_buy), np.zeros(1)).max()):
                fab[p] = f_buy
                bought[(p, f_buy)] = np.full(req.slots, short)
    final: dict[tuple[str, str], int] = {}
    for p, f in bought:  # the peak use of each pool
        g = pools.site_group(p, f)
        peak = float((usage.get(g, np.zeros(req.slots)) - owned_cap.get(g, np.zeros(req.slots))).max())
        if peak > 0:
            final[(p, f)] = round(peak)
    return StartPlan(chosen, final)


def set_greedy_start(mip: FleetMIP, cat: Catalog, req: FleetRequest, state: StartState) -> None:
    """Start HiGHS from the greedy plan (``greedy_plan``); no start when it finds none. Its power and budget are
    unchecked, so it is not known to be a plan: HiGHS decides whether it is one."""
    plan = greedy_plan(mip, cat, req)
    if plan is not None:
        set_plan_start(mip, cat, req, plan, state, feasible=False)
