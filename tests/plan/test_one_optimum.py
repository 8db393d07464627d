"""HiGHS's feasibility jump is off only for a plan MIP whose optimum is clear of every other solution
(planner/plan/mip.py ``one_optimum``): every plan, alternative, objective and binding limit is then the one HiGHS
returns with it on; where optima tie (one server's energy on two fabrics) it stays on, so that HiGHS breaks the tie
as it does with it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from planner.data import Catalog
from planner.plan import mip, pareto, solve

BASE = dict(model="llama3-8b", tokens=2e11, max_nodes=48, alternatives=4)
# (request, whether its plan MIP has one optimum clear of the others; None: not stated)
REQUESTS = [
    ({**BASE, "deadline_days": 20, "fabrics": ["ndr400"]}, True),
    ({**BASE, "deadline_days": 20}, False),  # one server's energy ties on two fabrics
    (
        {**BASE, "deadline_days": 20, "objective": "cost", "purchase": "either", "sites": ["us-colo", "hydro-nordic"]},
        None,
    ),
    ({**BASE, "deadline_days": 15, "objective": "carbon", "budget_usd": 3e6, "power_kw": 200.0}, None),
    ({**BASE, "objective": "time", "purchase": "either"}, None),
    ({**BASE, "deadline_days": 0.2}, None),  # infeasible: the explanation's MIPs
]


def content(res: Any) -> dict[str, Any]:
    """A result without its timings and HiGHS's iteration counts."""
    out: dict[str, Any] = res.model_dump(exclude={"timings_s"})
    if out["solver"]:
        for k in ("solve_time_s", "build_time_s", "handoff_time_s", "simplex_iterations", "nodes"):
            out["solver"].pop(k)
    return out


@pytest.mark.parametrize(("request_fields", "one"), REQUESTS)
def test_a_plan_is_the_same_with_the_feasibility_jump_on(
    shipped: Catalog, monkeypatch: pytest.MonkeyPatch, request_fields: dict[str, Any], one: bool | None
) -> None:
    answers: list[bool] = []
    real = mip.one_optimum

    def recording(*args: Any) -> bool:
        answers.append(real(*args))
        return answers[-1]

    monkeypatch.setattr(mip, "one_optimum", recording)
    fast = solve(request_fields, shipped)
    monkeypatch.setattr(mip, "one_optimum", lambda *args: False)  # the jump on for every MIP
    assert content(fast) == content(solve(request_fields, shipped))
    if one is not None:
        assert answers[0] is one  # the plan's MIP


def test_a_pareto_front_is_the_same_with_the_feasibility_jump_on(
    shipped: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    req = {**BASE, "deadline_days": 20}
    fast = pareto(req, "cost", "carbon", points=4, catalog=shipped)
    monkeypatch.setattr(mip, "one_optimum", lambda *args: False)
    slow = pareto(req, "cost", "carbon", points=4, catalog=shipped)
    pd.testing.assert_frame_equal(fast.drop(columns="solver_status"), slow.drop(columns="solver_status"))


@pytest.mark.parametrize(
    ("objective", "one"),
    [
        ([3.0], True),
        ([3.0, 3.1, 5.0], True),
        ([3.0, 3.0002, 5.0], False),  # within the margin of the least
        ([3.0, 3.0, 5.0], False),  # a tie
        ([1e6, 1e6 * (1 + 2e-4)], True),  # the margin is relative to the least
        ([1e6, 1e6 * (1 + 5e-5)], False),
        ([3.0, np.nan], False),
    ],
)
def test_one_optimum_is_an_optimum_clear_of_the_others(objective: list[float], one: bool) -> None:
    cand = pd.DataFrame({"cost_usd": objective})
    assert mip.one_optimum(cand, "cost_usd", 1.0) is one
    assert mip.one_optimum(cand.assign(cost_usd=cand["cost_usd"] * 7.0), "cost_usd", 7.0) is one
