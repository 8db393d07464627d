r"""Fleet planning: one procurement (owned or rented server pools) that carries a portfolio of jobs.

Modelling choices, stated honestly
----------------------------------
* Time is cut into slots of ``slot_hours`` (default a week). A job runs in one *mode* m = (server type,
  node count, power cap) chosen from the exact model (planner/model.py) on a node-count ladder of powers of
  two, on the server's first listed fabric. It may pause between slots but never changes size or mode.
* A running job reserves its nodes for whole slots; it needs ceil-free coverage sum_t r_jt * H >= T_m, so the
  last slot may be partly idle (reserved, not drawing training power: energy is the exact T_m x P_m).
* Power per slot counts the facility power of the jobs running in it (idle owned nodes are not counted).
* Switches per pool: none for one node, one while the ports fit one switch, else two-tier leaf/spine counts
  (exact up to two tiers; beyond, the reported plan recounts them with planner/cost.py).

Sets
----
J jobs; P pools (server types); M_j modes of job j (M_jp those on pool p); T slots; W_j slots job j may run in
(release..due, or ..horizon end when lateness is allowed with a penalty).

Variables
---------
z_jm in {0,1}   job j runs in mode m;                   r_jt in {0,1}  job j runs in slot t
u_jpt >= 0      nodes of pool p held by job j in slot t;  N_p in Z>=0  nodes bought (buy) of pool p
R_pt in Z>=0    nodes rented of pool p in slot t (rent);  L_p, S_p in Z>=0 leaf and spine switches of pool p
q_jt >= 0       facility power of job j in slot t;         late_j >= 0 slots job j finishes after its due slot

Constraints (one function each)
-------------------------------
(1) one mode         sum_m z_jm = 1
(2) work             sum_{t in W_j} H r_jt >= sum_m T_jm z_jm
(3) window           r_jt = 0 outside W_j
(4) nodes held       u_jpt >= sum_{m in M_jp} n_m z_jm - n^max_jp (1 - r_jt)        (big-M from the data)
(5) capacity         sum_j u_jpt <= N_p (buy)   or   <= R_pt (rent)
(6) power            q_jt >= sum_m PF_jm z_jm - PF^max_j (1 - r_jt);  sum_j q_jt <= P_env
(7) switches         W_p >= multi_p (N_p <= 1 + N^max multi_p);  when ports_p N_p > radix_p (big_p):
                     L_p >= 2 ports_p N_p / radix_p,  S_p >= L_p / 2,  W_p >= L_p + S_p        (buy)
(8) budget           sum_p (price_p N_p + NIC/cable_p N_p + switch_p W_p) <= B              (buy)
                     sum_{p,t} rent_p H/730 R_pt <= B                                     (rent)
(9) lateness         late_j >= (t - due_j) r_jt  for t > due_j   (only when a penalty is given)
(10) valid cuts      N_p >= sum_{m in M_jp} n_m z_jm  for every job j (buy);  node-hours: |T| H N_p (buy) or
                     sum_t H R_pt (rent) >= sum_{j, m in M_jp} n_m T_jm z_jm       (tighten the LP bound)

Objective
---------
energy: sum_jm E_jm z_jm;  carbon: intensity x energy;  cost: capex x horizon / life + energy x price
(buy) or rent (rent), plus sum_j penalty_j late_j. Symmetry between slots is broken by preferring early
slots (a 1e-6 relative tie-break); HiGHS gets the MIP through planner/solver.py.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import pandas as pd
import pyomo.environ as pyo
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from planner import cost as cost_mod
from planner.data import Catalog, load_catalog
from planner.errors import PlannerInputError, describe_validation_error
from planner.model import Work, evaluate_space, work_from
from planner.solver import SolverOptions, SolverReport, solve_model

FLEET_NODES = (1, 2, 4, 8, 16, 32, 64, 128)


class Job(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    model: str
    samples: float | None = Field(None, gt=0)
    tokens: float | None = Field(None, gt=0)
    epochs: float | None = Field(None, gt=0)
    release_slot: int = Field(0, ge=0, description="first slot the job may run in")
    due_slot: int = Field(ge=0, description="last slot the job may run in (inclusive)")
    penalty_usd_per_slot: float | None = Field(None, ge=0, description="if set, the job may finish late at this price")

    @model_validator(mode="after")
    def _window(self) -> Job:
        if self.due_slot < self.release_slot:
            raise ValueError("due_slot must not be before release_slot")
        return self


class FleetRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    jobs: list[Job] = Field(min_length=1)
    slots: int = Field(ge=1, le=520)
    slot_hours: float = Field(168.0, gt=0)
    site: str = "us-colo"
    objective: Literal["cost", "energy", "carbon"] = "cost"
    purchase: Literal["buy", "rent"] = "buy"
    budget_usd: float | None = Field(None, ge=0)
    power_kw: float | None = Field(None, gt=0, description="facility power per slot (default: the site's envelope)")
    gpus: list[str] | None = None
    servers: list[str] | None = None
    power_caps: list[float] = Field(default_factory=lambda: [0.7, 1.0])
    node_counts: list[int] = Field(default_factory=lambda: list(FLEET_NODES))
    life_years: float = Field(4.0, gt=0)
    solver: SolverOptions = Field(
        default_factory=lambda: SolverOptions(time_limit_s=60.0, mip_rel_gap=1e-4, presolve=True)
    )

    @model_validator(mode="after")
    def _jobs(self) -> FleetRequest:
        ids = [j.id for j in self.jobs]
        if len(set(ids)) != len(ids):
            raise ValueError("job ids must be unique")
        for j in self.jobs:
            if j.release_slot >= self.slots:
                raise ValueError(
                    f"job {j.id}: release_slot {j.release_slot} is beyond the horizon of {self.slots} slots"
                )
        return self


class FleetPlan(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    status: str
    objective: str
    objective_value: float | None
    purchases: list[dict[str, Any]]
    assignments: list[dict[str, Any]]
    schedule: list[dict[str, Any]]
    totals: dict[str, float]
    solver: SolverReport | None
    explanation: str | None = None

    def purchase_frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.purchases)

    def assignment_frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.assignments)

    def schedule_frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.schedule)


def load_fleet_request(path: str) -> FleetRequest:
    try:
        with open(path) as fh:
            data = yaml.safe_load(fh)
    except FileNotFoundError:
        raise PlannerInputError(f"fleet file not found: {path}") from None
    except yaml.YAMLError as exc:
        raise PlannerInputError(f"{path}: not valid YAML: {exc}") from None
    try:
        return FleetRequest.model_validate(data)
    except ValidationError as exc:
        raise PlannerInputError(describe_validation_error(exc, path)) from None


# ------------------------------------------------------------------------------------------------ modes
def job_modes(cat: Catalog, req: FleetRequest) -> pd.DataFrame:
    """Exact-model modes of every job that fit memory and finish within its window (or the horizon)."""
    from planner.optimize import _match_gpus

    servers = [s for s in cat.gpu_servers() if (req.servers is None or s.id in req.servers)]
    if req.gpus is not None:
        allowed = _match_gpus(cat, req.gpus)
        servers = [s for s in servers if s.gpu in allowed]
    if req.purchase == "buy":
        servers = [s for s in servers if s.price_usd is not None]
    else:
        servers = [s for s in servers if s.rent_usd_per_month is not None]
    if not servers:
        raise PlannerInputError("no allowed server can be bought/rented as asked")
    frames = []
    space = pd.DataFrame(
        [
            {"server": s.id, "fabric": s.fabrics[0], "power_cap": c, "nodes": n}
            for s in servers
            for c in req.power_caps
            for n in req.node_counts
        ]
    )
    cap_ok = [
        cat.gpu(cat.server(r.server).gpu or "").min_power_limit_w / cat.gpu(cat.server(r.server).gpu or "").tdp_w
        <= r.power_cap + 1e-9
        for r in space.itertuples()
    ]
    space = space[cap_ok]
    for j in req.jobs:
        wl = cat.workload(j.model)
        samples = work_from(wl, j.samples, j.tokens, j.epochs)
        df = evaluate_space(
            cat, wl, space=space, site=req.site, purchase=req.purchase, work=Work(samples), life_years=req.life_years
        )
        last = req.slots - 1 if j.penalty_usd_per_slot is not None else j.due_slot
        window_h = (min(last, req.slots - 1) - j.release_slot + 1) * req.slot_hours
        df = df[df["feasible"] & (df["time_to_train_h"] <= window_h)].copy()
        df["job"] = j.id
        frames.append(df)
    modes = pd.concat(frames, ignore_index=True)
    for col in ("server", "fabric", "gpu"):
        modes[col] = modes[col].astype(str)
    return modes


# ------------------------------------------------------------------------------------------------ MIP
def build_fleet_model(cat: Catalog, req: FleetRequest, modes: pd.DataFrame) -> pyo.ConcreteModel:
    m = pyo.ConcreteModel(name="fleet")
    site = cat.site(req.site)
    jobs = {j.id: j for j in req.jobs}
    m.J = pyo.Set(initialize=[j.id for j in req.jobs], ordered=True)
    m.T = pyo.RangeSet(0, req.slots - 1)
    pools = sorted(set(modes["server"]))
    m.P = pyo.Set(initialize=pools, ordered=True)
    m.M = pyo.RangeSet(0, len(modes) - 1)
    m.modes = modes
    window = {}
    for j in req.jobs:
        last = req.slots - 1 if j.penalty_usd_per_slot is not None else min(j.due_slot, req.slots - 1)
        window[j.id] = list(range(j.release_slot, last + 1))
    m.JT = pyo.Set(dimen=2, initialize=[(j, t) for j in m.J for t in window[j]])
    job_col = modes["job"].astype(str).to_numpy()
    srv_col = modes["server"].astype(str).to_numpy()
    by_job: dict[str, list[int]] = {j: [] for j in m.J}
    by_jp: dict[tuple[str, str], list[int]] = {}
    for k, (jj, pp) in enumerate(zip(job_col, srv_col, strict=True)):
        by_job[jj].append(k)
        by_jp.setdefault((jj, pp), []).append(k)
    hours = modes["time_to_train_h"].to_numpy(float)
    jp = sorted(by_jp)
    m.JP = pyo.Set(dimen=2, initialize=jp)
    m.JPT = pyo.Set(dimen=3, initialize=[(j, p, t) for (j, p) in jp for t in window[j]])
    H = req.slot_hours
    nodes = modes["nodes"].to_numpy()
    fac_kw = modes["facility_power_kw"].to_numpy(float)

    m.z = pyo.Var(m.M, domain=pyo.Binary)
    m.r = pyo.Var(m.JT, domain=pyo.Binary)
    m.u = pyo.Var(m.JPT, domain=pyo.NonNegativeReals)
    m.q = pyo.Var(m.JT, domain=pyo.NonNegativeReals)
    max_nodes = int(max(req.node_counts)) * len(req.jobs)
    m.N = pyo.Var(m.P, domain=pyo.NonNegativeIntegers, bounds=(0, max_nodes))
    m.R = pyo.Var(m.P, m.T, domain=pyo.NonNegativeIntegers, bounds=(0, max_nodes))
    m.L = pyo.Var(m.P, domain=pyo.NonNegativeIntegers)
    m.S = pyo.Var(m.P, domain=pyo.NonNegativeIntegers)
    m.late = pyo.Var(m.J, domain=pyo.NonNegativeReals)

    m.one_mode = pyo.Constraint(m.J, rule=lambda m, j: sum(m.z[k] for k in by_job[j]) == 1)
    m.work = pyo.Constraint(
        m.J,
        rule=lambda m, j: (
            pyo.quicksum(H * m.r[j, t] for t in window[j]) >= pyo.quicksum(float(hours[k]) * m.z[k] for k in by_job[j])
        ),
    )

    def held(m: pyo.ConcreteModel, j: str, p: str, t: int) -> Any:
        ks = by_jp[(j, p)]
        big = max(int(nodes[k]) for k in ks)
        return m.u[j, p, t] >= pyo.quicksum(int(nodes[k]) * m.z[k] for k in ks) - big * (1 - m.r[j, t])

    m.nodes_held = pyo.Constraint(m.JPT, rule=held)
    jpt_by_pt: dict[tuple[str, int], list[str]] = {}
    for j, p, t in m.JPT:
        jpt_by_pt.setdefault((p, t), []).append(j)
    if req.purchase == "buy":
        m.capacity = pyo.Constraint(
            m.P, m.T, rule=lambda m, p, t: sum(m.u[j, p, t] for j in jpt_by_pt.get((p, t), [])) <= m.N[p]
        )
        for p in pools:
            for t in m.T:
                m.R[p, t].fix(0)
    else:
        m.capacity = pyo.Constraint(
            m.P, m.T, rule=lambda m, p, t: sum(m.u[j, p, t] for j in jpt_by_pt.get((p, t), [])) <= m.R[p, t]
        )
        for p in pools:
            m.N[p].fix(0)
            m.L[p].fix(0)
            m.S[p].fix(0)

    job_max_kw = {j: max(float(fac_kw[k]) for k in by_job[j]) for j in m.J}
    job_kw = {j: pyo.quicksum(float(fac_kw[k]) * m.z[k] for k in by_job[j]) for j in m.J}

    # valid cuts that tighten the LP bound (the big-M links alone let fractional r_jt hide every node):
    # a pool holds at least the nodes of each job placed on it, and enough node-hours for all of them
    jobs_on = {p: [j for (j, pp) in jp if pp == p] for p in pools}
    node_hours = {
        p: pyo.quicksum(int(nodes[k]) * float(hours[k]) * m.z[k] for j in jobs_on[p] for k in by_jp[(j, p)])
        for p in pools
    }
    if req.purchase == "buy":
        m.cover = pyo.Constraint(
            m.JP, rule=lambda m, j, p: m.N[p] >= pyo.quicksum(int(nodes[k]) * m.z[k] for k in by_jp[(j, p)])
        )
        m.node_hours = pyo.Constraint(m.P, rule=lambda m, p: req.slots * H * m.N[p] >= node_hours[p])
    else:
        m.node_hours = pyo.Constraint(m.P, rule=lambda m, p: pyo.quicksum(H * m.R[p, t] for t in m.T) >= node_hours[p])

    def power_of(m: pyo.ConcreteModel, j: str, t: int) -> Any:
        return m.q[j, t] >= job_kw[j] - job_max_kw[j] * (1 - m.r[j, t])

    m.job_power = pyo.Constraint(m.JT, rule=power_of)
    envelope = req.power_kw if req.power_kw is not None else site.power_envelope_kw
    jt_by_t: dict[int, list[str]] = {}
    for j, t in m.JT:
        jt_by_t.setdefault(t, []).append(j)
    m.power = pyo.Constraint(
        m.T, rule=lambda m, t: sum(m.q[j, t] for j in jt_by_t[t]) <= envelope if t in jt_by_t else pyo.Constraint.Skip
    )

    srv = {p: cat.server(p) for p in pools}
    fab = {p: cat.fabric(srv[p].fabrics[0]) for p in pools}
    m.multi = pyo.Var(m.P, domain=pyo.Binary)  # pool has >= 2 nodes: it needs a fabric
    m.big = pyo.Var(m.P, domain=pyo.Binary)  # pool ports exceed one switch: two tiers
    m.W = pyo.Var(m.P, domain=pyo.NonNegativeIntegers)  # switches of the pool
    m.Nmulti = pyo.Var(m.P, domain=pyo.NonNegativeReals)  # = N_p in multi-node pools, else 0
    m.Nbig = pyo.Var(m.P, domain=pyo.NonNegativeReals)  # = N_p in two-tier pools, else 0
    if req.purchase == "buy":
        add_switches(m, pools, {p: srv[p].nic_ports for p in pools}, {p: fab[p].switch_radix for p in pools}, max_nodes)
    else:
        for p in pools:
            for v in (m.multi[p], m.big[p], m.W[p], m.Nmulti[p], m.Nbig[p]):
                v.fix(0)

    def capex_expr(m: pyo.ConcreteModel) -> Any:
        # as planner/cost.py: NICs and node cables only in multi-node pools, leaf-spine cables in two-tier ones
        return sum(
            (srv[p].price_usd or 0.0) * m.N[p]
            + srv[p].nic_ports * (fab[p].nic_price_usd + fab[p].cable_price_usd) * m.Nmulti[p]
            + srv[p].nic_ports * fab[p].cable_price_usd * m.Nbig[p]
            + fab[p].switch_price_usd * m.W[p]
            for p in pools
        )

    def rent_expr(m: pyo.ConcreteModel) -> Any:
        return sum(
            (srv[p].rent_usd_per_month or 0.0) * H / cost_mod.HOURS_PER_MONTH * m.R[p, t] for p in pools for t in m.T
        )

    if req.budget_usd is not None:
        m.budget = pyo.Constraint(expr=(capex_expr(m) if req.purchase == "buy" else rent_expr(m)) <= req.budget_usd)
    for j in req.jobs:
        if j.penalty_usd_per_slot is not None:
            for t in window[j.id]:
                if t > j.due_slot:
                    setattr(
                        m,
                        f"late_{_safe(j.id)}_{t}",
                        pyo.Constraint(expr=m.late[j.id] >= (t - j.due_slot) * m.r[j.id, t]),
                    )

    e_kwh = modes["facility_energy_kwh"].to_numpy(float)
    energy = pyo.quicksum(float(e_kwh[k]) * m.z[k] for k in m.M)
    penalty = sum((jobs[j].penalty_usd_per_slot or 0.0) * m.late[j] for j in m.J)
    if req.objective == "energy":
        obj = energy
    elif req.objective == "carbon":
        obj = site.carbon_kg_per_kwh * energy
    else:
        horizon_h = req.slots * H
        money = (
            (
                capex_expr(m) * horizon_h / (req.life_years * cost_mod.HOURS_PER_YEAR)
                + site.electricity_usd_per_kwh * energy
            )
            if req.purchase == "buy"
            else rent_expr(m)
        )
        obj = money + penalty
    if req.objective != "cost":
        obj = obj + penalty
    # tie-break towards early slots (tiny, relative to a typical objective)
    m.objective = pyo.Objective(expr=obj + 1e-6 * sum((t + 1) * m.r[j, t] for (j, t) in m.JT), sense=pyo.minimize)
    m.window = window
    m.by_job = by_job
    return m


def add_switches(
    m: pyo.ConcreteModel, pools: list[str], ports: dict[str, int], radix: dict[str, int], max_nodes: int
) -> None:
    """(7) switches of each bought pool, exact for one- and two-tier networks (planner/cost.py::switch_count):
    none for one node; one while the ports fit one switch; else ceil(2P/k) leaves + ceil(leaves/2) spines."""
    big_m = 4 * max_nodes * max(ports.values())
    m.sw_multi = pyo.Constraint(m.P, rule=lambda m, p: m.N[p] <= 1 + max_nodes * m.multi[p])
    m.sw_big = pyo.Constraint(m.P, rule=lambda m, p: ports[p] * m.N[p] <= radix[p] + big_m * m.big[p])
    m.sw_one = pyo.Constraint(m.P, rule=lambda m, p: m.W[p] >= m.multi[p])
    m.sw_leaves = pyo.Constraint(
        m.P, rule=lambda m, p: m.L[p] * radix[p] >= 2 * ports[p] * m.N[p] - big_m * radix[p] * (1 - m.big[p])
    )
    m.sw_spines = pyo.Constraint(m.P, rule=lambda m, p: 2 * m.S[p] >= m.L[p])
    m.sw_total = pyo.Constraint(m.P, rule=lambda m, p: m.W[p] >= m.L[p] + m.S[p])
    m.sw_nmulti = pyo.Constraint(m.P, rule=lambda m, p: m.Nmulti[p] >= m.N[p] - max_nodes * (1 - m.multi[p]))
    m.sw_nbig = pyo.Constraint(m.P, rule=lambda m, p: m.Nbig[p] >= m.N[p] - max_nodes * (1 - m.big[p]))


def _safe(s: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in s)


def fleet(request: FleetRequest | dict[str, Any], catalog: Catalog | None = None, explain: bool = True) -> FleetPlan:
    """Plan the fleet; when infeasible (and ``explain``), say which single relaxation would make it feasible."""
    req = request if isinstance(request, FleetRequest) else FleetRequest.model_validate(request)
    cat = catalog or load_catalog()
    cat.site(req.site)
    for j in req.jobs:
        cat.workload(j.model)
    modes = job_modes(cat, req)
    missing = [j.id for j in req.jobs if not (modes["job"] == j.id).any()] if len(modes) else [j.id for j in req.jobs]
    if missing:
        return _infeasible(
            req,
            f"job(s) {', '.join(missing)} cannot finish inside their windows on any allowed "
            f"server (even with {max(req.node_counts)} nodes): move their due slot later, allow "
            "more nodes or faster GPUs",
        )
    m = build_fleet_model(cat, req, modes)
    solved = solve_model(m, req.solver)
    rep = solved.report
    if rep.status.value == "no_solution":
        msg = (
            f"HiGHS found no fleet within the time limit ({req.solver.time_limit_s:g} s): raise --time-limit or the gap"
        )
        return _infeasible(req, msg, rep, status="no_solution")
    if not rep.status.has_solution:
        return _infeasible(req, _explain(cat, req) if explain else "infeasible", rep)
    return _extract(cat, req, m, solved.values["z"], solved.keyed["r"], rep)


def _infeasible(req: FleetRequest, msg: str, rep: SolverReport | None = None, status: str = "infeasible") -> FleetPlan:
    """A result without a fleet: infeasible (with the explanation) or no incumbent within the time limit."""
    return FleetPlan(
        status=status,
        objective=req.objective,
        objective_value=None,
        purchases=[],
        assignments=[],
        schedule=[],
        totals={},
        solver=rep,
        explanation=msg,
    )


def _explain(cat: Catalog, req: FleetRequest) -> str:
    """Smallest single relaxations that make the fleet feasible, computed by re-solving."""
    tips = []
    if req.budget_usd is not None:
        r = fleet(req.model_copy(update={"budget_usd": None, "objective": "cost"}), cat, explain=False)
        if r.objective_value is not None:
            need = r.totals.get("capex_usd" if req.purchase == "buy" else "rent_usd", math.nan)
            tips.append(f"a budget of at least ${need:,.0f} (you gave ${req.budget_usd:,.0f})")
    env = req.power_kw if req.power_kw is not None else cat.site(req.site).power_envelope_kw
    r2 = fleet(req.model_copy(update={"power_kw": 1e12}), cat, explain=False)
    if r2.objective_value is not None:
        peak = max((s["facility_power_kw"] for s in r2.schedule), default=0.0)
        tips.append(f"{peak - env:,.0f} kW more power (peak {peak:,.0f} kW against {env:,.0f} kW)")
    late = req.model_copy(update={"jobs": [j.model_copy(update={"due_slot": req.slots - 1}) for j in req.jobs]})
    if late != req:
        r3 = fleet(late, cat, explain=False)
        if r3.objective_value is not None:
            tips.append(f"due slots moved to the horizon end (slot {req.slots - 1})")
    return (
        "No fleet meets every job's due slot, the budget and the power envelope. It needs "
        + (", or ".join(tips) if tips else "more than one requirement relaxed")
        + "."
    )


def _extract(
    cat: Catalog, req: FleetRequest, m: pyo.ConcreteModel, z: np.ndarray, r: dict[Any, float], rep: SolverReport
) -> FleetPlan:
    modes = m.modes
    chosen = {j: next(k for k in m.by_job[j] if z[k] > 0.5) for j in m.J}
    site = cat.site(req.site)
    assignments, schedule = [], []
    for j in m.J:
        k = chosen[j]
        row = modes.loc[k]
        slots = [t for t in m.window[j] if r[(j, t)] > 0.5]
        job = next(x for x in req.jobs if x.id == j)
        assignments.append(
            {
                "job": j,
                "model": job.model,
                "server": row["server"],
                "gpu": row["gpu"],
                "nodes": int(row["nodes"]),
                "fabric": row["fabric"],
                "power_cap": float(row["power_cap"]),
                "layout": row["layout"],
                "time_to_train_h": float(row["time_to_train_h"]),
                "slots": slots,
                "first_slot": min(slots),
                "last_slot": max(slots),
                "late_slots": max(0, max(slots) - job.due_slot),
                "facility_energy_kwh": float(row["facility_energy_kwh"]),
                "facility_power_kw": float(row["facility_power_kw"]),
            }
        )
    pools = sorted({a["server"] for a in assignments})
    for t in range(req.slots):
        running = [a for a in assignments if t in a["slots"]]
        for p in pools:
            schedule.append(
                {
                    "slot": t,
                    "server": p,
                    "nodes": sum(a["nodes"] for a in running if a["server"] == p),
                    "jobs": ",".join(a["job"] for a in running if a["server"] == p),
                    "facility_power_kw": sum(a["facility_power_kw"] for a in running if a["server"] == p),
                }
            )
    sched = pd.DataFrame(schedule)
    purchases = []
    capex = rent = 0.0
    for p in pools:
        s = cat.server(p)
        f = cat.fabric(s.fabrics[0])
        peak = int(sched.loc[sched["server"] == p, "nodes"].max())
        sw = int(cost_mod.switch_count(peak, s.nic_ports, f.switch_radix))
        entry = {"server": p, "gpu": s.gpu, "fabric": f.id, "nodes": peak, "switches": sw}
        if req.purchase == "buy":
            c = float(
                cost_mod.capex_usd(
                    peak,
                    s.price_usd or 0.0,
                    s.nic_ports,
                    f.nic_price_usd,
                    sw,
                    f.switch_price_usd,
                    cost_mod.cable_count(peak, s.nic_ports, f.switch_radix),
                    f.cable_price_usd,
                )
            )
            entry["capex_usd"] = c
            capex += c
        else:
            node_slots = int(sched.loc[sched["server"] == p, "nodes"].sum())
            c = (s.rent_usd_per_month or 0.0) * req.slot_hours / cost_mod.HOURS_PER_MONTH * node_slots
            entry["rent_usd"] = c
            rent += c
        purchases.append(entry)
    energy = sum(a["facility_energy_kwh"] for a in assignments)
    horizon_h = req.slots * req.slot_hours
    penalty = sum(
        (next(x for x in req.jobs if x.id == a["job"]).penalty_usd_per_slot or 0.0) * a["late_slots"]
        for a in assignments
    )
    money = (
        capex * horizon_h / (req.life_years * cost_mod.HOURS_PER_YEAR) + energy * site.electricity_usd_per_kwh
        if req.purchase == "buy"
        else rent
    )
    totals = {
        "capex_usd": capex,
        "rent_usd": rent,
        "cost_usd": money + penalty,
        "penalty_usd": penalty,
        "facility_energy_kwh": energy,
        "carbon_kg": energy * site.carbon_kg_per_kwh,
        "peak_power_kw": float(sched.groupby("slot")["facility_power_kw"].sum().max()),
    }
    value = {"cost": totals["cost_usd"], "energy": energy + penalty, "carbon": totals["carbon_kg"] + penalty}[
        req.objective
    ]
    status = "optimal" if rep.status.value == "optimal" else "time_limit"
    return FleetPlan(
        status=status,
        objective=req.objective,
        objective_value=value,
        purchases=purchases,
        assignments=assignments,
        schedule=schedule,
        totals=totals,
        solver=rep,
    )
