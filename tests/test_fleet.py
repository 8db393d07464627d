"""Fleet planning: hand-solved portfolios, brute force on tiny instances, monotonicity.

Toy world of conftest.py: one job of toy-model on one toy node takes T(1) = 21000 s = 5.83 h, far less
than a slot (here 10 h). toy-a costs 10,000 USD, toy-b 20,000 USD; switches, NICs and cables are free.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from planner import cost as cost_mod
from planner.data import Catalog
from planner.fleet import FleetRequest, fleet, job_modes

from .conftest import toy_catalog, toy_gpu, toy_server, toy_workload

BASE = {"slot_hours": 10.0, "site": "clean", "power_caps": [1.0], "node_counts": [1, 2]}


def freq(**kw: Any) -> FleetRequest:
    return FleetRequest.model_validate({**BASE, **kw})


def test_two_sequential_jobs_share_one_node(toy: Catalog) -> None:
    # Each job needs 5.83 h on one node; with two slots they can run one after the other on a single toy-a
    # (10,000 USD) instead of two nodes or the 20,000 USD toy-b: buy 1 x toy-a.
    plan = fleet(
        freq(
            slots=2,
            objective="cost",
            jobs=[{"id": "a", "model": "toy-model", "due_slot": 1}, {"id": "b", "model": "toy-model", "due_slot": 1}],
        ),
        toy,
    )
    assert plan.status == "optimal"
    assert [(p["server"], p["nodes"]) for p in plan.purchases] == [("toy-a", 1)]
    slots = sorted(a["first_slot"] for a in plan.assignments)
    assert slots == [0, 1]


def test_jobs_that_must_overlap_and_fit_different_gpus_do_not_share_a_type() -> None:
    # "big" only fits the 80 GB toy-a (12.5 GB activations + 2 GB workspace > 95% of 10 GB); "small" fits both.
    # Both are due in slot 0, so they run at once: 2 x toy-a = 20,000 USD, or toy-a + toy-small = 11,000 USD.
    small_gpu = toy_gpu(id="small-gpu", family="toy", memory_gb=10.0)
    cat = toy_catalog(
        gpus=[toy_gpu(), small_gpu],
        servers=[toy_server(), toy_server(id="toy-small", gpu="small-gpu", price_usd=1000.0)],
        workloads=[toy_workload(), toy_workload(id="toy-big", activation_bytes_per_sample=1e8)],
    )
    plan = fleet(
        freq(
            slots=1,
            objective="cost",
            jobs=[
                {"id": "big", "model": "toy-big", "due_slot": 0},
                {"id": "small", "model": "toy-model", "due_slot": 0},
            ],
        ),
        cat,
    )
    servers = {a["job"]: a["server"] for a in plan.assignments}
    assert servers == {"big": "toy-a", "small": "toy-small"}
    assert plan.totals["capex_usd"] == pytest.approx(11_000)


def test_a_late_job_pays_its_penalty_only_when_that_is_cheaper(toy: Catalog) -> None:
    # Both jobs due in slot 0 on a budget of one node (10,000 USD): one must run late in slot 1, paying 1 USD.
    plan = fleet(
        freq(
            slots=2,
            objective="cost",
            budget_usd=10_000,
            jobs=[
                {"id": "a", "model": "toy-model", "due_slot": 0},
                {"id": "b", "model": "toy-model", "due_slot": 0, "penalty_usd_per_slot": 1.0},
            ],
        ),
        toy,
    )
    late = {a["job"]: a["late_slots"] for a in plan.assignments}
    assert late == {"a": 0, "b": 1} and plan.totals["penalty_usd"] == pytest.approx(1.0)


def test_infeasible_fleet_is_explained(toy: Catalog) -> None:
    plan = fleet(
        freq(slots=1, objective="cost", budget_usd=5_000, jobs=[{"id": "a", "model": "toy-model", "due_slot": 0}]), toy
    )
    assert plan.status == "infeasible" and plan.explanation
    assert "budget of at least $10,000" in plan.explanation


# ------------------------------------------------------------------------------------------ brute force
def _enumerate(cat: Catalog, req: FleetRequest) -> float:
    modes = job_modes(cat, req)
    site = cat.site(req.site)
    env = req.power_kw if req.power_kw is not None else site.power_envelope_kw
    per_job = []
    for j in req.jobs:
        last = req.slots - 1 if j.penalty_usd_per_slot is not None else min(j.due_slot, req.slots - 1)
        window = list(range(j.release_slot, last + 1))
        opts = []
        for _, m in modes[modes["job"] == j.id].iterrows():
            for k in range(1, len(window) + 1):
                for slots in itertools.combinations(window, k):
                    if k * req.slot_hours >= float(m["time_to_train_h"]):
                        late = max(0, max(slots) - j.due_slot)
                        opts.append((m, set(slots), late * (j.penalty_usd_per_slot or 0.0)))
        per_job.append(opts)
    best = math.inf
    for combo in itertools.product(*per_job):
        nodes: dict[str, np.ndarray] = {}
        power = np.zeros(req.slots)
        for m, slots, _ in combo:
            arr = nodes.setdefault(m["server"], np.zeros(req.slots))
            for t in slots:
                arr[t] += m["nodes"]
                power[t] += m["facility_power_kw"]
        if (power > env * (1 + 1e-9)).any():
            continue
        capex = 0.0
        for p, arr in nodes.items():
            s = cat.server(p)
            f = cat.fabric(s.fabrics[0])
            n = int(arr.max())
            sw = int(cost_mod.switch_count(n, s.nic_ports, f.switch_radix))
            capex += float(
                cost_mod.capex_usd(
                    n,
                    s.price_usd or 0.0,
                    s.nic_ports,
                    f.nic_price_usd,
                    sw,
                    f.switch_price_usd,
                    cost_mod.cable_count(n, s.nic_ports, f.switch_radix),
                    f.cable_price_usd,
                )
            )
        if req.budget_usd is not None and capex > req.budget_usd * (1 + 1e-9):
            continue
        energy = sum(float(m["facility_energy_kwh"]) for m, _, _ in combo)
        penalty = sum(pen for _, _, pen in combo)
        horizon = req.slots * req.slot_hours
        value = {
            "cost": capex * horizon / (req.life_years * cost_mod.HOURS_PER_YEAR)
            + energy * site.electricity_usd_per_kwh,
            "energy": energy,
            "carbon": energy * site.carbon_kg_per_kwh,
        }[req.objective] + penalty
        best = min(best, value)
    return best


def _tiny(data: Any) -> tuple[Catalog, FleetRequest]:
    servers = [
        toy_server(id=f"s{i}", price_usd=data.draw(st.floats(1e3, 5e4)), cpu_power_w=data.draw(st.floats(1, 200)))
        for i in range(data.draw(st.integers(1, 2)))
    ]
    cat = toy_catalog(servers=servers, overhead_ms=data.draw(st.floats(0, 2000)))
    slots = data.draw(st.integers(1, 3))
    jobs = []
    for i in range(data.draw(st.integers(1, 3))):
        rel = data.draw(st.integers(0, slots - 1))
        jobs.append(
            {
                "id": f"j{i}",
                "model": "toy-model",
                "samples": data.draw(st.floats(2e5, 3e6)),
                "release_slot": rel,
                "due_slot": data.draw(st.integers(rel, slots - 1)),
                "penalty_usd_per_slot": data.draw(st.one_of(st.none(), st.floats(0, 100))),
            }
        )
    req = FleetRequest.model_validate(
        {
            **BASE,
            "slots": slots,
            "slot_hours": data.draw(st.sampled_from([3.0, 6.0, 10.0])),
            "jobs": jobs,
            "objective": data.draw(st.sampled_from(["cost", "energy", "carbon"])),
            "budget_usd": data.draw(st.one_of(st.none(), st.floats(5e3, 1e5))),
            "power_kw": data.draw(st.one_of(st.none(), st.floats(0.05, 1.0))),
            "solver": {"time_limit_s": 60, "mip_rel_gap": 1e-9, "presolve": True},
        }
    )
    return cat, req


@settings(
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_fleet_mip_equals_brute_force(data: Any) -> None:
    cat, req = _tiny(data)
    brute = _enumerate(cat, req)
    plan = fleet(req, cat)
    if math.isinf(brute):
        assert plan.objective_value is None
        return
    assert plan.objective_value is not None, plan.explanation
    assert math.isclose(plan.objective_value, brute, rel_tol=1e-5, abs_tol=1e-4)


@settings(
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data(), factor=st.floats(1.0, 3.0))
def test_more_budget_or_power_never_makes_the_fleet_worse(data: Any, factor: float) -> None:
    cat, req = _tiny(data)
    v = fleet(req, cat).objective_value
    for change in (
        {"budget_usd": None if req.budget_usd is None else req.budget_usd * factor},
        {"power_kw": None if req.power_kw is None else req.power_kw * factor},
    ):
        v2 = fleet(req.model_copy(update=change), cat).objective_value
        if v is not None:
            assert v2 is not None and v2 <= v * (1 + 1e-6) + 1e-4
