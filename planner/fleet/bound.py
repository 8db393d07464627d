r"""A lower bound on the fleet MIP by branching on the number of nodes bought of each server type.

The fleet MIP (planner/fleet/fleet.py) has a weak purchase space: its LP relaxation buys fractions of server types
and spreads their use over the horizon. This module searches the purchases outside HiGHS, on the LP relaxation.

Search
------
Let N_p = sum_{f in F_p} N_pf be the nodes of type p bought on any fabric; in every solution of the MIP it is an
integer. A node of the search is a box lo_p <= N_p <= hi_p on some types. Its value is the optimum of the LP
relaxation of the fleet MIP (every integrality dropped) with the box added as rows. The search is best-first:
it takes the open node of least value. If that value is at least the incumbent's, it stops. Otherwise it
branches on the type whose total is fractional with the largest cost at stake (objective coefficient of N_p
x distance to the nearer integer): N_p <= floor(v) and N_p >= ceil(v). A node whose totals are all integral
is a leaf: it is kept with its LP value and not split further (a purchase branch has nothing left to split
there) -- or, with ``leaf_mip_s``, solved as the MIP over its box by HiGHS for up to that many seconds: its value
becomes max(LP value, HiGHS's dual bound of that MIP), an infeasible leaf MIP drops the leaf, and a plan it
finds below the incumbent becomes the incumbent (a plan of the full MIP: the box only adds rows). Every LP is
re-solved in one HiGHS object, warm-started from its parent's basis, within the time limit.

Validity (why ``bound`` never exceeds the MIP optimum)
------------------------------------------------------
Let x* be an optimal solution of the MIP. Its totals N_p(x*) are integers, so at each split x* lies in exactly
one child (no integer lies strictly between floor(v) and ceil(v)). Hence at every moment x* lies in exactly one
node that is open, a leaf, or pruned. The value of an open node or leaf is the optimum of a relaxation of the
MIP restricted to its box (a leaf MIP's dual bound is one too), so it is <= the objective of x*. A node is
pruned only when it is infeasible (it holds no solution) or its value is >= the incumbent (then incumbent <=
objective of x*). A node whose LP is not
solved to optimality (time limit) keeps its parent's value, which is a valid bound for it (a child's box lies
inside its parent's). So ``bound = min(incumbent, values of the open nodes and leaves)`` is <= the optimum.
The bound is +inf when the LP relaxation is infeasible or (finished search, leaf MIPs) every leaf MIP is.
It is never below the root LP (a child's LP is a restriction of its parent's; the value kept is the larger
of the two). It bounds the MIP's objective as written, with its 1e-6 early-slot tie-break.

Measured (``python bench/bench_fleet.py [--jobs N] [--no-root] --purchase-bound 60 [--leaf-mip 10]``, 2 shared
cores): at 50 jobs each LP takes seconds and moves the bound little -- 3,058,187 -> 3,058,541 USD in 60 s (18 LPs)
against a plan of 3,915,785 USD (before the physics update bc08729: the root LP bought 3.11 GB200 NVL72 racks,
N <= 3 gave 2,547,179 USD, N >= 4 3,008,042 USD, and 60 s reached 2,549,215 from 2,539,922). 20 jobs: 1,283,107
-> 1,285,939 USD in 30 s, below HiGHS's own 1,307,544. Run to the end on 10 jobs x 8 types x 12 slots (nodes
<= 64, older physics) it stops at 471,548 USD (root 465,955, optimum 505,634): once the purchase is integral the
LP is still weak in the schedule. So planner.fleet.fleet does not call it; the bench does.
"""

from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass
from typing import Any

import highspy
import numpy as np
import pyomo.environ as pyo
from pyomo.repn.plugins.standard_form import LinearStandardFormCompiler

INTEGRAL_TOL = 1e-5  # a type total within this of an integer counts as integral (LP feasibility is 1e-7 per column)


@dataclass
class PurchaseBound:
    """Result of ``purchase_bound``: the bound and the search's figures."""

    bound: float  # valid lower bound on the MIP optimum (+inf: the MIP is infeasible)
    root: float  # the root LP relaxation's optimum (+inf: infeasible)
    complete: bool  # the search ended (no open node below the incumbent), not stopped by the time limit
    nodes: int  # LPs solved (root included)
    open_nodes: int
    leaves: int
    seconds: float
    history: list[tuple[float, float]]  # (seconds since the start, bound) after every node
    incumbent: float = math.inf  # the best objective known at the end (the caller's, or a leaf MIP's)
    solution: np.ndarray | None = None  # column values of a leaf MIP's plan when it improved the incumbent
    columns: list[Any] | None = None  # the Pyomo variables of those columns


def _lp(m: pyo.ConcreteModel) -> tuple[highspy.HighsLp, list[Any]]:
    """The MIP m as HiGHS arrays (bounds, rows, objective as written, integrality of every column)."""
    repn = LinearStandardFormCompiler().write(m, mixed_form=True, set_sense=None)
    cols = repn.columns
    inf = highspy.kHighsInf
    sense = np.array([s for _, s in repn.rows], dtype=int)
    rhs = np.asarray(repn.rhs, dtype=float)
    A = repn.A.tocsc()
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = len(cols), A.shape[0]
    lp.col_cost_ = np.asarray(repn.c.toarray()).ravel() if repn.c.shape[0] else np.zeros(len(cols))
    lp.col_lower_ = np.array([-inf if v.lb is None else v.lb for v in cols], dtype=float)
    lp.col_upper_ = np.array([inf if v.ub is None else v.ub for v in cols], dtype=float)
    lp.row_lower_ = np.where(sense >= 0, np.where(sense == 0, rhs, -inf), rhs)
    lp.row_upper_ = np.where(sense <= 0, np.where(sense == 0, rhs, inf), rhs)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = A.indptr
    lp.a_matrix_.index_ = A.indices
    lp.a_matrix_.value_ = A.data
    lp.offset_ = float(repn.c_offset[0]) if len(repn.c_offset) else 0.0
    lp.integrality_ = [
        highspy.HighsVarType.kInteger if v.is_integer() or v.is_binary() else highspy.HighsVarType.kContinuous
        for v in cols
    ]
    return lp, cols


def _highs(lp: highspy.HighsLp, integer: bool, rows: list[tuple[np.ndarray, float]], deadline: list[float]) -> Any:
    """A HiGHS object holding ``lp`` (as a MIP or its LP relaxation) plus one row 0 <= sum x[idx] <= top per
    entry of ``rows``, stopped by the callback once time.perf_counter() passes deadline[0] (HiGHS's own time
    limit counts the run time accumulated over the re-solves of one object)."""
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    saved = lp.integrality_
    if not integer:
        h.setOptionValue("presolve", "off")  # a warm-started dual simplex re-solve needs the unpresolved LP
        lp.integrality_ = []
    try:
        h.passModel(lp)
    finally:
        lp.integrality_ = saved
    for idx, top in rows:
        h.addRow(0.0, top, len(idx), idx, np.ones(len(idx)))

    def stop(event: Any) -> None:
        if time.perf_counter() > deadline[0]:
            event.interrupt()

    h.cbSimplexInterrupt += stop
    if integer:
        h.cbMipInterrupt += stop
    return h


def _settled(h: Any, deadline: list[float]) -> Any:
    """The LP's status, re-solved from scratch when the warm-started dual simplex without presolve ends 'Unknown'
    (it did on a tiny fleet whose LP is infeasible, with a switch price of 6e-81 USD: the bound then stopped at its
    root): first with presolve, then with the interior-point solver; the options are restored after."""
    status = h.getModelStatus()
    for option, value, default in (("presolve", "on", "off"), ("solver", "ipm", "choose")):
        if status != highspy.HighsModelStatus.kUnknown:
            break
        h.clearSolver()
        h.setOptionValue(option, value)
        # bounded by the caller's deadline (the interrupt callback is the simplex's; interior point does not poll it)
        h.setOptionValue("time_limit", h.getRunTime() + max(0.0, deadline[0] - time.perf_counter()))
        try:
            h.run()
        finally:
            h.setOptionValue(option, default)
            h.setOptionValue("time_limit", highspy.kHighsInf)
        status = h.getModelStatus()
    return status


def purchase_bound(
    m: pyo.ConcreteModel, incumbent: float | None, time_limit_s: float, leaf_mip_s: float = 0.0
) -> PurchaseBound:
    """Best-first branching on the node count bought of each type (module docstring), on the LP relaxation of
    the fleet MIP ``m`` (as built by planner.fleet.fleet.build_fleet_model), for at most ``time_limit_s`` seconds.
    ``incumbent`` is the objective of a known plan of m (or None). With ``leaf_mip_s`` > 0 every leaf is then
    solved as a MIP over its box for up to that many seconds (its bound replaces the leaf's LP value, its plans
    improve the incumbent). Returns a bound <= the MIP optimum (of m's objective, tie-break included)."""
    t0 = time.perf_counter()
    deadline = [t0 + time_limit_s]
    lp, cols = _lp(m)
    cost = np.asarray(lp.col_cost_)
    by_type: dict[str, list[int]] = {}
    for i, v in enumerate(cols):
        if v.parent_component() is m.N:
            by_type.setdefault(str(v.index()[0]), []).append(i)
    types = sorted(by_type)
    top = float(max((cols[i].ub or 0.0) * len(by_type[p]) for p in types for i in by_type[p])) if types else 0.0
    rows = [(np.asarray(by_type[p], dtype=np.int32), top) for p in types]
    h = _highs(lp, False, rows, deadline)
    row0 = h.getNumRow() - len(types)
    weight = {p: float(max(cost[i] for i in by_type[p])) for p in types}
    inc = math.inf if incumbent is None else float(incumbent)
    mip: Any = None
    best_x: np.ndarray | None = None
    Box = dict[str, tuple[float, float]]

    def left() -> float:
        return deadline[0] - time.perf_counter()

    def set_box(hh: Any, box: Box) -> None:
        for k, p in enumerate(types):
            lo, hi = box.get(p, (0.0, top))
            hh.changeRowBounds(row0 + k, lo, hi)

    def solve(box: Box, basis: Any) -> tuple[str, float, dict[str, float], Any]:
        set_box(h, box)
        if basis is not None:
            h.setBasis(basis)
        h.run()
        status = _settled(h, deadline)
        if status == highspy.HighsModelStatus.kInfeasible:
            return "infeasible", math.inf, {}, None
        if status != highspy.HighsModelStatus.kOptimal:
            return "stopped", math.nan, {}, None
        x = np.asarray(h.getSolution().col_value)
        totals = {p: float(x[by_type[p]].sum()) for p in types}
        return "optimal", float(h.getInfo().objective_function_value), totals, h.getBasis()

    def solve_leaf(box: Box, value: float) -> float:
        """The leaf's MIP over its box: its dual bound (at least the LP value), and the incumbent from its plan."""
        nonlocal mip, inc, best_x
        if mip is None:
            mip = _highs(lp, True, rows, deadline)
            mip.setOptionValue("mip_rel_gap", 1e-6)
        set_box(mip, box)
        end = deadline[0]
        deadline[0] = min(end, time.perf_counter() + leaf_mip_s)
        # the callback does not reach into presolve's probing: HiGHS's own limit too (on its accumulated clock)
        mip.setOptionValue("time_limit", mip.getRunTime() + max(0.0, deadline[0] - time.perf_counter()))
        try:
            mip.run()
        finally:
            deadline[0] = end
        info = mip.getInfo()
        if mip.getModelStatus() == highspy.HighsModelStatus.kInfeasible:
            return math.inf
        if info.primal_solution_status == 2 and info.objective_function_value < inc:
            inc = float(info.objective_function_value)
            best_x = np.asarray(mip.getSolution().col_value)
        bound = float(info.mip_dual_bound) if math.isfinite(info.mip_dual_bound) else -math.inf
        return max(value, bound)

    status, root, totals, basis = solve({}, None)
    nodes = 1
    history: list[tuple[float, float]] = []
    if status != "optimal":
        done = status == "infeasible"
        b = math.inf if done else -math.inf
        return PurchaseBound(b, b, done, nodes, int(not done), 0, time.perf_counter() - t0, history)
    # open nodes: (value, tie, box, totals, basis), value = the node's LP optimum (a child's is >= its parent's)
    heap: list[tuple[float, int, Box, dict[str, float], Any]] = [(root, 0, {}, totals, basis)]
    leaves: list[float] = []  # values of the leaves (all totals integral), LP or leaf MIP bound
    unsolved: list[float] = []  # children left unsolved at the time limit: their parent's value
    tie = 1

    def current() -> float:
        return min([inc, *leaves, *unsolved, *(n[0] for n in heap)])

    history.append((time.perf_counter() - t0, current()))
    stopped = False
    while heap and heap[0][0] < inc and not stopped:
        value, _, box, totals, basis = heapq.heappop(heap)
        frac = [
            (weight[p] * min(v - math.floor(v), math.ceil(v) - v), p)
            for p, v in totals.items()
            if abs(v - round(v)) > INTEGRAL_TOL
        ]
        if not frac:
            leaf = solve_leaf(box, value) if leaf_mip_s > 0 and left() > 0 else value
            if leaf < inc:
                leaves.append(leaf)
            history.append((time.perf_counter() - t0, current()))
            continue
        _, p = max(frac)
        v = totals[p]
        lo, hi = box.get(p, (0.0, top))
        for kid in (dict(box, **{p: (lo, float(math.floor(v)))}), dict(box, **{p: (float(math.ceil(v)), hi)})):
            st, kv, kt, kb = ("stopped", math.nan, {}, None) if stopped or left() <= 0 else solve(kid, basis)
            nodes += st != "stopped"
            if st == "stopped":
                # not solved (time limit): the search ends; the child keeps its parent's value, a valid bound of
                # its box (it lies inside the parent's)
                stopped = True
                unsolved.append(value)
            elif st == "optimal" and kv < inc:
                heapq.heappush(heap, (max(kv, value), tie, kid, kt, kb))
                tie += 1
        history.append((time.perf_counter() - t0, current()))
    leaves = [v for v in leaves if v < inc]
    complete = not stopped and (not heap or heap[0][0] >= inc)
    return PurchaseBound(
        current(),
        root,
        complete,
        nodes,
        len(heap) + len(unsolved),
        len(leaves),
        time.perf_counter() - t0,
        history,
        inc,
        best_x,
        cols,
    )
