"""Shared fixtures: the shipped catalog and a tiny synthetic catalog whose optima can be derived by hand.

The toy world (used by the optimizer specifications):
* GPU "toy-gpu": 100 TFLOP/s, 100 W TDP, idle 10 W; power curve "toy-curve": cap 0.5 -> 80% throughput at
  45% of TDP, cap 1.0 -> 100% at 70%; calibration MFU 0.5 for (toy, cnn) -> 50 TFLOP/s per GPU.
* Workload "toy-model": 1e12 FLOPs per sample, fixed global batch 1000, 1e6 samples (= 1000 steps), one
  parameter (communication is negligible and fully overlapped), framework overhead 1 s per step.
  Step time on n one-GPU nodes at cap 1.0 = 1000 * 1e12 / (n * 5e13) + 1 = 20/n + 1 s, so
  time to train T(n) = 1000 * (20/n + 1) s.
* Servers "toy-a" (price 10,000) and "toy-b" (identical, price 20,000), one GPU each, one CPU core (kept
  busy by the GPU's host thread, so the CPU draws its full 1 W), host power 1.0002 W.
* Fabric "toy-net": no switch power or price.
* Sites "clean" (0.01 kg/kWh) and "dirty" (1.0 kg/kWh), PUE 1, 1 USD/kWh.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from planner.data import Catalog, Fabric, FrameworkProfile, Gpu, PowerCapCurve, Server, Site, Workload, load_catalog

# The on-disk physics store (planner/physics/store.py) is off for the suite, in-process and in the processes tests
# start (they inherit the environment): every test computes what it checks. tests/physics/test_physics_store.py turns
# it on.
os.environ["PLANNER_CACHE_DIR"] = "off"


@pytest.fixture(scope="session")
def shipped() -> Catalog:
    return load_catalog()


def toy_gpu(**kw: Any) -> Gpu:
    base = dict(
        id="toy-gpu",
        name="Toy GPU",
        vendor="nvidia",
        family="toy",
        bf16_tflops=100.0,
        memory_gb=80.0,
        memory_bandwidth_tbps=2.0,
        tdp_w=100.0,
        min_power_limit_w=50.0,
        max_power_limit_w=100.0,
        idle_power_w=10.0,
        intra_node_bandwidth_gb_s=100.0,
        matmul_efficiency=0.8,
        power_curve="toy-curve",
        source="test",
    )
    base.update(kw)
    return Gpu.model_validate(base)


def toy_server(**kw: Any) -> Server:
    base = dict(
        id="toy-a",
        name="Toy A",
        gpu="toy-gpu",
        gpus_per_node=1,
        cpu="toy",
        cpu_cores=1,
        cpu_power_w=1.0,
        ram_gb=64,
        ram_power_w=0.0001,
        storage_tb=1,
        storage_read_gb_s=100,
        storage_power_w=0.0001,
        other_power_w=0,
        psu_efficiency=1.0,
        nic_ports=1,
        max_nic_port_gbps=400,
        fabrics=["toy-net"],
        intra_node="pcie",
        rack_units=1,
        price_usd=10000.0,
        rent_usd_per_month=730.0,
        source="test",
    )
    base.update(kw)
    return Server.model_validate(base)


def toy_workload(**kw: Any) -> Workload:
    base = dict(
        id="toy-model",
        name="Toy",
        family="cnn",
        framework="toy-fw",
        params=1.0,
        train_flops_per_sample=1e12,
        sample_unit="example",
        precision="bf16",
        activation_bytes_per_sample=1.0,
        efficiency_half_batch=1e-9,
        default_global_batch=1000,
        default_samples=1e6,
        reference_global_batch=1000,
        source="test",
    )
    base.update(kw)
    return Workload.model_validate(base)


def toy_catalog(
    servers: list[Server] | None = None,
    workloads: list[Workload] | None = None,
    gpus: list[Gpu] | None = None,
    sites: list[Site] | None = None,
    calibration: dict[str, Any] | None = None,
    overhead_ms: float = 1000.0,
) -> Catalog:
    curve = PowerCapCurve(
        id="toy-curve",
        description="toy",
        source="test",
        points=[
            {"cap_fraction": 0.5, "throughput_factor": 0.8, "power_fraction": 0.45},
            {"cap_fraction": 1.0, "throughput_factor": 1.0, "power_fraction": 0.7},
        ],
    )
    fabric = Fabric(
        id="toy-net",
        name="toy",
        kind="infiniband",
        port_bandwidth_gbps=400,
        latency_us=0.5,
        achieved_efficiency=0.9,
        nic_price_usd=0,
        nic_power_w=0,
        switch_radix=64,
        switch_price_usd=0,
        switch_power_w=0,
        cable_price_usd=0,
        source="test",
    )
    fw = FrameworkProfile(
        id="toy-fw",
        name="toy",
        overlap_fraction=1.0,
        step_overhead_ms=overhead_ms,
        tensor_parallel=False,
        pipeline_parallel=False,
        max_zero_stage=0,
        source="test",
    )
    sites = sites or [
        Site(
            id="clean",
            name="clean",
            pue=1.0,
            electricity_usd_per_kwh=1.0,
            carbon_kg_per_kwh=0.01,
            power_envelope_kw=1000,
            source="test",
        ),
        Site(
            id="dirty",
            name="dirty",
            pue=1.0,
            electricity_usd_per_kwh=1.0,
            carbon_kg_per_kwh=1.0,
            power_envelope_kw=1000,
            source="test",
        ),
    ]
    servers = servers or [toy_server(), toy_server(id="toy-b", name="Toy B", price_usd=20000.0)]
    gpus = gpus or [toy_gpu()]
    workloads = workloads or [toy_workload()]
    cal = calibration or {"mfu": {g.family: {"cnn": 0.5} for g in gpus}}
    return Catalog(
        gpus={g.id: g for g in gpus},
        servers={s.id: s for s in servers},
        fabrics={fabric.id: fabric},
        sites={s.id: s for s in sites},
        power_curves={curve.id: curve},
        frameworks={fw.id: fw},
        workloads={w.id: w for w in workloads},
        calibration=cal,
    )


@pytest.fixture()
def toy() -> Catalog:
    return toy_catalog()


@pytest.fixture
def built_plan_models(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every single-job MIP ``solve`` builds while the test runs (planner.plan.mip.build_model, recorded)."""
    from planner.plan import mip as plan_mip

    models: list[Any] = []
    build = plan_mip.build_model

    def keep(*args: Any, **kw: Any) -> Any:
        models.append(build(*args, **kw))
        return models[-1]

    monkeypatch.setattr(plan_mip, "build_model", keep)
    return models
