r"""A lower bound on the fleet MIP by branching on the number of nodes bought of each server type.

The fleet MIP (planner/fleet/formulation.py) has a weak purchase space: its LP relaxation buys fractions of server types
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

``fleet()`` does not call it: on the benchmark's instances each LP takes seconds and moves the bound little, and
once the purchase is integral the LP is still weak in the schedule (docs/fleet-bound.md, "Branching on the
purchase"). ``python bench/bench_fleet.py --purchase-bound S [--leaf-mip S2]`` runs it.
"""

from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass, field
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


def as_highs_lp(m: pyo.ConcreteModel) -> tuple[highspy.HighsLp, list[Any]]:
    """The MIP m as HiGHS arrays (bounds, rows, objective as written, integrality of every column), and the Pyomo
    variable of each column."""
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


Box = dict[str, tuple[float, float]]  # lo_p <= N_p <= hi_p of the types a node of the search bounds
Node = tuple[float, int, Box, dict[str, float], Any]  # an open node: (value, tie, box, type totals, LP basis)


def purchase_bound(
    m: pyo.ConcreteModel, incumbent: float | None, time_limit_s: float, leaf_mip_s: float = 0.0
) -> PurchaseBound:
    """Best-first branching on the node count bought of each type (module docstring), on the LP relaxation of
    the fleet MIP ``m`` (``planner.fleet.build_fleet_model(...).model``), for at most ``time_limit_s`` seconds.
    ``incumbent`` is the objective of a known plan of m (or None). With ``leaf_mip_s`` > 0 every leaf is then
    solved as a MIP over its box for up to that many seconds (its bound replaces the leaf's LP value, its plans
    improve the incumbent). Returns a bound <= the MIP optimum (of m's objective, tie-break included)."""
    search = _Search.of(m, incumbent, time.perf_counter() + time_limit_s, leaf_mip_s)
    status, root, totals, basis = search.solve({}, None)
    search.nodes = 1
    if status != "optimal":
        done = status == "infeasible"
        b = math.inf if done else -math.inf
        return PurchaseBound(b, b, done, search.nodes, int(not done), 0, search.elapsed(), search.history)
    search.heap.append((root, 0, {}, totals, basis))
    search.record()
    while search.heap and search.heap[0][0] < search.inc and not search.stopped:
        search.step()
    search.leaves = [v for v in search.leaves if v < search.inc]
    complete = not search.stopped and (not search.heap or search.heap[0][0] >= search.inc)
    return PurchaseBound(
        search.current(),
        root,
        complete,
        search.nodes,
        len(search.heap) + len(search.unsolved),
        len(search.leaves),
        search.elapsed(),
        search.history,
        search.inc,
        search.best_x,
        search.cols,
    )


@dataclass
class _Search:
    """The state of ``purchase_bound``'s search: the LP (one HiGHS object re-solved from its parent's basis, one row
    per type total), the leaf MIP when asked for, the incumbent, the open nodes (a heap by value), the leaves and
    the children left unsolved at the time limit."""

    lp: highspy.HighsLp
    cols: list[Any]
    h: Any
    rows: list[tuple[np.ndarray, float]]
    by_type: dict[str, list[int]]
    types: list[str]
    top: float  # the most nodes of a type in any box
    row0: int  # the first type-total row of h
    weight: dict[str, float]  # the objective coefficient of a type's nodes: the cost at stake when it is fractional
    deadline: list[float]  # time.perf_counter() instant; a list, as _highs's interrupt callback reads it
    leaf_mip_s: float
    inc: float
    t0: float = field(default_factory=time.perf_counter)
    mip: Any = None
    best_x: np.ndarray | None = None
    nodes: int = 0  # LPs solved (root included)
    tie: int = 1
    stopped: bool = False
    heap: list[Node] = field(default_factory=list)  # open nodes; value = its LP optimum (>= its parent's)
    leaves: list[float] = field(default_factory=list)  # values of the leaves (all totals integral): LP or leaf MIP
    unsolved: list[float] = field(default_factory=list)  # children left unsolved at the time limit: parent's value
    history: list[tuple[float, float]] = field(default_factory=list)

    @classmethod
    def of(cls, m: pyo.ConcreteModel, incumbent: float | None, deadline: float, leaf_mip_s: float) -> _Search:
        """The search on m's LP relaxation with a row per type total, nothing solved yet."""
        t0 = time.perf_counter()
        lp, cols = as_highs_lp(m)
        cost = np.asarray(lp.col_cost_)
        by_type: dict[str, list[int]] = {}
        for i, v in enumerate(cols):
            if v.parent_component() is m.N:
                by_type.setdefault(str(v.index()[0]), []).append(i)
        types = sorted(by_type)
        top = float(max((cols[i].ub or 0.0) * len(by_type[p]) for p in types for i in by_type[p])) if types else 0.0
        rows = [(np.asarray(by_type[p], dtype=np.int32), top) for p in types]
        dl = [deadline]
        h = _highs(lp, False, rows, dl)
        row0 = h.getNumRow() - len(types)
        weight = {p: float(max(cost[i] for i in by_type[p])) for p in types}
        inc = math.inf if incumbent is None else float(incumbent)
        return cls(lp, cols, h, rows, by_type, types, top, row0, weight, dl, leaf_mip_s, inc, t0)

    def left(self) -> float:
        return self.deadline[0] - time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def current(self) -> float:
        """The bound now: the least of the incumbent and the values of the leaves, unsolved children and open nodes."""
        return min([self.inc, *self.leaves, *self.unsolved, *(n[0] for n in self.heap)])

    def record(self) -> None:
        self.history.append((self.elapsed(), self.current()))

    def set_box(self, hh: Any, box: Box) -> None:
        for k, p in enumerate(self.types):
            lo, hi = box.get(p, (0.0, self.top))
            hh.changeRowBounds(self.row0 + k, lo, hi)

    def solve(self, box: Box, basis: Any) -> tuple[str, float, dict[str, float], Any]:
        """The LP over ``box`` from ``basis``: (optimal / infeasible / stopped, its value, the type totals, its
        basis)."""
        h = self.h
        self.set_box(h, box)
        if basis is not None:
            h.setBasis(basis)
        h.run()
        status = _settled(h, self.deadline)
        if status == highspy.HighsModelStatus.kInfeasible:
            return "infeasible", math.inf, {}, None
        if status != highspy.HighsModelStatus.kOptimal:
            return "stopped", math.nan, {}, None
        x = np.asarray(h.getSolution().col_value)
        totals = {p: float(x[self.by_type[p]].sum()) for p in self.types}
        return "optimal", float(h.getInfo().objective_function_value), totals, h.getBasis()

    def solve_leaf(self, box: Box, value: float) -> float:
        """The leaf's MIP over its box: its dual bound (at least the LP value), and the incumbent from its plan."""
        if self.mip is None:
            self.mip = _highs(self.lp, True, self.rows, self.deadline)
            self.mip.setOptionValue("mip_rel_gap", 1e-6)
        mip = self.mip
        self.set_box(mip, box)
        end = self.deadline[0]
        self.deadline[0] = min(end, time.perf_counter() + self.leaf_mip_s)
        # the callback does not reach into presolve's probing: HiGHS's own limit too (on its accumulated clock)
        mip.setOptionValue("time_limit", mip.getRunTime() + max(0.0, self.deadline[0] - time.perf_counter()))
        try:
            mip.run()
        finally:
            self.deadline[0] = end
        info = mip.getInfo()
        if mip.getModelStatus() == highspy.HighsModelStatus.kInfeasible:
            return math.inf
        if info.primal_solution_status == 2 and info.objective_function_value < self.inc:
            self.inc = float(info.objective_function_value)
            self.best_x = np.asarray(mip.getSolution().col_value)
        bound = float(info.mip_dual_bound) if math.isfinite(info.mip_dual_bound) else -math.inf
        return max(value, bound)

    def step(self) -> None:
        """The open node of least value: kept as a leaf when every type total is integral, else split on the type
        whose fractional total has the most cost at stake, N_p <= floor(v) and N_p >= ceil(v)."""
        value, _, box, totals, basis = heapq.heappop(self.heap)
        frac = [
            (self.weight[p] * min(v - math.floor(v), math.ceil(v) - v), p)
            for p, v in totals.items()
            if abs(v - round(v)) > INTEGRAL_TOL
        ]
        if not frac:
            leaf = self.solve_leaf(box, value) if self.leaf_mip_s > 0 and self.left() > 0 else value
            if leaf < self.inc:
                self.leaves.append(leaf)
            self.record()
            return
        _, p = max(frac)
        v = totals[p]
        lo, hi = box.get(p, (0.0, self.top))
        for kid in (dict(box, **{p: (lo, float(math.floor(v)))}), dict(box, **{p: (float(math.ceil(v)), hi)})):
            stop = self.stopped or self.left() <= 0
            st, kv, kt, kb = ("stopped", math.nan, {}, None) if stop else self.solve(kid, basis)
            self.nodes += st != "stopped"
            if st == "stopped":
                # not solved (time limit): the search ends; the child keeps its parent's value, a valid bound of
                # its box (it lies inside the parent's)
                self.stopped = True
                self.unsolved.append(value)
            elif st == "optimal" and kv < self.inc:
                heapq.heappush(self.heap, (max(kv, value), self.tie, kid, kt, kb))
                self.tie += 1
        self.record()
