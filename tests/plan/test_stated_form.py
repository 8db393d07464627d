"""The standard form the plan MIP states as it is built (planner/plan/formulation.py ``_Form``, handed to HiGHS
instead of compiling the model) is, entry for entry, what planner/solver/compiler.py's walk of the same model gives
(the same columns and rows in the same order, senses, right-hand sides, coefficients and objective), on random
candidate tables with every limit, epsilon rows, exclusions, candidates without switches, free budgets and one server
type, and on the models of solves and Pareto fronts of the shipped catalog; where a constant row cannot hold no form
is stated and the walk says why."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyomo.environ as pyo
import pytest

from planner.data import Catalog
from planner.plan import PlanRequest, pareto, solve
from planner.plan.formulation import Limits, build_model
from planner.solver import StandardForm, standard_form


def assert_same_form(stated: StandardForm, walked: StandardForm) -> None:
    assert len(stated.columns) == len(walked.columns)
    assert all(a is b for a, b in zip(stated.columns, walked.columns, strict=True))
    assert [(id(c), s) for c, s in stated.rows] == [(id(c), s) for c, s in walked.rows]
    for name in ("sense", "rhs", "indptr", "indices", "data", "cost"):
        a, b = getattr(stated, name), getattr(walked, name)
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), name
    assert stated.offset == walked.offset


def random_candidates(rng: np.random.Generator) -> pd.DataFrame:
    k = int(rng.integers(1, 60))
    servers = int(rng.integers(1, 4))
    server = rng.integers(0, servers, size=k)
    return pd.DataFrame(
        {
            "server": pd.Categorical([f"srv{s}" for s in server]),
            "fabric": pd.Categorical([f"fab{f}" for f in rng.integers(0, 3, size=k)]),
            "gpu": pd.Categorical([f"gpu{s % 2}" for s in server]),
            "power_cap": rng.choice([0.5, 0.7, 1.0], size=k),
            "nodes": rng.integers(1, 50, size=k),
            "switches": rng.integers(0, 4, size=k) * rng.integers(0, 2, size=k),  # many without switches
            "time_to_train_h": rng.uniform(10, 900, size=k),
            "upfront_usd": rng.uniform(0, 1e6, size=k) * rng.integers(0, 2, size=k),
            "cost_usd": rng.uniform(1e3, 1e5, size=k),
            "facility_power_kw": rng.uniform(1, 500, size=k),
            "rack_units": rng.integers(1, 40, size=k),
            "facility_energy_kwh": rng.uniform(1e3, 1e6, size=k),
            "carbon_kg": rng.uniform(0, 1e5, size=k) * rng.integers(0, 2, size=k),
        }
    )


@pytest.mark.parametrize("seed", range(40))
def test_the_stated_form_is_the_walked_form_on_random_tables(seed: int) -> None:
    rng = np.random.default_rng(seed)
    cand = random_candidates(rng)

    def maybe(value: Any) -> Any:
        return value if rng.random() < 0.7 else None

    lim = Limits(
        deadline_h=maybe(float(rng.uniform(100, 1000))),
        budget_usd=maybe(float(rng.uniform(0, 2e6))),
        budget_kind=str(rng.choice(["upfront", "total"])),
        power_kw=maybe(float(rng.uniform(10, 600))),
        max_nodes=maybe(int(rng.integers(1, 60))),
        max_rack_units=maybe(int(rng.integers(1, 2000))),
    )
    column = str(rng.choice(["facility_energy_kwh", "cost_usd", "carbon_kg", "time_to_train_h"]))
    epsilon = [
        (c, float(rng.uniform(0, 1e6))) for c in rng.choice(["carbon_kg", "upfront_usd"], size=rng.integers(0, 3))
    ]
    exclude = rng.choice(len(cand), size=int(rng.integers(0, min(3, len(cand)) + 1)), replace=False).tolist()
    m = build_model(cand, lim, column, epsilon=epsilon, exclude=exclude)
    assert m._compiled is not None
    assert_same_form(m._compiled, standard_form(m))


def test_a_free_epsilon_row_is_left_out_as_the_walk_leaves_it_and_one_that_cannot_hold_is_not_stated() -> None:
    cand = random_candidates(np.random.default_rng(3)).assign(carbon_kg=0.0)
    m = build_model(cand, Limits(deadline_h=500.0), "cost_usd", epsilon=[("carbon_kg", 0.0)])
    assert m._compiled is not None
    assert_same_form(m._compiled, standard_form(m))
    m = build_model(cand, Limits(deadline_h=500.0), "cost_usd", epsilon=[("carbon_kg", -1.0)])
    assert m._compiled is None
    with pytest.raises(ValueError, match="cannot hold"):
        standard_form(m)


def test_the_stated_form_is_the_walked_form_on_the_shipped_catalog(
    shipped: Catalog, built_plan_models: list[pyo.ConcreteModel]
) -> None:
    models = built_plan_models
    base = dict(model="llama3-8b", tokens=2e11, max_nodes=64, alternatives=0)
    solve(PlanRequest(**base, deadline_days=20, budget_usd=5e7, sites=["us-colo", "hydro-nordic"], purchase="either"))
    solve(PlanRequest(**base, objective="time", max_rack_units=200, owned=[{"server": "dgx-h100", "count": 4}]))
    solve(PlanRequest(**base, deadline_days=0.5))  # infeasible: the explanation's MIPs
    pareto(PlanRequest(**base, deadline_days=30), "cost", "carbon", points=3, catalog=shipped)
    assert len(models) > 5
    for m in models:
        assert m._compiled is not None
        assert_same_form(m._compiled, standard_form(m))
