r"""The fleet MIP: which modes the jobs run in, in which slots, on what is kept, bought and rented.

What is modelled
----------------
Time is cut into slots of ``slot_hours``. A job runs in one mode (planner/fleet/modes.py) on d_m = ceil(T_m / H)
slots of its window and never changes size, mode or pool; it may pause between slots but resumes on the same
nodes. (Jobs that resize would make the mode a per-slot choice: the work row would sum per-slot progress, the
node rows would take the size of that slot, and a checkpoint/restart term per resize would be needed -- about
|slots| times the binaries.) Pools share no network (planner/fleet/pools.py), so a job runs inside one. Each
server type is bought on one fabric, chosen by the plan (y_pf); NIC, switch and cable counts follow from the
cluster's total node count exactly as in planner/physics/cost.py (one switch, two-tier leaf/spine, or three-tier
fat tree). A site cluster holds the owned nodes kept (those in service) and the nodes bought; the owned network (the
NICs, cables and switches of the owned nodes in service at the start) is reused, kept or not: the plan pays the
servers bought and the network beyond the owned one, max(0, net(kept + bought) - net(owned)) -- capex(owned +
added) - capex(owned) when every owned node is kept (planner/fleet/billing.py, ``owned_capex_usd``). Owned nodes
cost no capex, serve until their end of service and may be retired at the start: a retired node leaves the cluster
(the network is not grown for it), so an owned node the plan does not keep changes nothing. A kept or bought node
draws idle power in every slot it is in service and not training. Rented nodes draw the provider's power: their
energy counts in the energy and carbon objectives but not against the site's power envelope. Rent follows
planner/fleet/billing.py.

Sets
----
J jobs; T slots; W_j slots job j may run in (release..due, or ..horizon end when lateness is allowed with a
penalty); P server types; F_p fabrics type p may be bought on; E owned entries (type p_e, fabric f_e);
E_pf those on (p, f) that serve some slot (in service at the start), O_pf = sum_{e in E_pf} count_e;
G capacity groups: (p, f) per fabric for types that own nodes, (p, *) for the rest (one fabric is bought
anyway), (p, rent) per rental offer; P^job rental offers billed per job (billed_per_job); M_jg modes of job j
in group g; B_p billing blocks of offer p (runs of billing periods that overlap the same slots; c_b periods each).

Variables
---------
z_m in {0,1} job runs in mode m;              r_jt in {0,1} job j runs in slot t (t in W_j)
a_jg >= 0   nodes job j takes in group g;     u_jgt >= 0 nodes of group g held by job j in slot t
y_pf in {0,1} type p is bought on fabric f;   N_pf in Z>=0 nodes of type p bought on fabric f
K_e in Z    owned nodes kept (0..count_e);    R_pt, V_pb in Z>=0 nodes rented in slot t / billing block b
                                              (offers p not in P^job)
q_jt >= 0   site power of job j above idle;   late_j >= 0 slots job j finishes after its due slot
D_pf >= 0   network capex added to an owned cluster (O_pf > 0)
per buy option (p, f): multi, tier2, tier3 in {0,1}; L (leaves/edge), S (spines/core), A (aggregation),
W (switches) in Z>=0; X1, X2, X3 >= 0 (= cluster nodes when multi / tier2 / tier3)

Constraints (one function each)
-------------------------------
(1) one mode       sum_m z_jm = 1
(2) work           sum_{t in W_j} r_jt >= sum_m d_m z_jm                   (d_m = ceil(T_m / H) slots)
(3) nodes          a_jg = sum_{m in M_jg} n_m z_m
(4) held           u_jgt >= a_jg - n^max_jg (1 - r_jt)                      (big-M from the data)
(5) capacity       sum_j u_jgt <= sum_{f in g} N_pf + sum_{e in g} avail_et K_e   (site)  |  <= R_pt (rent);
                   none for offers billed per job (each job rents its own nodes)
(6) fabric         sum_f y_pf <= 1;  N_pf <= n^max_p y_pf;  sum_{m in M_j, fabric f} z_m <= y_pf
                   (for fabrics without owned nodes of p)
(7) power          q_jt >= sum_m dP_m z_m - dP^max_j (1 - r_jt);
                   sum_j q_jt + sum_p P^idle_p (sum_f N_pf + sum_e avail_et K_e) <= P_env
(8) switches       with n = sum_{e in E_pf} K_e + N_pf (owned nodes kept and bought), ports k_p, radix R_f:
                   n <= 1 + n^max multi;  k n <= R + M tier2;  2 k n <= R^2 + M tier3;  tier3 <= tier2 <= multi;
                   R L >= 2 k n - M (1 - tier2);  2 S >= L;  A >= L - M (1 - tier3);  W >= multi;
                   W >= L + S + A;  X_i >= n - n^max (1 - bin_i)
                   net_pf = k nic X1 + cable k (X1 + X2 + X3) + switch W  (cost.py);
                   capex_pf = price N + net_pf (O_pf = 0)  |  price N + D_pf, D_pf >= net_pf - net(O_pf) (O_pf > 0)
(9) billing        V_pb >= R_pt for every slot t overlapping block b;
                   rent = sum_pb c_b price_p V_pb + sum_{m on p in P^job} n_m ceil(T_m / period_p) price_p z_m
(10) budget        sum capex_pf + rent <= B
(11) lateness      late_j >= (t - due_j) r_jt  for t > due_j   (only when a penalty is given)
(12) valid cuts    a_jg <= sum_{f in g} N_pf + sum_{e in g} K_e  (site);  node-slots: sum_t capacity_gt >=
                   sum_{m in g} n_m d_m z_m; fabric order tier3 <= tier2 <= multi      (tighten the LP bound)
(13) energetic     for intervals I = [a, b] (a a window start, b a window end) and groups g (with (5)):
                   sum_j e_{j,g,|W_j \ I|} <= sum_{t in I} capacity_gt,
                   e_jgo >= sum_{m in M_jg} n_m max(0, d_m - o) z_m       (a job runs >= d_m - |W_j \ I| slots in I)
(14) network       net_pf >= a n + b (n as in (8)) for every line of the lower convex envelope of net over the
                   cluster sizes 0..O_pf + n^max (b y_pf in place of b when O_pf = 0)
(15) fabric cover  sum_{m of j on (p, f), n_m >= 2} n_m z_m <= N_pf        (types without owned nodes)

(12)-(15) cut off no integer solution; each function's docstring says why. How much each family lifts the root
LP bound, and what was measured beside them: docs/fleet-bound.md.

Objective
---------
site energy = sum_{m site} (E_m - n_m P^idle T_m) z_m + H P^idle (|T| sum_f N_pf + sum_e |avail_e| K_e);
energy = site energy + sum_{m rent} E_m z_m;  carbon = intensity x energy;
cost = sum capex_pf x horizon / life + site energy x price + rent;  plus sum_j penalty_j late_j.
A 1e-6 tie-break prefers early slots. Coefficients below 1e-7 are written as 0 (``coef``).
"""

from __future__ import annotations

import itertools
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyomo.environ as pyo

from planner.data import Catalog
from planner.fleet.billing import (
    billed_per_job,
    billing_blocks,
    billing_period_h,
    job_rent_usd,
    network_capex_usd,
    period_price_usd,
)
from planner.fleet.modes import ANY_FABRIC, job_window
from planner.fleet.pools import Pools, pools_of
from planner.fleet.request import FleetRequest
from planner.physics import cost as cost_mod

CUT_FAMILIES = ("cover", "energetic", "network", "fabric_cover")  # valid inequalities (12)-(15)


@dataclass
class Index:
    """Data of the MIP: modes as arrays and the index sets built from them."""

    modes: pd.DataFrame
    window: dict[str, list[int]]
    by_job: dict[str, list[int]]
    by_jg: dict[tuple[str, str], list[int]]
    groups: list[str]
    pools: Pools
    blocks: dict[str, list[tuple[list[int], int]]]
    per_job: frozenset[str] = frozenset()  # rental offers billed per job (billed_per_job)

    def block_group(self, g: str) -> bool:
        """A group with a capacity per slot: a site cluster or a rental billed by the slot (not per job)."""
        p, tag = g.split("|")
        return tag != "rent" or p not in self.per_job


@dataclass
class FleetMIP:
    """The Pyomo model of the fleet MIP (module docstring) and the index it was built on. The model's variable
    values are what planner.solver hands HiGHS as a start, and where a solution is loaded."""

    model: pyo.ConcreteModel
    index: Index


def fleet_index(cat: Catalog, req: FleetRequest, modes: pd.DataFrame, pools: Pools) -> Index:
    """The index sets of the MIP over ``modes`` (rows renumbered from 0): each job's window and modes, the modes of
    each job and group, the groups, the billing blocks of each rental offer and the offers billed per job."""
    modes = modes.reset_index(drop=True)
    window = {j.id: job_window(req, j) for j in req.jobs}
    by_job: dict[str, list[int]] = {j.id: [] for j in req.jobs}
    by_jg: dict[tuple[str, str], list[int]] = {}
    for k, (jj, gg) in enumerate(zip(modes["job"].to_numpy(), modes["group"].to_numpy(), strict=True)):
        by_job[jj].append(k)
        by_jg.setdefault((jj, gg), []).append(k)
    groups = sorted(set(modes["group"].to_numpy()))
    blocks = {p: billing_blocks(req.slots, req.slot_hours, billing_period_h(cat.server(p))) for p in pools.rent}
    per_job = frozenset(p for p in pools.rent if billed_per_job(cat.server(p), req.slot_hours))
    return Index(modes, window, by_job, by_jg, groups, pools, blocks, per_job)


def build_fleet_model(
    cat: Catalog,
    req: FleetRequest,
    modes: pd.DataFrame,
    pools: Pools | None = None,
    rounded_work: bool = True,
    cuts: Collection[str] = CUT_FAMILIES,
) -> FleetMIP:
    """The MIP of the module docstring. ``rounded_work=False`` writes (2) with hours (sum H r >= sum T z) and
    ``cuts`` names the valid-inequality families (12)-(15) to add (default all): the weaker formulations are
    kept to measure the root bound of each step (bench/bench_fleet.py)."""
    pools = pools or pools_of(cat, req)
    ix = fleet_index(cat, req, modes, pools)
    m = pyo.ConcreteModel(name="fleet")
    add_sets_and_variables(m, ix, req)
    nodes = ix.modes["nodes"].to_numpy(np.int64)
    d = ix.modes["slots_needed"].to_numpy(np.int64)
    add_one_mode(m, ix)
    add_work(m, ix, d if rounded_work else ix.modes["time_to_train_h"].to_numpy(float) / req.slot_hours)
    add_nodes(m, ix, nodes)
    add_capacity(m, ix, req)
    add_fabric_choice(m, ix, req)
    add_power(m, ix, req, cat)
    capex = add_switches(m, ix, req, cat)
    rent = add_billing(m, ix, cat)
    add_budget(m, req, capex, rent)
    add_lateness(m, ix, req)
    if "cover" in cuts:
        add_cuts(m, ix, req, nodes, d)
    if "energetic" in cuts:
        add_energetic_cuts(m, ix, req, nodes, d)
    if "network" in cuts:
        add_network_cuts(m, ix, req, cat)
    if "fabric_cover" in cuts:
        add_fabric_cover_cuts(m, ix, nodes)
    add_objective(m, ix, req, cat, capex, rent)
    return FleetMIP(m, ix)


def add_sets_and_variables(m: pyo.ConcreteModel, ix: Index, req: FleetRequest) -> None:
    """The sets J, T, M, W_j (JT), the job-group pairs, buy options, owned entries and rental blocks, and the
    variables of the module docstring but the switch variables of (8) and the e of (13)."""
    pools = ix.pools
    m.J = pyo.Set(initialize=[j.id for j in req.jobs], ordered=True)
    m.T = pyo.RangeSet(0, req.slots - 1)
    m.M = pyo.RangeSet(0, len(ix.modes) - 1)
    m.JT = pyo.Set(dimen=2, initialize=[(j, t) for j in m.J for t in ix.window[j]])
    m.JG = pyo.Set(dimen=2, initialize=sorted(ix.by_jg))
    m.JGT = pyo.Set(dimen=3, initialize=[(j, g, t) for (j, g) in sorted(ix.by_jg) for t in ix.window[j]])
    m.BUY = pyo.Set(dimen=2, initialize=[(p, f) for p in sorted(pools.buy) for f in pools.buy[p]])
    m.E = pyo.RangeSet(0, len(pools.owned) - 1)
    rent_used = sorted({g.split("|")[0] for g in ix.groups if g.endswith("|rent") and ix.block_group(g)})
    m.RP = pyo.Set(initialize=rent_used)
    m.RB = pyo.Set(dimen=2, initialize=[(p, b) for p in rent_used for b in range(len(ix.blocks[p]))])
    m.z = pyo.Var(m.M, domain=pyo.Binary)
    m.r = pyo.Var(m.JT, domain=pyo.Binary)
    m.a = pyo.Var(m.JG, domain=pyo.NonNegativeReals)
    m.u = pyo.Var(m.JGT, domain=pyo.NonNegativeReals)
    m.q = pyo.Var(m.JT, domain=pyo.NonNegativeReals)
    m.y = pyo.Var(m.BUY, domain=pyo.Binary)
    m.N = pyo.Var(m.BUY, domain=pyo.NonNegativeIntegers, bounds=(0, req.max_nodes))
    m.K = pyo.Var(m.E, domain=pyo.NonNegativeIntegers, bounds=lambda m, e: (0, pools.owned[e].count))
    m.R = pyo.Var(m.RP, m.T, domain=pyo.NonNegativeIntegers, bounds=(0, req.max_nodes))
    m.V = pyo.Var(m.RB, domain=pyo.NonNegativeIntegers, bounds=(0, req.max_nodes))
    m.late = pyo.Var(m.J, domain=pyo.NonNegativeReals)


def coef(x: float) -> float:
    """A coefficient for HiGHS: magnitudes below 1e-7 (USD, kWh, kW) become 0 -- such coefficients change no
    plan but can mislead presolve's numerics (a 1e-54 USD switch price made it report a feasible MIP infeasible)."""
    return 0.0 if abs(x) < 1e-7 else float(x)


def _row(expr: Any) -> Any:
    """A constraint row, or Pyomo's marker when the expression is constant (no variable left in it)."""
    if isinstance(expr, bool):
        return pyo.Constraint.Feasible if expr else pyo.Constraint.Infeasible
    return expr


def _capacity(m: pyo.ConcreteModel, ix: Index, g: str, t: int | None) -> Any:
    """Nodes group g has in slot t (t None: the most it can have in any slot)."""
    p, tag = g.split("|")
    if tag == "rent":
        return m.R[p, t] if t is not None else None
    fabs = ix.pools.buy.get(p, []) if tag == "*" else [tag] if tag in ix.pools.buy.get(p, []) else []
    bought = sum(m.N[p, f] for f in fabs)
    own = sum(
        (e.avail[t] if t is not None else 1) * m.K[i]
        for i, e in enumerate(ix.pools.owned)
        if e.server == p and e.fabric == tag
    )
    return bought + own


def _capacity_sum(m: pyo.ConcreteModel, ix: Index, g: str, ts: range) -> Any:
    """Nodes group g has summed over the slots ts, one term per variable: |ts| N_pf + (its slots in service) K_e,
    or the rented R_pt (the sum of ``_capacity`` over ts, written compactly)."""
    p, tag = g.split("|")
    if tag == "rent":
        return pyo.quicksum(m.R[p, t] for t in ts)
    fabs = ix.pools.buy.get(p, []) if tag == "*" else [tag] if tag in ix.pools.buy.get(p, []) else []
    bought = pyo.quicksum(len(ts) * m.N[p, f] for f in fabs)
    own = pyo.quicksum(
        sum(e.avail[t] for t in ts) * m.K[i] for i, e in enumerate(ix.pools.owned) if e.server == p and e.fabric == tag
    )
    return bought + own


def add_one_mode(m: pyo.ConcreteModel, ix: Index) -> None:
    """(1) every job runs in exactly one mode."""
    m.one_mode = pyo.Constraint(m.J, rule=lambda m, j: pyo.quicksum(m.z[k] for k in ix.by_job[j]) == 1)


def add_work(m: pyo.ConcreteModel, ix: Index, d: np.ndarray) -> None:
    """(2) a job runs in at least the d_m slots its mode needs."""
    m.work = pyo.Constraint(
        m.J,
        rule=lambda m, j: (
            pyo.quicksum(m.r[j, t] for t in ix.window[j]) >= pyo.quicksum(float(d[k]) * m.z[k] for k in ix.by_job[j])
        ),
    )


def add_nodes(m: pyo.ConcreteModel, ix: Index, nodes: np.ndarray) -> None:
    """(3) nodes a job takes in a group; (4) held in every slot it runs."""
    m.nodes_of = pyo.Constraint(
        m.JG, rule=lambda m, j, g: m.a[j, g] == pyo.quicksum(int(nodes[k]) * m.z[k] for k in ix.by_jg[(j, g)])
    )
    big = {jg: int(max(nodes[k] for k in ks)) for jg, ks in ix.by_jg.items()}
    m.held = pyo.Constraint(m.JGT, rule=lambda m, j, g, t: m.u[j, g, t] >= m.a[j, g] - big[(j, g)] * (1 - m.r[j, t]))


def add_capacity(m: pyo.ConcreteModel, ix: Index, req: FleetRequest) -> None:
    """(5) nodes held in a group and slot fit its capacity (bought + kept owned in service, or rented)."""
    by_gt: dict[tuple[str, int], list[str]] = {}
    for j, g, t in m.JGT:
        by_gt.setdefault((g, t), []).append(j)
    m.capacity = pyo.Constraint(
        [(g, t) for g in ix.groups for t in range(req.slots) if (g, t) in by_gt and ix.block_group(g)],
        rule=lambda m, g, t: pyo.quicksum(m.u[j, g, t] for j in by_gt[(g, t)]) <= _capacity(m, ix, g, t),
    )


def fabric_links(ix: Index, owned_types_excluded: bool) -> dict[tuple[str, str, str], list[int]]:
    """The site modes of each (job, type, fabric) that need that fabric bought: a multi-node mode on a fabric the
    type has no owned nodes on (``owned_types_excluded``: only of types without any owned nodes)."""
    modes = ix.modes
    links: dict[tuple[str, str, str], list[int]] = {}
    for k, (j, kind, p, f) in enumerate(
        zip(modes["job"], modes["kind"], modes["server"], modes["fabric"], strict=True)
    ):
        if kind != "site" or f == ANY_FABRIC:
            continue
        owned = p in ix.pools.owned_fabrics if owned_types_excluded else f in ix.pools.owned_fabrics.get(p, set())
        if not owned:
            links.setdefault((j, p, f), []).append(k)
    return links


def add_fabric_choice(m: pyo.ConcreteModel, ix: Index, req: FleetRequest) -> None:
    """(6) one fabric per bought type; nodes only on it; a job uses a fabric without owned nodes only if chosen."""
    types = sorted(ix.pools.buy)
    m.one_fabric = pyo.Constraint(types, rule=lambda m, p: pyo.quicksum(m.y[p, f] for f in ix.pools.buy[p]) <= 1)
    m.bought_on = pyo.Constraint(m.BUY, rule=lambda m, p, f: m.N[p, f] <= req.max_nodes * m.y[p, f])
    links = fabric_links(ix, owned_types_excluded=False)
    m.uses_fabric = pyo.Constraint(
        sorted(links), rule=lambda m, j, p, f: pyo.quicksum(m.z[k] for k in links[(j, p, f)]) <= m.y[p, f]
    )


def add_power(m: pyo.ConcreteModel, ix: Index, req: FleetRequest, cat: Catalog) -> None:
    """(7) site power per slot: jobs above idle + idle of every powered node <= the envelope."""
    modes = ix.modes
    dp = modes["power_coef_kw"].to_numpy(float)
    site = modes["kind"].to_numpy() == "site"
    site_modes = {j: [k for k in ks if site[k]] for j, ks in ix.by_job.items()}
    top = {j: max((float(dp[k]) for k in ks), default=0.0) for j, ks in site_modes.items()}

    def job_power(m: pyo.ConcreteModel, j: str, t: int) -> Any:
        if top[j] <= 0:
            return pyo.Constraint.Skip
        return m.q[j, t] >= pyo.quicksum(float(dp[k]) * m.z[k] for k in site_modes[j]) - top[j] * (1 - m.r[j, t])

    m.job_power = pyo.Constraint(m.JT, rule=job_power)
    envelope = req.power_kw if req.power_kw is not None else cat.site(req.site).power_envelope_kw
    jt_by_t: dict[int, list[str]] = {}
    for j, t in m.JT:
        jt_by_t.setdefault(t, []).append(j)
    idle = ix.pools.idle_kw

    def slot_power(m: pyo.ConcreteModel, t: int) -> Any:
        base = pyo.quicksum(idle[p] * m.N[p, f] for p, f in m.BUY) + pyo.quicksum(
            idle[e.server] * e.avail[t] * m.K[i] for i, e in enumerate(ix.pools.owned)
        )
        return _row(pyo.quicksum(m.q[j, t] for j in jt_by_t.get(t, [])) + base <= envelope)

    m.power = pyo.Constraint(m.T, rule=slot_power)


def add_switches(m: pyo.ConcreteModel, ix: Index, req: FleetRequest, cat: Catalog) -> dict[tuple[str, str], Any]:
    """(8) switches, cables and NICs of every buy option, exact for one, two and three tiers (cost.py), for the
    cluster of the owned nodes kept (of the entries that serve, E_pf) and the nodes bought; returns the capex
    expression of each option: the servers bought and the network beyond the owned one (``owned_capex_usd``). An
    owned node retired at the start is not in n, so the network is not grown for it; D_pf >= 0 keeps a cluster
    smaller than the owned network from being credited for it."""
    owned = {(p, f): ix.pools.serving_on(p, f) for p, f in m.BUY}
    entries = {(p, f): ix.pools.serving(p, f) for p, f in m.BUY}
    top = {(p, f): owned[(p, f)] + req.max_nodes for p, f in m.BUY}
    srv = {p: cat.server(p) for p in ix.pools.buy}
    fab = {f: cat.fabric(f) for fs in ix.pools.buy.values() for f in fs}
    for name in ("multi", "tier2", "tier3"):
        setattr(m, name, pyo.Var(m.BUY, domain=pyo.Binary))
    for name in ("L", "S", "A", "W"):
        setattr(m, name, pyo.Var(m.BUY, domain=pyo.NonNegativeIntegers))
    for name in ("X1", "X2", "X3"):
        setattr(m, name, pyo.Var(m.BUY, domain=pyo.NonNegativeReals))

    def n(m: pyo.ConcreteModel, p: str, f: str) -> Any:
        return cluster_nodes(m, entries[(p, f)], p, f)

    def ports(p: str) -> int:
        return srv[p].nic_ports

    def radix(f: str) -> int:
        return fab[f].switch_radix

    def big(p: str, f: str) -> float:
        return float(2 * ports(p) * top[(p, f)] + radix(f) ** 2)

    m.sw_multi = pyo.Constraint(m.BUY, rule=lambda m, p, f: n(m, p, f) <= 1 + top[(p, f)] * m.multi[p, f])
    m.sw_tier2 = pyo.Constraint(
        m.BUY, rule=lambda m, p, f: ports(p) * n(m, p, f) <= radix(f) + big(p, f) * m.tier2[p, f]
    )
    m.sw_tier3 = pyo.Constraint(
        m.BUY, rule=lambda m, p, f: 2 * ports(p) * n(m, p, f) <= radix(f) ** 2 + big(p, f) * m.tier3[p, f]
    )
    m.sw_order2 = pyo.Constraint(m.BUY, rule=lambda m, p, f: m.tier2[p, f] <= m.multi[p, f])
    m.sw_order3 = pyo.Constraint(m.BUY, rule=lambda m, p, f: m.tier3[p, f] <= m.tier2[p, f])
    m.sw_leaves = pyo.Constraint(
        m.BUY,
        rule=lambda m, p, f: radix(f) * m.L[p, f] >= 2 * ports(p) * n(m, p, f) - big(p, f) * (1 - m.tier2[p, f]),
    )
    m.sw_spines = pyo.Constraint(m.BUY, rule=lambda m, p, f: 2 * m.S[p, f] >= m.L[p, f])
    lmax = {(p, f): 2 * ports(p) * top[(p, f)] // radix(f) + 1 for p, f in m.BUY}
    m.sw_aggregation = pyo.Constraint(
        m.BUY, rule=lambda m, p, f: m.A[p, f] >= m.L[p, f] - lmax[(p, f)] * (1 - m.tier3[p, f])
    )
    m.sw_one = pyo.Constraint(m.BUY, rule=lambda m, p, f: m.W[p, f] >= m.multi[p, f])
    m.sw_total = pyo.Constraint(m.BUY, rule=lambda m, p, f: m.W[p, f] >= m.L[p, f] + m.S[p, f] + m.A[p, f])
    for name, var, binv in (("sw_x1", m.X1, m.multi), ("sw_x2", m.X2, m.tier2), ("sw_x3", m.X3, m.tier3)):
        setattr(
            m,
            name,
            pyo.Constraint(
                m.BUY,
                rule=lambda m, p, f, var=var, binv=binv: var[p, f] >= n(m, p, f) - top[(p, f)] * (1 - binv[p, f]),
            ),
        )
    net = {(p, f): network_expr(m, cat, p, f) for p, f in m.BUY}
    m.OWNBUY = pyo.Set(dimen=2, initialize=[(p, f) for p, f in m.BUY if owned[(p, f)] > 0])
    m.D = pyo.Var(m.OWNBUY, domain=pyo.NonNegativeReals)
    m.sw_reuse = pyo.Constraint(
        m.OWNBUY, rule=lambda m, p, f: m.D[p, f] >= net[(p, f)] - coef(network_capex_usd(cat, p, f, owned[(p, f)]))
    )
    return {
        (p, f): coef(srv[p].price_usd or 0.0) * m.N[p, f] + (m.D[p, f] if (p, f) in m.OWNBUY else net[(p, f)])
        for p, f in m.BUY
    }


def cluster_nodes(m: pyo.ConcreteModel, entries: list[int], p: str, f: str) -> Any:
    """n of (8): the nodes of buy option (p, f)'s cluster, the owned kept of ``entries`` (E_pf) plus N_pf."""
    return pyo.quicksum(m.K[i] for i in entries) + m.N[p, f]


def network_expr(m: pyo.ConcreteModel, cat: Catalog, p: str, f: str) -> Any:
    """net_pf of (8): the NICs, cables and switches of buy option (p, f)'s cluster, priced as cost.py prices them."""
    s, fb = cat.server(p), cat.fabric(f)
    return (
        coef(s.nic_ports * fb.nic_price_usd) * m.X1[p, f]
        + coef(s.nic_ports * fb.cable_price_usd) * (m.X1[p, f] + m.X2[p, f] + m.X3[p, f])
        + coef(fb.switch_price_usd) * m.W[p, f]
    )


def add_billing(m: pyo.ConcreteModel, ix: Index, cat: Catalog) -> Any:
    """(9) a node rented in a slot pays every billing period the slot overlaps; a job on an offer billed per job
    pays its own nodes' periods (rent_m z_m, ``job_rent_usd``); returns the rent expression."""
    m.billing = pyo.Constraint(
        [(p, b, t) for p, b in m.RB for t in ix.blocks[p][b][0]], rule=lambda m, p, b, t: m.V[p, b] >= m.R[p, t]
    )
    price = {p: coef(period_price_usd(cat.server(p))) for p in m.RP}
    block = pyo.quicksum(price[p] * ix.blocks[p][b][1] * m.V[p, b] for p, b in m.RB)
    rent = mode_rent_usd(ix, cat)
    return block + pyo.quicksum(coef(float(rent[k])) * m.z[int(k)] for k in np.flatnonzero(rent > 0))


def mode_rent_usd(ix: Index, cat: Catalog) -> np.ndarray:
    """Rent of each mode on an offer billed per job (``job_rent_usd``); 0 for every other mode."""
    modes = ix.modes
    out = np.zeros(len(modes))
    kind, server = modes["kind"].to_numpy(), modes["server"].to_numpy()
    for p in ix.per_job:
        sel = np.flatnonzero((kind == "rent") & (server == p))
        if len(sel):
            out[sel] = job_rent_usd(
                cat.server(p), modes["nodes"].to_numpy()[sel], modes["time_to_train_h"].to_numpy(float)[sel]
            )
    return out


def add_budget(m: pyo.ConcreteModel, req: FleetRequest, capex: dict[tuple[str, str], Any], rent: Any) -> None:
    """(10) capex of what is bought plus all rent within the budget."""
    if req.budget_usd is not None:
        m.budget = pyo.Constraint(rule=lambda m: _row(pyo.quicksum(capex.values()) + rent <= req.budget_usd))


def add_lateness(m: pyo.ConcreteModel, ix: Index, req: FleetRequest) -> None:
    """(11) late_j >= slots after the due slot in which job j still runs."""
    rows = [
        (j.id, t) for j in req.jobs if j.penalty_usd_per_slot is not None for t in ix.window[j.id] if t > j.due_slot
    ]
    due = {j.id: j.due_slot for j in req.jobs}
    m.lateness = pyo.Constraint(rows, rule=lambda m, j, t: m.late[j] >= (t - due[j]) * m.r[j, t])


def add_cuts(m: pyo.ConcreteModel, ix: Index, req: FleetRequest, nodes: np.ndarray, d: np.ndarray) -> None:
    """(12) valid inequalities: a site group holds at least the nodes of each job placed on it, and every group
    has at least the node-slots its jobs hold (the big-M rows alone let a fractional r hide every node)."""
    site_jg = [(j, g) for (j, g) in sorted(ix.by_jg) if not g.endswith("|rent")]
    m.cover = pyo.Constraint(site_jg, rule=lambda m, j, g: m.a[j, g] <= _capacity(m, ix, g, None))
    by_g: dict[str, list[int]] = {}
    for (_j, g), ks in ix.by_jg.items():
        by_g.setdefault(g, []).extend(ks)
    m.node_slots = pyo.Constraint(
        [g for g in ix.groups if ix.block_group(g)],
        rule=lambda m, g: (
            _capacity_sum(m, ix, g, range(req.slots)) >= pyo.quicksum(int(nodes[k] * d[k]) * m.z[k] for k in by_g[g])
        ),
    )


def energetic_intervals(ix: Index, d: np.ndarray) -> dict[tuple[str, tuple[tuple[str, int], ...]], tuple[int, int]]:
    """The rows of (13): per group g and interval [a, b] (a a window start, b a window end), the terms (job,
    slots of its window outside the interval) of the jobs that must run some slots inside it, keyed by (g, terms)
    -- of intervals with the same terms only the shortest is kept (it is the strongest)."""
    win = {j: (ts[0], ts[-1]) for j, ts in ix.window.items() if ts}
    starts = sorted({w[0] for w in win.values()})
    ends = sorted({w[1] for w in win.values()})
    maxd = {jg: int(max(d[k] for k in ks)) for jg, ks in ix.by_jg.items()}
    by_g: dict[str, list[str]] = {}
    for j, g in sorted(ix.by_jg):
        if ix.block_group(g):
            by_g.setdefault(g, []).append(j)
    rows: dict[tuple[str, tuple[tuple[str, int], ...]], tuple[int, int]] = {}
    for g, jobs in by_g.items():
        for a in starts:
            for b in ends:
                if b < a:
                    continue
                terms = []
                for j in jobs:
                    s, e = win[j]
                    inside = min(b, e) - max(a, s) + 1
                    out = (e - s + 1) - inside
                    if inside > 0 and out < maxd[(j, g)]:
                        terms.append((j, out))
                if not terms:
                    continue
                key = (g, tuple(terms))
                if key not in rows or b - a < rows[key][1] - rows[key][0]:
                    rows[key] = (a, b)
    return rows


def add_energetic_cuts(m: pyo.ConcreteModel, ix: Index, req: FleetRequest, nodes: np.ndarray, d: np.ndarray) -> None:
    """(13) energetic reasoning over slot intervals. In an interval I = [a, b] a job j whose window W_j overlaps
    I runs at least d_m - |W_j \\ I| of its d_m slots inside I (it runs d_m slots of W_j, at most |W_j \\ I| of
    them outside I), each on n_m nodes of its group. So the capacity of group g summed over I is at least
    sum_j sum_{m in M_jg} n_m max(0, d_m - |W_j \\ I|) z_m -- valid for every schedule, and the node-slots
    row of (12) is the case I = all slots. Written with e_jgo >= sum_{m in M_jg} n_m max(0, d_m - o) z_m
    (o = |W_j \\ I|), for a in the first and b in the last slots of the windows (``energetic_intervals``)."""
    rows = energetic_intervals(ix, d)
    used = sorted({(j, g, o) for (g, terms) in rows for j, o in terms})
    m.ENER = pyo.Set(dimen=3, initialize=used)
    m.e = pyo.Var(m.ENER, domain=pyo.NonNegativeReals)
    m.energy_of = pyo.Constraint(
        m.ENER,
        rule=lambda m, j, g, o: (
            m.e[j, g, o] >= pyo.quicksum(int(nodes[k] * (d[k] - o)) * m.z[k] for k in ix.by_jg[(j, g)] if d[k] > o)
        ),
    )
    keys = sorted(rows)
    m.energetic = pyo.Constraint(
        range(len(keys)),
        rule=lambda m, i: (
            pyo.quicksum(m.e[j, keys[i][0], o] for j, o in keys[i][1])
            <= _capacity_sum(m, ix, keys[i][0], range(rows[keys[i]][0], rows[keys[i]][1] + 1))
        ),
    )


def network_envelope(cat: Catalog, server: str, fabric: str, owned: int, most: int) -> list[tuple[float, float]]:
    """Lines (slope, intercept) of the lower convex envelope of the network capex (NICs, cables, switches, as
    written in (8)) of a cluster of n = owned..owned + most nodes: every line lies on or below it."""
    s, fb = cat.server(server), cat.fabric(fabric)
    k, radix = s.nic_ports, fb.switch_radix
    n = np.arange(owned, owned + most + 1, dtype=np.int64)
    x1 = np.where(n >= 2, n, 0)
    x2 = np.where(k * n > radix, n, 0)
    x3 = np.where(2 * k * n > radix**2, n, 0)
    w = cost_mod.switch_count(n, k, radix)
    g = coef(k * fb.nic_price_usd) * x1 + coef(k * fb.cable_price_usd) * (x1 + x2 + x3) + coef(fb.switch_price_usd) * w
    hull: list[int] = []  # lower convex hull, monotone chain
    for i in range(len(n)):
        while len(hull) >= 2:
            i0, i1 = hull[-2], hull[-1]
            if (g[i1] - g[i0]) * (n[i] - n[i0]) >= (g[i] - g[i0]) * (n[i1] - n[i0]):
                hull.pop()
            else:
                break
        hull.append(i)
    lines = []
    for i0, i1 in itertools.pairwise(hull):
        slope = float(g[i1] - g[i0]) / float(n[i1] - n[i0])
        lines.append((slope, float(g[i0]) - slope * float(n[i0])))
    return lines


def add_network_cuts(m: pyo.ConcreteModel, ix: Index, req: FleetRequest, cat: Catalog) -> None:
    """(14) the network capex of each buy option lies above its convex envelope. In every integer solution of (8)
    X1, X2, X3 and W are at least their exact values for its n nodes (the rows of (8) force them), so the
    NIC, cable and switch capex is at least g(n) >= each line a n + b of the lower convex envelope of g over
    n = 0..O + max_nodes (n = kept owned + bought: every owned node may be retired). Without owned nodes the line
    is written a N + b y (b <= 0 as the envelope passes through g(0) = 0): at y = 0 no node is bought (N = 0) and
    the row reads 0 >= 0."""
    rows = []
    for p, f in m.BUY:
        owned = ix.pools.serving_on(p, f)
        for slope, icpt in network_envelope(cat, p, f, 0, owned + req.max_nodes):
            if slope > 1e-9 or icpt > 1e-9:
                rows.append((p, f, slope, icpt, owned))

    def rule(m: pyo.ConcreteModel, i: int) -> Any:
        p, f, slope, icpt, owned = rows[i]
        net = network_expr(m, cat, p, f)
        if owned == 0:
            return net >= slope * m.N[p, f] + icpt * m.y[p, f]
        return net >= slope * cluster_nodes(m, ix.pools.serving(p, f), p, f) + icpt

    m.network_envelope = pyo.Constraint(range(len(rows)), rule=rule)


def add_fabric_cover_cuts(m: pyo.ConcreteModel, ix: Index, nodes: np.ndarray) -> None:
    """(15) a multi-node job on fabric f of a type without owned nodes runs on nodes bought on f:
    sum_{m of job j on (p, f)} n_m z_m <= N_pf. In an integer solution only the chosen fabric (y_pf = 1) has
    nodes, so the group's capacity is N_pf; the LP relaxation could otherwise hold the job's nodes on another
    fabric's N."""
    links = fabric_links(ix, owned_types_excluded=True)
    m.fabric_cover = pyo.Constraint(
        sorted(links),
        rule=lambda m, j, p, f: pyo.quicksum(int(nodes[k]) * m.z[k] for k in links[(j, p, f)]) <= m.N[p, f],
    )


def add_objective(
    m: pyo.ConcreteModel, ix: Index, req: FleetRequest, cat: Catalog, capex: dict[tuple[str, str], Any], rent: Any
) -> None:
    """The objective of the module docstring (cost, energy or carbon, plus late penalties and the early-slot
    tie-break)."""
    site = cat.site(req.site)
    modes = ix.modes
    e = modes["energy_coef_kwh"].to_numpy(float)
    site_k = np.flatnonzero(modes["kind"].to_numpy() == "site")
    rent_k = np.flatnonzero(modes["kind"].to_numpy() == "rent")
    H = req.slot_hours
    idle = ix.pools.idle_kw
    idle_kwh = pyo.quicksum(idle[p] * H * req.slots * m.N[p, f] for p, f in m.BUY) + pyo.quicksum(
        idle[o.server] * H * sum(o.avail) * m.K[i] for i, o in enumerate(ix.pools.owned)
    )
    site_kwh = pyo.quicksum(float(e[k]) * m.z[int(k)] for k in site_k) + idle_kwh
    energy = site_kwh + pyo.quicksum(float(e[k]) * m.z[int(k)] for k in rent_k)
    # only jobs that may finish late: a zero-price term would leave late[j] out of the solver's model, with no value
    # after a solve for the objective's evaluation (squeeze_start) to read
    penalty = pyo.quicksum(j.penalty_usd_per_slot * m.late[j.id] for j in req.jobs if j.penalty_usd_per_slot)
    if req.objective == "energy":
        obj = energy
    elif req.objective == "carbon":
        obj = site.carbon_kg_per_kwh * energy
    else:
        share = req.slots * H / (req.life_years * cost_mod.HOURS_PER_YEAR)
        obj = share * pyo.quicksum(capex.values()) + site.electricity_usd_per_kwh * site_kwh + rent
    m.objective = pyo.Objective(
        expr=obj + penalty + 1e-6 * pyo.quicksum((t + 1) * m.r[j, t] for (j, t) in m.JT), sense=pyo.minimize
    )
