"""Why a request has no plan: each requirement's exact smallest relaxation (deadline, budget, power, nodes, rack
units, service life), and when no single one suffices the smallest pairs, said in the request's units."""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pandas as pd

from planner.checks.request import PlanRequest
from planner.data import Catalog
from planner.formatting import ceil_sig, duration_text
from planner.physics import (
    cost,
    price_space,
)
from planner.plan.candidates import physics_chunks, with_run_terms_h
from planner.plan.formulation import Limits
from planner.plan.limits import (
    LIMIT_NAMES,
    limit_columns,
    purchases_of,
)
from planner.plan.mip import solve_mip
from planner.plan.reduce import Masks, frontier, physics_may_meet, scan
from planner.plan.result import Explanation, PlanResult, Relaxation, RelaxationPair, usd

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


def _relaxation(k: str, value: float, lim: Limits, req: PlanRequest) -> Relaxation:
    """Requirement ``k`` relaxed to what a candidate of column value ``value`` needs, in the request's units."""
    needed, given = _needed_in_units(k, value), _given_in_units(lim, k)
    life = req.life_years if req.purchase == "either" else None
    message = _phrase(k, needed, given, life, _site_power(req))
    if k == "deadline" and (req.startup_s or req.evaluations):
        message += f", counting the run's {run_terms_phrase(req)}"
    return Relaxation(requirement=k, given=given, needed=needed, unit=RELAX_UNITS[k], message=message)


def run_terms_phrase(req: PlanRequest) -> str:
    """The run terms a request states, as a deadline relaxation counts them: '1 h of start-up and 50
    evaluations'."""
    parts = [f"{duration_text(req.startup_s / 86400.0)} of start-up"] if req.startup_s else []
    if req.evaluations:
        parts.append(f"{req.evaluations:,} evaluation{'' if req.evaluations == 1 else 's'}")
    return " and ".join(parts)


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
        short = [duration_text(needed)] if needed < 1.0 else []  # under a day also in the unit that reads: 22 s
        if given is None:
            return s + (f" ({short[0]})" if short else "")
        said = short
        if needed > 365.25:  # the needed deadline in years, before what was given (which is in days)
            said.append(_years(needed * 24.0))
            if rent_past_years is not None and needed * 24.0 > rent_past_years * cost.HOURS_PER_YEAR:
                said[-1] += f", past the {rent_past_years:g}-year life of bought servers: on rented servers only"
        said.append(f"you gave {_sig4(given, up=False)}")
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


def explain_infeasible(
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
    m = Masks(kept, lim, req, cat) if len(kept) else None
    for k in LIMIT_NAMES:
        if getattr(lim, _LIMIT_ATTR[k]) is None:
            continue
        pool = kept[m.all_but(k)] if m is not None else kept
        if k == "nodes" and not len(pool):
            # beyond the scanned counts: the first chunk of counts with a plan meeting the other limits holds
            # the least node count (chunks are scanned in increasing order)
            ext_lim = _without(lim, "nodes")

            def others_ok(cand: pd.DataFrame, _lim: Limits = ext_lim) -> np.ndarray:
                return np.flatnonzero(Masks(cand, _lim, req, cat).all)

            def may_hold(phys: pd.DataFrame, _lim: Limits = ext_lim) -> bool:
                return physics_may_meet(cat, req, _lim, phys)

            # unpriced chunks change the rows priced, which is read only as zero or not below: skipped once nonzero
            pool, more = scan(
                cat,
                req,
                scanned_to + 1,
                horizon,
                others_ok,
                timings,
                stop_when_found=True,
                may_hold=may_hold if priced else None,
            )
            priced += more
        if not len(pool):
            continue
        pos, _ = solve_mip(pool, _without(lim, k), cols[k], req.solver)
        if pos is None:
            continue
        relax.append(_relaxation(k, float(pool.iloc[pos][cols[k]]), lim, req))
    outlived = _shortest_outlived(cat, req, horizon) if priced == 0 else None
    if outlived is not None:
        hours, nodes, server = outlived
        msg = (
            f"Every configuration of '{req.model}' that fits the allowed servers (searched up to {horizon:,} nodes) "
            f"runs longer than the servers' {req.life_years:g}-year service life (--life-years): the fastest, "
            f"{nodes:,} x {server}, takes {_years(hours)}{_counting(req)}. Bought servers would retire before "
            f"the run ends. {_outlived_advice(req, nodes >= horizon)}"
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


def _counting(req: PlanRequest) -> str:
    """', counting the run's 1 h of start-up and 20 evaluations' where the request states them (run_terms_phrase)."""
    return f", counting the run's {run_terms_phrase(req)}" if req.startup_s or req.evaluations else ""


def _outlived_advice(req: PlanRequest, at_horizon: bool) -> str:
    """What shortens a bought run that outlives its servers: a start-up no hardware shortens needs to be shorter
    itself (or a longer life, or renting); otherwise faster hardware or less work, and more nodes only where the
    fastest configuration is at the most nodes searched (``at_horizon``) -- where it uses fewer, every count above it
    up to the horizon was searched and is slower (the workload's batch limit or memory), so more nodes are no
    advice."""
    if req.startup_s / 3600.0 >= req.life_years * cost.HOURS_PER_YEAR:
        return "Its start-up alone (--startup-s) outlasts them: shorten it, lengthen --life-years, or rent (--either)."
    more = "fewer or shorter evaluations, " if req.evaluations else ""
    nodes = "more nodes (--max-nodes), " if at_horizon else ""
    return f"Allow {nodes}faster GPUs, less work, {more}or renting (--either)."


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
            # the run as the candidates time it: training plus the request's evaluations and start-up
            hours = with_run_terms_h(
                cat,
                req,
                {
                    "time_to_train_h": df["time_to_train_h"].to_numpy(dtype=float),
                    "throughput_samples_per_s": df["throughput_samples_per_s"].to_numpy(dtype=float),
                },
            )
            i = int(np.argmin(hours))
            if best is None or float(hours[i]) < best[0]:
                best = (float(hours[i]), int(df["nodes"].iloc[i]), str(df["server"].iloc[i]))
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
        m = Masks(cand, lim, req, cat)
        picks = [np.zeros(0, dtype=np.int64)]
        for a, b in pair_list:
            picks.append(frontier(m.values[a], m.values[b], m.all_but(a, b)))
        return np.concatenate(picks)

    kept, _ = scan(cat, req, 1, horizon, reducer, timings)
    if not len(kept):
        return []
    m = Masks(kept, lim, req, cat)
    out: list[RelaxationPair] = []
    for a, b in pair_list:
        idx = frontier(m.values[a], m.values[b], m.all_but(a, b))
        if not idx.size:
            continue
        if idx.size > PAIR_POINTS:
            idx = idx[np.unique(np.round(np.linspace(0, idx.size - 1, PAIR_POINTS)).astype(int))]
        for i in idx:
            rel = []
            for k in (a, b):
                rel.append(_relaxation(k, float(kept.iloc[int(i)][cols[k]]), lim, req))
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


def relaxation_horizon(max_nodes: int) -> int:
    """Largest node count considered when explaining an infeasible request (nodes relaxations)."""
    return min(100_000, max(4 * max_nodes, 64))
