"""``fleet()``: plan a fleet within one time limit -- modes, the MIP, its starts, HiGHS, the plan read back.

The time limit is the whole call's: mode generation, the Pyomo build, the start heuristics and HiGHS all come
out of it (``tuning.extract_reserve_s`` is kept for reading the plan back; each solve gets at least
``tuning.min_solve_s``, so a limit shorter than the modes and build take is overrun by those, and the plan may
then be the greedy start alone, bound 0: the LP relaxation gets no time to finish). HiGHS starts from the greedy
plan (``set_greedy_start``); from ``tuning.restricted_start_modes`` modes on the start heuristics improve it first
(``improve_start``), and the full MIP is then solved from the best start, without HiGHS's presolve when less than
``tuning.full_presolve_min_s`` is left. The model is compiled to HiGHS's arrays once (planner.solver,
``reuse_compiled``) for the LP relaxation, the restricted MIP (its other z fixed at 0 as bounds) and the full MIP.

From ``tuning.isolate_modes`` modes on, HiGHS solves the full MIP in a child process that is killed when it has
not answered shortly after the limit (planner.solver, ``isolate``): HiGHS's root phase on a large fleet MIP does
not always answer its interrupt. The plan is then the best start (``start_as_answer``: the incumbent HiGHS held
from its first moment), status time_limit, re-checked like any plan. Status and incumbent are HiGHS's own on the
full MIP; the bound is HiGHS's, or the LP relaxation's optimum of the same full MIP (solved first, a valid lower
bound) when that is higher -- HiGHS, started late, may not finish its root LP -- and the gap is computed from it.

An infeasibility claim is confirmed without presolve before it is reported, and an infeasible fleet is explained
(``explain_infeasible``) by re-solving single relaxations within what is left of the limit.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from planner.data import Catalog, load_catalog
from planner.errors import PlannerInputError
from planner.fleet.extract import extract_plan
from planner.fleet.formulation import FleetMIP, build_fleet_model
from planner.fleet.modes import job_modes
from planner.fleet.pools import Pools, pools_of
from planner.fleet.request import FleetRequest, check_fleet_ids
from planner.fleet.result import FleetPlan
from planner.fleet.starts import PackProof, StartState, improve_start, set_greedy_start
from planner.fleet.tuning import DEFAULT_TUNING, FleetTuning
from planner.formatting import OBJECTIVE_UNITS_TEXT, objective_text, sig4
from planner.physics import check_catalog, validated
from planner.solver import (
    PlanStatus,
    Solved,
    SolverOptions,
    SolverReport,
    SolverStatus,
    current_solution,
    solve_model,
)


def fleet(
    request: FleetRequest | dict[str, Any],
    catalog: Catalog | None = None,
    explain: bool = True,
    tuning: FleetTuning = DEFAULT_TUNING,
) -> FleetPlan:
    """Plan the fleet (module docstring); when infeasible (and ``explain``), say which single relaxation would make
    it feasible. ``request.solver.time_limit_s`` is the whole call's, the explanation's re-solves included (they
    share what is left of it, and the explanation says when it was cut short). ``tuning`` steers the start
    heuristics and the time budget (planner/fleet/tuning.py)."""
    if isinstance(request, (str, Path)):
        raise PlannerInputError(
            f"fleet() takes a FleetRequest or a dict of its fields, not a path ({str(request)!r}): "
            "fleet(planner.load_fleet_request(path)) reads a YAML file"
        )
    req = validated(FleetRequest, request, "fleet request")
    cat = load_catalog() if catalog is None else check_catalog(catalog)
    cat.site(req.site)
    check_fleet_ids(cat, req)
    t0 = time.perf_counter()
    deadline = t0 + req.solver.time_limit_s

    def left() -> float:
        return max(tuning.min_solve_s, deadline - time.perf_counter() - tuning.extract_reserve_s)

    pools = pools_of(cat, req)
    modes = job_modes(cat, req, pools=pools)
    t_modes = time.perf_counter() - t0
    missing = [j.id for j in req.jobs if not len(modes) or not (modes["job"] == j.id).any()]
    if missing:
        return infeasible_plan(req, _no_mode_text(cat, req, pools, missing))
    t1 = time.perf_counter()
    mip = build_fleet_model(cat, req, modes, pools)
    mip.model.reuse_compiled = True  # planner.solver compiles it once: the LP relaxation, restricted and full MIP
    t_build = time.perf_counter() - t1
    state = StartState()
    set_greedy_start(mip, cat, req, state)
    heur: dict[str, float] = {}
    opts = req.solver
    if len(modes) >= tuning.restricted_start_modes:
        heur = improve_start(mip, cat, req, state, left, tuning)
        # HiGHS's presolve of the full model (probing tens of thousands of binaries) takes 10-35 s on a large fleet:
        # with less than full_presolve_min_s left it is skipped, so that the root LP bound is reached
        opts = opts.model_copy(update={"presolve": opts.presolve and left() >= tuning.full_presolve_min_s})
    solved = solve_full(mip, state, opts, left, t_build, isolate=len(modes) >= tuning.isolate_modes)
    rep = with_lp_bound(solved.report, heur)
    timings = {
        "modes_s": t_modes,
        "build_s": t_build,
        **{k: v for k, v in heur.items() if k.endswith("_s")},
        "handoff_s": rep.handoff_time_s,
        "solve_s": rep.solve_time_s,
    }
    if rep.status is SolverStatus.NO_SOLUTION:
        msg = (
            f"HiGHS found no fleet within the time limit ({req.solver.time_limit_s:g} s): raise --time-limit or the gap"
        )
        return infeasible_plan(req, msg, rep, status=PlanStatus.NO_SOLUTION)
    if not rep.status.has_solution:
        text = explain_infeasible(cat, req, deadline, t_modes + t_build, tuning) if explain else "infeasible"
        return infeasible_plan(req, text, rep)
    plan = extract_plan(cat, req, mip, solved, rep)
    figures = {k: v for k, v in heur.items() if not k.endswith("_s")}
    return plan.model_copy(
        update={"timings_s": timings, "start": figures, "proofs": plan_proofs(state.pack_proof, plan)}
    )


def solve_full(
    mip: FleetMIP, state: StartState, opts: SolverOptions, left: Callable[[], float], build_s: float, isolate: bool
) -> Solved:
    """The full MIP solved from the start the model holds, within ``left()``: an infeasibility claimed with presolve
    is confirmed without it (HiGHS proves small infeasible fleets at once; one that cannot be confirmed in the time
    left is reported as no solution), and an isolated HiGHS that gave no answer is replaced by the start
    (``start_as_answer``)."""
    first = opts.model_copy(update={"time_limit_s": left()})
    solved = solve_model(mip.model, first, build_time_s=build_s, isolate=isolate)
    if solved.report.status is SolverStatus.INFEASIBLE and opts.presolve:
        confirm = opts.model_copy(update={"presolve": False, "time_limit_s": left()})
        solved = solve_model(mip.model, confirm, build_time_s=build_s, isolate=isolate)
    if solved.unanswered:
        solved = start_as_answer(mip, state, solved)
    return solved


def with_lp_bound(rep: SolverReport, heur: dict[str, float]) -> SolverReport:
    """HiGHS's report, its bound lifted to the LP relaxation's optimum of the same MIP (``restricted_start``) when a
    plan was stopped by the time limit with a lower bound or none: HiGHS, started late, may not have finished its
    own root LP within the time left. The gap follows the bound."""
    lp_bound = heur.get("lp_bound") if heur.get("lp_optimal") else None
    if rep.status is not SolverStatus.TIME_LIMIT or rep.objective is None or lp_bound is None:
        return rep
    if rep.bound is not None and rep.bound >= lp_bound:
        return rep
    bound = min(lp_bound, rep.objective)
    gap = (rep.objective - bound) / max(abs(rep.objective), 1e-12)
    return rep.model_copy(update={"bound": bound, "gap": gap})


def start_as_answer(mip: FleetMIP, state: StartState, solved: Solved) -> Solved:
    """The answer when the full MIP's HiGHS process gave none within the time limit (``solve_model(...,
    isolate=True)`` killed it, or it died): the start HiGHS was given, when the heuristics know it to be a plan of
    the full MIP (``state.feasible``) -- the incumbent HiGHS holds from its first moment, so what it would have
    returned had it stopped at the limit with nothing better. Status time_limit, objective the start's, no bound
    of HiGHS's own (``fleet()`` then takes the LP relaxation's); ``extract_plan`` re-checks the plan with
    ``evaluate_fleet`` like any other. Without such a start the answer stays "no solution"."""
    if not (state.has_start and state.feasible):
        return solved
    rep = solved.report.model_copy(
        update={
            "status": SolverStatus.TIME_LIMIT,
            "objective": state.value(mip),
            "highs_status": f"{solved.report.highs_status}; the plan is the best start",
        }
    )
    start = current_solution(mip.model, rep)
    return solved if start is None else start


def plan_proofs(proof: PackProof | None, plan: FleetPlan) -> list[str]:
    """pack_start's proof (``PackProof``) in words, when the plan returned is its packed cluster: bought on it alone,
    nothing else bought or rented, no owned server kept."""
    if proof is None or plan.objective_value is None:
        return []
    used = [p for p in plan.purchases if p["added"] or p["kind"] == "rent" or p.get("kept")]
    if [(p["server"], p["fabric"], p["added"], p["kind"]) for p in used] != [
        (proof.server, proof.fabric, proof.nodes, "buy")
    ]:
        return []
    unit = OBJECTIVE_UNITS_TEXT.get(plan.objective, "")
    within = (plan.objective_value - proof.bound) / max(abs(plan.objective_value), 1e-12)
    return [
        f"{proof.nodes} is the fewest {proof.server} nodes on {proof.fabric} that run every job in its window, so "
        f"every plan running them all on one such cluster is worth at least {objective_text(proof.bound)} {unit} "
        f"(its cluster at {proof.nodes} nodes and each job's least energy): this plan is within {within:.1%} of it"
    ]


def infeasible_plan(
    req: FleetRequest, msg: str, rep: SolverReport | None = None, status: PlanStatus = PlanStatus.INFEASIBLE
) -> FleetPlan:
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


def _no_mode_text(cat: Catalog, req: FleetRequest, pools: Pools, missing: list[str]) -> str:
    """Why jobs without a mode make the fleet infeasible, and the earliest due slot that gives each one."""
    due = earliest_due_slots(cat, req, pools, missing)
    later = ", ".join(
        f"{j} to slot {t} at the earliest" if t is not None else f"{j}: not even the horizon end will do"
        for j, t in due.items()
    )
    return (
        f"job(s) {', '.join(missing)} cannot finish inside their windows in any allowed pool (even with "
        f"{req.max_nodes} nodes): move their due slot later ({later}), allow more nodes, faster GPUs or renting"
    )


def earliest_due_slots(cat: Catalog, req: FleetRequest, pools: Pools, jobs: list[str]) -> dict[str, int | None]:
    """For jobs without a mode inside their window: the earliest due slot that gives them one (release slot + the
    fewest slots any allowed mode needs - 1), None when no mode fits even by the horizon end."""
    free = [
        j.model_copy(update={"due_slot": req.slots - 1, "penalty_usd_per_slot": None}) for j in req.jobs if j.id in jobs
    ]
    modes = job_modes(cat, req.model_copy(update={"jobs": free}), pools=pools)
    out: dict[str, int | None] = {}
    for j in free:
        d = modes.loc[modes["job"] == j.id, "slots_needed"] if len(modes) else []
        out[j.id] = int(j.release_slot + min(d) - 1) if len(d) else None
    return out


def explain_infeasible(
    cat: Catalog,
    req: FleetRequest,
    deadline: float | None = None,
    setup_s: float = 0.0,
    tuning: FleetTuning = DEFAULT_TUNING,
) -> str:
    """Smallest single relaxations that make the fleet feasible, computed by re-solving: the budget dropped, the
    power envelope lifted, every due slot moved to the horizon end (each tried on its own).

    The re-solves share what is left of the whole call's time limit (``deadline``, a ``time.perf_counter()``
    instant; None: each gets the request's full limit): each gets an equal share of the time then left (like every
    ``fleet()`` call it may overrun its share by the modes and the build). With less than ``tuning.explain_min_s``
    + ``setup_s`` left (``setup_s``: what the modes and the build took in the call explained; a re-solve takes about
    as long before HiGHS starts), the relaxations not yet tried are skipped, and one whose re-solve ends without a
    plan inside its share is not known to fail: the explanation then says it was cut short and names what it did
    not check. It never states a relaxation that was not confirmed by a plan, and says "more than one requirement
    relaxed" only when each single relaxation was proved infeasible."""
    tries = _relaxations(req)
    tips: list[str] = []
    unchecked: list[str] = []
    for i, (name, relaxed) in enumerate(tries):
        if deadline is None:
            limit = req.solver.time_limit_s
        else:
            left_s = deadline - time.perf_counter() - tuning.extract_reserve_s
            if left_s < tuning.explain_min_s + setup_s:
                unchecked.extend(n for n, _r in tries[i:])
                break
            limit = left_s / (len(tries) - i)
        relaxed = relaxed.model_copy(update={"solver": req.solver.model_copy(update={"time_limit_s": limit})})
        r = fleet(relaxed, cat, explain=False, tuning=tuning)
        if r.objective_value is None:
            # no plan within its share (time limit, solver error) is not a proof that this relaxation fails
            if r.solver is not None and r.solver.status is not SolverStatus.INFEASIBLE:
                unchecked.append(name)
            continue
        tips.append(_relaxation_text(cat, req, name, r))
    head = "No fleet meets every job's due slot, the budget and the power envelope."
    short = (
        f" The time limit ({req.solver.time_limit_s:g} s, the whole call's) cut the explanation short: "
        f"relaxing the {', the '.join(unchecked)} was not checked; raise --time-limit to check it."
        if unchecked
        else ""
    )
    if tips:
        return f"{head} It needs {', or '.join(tips)}.{short}"
    if unchecked:
        return head + short
    return f"{head} It needs more than one requirement relaxed."


def _relaxations(req: FleetRequest) -> list[tuple[str, FleetRequest]]:
    """The single relaxations to try: no budget (cost objective: the budget it would take), no power envelope, every
    due slot at the horizon end (when that changes the request)."""
    tries: list[tuple[str, FleetRequest]] = []
    if req.budget_usd is not None:
        tries.append(("budget", req.model_copy(update={"budget_usd": None, "objective": "cost"})))
    tries.append(("power", req.model_copy(update={"power_kw": 1e12})))
    late = req.model_copy(update={"jobs": [j.model_copy(update={"due_slot": req.slots - 1}) for j in req.jobs]})
    if late != req:
        tries.append(("due slots", late))
    return tries


def _relaxation_text(cat: Catalog, req: FleetRequest, name: str, r: FleetPlan) -> str:
    """What a relaxation confirmed by plan ``r`` needs, in words."""
    if name == "budget":
        need = r.totals.get("capex_usd", 0.0) + r.totals.get("rent_usd", 0.0)
        return f"a budget of at least ${need:,.0f} (you gave ${req.budget_usd:,.0f})"
    if name == "power":
        env = req.power_kw if req.power_kw is not None else cat.site(req.site).power_envelope_kw
        peak = r.totals.get("peak_site_power_kw", 0.0)
        # 4 significant figures (formatting.sig4): a 0.5 kW envelope is not '0 kW'
        return f"{sig4(peak - env)} kW more power (peak {sig4(peak)} kW against {sig4(env)} kW)"
    return f"due slots moved to the horizon end (slot {req.slots - 1})"
