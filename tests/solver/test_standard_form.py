"""The standard form handed to HiGHS (planner/solver/compiler.py): entry for entry the arrays of Pyomo's
LinearStandardFormCompiler in mixed form (the same columns and rows in the same order, the same coefficients,
right-hand sides and objective), on hand-made models and on the single-job and fleet MIPs, and the same optimum
through ``solve_model`` on a MIP solved by hand."""

from __future__ import annotations

import numpy as np
import pyomo.environ as pyo
import pytest
from pyomo.repn.plugins.standard_form import LinearStandardFormCompiler

from planner.data import Catalog
from planner.fleet import FleetRequest, build_fleet_model, job_modes, pools_of
from planner.plan import PlanRequest, solve
from planner.solver import SolverOptions, SolverStatus, solve_model, standard_form


def assert_same_as_pyomo(m: pyo.ConcreteModel) -> None:
    """standard_form(m) equals LinearStandardFormCompiler's mixed form of m exactly (no tolerance)."""
    ref = LinearStandardFormCompiler().write(m, mixed_form=True, set_sense=None)
    got = standard_form(m)
    A = ref.A.tocsc()
    assert [v.name for v in got.columns] == [v.name for v in ref.columns]
    assert [(c.name, s) for c, s in got.rows] == [(c.name, s) for c, s in ref.rows]
    assert got.sense.tolist() == [s for _, s in ref.rows]
    assert np.array_equal(got.indptr, A.indptr)
    assert np.array_equal(got.indices, A.indices)
    assert np.array_equal(got.data, A.data)
    assert np.array_equal(got.rhs, np.asarray(ref.rhs, dtype=float))
    cost = np.asarray(ref.c.toarray()).ravel() if ref.c.shape[0] else np.zeros(len(ref.columns))
    assert np.array_equal(got.cost, cost)
    assert got.offset == (float(ref.c_offset[0]) if len(ref.c_offset) else 0.0)


def small_model() -> pyo.ConcreteModel:
    """Every row form the compiler knows: equality, <=, >=, a ranged row (two rows), a constant row that holds, a
    repeated and a cancelling variable, fixed variables seen before and after their component, unused indices,
    an objective constant."""
    m = pyo.ConcreteModel()
    m.I = pyo.RangeSet(0, 4)
    m.x = pyo.Var(m.I, domain=pyo.Binary)
    m.y = pyo.Var(domain=pyo.NonNegativeIntegers, bounds=(0, 10))
    m.z = pyo.Var(["a", "b", "c"], domain=pyo.NonNegativeReals)
    m.w = pyo.Var(m.I, bounds=(-3, 3))
    m.w[0].fix(2.0)  # seen first: a constant of its row
    m.z["c"].fix(1.5)  # seen after z["a"] recorded its component: moved to the right-hand side
    m.obj = pyo.Objective(expr=3 * m.x[0] + 2.5 * m.x[3] + m.y + 0.25 * m.z["c"] + 7, sense=pyo.minimize)
    m.eq = pyo.Constraint(expr=m.x[0] + m.x[1] + m.x[3] == 1)
    m.le = pyo.Constraint(expr=2 * m.w[0] + m.w[1] + m.y <= 8)
    m.ge = pyo.Constraint(expr=m.z["a"] + m.z["c"] - 4 * m.x[1] >= 0.5)
    m.rng = pyo.Constraint(expr=pyo.inequality(-1, m.w[2] - m.y, 6))
    m.rep = pyo.Constraint(expr=m.x[0] + m.x[0] + m.y - m.y + m.z["b"] <= 3)
    m.const = pyo.Constraint(expr=m.w[0] <= 5)
    m.link = pyo.Constraint(m.I, rule=lambda m, i: m.w[i] <= 2 * m.x[i] if i > 0 else pyo.Constraint.Skip)
    return m


def test_standard_form_is_pyomos_on_every_row_form() -> None:
    assert_same_as_pyomo(small_model())


def test_standard_form_is_pyomos_on_the_single_job_mip(built_plan_models: list[pyo.ConcreteModel]) -> None:
    models = built_plan_models
    res = solve(PlanRequest(model="llama3-8b", tokens=2e11, deadline_days=20, budget_usd=5e7, alternatives=0))
    assert res.plan is not None and models
    for m in models:
        assert_same_as_pyomo(m)


def test_standard_form_is_pyomos_on_the_fleet_mip_with_fixed_modes(toy: Catalog) -> None:
    req = FleetRequest.model_validate(
        {
            "slot_hours": 10.0,
            "site": "clean",
            "power_caps": [1.0],
            "node_counts": [1, 2],
            "slots": 3,
            "objective": "cost",
            "budget_usd": 1e6,
            "jobs": [{"id": j, "model": "toy-model", "due_slot": 2} for j in ("a", "b", "c")],
        }
    )
    pools = pools_of(toy, req)
    m = build_fleet_model(toy, req, job_modes(toy, req, pools=pools), pools).model
    assert_same_as_pyomo(m)
    for k in list(m.M)[::2]:  # the restricted MIP's form: modes fixed at 0
        m.z[k].fix(0)
    assert_same_as_pyomo(m)


def test_a_mip_solved_by_hand_has_the_same_optimum() -> None:
    # max 5a + 4b + 3c (min the negative) with 2a + 3b + c <= 5, 4a + b + 2c <= 11, 3a + 4b + 2c <= 8, a, b, c in
    # {0, 1, 2, ...}: the integer points give 13 at (a, b, c) = (2, 0, 1) -- (1, 0, 2) gives 11, (2, 0, 0) 10,
    # (0, 0, 4) 12, (1, 1, 0) 9 -- and the LP optimum is 13 too (Chvatal's example), so the report's bound is 13.
    m = pyo.ConcreteModel()
    m.a = pyo.Var(domain=pyo.NonNegativeIntegers, bounds=(0, 10))
    m.b = pyo.Var(domain=pyo.NonNegativeIntegers, bounds=(0, 10))
    m.c = pyo.Var(domain=pyo.NonNegativeIntegers, bounds=(0, 10))
    m.r1 = pyo.Constraint(expr=2 * m.a + 3 * m.b + m.c <= 5)
    m.r2 = pyo.Constraint(expr=4 * m.a + m.b + 2 * m.c <= 11)
    m.r3 = pyo.Constraint(expr=3 * m.a + 4 * m.b + 2 * m.c <= 8)
    m.obj = pyo.Objective(expr=-(5 * m.a + 4 * m.b + 3 * m.c), sense=pyo.minimize)
    solved = solve_model(m, SolverOptions(time_limit_s=30))
    rep = solved.report
    assert rep.status is SolverStatus.OPTIMAL
    assert rep.objective == pytest.approx(-13.0)
    assert rep.bound == pytest.approx(-13.0)
    assert (rep.variables, rep.constraints) == (3, 3)
    assert solved.keyed == {
        "a": {None: pytest.approx(2.0)},
        "b": {None: pytest.approx(0.0)},
        "c": {None: pytest.approx(1.0)},
    }
