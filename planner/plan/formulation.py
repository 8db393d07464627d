r"""The capacity-plan MIP (Pyomo). Solved by HiGHS in planner/solver/highs.py.

Data (from planner/plan/candidates.py; every number comes from the exact model, planner/physics/space.py)
------------------------------------------------------------------------------------------
K               candidate plans k = (server type s, fabric f, power-cap level c, site, buy|rent, node count n)
                for EVERY integer n in 1..N_max (N_max = the node limit; the explanations of an infeasible
                request scan further, to the relaxation horizon). Only candidates whose best layout fits GPU
                memory, is valid (tensor x pipeline degrees divide the GPUs, the batch divides) and that can be
                bought/rented are listed.
S, F, C, P      server types, fabrics, (GPU type, cap level) pairs and purchase modes present in K.
T_k  [h]        time to train;         E_k [kWh] facility energy;   CO2_k [kg] carbon
COST_k [USD]    run cost (amortized capex or rent, plus energy);     UP_k [USD] up-front spend
                (capex when buying, the whole rent when renting). Owned servers (PlanRequest.owned) enter
                here only: a bought candidate on their server type and fabric pays capex(n) - capex(k), k = the
                owned nodes in service for the whole run, up to n (plan.owned.owned_credit_usd), and its run cost
                the amortized share of that. The credit depends on the candidate alone, so everything below holds.
PFAC_k [kW]     facility power;        n_k nodes;   SW_k switches (integral leaf/spine count for n_k);
RU_k            rack units (n_k x the server's height).

Variables
---------
x_k  in {0,1}           candidate k is the plan
u_s  in {0,1}           server type s is used;      v_f in {0,1} fabric f is used
w_c  in {0,1}           cap level c (per GPU type) is used
nodes_s in Z>=0         nodes of server type s;      switches_f in Z>=0 switches of fabric f

Constraints (one function each, below)
--------------------------------------
(1) one plan            sum_k x_k = 1
(2) choice links        u_s = sum_{k in K_s} x_k,  v_f = sum_{k in K_f} x_k,  w_c = sum_{k in K_c} x_k
                        (with (1) exactly one server type, fabric and cap level is used; the
                        aggregated form keeps the model at |S|+|F|+|C| rows instead of 3|K|)
(3) node count          nodes_s = sum_{k in K_s} n_k x_k
(4) switches            switches_f = sum_{k in K_f} SW_k x_k              (integral by construction)
(5) deadline            sum_k T_k x_k <= D (1 + tol)                (throughput >= work / deadline)
(6) budget              sum_k UP_k x_k <= B (1 + tol)   (or COST_k for a total-cost budget)
(7) power envelope      sum_k PFAC_k x_k <= P_max (1 + tol)
(8) node / rack limits  sum_s nodes_s <= N_max;  sum_k RU_k x_k <= RU_max      (integers: exact)
(9) epsilon             sum_k g_k x_k <= eps  for each bounded second objective g (Pareto fronts; exact, as the
                        presolve applies it)
                        tol = REL_TOL = 1e-9: the rounding allowance of the one definition of meeting a limit
                        (plan.limits.within, used by the presolve, the explanations and the re-check of every plan),
                        so the rows admit exactly the candidates that definition admits -- an exact row under a
                        limit a plan meets within rounding would cut the optimum that the presolve kept as its
                        option's only candidate (found by tests/plan/test_independent_brute_force.py)
(10) exclusions         sum_{k in X} x_k = 0       (no-good cuts: a plan the exact re-check rejects)
Memory fit and layout validity are enforced by the candidate set.

Objective
---------
min sum_k o_k x_k  with o = E (energy), COST (cost), CO2 (carbon) or T (time).

Why the optimum over K is the optimum over every plan (the exactness argument)
------------------------------------------------------------------------------
A plan is one configuration (s, f, c, site, purchase, n) with integer 1 <= n <= N_max. K lists every such
configuration that fits memory with a valid layout and has a price: the node count is NOT sampled (no
ladder), so no property of the model in n -- monotonicity, convexity, where layouts become valid (multiples
of the TP x PP group over the GPUs per node, global-batch divisibility) -- is assumed or needed. Each
coefficient is the exact model's value at that configuration, and each constraint (5)-(9) involves only the
chosen plan, so with (1) the feasible set of the MIP is exactly {k in K : every limit holds for k} and the MIP
optimum is min over that set: the brute-force optimum. (2)-(4) only name the chosen server, fabric, cap,
nodes and switches.

Reductions before the MIP (planner/plan/), each exact:
  * The candidates are generated in chunks of consecutive node counts. Of each chunk only rows that answer
    one of the request's questions are kept: per hardware option (s, f, c, site, purchase) the least
    objective among rows meeting every limit; the same with each limit relaxed by the binding step; and the
    least value of each limit's column among rows meeting all the other limits (explanations). A minimum
    over the union of per-chunk minimisers of every hardware option equals the minimum over all rows, so
    the MIP, the binding test and the relaxations see the same optimum as over the full table.
  * Presolve (`reduce_pool`): a candidate that breaks a limit on its own can never be chosen and is dropped;
    of one hardware option only the lowest objective can be optimal (the others are dominated: same
    constraints, a worse objective), leaving at most one candidate per hardware option.
  * Pareto fronts keep the (x, y) non-dominated candidates; an epsilon problem's optimum over all
    candidates is attained on that set.
The fleet MIP (several jobs sharing one purchase) cannot be presolved like this. The cost: every integer
count is evaluated (the model runs at ~0.5-4 M configurations/s; physics is cached per catalog).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from planner.solver import gc_paused
from planner.solver.compiler import EQUAL, UPPER, StandardForm, assemble

if TYPE_CHECKING:
    import pyomo.core as pyo

OBJECTIVE_COLUMNS = {
    "energy": "facility_energy_kwh",
    "cost": "cost_usd",
    "carbon": "carbon_kg",
    "time": "time_to_train_h",
}


REL_TOL = 1e-9  # relative rounding allowance of the continuous limits (deadline, budget, power)


def with_allowance(bound: float) -> float:
    """The right-hand side of a continuous limit's row: the bound plus its rounding allowance."""
    return bound + abs(bound) * REL_TOL


@dataclass(frozen=True)
class Limits:
    """Right-hand sides; None = not constrained."""

    deadline_h: float | None = None
    budget_usd: float | None = None
    budget_kind: str = "upfront"  # upfront | total
    power_kw: float | None = None
    max_nodes: int | None = None
    max_rack_units: int | None = None

    def budget_column(self) -> str:
        return "upfront_usd" if self.budget_kind == "upfront" else "cost_usd"


def _codes(values: pd.Series) -> tuple[np.ndarray, list[str]]:
    cat = pd.Categorical(values).remove_unused_categories()
    return np.asarray(cat.codes, dtype=np.int64), [str(c) for c in cat.categories]


def build_model(
    cand: pd.DataFrame,
    limits: Limits,
    objective_column: str,
    epsilon: Sequence[tuple[str, float]] = (),
    exclude: Iterable[int] = (),
) -> pyo.ConcreteModel:
    """Build the MIP over the candidate table (one row per candidate, index 0..K-1).

    ``objective_column`` and the epsilon column name candidate columns (see OBJECTIVE_COLUMNS). The model carries
    its standard form (``_compiled``, planner/solver/compiler.py), assembled from the same coefficients its rows are
    built of, row by row as they are declared: the solver takes it instead of compiling the model again (the model
    is not changed after it is built)."""
    with gc_paused():
        return _build(cand, limits, objective_column, epsilon, exclude)


def _build(
    cand: pd.DataFrame,
    limits: Limits,
    objective_column: str,
    epsilon: Sequence[tuple[str, float]],
    exclude: Iterable[int],
) -> pyo.ConcreteModel:
    """``build_model``'s body."""
    import pyomo.core as pyo

    m = pyo.ConcreteModel(name="capacity_plan")
    m.K = pyo.RangeSet(0, len(cand) - 1)
    s_code, m.server_ids = _codes(cand["server"])
    f_code, m.fabric_ids = _codes(cand["fabric"])
    c_code, m.cap_ids = _codes(pd.Series([f"{g}@{c:.4f}" for g, c in zip(cand["gpu"], cand["power_cap"], strict=True)]))
    m.S = pyo.RangeSet(0, len(m.server_ids) - 1)
    m.F = pyo.RangeSet(0, len(m.fabric_ids) - 1)
    m.C = pyo.RangeSet(0, len(m.cap_ids) - 1)
    m.cand = cand
    m.s_of, m.f_of, m.c_of = s_code, f_code, c_code
    # the candidates of each server type, fabric and cap level (ascending), for the rows (2)-(4)
    m.by_s, m.by_f, m.by_c = (_group(c, n) for c, n in ((s_code, len(m.S)), (f_code, len(m.F)), (c_code, len(m.C))))
    define_variables(m, cand)
    m.form = _Form(m)
    add_one_plan(m)
    add_choice_links(m)
    add_node_count(m, cand)
    add_switches(m, cand)
    add_deadline(m, cand, limits.deadline_h)
    add_budget(m, cand, limits)
    add_power_envelope(m, cand, limits.power_kw)
    add_node_and_rack_limits(m, cand, limits)
    add_epsilon(m, cand, epsilon)
    add_exclusions(m, exclude)
    add_objective(m, cand, objective_column)
    m._compiled = m.form.assembled()
    return m


def define_variables(m: pyo.ConcreteModel, cand: pd.DataFrame) -> None:
    import pyomo.core as pyo

    m.x = pyo.Var(m.K, domain=pyo.Binary)
    m.xs = list(m.x.values())  # x_k by position: the rows below index it per term
    m.u = pyo.Var(m.S, domain=pyo.Binary)
    m.v = pyo.Var(m.F, domain=pyo.Binary)
    m.w = pyo.Var(m.C, domain=pyo.Binary)
    max_n = int(cand["nodes"].max())
    max_sw = int(cand["switches"].max())
    m.nodes = pyo.Var(m.S, domain=pyo.NonNegativeIntegers, bounds=(0, max_n))
    m.switches = pyo.Var(m.F, domain=pyo.NonNegativeIntegers, bounds=(0, max_sw))


def add_one_plan(m: pyo.ConcreteModel) -> None:
    """(1) exactly one candidate plan."""
    import pyomo.core as pyo

    m.one_plan = pyo.Constraint(expr=_sum_of(m, range(len(m.K))) == 1)
    k = np.arange(len(m.K))
    m.form.row(m.one_plan, EQUAL, 1.0, m.form.x0 + k, np.ones(len(k)))


def add_choice_links(m: pyo.ConcreteModel) -> None:
    """(2) the chosen candidate's server type, fabric and cap level are the ones used: u_s - sum_{k in K_s} x_k = 0,
    and likewise for v_f and w_c (each row one linear expression; the three families share the terms -x_k)."""
    import pyomo.core as pyo
    from pyomo.core.expr.numeric_expr import MonomialTermExpression

    minus_x = [MonomialTermExpression((-1.0, x)) for x in m.xs]
    m.link_server = pyo.Constraint(m.S, rule=lambda m, s: _tied(m.u[s], [minus_x[k] for k in m.by_s[s]]))
    m.link_fabric = pyo.Constraint(m.F, rule=lambda m, f: _tied(m.v[f], [minus_x[k] for k in m.by_f[f]]))
    m.link_cap = pyo.Constraint(m.C, rule=lambda m, c: _tied(m.w[c], [minus_x[k] for k in m.by_c[c]]))
    minus_one = -np.ones(len(m.K))
    keep = np.ones(len(m.K), dtype=bool)
    m.form.tied_rows(m.link_server, m.form.u0, m.s_of, keep, minus_one)
    m.form.tied_rows(m.link_fabric, m.form.v0, m.f_of, keep, minus_one)
    m.form.tied_rows(m.link_cap, m.form.w0, m.c_of, keep, minus_one)


def add_node_count(m: pyo.ConcreteModel, cand: pd.DataFrame) -> None:
    """(3) nodes of each server type = the node count of the chosen candidate."""
    import pyomo.core as pyo

    minus_n = -cand["nodes"].to_numpy(dtype=float)
    terms = minus_n.tolist()
    m.node_count = pyo.Constraint(
        m.S, rule=lambda m, s: _tied(m.nodes[s], _monomials(m, [(terms[k], k) for k in m.by_s[s]]))
    )
    m.form.tied_rows(m.node_count, m.form.nodes0, m.s_of, np.ones(len(m.K), dtype=bool), minus_n)


def add_switches(m: pyo.ConcreteModel, cand: pd.DataFrame) -> None:
    """(4) switches of each fabric = the leaf/spine count of the chosen candidate."""
    import pyomo.core as pyo

    minus_sw = -cand["switches"].to_numpy(dtype=float)
    terms = minus_sw.tolist()
    with_switches = [[k for k in ks if terms[k]] for ks in m.by_f]
    m.switch_count = pyo.Constraint(
        m.F, rule=lambda m, f: _tied(m.switches[f], _monomials(m, [(terms[k], k) for k in with_switches[f]]))
    )
    m.form.tied_rows(m.switch_count, m.form.switches0, m.f_of, minus_sw != 0.0, minus_sw)


def add_deadline(m: pyo.ConcreteModel, cand: pd.DataFrame, deadline_h: float | None) -> None:
    """(5) time to train within the deadline."""
    if deadline_h is None:
        return
    m.deadline = _at_most(m, cand["time_to_train_h"], with_allowance(deadline_h))


def add_budget(m: pyo.ConcreteModel, cand: pd.DataFrame, limits: Limits) -> None:
    """(6) up-front spend (capex or whole rent) or total run cost within the budget."""
    if limits.budget_usd is None:
        return
    if not (cand[limits.budget_column()].to_numpy(dtype=float) != 0.0).any():
        return  # every candidate is free (owned servers): 0 <= B holds, and Pyomo rejects a constant row
    m.budget = _at_most(m, cand[limits.budget_column()], with_allowance(limits.budget_usd))


def add_power_envelope(m: pyo.ConcreteModel, cand: pd.DataFrame, power_kw: float | None) -> None:
    """(7) facility power within the site envelope."""
    if power_kw is None:
        return
    m.power_envelope = _at_most(m, cand["facility_power_kw"], with_allowance(power_kw))


def add_node_and_rack_limits(m: pyo.ConcreteModel, cand: pd.DataFrame, limits: Limits) -> None:
    """(8) total nodes and rack units."""
    import pyomo.core as pyo

    if limits.max_nodes is not None:
        m.node_limit = pyo.Constraint(expr=sum(m.nodes[s] for s in m.S) <= limits.max_nodes)
        s = np.arange(len(m.S))
        m.form.row(m.node_limit, UPPER, float(limits.max_nodes), m.form.nodes0 + s, np.ones(len(s)))
    if limits.max_rack_units is not None:
        m.rack_limit = _at_most(m, cand["rack_units"], float(limits.max_rack_units))


def add_epsilon(m: pyo.ConcreteModel, cand: pd.DataFrame, epsilon: Sequence[tuple[str, float]]) -> None:
    """(9) epsilon-constraints on second objectives (Pareto fronts)."""
    import pyomo.core as pyo

    if not epsilon:
        return
    bounds = list(epsilon)
    m.E = pyo.RangeSet(0, len(bounds) - 1)
    coefs = [_nonzero(cand[column]) for column, _ in bounds]
    m.epsilon = pyo.Constraint(m.E, rule=lambda m, e: _terms(m, *coefs[e]) <= bounds[e][1])
    for e, (_, bound) in enumerate(bounds):
        m.form.terms_row(m.epsilon[e], UPPER, float(bound), *coefs[e])


def add_exclusions(m: pyo.ConcreteModel, exclude: Iterable[int]) -> None:
    """(10) excluded candidates (no-good cuts)."""
    import pyomo.core as pyo

    ex = sorted(set(int(k) for k in exclude))
    if not ex:
        return
    m.exclusions = pyo.Constraint(expr=sum(m.x[k] for k in ex) == 0)
    m.form.row(m.exclusions, EQUAL, 0.0, m.form.x0 + np.asarray(ex, dtype=np.int64), np.ones(len(ex)))


def add_objective(m: pyo.ConcreteModel, cand: pd.DataFrame, column: str) -> None:
    """min sum_k o_k x_k, scaled so that the smallest nonzero |o_k| is 1 (but the largest at most 1e9).

    HiGHS works to absolute tolerances (~1e-7): objectives in tiny units (carbon on a near-zero-carbon grid)
    or spanning many decades would otherwise tie plans that differ by percent. planner/solver/highs.py unscales."""
    import pyomo.core as pyo

    o = np.abs(cand[column].to_numpy(dtype=float))
    nz = o[o > 0]
    scale = max(float(nz.min()), float(nz.max()) / 1e9) if nz.size else 1.0
    m.objective_scale = scale if scale > 0 and np.isfinite(scale) else 1.0
    o = cand[column].to_numpy(dtype=float)
    ks, coefs = _nonzero(pd.Series(o / m.objective_scale))
    m.objective = pyo.Objective(expr=_terms(m, ks, coefs), sense=pyo.minimize)
    m.form.objective(ks, coefs)


def _at_most(m: pyo.ConcreteModel, coef: pd.Series, bound: float) -> pyo.Constraint:
    """The row sum_k c_k x_k <= bound over the candidates with c_k != 0."""
    import pyomo.core as pyo

    ks, coefs = _nonzero(coef)
    con = pyo.Constraint(expr=_terms(m, ks, coefs) <= bound)
    m.form.terms_row(con, UPPER, float(bound), ks, coefs)
    return con


def _nonzero(coef: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """The candidates k with c_k != 0, ascending, and their c_k."""
    c = coef.to_numpy(dtype=float)
    ks = np.flatnonzero(c != 0.0)
    return ks, c[ks]


def _sum_of(m: pyo.ConcreteModel, ks: Iterable[int]) -> pyo.Expression:
    """sum_{k in ks} x_k (the variables themselves: coefficient 1)."""
    from pyomo.core.expr.numeric_expr import LinearExpression

    xs = m.xs
    return LinearExpression([xs[k] for k in ks])


def _terms(m: pyo.ConcreteModel, ks: np.ndarray, coefs: np.ndarray) -> pyo.Expression:
    """sum_i coefs_i x_{ks_i}, built as one linear expression of monomials (what quicksum of products produces,
    without the operator overloading per term: about 5 times faster to build)."""
    from pyomo.core.expr.numeric_expr import LinearExpression

    return LinearExpression(_monomials(m, zip(coefs.tolist(), ks.tolist(), strict=True)))


def _monomials(m: pyo.ConcreteModel, terms: Iterable[tuple[float, int]]) -> list[pyo.Expression]:
    """The monomials c x_k of (c, k) in ``terms``."""
    from pyomo.core.expr.numeric_expr import MonomialTermExpression

    xs = m.xs
    return [MonomialTermExpression((c, xs[k])) for c, k in terms]


def _tied(var: pyo.Var, minus_terms: list[pyo.Expression]) -> pyo.Expression:
    """var - sum(terms) == 0 as one linear expression (``minus_terms``: the negated terms), which
    planner/solver/compiler.py reads without Pyomo's expression walk: the row of ``var == sum(terms)``, the same
    coefficients in the same order."""
    from pyomo.core.expr.numeric_expr import LinearExpression

    return LinearExpression([var, *minus_terms]) == 0


def _group(codes: np.ndarray, size: int) -> list[list[int]]:
    """The positions of each code 0..size-1 in ``codes``, ascending."""
    order = np.argsort(codes, kind="stable")
    bounds = np.cumsum(np.bincount(codes, minlength=size))[:-1]
    return [part.tolist() for part in np.split(order, bounds)]


class _Form:
    """The model's standard form (planner/solver/compiler.py ``StandardForm``), stated as its rows are built, from
    the coefficients they are built of: the columns as the compiler orders them (each variable component whole, in
    the order the objective and then the rows first use them: x, u, v, w, nodes, switches), the rows in the order
    their constraints are declared, each with its sense, right-hand side and entries, and the objective's entries;
    assembled by the compiler's own ``assemble``. A row without entries is left out where it holds, as the compiler
    leaves it out; where it cannot hold the form is not stated (the compiler's walk then says so)."""

    def __init__(self, m: pyo.ConcreteModel) -> None:
        parts = [m.xs, list(m.u.values()), list(m.v.values()), list(m.w.values())]
        parts += [list(m.nodes.values()), list(m.switches.values())]
        starts = np.cumsum([0, *(len(p) for p in parts)])
        self.x0, self.u0, self.v0, self.w0, self.nodes0, self.switches0 = (int(i) for i in starts[:-1])
        self.columns = [v for p in parts for v in p]
        self.rows: list[tuple[Any, int]] = []
        self.rhs: list[float] = []
        self.counts: list[np.ndarray] = []
        self.cols: list[np.ndarray] = []
        self.vals: list[np.ndarray] = []
        self.obj_cols: list[int] = []
        self.obj_vals: list[float] = []
        self.stated = True

    def row(self, con: Any, sense: int, rhs: float, cols: np.ndarray, vals: np.ndarray) -> None:
        """A row: its constraint, sense (compiler.EQUAL / UPPER), right-hand side, columns and coefficients."""
        if not len(cols):
            if not (rhs == 0.0 if sense == EQUAL else rhs >= 0.0):
                self.stated = False  # a constant row that cannot hold: the compiler raises
            return
        self.rows.append((con, sense))
        self.rhs.append(rhs)
        self.counts.append(np.asarray([len(cols)], dtype=np.int64))
        self.cols.append(np.asarray(cols, dtype=np.int64))
        self.vals.append(np.asarray(vals, dtype=float))

    def tied_rows(self, con: Any, first: int, codes: np.ndarray, keep: np.ndarray, minus: np.ndarray) -> None:
        """The rows var_i - sum_{k: codes_k = i, keep_k} c_k x_k = 0 of an indexed constraint, i = 0.. in index order
        (var_i the column first + i; ``minus``: -c of every candidate)."""
        data = list(con.values())
        ks = np.flatnonzero(keep)
        ks = ks[np.argsort(codes[ks], kind="stable")]  # by row, candidates ascending within each
        per_row = np.bincount(codes[keep], minlength=len(data)) + 1
        at_var = np.cumsum(per_row) - per_row  # each row's first entry: its own variable
        cols = np.empty(int(per_row.sum()), dtype=np.int64)
        vals = np.empty(len(cols))
        is_var = np.zeros(len(cols), dtype=bool)
        is_var[at_var] = True
        cols[at_var], vals[at_var] = first + np.arange(len(data)), 1.0
        cols[~is_var], vals[~is_var] = self.x0 + ks, minus[ks]
        self.rows.extend((d, EQUAL) for d in data)
        self.rhs.extend([0.0] * len(data))
        self.counts.append(per_row.astype(np.int64))
        self.cols.append(cols)
        self.vals.append(vals)

    def terms_row(self, con: Any, sense: int, rhs: float, ks: np.ndarray, coefs: np.ndarray) -> None:
        """The row sum_i coefs_i x_{ks_i}."""
        self.row(con, sense, rhs, self.x0 + ks, coefs)

    def objective(self, ks: np.ndarray, coefs: np.ndarray) -> None:
        """The objective's entries: sum_i coefs_i x_{ks_i}."""
        self.obj_cols = (self.x0 + ks).tolist()
        self.obj_vals = coefs.tolist()

    def assembled(self) -> StandardForm | None:
        """The ``StandardForm``, or None where it is not stated."""
        if not self.stated:
            return None
        counts = np.concatenate(self.counts) if self.counts else np.zeros(0, dtype=np.int64)
        cols = np.concatenate(self.cols).astype(np.int32) if self.cols else np.zeros(0, dtype=np.int32)
        vals = np.concatenate(self.vals) if self.vals else np.zeros(0)
        return assemble(self.columns, self.rows, self.rhs, counts, cols, vals, self.obj_cols, self.obj_vals, 0.0)
