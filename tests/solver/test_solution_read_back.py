"""A solution read back (planner/solver/highs.py ``solve_model``): every variable component indexed 0..n-1 as a dense
array, any other as {index: value} -- whole components read as one slice and the others value by value give what
reading every column one by one gives, on a model with dense, sparse, string-indexed, scalar and partly dropped
variables, and on the plan MIP."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyomo.environ as pyo

from planner.plan import PlanRequest, solve
from planner.solver import SolverOptions, highs, solve_model


def one_by_one(m: pyo.ConcreteModel, cols: list[Any], x: np.ndarray) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every column read one by one: a component whose indices are all integers as a dense array, any other keyed."""
    by_comp: dict[str, dict[Any, float]] = {}
    for v, val in zip(cols, x, strict=True):
        by_comp.setdefault(v.parent_component().name, {})[v.index()] = float(val)
    values, keyed = {}, {}
    for name, d in by_comp.items():
        if all(isinstance(i, int) for i in d):
            arr = np.zeros(len(getattr(m, name)))
            for i, val in d.items():
                arr[i] = val
            values[name] = arr
        else:
            keyed[name] = d
    return values, keyed


def reading(monkeypatch: Any) -> list[tuple[Any, ...]]:
    """A list that grows by (model, columns, HiGHS's values, what was read) per solution read."""
    seen: list[tuple[Any, ...]] = []
    real = highs._solution

    def keep(m: Any, cols: list[Any], report: Any, x: Any) -> Any:
        solved = real(m, cols, report, x)
        seen.append((m, cols, x, solved))
        return solved

    monkeypatch.setattr(highs, "_solution", keep)
    return seen


def assert_read_as_one_by_one(seen: list[tuple[Any, ...]]) -> None:
    assert seen
    for m, cols, x, solved in seen:
        values, keyed = one_by_one(m, cols, x)
        assert solved.values.keys() == values.keys() and solved.keyed == keyed
        for name, arr in values.items():
            assert solved.values[name].dtype == arr.dtype and np.array_equal(solved.values[name], arr), name


def test_every_kind_of_variable_reads_back_as_column_by_column(monkeypatch: Any) -> None:
    seen = reading(monkeypatch)
    m = pyo.ConcreteModel()
    m.I = pyo.RangeSet(0, 4)
    m.x = pyo.Var(m.I, domain=pyo.Binary)  # dense 0..4
    m.y = pyo.Var(["a", "b"], bounds=(0, 3))  # keyed by strings
    m.z = pyo.Var(bounds=(0, 2))  # scalar
    m.w = pyo.Var(pyo.RangeSet(0, 3), bounds=(0, 1))  # w[3] in no row and not in the objective: dropped
    m.obj = pyo.Objective(expr=sum(m.x[i] * (i + 1) for i in m.I) - m.y["a"] - m.z - m.w[0] - m.w[2])
    m.c1 = pyo.Constraint(expr=sum(m.x[i] for i in m.I) == 1)
    m.c2 = pyo.Constraint(expr=m.y["a"] + m.y["b"] + m.z <= 4)
    m.c3 = pyo.Constraint(expr=m.w[0] + m.w[1] + m.w[2] <= 2)
    solved = solve_model(m, SolverOptions())
    assert solved.report.status == "optimal"
    assert set(solved.values) == {"x", "w"} and set(solved.keyed) == {"y", "z"}
    assert_read_as_one_by_one(seen)


def test_the_plan_mip_reads_back_as_column_by_column(monkeypatch: Any) -> None:
    seen = reading(monkeypatch)
    solve(PlanRequest(model="llama3-8b", tokens=2e11, deadline_days=20, max_nodes=32, alternatives=0))
    assert_read_as_one_by_one(seen)
