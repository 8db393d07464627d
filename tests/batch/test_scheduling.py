"""The batch's scheduling order (planner/batch/pool.py ScenarioQueue): scenarios of one physics group go to one
worker in a row, and inside a group those that price the physics alike follow one another, so a worker computes
each physics and prices each set of rows once. The order changes no answer: every scenario is handed out once."""

from __future__ import annotations

from typing import Any

from planner.batch import expand
from planner.batch.pool import ScenarioQueue
from planner.batch.scenarios import physics_group, pricing_group


def grid() -> list[dict[str, Any]]:
    """A grid whose expansion interleaves pricing groups (the electricity price varies fastest)."""
    return expand(
        {
            "base": {"alternatives": 0},
            "grid": {
                "model": ["resnet50", "llama3-8b"],
                "deadline_days": [7, 30],
                "objective": ["energy", "cost"],
                "purchase": ["buy", "rent"],
                "electricity_price_multiplier": [0.5, 1.0, 1.5],
            },
        }
    )


def drained(queue: ScenarioQueue) -> list[dict[str, Any]]:
    out = []
    while queue:
        out.append(queue.popleft())
    return out


def runs(keys: list[str]) -> list[str]:
    """The keys of consecutive runs of equal keys."""
    return [k for i, k in enumerate(keys) if i == 0 or keys[i - 1] != k]


def test_every_scenario_is_handed_out_exactly_once() -> None:
    items = grid()
    order = drained(ScenarioQueue(items))
    assert sorted(s["id"] for s in order) == sorted(s["id"] for s in items)


def test_a_physics_group_and_inside_it_a_pricing_group_are_each_one_run() -> None:
    items = grid()
    order = drained(ScenarioQueue(items))
    physics = runs([physics_group(s) for s in order])
    assert len(physics) == len(set(physics)) == 2
    pricing = runs([physics_group(s) + pricing_group(s) for s in order])
    assert len(pricing) == len(set(pricing)) == 2 * 2 * 3  # models x purchase x electricity price
    assert runs([pricing_group(s) for s in items]) != runs([pricing_group(s) for s in order])  # the grid interleaves


def test_groups_and_scenarios_inside_a_pricing_group_keep_the_order_given() -> None:
    items = grid()
    order = drained(ScenarioQueue(items))
    assert runs([physics_group(s) for s in order]) == runs([physics_group(s) for s in items])
    for key in {physics_group(s) + pricing_group(s) for s in items}:
        given = [s["id"] for s in items if physics_group(s) + pricing_group(s) == key]
        assert [s["id"] for s in order if physics_group(s) + pricing_group(s) == key] == given


def test_a_retried_scenario_is_handed_out_next() -> None:
    items = grid()
    queue = ScenarioQueue(items)
    first = queue.popleft()
    queue.appendleft(first)
    assert queue.take(physics_group(first), set())["id"] == first["id"]
