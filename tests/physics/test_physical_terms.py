"""Each physical term against a number derived by hand."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

from planner.data import Configuration, Layout, PowerCapCurve
from planner.data import calibration as calib
from planner.physics import communication as comm
from planner.physics import compute, cost, evaluate, memory, power


def test_ring_allreduce_1gb_over_4_at_10gbs() -> None:
    # 2 (n-1)/n S/B + 2 (n-1) a = 2 * 3/4 * 1e9 / 1e10 + 6 * 1e-6 = 0.15 + 6e-6 s
    t = comm.ring_allreduce_time_s(1e9, 4, 1e10, 1e-6)
    assert float(t) == pytest.approx(0.150006, rel=1e-12)


def test_ring_allreduce_single_participant_is_free() -> None:
    assert float(comm.ring_allreduce_time_s(1e9, 1, 1e10, 1e-6)) == 0.0


def test_node_bandwidth_8_hdr_ports_at_85_percent() -> None:
    # 8 ports x 200 Gb/s = 1600 Gb/s = 200 GB/s, x 0.85 = 170 GB/s
    assert float(comm.node_bandwidth_bytes_s(8, 200, 400, 0.85)) == pytest.approx(170e9)
    # a 400G fabric on a node whose slots take 200G runs at 200G
    assert float(comm.node_bandwidth_bytes_s(1, 400, 200, 1.0)) == pytest.approx(25e9)


def test_data_parallel_allreduce_two_nodes_of_eight_is_nic_bound() -> None:
    # 16 replicas, 8 per node: the ring leaves each node through its NICs, shared by the one group on the
    # node -> bus bandwidth min(2.4e11, 1e11 * 8 / 8) = 1e11; 2 * 15/16 * 8e8 / 1e11 + 30 * 1e-5
    t, via_fabric = comm.data_parallel_allreduce_time_s(8e8, 16, 8, 8, 2.4e11, 1e11, 1e-5)
    assert float(t) == pytest.approx(2 * 15 / 16 * 8e8 / 1e11 + 30 * 1e-5, rel=1e-12)
    assert bool(via_fabric)


def test_data_parallel_allreduce_inside_one_node_uses_nvlink() -> None:
    # 8 replicas on one node: 2 * 7/8 * 8e8 / 2.4e11 + 14 * intra latency; the fabric is not used
    t, via_fabric = comm.data_parallel_allreduce_time_s(8e8, 8, 8, 8, 2.4e11, 1e11, 1e-5)
    assert float(t) == pytest.approx(2 * 7 / 8 * 8e8 / 2.4e11 + 14 * comm.INTRA_LATENCY_S, rel=1e-12)
    assert not bool(via_fabric)


def test_data_parallel_allreduce_tensor_parallel_groups_share_the_nics() -> None:
    # TP4 on 8-GPU nodes: 2 replicas of each group per node, 4 groups share the NICs -> each gets 1e11 * 2/8
    t, _ = comm.data_parallel_allreduce_time_s(1e9, 4, 2, 8, 2.4e11, 1e11, 0.0)
    assert float(t) == pytest.approx(2 * 3 / 4 * 1e9 / 2.5e10, rel=1e-12)


def test_optimizer_step_is_memory_bound() -> None:
    # 1e9 params x (2 x 16 + 4) B = 36 GB at 2 TB/s x 0.8 = 22.5 ms
    assert float(compute.optimizer_step_time_s(1e9, 16, 2.0)) == pytest.approx(36e9 / 1.6e12)


def test_pipeline_bubble_4_stages_12_microbatches() -> None:
    assert float(comm.pipeline_bubble_fraction(4, 12)) == pytest.approx(3 / 15)


def test_tensor_parallel_4_collectives_per_layer() -> None:
    per = 2 * 3 / 4 * 1e6 / 1e11 + 6 * comm.INTRA_LATENCY_S
    t = comm.tensor_parallel_time_s(1e6, 4, 10, 2, False, 1e11)
    assert float(t) == pytest.approx(per * 4 * 10 * 2)
    assert float(comm.tensor_parallel_time_s(1e6, 4, 10, 2, True, 1e11)) == pytest.approx(per * 6 * 10 * 2)


def test_compute_time_one_petaflop_on_a100_at_half_mfu() -> None:
    # 1e15 / (312e12 * 0.5 * 1.0) = 6.4103 s
    assert float(compute.compute_time_s(1e15, 312, 0.5, 1.0)) == pytest.approx(1e15 / 156e12)


def test_kernel_efficiency_half_at_half_batch() -> None:
    assert float(compute.kernel_efficiency(0.6, 16, 16)) == pytest.approx(0.3)


def test_model_state_7b_adam_and_zero() -> None:
    # 16 bytes/param x 7e9 = 112 GB; ZeRO-1 over 8: 2+2 bytes + 12/8 bytes = 5.5 bytes x 7e9 = 38.5 GB
    assert float(memory.model_state_gb(7e9, 7e9, 16, 1, 8, 0)) == pytest.approx(112.0)
    assert float(memory.model_state_gb(7e9, 7e9, 16, 1, 8, 1)) == pytest.approx(38.5)
    assert float(memory.model_state_gb(7e9, 7e9, 16, 1, 8, 3)) == pytest.approx(14.0)
    # tensor x pipeline parallel 8 divides everything: 112 / 8 = 14
    assert float(memory.model_state_gb(7e9, 7e9, 16, 8, 1, 0)) == pytest.approx(14.0)
    # LoRA: 2-byte weights for all 7e9 params + (2 gradient + 12 optimizer) bytes per trainable param
    assert float(memory.model_state_gb(7e9, 1e7, 16, 1, 1, 0)) == pytest.approx(14.0 + 0.14)


def test_activation_memory_with_recompute() -> None:
    # 1 GB per sample x 4 samples / tp 2 x kept 0.1 = 0.2 GB
    assert float(memory.activation_gb(1e9, 4, 2, 0.1)) == pytest.approx(0.2)


def test_fits_uses_95_percent_of_memory() -> None:
    assert bool(memory.fits(75.9, 80)) and not bool(memory.fits(76.1, 80))


def test_power_cap_curve_interpolates_and_never_exceeds_the_cap() -> None:
    curve = PowerCapCurve(
        id="c",
        description="d",
        source="s",
        points=[
            {"cap_fraction": 0.5, "throughput_factor": 0.8, "power_fraction": 0.45},
            {"cap_fraction": 1.0, "throughput_factor": 1.0, "power_fraction": 0.7},
        ],
    )
    tf, pf = power.cap_curve_at(curve, np.array([0.5, 0.75, 1.0]))
    assert tf.tolist() == pytest.approx([0.8, 0.9, 1.0])
    assert pf.tolist() == pytest.approx([0.45, 0.575, 0.7])


def test_gpu_power_busy_and_waiting() -> None:
    # fully busy: p * TDP = 0.7 * 400 = 280 W; fully waiting: idle + 0.3 (280 - 60) = 126 W
    assert float(power.gpu_power_w(400, 60, 0.7, 1.0)) == pytest.approx(280.0)
    assert float(power.gpu_power_w(400, 60, 0.7, 0.0)) == pytest.approx(126.0)


def test_node_power_through_psu() -> None:
    # (8 x 300 + 1000 host + 8 x 20 NIC) / 0.94; a single node has no compute-fabric NIC draw
    assert float(power.node_power_w(8, 300, 1000, 8, 20, 0.94, True)) == pytest.approx(3560 / 0.94)
    assert float(power.node_power_w(8, 300, 1000, 8, 20, 0.94, False)) == pytest.approx(3400 / 0.94)


@pytest.mark.parametrize(
    ("nodes", "ports", "radix", "switches"),
    [
        (1, 8, 40, 0),  # one node: no fabric
        (5, 8, 40, 1),  # 40 ports fit one 40-port switch
        (64, 8, 40, 39),  # 512 ports <= 40^2/2: ceil(1024/40)=26 leaves + 13 spines
        (1024, 8, 64, 640),  # 8192 ports > 2048: three tiers: 256 edge + 256 aggregation + 128 core
    ],
)
def test_switch_count(nodes: int, ports: int, radix: int, switches: int) -> None:
    assert int(cost.switch_count(nodes, ports, radix)) == switches


def test_capex_and_amortization() -> None:
    # 4 nodes x (100k + 8 x 1k) + 1 switch x 20k + 32 cables x 100 = 455,200
    capex = cost.capex_usd(4, 100_000, 8, 1_000, 1, 20_000, 32, 100)
    assert float(capex) == pytest.approx(455_200)
    # one year of a 4-year life costs a quarter
    assert float(cost.amortized_usd(400.0, cost.HOURS_PER_YEAR, 4.0)) == pytest.approx(100.0)
    assert float(cost.rent_usd(2, 730.0, 10.0)) == pytest.approx(20.0)


def test_convergence_growth_from_mlperf(shipped) -> None:  # type: ignore[no-untyped-def]
    wl = shipped.workload("resnet50")
    assert float(compute.samples_factor(wl, wl.reference_global_batch)) == pytest.approx(1.0)
    # MLPerf: ~86 epochs at batch 67k vs ~35 at 3.2k
    f = float(compute.samples_factor(wl, 67456))
    assert 35 * f == pytest.approx(86, rel=0.03)
    assert math.isclose(float(compute.samples_factor(shipped.workload("llama3-8b"), 10_000)), 1.0)


def test_interleaved_pipeline_divides_the_bubble_and_multiplies_p2p(shipped: Any) -> None:
    # Megatron's interleaved 1F1B: with v model chunks per GPU the bubble is (p-1)/(v m) of the busy time and
    # every micro-batch crosses v times as many stage boundaries -- all exposed where the framework blocks on them
    # (Megatron-LM 2021), only the critical path's (p v - 1) / m of the plain schedule's where it overlaps them
    # (Megatron-Core overlap_p2p_comm: the megatron profile).
    def run(v: int, framework: str) -> Any:
        lay = Layout(tensor_parallel=8, pipeline_parallel=8, zero_stage=1, recompute=True, virtual_stages=v)
        wl = shipped.workload("gpt3-175b").model_copy(update={"framework": framework})
        cat = shipped.replace(workloads={**shipped.workloads, wl.id: wl})
        return evaluate(cat, Configuration(model=wl.id, server="dgx-h100", nodes=64, layout=lay))

    for framework in ("megatron-2021", "megatron"):
        one, two = run(1, framework), run(2, framework)
        b1, b2 = one.step_time_breakdown_s, two.step_time_breakdown_s
        m = one.global_batch / (one.gpus // 64)  # micro-batches per replica (micro-batch 1, DP = 512 / 64)
        assert b1["pipeline_bubble"] == pytest.approx((b1["compute"] + b1["tensor_parallel"]) * 7 / m, rel=1e-12)
        assert b2["pipeline_bubble"] == pytest.approx(b1["pipeline_bubble"] / 2, rel=1e-12)
        p2p_factor = 2.0 if framework == "megatron-2021" else (8 * 2 - 1) / m
        assert b2["pipeline_p2p"] == pytest.approx(p2p_factor * b1["pipeline_p2p"], rel=1e-9)
    assert "VP2" in two.layout and "VP" not in one.layout
    auto = evaluate(shipped, Configuration(model="gpt3-175b", server="dgx-h100", nodes=64))
    assert auto.time_to_train_h <= min(one.time_to_train_h, two.time_to_train_h) * (1 + 1e-12)


def test_power_cap_binds_only_below_the_uncapped_demand() -> None:
    # Two synthetic runs whose throughput depends only on x = cap / demand: f(x) = min(1, x), board power =
    # min(cap, demand). The normalized fit recovers f, so a light load (demand 0.45) is not slowed by a 0.5
    # cap, while a heavy one (demand 0.9) runs at 0.5 / 0.9 of its speed, and power follows min(cap, demand).
    rows = []
    for net, d in (("heavy", 0.9), ("light", 0.45)):
        for c in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0):
            rows.append(
                {
                    "curve": "syn",
                    "network": net,
                    "batch_size": 1,
                    "optimizer": "sgd",
                    "cap_fraction": c,
                    "throughput_factor": min(1.0, c / d),
                    "power_fraction": min(c, d),
                    "top_cap_fraction": 1.0,
                }
            )
    norm = calib.normalized_curve(pd.DataFrame(rows))
    # within 1%: each run is interpolated linearly between its measured limits (0.1 TDP apart) onto the x grid
    f, p = calib.curve_at(norm, 0.45, np.asarray([0.5, 0.3]))
    assert f == pytest.approx([1.0, 0.3 / 0.45], rel=0.01) and p == pytest.approx([0.45, 0.3], rel=0.01)
    f, p = calib.curve_at(norm, 0.9, np.asarray([0.5, 1.0]))
    assert f == pytest.approx([0.5 / 0.9, 1.0], rel=0.01) and p == pytest.approx([0.5, 0.9], rel=0.01)


def test_exposed_p2p_is_blocking_or_the_critical_path_when_overlapped() -> None:
    # plain schedule's p2p 0.8 s a step (m = 14 micro-batches: 28 transfers of 1/35 s), p = 4 stages, v = 2 chunks:
    # blocking: 2 x 0.8 = 1.6 s; overlapped (Megatron-Core overlap_p2p_comm): the 2 (4 x 2 - 1) = 14 transfers of
    # the fill and drain, 14 / 35 = 0.4 s = (p v - 1) / m x 0.8
    assert float(comm.exposed_p2p_time_s(0.8, 4, 2, 14)) == pytest.approx(1.6)
    assert float(comm.exposed_p2p_time_s(0.8, 4, 2, 14, overlap=True)) == pytest.approx(0.4)
    # too few micro-batches to hide anything (m = 2 < p): never more than the blocking schedule's 1.6 s
    assert float(comm.exposed_p2p_time_s(0.8, 4, 2, 2, overlap=True)) == pytest.approx(1.6)
    # overlap_p2p_comm applies to the interleaved schedule only: v = 1 blocks
    assert float(comm.exposed_p2p_time_s(0.8, 4, 1, 14, overlap=True)) == pytest.approx(0.8)
    # the interleave search picks v by bubble + exposed p2p: bubble 2 s at v = 1 -> 2 + 0.8 = 2.8 (v=1),
    # 1 + 0.4 = 1.4 (v=2), 0.5 + (15 / 14) x 0.8 = 1.357 (v=4) overlapped; blocking: 2.8, 2.6, 3.7 -> v = 2
    t, v = comm.interleaved_pipeline_time_s(
        np.array([2.0]), np.array([0.8]), [1, 2, 4], stages=4, micro_batches=14.0, p2p_overlap=True
    )
    assert (float(t[0]), int(v[0])) == (pytest.approx(0.5 + 15 / 14 * 0.8), 4)
    t, v = comm.interleaved_pipeline_time_s(np.array([2.0]), np.array([0.8]), [1, 2, 4], stages=4, micro_batches=14.0)
    assert (float(t[0]), int(v[0])) == (pytest.approx(2.6), 2)


def test_nvls_all_reduce_pays_one_switch_round_trip_per_bucket() -> None:
    # 100 MB over 8 GPUs of an NVSwitch node at 400 GB/s, 4 buckets. NVLS: 2 x 7/8 x 1e8 B at 400 x 480/370 GB/s
    # = 337.25 us, + 4 x 25 us = 437.25 us. Ring: 2 x 7/8 x 1e8 / 4e11 = 437.5 us + 4 x 2 x 7 x 3 us = 605.5 us.
    nvls = float(comm.nvls_time_s(1e8, 8, 4e11, 4))
    assert nvls == pytest.approx(1.75e8 / (4e11 * 480 / 370) + 4 * 25e-6)
    ring = float(comm.ring_time_s(1e8, 8, 4e11, comm.INTRA_LATENCY_S, 4))
    assert ring == pytest.approx(437.5e-6 + 4 * 14 * 3e-6)
    # NCCL picks the faster inside the node: NVLS where the NVSwitch has it, else the ring
    for has_nvls, expected in ((True, nvls), (False, ring)):
        t, via_fabric = comm.data_parallel_allreduce_time_s(
            1e8, 8, 8, 8, 4e11, 4e11, 5e-6, bucket_bytes=25e6, nvls=has_nvls
        )
        assert (float(t), bool(via_fabric)) == (pytest.approx(expected), False)
    # a 64-GPU NVLink domain (GB200 NVL72): the ring's 2 x 63 steps of 3 us per bucket against one 25 us round trip
    t64, _ = comm.data_parallel_allreduce_time_s(1e8, 64, 64, 64, 4e11, 4e11, 5e-6, bucket_bytes=25e6, nvls=True)
    assert float(t64) == pytest.approx(2 * 63 / 64 * 1e8 / (4e11 * 480 / 370) + 4 * 25e-6)
    assert float(comm.nvls_time_s(1e8, 1, 4e11)) == 0.0
