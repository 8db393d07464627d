"""The start HiGHS is given, and what the start heuristics know of it, passed between them and the solve.

A start is a complete fleet decision (``StartPlan``) written into the MIP's variables (``set_plan_start``): the
variable values are what planner.solver hands HiGHS as a starting solution, and HiGHS keeps it when it is
feasible. ``StartState`` says whether the variables hold a start, whether that start is known to be a plan of
the full MIP (a MIP solution, or a decision ``evaluate_fleet`` accepted -- the greedy start is not: its power and
budget are unchecked), the LP relaxation's mode values and what the packing proved.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyomo.environ as pyo

from planner.data import Catalog
from planner.fleet.billing import network_capex_usd
from planner.fleet.evaluate import evaluate_fleet
from planner.fleet.formulation import FleetMIP, Index
from planner.fleet.request import FleetRequest
from planner.physics import cost as cost_mod
from planner.solver import Solved


@dataclass
class StartPlan:
    """A complete fleet decision for a start: mode index and slots of every job, nodes bought per (type, fabric)."""

    chosen: dict[str, tuple[int, list[int]]]
    bought: dict[tuple[str, str], int]
    kept: list[int] | None = None  # owned nodes kept per owned entry (None: all)


@dataclass(frozen=True)
class PackProof:
    """What ``pack_start`` proved of the packed plan it set as the start: no cluster of ``server`` on ``fabric``
    smaller than ``nodes`` runs every job in its window (its window bound, or HiGHS: ``cluster_fits``), so every
    plan that runs them all on one such cluster is worth at least ``bound`` (the cluster's value at that size plus
    each job's least energy, in the objective's unit)."""

    server: str
    fabric: str
    nodes: int
    bound: float


@dataclass
class StartState:
    """What the start heuristics know of the start the MIP's variables hold (module docstring)."""

    has_start: bool = False  # the variables hold a complete start, handed to HiGHS
    feasible: bool = False  # that start is known to be a plan of the full MIP
    lp_z: np.ndarray | None = None  # the LP relaxation's z per mode (restricted_start), None before it is solved
    pack_proof: PackProof | None = None  # what pack_start proved of the start it set (None: nothing)

    def value(self, mip: FleetMIP) -> float:
        """The MIP's objective at the start the variables hold (tie-break included)."""
        return float(pyo.value(mip.model.objective))

    def start_set(self, mip: FleetMIP, feasible: bool) -> None:
        """Record that the variables now hold a complete start, known to be a plan or not (``feasible``); the
        model's ``warm_start`` flag is planner.solver's signal to hand the values to HiGHS."""
        self.has_start = True
        self.feasible = feasible
        mip.model.warm_start = True


def mode_arrays(modes: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(nodes, slots needed, kind, server, fabric, energy coefficient in kWh) of every mode, as arrays."""
    return (
        modes["nodes"].to_numpy(np.int64),
        modes["slots_needed"].to_numpy(np.int64),
        modes["kind"].to_numpy(),
        modes["server"].to_numpy(),
        modes["fabric"].to_numpy(),
        modes["energy_coef_kwh"].to_numpy(float),
    )


def plan_value(cat: Catalog, req: FleetRequest, ix: Index, plan: StartPlan) -> float | None:
    """The exact value of a complete plan (``evaluate_fleet``: the objective without the tie-break), None when it
    breaks a rule."""
    modes = ix.modes
    chosen = {j: modes.loc[k] for j, (k, _s) in plan.chosen.items()}
    slots = {j: s for j, (_k, s) in plan.chosen.items()}
    kept = plan.kept if plan.kept is not None else [e.count for e in ix.pools.owned]
    ev = evaluate_fleet(cat, req, ix.pools, chosen, slots, plan.bought, kept)
    return None if ev is None else float(ev["value"])


def current_plan(mip: FleetMIP) -> StartPlan | None:
    """The plan held in the model's variable values (a start or a loaded solution); None if incomplete."""
    m, ix = mip.model, mip.index
    chosen = {}
    for j, ks in ix.by_job.items():
        k = next((k for k in ks if (m.z[k].value or 0.0) > 0.5), None)
        if k is None:
            return None
        chosen[j] = (k, [t for t in ix.window[j] if (m.r[j, t].value or 0.0) > 0.5])
    bought = {(p, f): round(m.N[p, f].value or 0.0) for p, f in m.BUY if round(m.N[p, f].value or 0.0) > 0}
    return StartPlan(chosen, bought, [round(m.K[i].value or 0.0) for i in m.E])


def load_solution(m: pyo.ConcreteModel, solved: Solved) -> None:
    """Set the model's variables (those not fixed) to a solution returned by ``solve_model``."""
    for name, arr in solved.values.items():
        comp = getattr(m, name)
        for i, val in enumerate(arr):
            if not comp[i].fixed:
                comp[i].set_value(float(val), skip_validation=True)
    for name, vals in solved.keyed.items():
        comp = getattr(m, name)
        for idx, val in vals.items():
            comp[idx].set_value(float(val), skip_validation=True)


def set_plan_start(
    mip: FleetMIP, cat: Catalog, req: FleetRequest, plan: StartPlan, state: StartState, *, feasible: bool
) -> None:
    """Give every variable of the MIP its value in ``plan`` (HiGHS keeps the start only if it is feasible) and
    record it in ``state``: ``feasible`` says whether the plan is known to be a plan of the full MIP."""
    m, ix = mip.model, mip.index
    nodes = ix.modes["nodes"].to_numpy(np.int64)
    for v in m.component_data_objects(pyo.Var, descend_into=True):
        v.set_value(0, skip_validation=True)
    for i, e in enumerate(ix.pools.owned):
        m.K[i].set_value(e.count if plan.kept is None else plan.kept[i])
    for (p, f), n_bought in plan.bought.items():
        m.N[p, f].set_value(int(n_bought))
        m.y[p, f].set_value(1)
    _set_job_values(mip, req, plan)
    _set_rental_values(mip, req, plan)
    for p, f in m.BUY:
        _set_network_values(mip, cat, p, f)
    if hasattr(m, "e"):  # (13): the node-slots of the chosen modes
        d = ix.modes["slots_needed"].to_numpy(np.int64)
        for j, g, o in m.ENER:
            m.e[j, g, o].set_value(
                sum(int(nodes[k]) * max(0, int(d[k]) - o) for k in ix.by_jg[(j, g)] if (m.z[k].value or 0) > 0.5)
            )
    state.start_set(mip, feasible)


def _set_job_values(mip: FleetMIP, req: FleetRequest, plan: StartPlan) -> None:
    """z, a, r, u, q and late of every job in its chosen mode and slots."""
    m, modes = mip.model, mip.index.modes
    nodes = modes["nodes"].to_numpy(np.int64)
    kind = modes["kind"].to_numpy()
    group = modes["group"].to_numpy()
    for j, (k, slots) in plan.chosen.items():
        m.z[k].set_value(1)
        g = str(group[k])
        m.a[j, g].set_value(int(nodes[k]))
        job = next(x for x in req.jobs if x.id == j)
        for t in slots:
            m.r[j, t].set_value(1)
            m.u[j, g, t].set_value(int(nodes[k]))
            if kind[k] == "site":
                m.q[j, t].set_value(float(modes.at[k, "power_coef_kw"]))
        if job.penalty_usd_per_slot is not None:
            m.late[j].set_value(max(0, max(slots) - job.due_slot))


def _set_rental_values(mip: FleetMIP, req: FleetRequest, plan: StartPlan) -> None:
    """R (nodes rented per slot) and V (per billing block) of every offer billed by the slot."""
    m, ix = mip.model, mip.index
    nodes = ix.modes["nodes"].to_numpy(np.int64)
    group = ix.modes["group"].to_numpy()
    usage: dict[str, np.ndarray] = {}
    for k, slots in plan.chosen.values():
        usage.setdefault(str(group[k]), np.zeros(req.slots))[slots] += int(nodes[k])
    for p in m.RP:
        arr = usage.get(f"{p}|rent", np.zeros(req.slots))
        for t in range(req.slots):
            m.R[p, t].set_value(int(arr[t]))
        for b, (ts, _count) in enumerate(ix.blocks[p]):
            m.V[p, b].set_value(int(max(arr[t] for t in ts)))


def _set_network_values(mip: FleetMIP, cat: Catalog, p: str, f: str) -> None:
    """The switch variables of (8) of buy option (p, f) at their exact values for its cluster size (the owned
    nodes kept, K already set, and N), and D_pf at the network it adds beyond the owned one."""
    m = mip.model
    s, fb = cat.server(p), cat.fabric(f)
    pools = mip.index.pools
    n = sum(round(m.K[i].value or 0.0) for i in pools.serving(p, f)) + int(m.N[p, f].value or 0)
    if (p, f) in m.OWNBUY:
        owned = pools.serving_on(p, f)
        m.D[p, f].set_value(max(0.0, network_capex_usd(cat, p, f, n) - network_capex_usd(cat, p, f, owned)))
    ports, k_radix = s.nic_ports * n, fb.switch_radix
    t2, t3 = int(ports > k_radix), int(2 * ports > k_radix**2)
    leaves = -(-2 * ports // k_radix) if t2 else 0
    for var, val in (
        (m.multi, int(n >= 2)),
        (m.tier2, t2),
        (m.tier3, t3),
        (m.L, leaves),
        (m.S, -(-leaves // 2)),
        (m.A, leaves if t3 else 0),
        (m.W, int(cost_mod.switch_count(n, s.nic_ports, k_radix))),
        (m.X1, n if n >= 2 else 0),
        (m.X2, n if t2 else 0),
        (m.X3, n if t3 else 0),
    ):
        var[p, f].set_value(val)
