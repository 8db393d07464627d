"""Owned servers in a plan: the nodes of a type still in service at the end of a run, the capex they take off a
bought plan, and what a plan leaves unused."""

from __future__ import annotations

from typing import Any

import numpy as np

from planner.checks.owned import in_service, owned_fabric
from planner.checks.request import PlanRequest
from planner.data import Catalog, Estimate
from planner.physics import (
    cost,
)
from planner.physics import power as power_mod


def owned_in_service(catalog: Catalog, req: PlanRequest, server: str, fabric: str, hours: Any) -> np.ndarray:
    """Owned nodes of ``server`` on ``fabric`` that serve a run of ``hours`` h: an entry counts when it is still
    in service at the end of the run (age + T / 8766 <= its retirement age), the fleet planner's rule per slot.
    A run never changes size, so a node that leaves service mid-run cannot serve it."""
    t = np.atleast_1d(np.asarray(hours, dtype=float))
    out = np.zeros(len(t), dtype=np.int64)
    for o in req.owned:
        if o.server != server or owned_fabric(catalog, o) != fabric:
            continue
        end = o.retire_at_age_years if o.retire_at_age_years is not None else req.life_years
        out += o.count * in_service(o.age_years, t, end)
    return out


def owned_credit_usd(
    catalog: Catalog, req: PlanRequest, server: str, fabric: str, nodes: Any, hours: Any
) -> np.ndarray:
    """What owned servers take off a bought plan's capex (planner/physics/cost.py). A plan of n nodes of ``server`` on
    the fabric the owned ones are cabled to runs on k = min(n, O) of them (O = owned_in_service): their servers,
    NICs, switches and cables are there, so the plan pays capex(n) - capex(k) -- the nodes and the network it
    adds. A plan on any other fabric is another cluster (as in planner/fleet/pools.py): it uses no owned node and
    gets no credit."""
    n = np.asarray(nodes, dtype=np.int64)
    if not any(o.server == server for o in req.owned):
        return np.zeros(len(n))
    k = np.minimum(n, owned_in_service(catalog, req, server, fabric, hours))
    s = catalog.server(server)
    f = catalog.fabric(fabric)
    sw = cost.switch_count(k, s.nic_ports, f.switch_radix)
    cables = cost.cable_count(k, s.nic_ports, f.switch_radix)
    return cost.capex_usd(
        k, s.price_usd or 0.0, s.nic_ports, f.nic_price_usd, sw, f.switch_price_usd, cables, f.cable_price_usd
    )


def owned_use(catalog: Catalog, req: PlanRequest, est: Estimate) -> tuple[int, int, float]:
    """(owned nodes the plan runs on, owned nodes it leaves unused, facility kW those would draw idle).

    An owned node the plan does not use is not in the plan's energy or cost: for a single run it is retired or
    powered off (or left to other work) at no cost -- what the fleet planner does with an owned node that has
    nothing to run. Its idle draw, had it been left on for the run, is reported (owned_unused_idle_kw)."""
    used = 0
    if est.purchase == "buy":
        used = int(min(est.nodes, owned_in_service(catalog, req, est.server, est.fabric, est.time_to_train_h)[0]))
    total = sum(o.count for o in req.owned)
    pue = catalog.site(est.site).pue
    idle = sum(o.count * _idle_node_kw(catalog, o.server, pue) for o in req.owned)
    unused_idle = idle - used * _idle_node_kw(catalog, est.server, pue) if used else idle
    return used, total - used, float(unused_idle)


def _idle_node_kw(catalog: Catalog, server_id: str, pue: float) -> float:
    server = catalog.server(server_id)
    return power_mod.idle_node_kw(server, catalog.gpu(server.gpu or ""), pue)
