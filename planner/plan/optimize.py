"""Capacity planning: `solve`, `pareto` and infeasibility explanations over the MIP of planner/plan/formulation.py.

Pipeline: request (validated) -> every configuration (allowed server, fabric, cap, site, buy|rent) at
**every integer node count** 1..N_max (+ the binding step) evaluated by the exact model in chunks (physics
cached) -> each chunk priced and reduced exactly to the rows that can answer one of the request's questions
(`_reduce_chunk`; a bought plan only where its run ends within its servers' life, `in_service`) -> MIP
(Pyomo) -> HiGHS -> chosen plan re-evaluated with `planner.evaluate` and checked against every constraint by
`check_plan` (a violating plan is cut off and the MIP re-solved; it is never returned) -> alternatives
(checked by the same function), binding constraints, solver report. When nothing fits, each requirement's
exact smallest relaxation, and when no single one suffices the smallest pairs.
The exactness argument is stated in planner/plan/formulation.py.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Iterator, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from planner.checks.before_solve import check_request
from planner.checks.catalog import catalog_for
from planner.checks.hardware import allowed_servers
from planner.checks.owned import in_service, owned_fabric
from planner.checks.request import Objective, PlanRequest
from planner.checks.search import BINDING_STEP, MAX_CONFIGS, node_step, options_per_count
from planner.data import Catalog, Configuration, Estimate, load_catalog
from planner.errors import PlannerInputError
from planner.formatting import sig4, switches_text
from planner.physics import (
    Work,
    check_catalog,
    compute,
    cost,
    estimate_from_row,
    evaluate,
    evaluate_space,
    price_space,
    validated,
    work_from,
)
from planner.physics import power as power_mod
from planner.physics import store as physics_store
from planner.plan.formulation import OBJECTIVE_COLUMNS, REL_TOL, Limits, build_model
from planner.solver import SolverOptions, SolverReport, SolverStatus, solve_model

OBJECTIVE_UNITS = {"energy": "kWh", "cost": "USD", "carbon": "kgCO2e", "time": "h"}  # what each objective sums
CHUNK_CONFIGS = 250_000  # configurations per evaluate_space call (bounds peak memory)
PHYSICS_CACHE_ROWS = 4_000_000  # cached physics rows, all requests together
LIMIT_NAMES = ("deadline", "budget", "power", "nodes", "rack")
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


def relaxation_horizon(max_nodes: int) -> int:
    """Largest node count considered when explaining an infeasible request (nodes relaxations)."""
    return min(100_000, max(4 * max_nodes, 64))


class Plan(BaseModel):
    """One capacity plan: ``nodes`` x ``server`` (``gpus`` x ``gpu``) on ``fabric`` with ``switches``, every GPU at
    ``power_cap`` (fraction of TDP; ``power_cap_w`` in watts), bought or rented (``purchase``) at ``site``, running
    ``layout``. Units are in the names: ``time_to_train_h`` / ``_days``, ``power_kw`` (IT) and
    ``facility_power_kw`` (x PUE), ``energy_kwh`` / ``facility_energy_kwh``, ``cost_usd`` (the run's cost: the
    hardware's share or the rent, plus energy), ``capex_usd``, ``upfront_usd`` (spent before it starts),
    ``carbon_kg`` (kgCO2e), ``rack_units`` (U), ``throughput_samples_per_s``; ``mfu`` is a fraction. ``estimate`` is
    the exact model's full ``Estimate`` (step-time breakdown, memory, precision it computes in)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    server: str
    gpu: str
    nodes: int
    gpus: int
    fabric: str
    switches: int
    power_cap: float
    power_cap_w: float
    site: str
    purchase: str
    layout: str
    global_batch: int
    time_to_train_h: float
    time_to_train_days: float
    power_kw: float
    facility_power_kw: float
    energy_kwh: float
    facility_energy_kwh: float
    cost_usd: float
    capex_usd: float
    upfront_usd: float
    carbon_kg: float
    rack_units: int
    throughput_samples_per_s: float
    mfu: float
    bottleneck: str
    estimate: Estimate
    owned_nodes: int = Field(0, description="owned nodes the plan runs on (the others of its nodes are bought)")
    owned_unused_nodes: int = Field(0, description="owned nodes the plan does not run on (retired or left off)")
    owned_unused_idle_kw: float = Field(
        0.0, description="facility power those would draw idle if left powered on, kW (not in the plan's energy)"
    )


class Relaxation(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    requirement: str
    given: float
    needed: float
    unit: str
    message: str


class RelaxationPair(BaseModel):
    """Two requirements relaxed together (a point of the Pareto front of the two thresholds)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    relaxations: list[Relaxation]
    message: str


class Explanation(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    message: str
    relaxations: list[Relaxation]
    pairs: list[RelaxationPair] = Field(default_factory=list)


class PlanResult(BaseModel):
    """What ``solve`` returns: ``status`` ('optimal', 'time_limit' or 'infeasible'), the ``plan`` (None when
    infeasible) and ``alternatives``, the ``objective`` and its value (in OBJECTIVE_UNITS), the ``binding``
    limits, HiGHS's report (``solver``), and for an infeasible request the ``explanation``: each requirement's
    smallest relaxation (``relaxations``: given, needed, unit) and pairs of them. ``summary()`` is text,
    ``to_frame()`` a table; frozen, JSON round-trips (``model_dump_json``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    request: PlanRequest
    status: Literal["optimal", "time_limit", "infeasible"]
    plan: Plan | None
    objective: str
    objective_value: float | None
    binding: list[str] = Field(description="limits whose relaxation by binding_step improves the objective")
    binding_step: float = BINDING_STEP
    solver: SolverReport | None
    alternatives: list[Plan]
    explanation: Explanation | None
    timings_s: dict[str, float] = Field(default_factory=dict)

    def to_frame(self) -> pd.DataFrame:
        """The plan and its alternatives, one row each (units in the column names; ``role`` is 'plan' or
        'alternative'). An infeasible result gives no rows, with the same columns."""
        rows = []
        for role, p in [("plan", self.plan)] + [("alternative", a) for a in self.alternatives]:
            if p is not None:
                d = p.model_dump(exclude={"estimate"})
                d["role"] = role
                rows.append(d)
        columns = [k for k in Plan.model_fields if k != "estimate"] + ["role"]
        return pd.DataFrame(rows, columns=columns)

    def summary(self) -> str:
        """What was decided, in a few lines: servers x count, GPU, fabric, power cap, layout, precision, time,
        facility power and energy, cost (run and up-front), carbon, the objective and the binding limits; or,
        when infeasible, the smallest relaxation of each requirement."""
        if self.plan is None:
            return f"No plan: {self.explanation.message if self.explanation else self.status}"
        p = self.plan
        gap = f", gap {self.solver.gap:.2%}" if self.solver and self.solver.gap else ""
        value = self.objective_value or 0.0
        # dollars whole, as the cost line above writes them (4 figures read 2,454,000 beside $2,453,791)
        objective_text = f"{value:,.0f}" if self.objective == "cost" and abs(value) >= 1 else sig4(value)
        lines = [
            f"{p.nodes} x {p.server} ({p.gpus} x {p.gpu}), {p.fabric} ({switches_text(p.switches)}), "
            f"cap {p.power_cap:.0%} ({p.power_cap_w:.0f} W), {purchase_text(p)}",
            f"  layout {p.layout}, batch {p.global_batch:,}; bottleneck: {p.bottleneck}",
            f"  precision {p.estimate.precision}",  # the one the plan computes in (fp4 falls back to fp8 on a GPU)
            f"  time {sig4(p.time_to_train_days)} days; facility power {sig4(p.facility_power_kw)} kW; "
            f"facility energy {sig4(p.facility_energy_kwh)} kWh; {p.rack_units:,} rack units",
            f"  cost {usd(p.cost_usd)} (up-front {usd(p.upfront_usd)}); carbon {sig4(p.carbon_kg)} kg",
            f"  objective {self.objective} = {objective_text} {OBJECTIVE_UNITS[self.objective]} ({self.status}{gap})",
            f"  binding (relaxing by {self.binding_step:.0%} improves the objective): "
            f"{', '.join(self.binding) or 'none'}",
        ]
        if self.request.owned:
            lines.append("  " + owned_summary(p))
        return "\n".join(lines)


def purchase_text(p: Plan) -> str:
    """What the plan acquires, at which site: 'rent at us-colo', 'buy at us-colo', and with owned servers what it
    adds to them ('buy 28 new nodes (+ 64 owned) at us-colo', 'nothing to buy: runs on 5 owned nodes at
    us-colo') -- not 'buy' for a plan that buys nothing."""
    if p.purchase != "buy" or not p.owned_nodes:
        return f"{p.purchase} at {p.site}"
    new = p.nodes - p.owned_nodes
    if new == 0:
        return f"nothing to buy: runs on {p.owned_nodes:,} owned node{'' if p.owned_nodes == 1 else 's'} at {p.site}"
    return f"buy {new:,} new node{'' if new == 1 else 's'} (+ {p.owned_nodes:,} owned) at {p.site}"


def owned_summary(p: Plan) -> str:
    """One line on the owned servers: how many the plan runs on, how many it leaves unused and their idle draw."""
    text = f"owned servers: the plan runs on {p.owned_nodes:,} owned and {p.nodes - p.owned_nodes:,} new nodes"
    if p.purchase == "rent":
        text = f"owned servers: the plan rents all {p.nodes:,} nodes and runs on no owned one"
    if p.owned_unused_nodes:
        text += (
            f"; {p.owned_unused_nodes:,} owned nodes unused (retired or off for the run: left on idle they would "
            f"draw {p.owned_unused_idle_kw:,.4g} kW, not counted in the plan)"
        )
    return text


def usd(amount: float, up: bool = False) -> str:
    """Dollars: whole dollars, or with cents below $1 (rounded up when ``up``: a stated minimum must suffice)."""
    if abs(amount) < 1:
        v = math.ceil(amount * 100 - 1e-9) / 100 if up else amount
        return f"${v:,.2f}"
    return f"${math.ceil(amount - 1e-9 * abs(amount)) if up else amount:,.0f}"


def ceil_sig(x: float, digits: int = 4) -> float:
    """x rounded up to `digits` significant figures (a stated minimum must suffice when typed back in)."""
    if x <= 0 or not math.isfinite(x):
        return x
    q = 10.0 ** (math.floor(math.log10(x)) - digits + 1)
    return math.ceil(x / q * (1 - 1e-12)) * q


# ----------------------------------------------------------------------------------------------- candidates


def purchases_of(req: PlanRequest) -> tuple[str, ...]:
    return ("buy", "rent") if req.purchase == "either" else (req.purchase,)


def samples_of(catalog: Catalog, req: PlanRequest) -> float | None:
    return work_from(catalog.workload(req.model), req.samples, req.tokens, req.epochs)


# Physics (times, IT power, switches) of every configuration, cached per physical fingerprint of the catalog and
# per chunk of node counts: scenarios that change only prices, sites, limits or objectives re-price cached rows.
# Also stored on disk (planner/physics/store.py), so that a fresh process re-prices what an earlier one computed.
_PHYSICS: dict[tuple[Any, ...], pd.DataFrame] = {}
PHYSICS_COLUMNS = [
    "server",
    "fabric",
    "gpu",
    "power_cap",
    "nodes",
    "gpus",
    "global_batch",
    "time_to_train_h",
    "power_kw",
    "switches",
    "fits_memory",
    "valid_layout",
]
_PRICE_FIELDS = {
    "price_usd",
    "rent_usd_per_month",
    "price_source",
    "rent_usd_per_gpu_hour",
    "nic_price_usd",
    "switch_price_usd",
    "cable_price_usd",
    "source",
}


def physics_fingerprint(catalog: Catalog) -> str:
    """A hash of everything in the catalog that changes times or IT power (not prices or sites)."""
    cached = _FINGERPRINTS.get(id(catalog))
    if cached is not None and cached[0] is catalog:
        return cached[1]
    import hashlib
    import json

    parts = {
        name: {k: v.model_dump(exclude=_PRICE_FIELDS) for k, v in getattr(catalog, name).items()}
        for name in ("gpus", "servers", "fabrics", "power_curves", "frameworks", "workloads")
    }
    parts["calibration"] = catalog.calibration
    fp = hashlib.sha1(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()
    _FINGERPRINTS[id(catalog)] = (catalog, fp)
    while len(_FINGERPRINTS) > 64:
        _FINGERPRINTS.pop(next(iter(_FINGERPRINTS)))
    return fp


_FINGERPRINTS: dict[int, tuple[Catalog, str]] = {}


def _physics_key(catalog: Catalog, req: PlanRequest, servers: Sequence[str]) -> tuple[Any, ...]:
    return (
        physics_fingerprint(catalog),
        req.model,
        samples_of(catalog, req),
        req.global_batch,
        req.precision,
        tuple(servers),
        tuple(req.fabrics or ()),
        tuple(req.power_caps),
    )


def physics_chunks(
    catalog: Catalog, req: PlanRequest, lo: int, hi: int, timings: dict[str, float] | None = None
) -> Iterator[pd.DataFrame]:
    """The physics of every allowed configuration at every node count lo..hi that fits memory with a valid
    layout, in chunks of consecutive counts; rows sorted by (server, fabric, cap, nodes)."""
    if hi < lo:
        return
    servers = allowed_servers(catalog, req)
    base = _physics_key(catalog, req, servers)
    per = options_per_count(catalog, req, servers)
    if per * (hi - lo + 1) > MAX_CONFIGS:
        raise PlannerInputError(
            f"an exact search over every node count {lo}..{hi} would evaluate {per * (hi - lo + 1):,} "
            f"configurations (limit {MAX_CONFIGS:,}): lower --max-nodes, or restrict --gpus, --servers, "
            "--fabrics or --power-caps"
        )
    step = max(1, CHUNK_CONFIGS // per)
    work = Work(samples_of(catalog, req), req.global_batch, req.precision)
    for a in range(lo, hi + 1, step):
        b = min(hi, a + step - 1)
        key = (*base, a, b)
        df = _PHYSICS.pop(key, None)  # re-inserted below: most recently used last
        if df is None:
            df = physics_store.load(key)  # what an earlier process computed (planner/physics/store.py)
        if df is None:
            t0 = time.perf_counter()
            full = evaluate_space(
                catalog,
                req.model,
                servers=servers,
                fabrics=list(req.fabrics) if req.fabrics else None,
                caps=req.power_caps,
                nodes=range(a, b + 1),
                site=req.sites[0],
                work=work,
            )
            if len(full):
                keep = full["fits_memory"].to_numpy(dtype=bool) & full["valid_layout"].to_numpy(dtype=bool)
                df = full.loc[keep, PHYSICS_COLUMNS].reset_index(drop=True)
                df = _sorted_by_option(df)
            else:
                df = pd.DataFrame(columns=PHYSICS_COLUMNS)
            if timings is not None:
                timings["evaluate_s"] = timings.get("evaluate_s", 0.0) + time.perf_counter() - t0
                timings["configurations"] = timings.get("configurations", 0.0) + len(full)
            physics_store.save(key, df)
        _PHYSICS[key] = df
        total = sum(len(v) for v in _PHYSICS.values())
        while total > PHYSICS_CACHE_ROWS and len(_PHYSICS) > 1:
            total -= len(_PHYSICS.pop(next(iter(_PHYSICS))))
        yield df


def _sorted_by_option(df: pd.DataFrame) -> pd.DataFrame:
    """Rows of one (server, fabric, cap) contiguous, nodes ascending (evaluate_space already returns them so;
    sorted here only if not)."""
    s = np.asarray(df["server"].cat.codes, dtype=np.int64)
    f = np.asarray(df["fabric"].cat.codes, dtype=np.int64)
    c = df["power_cap"].to_numpy(dtype=float)
    n = df["nodes"].to_numpy(dtype=np.int64)
    order = np.lexsort((n, c, f, s))
    if np.array_equal(order, np.arange(len(df))):
        return df
    return df.iloc[order].reset_index(drop=True)


def price_chunk(catalog: Catalog, req: PlanRequest, phys: pd.DataFrame) -> pd.DataFrame:
    """Candidate plans from physics rows: priced for every allowed site and purchase mode, available ones only,
    with rack units and the up-front spend. Rows of one hardware option (server, fabric, cap, site, purchase)
    are contiguous, nodes ascending."""
    frames, sites, buys = [], [], []
    purchases = purchases_of(req)
    for i, site in enumerate(req.sites):
        for j, purchase in enumerate(purchases):
            if not len(phys):
                continue
            df = price_space(catalog, phys, site, purchase, req.life_years)
            keep = df["feasible"].to_numpy(dtype=bool, copy=True)
            if purchase == "buy":
                keep &= in_service(0.0, df["time_to_train_h"].to_numpy(dtype=float), req.life_years)
            df = df[keep]
            frames.append(df.drop(columns=["site", "purchase"]))
            sites.append(np.full(len(df), i))
            buys.append(np.full(len(df), j))
    if not frames:
        return pd.DataFrame()
    cand = frames[0].reset_index(drop=True) if len(frames) == 1 else pd.concat(frames, ignore_index=True)
    cand["site"] = pd.Categorical.from_codes(np.concatenate(sites), categories=list(req.sites))
    purchase_codes = np.concatenate(buys)
    cand["purchase"] = pd.Categorical.from_codes(purchase_codes, categories=list(purchases))
    # from the codes: a categorical of string categories turned into an object array costs ~30 ms per 100k rows
    is_buy = purchase_codes == (purchases.index("buy") if "buy" in purchases else -1)
    server_cat = cand["server"].cat
    rack = np.asarray([catalog.server(str(s)).rack_units for s in server_cat.categories], dtype=np.int64)
    cand["rack_units"] = cand["nodes"].to_numpy(dtype=np.int64) * rack[np.asarray(server_cat.codes)]
    if req.owned:
        buy = is_buy
        credit = np.zeros(len(cand))
        for (server, fabric), idx in cand[buy].groupby(["server", "fabric"], observed=True).indices.items():
            rows = np.flatnonzero(buy)[idx]
            credit[rows] = owned_credit_usd(
                catalog,
                req,
                str(server),
                str(fabric),
                cand["nodes"].to_numpy()[rows],
                cand["time_to_train_h"].to_numpy(dtype=float)[rows],
            )
        cand["capex_usd"] = cand["capex_usd"].to_numpy() - credit
        cand["cost_usd"] = cand["cost_usd"].to_numpy() - cost.amortized_usd(
            credit, cand["time_to_train_h"].to_numpy(dtype=float), req.life_years
        )
    cand["upfront_usd"] = np.where(is_buy, cand["capex_usd"], cand["cost_usd"])
    return cand


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
    adds. A plan on any other fabric is another cluster (as in planner/fleet/fleet.py): it uses no owned node and
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


# ------------------------------------------------------------------------------------------------ limits
def limits_for(catalog: Catalog, req: PlanRequest) -> Limits:
    power = req.power_kw if req.power_kw is not None else max(catalog.site(s).power_envelope_kw for s in req.sites)
    return Limits(
        deadline_h=None if req.deadline_days is None else req.deadline_days * 24.0,
        budget_usd=req.budget_usd,
        budget_kind=req.budget_kind,
        power_kw=power,
        max_nodes=req.max_nodes,
        max_rack_units=req.max_rack_units,
    )


def limit_columns(lim: Limits) -> dict[str, str]:
    """The candidate column each limit bounds."""
    return {
        "deadline": "time_to_train_h",
        "budget": lim.budget_column(),
        "power": "facility_power_kw",
        "nodes": "nodes",
        "rack": "rack_units",
    }


def _limit_values(cand: pd.DataFrame, lim: Limits, req: PlanRequest, cat: Catalog) -> dict[str, Any]:
    """Right-hand side of each limit per candidate (None = not limited). The power limit is the request's
    envelope, or each candidate's site envelope when the request sets none."""
    if req.power_kw is not None or not len(cand):
        power: Any = lim.power_kw
    else:
        site = cand["site"].cat
        env = np.asarray([cat.site(str(s)).power_envelope_kw for s in site.categories], dtype=float)
        power = env[np.asarray(site.codes)]
    return {
        "deadline": lim.deadline_h,
        "budget": lim.budget_usd,
        "power": power,
        "nodes": lim.max_nodes,
        "rack": lim.max_rack_units,
    }


def within(value: Any, bound: Any, name: str, relaxed: bool = False) -> Any:
    """value <= bound for limit `name` (relaxed: by the binding step). Integer limits are exact; the others
    allow a relative 1e-9 for rounding. The one definition of meeting a limit, for tables and plans."""
    if name in ("nodes", "rack"):
        return value <= bound + (node_step(int(bound)) if relaxed else 0)
    return value <= bound * ((1 + BINDING_STEP) if relaxed else 1.0) * (1 + REL_TOL)


class _Masks:
    """Per-candidate: does it meet each limit (ok), each limit relaxed by the binding step (relaxed)?"""

    def __init__(self, cand: pd.DataFrame, lim: Limits, req: PlanRequest, cat: Catalog) -> None:
        cols = limit_columns(lim)
        rhs = _limit_values(cand, lim, req, cat)
        n = len(cand)
        self.given = [k for k in LIMIT_NAMES if rhs[k] is not None]
        self.values = {k: cand[cols[k]].to_numpy(dtype=float) for k in LIMIT_NAMES}
        self.ok = {k: np.ones(n, dtype=bool) for k in LIMIT_NAMES}
        self.relaxed = {k: np.ones(n, dtype=bool) for k in LIMIT_NAMES}
        for k in self.given:
            self.ok[k] = np.asarray(within(self.values[k], rhs[k], k))
            self.relaxed[k] = np.asarray(within(self.values[k], rhs[k], k, relaxed=True))
        self.all = np.logical_and.reduce([self.ok[k] for k in LIMIT_NAMES])

    def all_but(self, *skip: str) -> np.ndarray:
        return np.logical_and.reduce([self.ok[k] for k in LIMIT_NAMES if k not in skip])


def _option_groups(cand: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(group of each row, first row of each group) for contiguous runs of one hardware option."""
    n = len(cand)
    change = np.zeros(n, dtype=bool)
    if n:
        change[0] = True
    for col in HARDWARE_KEY:
        s = cand[col]
        v = np.asarray(s.cat.codes) if isinstance(s.dtype, pd.CategoricalDtype) else s.to_numpy()
        change[1:] |= v[1:] != v[:-1]
    return np.cumsum(change) - 1, np.flatnonzero(change)


def _group_argmin(v: np.ndarray, mask: np.ndarray, gid: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per group, the first row (fewest nodes) among those in `mask` with the least v."""
    mask = mask & np.isfinite(v)
    if not mask.any():
        return np.zeros(0, dtype=np.int64)
    w = np.where(mask, v, np.inf)
    gmin = np.minimum.reduceat(w, starts)
    idx = np.flatnonzero(mask & (w == gmin[gid]))
    first = np.ones(len(idx), dtype=bool)
    first[1:] = gid[idx[1:]] != gid[idx[:-1]]
    return idx[first]


def _frontier(a: np.ndarray, b: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Rows in `mask` not dominated in (a, b) (both minimised), one per point, a ascending."""
    idx = np.flatnonzero(mask & np.isfinite(a) & np.isfinite(b))
    if not idx.size:
        return idx
    idx = idx[np.lexsort((b[idx], a[idx]))]
    bb = b[idx]
    prev = np.minimum.accumulate(bb)
    keep = np.ones(len(idx), dtype=bool)
    keep[1:] = bb[1:] < prev[:-1]
    return idx[keep]


def _scan(
    cat: Catalog,
    req: PlanRequest,
    lo: int,
    hi: int,
    reducer: Any,
    timings: dict[str, float],
    stop_when_found: bool = False,
) -> tuple[pd.DataFrame, int]:
    """Candidates at every node count lo..hi, each chunk reduced to the rows `reducer(chunk)` selects (an exact
    reduction: the union answers the same questions as the whole table). Returns (kept rows, rows priced)."""
    parts: list[pd.DataFrame] = []
    priced = 0
    for phys in physics_chunks(cat, req, lo, hi, timings):
        t0 = time.perf_counter()
        cand = price_chunk(cat, req, phys)
        priced += len(cand)
        if len(cand):
            keep = reducer(cand)
            if len(keep):
                parts.append(cand.iloc[np.unique(keep)])
        timings["price_reduce_s"] = timings.get("price_reduce_s", 0.0) + time.perf_counter() - t0
        if stop_when_found and parts:
            break
    if not parts:
        return pd.DataFrame(), priced
    kept = parts[0] if len(parts) == 1 else pd.concat(parts)
    return kept.reset_index(drop=True), priced


def _solve_reducer(cat: Catalog, req: PlanRequest, lim: Limits, column: str) -> Any:
    """Per hardware option: the best plan under all limits; under all limits with each one relaxed by the
    binding step (binding); and the least value of each limit's column under all the others (relaxations)."""

    def reduce(cand: pd.DataFrame) -> np.ndarray:
        gid, starts = _option_groups(cand)
        m = _Masks(cand, lim, req, cat)
        obj = cand[column].to_numpy(dtype=float)
        picks = [_group_argmin(obj, m.all, gid, starts)]
        for k in m.given:
            others = m.all_but(k)
            picks.append(_group_argmin(obj, others & m.relaxed[k], gid, starts))
            picks.append(_group_argmin(m.values[k], others, gid, starts))
        return np.concatenate(picks)

    return reduce


# ------------------------------------------------------------------------------------------------- solving
HARDWARE_KEY = ("server", "fabric", "power_cap", "site", "purchase")


def reduce_pool(
    cand: pd.DataFrame, column: str, epsilon: Sequence[tuple[str, float]] = (), exclude: Sequence[int] = ()
) -> np.ndarray:
    """Exact presolve for the single-plan MIP: positions of the candidates that can be optimal.

    Every constraint involves only the chosen plan, so a candidate that breaks one on its own can never
    be chosen (the caller passes candidates that meet every limit; the epsilon bounds and exclusions are
    applied here); among the remaining candidates of one hardware option (server, fabric, cap, site,
    purchase) only the lowest objective can be optimal. What is left is at most one candidate per hardware
    option."""
    ok = np.ones(len(cand), dtype=bool)
    for col, bound in epsilon:
        ok &= cand[col].to_numpy(dtype=float) <= bound
    if len(exclude):
        ok[np.asarray(exclude, dtype=int)] = False
    idx = np.flatnonzero(ok)
    if idx.size == 0:
        return idx
    sub = cand.iloc[idx]
    order = np.lexsort((sub["nodes"].to_numpy(), sub[column].to_numpy(dtype=float)))
    key = np.zeros(len(sub), dtype=np.int64)
    for col in HARDWARE_KEY:  # one integer per hardware option
        codes = np.asarray(pd.Categorical(sub[col]).codes, dtype=np.int64)
        key = key * (int(codes.max()) + 2) + codes + 1
    _, first = np.unique(key[order], return_index=True)
    return np.asarray(np.sort(idx[order[first]]))


def _mip(
    cand: pd.DataFrame,
    lim: Limits,
    column: str,
    options: SolverOptions,
    epsilon: Sequence[tuple[str, float]] = (),
    exclude: Sequence[int] = (),
) -> tuple[int | None, SolverReport]:
    """Minimise candidate column `column` over `cand` (presolved); (chosen row position in cand, report)."""
    t0 = time.perf_counter()
    keep = reduce_pool(cand, column, epsilon, exclude)
    local = cand.iloc[keep].reset_index(drop=True)
    if not len(local):
        return None, _empty_report(time.perf_counter() - t0)
    m = build_model(local, lim, column, epsilon=epsilon)
    build_s = time.perf_counter() - t0
    solved = solve_model(m, options, build_time_s=build_s)
    if not solved.report.status.has_solution:
        return None, solved.report
    x = solved.values["x"]
    return int(keep[int(np.argmax(x))]), solved.report


def _empty_report(build_s: float) -> SolverReport:
    return SolverReport(
        status=SolverStatus.INFEASIBLE,
        highs_status="presolve: no candidate",
        objective=None,
        bound=None,
        gap=None,
        solve_time_s=0.0,
        build_time_s=build_s,
        handoff_time_s=0.0,
        nodes=0,
        simplex_iterations=0,
        variables=0,
        constraints=0,
    )


def plan_from_row(catalog: Catalog, req: PlanRequest, row: pd.Series) -> Plan:
    """Re-evaluate a candidate with the exact scalar path (planner.evaluate), in the precision its GPU computes the
    request's in (a plan on an allowed GPU without fp4 computes in fp8, as the scan priced it, and says so)."""
    server = catalog.server(str(row["server"]))
    gpu = catalog.gpu(server.gpu or "")
    precision = compute.precision_used(gpu, req.precision) if req.precision is not None else None
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
        ),
    )
    return _plan_from_estimate(catalog, req, est)


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
    then `estimate_from_row`), batched."""
    out: dict[int, Plan] = {}
    work = Work(samples_of(catalog, req), req.global_batch, req.precision)
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
        df = evaluate_space(
            catalog, req.model, site=site, purchase=purchase, work=work, life_years=req.life_years, space=space
        )
        for k, i in enumerate(sel):
            out[int(i)] = _plan_from_estimate(catalog, req, estimate_from_row(df.iloc[k]))
    return [out[i] for i in range(len(rows))]


PLAN_METRIC = {"energy": "facility_energy_kwh", "cost": "cost_usd", "carbon": "carbon_kg", "time": "time_to_train_h"}
PLAN_LIMIT_FIELDS = {
    "deadline": "time_to_train_h",
    "power": "facility_power_kw",
    "nodes": "nodes",
    "rack": "rack_units",
}


def check_plan(plan: Plan, req: PlanRequest, catalog: Catalog, lim: Limits | None = None) -> list[str]:
    """Every requirement of the request that a (re-evaluated) plan breaks; [] = the plan is feasible.

    The one check used for the MIP's plan, every alternative and the tests: memory fit, allowed hardware /
    site / purchase mode, availability (a price), a bought plan's run within its servers' life (in_service),
    deadline, budget, power envelope (the request's or the plan's site's), node limit and rack units."""
    lim = lim or limits_for(catalog, req)
    bad: list[str] = []
    if not plan.estimate.fits_memory:
        bad.append("memory")
    server = catalog.server(plan.server)
    if (
        plan.server not in allowed_servers(catalog, req)
        or plan.fabric not in server.fabrics
        or (req.fabrics is not None and plan.fabric not in req.fabrics)
        or not any(math.isclose(plan.power_cap, c, rel_tol=1e-9) for c in req.power_caps)
    ):
        bad.append("hardware")
    if plan.site not in req.sites or plan.purchase not in purchases_of(req):
        bad.append("site/purchase")
    if not (math.isfinite(plan.cost_usd) and math.isfinite(plan.upfront_usd)):
        bad.append("availability")
    if plan.purchase == "buy" and not in_service(0.0, plan.time_to_train_h, req.life_years):
        bad.append("life")
    values = {k: float(getattr(plan, f)) for k, f in PLAN_LIMIT_FIELDS.items()}
    values["budget"] = plan.upfront_usd if lim.budget_kind == "upfront" else plan.cost_usd
    envelope = req.power_kw if req.power_kw is not None else catalog.site(plan.site).power_envelope_kw
    rhs = {
        "deadline": lim.deadline_h,
        "budget": lim.budget_usd,
        "power": envelope,
        "nodes": lim.max_nodes,
        "rack": lim.max_rack_units,
    }
    for k in LIMIT_NAMES:
        if rhs[k] is not None and not within(values[k], rhs[k], k):
            bad.append(k)
    return bad


MAX_CUTS = 50


def _prepare(request: Any, catalog: Any) -> tuple[PlanRequest, Catalog]:
    """The request and catalog of a public entry point, checked: a dict is validated field by field, a wrong type
    or value is a PlannerInputError saying which (solve and pareto)."""
    req = validated(PlanRequest, request, "request")
    cat = catalog_for(load_catalog() if catalog is None else check_catalog(catalog), req)
    check_request(cat, req)  # every check before a solve, as the CLI, the app and batch run them
    return req, cat


def solve(request: PlanRequest | dict[str, Any], catalog: Catalog | None = None) -> PlanResult:
    """Find the optimal capacity plan for the request (see module docstring and planner/plan/formulation.py).

    ``request``: a ``PlanRequest`` or a dict of its fields; ``catalog``: ``planner.load_catalog()`` [the shipped
    catalog, or ``$PLANNER_CATALOG``]. Returns a ``PlanResult``: ``status`` 'optimal', 'time_limit' or
    'infeasible'; ``plan`` (None when infeasible) and ``alternatives`` with units in their field names;
    ``summary()`` says what was decided, ``to_frame()`` is one row per plan. When nothing fits, ``explanation``
    gives each requirement's smallest relaxation (``relaxations``: given, needed, unit) -- an infeasible request
    is a result, not an exception. Bad input (an unknown id, a wrong type or value, caps outside every allowed
    GPU's range, a precision no allowed GPU has) raises PlannerInputError."""
    req, cat = _prepare(request, catalog)
    timings: dict[str, float] = {}
    lim = limits_for(cat, req)
    column = OBJECTIVE_COLUMNS[req.objective]
    t0 = time.perf_counter()
    hi = req.max_nodes + node_step(req.max_nodes)  # the binding step of the node limit is scanned too
    kept, priced = _scan(cat, req, 1, hi, _solve_reducer(cat, req, lim, column), timings)
    timings["scan_s"] = time.perf_counter() - t0
    masks = _Masks(kept, lim, req, cat) if len(kept) else None
    if masks is None or not masks.all.any():
        return _infeasible(cat, req, lim, kept, priced, hi, timings)
    pool = kept[masks.all].reset_index(drop=True)
    exclude: list[int] = []
    report: SolverReport | None = None
    plan: Plan | None = None
    chosen: pd.Series | None = None
    t1 = time.perf_counter()
    for _ in range(MAX_CUTS):
        pos, report = _mip(pool, lim, column, req.solver, exclude=exclude)
        if pos is None:
            break
        p = plan_from_row(cat, req, pool.iloc[pos])
        if not check_plan(p, req, cat, lim):
            plan, chosen = p, pool.iloc[pos]
            break
        exclude.append(pos)  # never return a plan the exact model rejects: cut it off and re-solve
    timings["solve_s"] = time.perf_counter() - t1
    if plan is None or chosen is None or report is None:
        if report is not None and report.status == SolverStatus.NO_SOLUTION:
            raise PlannerInputError(
                f"HiGHS found no plan within the time limit ({req.solver.time_limit_s} s); raise --time-limit"
            )
        return _infeasible(cat, req, lim, kept.iloc[0:0], priced, hi, timings)
    t2 = time.perf_counter()
    alts = _alternatives(cat, req, lim, pool, chosen, column)
    timings["alternatives_s"] = time.perf_counter() - t2
    binding = _binding(kept, masks, float(chosen[column]), column)
    status = "optimal" if report.status == SolverStatus.OPTIMAL else "time_limit"
    return PlanResult(
        request=req,
        status=status,
        plan=plan,
        objective=req.objective,
        objective_value=float(getattr(plan, PLAN_METRIC[req.objective])),
        binding=binding,
        solver=report,
        alternatives=alts,
        explanation=None,
        timings_s=timings,
    )


def _alternatives(
    cat: Catalog, req: PlanRequest, lim: Limits, pool: pd.DataFrame, chosen: pd.Series, column: str
) -> list[Plan]:
    """The next-best `req.alternatives` hardware options, then the best plan of each other GPU type not listed.

    Each hardware option (server, fabric, cap, site, purchase) appears at most once, with its best node count.
    Every constraint involves only the chosen plan, so re-solving the MIP with the options found so far cut
    off (no-good cuts) returns exactly the next option in objective order of the presolved pool
    (`reduce_pool`): that order is used directly. Each alternative is re-evaluated by the exact model
    (`plans_from_rows`, one batched call) and checked by `check_plan`; one that fails is replaced by the next."""
    if req.alternatives == 0:
        return []
    best = pool.iloc[reduce_pool(pool, column)]
    best = best.iloc[np.lexsort((best["nodes"].to_numpy(), best[column].to_numpy(dtype=float)))]
    keys = list(zip(*(best[c].astype(object).tolist() for c in HARDWARE_KEY), strict=True))
    chosen_key = tuple(chosen[c] for c in HARDWARE_KEY)
    order = [i for i in range(len(best)) if keys[i] != chosen_key]
    gpu_of = best["gpu"].astype(str).tolist()
    accepted: dict[int, Plan] = {}
    tried: set[int] = set()
    while True:
        usable = [i for i in order if i in accepted or i not in tried]
        nxt = usable[: req.alternatives]
        shown = {str(chosen["gpu"])} | {gpu_of[i] for i in nxt}
        per_gpu: list[int] = []
        for i in usable:
            if gpu_of[i] not in shown:
                shown.add(gpu_of[i])
                per_gpu.append(i)
        todo = [i for i in nxt + per_gpu if i not in tried]
        if not todo:
            return [accepted[i] for i in nxt + per_gpu]
        for i, p in zip(todo, plans_from_rows(cat, req, best.iloc[todo]), strict=True):
            if not check_plan(p, req, cat, lim):
                accepted[i] = p
        tried.update(todo)


def _binding(kept: pd.DataFrame, m: _Masks, best: float, column: str) -> list[str]:
    """A limit binds when relaxing it alone by the binding step (1%, at least one node / rack unit) admits a
    strictly better plan. `kept` holds, per hardware option, the best plan under each such relaxation."""
    obj = kept[column].to_numpy(dtype=float)
    out = []
    for k in m.given:
        ok = m.all_but(k) & m.relaxed[k]
        if ok.any() and float(obj[ok].min()) < best - 1e-9 * abs(best):
            out.append(k)
    return out


# ------------------------------------------------------------------------------------------ infeasibility
RELAX_UNITS = {"deadline": "days", "budget": "USD", "power": "kW", "nodes": "nodes", "rack": "rack units"}


def _given_in_units(lim: Limits, name: str) -> float:
    v = {
        "deadline": None if lim.deadline_h is None else lim.deadline_h / 24.0,
        "budget": lim.budget_usd,
        "power": lim.power_kw,
        "nodes": lim.max_nodes,
        "rack": lim.max_rack_units,
    }[name]
    assert v is not None
    return float(v)


def _needed_in_units(name: str, value: float) -> float:
    return value / 24.0 if name == "deadline" else value


def _site_power(req: PlanRequest) -> str | None:
    """Where the power limit came from when the request gave none: one site's envelope ('site') or the largest of
    several ('sites'); None when the request gave power_kw."""
    if req.power_kw is not None:
        return None
    return "site" if len(req.sites) == 1 else "sites"


def _phrase(
    name: str,
    needed: float,
    given: float | None = None,
    rent_past_years: float | None = None,
    site_power: str | None = None,
) -> str:
    """How a relaxed requirement reads; stated minimums are rounded up so that typing them back suffices. With
    what was given, a deadline past a year is also said in years, and past ``rent_past_years`` (the life of
    bought servers, when renting is allowed too) as a run only rented servers can carry: a bought plan must end
    within its servers' life (in_service), so such a deadline is met by no purchase. ``site_power``: the power
    limit is the site's envelope ('site') or the largest of the allowed sites' ('sites'), the request having given
    none: said as such, not as what the user gave."""
    you = "" if given is None else " (you gave {})"
    if name == "deadline":
        s = f"a deadline of at least {_sig4(needed)} days"
        if given is None:
            return s
        said = [f"you gave {_sig4(given, up=False)}"]
        if needed > 365.25:
            said.append(f"that is {_years(needed * 24.0)}")
            if rent_past_years is not None and needed * 24.0 > rent_past_years * cost.HOURS_PER_YEAR:
                said[-1] += f", past the {rent_past_years:g}-year life of bought servers: on rented servers only"
        return f"{s} ({'; '.join(said)})"
    if name == "budget":
        s = f"a budget of at least {usd(needed, up=True)}"
        return s + (you.format(usd(given)) if given is not None else "")
    if name == "power":
        s = f"at least {_sig4(needed)} kW of power"
        if given is not None and site_power:
            envelope = _sig4(given, up=False)
            whose = "the site's own envelope is" if site_power == "site" else "the largest of the sites' envelopes is"
            return s + f" ({whose} {envelope} kW; a power limit you set, --power-kw, replaces it)"
        return s + (you.format(f"{_sig4(given, up=False)} kW") if given is not None else "")
    if name == "nodes":
        s = f"at least {int(needed):,} nodes"
        return s + (f" (you allowed {int(given):,})" if given is not None else "")
    s = f"at least {int(needed):,} rack units"
    return s + (f" (you allowed {int(given):,})" if given is not None else "")


def _infeasible(
    cat: Catalog,
    req: PlanRequest,
    lim: Limits,
    kept: pd.DataFrame,
    priced: int,
    scanned_to: int,
    timings: dict[str, float],
) -> PlanResult:
    """No plan meets every requirement: the exact smallest relaxation of each requirement alone (the other
    requirements kept); when none suffices alone, the Pareto-smallest pairs."""
    t0 = time.perf_counter()
    horizon = max(relaxation_horizon(req.max_nodes), scanned_to)
    cols = limit_columns(lim)
    relax: list[Relaxation] = []
    m = _Masks(kept, lim, req, cat) if len(kept) else None
    for k in LIMIT_NAMES:
        if getattr(lim, _LIMIT_ATTR[k]) is None:
            continue
        pool = kept[m.all_but(k)] if m is not None else kept
        if k == "nodes" and not len(pool):
            # beyond the scanned counts: the first chunk of counts with a plan meeting the other limits holds
            # the least node count (chunks are scanned in increasing order)
            ext_lim = _without(lim, "nodes")

            def others_ok(cand: pd.DataFrame, _lim: Limits = ext_lim) -> np.ndarray:
                return np.flatnonzero(_Masks(cand, _lim, req, cat).all)

            pool, more = _scan(cat, req, scanned_to + 1, horizon, others_ok, timings, stop_when_found=True)
            priced += more
        if not len(pool):
            continue
        pos, _ = _mip(pool, _without(lim, k), cols[k], req.solver)
        if pos is None:
            continue
        needed = _needed_in_units(k, float(pool.iloc[pos][cols[k]]))
        given = _given_in_units(lim, k)
        relax.append(
            Relaxation(
                requirement=k,
                given=given,
                needed=needed,
                unit=RELAX_UNITS[k],
                message=_phrase(
                    k, needed, given, req.life_years if req.purchase == "either" else None, _site_power(req)
                ),
            )
        )
    outlived = _shortest_outlived(cat, req, horizon) if priced == 0 else None
    if outlived is not None:
        hours, nodes, server = outlived
        msg = (
            f"Every configuration of '{req.model}' that fits the allowed servers (up to {horizon:,} nodes) runs longer "
            f"than the servers' {req.life_years:g}-year service life (--life-years): the fastest, {nodes:,} x "
            f"{server}, takes {_years(hours)}. Bought servers would retire before the run ends. Allow more nodes "
            "(--max-nodes), faster GPUs, less work, or renting (--either)."
        )
        timings["explain_s"] = time.perf_counter() - t0
        return _no_plan(req, msg, [], [], timings)
    if priced == 0:
        wl = cat.workload(req.model)
        msg = (
            f"'{wl.id}' fits no allowed server up to {horizon:,} nodes: no parallel layout fits GPU memory on the "
            "allowed GPUs (or none can be bought/rented as asked). Allow GPUs with more memory, more nodes "
            "(--max-nodes), or buying or renting (--either)."
        )
        timings["explain_s"] = time.perf_counter() - t0
        return _no_plan(req, msg, [], [], timings)
    pairs: list[RelaxationPair] = []
    if relax:
        msg = "No plan meets all requirements. It needs " + ", or ".join(r.message for r in relax) + "."
    else:
        pairs = _pairs(cat, req, lim, horizon, timings)
        if pairs:
            msg = (
                "No plan meets all requirements, and relaxing any one alone is not enough. The smallest pairs: "
                + "; or ".join(p.message for p in pairs)
                + "."
            )
        else:
            msg = (
                f"No plan meets all requirements, and relaxing any one or two of them is not enough (node counts "
                f"up to {horizon:,}): relax three or more, or allow more hardware."
            )
    timings["explain_s"] = time.perf_counter() - t0
    return _no_plan(req, msg, relax, pairs, timings)


def _years(hours: float) -> str:
    return f"{hours / cost.HOURS_PER_YEAR:,.3g} years"


def _shortest_outlived(cat: Catalog, req: PlanRequest, horizon: int) -> tuple[float, int, str] | None:
    """(hours, nodes, server) of the fastest bought configuration up to ``horizon`` nodes that fits and can be
    bought but whose run outlasts its servers' life (in_service); None if there is none. Asked only when no
    candidate is left, to say why."""
    if "buy" not in purchases_of(req):
        return None
    best: tuple[float, int, str] | None = None
    for phys in physics_chunks(cat, req, 1, horizon):
        if not len(phys):
            continue
        df = price_space(cat, phys, req.sites[0], "buy", req.life_years)
        df = df[df["feasible"].to_numpy(dtype=bool)]
        if len(df):
            i = int(np.argmin(df["time_to_train_h"].to_numpy(dtype=float)))
            row = df.iloc[i]
            if best is None or float(row["time_to_train_h"]) < best[0]:
                best = (float(row["time_to_train_h"]), int(row["nodes"]), str(row["server"]))
    return best


_LIMIT_ATTR = {
    "deadline": "deadline_h",
    "budget": "budget_usd",
    "power": "power_kw",
    "nodes": "max_nodes",
    "rack": "max_rack_units",
}


def _without(lim: Limits, *names: str) -> Limits:
    return Limits(**{**lim.__dict__, **{_LIMIT_ATTR[k]: None for k in names}})


PAIR_POINTS = 3  # points listed per pair of requirements


def _pairs(
    cat: Catalog, req: PlanRequest, lim: Limits, horizon: int, timings: dict[str, float]
) -> list[RelaxationPair]:
    """For each pair of requirements: the Pareto front of the two thresholds over the plans that meet every
    other requirement (node counts up to the horizon), a few points of it."""
    cols = limit_columns(lim)
    limited = [k for k in LIMIT_NAMES if getattr(lim, _LIMIT_ATTR[k]) is not None]
    pair_list = list(itertools.combinations(limited, 2))

    def reducer(cand: pd.DataFrame) -> np.ndarray:
        m = _Masks(cand, lim, req, cat)
        picks = [np.zeros(0, dtype=np.int64)]
        for a, b in pair_list:
            picks.append(_frontier(m.values[a], m.values[b], m.all_but(a, b)))
        return np.concatenate(picks)

    kept, _ = _scan(cat, req, 1, horizon, reducer, timings)
    if not len(kept):
        return []
    m = _Masks(kept, lim, req, cat)
    out: list[RelaxationPair] = []
    for a, b in pair_list:
        idx = _frontier(m.values[a], m.values[b], m.all_but(a, b))
        if not idx.size:
            continue
        if idx.size > PAIR_POINTS:
            idx = idx[np.unique(np.round(np.linspace(0, idx.size - 1, PAIR_POINTS)).astype(int))]
        for i in idx:
            rel = []
            for k in (a, b):
                needed = _needed_in_units(k, float(kept.iloc[int(i)][cols[k]]))
                given = _given_in_units(lim, k)
                rel.append(
                    Relaxation(
                        requirement=k,
                        given=given,
                        needed=needed,
                        unit=RELAX_UNITS[k],
                        message=_phrase(
                            k, needed, given, req.life_years if req.purchase == "either" else None, _site_power(req)
                        ),
                    )
                )
            out.append(
                RelaxationPair(
                    relaxations=rel,
                    message=f"{_delta(rel[0])} and {_delta(rel[1])} ({_phrase(a, rel[0].needed)} and "
                    f"{_phrase(b, rel[1].needed)})",
                )
            )
    return out


def _delta(r: Relaxation) -> str:
    """How much more than given, rounded up: '+9.25 days', '+$2,100,000 budget', '+310 kW', '+12 nodes'."""
    d = r.needed - r.given
    if r.requirement == "deadline":
        return f"+{_sig3(d)} days"
    if r.requirement == "budget":
        return f"+{usd(d, up=True)} budget"
    if r.requirement == "power":
        return f"+{_sig3(d)} kW"
    return f"+{math.ceil(d):,} {r.unit}"


def _sig4(x: float, up: bool = True) -> str:
    """x to 4 significant figures (rounded up when ``up``: a stated minimum must suffice), written out from 1,000
    on with thousands separators ('15,330 kW', not '1.533e+04 kW')."""
    v = ceil_sig(x, 4) if up else float(f"{x:.4g}")
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:,.4g}"


def _sig3(x: float) -> str:
    """x rounded up to 3 significant figures, written out with thousands separators ('1,310', not '1.31e+03')."""
    v = ceil_sig(x, 3)
    return f"{v:,.0f}" if v >= 100 else f"{v:,.3g}"


def _no_plan(
    req: PlanRequest, msg: str, relax: list[Relaxation], pairs: list[RelaxationPair], timings: dict[str, float]
) -> PlanResult:
    return PlanResult(
        request=req,
        status="infeasible",
        plan=None,
        objective=req.objective,
        objective_value=None,
        binding=[],
        solver=None,
        alternatives=[],
        explanation=Explanation(message=msg, relaxations=relax, pairs=pairs),
        timings_s=timings,
    )


# ------------------------------------------------------------------------------------------------ pareto
def pareto(
    request: PlanRequest | dict[str, Any],
    x: Objective = "cost",
    y: Objective = "energy",
    points: int = 8,
    catalog: Catalog | None = None,
) -> pd.DataFrame:
    """Pareto front between two objectives by the epsilon-constraint method: min x s.t. y <= eps.

    The candidates are the plans at every integer node count that meet every requirement, reduced exactly to
    their (x, y) non-dominated set; each point is the MIP optimum of its epsilon problem over that set, hence a
    non-dominated plan of the whole space.

    ``x``, ``y``: two of energy, cost, carbon, time; ``points``: epsilon values to solve, a whole number >= 2 [8].
    Returns one row per distinct optimal plan: the columns named ``x`` and ``y`` hold the objectives in their
    units (energy: facility kWh, cost: USD, carbon: kgCO2e, time: hours) and ``epsilon`` the limit put on ``y``
    (y's unit); ``front.attrs["units"]`` maps each of them to its unit (``planner.present.views.pareto_table`` renames
    them with units, as ``planner pareto`` prints them). No feasible plan raises PlannerInputError with the
    smallest relaxation."""
    for name, v in (("x", x), ("y", y)):
        if v not in OBJECTIVE_COLUMNS:
            raise PlannerInputError(f"pareto {name} must be one of {', '.join(OBJECTIVE_COLUMNS)} (got {v!r})")
    if x == y:
        raise PlannerInputError("pareto needs two different objectives")
    if isinstance(points, bool) or not isinstance(points, int | np.integer) or points < 2:
        raise PlannerInputError(f"pareto points must be a whole number >= 2 (got {points!r})")
    req, cat = _prepare(request, catalog)
    lim = limits_for(cat, req)
    xc, yc = OBJECTIVE_COLUMNS[x], OBJECTIVE_COLUMNS[y]

    def reducer(cand: pd.DataFrame) -> np.ndarray:
        m = _Masks(cand, lim, req, cat)
        return _frontier(cand[xc].to_numpy(dtype=float), cand[yc].to_numpy(dtype=float), m.all)

    timings: dict[str, float] = {}
    kept, _ = _scan(cat, req, 1, req.max_nodes, reducer, timings)
    front_idx = (
        _frontier(kept[xc].to_numpy(dtype=float), kept[yc].to_numpy(dtype=float), _Masks(kept, lim, req, cat).all)
        if len(kept)
        else np.zeros(0, dtype=np.int64)
    )
    if not front_idx.size:
        res = solve(req.model_copy(update={"alternatives": 0}), cat)
        raise PlannerInputError(res.explanation.message if res.explanation else "no feasible plan")
    pool = kept.iloc[front_idx].reset_index(drop=True)
    y_min, y_max = float(pool[yc].min()), float(pool[yc].iloc[0])  # pool is x ascending: row 0 has the least x
    rows = []
    for eps in np.linspace(y_max, y_min, points):
        pos, rep = _mip(pool, lim, xc, req.solver, epsilon=[(yc, float(eps) * (1 + 1e-12))])
        if pos is None:
            continue
        r = pool.iloc[pos]
        rows.append(
            {
                "epsilon": float(eps),
                x: float(r[xc]),
                y: float(r[yc]),
                "server": r["server"],
                "gpu": r["gpu"],
                "nodes": int(r["nodes"]),
                "fabric": r["fabric"],
                "power_cap": float(r["power_cap"]),
                "site": r["site"],
                "purchase": r["purchase"],
                "time_to_train_days": float(r["time_to_train_h"]) / 24.0,
                "facility_power_kw": float(r["facility_power_kw"]),
                "solver_status": rep.status.value,
                # of the point's nodes, those already owned (the rest are bought), as a plan of it says
                **({"owned_nodes": plan_from_row(cat, req, r).owned_nodes} if req.owned else {}),
            }
        )
    front = pd.DataFrame(rows).drop_duplicates(subset=[x, y]).reset_index(drop=True)
    front.attrs["units"] = {
        "epsilon": OBJECTIVE_UNITS[y],
        x: OBJECTIVE_UNITS[x],
        y: OBJECTIVE_UNITS[y],
        "power_cap": "fraction of TDP",
        "time_to_train_days": "days",
        "facility_power_kw": "kW",
    }
    return front


def _idle_node_kw(catalog: Catalog, server_id: str, pue: float) -> float:
    server = catalog.server(server_id)
    return power_mod.idle_node_kw(server, catalog.gpu(server.gpu or ""), pue)
