"""What rented nodes pay (whole billing periods of the offer) and what growing a bought cluster costs.

Rent includes power and network and is billed in whole periods of the offer (hour / day / month). An offer whose
period divides the slot (hourly; daily with weekly slots) is billed per job (``billed_per_job``): the job rents
its own nodes and pays ceil(T / period) periods per node, the single-job rule of planner/physics/cost.py (it runs
its full slots first, so only its last period is partly used). Otherwise billing periods run from the start of the
horizon, and a node rented in any slot that overlaps a period pays that whole period (``billing_blocks``; its nodes
may serve several jobs, one after another). Capex follows planner/physics/cost.py: a site cluster holds the owned
nodes the plan keeps (in service) and the nodes it adds; it pays the servers added and the NICs, cables and switches
the cluster needs beyond the owned network -- the network of the owned nodes in service at the start of the horizon,
reused whether or not the plan keeps them (``owned_capex_usd``).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from planner.data import Catalog, Server
from planner.fleet.request import FleetRequest
from planner.physics import cost as cost_mod

# A tolerance of slot arithmetic, part of the model's definition (not a tuning knob): a run of exactly k slots (up
# to floating-point rounding) needs k slots, not k + 1, and a billing period that ends on a slot boundary does not
# reach into the next slot.
SLOT_EPS = 1e-9


def billing_period_h(server: Server) -> float:
    """Hours of one billing period of the server's rental offer (planner/physics/cost.py)."""
    return cost_mod.BILLING_PERIOD_H[server.rent_billing_period]


def billing_blocks(slots: int, slot_hours: float, period_h: float) -> list[tuple[list[int], int]]:
    """Billing periods from the start of the horizon, grouped into blocks of consecutive periods that overlap
    the same slots: (slots overlapped, number of periods). A node rented in a slot pays every period the
    slot overlaps."""
    horizon = slots * slot_hours
    n_periods = math.ceil(horizon / period_h * (1 - SLOT_EPS))
    blocks: list[tuple[list[int], int]] = []
    for k in range(n_periods):
        a, b = k * period_h, (k + 1) * period_h
        first = math.floor(a / slot_hours + SLOT_EPS)
        last = min(slots - 1, math.ceil(b / slot_hours - SLOT_EPS) - 1)
        ts = list(range(first, last + 1))
        if blocks and blocks[-1][0] == ts:
            blocks[-1] = (ts, blocks[-1][1] + 1)
        else:
            blocks.append((ts, 1))
    return blocks


def billed_per_job(server: Server, slot_hours: float) -> bool:
    """Whether the server's rental offer is billed per job: its billing period divides the slot (an hourly
    offer with any whole-hour slot, a daily one with weekly slots). A job then rents its own nodes and pays
    ceil(T / period) periods per node (the single-job rule of planner/physics/cost.py): it runs its d = ceil(T / H)
    slots with the full ones first, so every period but its last is fully used. Other offers (a period longer
    than a slot) are billed by the slots their nodes are rented in (``billing_blocks``)."""
    period = billing_period_h(server)
    k = slot_hours / period
    return k >= 1 - SLOT_EPS and abs(k - round(k)) <= SLOT_EPS * max(1.0, k)


def job_rent_usd(server: Server, nodes: np.ndarray | int, hours: np.ndarray | float) -> np.ndarray:
    """Rent of jobs billed per job (``billed_per_job``): nodes x ceil(T / period) x the period's price."""
    return cost_mod.rent_usd(nodes, server.rent_usd_per_month or 0.0, hours, billing_period_h(server))


def period_price_usd(server: Server) -> float:
    """Price of one node for one billing period of the server's rental offer."""
    return (server.rent_usd_per_month or 0.0) * billing_period_h(server) / cost_mod.HOURS_PER_MONTH


def rent_cost_usd(server: Server, nodes_per_slot: np.ndarray, slot_hours: float) -> tuple[float, int]:
    """Rent of a node count per slot, in whole billing periods: (USD, node-periods)."""
    node_periods = 0
    for ts, count in billing_blocks(len(nodes_per_slot), slot_hours, billing_period_h(server)):
        node_periods += int(max(nodes_per_slot[t] for t in ts)) * count
    return node_periods * period_price_usd(server), node_periods


def group_rent_usd(
    cat: Catalog, req: FleetRequest, group: str, nodes_per_slot: np.ndarray, chosen: dict[str, pd.Series]
) -> tuple[float, int]:
    """Rent of a rental group (``p|rent``) in a plan: (USD, node-periods). Billed per job (``billed_per_job``):
    each job in it pays its nodes x ceil(T / period); otherwise by the slots its nodes are rented in."""
    server = cat.server(group.split("|")[0])
    if not billed_per_job(server, req.slot_hours):
        return rent_cost_usd(server, nodes_per_slot, req.slot_hours)
    rows = [r for r in chosen.values() if r["group"] == group]
    usd = sum(float(job_rent_usd(server, int(r["nodes"]), float(r["time_to_train_h"]))) for r in rows)
    periods = sum(
        int(r["nodes"]) * int(cost_mod.billed_periods(float(r["time_to_train_h"]), billing_period_h(server)))
        for r in rows
    )
    return usd, periods


def network_capex_usd(cat: Catalog, server: str, fabric: str, nodes: int) -> float:
    """NICs, cables and switches of a cluster of ``nodes`` nodes (planner/physics/cost.py, without the servers)."""
    s, f = cat.server(server), cat.fabric(fabric)
    sw = cost_mod.switch_count(nodes, s.nic_ports, f.switch_radix)
    cables = cost_mod.cable_count(nodes, s.nic_ports, f.switch_radix)
    return float(
        cost_mod.capex_usd(nodes, 0.0, s.nic_ports, f.nic_price_usd, sw, f.switch_price_usd, cables, f.cable_price_usd)
    )


def owned_capex_usd(
    cat: Catalog, server: str, fabric: str, owned: int, added: int, kept: int | None = None
) -> tuple[float, int]:
    """Capex of adding ``added`` nodes to a site cluster whose owned network serves ``owned`` nodes (the owned
    nodes in service) and which keeps ``kept`` of them (default all): (USD, switches added), planner/physics/cost.py.

    The cluster is the n = kept + added nodes that are in it together; the owned network (NICs, cables, switches
    of ``owned`` nodes) is there already and is reused: the plan pays the servers added and the network beyond it,
    max(0, net(n) - net(owned)) (net is nondecreasing in the node count). With every owned node kept this is
    capex(owned + added) - capex(owned); an owned node retired at the start leaves the cluster (the network is not
    sized for it) and frees its share of the owned network, so an owned node the plan does not keep never raises
    what it pays."""
    if added <= 0:
        return 0.0, 0
    k = owned if kept is None else kept
    s, f = cat.server(server), cat.fabric(fabric)
    n = k + added
    net = max(0.0, network_capex_usd(cat, server, fabric, n) - network_capex_usd(cat, server, fabric, owned))
    sw_new = max(
        0,
        int(cost_mod.switch_count(n, s.nic_ports, f.switch_radix))
        - int(cost_mod.switch_count(owned, s.nic_ports, f.switch_radix)),
    )
    return (s.price_usd or 0.0) * added + net, sw_new
