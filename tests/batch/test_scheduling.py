"""The batch's scheduling order (planner/batch/pool.py ScenarioQueue): scenarios of one physics group go to one
worker in a row, and inside a group those that price the physics alike follow one another, so a worker computes
each physics and prices each set of rows once. The order changes no answer: every scenario is handed out once."""

from __future__ import annotations

from typing import Any

import pytest

from planner.batch import expand, pool
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


def test_a_retried_scenario_goes_back_to_the_front_of_its_group_even_after_the_group_ran_out() -> None:
    items = grid()
    queue = ScenarioQueue(items)
    order = drained(ScenarioQueue(items))
    first_group = physics_group(order[0])
    last_of_group = [s for s in order if physics_group(s) == first_group][-1]
    while queue:
        s = queue.take(first_group, set())
        if s["id"] == last_of_group["id"]:
            break
    assert physics_group(queue.take(None, set())) != first_group  # the group ran out
    queue.appendleft(last_of_group)  # its worker died: tried again first, in its own group
    assert queue.take(first_group, set())["id"] == last_of_group["id"]
    assert queue.take(None, {"other"})["id"] not in {last_of_group["id"]}


def test_the_in_process_engine_solves_in_the_queues_order(monkeypatch: pytest.MonkeyPatch) -> None:
    items = grid()
    solved: list[str] = []

    def run_scenario(s: dict[str, Any]) -> dict[str, Any]:
        solved.append(s["id"])
        return {"id": s["id"], "status": "optimal"}

    monkeypatch.setattr(pool, "init_worker", lambda *_: None)
    monkeypatch.setattr(pool, "run_scenario", run_scenario)
    pool.run_in_process(items, None, None, lambda row, attempts: None)
    assert solved == [s["id"] for s in drained(ScenarioQueue(items))]
