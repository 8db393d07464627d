"""Time-to-train's start-up and evaluation terms (planner/physics/run_time.py): zero unless stated, equal to the
stated figures when asked, evaluations at the training time of their forward passes, wall-clock whose energy
and cost follow (evaluations at the training's power, a start-up with the GPUs idle), and the breakdown sums to the
time-to-train."""

from __future__ import annotations

import pytest

import planner
from planner.errors import PlannerInputError
from planner.physics import (
    Work,
    compute,
    evaluation_sample_equivalents,
    evaluation_time_from_step_s,
    evaluation_time_s,
    startup_time_s,
)

CONFIG = {"model": "llama3-8b", "server": "dgx-h100", "nodes": 4, "failures": False}


def test_evaluation_time_is_gpu_seconds_per_evaluation_split_over_the_gpus() -> None:
    # 7 evaluations x 31,830 GPU-s each over 8,192 GPUs = 27.198... s
    assert evaluation_time_s(7, 31_830.0, 8192) == pytest.approx(7 * 31_830.0 / 8192)
    assert evaluation_time_s(0, 31_830.0, 8192) == 0.0


def test_startup_is_init_plus_the_warmup_excess_and_a_negative_excess_counts_as_zero() -> None:
    assert startup_time_s(0.25, 7.2) == pytest.approx(7.45)
    assert startup_time_s(0.25, -3.0) == 0.25


def test_terms_in_hours() -> None:
    est = planner.evaluate(planner.load_catalog(), CONFIG)
    stated = est.model_copy(update={"time_to_train_h": 2.11, "evaluation_s": 360.0, "startup_s": 36.0})
    assert stated.time_to_train_breakdown_h == pytest.approx({"training": 2.0, "evaluation": 0.1, "startup": 0.01})


def test_a_plan_has_no_startup_or_evaluation_unless_stated() -> None:
    est = planner.evaluate(planner.load_catalog(), CONFIG)
    assert est.startup_s == 0.0 and est.evaluation_s == 0.0
    assert est.time_to_train_breakdown_h == {"training": est.time_to_train_h, "evaluation": 0.0, "startup": 0.0}


def test_stated_startup_and_evaluation_add_wall_clock_evaluation_at_the_training_power_start_up_at_idle_gpus() -> None:
    cat = planner.load_catalog()
    base = planner.evaluate(cat, CONFIG)
    est = planner.evaluate(cat, {**CONFIG, "startup_s": 720.0, "evaluation_s": 1800.0})
    assert (est.startup_s, est.evaluation_s) == pytest.approx((720.0, 1800.0))
    assert est.time_to_train_h == pytest.approx(base.time_to_train_h + 0.7)  # (720 + 1,800) s = 0.7 h
    assert est.time_to_train_breakdown_h == pytest.approx(
        {"training": base.time_to_train_h, "evaluation": 0.5, "startup": 0.2}
    )
    assert sum(est.time_to_train_breakdown_h.values()) == pytest.approx(est.time_to_train_h)
    assert est.step_time_s == base.step_time_s and est.power_kw == base.power_kw
    # the same servers run 0.5 h more at the training's IT power and 0.2 h at the start-up's
    assert est.startup_power_kw < est.power_kw
    assert est.energy_kwh == pytest.approx(base.energy_kwh + base.power_kw * 0.5 + est.startup_power_kw * 0.2)
    assert est.cost_usd > base.cost_usd


def test_start_up_power_is_the_nodes_with_idle_gpus_one_busy_core_per_gpu_at_every_cap() -> None:
    # 4 x dgx-h100 on ndr400: per node (8 x 75 W idle H100 + 700 W CPU x (0.3 + 0.7 x 8 / 112 busy cores) + 250 RAM
    # + 120 storage + 1,300 other + 8 NICs x 25 W) / 0.94 PSU = 2,715 / 0.94 W; 32 ports on one radix-64 switch,
    # 750 W: (4 x 2,715 / 0.94 + 750) / 1,000 = 12.303 kW, whatever the GPUs' cap
    cat = planner.load_catalog()
    expected_kw = (4 * 2715 / 0.94 + 750) / 1000
    for cap in (0.6, 1.0):
        est = planner.evaluate(cat, {**CONFIG, "fabric": "ndr400", "power_cap": cap})
        assert est.startup_power_kw == pytest.approx(expected_kw)


def test_a_start_up_does_not_move_the_plans_power_cap() -> None:
    # least energy for 2e10 tokens of llama3-8b: one node whatever the start-up; a two-day start-up adds its 48 h
    # at the start-up's power, which no cap lowers, so the plan keeps its cap (at the training's capped power the
    # start-up would pull the cap down)
    cat = planner.load_catalog()
    plans = [
        planner.solve(
            {"model": "llama3-8b", "tokens": 2e10, "deadline_days": 30, "startup_s": s, "alternatives": 0}, cat
        )
        for s in (0.0, 2 * 86_400.0)
    ]
    without, with_startup = (r.plan for r in plans)
    assert without is not None and with_startup is not None
    assert (with_startup.server, with_startup.nodes, with_startup.power_cap) == (
        without.server,
        without.nodes,
        without.power_cap,
    )
    pue = cat.site(with_startup.site).pue
    added_kwh = with_startup.estimate.startup_power_kw * pue * 48.0
    assert with_startup.facility_energy_kwh == pytest.approx(without.facility_energy_kwh + added_kwh)


def test_evaluations_take_the_training_time_of_the_forward_share_of_their_samples() -> None:
    # llama3-8b trains every weight: an evaluation over 3,000 held-out sequences is a forward pass, a third of the
    # FLOPs of training 3,000 samples, so 10 of them take 10 x 3,000 / 3 = 10,000 samples / throughput seconds
    cat = planner.load_catalog()
    base = planner.evaluate(cat, CONFIG)
    est = planner.evaluate(cat, {**CONFIG, "evaluations": 10, "evaluation_samples": 3000.0})
    assert est.evaluation_s == pytest.approx(10_000.0 / base.throughput_samples_per_s)
    assert est.time_to_train_h == pytest.approx(base.time_to_train_h + est.evaluation_s / 3600.0)
    assert evaluation_sample_equivalents(10, 3000.0, 1 / 3) == pytest.approx(10_000.0)


def test_lora_evaluations_cost_more_than_a_third_of_a_trained_sample() -> None:
    # frozen base weights skip the weight-gradient GEMMs: the forward pass is a larger share of a LoRA step
    wl = planner.load_catalog().workload("llama2-70b-lora")
    assert 1 / 3 < compute.forward_flops_share(wl) < 1.0


def test_evaluations_without_their_samples_are_refused() -> None:
    cat = planner.load_catalog()
    with pytest.raises(PlannerInputError, match=r"configuration: evaluations needs evaluation_samples > 0 \(got 0\)"):
        planner.evaluate(cat, {**CONFIG, "evaluations": 10})
    with pytest.raises(PlannerInputError, match="startup_s"):
        Work(startup_s=-1.0)


def test_evaluation_from_the_step_is_its_training_sample_equivalent() -> None:
    # 7 evaluations of 2,109 training-sample equivalents each (Llama 3.1 405B) at a 5.25 s step of 1,536 samples:
    # 7 x 2,109 x 5.25 / 1,536 = 50.46 s; none cost nothing
    assert evaluation_time_from_step_s(7, 2109.0, 5.25, 1536) == pytest.approx(7 * 2109.0 * 5.25 / 1536)
    assert evaluation_time_from_step_s(0, 2109.0, 5.25, 1536) == 0.0
    with pytest.raises(ValueError):
        evaluation_time_from_step_s(1, 10.0, 1.0, 0)
