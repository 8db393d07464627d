"""Capacity planning: `solve`, `pareto` and infeasibility explanations over the MIP of planner/mip.py.

Pipeline: request (validated) -> candidate plans evaluated by the exact model (cached) -> exact presolve
(drop candidates that break a constraint on their own) -> MIP (Pyomo) -> HiGHS -> chosen plan re-evaluated
with `planner.evaluate` and checked against every constraint (a violating plan is cut off and the MIP
re-solved; it is never returned) -> ladder refinement -> result with alternatives, binding constraints and
the solver report. When nothing fits, each requirement's smallest relaxation is computed by the MIP.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from planner.data import Catalog, load_catalog
from planner.errors import PlannerInputError
from planner.mip import OBJECTIVE_COLUMNS, Limits, build_model
from planner.model import DEFAULT_CAPS, Work, evaluate, evaluate_space, price_space, work_from
from planner.schemas import Configuration, Estimate
from planner.solver import SolverOptions, SolverReport, SolverStatus, solve_model

Objective = Literal["energy", "cost", "carbon", "time"]
LADDER_DENSE_UP_TO = 32
LADDER_STEP = 1.05
REL_TOL = 1e-9


def relaxation_horizon(max_nodes: int) -> int:
    return min(100_000, max(4 * max_nodes, 64))


def node_ladder(max_nodes: int) -> list[int]:
    """Every count up to 32, then steps of at most 5%, and max_nodes itself."""
    out = list(range(1, min(max_nodes, LADDER_DENSE_UP_TO) + 1))
    x = float(LADDER_DENSE_UP_TO)
    while out[-1] < max_nodes:
        x *= LADDER_STEP
        n = min(max_nodes, max(out[-1] + 1, round(x)))
        out.append(n)
    return out


class PlanRequest(BaseModel):
    """What to train, by when, within what. Frozen; JSON round-trips."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    model: str = Field(description="workload id (models/)")
    samples: float | None = Field(None, gt=0, description="samples to train (reference batch)")
    tokens: float | None = Field(None, gt=0, description="tokens to train (sequence models)")
    epochs: float | None = Field(None, gt=0, description="epochs over the dataset")
    global_batch: int | None = Field(None, ge=1, description="fixed global batch (default: workload policy)")
    precision: Literal["bf16", "fp16", "fp8", "tf32", "fp32"] | None = None
    deadline_days: float | None = Field(None, gt=0, description="training must finish within, days")
    budget_usd: float | None = Field(None, ge=0, description="money limit, USD")
    budget_kind: Literal["upfront", "total"] = Field(
        "upfront", description="upfront: capex when buying / the whole rent when renting; total: run cost"
    )
    power_kw: float | None = Field(None, gt=0, description="facility power envelope, kW (default: the site's)")
    sites: list[str] = Field(default_factory=lambda: ["us-colo"], min_length=1)
    objective: Objective = "energy"
    purchase: Literal["buy", "rent", "either"] = "buy"
    gpus: list[str] | None = Field(None, description="allowed GPUs: ids or substrings such as 'A100', 'H100'")
    servers: list[str] | None = None
    fabrics: list[str] | None = None
    power_caps: list[float] = Field(default_factory=lambda: list(DEFAULT_CAPS))
    max_nodes: int = Field(1024, ge=1, le=100_000)
    max_rack_units: int | None = Field(None, ge=1)
    life_years: float = Field(4.0, gt=0, le=15)
    alternatives: int = Field(3, ge=0, le=20, description="next-best distinct plans to report")
    solver: SolverOptions = Field(default_factory=SolverOptions)

    @field_validator("power_caps")
    @classmethod
    def _caps(cls, v: list[float]) -> list[float]:
        if not v or any(not (0 < c <= 1) for c in v):
            raise ValueError("power caps are fractions of TDP in (0, 1]")
        return sorted(set(v))

    @model_validator(mode="after")
    def _one_work(self) -> PlanRequest:
        if sum(x is not None for x in (self.samples, self.tokens, self.epochs)) > 1:
            raise ValueError("give only one of samples, tokens or epochs")
        if self.deadline_days is None and self.objective != "time":
            raise ValueError("a deadline is required unless the objective is time")
        return self


class Plan(BaseModel):
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
    throughput_samples_per_s: float
    mfu: float
    bottleneck: str
    estimate: Estimate


class Relaxation(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    requirement: str
    given: float
    needed: float
    unit: str
    message: str


class Explanation(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    message: str
    relaxations: list[Relaxation]


class PlanResult(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    request: PlanRequest
    status: Literal["optimal", "time_limit", "infeasible"]
    plan: Plan | None
    objective: str
    objective_value: float | None
    binding: list[str]
    solver: SolverReport | None
    alternatives: list[Plan]
    explanation: Explanation | None
    ladder_gap: float = Field(0.0, description="relative improvement found between ladder node counts")
    timings_s: dict[str, float] = Field(default_factory=dict)

    def to_frame(self) -> pd.DataFrame:
        """The plan and its alternatives, one row each."""
        rows = []
        for role, p in [("plan", self.plan)] + [("alternative", a) for a in self.alternatives]:
            if p is not None:
                d = p.model_dump(exclude={"estimate"})
                d["role"] = role
                rows.append(d)
        return pd.DataFrame(rows)

    def summary(self) -> str:
        if self.plan is None:
            return f"No plan: {self.explanation.message if self.explanation else self.status}"
        p = self.plan
        gap = f", gap {self.solver.gap:.2%}" if self.solver and self.solver.gap else ""
        lines = [
            f"{p.nodes} x {p.server} ({p.gpus} x {p.gpu}), {p.fabric} ({p.switches} switches), cap {p.power_cap:.0%} "
            f"({p.power_cap_w:.0f} W), {p.purchase} at {p.site}",
            f"  layout {p.layout}, batch {p.global_batch:,}; bottleneck: {p.bottleneck}",
            f"  time {p.time_to_train_days:,.3g} days; facility power {p.facility_power_kw:,.4g} kW; "
            f"facility energy {p.facility_energy_kwh:,.4g} kWh",
            f"  cost ${p.cost_usd:,.0f} (up-front ${p.upfront_usd:,.0f}); carbon {p.carbon_kg:,.4g} kg",
            f"  objective {self.objective} = {self.objective_value:,.6g} ({self.status}{gap})",
            f"  binding: {', '.join(self.binding) or 'none'}",
        ]
        return "\n".join(lines)


# ----------------------------------------------------------------------------------------------- candidates
def _match_gpus(catalog: Catalog, patterns: Sequence[str]) -> set[str]:
    out: set[str] = set()
    for pat in patterns:
        hits = {g for g in catalog.gpus if pat.lower() in g.lower() or pat.lower() == catalog.gpus[g].family}
        if not hits:
            raise PlannerInputError(f"no GPU matches '{pat}'. GPUs: {', '.join(sorted(catalog.gpus))}")
        out |= hits
    return out


def allowed_servers(catalog: Catalog, req: PlanRequest) -> list[str]:
    servers = catalog.gpu_servers()
    if req.servers is not None:
        for s in req.servers:
            catalog.server(s)
        servers = [s for s in servers if s.id in set(req.servers)]
    if req.gpus is not None:
        gpus = _match_gpus(catalog, req.gpus)
        servers = [s for s in servers if s.gpu in gpus]
    if req.fabrics is not None:
        for f in req.fabrics:
            catalog.fabric(f)
        servers = [s for s in servers if set(s.fabrics) & set(req.fabrics)]
    if not servers:
        raise PlannerInputError("no server in the catalog matches the allowed GPUs/servers/fabrics")
    return [s.id for s in servers]


def candidates(catalog: Catalog, req: PlanRequest) -> pd.DataFrame:
    """All candidate plans (exact model at ladder node counts) that fit memory and can be bought/rented.

    The physics (times, IT power) is cached per physical fingerprint of the catalog, so scenarios that only
    change prices, sites, deadlines, budgets or objectives re-price a cached table instead of re-evaluating."""
    wl = catalog.workload(req.model)
    samples = work_from(wl, req.samples, req.tokens, req.epochs)
    for site in req.sites:
        catalog.site(site)
    purchases = ("buy", "rent") if req.purchase == "either" else (req.purchase,)
    servers = tuple(allowed_servers(catalog, req))
    key = (
        physics_fingerprint(catalog),
        req.model,
        samples,
        req.global_batch,
        req.precision,
        servers,
        tuple(req.fabrics or ()),
        tuple(req.power_caps),
        req.max_nodes,
    )
    physics = _PHYSICS.get(key)
    if physics is None:
        # candidates run past max_nodes (x4 on the geometric ladder) so that the node limit's relaxation and
        # whether it binds can be computed; the solve itself filters nodes <= max_nodes
        physics = evaluate_space(
            catalog,
            req.model,
            servers=list(servers),
            fabrics=list(req.fabrics or ()) or None,
            caps=req.power_caps,
            nodes=node_ladder(relaxation_horizon(req.max_nodes)),
            site=req.sites[0],
            work=Work(samples, req.global_batch, req.precision),
        )
        physics = physics[physics["fits_memory"] & physics["valid_layout"]].reset_index(drop=True)
        _PHYSICS[key] = physics
        while len(_PHYSICS) > 32:
            _PHYSICS.pop(next(iter(_PHYSICS)))
    frames = []
    for site in req.sites:
        for purchase in purchases:
            if len(physics):
                df = price_space(catalog, physics, site, purchase, req.life_years)
                frames.append(df[df["feasible"]])
    cand = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if len(cand):
        cand = cand.reset_index(drop=True)
        for col in ("server", "fabric", "gpu", "site", "purchase"):  # categorical: fast grouping and compares
            if not isinstance(cand[col].dtype, pd.CategoricalDtype):
                cand[col] = pd.Categorical(cand[col])
        server_cat = cand["server"].cat
        rack = np.asarray([catalog.server(str(s)).rack_units for s in server_cat.categories])
        cand["rack_units"] = cand["nodes"].to_numpy() * rack[server_cat.codes.to_numpy()]
        cand["upfront_usd"] = np.where(cand["purchase"].to_numpy() == "buy", cand["capex_usd"], cand["cost_usd"])
    cand.attrs["samples"] = samples
    return cand


_PHYSICS: dict[tuple[Any, ...], pd.DataFrame] = {}
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


@functools.lru_cache(maxsize=64)
def physics_fingerprint(catalog: Catalog) -> str:
    """A hash of everything in the catalog that changes times or IT power (not prices or sites)."""
    import hashlib
    import json

    parts = {
        name: {k: v.model_dump(exclude=_PRICE_FIELDS) for k, v in getattr(catalog, name).items()}
        for name in ("gpus", "servers", "fabrics", "power_curves", "frameworks", "workloads")
    }
    parts["calibration"] = catalog.calibration
    return hashlib.sha1(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


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


CONSTRAINT_COLUMNS = {
    "deadline": "time_to_train_h",
    "power": "facility_power_kw",
    "nodes": "nodes",
    "rack": "rack_units",
}


def _satisfies(cand: pd.DataFrame, lim: Limits, skip: str | None = None) -> np.ndarray:
    """Rows that meet every constraint on their own (exact presolve); `skip` leaves one out."""
    ok = np.ones(len(cand), dtype=bool)
    checks: list[tuple[str, str, float | None]] = [
        ("deadline", "time_to_train_h", lim.deadline_h),
        ("budget", lim.budget_column(), lim.budget_usd),
        ("power", "facility_power_kw", lim.power_kw),
        ("nodes", "nodes", lim.max_nodes),
        ("rack", "rack_units", lim.max_rack_units),
    ]
    for name, col, bound in checks:
        if bound is not None and name != skip:
            ok &= cand[col].to_numpy(dtype=float) <= bound * (1 + REL_TOL)
    # site envelopes apply per site when the request does not set one
    return ok


def _site_envelope_ok(catalog: Catalog, req: PlanRequest, cand: pd.DataFrame) -> np.ndarray:
    if req.power_kw is not None or not len(cand):
        return np.ones(len(cand), dtype=bool)
    site = pd.Categorical(cand["site"])
    env = np.asarray([catalog.site(str(s)).power_envelope_kw for s in site.categories])[np.asarray(site.codes)]
    return cand["facility_power_kw"].to_numpy(dtype=float) <= env * (1 + REL_TOL)


# ------------------------------------------------------------------------------------------------- solving
HARDWARE_KEY = ("server", "fabric", "power_cap", "site", "purchase")


def reduce_pool(
    cand: pd.DataFrame, column: str, epsilon: tuple[str, float] | None = None, exclude: Sequence[int] = ()
) -> np.ndarray:
    """Exact presolve for the single-plan MIP: positions of the candidates that can be optimal.

    Every constraint involves only the chosen plan, so a candidate that breaks one on its own can never
    be chosen (dropped by `_satisfies`, the epsilon bound and the exclusions here); among the remaining
    candidates of one hardware option (server, fabric, cap, site, purchase) only the lowest objective
    can be optimal. What is left is at most one candidate per hardware option."""
    ok = np.ones(len(cand), dtype=bool)
    if epsilon is not None:
        ok &= cand[epsilon[0]].to_numpy(dtype=float) <= epsilon[1]
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
    epsilon: tuple[str, float] | None = None,
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


def _plan_from_row(catalog: Catalog, req: PlanRequest, row: pd.Series, samples: float | None) -> Plan:
    """Re-evaluate the chosen candidate with the exact scalar path (planner.evaluate)."""
    est = evaluate(
        catalog,
        Configuration(
            model=req.model,
            server=str(row["server"]),
            nodes=int(row["nodes"]),
            fabric=str(row["fabric"]),
            power_cap=float(row["power_cap"]),
            global_batch=req.global_batch,
            samples=samples,
            precision=req.precision,
            site=str(row["site"]),
            purchase=row["purchase"],
            life_years=req.life_years,
        ),
    )
    upfront = est.capex_usd if est.purchase == "buy" else est.cost_usd
    return Plan(
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
        cost_usd=est.cost_usd,
        capex_usd=est.capex_usd,
        upfront_usd=upfront,
        carbon_kg=est.carbon_kg,
        throughput_samples_per_s=est.throughput_samples_per_s,
        mfu=est.mfu,
        bottleneck=est.bottleneck,
        estimate=est,
    )


PLAN_METRIC = {"energy": "facility_energy_kwh", "cost": "cost_usd", "carbon": "carbon_kg", "time": "time_to_train_h"}


def _plan_ok(p: Plan, lim: Limits, catalog: Catalog, req: PlanRequest) -> bool:
    """Is the re-evaluated plan feasible under the exact model?"""
    budget = p.upfront_usd if lim.budget_kind == "upfront" else p.cost_usd
    envelope = lim.power_kw if req.power_kw is not None else catalog.site(p.site).power_envelope_kw
    return (
        p.estimate.fits_memory
        and (lim.deadline_h is None or p.time_to_train_h <= lim.deadline_h * (1 + REL_TOL))
        and (lim.budget_usd is None or budget <= lim.budget_usd * (1 + REL_TOL))
        and (envelope is None or p.facility_power_kw <= envelope * (1 + REL_TOL))
        and (lim.max_nodes is None or p.nodes <= lim.max_nodes)
    )


def solve(request: PlanRequest | dict[str, Any], catalog: Catalog | None = None) -> PlanResult:
    """Find the optimal capacity plan for the request (see module docstring)."""
    req = request if isinstance(request, PlanRequest) else PlanRequest.model_validate(request)
    cat = catalog or load_catalog()
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    cand = candidates(cat, req)
    timings["evaluate_s"] = time.perf_counter() - t0
    lim = limits_for(cat, req)
    if not len(cand):
        return _infeasible(cat, req, cand, lim, timings, memory=True)
    ok = _satisfies(cand, lim) & _site_envelope_ok(cat, req, cand)
    pool = cand[ok]
    if not len(pool):
        return _infeasible(cat, req, cand, lim, timings)
    samples = cand.attrs.get("samples")
    exclude: list[int] = []
    report: SolverReport | None = None
    plan: Plan | None = None
    t1 = time.perf_counter()
    while True:
        pos, report = _mip(pool, lim, OBJECTIVE_COLUMNS[req.objective], req.solver, exclude=exclude)
        if pos is None:
            break
        p = _plan_from_row(cat, req, pool.iloc[pos], samples)
        if _plan_ok(p, lim, cat, req):
            plan = p
            chosen = pool.iloc[pos]
            break
        exclude.append(pos)  # never return a plan the exact model rejects: cut it off and re-solve
    timings["solve_s"] = time.perf_counter() - t1
    if plan is None or report is None:
        if report is not None and report.status == SolverStatus.NO_SOLUTION:
            raise PlannerInputError(
                f"HiGHS found no plan within the time limit ({req.solver.time_limit_s} s); raise --time-limit"
            )
        return _infeasible(cat, req, cand, lim, timings)
    t2 = time.perf_counter()
    refined, gap = _refine(cat, req, lim, plan, samples)
    timings["refine_s"] = time.perf_counter() - t2
    t3 = time.perf_counter()
    alts = _alternatives(cat, req, pool, lim, chosen, samples)
    timings["alternatives_s"] = time.perf_counter() - t3
    binding = _binding(cand, lim, req, chosen, cat)
    status = "optimal" if report.status == SolverStatus.OPTIMAL else "time_limit"
    value = float(getattr(refined, PLAN_METRIC[req.objective]))
    return PlanResult(
        request=req,
        status=status,
        plan=refined,
        objective=req.objective,
        objective_value=value,
        binding=binding,
        solver=report,
        alternatives=alts,
        explanation=None,
        ladder_gap=gap,
        timings_s=timings,
    )


def _refine(cat: Catalog, req: PlanRequest, lim: Limits, plan: Plan, samples: float | None) -> tuple[Plan, float]:
    """Search the integer node counts between the chosen count's ladder neighbours (exact model)."""
    ladder = node_ladder(relaxation_horizon(req.max_nodes))
    i = ladder.index(plan.nodes)
    lo = ladder[i - 1] + 1 if i > 0 else plan.nodes
    hi = min(ladder[i + 1] - 1 if i + 1 < len(ladder) else plan.nodes, req.max_nodes)
    between = [n for n in range(lo, hi + 1) if n != plan.nodes]
    if not between:
        return plan, 0.0
    df = evaluate_space(
        cat,
        req.model,
        space=pd.DataFrame(
            {"server": plan.server, "fabric": plan.fabric, "power_cap": plan.power_cap, "nodes": between}
        ),
        site=plan.site,
        purchase=plan.purchase,
        work=Work(samples, req.global_batch, req.precision),
        life_years=req.life_years,
    )
    metric = PLAN_METRIC[req.objective]
    best, best_val = plan, float(getattr(plan, metric))
    df = df[df["feasible"]].sort_values(OBJECTIVE_COLUMNS[req.objective])
    for _, row in df.iterrows():
        if float(row[OBJECTIVE_COLUMNS[req.objective]]) >= best_val * (1 - 1e-12):
            break
        p = _plan_from_row(cat, req, row, samples)
        if _plan_ok(p, lim, cat, req):
            best, best_val = p, float(getattr(p, metric))
            break
    base = float(getattr(plan, metric))
    return best, (base - best_val) / base if base else 0.0


def _alternatives(
    cat: Catalog, req: PlanRequest, pool: pd.DataFrame, lim: Limits, chosen: pd.Series, samples: float | None
) -> list[Plan]:
    """Best plan per other GPU type, then next-best distinct hardware choices (no-good cuts)."""
    if req.alternatives == 0:
        return []
    out: list[Plan] = []
    for gpu in sorted(set(pool["gpu"]) - {chosen["gpu"]}):
        sub = pool[pool["gpu"] == gpu]
        pos, _ = _mip(sub, lim, OBJECTIVE_COLUMNS[req.objective], req.solver)
        if pos is not None:
            out.append(_plan_from_row(cat, req, sub.iloc[pos], samples))
    same = pool.reset_index(drop=True)
    hw = pd.Series(
        [
            f"{a}|{b}|{c}|{d}|{e}"
            for a, b, c, d, e in zip(
                same["server"], same["fabric"], same["power_cap"], same["site"], same["purchase"], strict=True
            )
        ]
    )
    taken = {f"{chosen['server']}|{chosen['fabric']}|{chosen['power_cap']}|{chosen['site']}|{chosen['purchase']}"}
    for _ in range(req.alternatives):
        excl = np.flatnonzero(hw.isin(taken).to_numpy()).tolist()
        if len(excl) == len(same):
            break
        pos, _rep = _mip(same, lim, OBJECTIVE_COLUMNS[req.objective], req.solver, exclude=excl)
        if pos is None:
            break
        taken.add(hw.iloc[pos])
        out.append(_plan_from_row(cat, req, same.iloc[pos], samples))
    return out


def _binding(cand: pd.DataFrame, lim: Limits, req: PlanRequest, chosen: pd.Series, cat: Catalog) -> list[str]:
    """A constraint binds when dropping it alone admits a strictly better plan (exact: the MIP is a selection)."""
    col = OBJECTIVE_COLUMNS[req.objective]
    best = float(chosen[col])
    out = []
    env_ok = _site_envelope_ok(cat, req, cand)
    for name in ("deadline", "budget", "power", "nodes", "rack"):
        ok = _satisfies(cand, lim, skip=name) & (env_ok if name != "power" else True)
        if ok.any() and float(cand.loc[ok, col].min()) < best * (1 - 1e-9):
            out.append(name)
    return out


# ------------------------------------------------------------------------------------------ infeasibility
RELAX = {  # requirement -> (objective column to minimise without it, unit, limit attribute, scale to user unit)
    "deadline": ("time_to_train_h", "days", "deadline_h", 1 / 24.0),
    "budget": (None, "USD", "budget_usd", 1.0),
    "power": ("facility_power_kw", "kW", "power_kw", 1.0),
    "nodes": ("nodes", "nodes", "max_nodes", 1.0),
}


def _infeasible(
    cat: Catalog, req: PlanRequest, cand: pd.DataFrame, lim: Limits, timings: dict[str, float], memory: bool = False
) -> PlanResult:
    if memory or not len(cand):
        wl = cat.workload(req.model)
        msg = (
            f"'{wl.id}' fits no allowed server: no parallel layout fits GPU memory on the allowed GPUs (or none "
            "can be bought/rented as asked). Allow GPUs with more memory, more nodes (--max-nodes), or "
            "--purchase either."
        )
        return _no_plan(req, msg, [], timings)
    relax: list[Relaxation] = []
    env_ok = _site_envelope_ok(cat, req, cand)
    for name, (col, unit, attr, scale) in RELAX.items():
        given = getattr(lim, attr)
        if given is None:
            continue
        if name == "budget":
            col = lim.budget_column()
        ok = _satisfies(cand, lim, skip=name) & (env_ok if name != "power" else True)
        pool = cand[ok]
        if not len(pool):
            continue
        obj_col = col or ""
        pos, _ = _mip(pool, Limits(**{**lim.__dict__, attr: None}), obj_col, req.solver)
        if pos is None:
            continue
        needed = float(pool.iloc[pos][obj_col]) * scale
        given_u = float(given) * scale
        if name == "deadline":
            message = f"a deadline of at least {needed:,.3g} days (you gave {given_u:,.3g})"
        elif name == "budget":
            message = f"a budget of at least ${needed:,.0f} (you gave ${given_u:,.0f})"
        elif name == "power":
            message = f"{needed - given_u:,.0f} kW more power: at least {needed:,.0f} kW (you gave {given_u:,.0f})"
        else:
            message = f"at least {needed:,.0f} nodes (you allowed {given_u:,.0f})"
        relax.append(Relaxation(requirement=name, given=given_u, needed=needed, unit=unit, message=message))
    if relax:
        msg = "No plan meets all requirements. It needs " + ", or ".join(r.message for r in relax) + "."
    else:
        msg = (
            "No plan meets all requirements, and relaxing any single one is not enough: relax several "
            "(deadline, budget, power) or allow more hardware."
        )
    return _no_plan(req, msg, relax, timings)


def _no_plan(req: PlanRequest, msg: str, relax: list[Relaxation], timings: dict[str, float]) -> PlanResult:
    return PlanResult(
        request=req,
        status="infeasible",
        plan=None,
        objective=req.objective,
        objective_value=None,
        binding=[],
        solver=None,
        alternatives=[],
        explanation=Explanation(message=msg, relaxations=relax),
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

    Every point is an optimal plan of its epsilon problem (ties in x broken towards smaller y)."""
    if x == y:
        raise PlannerInputError("pareto needs two different objectives")
    if points < 2:
        raise PlannerInputError("pareto needs at least 2 points")
    req = request if isinstance(request, PlanRequest) else PlanRequest.model_validate(request)
    cat = catalog or load_catalog()
    cand = candidates(cat, req)
    lim = limits_for(cat, req)
    pool = cand[_satisfies(cand, lim) & _site_envelope_ok(cat, req, cand)].reset_index(drop=True) if len(cand) else cand
    if not len(pool):
        res = solve(req, cat)
        raise PlannerInputError(res.explanation.message if res.explanation else "no feasible plan")
    xc, yc = OBJECTIVE_COLUMNS[x], OBJECTIVE_COLUMNS[y]
    # tie-break: x + tiny * y so every point is efficient, not just weakly efficient
    pool = pool.copy()
    scale = float(pool[xc].abs().max()) / max(float(pool[yc].abs().max()), 1e-30)
    pool["_xy"] = pool[xc] + 1e-7 * scale * pool[yc]
    pool["_yx"] = pool[yc] + 1e-7 / max(scale, 1e-30) * pool[xc]
    lo_pos, _ = _mip(pool, lim, "_yx", req.solver)
    hi_pos, _ = _mip(pool, lim, "_xy", req.solver)
    if lo_pos is None or hi_pos is None:
        raise PlannerInputError("the solver found no plan for the end points of the front; raise the time limit")
    y_min, y_max = float(pool.iloc[lo_pos][yc]), float(pool.iloc[hi_pos][yc])
    rows = []
    for eps in np.linspace(y_max, y_min, points):
        pos, rep = _mip(pool, lim, "_xy", req.solver, epsilon=(yc, float(eps) * (1 + 1e-12)))
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
            }
        )
    front = pd.DataFrame(rows).drop_duplicates(subset=[x, y]).reset_index(drop=True)
    return front
