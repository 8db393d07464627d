"""`solve` against an independent brute force (tests/indep_brute.py) over random small requests on the shipped
catalog: every allowed server, fabric, power cap, site, buy/rent and node count 1..max_nodes, one `evaluate` call
each.

What tests/brute.py and tests/plan/test_exact_over_node_counts.py already cover (the default objective and the
others on large node limits, relaxations of infeasible requests, Pareto fronts) is not repeated; these requests add
what they leave out: owned servers (credit, fabric, age and retirement), monthly and hourly rent billing, rent-only
and buy-only servers, rented servers whose power limit is not settable, precisions asked for by name and the
workload's own (fp4 -> fp8 -> bf16 fallback per GPU; fp8/fp4 where no allowed GPU has it is bad input), framework
profiles, fixed global batches, samples / tokens / epochs, short server lives (a bought run must end within it),
evaluation chunks of a few node counts (candidates.CHUNK_CONFIGS patched small), and limits drawn at a candidate's
own deadline, budget, power or rack units times 1, 1 +- 1e-12, 1 - 4e-10 (inside plan.limits.within's 1e-9),
1 +- 5e-9 (outside), ..., so that requests are barely feasible or barely infeasible; site power envelopes that bind
small plans (a catalog with its sites' envelopes lowered). For each: the same feasibility (and the same bad input),
the same optimum (relative 1e-9: HiGHS's mip_rel_gap), the plan and every alternative re-evaluated by `evaluate`
meet every limit and report its figures (owned nodes and precision included), the first alternatives are the
next-best hardware options in brute force's order (an option that repeats a better one under another fabric or
power cap with every figure equal -- one node uses no fabric, a cap above the GPUs' draw does not bind -- is the same
choice and not counted: ``indep_brute.ranked_options``),
then one per GPU type; the binding limits; an infeasible request's stated relaxations of the deadline, budget,
power and rack units are brute force's thresholds.

CI runs a fixed (derandomized) sample; the larger sweep (INDEP_BRUTE_STORE=DIR: with the on-disk physics store in
DIR, so that later requests plan from what earlier ones stored; INDEP_BRUTE_SCALE=K: node limits up to K times
each world's):
    INDEP_BRUTE_SWEEP=400 PYTHONPATH=$PWD python -m pytest -q -s tests/plan/test_independent_brute_force.py -k sweep
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner import PlannerInputError, load_catalog
from planner.plan import PlanRequest, candidates, check_plan, solve
from tests import indep_brute as ib

CAT = load_catalog()
# the shipped catalog, and one whose sites' power envelopes bind small plans (the envelope of a request that gives
# no power_kw is its plan's site's)
ENVELOPE_KW = {"us-colo": 6.0, "hydro-nordic": 15.0, "coal-heavy": 3.0, "hyperscale": 40.0}
CATALOGS = {
    "shipped": CAT,
    "tight-sites": CAT.replace(
        sites={k: v.model_copy(update={"power_envelope_kw": ENVELOPE_KW.get(k, 10.0)}) for k, v in CAT.sites.items()}
    ),
}
BRUTES = {name: ib.Brute(c) for name, c in CATALOGS.items()}
LIFE_FACTORS = [1.0, 1 - 1e-4, 1 + 1e-4, 0.5, 2.0]
SCALE = int(os.environ.get("INDEP_BRUTE_SCALE", "1"))  # node limits up to SCALE x each world's (the sweep)
# limits at, just inside the rounding allowance of (plan.limits.within: a relative 1e-9), just outside and far from
# a candidate's own figure
FACTORS = [1.0, 1 + 1e-12, 1 - 1e-12, 1 - 4e-10, 1 - 5e-9, 1 + 5e-9, 0.999, 1.001, 0.7, 1.5, 3.0]


@dataclass(frozen=True)
class World:
    """A family of small requests: one workload and amount of work, a pool of servers / GPU patterns, fabrics,
    caps and sites to draw subsets of, and the largest node limit."""

    name: str
    base: dict[str, Any]
    gpus: list[str] = field(default_factory=list)  # GPU patterns to draw `gpus` from
    servers: list[str] = field(default_factory=list)  # server ids to draw `servers` from (and owned servers)
    fabrics: list[str] = field(default_factory=list)  # fabrics to draw `fabrics` from ([] = leave it out)
    caps: list[float] = field(default_factory=lambda: [0.6, 1.0])
    sites: list[str] = field(default_factory=lambda: ["us-colo", "hydro-nordic"])
    max_nodes: int = 6
    variants: dict[str, list[Any]] = field(default_factory=dict)  # request fields drawn per request
    catalog: str = "shipped"  # a key of CATALOGS


CI_WORLDS = [
    # monthly rent (rent-only RTX 4000 workstation, settable cap), buy-only power-optimized A100, hourly L40S;
    # caps 0.4 / 0.5 are outside some of these GPUs' ranges
    World(
        "resnet50-small",
        {"model": "resnet50", "epochs": 2.0},
        variants={"precision": [None, None, "fp8", "fp4", "tf32"]},
        gpus=["l40s", "rtx-4000", "ada"],
        servers=["l40s-4", "rental-i5-13500-rtx4000", "power-optimized-a100"],
        fabrics=["eth1", "roce100", "eth25"],
        caps=[0.5, 0.8, 1.0],
        max_nodes=8,
        catalog="tight-sites",
    ),
    # fp8 by name: A100 falls back to bf16, H100 computes in fp8
    World(
        "bert-fp8",
        {"model": "bert-large", "precision": "fp8", "samples": 3e6},
        variants={"precision": ["fp8", "fp8", "fp16", "fp32"], "framework": [None, "deepspeed", "pytorch-fsdp"]},
        gpus=["a100", "H100", "hopper"],
        servers=["dgx-a100-80gb", "dgx-h100"],
        fabrics=["hdr200", "roce100"],
        max_nodes=5,
    ),
    # fp4 by name: B200 in fp4, H100 in fp8; owned servers on both
    World(
        "llama8b-fp4",
        {"model": "llama3-8b", "tokens": 5e10, "precision": "fp4"},
        gpus=["B200", "H100"],
        servers=["hgx-b200", "dgx-h100"],
        fabrics=["ndr400", "roce400"],
        caps=[0.7, 1.0],
        max_nodes=6,
    ),
    # the workload's own fp8 (GPT-3), which A100 computes in bf16; a framework profile other than its own
    World(
        "dlrm-ddp",
        {"model": "dlrm-dcnv2", "samples": 1e9, "framework": "pytorch-ddp"},
        gpus=["A100", "mi300x"],
        servers=["dgx-a100-80gb", "mi300x-8", "a100-pcie-4"],
        fabrics=["roce100", "eth25"],
        max_nodes=5,
    ),
]

SWEEP_WORLDS = [
    *CI_WORLDS,
    World(
        "gpt3-own-fp8",
        {"model": "gpt3-175b", "tokens": 2e10},
        gpus=["A100", "H100", "B200"],
        servers=["dgx-a100-80gb", "dgx-h100", "hgx-b200"],
        fabrics=["hdr200", "ndr400"],
        caps=[0.8, 1.0],
        sites=["us-colo", "coal-heavy"],
        max_nodes=12,
    ),
    World(
        "lora-cdna",
        {"model": "llama2-70b-lora", "samples": 3e4},
        gpus=["mi300x", "cdna3", "cdna4", "hopper"],
        servers=["mi300x-8", "mi355x-8", "hgx-h200"],
        fabrics=["roce400", "ndr400", "eth25"],
        caps=[0.5, 0.7, 1.0],
        max_nodes=8,
    ),
    World(
        "inception-batch",
        {"model": "inception-v3", "epochs": 5.0},
        variants={"global_batch": [None, 1536, 4096, 96], "framework": [None, "pytorch-ddp"]},
        gpus=["l40s", "rtx-a6000", "A100"],
        servers=["l40s-4", "rtx-a6000-8", "a100-pcie-4", "power-optimized-a100"],
        fabrics=["hdr200", "edr100", "eth25"],
        caps=[0.6, 0.9, 1.0],
        max_nodes=16,
    ),
    World(
        "llama70b-blackwell",
        {"model": "llama3-70b", "tokens": 1e11, "precision": "fp4"},
        gpus=["blackwell", "B300", "B200", "gb200"],
        servers=["hgx-b300", "gb200-nvl72", "hgx-b200"],
        fabrics=["ndr400", "xdr800"],
        caps=[0.6, 1.0],
        sites=["hyperscale", "us-colo"],
        max_nodes=10,
    ),
    World(
        "bert-megatron-resnet-all-fabrics",
        {"model": "bert-large", "framework": "megatron", "samples": 1e6},
        gpus=["rtx-4000", "l40s"],
        servers=["rental-i5-13500-rtx4000", "l40s-4"],
        fabrics=[],
        caps=[0.6, 1.0],
        sites=["us-colo", "coal-heavy", "hydro-nordic"],
        max_nodes=10,
    ),
]


def subset(draw: Any, pool: list[Any], min_size: int = 1) -> list[Any]:
    picked = draw(st.lists(st.sampled_from(pool), min_size=min_size, max_size=len(pool), unique=True))
    return [x for x in pool if x in picked]


def draw_request(draw: Any, world: World) -> PlanRequest:
    """A random request of ``world``: its space first, then limits around a candidate plan's own figures."""
    fields: dict[str, Any] = {**world.base}
    for name, values in world.variants.items():
        value = draw(st.sampled_from(values))
        if value is not None:
            fields[name] = value
    how = draw(st.sampled_from(["gpus", "servers", "both"]))
    if how in ("gpus", "both"):
        fields["gpus"] = subset(draw, world.gpus)
    if how in ("servers", "both"):
        fields["servers"] = subset(draw, world.servers)
    if world.fabrics:
        fields["fabrics"] = subset(draw, world.fabrics)
    fields["power_caps"] = subset(draw, world.caps)
    fields["sites"] = subset(draw, world.sites)
    fields["purchase"] = draw(st.sampled_from(["buy", "rent", "either"]))
    objective = draw(st.sampled_from(["energy", "cost", "carbon", "time"]))
    fields["max_nodes"] = draw(st.integers(1, world.max_nodes * SCALE))
    fields["alternatives"] = draw(st.integers(0, 3))
    r = PlanRequest.model_validate({**fields, "objective": "time"})  # the space (a deadline is needed otherwise)
    fields["objective"] = objective
    brute = BRUTES[world.catalog]
    cands = brute.candidates(r) if ib.expected_input_error(brute.base, r) is None else []
    if not cands:
        return PlanRequest.model_validate({**fields, "deadline_days": draw(st.sampled_from([1.0, 30.0]))})

    def ref(pool: list[ib.Candidate]) -> ib.Candidate:
        return pool[draw(st.integers(0, len(pool) - 1))]

    def factor() -> float:
        return float(draw(st.sampled_from(FACTORS)))

    if draw(st.integers(0, 4)) == 0:
        # a short service life: a bought run must end within it (around a candidate's own run time)
        # (factors clear of the last 1e-4: the service-life rule states no rounding tolerance, and the optimizer
        # allows 1e-12 years, which at a life of minutes is more than 1e-9 of it)
        life_factor = draw(st.sampled_from(LIFE_FACTORS))
        fields["life_years"] = min(15.0, ref(cands).est.time_to_train_h / ib.HOURS_PER_YEAR * life_factor)
    if draw(st.booleans()):
        fields["owned"] = [
            draw_owned(draw, world, cands, fields.get("life_years", 4.0)) for _ in range(draw(st.integers(1, 2)))
        ]
    if "life_years" in fields or "owned" in fields:
        cands = brute.candidates(PlanRequest.model_validate({**fields, "objective": "time"}))
        if not cands:
            return PlanRequest.model_validate({**fields, "deadline_days": draw(st.sampled_from([1.0, 30.0]))})
    # limits around candidates' own figures (barely feasible / barely infeasible)
    limits: dict[str, Any] = {}
    if objective != "time" or draw(st.booleans()):
        limits["deadline_days"] = ref(cands).est.time_to_train_h / 24.0 * factor()
    if draw(st.booleans()):
        kind = draw(st.sampled_from(["upfront", "total"]))
        c = ref(cands)
        spend = c.upfront_usd if kind == "upfront" else c.cost_usd
        limits["budget_usd"], limits["budget_kind"] = spend * factor(), kind  # 0 where owned nodes carry it all
    if draw(st.booleans()):
        limits["power_kw"] = ref(cands).est.facility_power_kw * factor()
    if draw(st.integers(0, 3)) == 0:
        limits["max_rack_units"] = max(1, ref(cands).rack_units - draw(st.sampled_from([0, 0, 1])))
    return PlanRequest.model_validate({**fields, **limits})


def draw_owned(draw: Any, world: World, cands: list[ib.Candidate], life_years: float) -> dict[str, Any]:
    """An owned entry: a server of the world on one of its fabrics (or the default), of some age -- sometimes
    one that leaves service 1e-7 years (3 s) before or after a bought candidate of its type ends its run."""
    bought = [c for c in cands if c.purchase == "buy"]
    retire = draw(st.sampled_from([None, None, 5.0]))
    if bought and draw(st.booleans()):
        c = bought[draw(st.integers(0, len(bought) - 1))]
        end = retire if retire is not None else life_years
        age = end - c.est.time_to_train_h / ib.HOURS_PER_YEAR + draw(st.sampled_from([-1e-7, 1e-7]))
        fabric = draw(st.sampled_from([c.fabric, None]))
        return {
            "server": c.server,
            "count": draw(st.integers(1, world.max_nodes * SCALE + 2)),
            "fabric": fabric,
            "age_years": max(0.0, age),
            "retire_at_age_years": retire,
        }
    srv = CAT.server(draw(st.sampled_from(world.servers)))
    return {
        "server": srv.id,
        "count": draw(st.integers(1, world.max_nodes * SCALE + 2)),
        "fabric": draw(st.sampled_from([None, *srv.fabrics[:3]])),
        "age_years": draw(st.sampled_from([0.0, 1.5, 3.0])),
        "retire_at_age_years": retire,
    }


@dataclass
class Tally:
    requests: int = 0
    input_errors: int = 0
    feasible: int = 0
    infeasible: int = 0
    candidates: int = 0
    seconds: float = 0.0
    disagreements: list[str] = field(default_factory=list)


TALLY: dict[str, Tally] = {}


def check_one(r: PlanRequest, tally: Tally, chunk: int | None = None, catalog: str = "shipped") -> list[str]:
    """Solve ``r`` and compare with brute force; the problems found. ``chunk``: the optimizer's configurations
    per evaluation chunk, made small so that a small request's node counts span many chunks (its exactness
    argument: the union of per-chunk minimisers answers the same questions as the whole table)."""
    t0 = time.perf_counter()
    tally.requests += 1
    brute = BRUTES[catalog]
    why = ib.expected_input_error(brute.base, r)
    try:
        if chunk is None:
            res = solve(r, brute.base)
        else:
            with mock.patch.object(candidates, "CHUNK_CONFIGS", chunk):
                res = solve(r, brute.base)
    except PlannerInputError as e:
        tally.input_errors += 1
        tally.seconds += time.perf_counter() - t0
        return [] if why is not None else [f"solve refused the request ({e}); brute force sees no bad input"]
    if why is not None:
        return [f"solve accepted a request that is bad input ({why})"]
    v = ib.check(brute, r, res)
    tally.candidates += v.candidates
    tally.feasible += v.brute_feasible
    tally.infeasible += not v.brute_feasible
    tally.seconds += time.perf_counter() - t0
    return v.problems


def _run(data: Any, worlds: list[World], tally: Tally, strict: bool = True) -> None:
    world = data.draw(st.sampled_from(worlds), label="world")
    r = draw_request(data.draw, world)
    chunk = data.draw(st.sampled_from([None, None, 1, 40, 300]), label="configurations per chunk")
    problems = check_one(r, tally, chunk, world.catalog)
    if problems:
        tally.disagreements.append(
            f"{world.name}, chunk {chunk}: {r.model_dump_json(exclude_defaults=True)}: {problems}"
        )
    assert not strict or not problems, (r.model_dump(exclude_defaults=True), problems)


CI = settings(
    max_examples=24,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


@CI
@given(data=st.data())
def test_solve_equals_independent_brute_force_on_small_requests(data: Any) -> None:
    _run(data, CI_WORLDS, TALLY.setdefault("ci", Tally()))


SWEEP = int(os.environ.get("INDEP_BRUTE_SWEEP", "0"))


@pytest.mark.skipif(SWEEP <= 0, reason="the large sweep: INDEP_BRUTE_SWEEP=N (see the module docstring)")
def test_sweep() -> None:
    tally = TALLY.setdefault("sweep", Tally())

    @settings(
        max_examples=SWEEP,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
    )
    @given(data=st.data())
    def sweep(data: Any) -> None:
        _run(data, SWEEP_WORLDS, tally, strict=False)  # every disagreement listed, none shrunk

    t0 = time.perf_counter()
    store = os.environ.get("INDEP_BRUTE_STORE")  # a directory: plan with the on-disk physics store there
    try:
        with mock.patch.dict(os.environ, {"PLANNER_CACHE_DIR": store or "off"}):
            sweep()
    finally:
        print(
            f"\nsweep: {tally.requests} requests ({tally.feasible} feasible, {tally.infeasible} infeasible, "
            f"{tally.input_errors} bad input), {tally.candidates} candidate plans enumerated, "
            f"{sum(b.evaluations for b in BRUTES.values())} evaluate calls, {time.perf_counter() - t0:.1f} s; "
            f"{len(tally.disagreements)} disagreements"
        )
        for d in tally.disagreements:
            print("  ", d)
    assert not tally.disagreements


# ------------------------------------------------------------------ limits met only within the allowance
# plan.limits.within (the one definition of meeting a limit, used by the presolve and check_plan) allows a relative
# 1e-9 on the deadline, budget and power; the MIP's rows (5)-(7) (planner/plan/formulation.py) carry the same
# allowance (formulation.with_allowance). Rows bounded exactly, under HiGHS's absolute tolerances, would cut a plan
# the presolve keeps as its hardware option's only candidate: the request would be called infeasible, or another
# option's worse plan returned silently. In each of these three requests (the third found by the sweep) the best
# plan meets a limit only within the allowance.


def _8b(**kw: Any) -> PlanRequest:
    base: dict[str, Any] = {
        "model": "llama3-8b",
        "tokens": 1e12,
        "deadline_days": 30,
        "servers": ["dgx-h100"],
        "fabrics": ["ndr400", "roce400"],
        "power_caps": [1.0],
        "max_nodes": 16,
        "alternatives": 0,
    }
    return PlanRequest.model_validate({**base, **kw})


def test_a_budget_the_optimum_meets_within_rounding_keeps_the_optimum() -> None:
    # the optimum (8 x dgx-h100 on ndr400 in the shipped catalog, about $3.29M up front) with a budget 1e-10 below
    # its up-front cost -- a third of a cent -- still meets every limit by check_plan, so it stays the plan; an
    # exact budget row would return a worse one (7 x dgx-h100 on roce400).
    best = solve(_8b(), CAT).plan
    assert best is not None
    r = _8b(budget_usd=best.upfront_usd * (1 - 1e-10))
    assert check_plan(best, r, CAT) == []
    res = solve(r, CAT)
    assert res.plan is not None and res.objective_value == pytest.approx(best.facility_energy_kwh, rel=1e-9)


def test_a_deadline_the_optimum_meets_within_rounding_is_not_infeasible() -> None:
    # 10^13 tokens on up to 16 x dgx-h100 (ndr400) within 300 days; with the deadline 4e-10 below the optimum's
    # time to train, the optimum still meets it by check_plan (and 9-16 nodes finish sooner): a plan, not
    # "infeasible".
    r0 = _8b(tokens=1e13, deadline_days=300, fabrics=["ndr400"], life_years=15)
    best = solve(r0, CAT).plan
    assert best is not None
    r = r0.model_copy(update={"deadline_days": best.time_to_train_h / 24 * (1 - 4e-10)})
    assert check_plan(best, r, CAT) == []
    res = solve(r, CAT)
    assert res.plan is not None and res.objective_value == pytest.approx(best.facility_energy_kwh, rel=1e-9)


def test_a_budget_met_within_rounding_on_one_option_is_not_explained_by_negative_relaxations() -> None:
    # DLRM on one dgx-a100-80gb ($185,000) with a budget 4e-10 below its price and a loose deadline: the plan
    # meets the budget within the allowance. An exact budget row would call it infeasible and explain it by
    # relaxations of negative amounts, of limits the plan meets ("+-0.0032 days and +$0.01 budget ...; or ... +0
    # nodes").
    r = PlanRequest(
        model="dlrm-dcnv2",
        samples=1e9,
        deadline_days=0.01,
        budget_usd=185_000 * (1 - 4e-10),
        sites=["hydro-nordic"],
        servers=["dgx-a100-80gb"],
        fabrics=["roce100"],
        power_caps=[1.0],
        max_nodes=1,
        alternatives=0,
    )
    res = solve(r, CAT)
    pairs = [] if res.explanation is None else res.explanation.pairs
    assert not any("+-" in p.message for p in pairs), [p.message for p in pairs]
    assert res.plan is not None and check_plan(res.plan, r, CAT) == []
