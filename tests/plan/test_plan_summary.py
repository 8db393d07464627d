"""The plan summary `planner solve` prints writes its figures as people read them."""

from __future__ import annotations

import re

from planner import load_catalog
from planner.formatting import switches_text
from planner.plan import PlanRequest, solve


def test_switches_are_counted_in_words() -> None:
    assert (switches_text(0), switches_text(1), switches_text(2), switches_text(1234)) == (
        "0 switches",
        "1 switch",
        "2 switches",
        "1,234 switches",
    )


def test_a_cost_objective_is_written_in_whole_dollars_as_the_cost_line_is() -> None:
    """The objective line writes the cost in whole dollars, the same figure as the cost line below it (4
    significant figures would print 'objective cost = 2,454,000 USD' above 'cost $2,453,791'), and the switch
    count in words ('1 switch')."""
    res = solve(
        PlanRequest(model="llama3-8b", tokens=1e12, deadline_days=30, objective="cost", alternatives=0), load_catalog()
    )
    assert res.plan is not None
    text = res.summary()
    cost = re.search(r"cost \$([\d,]+) \(up-front", text)
    objective = re.search(r"objective cost = ([\d,]+) USD", text)
    assert cost and objective, text
    assert objective.group(1) == cost.group(1) == f"{res.plan.cost_usd:,.0f}"
    assert f"({switches_text(res.plan.switches)})" in text.splitlines()[0]


def test_the_summary_says_what_the_plan_trains() -> None:
    """The amount of work as the request gave it (or the workload's default) and the samples the plan's batch
    trains: a plan read alone says what it is a plan for."""
    cat = load_catalog()
    given = solve(PlanRequest(model="llama3-8b", tokens=1e12, deadline_days=30, alternatives=0), cat)
    assert given.plan is not None
    line = f"  work 1,000,000,000,000 tokens: {given.plan.estimate.samples_to_train:,.0f} samples at batch "
    assert line + f"{given.plan.global_batch:,}" in given.summary().splitlines()
    default = solve(PlanRequest(model="resnet50", deadline_days=1, alternatives=0), cat)
    assert "  work resnet50's default: " in default.summary()
    # every digit given, not 4 significant figures (14,999,552,000,000 read as 15,000,000,000,000)
    exact = solve(PlanRequest(model="llama3-8b", tokens=14_999_552_000_000, deadline_days=30, alternatives=0), cat)
    assert "  work 14,999,552,000,000 tokens: " in exact.summary()


def test_nothing_to_pay_is_zero_dollars_and_one_node_is_singular() -> None:
    """A plan on owned servers only pays '$0' up front (not '$0.00' beside whole dollars), and a plan that adds one
    node says '1 new node'."""
    from planner.plan.result import usd

    assert usd(0.0) == "$0" and usd(0.4) == "$0.40" and usd(1234.4) == "$1,234"
    cat = load_catalog()
    owned = solve(
        PlanRequest(
            model="llama3-8b",
            tokens=1e10,
            deadline_days=30,
            servers=["dgx-h100"],
            owned={"dgx-h100": 64},
            objective="cost",
            alternatives=0,
        ),
        cat,
    )
    assert owned.plan is not None and owned.plan.upfront_usd == 0
    assert "(up-front $0)" in owned.summary()
