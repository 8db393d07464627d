"""Brute force over every integer node count: the reference the optimizer is checked against.

Written independently of planner/plan/'s scan, reductions and MIP: every configuration (allowed server x
fabric x cap x site x buy|rent x every node count 1..N) is evaluated by the model (`evaluate_space`,
`price_space`) and the request's limits are applied with plain comparisons. Used by
tests/plan/test_exact_over_node_counts.py
(a small sample in CI) and bench/bench_exactness.py (the large run).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from planner.checks import check_rented_caps
from planner.data import Catalog, Configuration
from planner.errors import PlannerInputError
from planner.physics import HOURS_PER_YEAR, Work, evaluate, evaluate_space, price_space, work_from
from planner.plan import Plan, PlanRequest, PlanResult, relaxation_horizon

TOL = 1e-9
COLUMN = {"energy": "facility_energy_kwh", "cost": "cost_usd", "carbon": "carbon_kg", "time": "time_to_train_h"}
LIMITS = ("deadline", "budget", "power", "nodes", "rack")
KEEP = [
    "server",
    "fabric",
    "gpu",
    "power_cap",
    "nodes",
    "time_to_train_h",
    "facility_power_kw",
    "facility_energy_kwh",
    "cost_usd",
    "capex_usd",
    "carbon_kg",
]


def _named_gpus(cat: Catalog, pattern: str) -> set[str]:
    """The README's rule for an allowed-GPU pattern: the GPU with that id, else its family, else the ids that
    start with it (case-insensitive)."""
    p = pattern.lower()
    for rule in (lambda g: g.lower() == p, lambda g: cat.gpu(g).family.lower() == p, lambda g: g.lower().startswith(p)):
        hits = {g for g in cat.gpus if rule(g)}
        if hits:
            return hits
    return set()


def servers_of(cat: Catalog, r: PlanRequest) -> list[str]:
    out = []
    for s in cat.gpu_servers():
        if r.servers is not None and s.id not in r.servers:
            continue
        if r.gpus is not None and (s.gpu or "") not in {g for p in r.gpus for g in _named_gpus(cat, p)}:
            continue
        if r.fabrics is not None and not set(s.fabrics) & set(r.fabrics):
            continue
        out.append(s.id)
    return out


def table(cat: Catalog, r: PlanRequest, lo: int, hi: int, chunk: int = 512) -> pd.DataFrame:
    """Every feasible (fits memory, valid layout, available) configuration with lo <= nodes <= hi, priced at every
    allowed site and purchase mode, with rack units and the budget's spend."""
    wl = cat.workload(r.model)
    work = Work(work_from(wl, r.samples, r.tokens, r.epochs), r.global_batch, r.precision)
    purchases = ["buy", "rent"] if r.purchase == "either" else [r.purchase]
    frames = []
    for a in range(lo, hi + 1, chunk):
        phys = evaluate_space(
            cat,
            wl,
            servers=servers_of(cat, r),
            fabrics=r.fabrics,
            caps=r.power_caps,
            nodes=range(a, min(hi, a + chunk - 1) + 1),
            site=r.sites[0],
            work=work,
        )
        phys = phys[phys["fits_memory"] & phys["valid_layout"]]
        for site in r.sites:
            for p in purchases:
                df = price_space(cat, phys, site, p, r.life_years)
                df = df[df["feasible"]]
                if p == "buy":  # bought servers serve life_years: a bought run must end within it (README)
                    df = df[df["time_to_train_h"] <= r.life_years * HOURS_PER_YEAR * (1 + TOL)]
                out = df[KEEP].copy()
                out["site"], out["purchase"] = site, p
                out["rack_units"] = df["nodes"].to_numpy() * np.array(
                    [cat.server(str(s)).rack_units for s in df["server"]], dtype=np.int64
                )
                out["upfront_usd"] = df["capex_usd"] if p == "buy" else df["cost_usd"]
                out["envelope_kw"] = r.power_kw if r.power_kw is not None else cat.site(site).power_envelope_kw
                frames.append(out)
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame(columns=[*KEEP, "site", "purchase", "rack_units", "upfront_usd", "envelope_kw"])
    return pd.concat(frames, ignore_index=True)


def value(df: pd.DataFrame, r: PlanRequest, name: str) -> np.ndarray:
    col = {
        "deadline": "time_to_train_h",
        "budget": "upfront_usd" if r.budget_kind == "upfront" else "cost_usd",
        "power": "facility_power_kw",
        "nodes": "nodes",
        "rack": "rack_units",
    }[name]
    return df[col].to_numpy(dtype=float)


def bound(df: pd.DataFrame, r: PlanRequest, name: str) -> Any:
    return {
        "deadline": None if r.deadline_days is None else r.deadline_days * 24.0,
        "budget": r.budget_usd,
        "power": df["envelope_kw"].to_numpy(dtype=float),
        "nodes": r.max_nodes,
        "rack": r.max_rack_units,
    }[name]


def meets(df: pd.DataFrame, r: PlanRequest, skip: Sequence[str] = ()) -> np.ndarray:
    ok = np.ones(len(df), dtype=bool)
    for k in LIMITS:
        b = bound(df, r, k)
        if k in skip or b is None:
            continue
        v = value(df, r, k)
        ok &= v <= b if k in ("nodes", "rack") else v <= np.asarray(b) * (1 + TOL)
    return ok


def limited(r: PlanRequest) -> list[str]:
    given = {"deadline": r.deadline_days, "budget": r.budget_usd, "rack": r.max_rack_units}
    return [k for k in LIMITS if k in ("power", "nodes") or given[k] is not None]


@dataclass
class Verdict:
    """One request checked against brute force."""

    feasible_brute: bool
    feasible_solve: bool
    optimum_agrees: bool = True
    plan_ok: bool = True
    relaxations_agree: bool = True
    relaxations_checked: int = 0
    problems: list[str] = field(default_factory=list)


def plan_violations(plan: Plan, r: PlanRequest, cat: Catalog) -> list[str]:
    """Re-evaluate with planner.evaluate and check every requirement (independently of planner.plan)."""
    wl = cat.workload(r.model)
    est = evaluate(
        cat,
        Configuration(
            model=r.model,
            server=plan.server,
            nodes=plan.nodes,
            fabric=plan.fabric,
            power_cap=plan.power_cap,
            global_batch=r.global_batch,
            samples=work_from(wl, r.samples, r.tokens, r.epochs),
            precision=r.precision,
            site=plan.site,
            purchase=plan.purchase,
            life_years=r.life_years,
        ),
    )
    bad = []
    if not est.fits_memory:
        bad.append("memory")
    if est.purchase == "buy" and est.time_to_train_h > r.life_years * HOURS_PER_YEAR * (1 + TOL):
        bad.append("life")
    if plan.server not in servers_of(cat, r) or (r.fabrics is not None and plan.fabric not in r.fabrics):
        bad.append("hardware")
    if not any(math.isclose(plan.power_cap, c) for c in r.power_caps) or plan.site not in r.sites:
        bad.append("cap/site")
    if r.deadline_days is not None and est.time_to_train_h > r.deadline_days * 24 * (1 + TOL):
        bad.append("deadline")
    spend = (est.capex_usd if est.purchase == "buy" else est.cost_usd) if r.budget_kind == "upfront" else est.cost_usd
    if r.budget_usd is not None and not spend <= r.budget_usd * (1 + TOL):
        bad.append("budget")
    env = r.power_kw if r.power_kw is not None else cat.site(plan.site).power_envelope_kw
    if est.facility_power_kw > env * (1 + TOL):
        bad.append("power")
    if est.nodes > r.max_nodes:
        bad.append("nodes")
    if r.max_rack_units is not None and est.nodes * cat.server(est.server).rack_units > r.max_rack_units:
        bad.append("rack")
    for name, got in (("time", plan.time_to_train_h), ("energy", plan.facility_energy_kwh), ("cost", plan.cost_usd)):
        want = {"time": est.time_to_train_h, "energy": est.facility_energy_kwh, "cost": est.cost_usd}[name]
        if not math.isclose(got, want, rel_tol=1e-9):
            bad.append(f"reported {name} {got} != evaluate {want}")
    return bad


def check(cat: Catalog, r: PlanRequest, res: PlanResult, relax_rtol: float = 1e-3) -> Verdict:
    """Compare a solve result with brute force over every integer node count."""
    df = table(cat, r, 1, r.max_nodes)
    ok = meets(df, r)
    col = COLUMN[r.objective]
    v = Verdict(feasible_brute=bool(ok.any()), feasible_solve=res.plan is not None)
    if v.feasible_brute != v.feasible_solve:
        v.optimum_agrees = False
        v.problems.append(f"feasible: brute {v.feasible_brute}, solve {v.feasible_solve}")
        return v
    if res.plan is not None:
        best = float(df.loc[ok, col].min())
        got = float(res.objective_value or math.nan)
        if not math.isclose(got, best, rel_tol=1e-6, abs_tol=1e-12):
            v.optimum_agrees = False
            v.problems.append(f"objective {got} vs brute {best}")
        for p in [res.plan, *res.alternatives]:
            bad = plan_violations(p, r, cat)
            if bad:
                v.plan_ok = False
                v.problems.append(f"plan {p.nodes} x {p.server} breaks {bad}")
        return v
    # infeasible: every stated single relaxation equals the brute-force threshold; a requirement whose
    # relaxation is not stated must have none
    assert res.explanation is not None
    stated = {x.requirement: x for x in res.explanation.relaxations}
    horizon = relaxation_horizon(r.max_nodes)
    wide: pd.DataFrame | None = None
    for k in limited(r):
        if k == "nodes":
            if wide is None:
                wide = pd.concat([df, table(cat, r, r.max_nodes + 1, horizon)], ignore_index=True)
            pool = wide
        else:
            pool = df
        m = meets(pool, r, skip=[k])
        need = float(value(pool, r, k)[m].min()) if m.any() else None
        if need is not None and k == "deadline":
            need /= 24.0
        v.relaxations_checked += 1
        said = stated.get(k)
        if need is None and said is None:
            continue
        if need is None or said is None or not math.isclose(said.needed, need, rel_tol=relax_rtol):
            v.relaxations_agree = False
            v.problems.append(f"relax {k}: stated {None if said is None else said.needed}, brute {need}")
    if wide is None:
        wide = pd.concat([df, table(cat, r, r.max_nodes + 1, horizon)], ignore_index=True)
    for pr in res.explanation.pairs:
        problem = pair_problem(wide, r, pr.relaxations)
        v.relaxations_checked += 1
        if problem:
            v.relaxations_agree = False
            v.problems.append(problem)
    if res.explanation.pairs and stated:
        v.relaxations_agree = False
        v.problems.append("pairs listed although a single relaxation suffices")
    return v


def pair_problem(df: pd.DataFrame, r: PlanRequest, rel: Sequence[Any]) -> str | None:
    """A stated pair (a >= x, b >= y) must admit a plan and be Pareto-minimal (brute force); None if so."""
    (a, ra), (b, rb) = [(x.requirement, x.needed * (24.0 if x.requirement == "deadline" else 1.0)) for x in rel]
    m = meets(df, r, skip=[a, b])
    va, vb = value(df, r, a), value(df, r, b)
    fits = m & (va <= ra * (1 + TOL)) & (vb <= rb * (1 + TOL))
    if not fits.any():
        return f"pair {a}={ra}, {b}={rb} admits no plan"
    better = fits & ((va < ra * (1 - 1e-6)) | (vb < rb * (1 - 1e-6)))
    if better.any():
        return f"pair {a}={ra}, {b}={rb} is not minimal"
    return None


# ------------------------------------------------------------------------------------------- random requests
# (model, work, GPU subsets that keep a request small enough, node-limit range)
MODELS: list[tuple[str, dict[str, float], list[list[str]], tuple[int, int]]] = [
    ("llama3-405b", {"tokens": 15.6e12}, [["H100"], ["B200"], ["H100", "H200", "B200"], ["mi300x"]], (256, 4096)),
    ("llama3-70b", {"tokens": 2e12}, [["H100"], ["B200"], ["A100", "H100"]], (4, 1024)),
    ("llama3-8b", {"tokens": 1e12}, [["H100"], ["l40s"], ["rtx-4000-ada", "B200"]], (1, 512)),
    ("gpt3-175b", {"tokens": 3e11}, [["A100"], ["H100"]], (8, 2048)),
    ("bert-large", {}, [["A100"], ["l40s", "rtx-a6000"], ["H100", "mi300x"]], (1, 256)),
    ("resnet50", {}, [["A100"], ["l40s", "rtx-4000-ada"]], (1, 128)),
]


def random_request(rng: np.random.Generator, cat: Catalog, model: str | None = None) -> PlanRequest:
    """A random request over the shipped catalog: deadlines, budgets, power and rack limits drawn around a
    reference plan's values so that all outcomes (feasible, binding, infeasible) occur."""
    choices = [m for m in MODELS if model is None or m[0] == model]
    name, work, gpu_sets, (lo, hi) = choices[int(rng.integers(len(choices)))]
    gpus = gpu_sets[int(rng.integers(len(gpu_sets)))]
    max_nodes = int(np.exp(rng.uniform(np.log(lo), np.log(hi))))
    objective = str(rng.choice(["energy", "cost", "carbon", "time"]))
    purchase = str(rng.choice(["buy", "rent", "either"]))
    sites = [str(s) for s in rng.choice(sorted(cat.sites), size=int(rng.integers(1, 3)), replace=False)]
    caps = sorted({float(c) for c in rng.choice([0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0], size=int(rng.integers(1, 4)))})
    base = PlanRequest(
        model=name,
        gpus=gpus,
        max_nodes=max_nodes,
        objective="time",
        purchase=purchase,
        sites=sites,
        power_caps=caps,
        alternatives=0,
        **work,
    )
    # scale the limits from the fastest plan's figures (one cheap brute-force probe at a few counts)
    probe = table(cat, base, max(1, max_nodes // 2), max(1, max_nodes // 2))
    if not len(probe):
        probe = table(cat, base, max_nodes, max_nodes)
    t_ref = float(probe["time_to_train_h"].median()) if len(probe) else 24.0 * 30
    p_ref = float(probe["facility_power_kw"].median()) if len(probe) else 1000.0
    u_ref = float(probe["upfront_usd"].median()) if len(probe) else 1e6
    fields: dict[str, Any] = {}
    if objective != "time" or rng.random() < 0.5:
        fields["deadline_days"] = t_ref / 24.0 * float(np.exp(rng.uniform(-1.5, 1.5)))
    if rng.random() < 0.4:
        fields["budget_usd"] = u_ref * float(np.exp(rng.uniform(-1.5, 1.0)))
        fields["budget_kind"] = str(rng.choice(["upfront", "total"]))
    if rng.random() < 0.5:
        fields["power_kw"] = p_ref * float(np.exp(rng.uniform(-1.5, 1.0)))
    if rng.random() < 0.3:
        ru = max(cat.server(s).rack_units for s in servers_of(cat, base))
        fields["max_rack_units"] = max(1, int(max_nodes * ru * rng.uniform(0.1, 1.2)))
    req = PlanRequest.model_validate({**base.model_dump(), "objective": objective, **fields})
    try:  # renting only offers that run at full power with caps that leave out 1.0 is bad input (check_rented_caps)
        check_rented_caps(cat, req)
    except PlannerInputError:
        req = req.model_copy(update={"power_caps": sorted({*req.power_caps, 1.0})})
    return req
