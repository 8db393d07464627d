"""A plan's figures add up: the step-time breakdown sums to the step time, and the time-to-train is the steps at
that step time over the goodput plus the stated evaluation and start-up (planner/physics/run_time.py), for
data-parallel, pipelined, context-parallel and Mixture-of-Experts configurations and for solved plans."""

from __future__ import annotations

import pytest

import planner
from planner.data import Estimate

CONFIGS = [
    {"model": "resnet50", "server": "dgx-a100-80gb", "nodes": 8},
    {"model": "llama3-70b", "server": "dgx-h100", "nodes": 16},
    {"model": "llama2-70b-lora", "server": "dgx-h100", "nodes": 4},
    {"model": "gpt3-175b", "server": "dgx-h100", "nodes": 64, "precision": "fp8"},
    {"model": "deepseek-v3", "server": "gb200-nvl72", "nodes": 4},
    {"model": "qwen3-30b-a3b", "server": "dgx-h100", "nodes": 2, "startup_s": 900.0},
]


def assert_adds_up(est: Estimate) -> None:
    assert sum(est.step_time_breakdown_s.values()) == pytest.approx(est.step_time_s, rel=1e-9)
    steps_h = est.samples_to_train / est.throughput_samples_per_s / 3600.0
    training_h = est.time_to_train_breakdown_h["training"]
    assert training_h == pytest.approx(steps_h / est.goodput, rel=1e-9)
    assert sum(est.time_to_train_breakdown_h.values()) == pytest.approx(est.time_to_train_h, rel=1e-12)
    assert est.throughput_samples_per_s == pytest.approx(est.global_batch / est.step_time_s, rel=1e-12)


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c['model']}-{c['server']}-{c['nodes']}")
def test_an_estimate_breakdown_sums_to_its_step_and_its_terms_to_its_time(config: dict) -> None:
    assert_adds_up(planner.evaluate(planner.load_catalog(), config))


def test_a_plan_and_its_alternatives_add_up() -> None:
    res = planner.solve(
        {
            "model": "llama3-8b",
            "tokens": 1e12,
            "deadline_days": 30,
            "startup_s": 600.0,
            "evaluations": 20,
            "evaluation_samples": 5000.0,
            "alternatives": 2,
        }
    )
    assert res.plan is not None
    for p in [res.plan, *res.alternatives]:
        assert_adds_up(p.estimate)
        assert p.time_to_train_h == pytest.approx(p.estimate.time_to_train_h, rel=1e-12)
        assert p.evaluation_h * 3600.0 == pytest.approx(p.estimate.evaluation_s, rel=1e-12)
