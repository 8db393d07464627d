"""Candidates that differ only by the fabric (or the power cap) and tie: which one is the plan, and which ones the
alternatives repeat.

A fabric is the network between nodes. What it adds to a configuration -- NIC ports' price and power, switches,
cables (planner/physics/cost.py, power.py: none of them for one node) and the time of collectives between nodes
(planner/physics/communication.py: a one-node job spans no nodes) -- is zero for a plan of one node, so the
candidates of one server, cap, site, purchase and node count on the server's fabrics can carry equal figures: one
hardware choice under several fabric names. The MIP then has several optima, and which one HiGHS returns depends
on its search path (the order of the candidate columns, for one); the rules here state it:

* the plan: of the candidates whose objective equals the MIP's optimum exactly -- these one-node ones, and any
  others (two server types of one board and host power at equal energy, rented plans billed the same periods) --
  the first by the other objectives, then fewer nodes, then the fabric that comes first in the catalog's order
  (``catalog.fabrics``, the order of catalog/fabrics.yaml), that meets every requirement (``objective_ties``, used
  by plan.solve);
* the alternatives: a plan that differs from one shown before it (the plan or an alternative) by the fabric or the
  power cap only, every other figure equal (``same_choice``), is the same hardware choice and is not listed again:
  one node on another fabric, or a cap above what the GPUs draw under load (a GPU drawing 90% of its TDP while
  training runs the same at caps of 90% and 100%: planner/physics/power.py). Of such candidates the one listed is
  the first in the catalog's fabric order (``fabric_rank`` orders equal objectives), then the lowest cap.

Equality is read from the figures, not from the node count: where a fabric changes a one-node figure the plans
differ and both are listed (owned servers cabled to one fabric give a one-node plan on that fabric their credit and
none on another: planner/plan/owned.py).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from planner.checks.request import PlanRequest
from planner.data import Catalog
from planner.plan.reduce import HARDWARE_KEY
from planner.plan.result import Plan

# Two figures are equal within this relative difference (the rounding allowance of plan.limits.within): the plan
# and the alternatives are re-evaluated by the scalar and the batched path of the exact model (plan.plans), which
# may sum in another order. What a fabric adds where it enters a figure (a NIC's price or watts, a collective's
# time) is many orders of magnitude above it.
SAME_FIGURE_REL = 1e-9

# The columns two candidates that differ only by the fabric or the power cap share: the hardware option but those,
# and the nodes
SAME_CHOICE_COLUMNS = (*(c for c in HARDWARE_KEY if c not in ("fabric", "power_cap")), "nodes")
# What two plans of one hardware choice may differ in (``same_choice``): the fabric, the cap and the cap in watts
CHOICE_KNOBS = frozenset({"fabric", "power_cap", "power_cap_w"})


def fabric_rank(catalog: Catalog, cand: pd.DataFrame, rows: np.ndarray | None = None) -> np.ndarray:
    """The fabric's position in the catalog's order (``catalog.fabrics``) of each candidate (of the ``rows`` of
    ``cand``, default all); a fabric the catalog does not list (none in a scanned table) after every listed one."""
    order = {f: i for i, f in enumerate(catalog.fabrics)}
    fabric = cand["fabric"]
    if isinstance(fabric.dtype, pd.CategoricalDtype):  # one lookup per category, not per row
        rank = np.asarray([order.get(str(c), len(order)) for c in fabric.cat.categories], dtype=np.int64)
        codes = np.asarray(fabric.cat.codes, dtype=np.int64)
        return rank[codes if rows is None else codes[rows]]
    names = fabric.astype(str).to_numpy() if rows is None else fabric.astype(str).to_numpy()[rows]
    return np.asarray([order.get(f, len(order)) for f in names], dtype=np.int64)


def _values(pool: pd.DataFrame, col: str) -> np.ndarray:
    """A column of the pool as numbers that compare as its values do: a categorical's codes, else its values."""
    c = pool[col]
    if isinstance(c.dtype, pd.CategoricalDtype):
        return np.asarray(c.cat.codes)
    return c.to_numpy()


# Of candidates that tie exactly on the objective, the plan is the first in this order of the other objectives'
# columns (the objective's own left out): the cheapest, then the least facility energy, the least carbon, the fastest
# -- then fewer nodes, then the catalog's fabric order (``objective_ties``)
TIE_ORDER = ("cost_usd", "facility_energy_kwh", "carbon_kg", "time_to_train_h")


def objective_ties(catalog: Catalog, pool: pd.DataFrame, chosen: int, column: str, exclude: list[int]) -> list[int]:
    """Positions in ``pool`` of the candidates whose objective ``column`` equals the ``chosen`` one's exactly,
    ``chosen`` among them and the ``exclude``d (cut off: the exact re-check rejected them) not, best first: by the
    other objectives in ``TIE_ORDER``, then fewer nodes, then the catalog's fabric order (``fabric_rank``), then
    pool order (``tie_keys``). One-node ties across fabrics (every figure equal) come out in the catalog's fabric
    order."""
    same = pool[column].to_numpy(dtype=float) == float(pool[column].iloc[chosen])
    if exclude:
        same[np.asarray(exclude, dtype=np.int64)] = False
    same[chosen] = True
    idx = np.flatnonzero(same)
    if len(idx) == 1:
        return [chosen]
    return [int(i) for i in idx[np.lexsort((idx, *tie_keys(catalog, pool, idx, column)))]]


def tie_keys(catalog: Catalog, pool: pd.DataFrame, idx: np.ndarray, column: str) -> tuple[np.ndarray, ...]:
    """The order of candidates ``idx`` of ``pool`` that tie on the objective ``column``, as ``np.lexsort`` keys (the
    last the most significant): the other objectives in ``TIE_ORDER``, then fewer nodes, then the catalog's fabric
    order (``fabric_rank``)."""
    then = [pool[c].to_numpy(dtype=float)[idx] for c in TIE_ORDER if c != column and c in pool]
    return (fabric_rank(catalog, pool, idx), pool["nodes"].to_numpy()[idx], *reversed(then))


def likely_repeats(pool: pd.DataFrame, chosen: int, order: list[int], column: str) -> set[int]:
    """The positions of ``order`` (candidates in ``pool``, best first) that share the server, site, purchase, node
    count and objective ``column`` with the ``chosen`` candidate or one before them in ``order``: the ones that may
    repeat a plan under another fabric or cap (``same_choice`` decides, from the re-evaluated plans). Read from the
    pool, so that the alternatives evaluate them with the rows that would replace them, in one batch."""
    if not order:
        return set()
    rows = np.asarray([chosen, *order], dtype=np.int64)
    keys = list(zip(*(_values(pool, c)[rows].tolist() for c in (*SAME_CHOICE_COLUMNS, column)), strict=True))
    seen = {keys[0]}
    out: set[int] = set()
    for i, k in zip(order, keys[1:], strict=True):
        if k in seen:
            out.add(i)
        seen.add(k)
    return out


def repeats(plan: Plan, ranked: list[tuple[int, Plan]]) -> set[int]:
    """The keys of the ``ranked`` plans (key, plan; best first) that repeat ``plan`` or a plan before them that
    repeats none (``same_choice``)."""
    out: set[int] = set()
    before = [plan]
    for i, p in ranked:
        if any(same_choice(p, q) for q in before):
            out.add(i)
        else:
            before.append(p)
    return out


def same_plan_on(req: PlanRequest, pool: pd.DataFrame, chosen: int, pos: int, plan: Plan) -> Plan | None:
    """The plan of candidate ``pos`` without evaluating it again, where the fabric provably enters none of its
    figures: one node (no NICs, cables, switches or collectives between nodes), no owned server of its type (owned
    credit is per fabric), and its candidate row equal to the ``chosen`` one's (the ``plan``'s) in every number the
    pool carries. Then it is ``plan`` on the other fabric; None otherwise (the caller re-evaluates it)."""
    if plan.nodes != 1 or any(o.server == plan.server for o in req.owned):
        return None
    numbers = pool.iloc[[chosen, pos]].select_dtypes(include="number").to_numpy(dtype=float)
    if not np.array_equal(numbers[0], numbers[1], equal_nan=True):
        return None
    fabric = str(pool["fabric"].iloc[pos])
    return plan.model_copy(update={"fabric": fabric, "estimate": plan.estimate.model_copy(update={"fabric": fabric})})


def same_choice(a: Plan, b: Plan) -> bool:
    """Whether two plans are one hardware choice under two fabric names or two power caps: every field of each plan
    and of its exact estimate (the figures, their breakdowns, the layout, the owned nodes, the GPUs' power) equal but
    the fabric and the cap -- numbers within SAME_FIGURE_REL, everything else exactly."""
    if (a.server, a.site, a.purchase, a.nodes) != (b.server, b.site, b.purchase, b.nodes):
        return False
    return _same(_without_knobs(a), _without_knobs(b))


def _without_knobs(p: Plan) -> dict[str, Any]:
    """A plan's fields and its estimate's, the fabric and the power cap left out of both (``CHOICE_KNOBS``)."""
    d = p.model_dump(exclude={*CHOICE_KNOBS, "estimate"})
    d["estimate"] = p.estimate.model_dump(exclude=set(CHOICE_KNOBS))
    return d


def _same(x: Any, y: Any) -> bool:
    """Equal values: dicts with the same keys and equal values, floats within SAME_FIGURE_REL (nan equal to nan),
    anything else by ``==``."""
    if isinstance(x, dict) and isinstance(y, dict):
        return x.keys() == y.keys() and all(_same(x[k], y[k]) for k in x)
    if isinstance(x, float) and isinstance(y, float):
        return (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=SAME_FIGURE_REL, abs_tol=0.0)
    return bool(x == y)
