"""An independent brute force over the whole decision space of a small single-job request, one configuration at a
time through `planner.evaluate` (the exact model's scalar path), checked against `planner.plan.solve`.

Written only from what the project states as its contract -- the README ("Using it": the request's fields, the
allowed-hardware patterns, precisions, owned servers and their service life, the limits and objectives),
docs/ARCHITECTURE.md ("How a plan flows": the space a plan is chosen from, the exact re-check of limits) and the
docstrings of planner/plan/ and planner/plan/formulation.py (the formulation and its limits) -- not from the
optimizer's scan, reductions, pricing tables or MIP, and not from tests/brute.py (which enumerates through the
vectorized `evaluate_space` / `price_space` and has no owned servers, framework profiles or named precisions).

The space (README "Using it", checks.PlanRequest): every allowed GPU server (``gpus`` as ids, families or the
start of ids, case-insensitive, a prefix not a substring; ``servers``; ``fabrics``), each of its fabrics that the
request allows, each requested power cap inside the GPU's configurable range, each allowed site, buy and/or rent,
and every node count 1..max_nodes. A configuration is a candidate when it can be had (buy: the server has a price;
rent: it has a rent, and a rented server whose power limit is not settable runs at 1.0 only), `evaluate` accepts
it (a valid layout within the workload's batch limit) and it fits GPU memory; a bought run must end within the
servers' ``life_years``.

Each candidate's figures are `evaluate`'s, with the owned-server credit of the README applied independently: a
bought plan of n nodes on the server and fabric the owned ones are cabled to runs on k = min(n, O) of them (O: the
owned nodes still in service at the end of the run, age + T / 8766 <= retirement age, default life_years) and pays
capex(n) - capex(k) up front and its amortized share (x T / (life x 8766 h)) in the run cost; capex(k) is
`evaluate`'s own capex of k nodes.

The limits (plan.limits.within): deadline, budget (up-front: capex when buying, the whole rent when renting; total:
the run cost), the facility power envelope (the request's, else the plan's site's) within a relative 1e-9; node
count and rack units exact. The objective: facility energy, run cost, carbon or time.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from planner import Configuration, Estimate, Layout, PlannerInputError, evaluate
from planner.data import Catalog, Gpu, Server
from planner.plan import Plan, PlanRequest, PlanResult

HOURS_PER_YEAR = 8766.0  # README: age + run time / 8766 h <= retirement age
REL = 1e-9  # plan.limits.within: a relative 1e-9 for rounding on the continuous limits
OBJECTIVE = {"energy": "facility_energy_kwh", "cost": "cost_usd", "carbon": "carbon_kg", "time": "time_to_train_h"}


# ------------------------------------------------------------------------------------------ the allowed space
def named_gpus(cat: Catalog, pattern: str) -> set[str]:
    """README: ``--gpus`` takes GPU ids, families or the start of ids (a prefix, not a substring); the first of
    those three readings that names anything."""
    p = pattern.lower()
    exact = {g for g in cat.gpus if g.lower() == p}
    if exact:
        return exact
    family = {g for g, x in cat.gpus.items() if x.family.lower() == p}
    if family:
        return family
    return {g for g in cat.gpus if g.lower().startswith(p)}


def allowed(cat: Catalog, r: PlanRequest) -> list[Server]:
    """GPU servers the request allows (gpus, servers, fabrics: a server none of whose fabrics is allowed is out)."""
    gpus = None if r.gpus is None else set().union(*(named_gpus(cat, p) for p in r.gpus))
    out = []
    for s in cat.servers.values():
        if s.gpu is None or s.gpus_per_node < 1:
            continue
        if gpus is not None and s.gpu not in gpus:
            continue
        if r.servers is not None and s.id not in r.servers:
            continue
        if r.fabrics is not None and not set(s.fabrics) & set(r.fabrics):
            continue
        out.append(s)
    return out


def has(gpu: Gpu, precision: str) -> bool:
    """README: fp4 on the GPUs with an FP4 peak, fp8 on those with an FP8 peak; every GPU has the others."""
    return {"fp8": gpu.fp8_tflops, "fp4": gpu.fp4_tflops}.get(precision, 1.0) is not None


def precision_on(gpu: Gpu, precision: str | None) -> str | None:
    """What to ask `evaluate` for on this GPU: the request's precision, else the next one the GPU has (README:
    'fp4 in fp8, fp8 in bf16'); None (the workload's own, which evaluate itself lets fall back)."""
    while precision is not None and not has(gpu, precision):
        precision = {"fp4": "fp8", "fp8": "bf16"}[precision]
    return precision


def expected_input_error(cat: Catalog, r: PlanRequest) -> str | None:
    """Why the request is bad input by the README (None if it is not): nothing allowed, fp8/fp4 by name where
    no allowed GPU has it, no allowed server to be had as the purchase mode asks (bought: a price; rented: a
    rent), caps no allowed GPU can be set to, or caps without 1.0 where every way left is a rent offer that runs
    at full power (power_cap_settable: false)."""
    servers = allowed(cat, r)
    if not servers:
        return "no server allowed"
    if r.precision in ("fp8", "fp4") and not any(has(cat.gpu(str(s.gpu)), r.precision) for s in servers):
        return f"no allowed GPU has {r.precision}"
    buyable = any(s.price_usd is not None for s in servers)
    rentable = any(s.rent_usd_per_month is not None for s in servers)
    if (r.purchase == "buy" and not buyable) or (r.purchase == "rent" and not rentable):
        return f"no allowed server can be had as '{r.purchase}' asks"

    def in_range(s: Server, c: float) -> bool:
        g = cat.gpu(str(s.gpu))
        return g.min_power_limit_w / g.tdp_w - 1e-9 <= c <= g.max_power_limit_w / g.tdp_w + 1e-9

    if not any(in_range(s, c) for s in servers for c in r.power_caps):
        return "no allowed GPU can be set to any of the caps"
    can_buy = r.purchase != "rent" and any(
        s.price_usd is not None and in_range(s, c) for s in servers for c in r.power_caps
    )
    rented = [s for s in servers if s.rent_usd_per_month is not None] if r.purchase != "buy" else []
    can_rent = any(
        (in_range(s, c) if s.power_cap_settable else abs(c - 1.0) <= 1e-9) for s in rented for c in r.power_caps
    )
    if not can_buy and not can_rent and any(not s.power_cap_settable for s in rented):
        return "rented servers run at full power and the caps leave out 1.0"
    return None


def samples_of(cat: Catalog, r: PlanRequest) -> float | None:
    wl = cat.workload(r.model)
    if r.tokens is not None:
        assert wl.sequence_length is not None
        return r.tokens / wl.sequence_length
    if r.epochs is not None:
        assert wl.dataset_samples is not None
        return r.epochs * wl.dataset_samples
    return r.samples


def with_framework(cat: Catalog, r: PlanRequest) -> Catalog:
    """The workload run under the request's framework profile (README: ``--framework ID``)."""
    if r.framework is None:
        return cat
    wl = cat.workload(r.model)
    return cat.replace(workloads={**cat.workloads, wl.id: wl.model_copy(update={"framework": r.framework})})


# ------------------------------------------------------------------------------------------- candidates
@dataclass(frozen=True)
class Candidate:
    server: str
    gpu: str
    fabric: str
    cap: float
    site: str
    purchase: str
    nodes: int
    precision: str | None  # what evaluate was asked for
    est: Estimate
    owned_used: int
    upfront_usd: float
    cost_usd: float
    rack_units: int
    envelope_kw: float

    @property
    def option(self) -> tuple[str, str, float, str, str]:
        return (self.server, self.fabric, self.cap, self.site, self.purchase)

    def value(self, objective: str) -> float:
        if objective == "cost":
            return self.cost_usd
        return float(getattr(self.est, OBJECTIVE[objective]))


class Brute:
    """Enumerates candidates through `planner.evaluate`, caching each configuration's estimate (requests drawn
    over the same workload share most of their space)."""

    def __init__(self, cat: Catalog) -> None:
        self.base = cat
        self._cats: dict[tuple[str, str | None], Catalog] = {}
        self._est: dict[tuple[Any, ...], Estimate | None] = {}
        self.evaluations = 0

    def catalog(self, r: PlanRequest) -> Catalog:
        key = (r.model, r.framework)
        if key not in self._cats:
            self._cats[key] = with_framework(self.base, r)
        return self._cats[key]

    def estimate(self, r: PlanRequest, cfg: Configuration) -> Estimate | None:
        """`evaluate` of one configuration; None where the model offers no valid layout (bad input to evaluate)."""
        key = (r.framework, cfg.model_dump_json())
        if key not in self._est:
            self.evaluations += 1
            try:
                self._est[key] = evaluate(self.catalog(r), cfg)
            except PlannerInputError:
                self._est[key] = None
        return self._est[key]

    def config(
        self, r: PlanRequest, server: Server, fabric: str, cap: float, nodes: int, site: str, purchase: str
    ) -> Configuration:
        return Configuration(
            model=r.model,
            server=server.id,
            nodes=nodes,
            fabric=fabric,
            power_cap=cap,
            global_batch=r.global_batch,
            samples=samples_of(self.base, r),
            precision=precision_on(self.base.gpu(str(server.gpu)), r.precision),
            site=site,
            purchase=purchase,
            life_years=r.life_years,
        )

    def capex(self, r: PlanRequest, server: Server, fabric: str, k: int) -> float:
        """capex of k nodes of ``server`` on ``fabric`` (servers, NICs, switches, cables): evaluate's, of any
        configuration of them that the model accepts (capex does not depend on the workload or layout)."""
        if k == 0:
            return 0.0
        site = r.sites[0]
        cfg = self.config(r, server, fabric, 1.0, k, site, "buy")
        est = self.estimate(r, cfg)
        if est is not None:
            return est.capex_usd
        # the request's workload has no layout at k nodes: a pure data-parallel layout of one sample per GPU
        gpus = k * server.gpus_per_node
        cfg = cfg.model_copy(update={"global_batch": gpus, "layout": Layout()})
        try:
            return evaluate(self.catalog(r), cfg).capex_usd
        except PlannerInputError:
            pass
        for wl in sorted(self.base.workloads):
            try:
                return evaluate(self.base, cfg.model_copy(update={"model": wl, "samples": None})).capex_usd
            except PlannerInputError:
                continue
        raise AssertionError(f"no configuration of {k} x {server.id} on {fabric} evaluates: cannot price it")

    def owned_in_service(self, r: PlanRequest, server: str, fabric: str, hours: float) -> int:
        n = 0
        for o in r.owned:
            cabled = o.fabric or self.base.server(o.server).fabrics[0]
            end = o.retire_at_age_years if o.retire_at_age_years is not None else r.life_years
            if o.server == server and cabled == fabric and o.age_years + hours / HOURS_PER_YEAR <= end:
                n += o.count
        return n

    def candidate(
        self, r: PlanRequest, server: Server, fabric: str, cap: float, nodes: int, site: str, purchase: str
    ) -> Candidate | None:
        """The configuration as a plan, or None when it is not one (unavailable, no layout, does not fit memory,
        a bought run outliving its servers)."""
        if purchase == "buy" and server.price_usd is None:
            return None
        if purchase == "rent" and (
            server.rent_usd_per_month is None or (not server.power_cap_settable and cap < 1 - 1e-9)
        ):
            return None
        cfg = self.config(r, server, fabric, cap, nodes, site, purchase)
        est = self.estimate(r, cfg)
        if est is None or not est.fits_memory:
            return None
        if not (math.isfinite(est.cost_usd) and math.isfinite(est.time_to_train_h)):
            return None
        hours = est.time_to_train_h
        if purchase == "buy" and hours > r.life_years * HOURS_PER_YEAR * (1 + REL):
            return None
        used, credit = 0, 0.0
        if purchase == "buy" and r.owned:
            used = min(nodes, self.owned_in_service(r, server.id, fabric, hours))
            credit = self.capex(r, server, fabric, used) if used else 0.0
        upfront = est.capex_usd - credit if purchase == "buy" else est.cost_usd
        cost = est.cost_usd - credit * hours / (r.life_years * HOURS_PER_YEAR)
        envelope = r.power_kw if r.power_kw is not None else self.base.site(site).power_envelope_kw
        return Candidate(
            server=server.id,
            gpu=str(server.gpu),
            fabric=fabric,
            cap=cap,
            site=site,
            purchase=purchase,
            nodes=nodes,
            precision=cfg.precision,
            est=est,
            owned_used=used,
            upfront_usd=upfront,
            cost_usd=cost,
            rack_units=nodes * server.rack_units,
            envelope_kw=envelope,
        )

    def candidates(self, r: PlanRequest) -> list[Candidate]:
        """Every plan of the request's space (limits not applied), every node count 1..max_nodes."""
        out = []
        purchases = ["buy", "rent"] if r.purchase == "either" else [r.purchase]
        for server in allowed(self.base, r):
            fabrics = [f for f in server.fabrics if r.fabrics is None or f in r.fabrics]
            caps = [c for c in r.power_caps if _cap_ok(self.base, server, c)]
            for fabric in fabrics:
                for cap in caps:
                    for site in r.sites:
                        for purchase in purchases:
                            for n in range(1, r.max_nodes + 1):
                                c = self.candidate(r, server, fabric, cap, n, site, purchase)
                                if c is not None:
                                    out.append(c)
        return out


def _cap_ok(cat: Catalog, server: Server, cap: float) -> bool:
    """A cap inside the GPU's configurable range (min..max power limit over TDP)."""
    g = cat.gpu(str(server.gpu))
    return g.min_power_limit_w / g.tdp_w - 1e-9 <= cap <= g.max_power_limit_w / g.tdp_w + 1e-9


# ------------------------------------------------------------------------------------------- the limits
LIMITS = ("deadline", "budget", "power", "nodes", "rack")


def limit_value(c: Candidate, r: PlanRequest, name: str) -> float:
    """The candidate's figure that limit ``name`` bounds (deadline in days, as the relaxations state it)."""
    return {
        "deadline": c.est.time_to_train_h / 24.0,
        "budget": c.upfront_usd if r.budget_kind == "upfront" else c.cost_usd,
        "power": c.est.facility_power_kw,
        "nodes": float(c.nodes),
        "rack": float(c.rack_units),
    }[name]


def limit_bound(c: Candidate, r: PlanRequest, name: str) -> float | None:
    return {
        "deadline": r.deadline_days,
        "budget": r.budget_usd,
        "power": c.envelope_kw,
        "nodes": float(r.max_nodes),
        "rack": None if r.max_rack_units is None else float(r.max_rack_units),
    }[name]


def violations(
    c: Candidate, r: PlanRequest, skip: str | None = None, relax: dict[str, float] | None = None
) -> list[str]:
    """The limits candidate ``c`` breaks (``skip``: one left out; ``relax``: bounds raised by these steps, in the
    limit's unit)."""
    bad = []
    for name in LIMITS:
        bound = limit_bound(c, r, name)
        if name == skip or bound is None:
            continue
        bound += (relax or {}).get(name, 0.0)
        v = limit_value(c, r, name)
        if not (v <= bound if name in ("nodes", "rack") else v <= bound * (1 + REL)):
            bad.append(name)
    return bad


def feasible(cands: Iterable[Candidate], r: PlanRequest) -> list[Candidate]:
    return [c for c in cands if not violations(c, r)]


def ranked_options(cands: list[Candidate], objective: str) -> list[Candidate]:
    """The best candidate of each hardware option (server, fabric, cap, site, purchase), best first, less each one
    that repeats a candidate ranked before it under another fabric or power cap: the same server, site, purchase and
    node count, and every figure of its estimate but the cap's, and its money, owned nodes and rack units equal
    (relative 1e-9) -- one hardware choice, listed once among the alternatives (README: one node uses no fabric; a
    cap above the GPUs' draw under load does not bind). Read from the figures, not from the node count or the cap:
    where the fabric or the cap changes one (owned servers cabled to one fabric credit a one-node plan on it only),
    both stay."""
    best: dict[tuple[str, str, float, str, str], Candidate] = {}
    for c in cands:
        b = best.get(c.option)
        if b is None or c.value(objective) < b.value(objective):
            best[c.option] = c
    out: list[Candidate] = []
    seen: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for c in sorted(best.values(), key=lambda c: c.value(objective)):
        key = (c.server, c.site, c.purchase, c.nodes)
        figures = {
            **c.est.model_dump(exclude={"fabric", "power_cap", "power_cap_w"}),
            "owned_used": c.owned_used,
            "upfront_usd": c.upfront_usd,
            "cost_usd": c.cost_usd,
            "rack_units": c.rack_units,
        }
        if any(_equal_figures(figures, f) for f in seen.get(key, [])):
            continue
        seen.setdefault(key, []).append(figures)
        out.append(c)
    return out


def _equal_figures(x: Any, y: Any) -> bool:
    """Equal figures: dicts key by key, floats within a relative 1e-9 (nan equal to nan), the rest by ``==``."""
    if isinstance(x, dict) and isinstance(y, dict):
        return x.keys() == y.keys() and all(_equal_figures(x[k], y[k]) for k in x)
    if isinstance(x, float) and isinstance(y, float):
        return (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=1e-9, abs_tol=0.0)
    return bool(x == y)


# ------------------------------------------------------------------------------------------- the comparison
@dataclass
class Verdict:
    brute_feasible: bool
    solve_feasible: bool
    brute_value: float | None = None
    solve_value: float | None = None
    candidates: int = 0
    problems: list[str] = field(default_factory=list)


def close(a: float, b: float, rel: float = 1e-9) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)


def plan_problems(b: Brute, r: PlanRequest, p: Plan, tag: str) -> list[str]:
    """Re-evaluate a returned plan with `evaluate` and check it against the request: allowed hardware, every
    limit, the figures it reports, the owned nodes it says it runs on, the precision it computes in."""
    out: list[str] = []
    srv = {s.id: s for s in allowed(b.base, r)}.get(p.server)
    purchases = ["buy", "rent"] if r.purchase == "either" else [r.purchase]
    if srv is None:
        return [f"{tag}: server {p.server} is not allowed"]
    if (r.fabrics is not None and p.fabric not in r.fabrics) or p.fabric not in srv.fabrics:
        out.append(f"{tag}: fabric {p.fabric} not allowed")
    if not any(math.isclose(p.power_cap, c) for c in r.power_caps):
        out.append(f"{tag}: cap {p.power_cap} not requested")
    if p.site not in r.sites or p.purchase not in purchases:
        out.append(f"{tag}: site/purchase {p.site}/{p.purchase} not allowed")
    if not 1 <= p.nodes <= r.max_nodes:
        out.append(f"{tag}: {p.nodes} nodes outside 1..{r.max_nodes}")
        return out
    c = b.candidate(r, srv, p.fabric, p.power_cap, p.nodes, p.site, p.purchase)
    if c is None:
        return [*out, f"{tag}: {p.nodes} x {p.server}/{p.fabric}/{p.power_cap}/{p.purchase} is not a plan"]
    bad = violations(c, r)
    if bad:
        out.append(f"{tag}: {p.nodes} x {p.server}/{p.fabric} cap {p.power_cap} breaks {bad}")
    est = c.est
    reported = {
        "time_to_train_h": (p.time_to_train_h, est.time_to_train_h),
        "facility_energy_kwh": (p.facility_energy_kwh, est.facility_energy_kwh),
        "facility_power_kw": (p.facility_power_kw, est.facility_power_kw),
        "carbon_kg": (p.carbon_kg, est.carbon_kg),
        "cost_usd": (p.cost_usd, c.cost_usd),
        "upfront_usd": (p.upfront_usd, c.upfront_usd),
        "rack_units": (p.rack_units, c.rack_units),
        "gpus": (p.gpus, est.gpus),
        "switches": (p.switches, est.switches),
        "owned_nodes": (p.owned_nodes, c.owned_used),
        "energy_kwh": (p.energy_kwh, est.energy_kwh),
        "power_kw": (p.power_kw, est.power_kw),
        "power_cap_w": (p.power_cap_w, est.power_cap_w),
        "time_to_train_days": (p.time_to_train_days, est.time_to_train_h / 24.0),
        "throughput_samples_per_s": (p.throughput_samples_per_s, est.throughput_samples_per_s),
        "mfu": (p.mfu, est.mfu),
        "global_batch": (p.global_batch, est.global_batch),
    }
    for name, (got, want) in reported.items():
        if not close(float(got), float(want), 1e-9):
            out.append(f"{tag}: reports {name} {got}, evaluate gives {want}")
    if p.estimate.precision != est.precision:
        out.append(f"{tag}: computes in {p.estimate.precision}, evaluate in {est.precision}")
    if (p.gpu, p.layout) != (est.gpu, est.layout):
        out.append(f"{tag}: reports {p.gpu} / {p.layout}, evaluate gives {est.gpu} / {est.layout}")
    return out


def check(b: Brute, r: PlanRequest, res: PlanResult) -> Verdict:
    """Compare ``solve``'s result with the brute-force optimum of the same request."""
    cands = b.candidates(r)
    ok = feasible(cands, r)
    v = Verdict(brute_feasible=bool(ok), solve_feasible=res.plan is not None, candidates=len(cands))
    if ok:
        v.brute_value = min(c.value(r.objective) for c in ok)
    v.solve_value = res.objective_value
    if v.brute_feasible != v.solve_feasible:
        if ok:
            best = min(ok, key=lambda c: c.value(r.objective))
            v.problems.append(f"brute force has a plan ({describe(best, r)}), solve: {res.status}")
        else:
            v.problems.append(
                f"solve has a plan ({res.plan and res.plan.nodes} x {res.plan and res.plan.server}) "
                "brute force has none"
            )
        return v
    if res.plan is None:
        if res.status != "infeasible":
            v.problems.append(f"no plan but status {res.status}")
        v.problems += relaxation_problems(r, res, cands)
        return v
    if res.status != "optimal":
        v.problems.append(f"status {res.status}")
    assert v.brute_value is not None
    if res.objective_value is None or not close(res.objective_value, v.brute_value):
        best = min(ok, key=lambda c: c.value(r.objective))
        v.problems.append(
            f"objective {res.objective_value} vs brute force {v.brute_value} ({describe(best, r)}); "
            f"solve chose {res.plan.nodes} x {res.plan.server}/{res.plan.fabric} cap {res.plan.power_cap} "
            f"{res.plan.site}/{res.plan.purchase}"
        )
    v.problems += plan_problems(b, r, res.plan, "plan")
    if len(res.to_frame()) != 1 + len(res.alternatives) or not res.summary():
        v.problems.append("to_frame / summary do not show the plan and its alternatives")
    own = _plan_value(res.plan, r.objective)
    if res.objective_value is not None and not close(own, res.objective_value):
        v.problems.append(f"plan's own {r.objective} {own} != objective_value {res.objective_value}")
    # alternatives: each a checked plan of a distinct hardware option; the first ones the next-best options in
    # objective order (plan.solve.alternatives), the rest the best plan of each GPU type not listed yet
    ranked = ranked_options(ok, r.objective)
    plans = [res.plan, *res.alternatives]
    keys = [(p.server, p.fabric, p.power_cap, p.site, p.purchase) for p in plans]
    if len(set(keys)) != len(keys):
        v.problems.append(f"alternatives repeat a hardware option: {keys}")
    for i, p in enumerate(res.alternatives):
        v.problems += plan_problems(b, r, p, f"alternative {i + 1}")
    head = [_plan_value(p, r.objective) for p in plans[: r.alternatives + 1]]
    want = [c.value(r.objective) for c in ranked[: len(head)]]
    if len(head) != len(want) or not all(close(x, y) for x, y in zip(head, want, strict=True)):
        v.problems.append(f"plan + first alternatives {head} != brute force's best options {want}")
    if len(ranked) > r.alternatives + 1 and len(res.alternatives) < r.alternatives:
        v.problems.append(f"{len(res.alternatives)} alternatives where {r.alternatives} options exist")
    for p in plans[r.alternatives + 1 :]:
        best_gpu = min(c.value(r.objective) for c in ok if c.gpu == p.gpu)
        if not close(_plan_value(p, r.objective), best_gpu):
            v.problems.append(f"alternative on {p.gpu} {_plan_value(p, r.objective)} is not its best {best_gpu}")
    missing = {c.gpu for c in ok} - {p.gpu for p in plans}
    if missing and r.alternatives > 0:  # alternatives=0 asks for the plan alone
        v.problems.append(f"no plan shown for GPU types {sorted(missing)}")
    owned_total = sum(o.count for o in r.owned)
    if res.plan.owned_nodes + res.plan.owned_unused_nodes != owned_total:
        v.problems.append(
            f"owned nodes used {res.plan.owned_nodes} + unused {res.plan.owned_unused_nodes} != owned {owned_total}"
        )
    v.problems += binding_problems(b, r, res, cands, v.brute_value)
    return v


def binding_problems(b: Brute, r: PlanRequest, res: PlanResult, cands: list[Candidate], best: float) -> list[str]:
    """PlanResult.binding: the limits whose relaxation alone by the binding step (1%, at least one node / rack
    unit) admits a strictly better plan. Asserted only where the answer does not hang on rounding: a relaxed
    optimum better by more than 1e-6 must be listed, one not better by 1e-9 must not; the node and rack steps
    are taken both as floor and ceil of 1% (at least 1) and only an answer both agree on is asserted."""
    out = []
    step = res.binding_step
    wider: dict[int, list[Candidate]] = {}
    for name in LIMITS:
        given = {"deadline": r.deadline_days, "budget": r.budget_usd, "power": 1.0, "nodes": 1.0,
                 "rack": r.max_rack_units}[name]  # fmt: skip
        if given is None:
            continue
        verdicts: set[bool | None] = set()
        if name in ("nodes", "rack"):
            n = float(r.max_nodes if name == "nodes" else r.max_rack_units or 0)
            steps = {max(1.0, math.floor(n * step)), max(1.0, math.ceil(n * step))}
        else:
            steps = {0.0}
        for k in steps:
            pool = cands
            if name == "nodes":
                if int(k) not in wider:
                    wider[int(k)] = b.candidates(r.model_copy(update={"max_nodes": r.max_nodes + int(k)}))
                pool = wider[int(k)]
            vals = []
            for c in pool:
                if name in ("nodes", "rack"):
                    bad = violations(c, r, relax={name: k})
                else:
                    bound = limit_bound(c, r, name)
                    assert bound is not None
                    bad = violations(c, r, skip=name)
                    if not limit_value(c, r, name) <= bound * (1 + step) * (1 + REL):
                        bad.append(name)
                if not bad:
                    vals.append(c.value(r.objective))
            better = min(vals) if vals else math.inf
            if better < best * (1 - 1e-6) - 1e-12:
                verdicts.add(True)
            elif not better < best * (1 - 1e-9) - 1e-12:
                verdicts.add(False)
            else:
                verdicts.add(None)
        if len(verdicts) != 1 or None in verdicts:
            continue
        binds = verdicts.pop()
        if binds and name not in res.binding:
            out.append(f"{name} binds (a {step:.0%} relaxation admits a better plan) but binding = {res.binding}")
        if not binds and name in res.binding:
            out.append(f"{name} listed as binding but relaxing it by {step:.0%} admits no better plan")
    return out


def relaxation_problems(r: PlanRequest, res: PlanResult, cands: list[Candidate]) -> list[str]:
    """An infeasible request: each requirement's stated smallest relaxation (the others kept) is brute force's
    threshold over the same candidates (node counts up to max_nodes, so the node limit itself is not checked):
    at least it (a stated minimum must suffice), at most 0.1% above (rounded up for display); a requirement
    brute force can relax has its relaxation stated, one it cannot has none."""
    if res.explanation is None:
        return ["infeasible without an explanation"]
    stated = {x.requirement: x for x in res.explanation.relaxations}
    out = []
    given = {"deadline": r.deadline_days, "budget": r.budget_usd, "power": r.power_kw, "rack": r.max_rack_units}
    for name, g in given.items():
        if g is None:
            continue
        vals = [limit_value(c, r, name) for c in cands if not violations(c, r, skip=name)]
        need = min(vals) if vals else None
        said = stated.get(name)
        if need is None and said is None:
            continue
        if need is None or said is None:
            out.append(f"relaxation of {name}: stated {None if said is None else said.needed}, brute force {need}")
        elif not need * (1 - 1e-9) - 1e-12 <= said.needed <= need * (1 + 1e-3) + 1e-9:
            out.append(f"relaxation of {name}: stated {said.needed}, brute force {need}")
    return out


def _plan_value(p: Plan, objective: str) -> float:
    return float(getattr(p, OBJECTIVE[objective]))


def describe(c: Candidate, r: PlanRequest) -> str:
    return (
        f"{c.nodes} x {c.server}/{c.fabric} cap {c.cap} {c.site}/{c.purchase}: {r.objective} "
        f"{c.value(r.objective):.9g}, T {c.est.time_to_train_h:.6g} h, up-front {c.upfront_usd:.6g}, "
        f"cost {c.cost_usd:.6g}, {c.est.facility_power_kw:.6g} kW, owned used {c.owned_used}"
    )
