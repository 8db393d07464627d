"""A linear Pyomo model as the arrays HiGHS takes: columns, row bounds, the column-wise matrix, the objective.

``standard_form`` walks the model's active objective and constraints with Pyomo's linear visitor
(``pyomo.repn.linear.LinearRepnVisitor``) and assembles the sparse arrays with NumPy. It produces the arrays of
Pyomo's ``LinearStandardFormCompiler`` in mixed form (``mixed_form=True, set_sense=None``) entry for entry -- the
same columns in the same order (each variable component recorded whole on its first appearance, the objective's
first, then kept where it has a nonzero entry), the same rows in the same order (one per equality or one-sided
constraint, two for a ranged one: its upper row, then its lower), the same coefficients -- without SciPy, whose
import (``scipy.sparse`` loads ``numpy.f2py``) costs a cold ``planner solve`` about 80 ms. The equality is
checked against the compiler in tests/solver/test_standard_form.py.

Fixed variables are constants of the rows they appear in (their value moves to the right-hand side and the
objective's offset), as in the compiler.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pyomo.core as pyo

EQUAL, UPPER, LOWER = 0, 1, -1  # a row's sense: body == rhs, body <= rhs, body >= rhs


@dataclass(frozen=True)
class StandardForm:
    """min cost @ x + offset subject to, per row i, body_i (sense_i) rhs_i, with body_i = sum_j A_ij x_j.

    ``columns``: the Pyomo variable of each column; ``rows``: the Pyomo constraint of each row and its sense
    (EQUAL, UPPER, LOWER); A column-wise (``indptr``, ``indices``, ``data``: column j's rows are
    ``indices[indptr[j]:indptr[j + 1]]``, ascending)."""

    columns: list[Any]
    rows: list[tuple[Any, int]]
    sense: np.ndarray
    rhs: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    cost: np.ndarray
    offset: float

    @property
    def num_rows(self) -> int:
        return len(self.rows)


def standard_form(m: pyo.ConcreteModel) -> StandardForm:
    """The model's active objective (at most one) and active constraints as a ``StandardForm`` (module docstring).
    Raises ValueError for a nonlinear term, more than one active objective, or a constraint without variables
    that cannot hold."""
    with gc_paused():  # the walk allocates many small objects that live as long as the model: nothing to collect
        return _standard_form(m)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the duration: building or compiling a model allocates tens of thousands
    of small objects that all live as long as the model, and each collection they trigger would traverse the whole
    heap (the cached physics tables included) for nothing -- half the build time with 3,000 candidates."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _standard_form(m: pyo.ConcreteModel) -> StandardForm:
    """``standard_form``'s body."""
    import pyomo.core as pyo
    from pyomo.common.numeric_types import native_types, value
    from pyomo.core.expr.numeric_expr import LinearExpression
    from pyomo.repn.linear import LinearRepnVisitor
    from pyomo.repn.util import FileDeterminism, FileDeterminism_to_SortComponents, TemplateVarRecorder

    sorter = FileDeterminism_to_SortComponents(FileDeterminism.ORDERED)
    var_map: dict[int, Any] = {}
    recorder = TemplateVarRecorder(var_map, sorter)
    visitor = LinearRepnVisitor({}, var_recorder=recorder)
    order = recorder.var_order  # id(variable) -> column, kept up to date by the recorder

    linear_terms = _linear_terms_reader(var_map, recorder.add)

    def walk(expr: Any, owner: Any) -> tuple[dict[int, Any], Any]:
        """(coefficient by id(variable), constant) of a linear expression (of ``owner``, a row or the objective)."""
        terms = linear_terms(expr) if expr.__class__ is LinearExpression else None
        return terms if terms is not None else _visited(visitor, expr, owner)

    objectives = list(m.component_data_objects(pyo.Objective, active=True, descend_into=True, sort=sorter))
    if len(objectives) > 1:
        raise ValueError(f"model {m.name!r} has {len(objectives)} active objectives; HiGHS takes one")
    obj_cols: list[int] = []
    obj_vals: list[float] = []
    offset = 0.0
    for obj in objectives:
        linear, offset = walk(obj.expr, obj)
        obj_cols = [order[i] for i in linear]
        obj_vals = list(linear.values())

    rows: list[tuple[Any, int]] = []
    rhs: list[float] = []
    terms: list[dict[int, Any]] = []  # each row's coefficients by id(variable)
    nnz = 0
    for con in m.component_data_objects(pyo.Constraint, active=True, descend_into=True, sort=sorter):
        lb, body, ub = con.to_bounded_expression()
        if lb.__class__ not in native_types:
            lb = value(lb)
        if ub.__class__ not in native_types:
            ub = value(ub)
        linear, const = walk(body, con)  # first: its variables take their columns
        if lb is None and ub is None:
            continue  # no bound: no row
        if not linear and const.__class__ in native_types:
            if (lb is None or lb <= const) and (ub is None or ub >= const):
                continue  # a constant row that holds
            raise ValueError(f"the constraint {con.name!r} has no variable and cannot hold")
        for sense, bound in _senses(lb, ub):
            rows.append((con, sense))
            rhs.append(bound - const)
            terms.append(linear)
            nnz += len(linear)
    counts = np.fromiter(map(len, terms), dtype=np.int64, count=len(terms))
    col_of = order.__getitem__
    cols = np.fromiter(itertools.chain.from_iterable(map(col_of, t) for t in terms), dtype=np.int32, count=nnz)
    vals = np.fromiter(itertools.chain.from_iterable(t.values() for t in terms), dtype=np.float64, count=nnz)
    return assemble(list(var_map.values()), rows, rhs, counts, cols, vals, obj_cols, obj_vals, offset)


def _visited(visitor: Any, expr: Any, owner: Any) -> tuple[dict[int, Any], Any]:
    """(coefficient by id(variable), constant) of ``expr`` read by the linear visitor; ValueError where it is not
    linear (``owner``: its row or objective)."""
    repn = visitor.walk_expression(expr)
    if repn.nonlinear is not None:
        raise ValueError(f"{owner.name!r} is not linear")
    return repn.linear, repn.constant


def _senses(lb: Any, ub: Any) -> list[tuple[int, Any]]:
    """The rows of lb <= body <= ub with a bound: one equality row, or the upper row and then the lower row."""
    if lb == ub:
        return [(EQUAL, ub)]
    return [(sense, b) for sense, b in ((UPPER, ub), (LOWER, lb)) if b is not None]


def _linear_terms_reader(var_map: dict[int, Any], record: Any) -> Any:
    """A reader of a ``LinearExpression`` (the single-job MIP's rows and many of the fleet MIP's, built as one sum of
    monomials) that gives what the linear visitor gives for it -- the same coefficients, summed in the same order,
    zero coefficients dropped, new variable components recorded (``record``) in the same order -- without the
    visitor's per-term dispatch: (coefficient by id(variable), constant), or None where a term is not a monomial
    with a numeric coefficient, a variable or a number, or is a fixed variable not yet recorded (the visitor then
    reads the expression)."""
    from pyomo.common.numeric_types import native_numeric_types, native_types
    from pyomo.core.expr.numeric_expr import MonomialTermExpression

    def read(expr: Any) -> tuple[dict[int, Any], Any] | None:
        linear: dict[int, Any] = {}
        const: Any = 0
        for arg in expr.args:
            cls = arg.__class__
            if cls is MonomialTermExpression:
                coef, var = arg._args_
                if coef.__class__ not in native_types:
                    return None
            elif cls in native_numeric_types:
                const += arg
                continue
            elif arg.is_variable_type():
                coef, var = 1, arg
            else:
                return None
            vid = id(var)
            if vid not in var_map:
                if var.fixed:
                    return None
                record(var)
            if vid in linear:
                linear[vid] += coef
            elif coef:
                linear[vid] = coef
        for vid in [vid for vid, c in linear.items() if not c]:
            del linear[vid]
        constant: Any = 0
        constant += const
        return linear, constant

    return read


def assemble(
    columns: list[Any],
    rows: list[tuple[Any, int]],
    rhs_list: list[float],
    counts: np.ndarray,
    col: np.ndarray,
    val: np.ndarray,
    obj_cols: list[int],
    obj_vals: list[float],
    offset: float,
) -> StandardForm:
    """The row-wise triplets as column-wise arrays: entries sorted by column (stable, so each column's rows stay
    ascending), exact zeros dropped, fixed variables moved to the right-hand side and the offset (summed column by
    column, in column order), and columns without an entry dropped."""
    n_cols = len(columns)
    row_of = np.repeat(np.arange(len(counts), dtype=np.int32), counts)
    keep = val != 0.0
    if not keep.all():
        row_of, col, val = row_of[keep], col[keep], val[keep]
    by_col = np.argsort(col, kind="stable")
    row_of, col, val = row_of[by_col], col[by_col], val[by_col]
    cost = np.zeros(n_cols)
    ocol = np.asarray(obj_cols, dtype=np.int64)
    cost[ocol] = np.asarray(obj_vals, dtype=np.float64)
    per_col = np.bincount(col, minlength=n_cols)
    active = (per_col > 0) | (cost != 0.0)
    rhs = np.asarray(rhs_list, dtype=np.float64)
    fixed = np.fromiter((v.fixed for v in columns), dtype=bool, count=n_cols) & active
    if fixed.any():
        x = np.zeros(n_cols)
        at = np.flatnonzero(fixed)
        x[at] = [columns[j].value for j in at]
        moved = fixed[col]
        shift = np.zeros(len(rhs))
        np.add.at(shift, row_of[moved], val[moved] * x[col[moved]])  # in column order, one entry at a time
        rhs = rhs - shift
        moved_cost = 0.0
        for j in at[cost[at] != 0.0]:  # the objective's entries, one at a time in column order
            moved_cost += float(cost[j] * x[j])
        offset += moved_cost
        active &= ~fixed
    if not active.all():
        new = np.cumsum(active) - 1
        entry = active[col]
        row_of, col, val = row_of[entry], new[col[entry]].astype(np.int32), val[entry]
        cost = cost[active]
        columns = [v for v, a in zip(columns, active, strict=True) if a]
        per_col = np.bincount(col, minlength=len(columns))
    indptr = np.zeros(len(columns) + 1, dtype=np.int32)
    np.cumsum(per_col, out=indptr[1:])
    return StandardForm(
        columns=columns,
        rows=rows,
        sense=np.fromiter((s for _, s in rows), dtype=np.int64, count=len(rows)),
        rhs=rhs,
        indptr=indptr,
        indices=row_of,
        data=val,
        cost=cost,
        offset=float(offset),
    )
