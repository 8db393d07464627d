"""The physics that carries the model to 1,000-16,000 GPUs, each term against a hand-derived number.

Collectives as NCCL runs them (ring vs tree, in-network reduction, NVLS), bucketed overlap with the backward
pass, Megatron's activation memory and recompute, context parallelism, goodput (Young/Daly), the LLM batch
limit and GPU power under load. Numbers are worked out in the comments from the formulas' sources."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from planner.data import Configuration, Layout, load_catalog
from planner.errors import PlannerInputError
from planner.physics import communication as comm
from planner.physics import compute, evaluate, evaluate_space, memory, power, reliability, step
from planner.physics.layouts import virtual_options
from planner.validation import (
    Case,
    lora_gap_text,
    megatron_workload,
    nvlink_domain,
    round_trend,
    round_trend_text,
    step_gap_table,
)

CAT = load_catalog()

# An 8-GPU node on 8 x NDR 400 Gb/s at 85% (340 GB/s aggregate) with NVLink at 360 GB/s achieved; per-hop
# latency across nodes 0.6 us wire + 5 us NCCL software.
NODE = 8 * 400e9 / 8 * 0.85
INTRA = 450e9 * 0.8
ALPHA = 0.6e-6 + comm.SOFTWARE_LATENCY_S


def _allreduce(size: float, nodes: int, sharp: bool = False, nvls: bool = False) -> float:
    t, _ = comm.data_parallel_allreduce_time_s(
        np.asarray([size]),
        np.asarray([8 * nodes]),
        np.asarray([8]),
        np.asarray([8]),
        np.asarray([INTRA]),
        np.asarray([NODE]),
        np.asarray([ALPHA]),
        in_network=np.asarray([sharp]),
        nvls=np.asarray([nvls]),
    )
    return float(t[0])


def test_ring_wins_for_a_large_message_on_two_nodes() -> None:
    # 1 GB over 16 GPUs: ring 2 x 15/16 x 1e9 / 340e9 = 5.515 ms + 2 x 15 x 5.6 us = 0.168 ms -> 5.683 ms;
    # tree moves the same at 80% of the bandwidth (6.893 ms) + 2 log2(2) x 5.6 us + 2 x 7 x 3 us -> 6.947 ms.
    ring = 2 * 15 / 16 * 1e9 / NODE + 2 * 15 * ALPHA
    tree = 2 * 15 / 16 * 1e9 / (NODE * 0.8) + 2 * 1 * ALPHA + 2 * 7 * comm.INTRA_LATENCY_S
    assert ring == pytest.approx(5.683e-3, rel=1e-3) and tree == pytest.approx(6.947e-3, rel=1e-3)
    assert _allreduce(1e9, 2) == pytest.approx(ring, rel=1e-9)


def test_tree_wins_at_scale_where_the_ring_pays_2n_latency_steps() -> None:
    # 100 MB over 128 nodes (1,024 GPUs): ring 2 x 1023/1024 x 1e8 / 340e9 = 0.588 ms + 2 x 1023 x 5.6 us
    # = 11.46 ms -> 12.05 ms; tree 0.735 ms + 2 x log2(128) x 5.6 us + 2 x 7 x 3 us = 0.120 ms -> 0.855 ms.
    ring = 2 * 1023 / 1024 * 1e8 / NODE + 2 * 1023 * ALPHA
    tree = 2 * 1023 / 1024 * 1e8 / (NODE * 0.8) + 2 * 7 * ALPHA + 2 * 7 * comm.INTRA_LATENCY_S
    assert ring == pytest.approx(12.05e-3, rel=1e-3) and tree == pytest.approx(0.855e-3, rel=1e-3)
    assert _allreduce(1e8, 128) == pytest.approx(tree, rel=1e-9)


def test_in_network_reduction_sends_the_data_once_and_nvls_speeds_the_node_phase() -> None:
    # 1 GB over 16 nodes with SHARP: NVLink reduce-scatter + all-gather 2 x 7/8 x 1e9 / 360e9 = 4.861 ms and
    # the NICs carry 1e9 / 340e9 = 2.941 ms, pipelined -> 4.861 ms + 2 switch hops x 2 x 5.6 us + 14 x 3 us.
    lat = 4 * ALPHA + 14 * comm.INTRA_LATENCY_S
    sharp = 2 * 7 / 8 * 1e9 / INTRA + lat
    assert sharp == pytest.approx(4.925e-3, rel=1e-3)
    assert _allreduce(1e9, 16, sharp=True) == pytest.approx(sharp, rel=1e-9)
    # ring without SHARP: 2 x 127/128 x 1e9 / 340e9 + 2 x 127 x 5.6 us = 7.26 ms
    assert _allreduce(1e9, 16) == pytest.approx(2 * 127 / 128 * 1e9 / NODE + 2 * 127 * ALPHA, rel=1e-9)
    # with NVLS on the NVSwitch the node phase runs at 480/370 of the ring bus bandwidth: 3.747 ms > 2.941 ms
    nvls = 2 * 7 / 8 * 1e9 / (INTRA * 480 / 370) + lat
    assert _allreduce(1e9, 16, sharp=True, nvls=True) == pytest.approx(nvls, rel=1e-9)
    # inside one node NVLS alone: 2 x 7/8 x 1e9 / (360e9 x 1.297) + one switch round trip (25 us), not 14 ring steps
    one = 2 * 7 / 8 * 1e9 / (INTRA * 480 / 370) + comm.NVLS_LATENCY_S
    assert _allreduce(1e9, 1, nvls=True) == pytest.approx(one, rel=1e-9)


def test_buckets_pay_latency_each_and_the_last_one_is_never_hidden() -> None:
    assert comm.bucket_count(np.asarray([672e6]), 25e6)[0] == 27  # BERT-Large fp16 gradients, DDP 25 MB buckets
    # 10 ms of all-reduce, 30 ms of compute in one micro-batch: the backward (20 ms) at 50% overlap hides 10 ms,
    # but the last of 4 buckets (2.5 ms) starts only when the backward ends.
    assert comm.exposed_gradient_sync_s(10e-3, 30e-3, 1, 0.5, 4)[()] == pytest.approx(2.5e-3)
    assert comm.exposed_gradient_sync_s(10e-3, 30e-3, 1, 0.0, 4)[()] == pytest.approx(10e-3)
    assert comm.exposed_gradient_sync_s(10e-3, 30e-3, 1, 0.25, 4)[()] == pytest.approx(5e-3)
    # ring latency paid per bucket: 4 calls of 2 (n-1) steps
    t4 = comm.ring_time_s(1e8, 16, NODE, ALPHA, 4)
    assert t4 - comm.ring_time_s(1e8, 16, NODE, ALPHA, 1) == pytest.approx(3 * 2 * 15 * ALPHA)


def test_megatron_activation_memory_per_layer() -> None:
    # GPT-3 175B shape, s = 2048, b = 1, h = 12288, a = 96, t = 8 (Korthikanti et al. 2022, Table 2), one layer:
    sbh = 2048 * 12288
    scores = 5 * 96 * 2048 / 12288  # = 80
    cases = {  # (sequence parallel, recompute) -> bytes
        (False, "none"): sbh * (10 + 24 / 8 + scores / 8),  # 578.8 MB
        (True, "none"): sbh * (34 / 8 + scores / 8),  # 358.6 MB
        (True, "selective"): 34 * sbh / 8,  # 107.0 MB
        (False, "full"): 2 * sbh,  # 50.3 MB
    }
    assert cases[(False, "none")] == pytest.approx(578.8e6, rel=1e-3)
    for (sp, rec), expected in cases.items():
        got = memory.transformer_activation_gb(2048, 12288, 96, 1, 1, 8, sp, rec, flash_attention=False)
        assert got == pytest.approx(expected / 1e9, rel=1e-12)
    # a FlashAttention kernel never stores the scores: no recompute equals selective
    flash = memory.transformer_activation_gb(2048, 12288, 96, 1, 1, 8, True, "none", flash_attention=True)
    assert flash == pytest.approx(cases[(True, "selective")] / 1e9)


def test_recompute_flops() -> None:
    # selective: the scores' forward again, s / (6h) = 2048 / 73,728 = 2.78% for GPT-3 175B; full: 4/3
    assert compute.recompute_flops_factor("selective", 2048, 12288, False) == pytest.approx(1.027778, rel=1e-6)
    assert compute.recompute_flops_factor("full", 2048, 12288, False) == pytest.approx(4 / 3)
    assert compute.recompute_flops_factor("none", 2048, 12288, False) == 1.0
    assert compute.recompute_flops_factor("selective", 2048, 12288, True) == 1.0
    assert Layout(recompute=True).recompute == "full" and Layout(recompute=False).recompute == "none"


def test_context_parallel_halves_activations_and_exchanges_kv() -> None:
    # Llama 3 405B, 8,192 tokens, 8 KV heads of 128: d_kv = 16384 x 8 / 128 = 1024; CP2 receives per layer
    # 3 x 1/2 x (K and V of the sequence: 2 x 8192 x 1024 x 2 bytes = 33.6 MB) = 50.3 MB without TP; with TP8 each
    # rank rings only its own KV head (1024 / 8 = 128 wide): 6.3 MB; with TP16 the 8 KV heads are replicated
    assert comm.context_parallel_bytes(1.0, 8192, 16384, 128, 8, 2)[()] == pytest.approx(3 * 0.5 * 2 * 8192 * 1024 * 2)
    assert comm.context_parallel_bytes(1.0, 8192, 16384, 128, 8, 2, 8)[()] == pytest.approx(
        3 * 0.5 * 2 * 8192 * 128 * 2
    )
    assert comm.context_parallel_bytes(1.0, 8192, 16384, 128, 8, 2, 16)[()] == pytest.approx(
        3 * 0.5 * 2 * 8192 * 128 * 2
    )
    base = dict(model="llama3-405b", server="dgx-h100", nodes=64, global_batch=1024)
    cp1 = evaluate(
        CAT,
        Configuration(
            **base, layout=Layout(tensor_parallel=8, pipeline_parallel=8, zero_stage=1, sequence_parallel=True)
        ),
    )
    cp2 = evaluate(
        CAT,
        Configuration(
            **base,
            layout=Layout(
                tensor_parallel=8, pipeline_parallel=8, zero_stage=1, sequence_parallel=True, context_parallel=2
            ),
        ),
    )
    # the ring sends the next KV block while attention runs on this one: attention is 12 s h L x s / FLOPs per
    # sample = 12 x 8192^2 x 16384 x 126 / 2.16e16 = 7.69% of the GEMM time
    assert step.attention_share(CAT.workload("llama3-405b")) == pytest.approx(
        12 * 8192**2 * 16384 * 126 / 2.16e16, rel=1e-12
    )
    # cp - 1 of the cp ring steps overlap a transfer: at CP2 half the attention GEMMs' time covers the KV exchange
    assert step.context_parallel_cover_s(np.asarray([10.0]), 2)[0] == pytest.approx(10.0 * 0.5)
    assert step.context_parallel_cover_s(np.asarray([10.0]), 4)[0] == pytest.approx(10.0 * 0.75)
    assert step.context_parallel_cover_s(np.asarray([10.0]), 1)[0] == 0.0
    # here the ring's 16 ranks (TP8 x CP2) span two nodes, so the exchange goes over the NICs, but each TP rank
    # rings only its own KV head: 6.3 MB per layer and micro-batch, ~16 layers per stage -> ~100 MB at ~40 GB/s
    # per GPU = ~2.5 ms per micro-batch, far under half the attention time (7.69% of a micro-batch's GEMMs): hidden
    assert cp2.step_time_breakdown_s["context_parallel"] == 0 == cp1.step_time_breakdown_s["context_parallel"]
    assert cp2.memory_per_gpu_gb < cp1.memory_per_gpu_gb
    assert "CP2" in cp2.layout


def test_young_daly_interval_and_goodput() -> None:
    # scale_facts.md 1.3 worked example: delta = 60 s, M = 3.1 h = 11,160 s -> Young sqrt(2 x 60 x 11160) = 1157 s
    # (19 min); Daly adds x (1 + sqrt(r)/3 + r/9) - delta with r = delta / 2M = 0.002688 -> 1117.6 s
    young = math.sqrt(2 * 60 * 11160)
    assert young == pytest.approx(1157.2, abs=0.1)
    r = 60 / (2 * 11160)
    daly = young * (1 + math.sqrt(r) / 3 + r / 9) - 60
    assert daly == pytest.approx(1117.6, abs=0.2)
    assert reliability.daly_interval_s(60.0, 11160.0)[()] == pytest.approx(daly, rel=1e-12)
    # Llama 3: 419 failures in 54 days on 16,384 GPUs -> M = 3.09 h; a 5.67 TB checkpoint at 2 TB/s = 2.84 s;
    # waste = 2.84 / tau + (tau/2 + 2.84 + 900) / M with tau ~ 251 s -> goodput 0.906 (published "> 90%")
    m = reliability.mtbf_s(16384)[()]
    assert m / 3600 == pytest.approx(54 * 24 / 419, rel=1e-12)
    d = reliability.checkpoint_write_s(reliability.checkpoint_bytes(405e9, 405e9), 2048, 25e9)[()]
    assert d == pytest.approx(405e9 * 14 / 2e12)
    tau = reliability.daly_interval_s(d, m)[()]
    expected = 1 / (1 + d / tau + (tau / 2 + d + reliability.RESTART_S) / m)
    assert reliability.goodput(16384, d)[()] == pytest.approx(expected, rel=1e-12)
    assert 0.90 < expected < 0.91
    # a stated failure rate: 1e-4 per GPU-hour on 1,000 GPUs -> M = 36 s x 1000 / 1000... = 36,000 / 1000 h
    assert reliability.mtbf_s(1000, 1e-4)[()] == pytest.approx(36_000.0)


def test_goodput_enters_time_and_energy_and_can_be_turned_off() -> None:
    cfg = Configuration(model="llama3-70b", server="dgx-h100", nodes=512)
    on, off = evaluate(CAT, cfg), evaluate(CAT, cfg.model_copy(update={"failures": False}))
    assert off.goodput == 1.0 and 0.8 < on.goodput < 1.0
    assert on.time_to_train_h == pytest.approx(off.time_to_train_h / on.goodput, rel=1e-12)
    assert on.energy_kwh == pytest.approx(off.energy_kwh / on.goodput, rel=1e-12)


def test_no_plan_exceeds_the_workload_batch_limit() -> None:
    for model in ("llama3-405b", "llama3-70b", "gpt3-175b"):
        wl = CAT.workload(model)
        assert wl.max_global_batch_tokens and wl.sequence_length
        df = evaluate_space(CAT, model, servers=["dgx-h100"], caps=[1.0], nodes=[64, 512, 1024, 2048, 4096])
        ok = df[df["valid_layout"]]
        assert (ok["global_batch"] * wl.sequence_length <= wl.max_global_batch_tokens * (1 + 1e-9)).all()
        # beyond the limit no layout is offered (16M tokens = 2,048 sequences of 8,192 on at most 2,048 x TP8 ...)
        assert len(ok) >= 1
    big = evaluate_space(CAT, "llama3-405b", servers=["dgx-h100"], caps=[1.0], nodes=[100_000 // 8])
    assert not big["valid_layout"].any() and not big["feasible"].any()  # 100k GPUs: > 16M tokens a step
    with pytest.raises(PlannerInputError, match="16,800,000 tokens per step"):
        evaluate(CAT, Configuration(model="llama3-405b", server="dgx-h100", nodes=100_000 // 8))


def test_power_curve_moves_to_the_load_demand() -> None:
    curve = CAT.power_curves["datacenter-v100"]
    caps = np.asarray([0.4, 0.6, 0.8, 1.0])
    d0 = curve.points[-1].power_fraction
    tf0, pf0 = power.cap_curve_at(curve, caps)
    tf, pf = power.load_curve_at(curve, caps, d0)  # the curve's own demand: unchanged
    np.testing.assert_allclose(tf, tf0 / power.cap_curve_at(curve, np.asarray([1.0]))[0][0])
    np.testing.assert_allclose(pf, pf0)
    tf9, pf9 = power.load_curve_at(curve, caps, 0.9)  # a GEMM-dense load that would draw 90% of TDP uncapped
    # at TDP it sits at x = 1 / 0.9 on the relative axis: the catalog curve at cap d0 / 0.9, scaled by 0.9 / d0
    at_tdp = power.cap_curve_at(curve, np.asarray([d0 / 0.9]))[1][0] * 0.9 / d0
    assert pf9[-1] == pytest.approx(at_tdp) and tf9[-1] == pytest.approx(1.0) and 0.75 < at_tdp <= 0.9
    assert (pf9 >= pf0 - 1e-12).all() and tf9[1] < tf0[1]  # draws more, and a mid cap binds harder


def test_llm_gpu_power_is_near_tdp_on_hopper() -> None:
    e = evaluate(CAT, Configuration(model="llama3-70b", server="dgx-h100", nodes=16))
    assert 0.7 * 700 < e.gpu_power_w <= 0.9 * 700 + 1e-9


def test_a_105_layer_model_fills_35_nodes_with_a_pipeline_that_divides_its_layers() -> None:
    wl = megatron_workload(529.6, 280).model_copy(update={"id": "mt-nlg-530b", "framework": "megatron"})
    cat = CAT.replace(workloads={**CAT.workloads, wl.id: wl})
    est = evaluate(cat, Configuration(model=wl.id, server="dgx-a100-80gb", nodes=35, global_batch=280))
    assert est.fits_memory, est.layout
    pp = int(est.layout.split("PP")[1].split()[0])
    assert 105 % pp == 0 and 280 % pp == 0  # 5, 7 or 35 stages


@pytest.mark.parametrize("mb", [1, 2, 4, 8, 16, 32])
def test_the_searched_micro_batch_is_never_slower_than_a_fixed_one(mb: int) -> None:
    # BERT-Large fixes no micro-batch: on 16 GPUs its batch is 512 (32 per GPU, its minimum) and the search
    # splits each replica's 32 by accumulation steps. A layout with a fixed micro-batch that divides it (the same
    # batch) is never faster than what the search picks.
    cfg = Configuration(model="bert-large", server="dgx-a100-80gb", nodes=2)
    auto = evaluate(CAT, cfg)
    fixed = evaluate(CAT, cfg.model_copy(update={"layout": Layout(zero_stage=1, micro_batch=mb)}))
    assert fixed.fits_memory and fixed.global_batch == auto.global_batch == 512
    assert auto.time_to_train_h <= fixed.time_to_train_h * (1 + 1e-12)


def test_evaluate_cli_turns_goodput_off() -> None:
    import json

    from planner.cli.main import main

    args = ["evaluate", "--model", "llama3-70b", "--server", "dgx-h100", "--nodes", "256", "--json"]
    import contextlib
    import io

    outs = []
    for extra in ([], ["--no-failures"]):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert main([*args, *extra]) == 0
        outs.append(json.loads(buf.getvalue()))
    assert outs[1]["goodput"] == 1.0 > outs[0]["goodput"] > 0.9
    assert outs[1]["time_to_train_h"] < outs[0]["time_to_train_h"]


def test_memory_bound_kernels_move_the_activations_twice() -> None:
    # 1 GB of activations, written in the forward and read in the backward pass, at 2 TB/s x 0.8 achieved
    assert compute.elementwise_time_s(1e9, 2.0)[()] == pytest.approx(2e9 / (2e12 * 0.8), rel=1e-12)
    # GPT-3 175B (s 2048, h 12288, 96 layers, flash attention) on TP4 PP8 with sequence parallelism, 16 micro-batches
    # of one sequence: 34 s h / 4 bytes per layer x 96 / 8 layers x 16 = 34 x 2048 x 12288 / 4 x 12 x 16 = 41.1 GB
    wl = CAT.workload("gpt3-175b")
    lay = Layout(tensor_parallel=4, pipeline_parallel=8, zero_stage=1, sequence_parallel=True)
    d = {"dp": np.asarray([4.0]), "B": np.asarray([64.0]), "mb": np.asarray([1.0])}
    assert step.activation_bytes_per_step(wl, lay, d)[0] == pytest.approx(34 * 2048 * 12288 / 4 * 12 * 16, rel=1e-12)
    # without sequence parallelism 10 s h of the 34 stay whole on every tensor-parallel rank
    lay_nosp = lay.model_copy(update={"sequence_parallel": False})
    assert step.activation_bytes_per_step(wl, lay_nosp, d)[0] == pytest.approx(
        (10 + 24 / 4) * 2048 * 12288 * 12 * 16, rel=1e-12
    )
    # workloads without a stated transformer shape move their stated activation bytes per sample: ResNet-50's 60 MB
    # per image x 64 / 4 images per replica = 0.96 GB
    assert step.activation_bytes_per_step(CAT.workload("resnet50"), Layout(), d)[0] == pytest.approx(0.96e9, rel=1e-12)


def test_layer_latency_floor_counts_layer_passes() -> None:
    # 12 layers x 16 micro-batches x 150 us = 28.8 ms
    assert compute.layer_latency_time_s(12 * 16, 150e-6)[()] == pytest.approx(0.0288, rel=1e-12)


def test_gradient_sync_bytes_per_zero_stage_and_reduce_precision() -> None:
    # 1e9 trainable of 2e9 parameters on a TP x PP = 8 shard, bf16 gradients reduced in fp32 (Megatron)
    assert step.gradient_sync_bytes(1e9, 2e9, 4.0, 2.0, 0, 8) == pytest.approx(1e9 * 4 / 8)
    assert step.gradient_sync_bytes(1e9, 2e9, 4.0, 2.0, 1, 8) == pytest.approx(1e9 * (4 + 2) / 2 / 8)
    assert step.gradient_sync_bytes(1e9, 2e9, 4.0, 2.0, 3, 8) == pytest.approx(1e9 * 4 / 2 / 8 + 2e9 * 2 / 8)
    # reduced in the training precision, stages 0-2 are one all-reduce of the gradients
    for zero in (0, 1, 2):
        assert step.gradient_sync_bytes(1e9, 2e9, 2.0, 2.0, zero, 1) == pytest.approx(2e9)
    assert CAT.framework("megatron").gradient_reduce_fp32 and not CAT.framework("pytorch-ddp").gradient_reduce_fp32


def test_roce_has_no_in_network_reduction() -> None:
    # Ethernet switches do not reduce: the same 1 GB all-reduce over 16 nodes is slower on RoCE 400G than on NDR
    # with SHARP at the same line rate (S once through the NICs instead of 2(n-1)/n x S)
    assert CAT.fabric("ndr400").in_network_reduction and not CAT.fabric("roce400").in_network_reduction
    base = dict(model="gpt3-175b", server="dgx-h100", nodes=16, global_batch=256)
    lay = Layout(tensor_parallel=8, pipeline_parallel=4, zero_stage=1, sequence_parallel=True)
    ib = evaluate(CAT, Configuration(**base, fabric="ndr400", layout=lay))
    roce = evaluate(CAT, Configuration(**base, fabric="roce400", layout=lay))
    assert roce.step_time_breakdown_s["data_parallel_exposed"] > ib.step_time_breakdown_s["data_parallel_exposed"]


def test_tensor_parallel_collectives_use_nvls_inside_nvswitch_nodes() -> None:
    # 8-way TP on an H100 node: NVLS reaches 480 vs the ring's 370 GB/s bus bandwidth (nccl#1455), so the TP
    # collectives' bandwidth term shrinks by 370/480 (their few microseconds of latency do not)
    base = dict(model="llama3-70b", server="dgx-h100", nodes=8, global_batch=64)
    lay = Layout(tensor_parallel=8, pipeline_parallel=4, zero_stage=1, sequence_parallel=True)
    with_nvls = evaluate(CAT, Configuration(**base, layout=lay)).step_time_breakdown_s["tensor_parallel"]
    gpu = CAT.gpu("h100-sxm").model_copy(update={"nvlink_sharp": False})
    no_nvls_cat = CAT.replace(gpus={**CAT.gpus, "h100-sxm": gpu})
    without = evaluate(no_nvls_cat, Configuration(**base, layout=lay)).step_time_breakdown_s["tensor_parallel"]
    assert with_nvls / without == pytest.approx(370 / 480, rel=0.02)


def test_nvl72_rack_is_one_nvlink_domain_holding_pipeline_stages() -> None:
    # a GB200 NVL72 rack is one 72-GPU node: Llama 3 405B (126 layers) fits one rack only with pipeline stages
    # inside it, one per 8-GPU board at most (9): PP9 divides the layers
    g, n = np.asarray([72, 72, 72, 72, 8, 8]), np.asarray([1, 1, 2, 2, 1, 4])
    assert step.pipeline_placeable(9, g[:1], n[:1]).tolist() == [True]
    assert step.pipeline_placeable(16, g[1:2], n[1:2]).tolist() == [False]  # more stages than boards
    assert step.pipeline_placeable(3, g[2:3], n[2:3]).tolist() == [True]  # one stage straddles the two racks
    assert step.pipeline_placeable(6, g[3:4], n[3:4]).tolist() == [True]
    assert step.pipeline_placeable(2, g[4:], n[4:]).tolist() == [False, True]  # 8-GPU nodes: across nodes only
    est = evaluate(CAT, Configuration(model="llama3-405b", server="gb200-nvl72", nodes=1))
    assert est.fits_memory and "PP" in est.layout
    pp = int(est.layout.split("PP")[1].split()[0])
    assert 1 < pp <= 9
    # MLPerf runs on NVL72 racks, as the validation lays them out: the whole run while it fits a rack, else
    # the largest whole share of a rack dividing it (72, or 64 = 16 of 18 trays)

    assert [nvlink_domain(g, 72) for g in (8, 36, 72, 144, 512, 576, 2496, 5120)] == [8, 36, 72, 72, 64, 72, 64, 64]


def test_step_never_shrinks_as_the_cap_tightens_with_context_parallelism() -> None:
    # a 64k-token Llama 3 8B (attention ~68% of its FLOPs) with full gradient overlap: what the KV ring and the
    # all-reduce hide behind must not make a slower GPU finish a step sooner (the search's bounds rely on it)
    wl = CAT.workload("llama3-8b")
    s = 65536
    flops = s * (6 * 8.0e9 + 12 * wl.layers * s * wl.hidden_size)  # type: ignore[operator]
    long = wl.model_copy(update={"id": "llama3-8b-64k", "sequence_length": s, "train_flops_per_sample": flops})
    cat = CAT.replace(
        workloads={**CAT.workloads, long.id: long},
        calibration={**CAT.calibration, "overlap": {**CAT.calibration.get("overlap", {}), "megatron": 1.0}},
    )
    for tp, cp in ((4, 4), (8, 2)):
        lay = Layout(tensor_parallel=tp, pipeline_parallel=1, zero_stage=1, sequence_parallel=True, context_parallel=cp)
        steps = [
            evaluate(
                cat,
                Configuration(
                    model=long.id, server="dgx-h100", nodes=64, fabric="eth25", global_batch=64, power_cap=c, layout=lay
                ),
            ).step_time_s
            for c in (1.0, 0.8, 0.6, 0.5)
        ]
        assert all(b >= a - 1e-12 for a, b in itertools.pairwise(steps))


def test_fp8_training_keeps_gemm_inputs_in_one_byte() -> None:
    # Korthikanti's 34 s b h per layer less the FP8 GEMM inputs (QKV 2, attention projection 2, FC1 2, FC2 8 s b h,
    # each at one byte instead of two: 7 s b h): 27 s b h / t with sequence parallelism, 8 + 19 / t without
    s, h, a, t = 2048, 12288, 96, 4
    sbh_gb = s * h / 1e9
    args = (s, h, a, 1, 1.0, t)
    bf16_sp = memory.transformer_activation_gb(*args, True, "none", True)[()]
    fp8_sp = memory.transformer_activation_gb(*args, True, "none", True, True)[()]
    fp8_nosp = memory.transformer_activation_gb(*args, False, "none", True, True)[()]
    assert bf16_sp == pytest.approx(34 * sbh_gb / t) and fp8_sp == pytest.approx(27 * sbh_gb / t)
    assert fp8_nosp == pytest.approx((8 + 19 / t) * sbh_gb)
    # full recomputation keeps only the 16-bit layer input either way: 2 s b h, split over the TP ranks along the
    # sequence with sequence parallelism (Korthikanti's 2 s b h L is the case without it)
    assert memory.transformer_activation_gb(*args, True, "full", True, True)[()] == pytest.approx(2 * sbh_gb / t)
    assert memory.transformer_activation_gb(*args, False, "full", True, True)[()] == pytest.approx(2 * sbh_gb)
    # and the model uses it where the GPU trains in FP8 (H100), not where it falls back to BF16 (A100)
    # (plain 1F1B, v = 1: an interleave would hold more chunks in flight, test_interleaved_pipeline_memory)
    lay = Layout(tensor_parallel=4, pipeline_parallel=8, virtual_stages=1, zero_stage=1, sequence_parallel=True)
    for server, ratio in (("dgx-h100", 27 / 34), ("dgx-a100-80gb", 1.0)):
        mem = {  # the workload's own precision (None) is fp8: it falls back to bf16 on the A100
            p or "fp8": evaluate(
                CAT, Configuration(model="gpt3-175b", server=server, nodes=16, global_batch=64, precision=p, layout=lay)
            ).memory_per_gpu_gb
            for p in ("bf16", None)
        }
        act_bf16 = 34 * sbh_gb / t * 96
        assert mem["bf16"] - mem["fp8"] == pytest.approx(act_bf16 * (1 - ratio), rel=1e-9, abs=1e-9)


def test_step_gap_table_states_the_missed_seconds_per_step() -> None:
    # A run published at 2.0 min over 60 steps (2.0 s/step), predicted at 1.5 min (1.5 s/step): the model misses
    # 0.5 s per step, -25%. Cases of other benchmarks and without steps are not in the table.

    lora = Case(
        "time_to_train",
        "v9.9 X sys llama2_70b_lora (512 GPUs, batch 64)",
        "test",
        2.0,
        1.5,
        "min",
        "hopper",
        "llm",
        gpus=512,
        steps=60.0,
    )
    other = Case(
        "time_to_train",
        "v9.9 X sys bert (512 GPUs, batch 64)",
        "test",
        2.0,
        1.0,
        "min",
        "hopper",
        "encoder",
        gpus=512,
        steps=60.0,
    )
    no_steps = Case(
        "time_to_train",
        "v9.9 Y sys llama2_70b_lora (8 GPUs, batch 8)",
        "test",
        2.0,
        1.0,
        "min",
        "hopper",
        "llm",
        gpus=8,
    )
    table = step_gap_table([lora, other, no_steps])
    assert list(table["case"]) == ["v9.9 X sys"]
    row = table.iloc[0]
    assert row["published s/step"] == pytest.approx(2.0)
    assert row["predicted s/step"] == pytest.approx(1.5)
    assert row["missed s/step"] == pytest.approx(0.5)
    assert row["error %"] == pytest.approx(-25.0)


def test_round_trend_compares_the_first_and_last_round_of_one_configuration() -> None:
    # One configuration (same model inputs) in three rounds: v5.0 at 2.0 and 2.2 s/step (median 2.1), v4.1 at
    # 3.0 s/step (the first round: rounds order by number, not text), v5.1 at 1.5 s/step; the model says 1.8.
    # First round v4.1 (3.0 s/step), last v5.1 (1.5): -50%. A configuration seen in one round only, a case
    # without steps and an energy case are left out.

    def case(name: str, minutes: float, inputs: str, steps: float = 60.0, kind: str = "time_to_train") -> Case:
        return Case(kind, name, "test", minutes, 1.8, "min", "blackwell", "llm", inputs, gpus=8, steps=steps)

    key = "llama2_70b_lora b200 1x8 ndr400x8 batch 8"
    cases = [
        case("v5.0 A sys llama2_70b_lora (8 GPUs, batch 8)", 2.0, key),
        case("v5.0 B sys llama2_70b_lora (8 GPUs, batch 8)", 2.2, key),
        case("v4.1 C sys llama2_70b_lora (8 GPUs, batch 8)", 3.0, key),
        case("v5.1 D sys llama2_70b_lora (8 GPUs, batch 8)", 1.5, key),
        case("v5.1 E sys llama2_70b_lora (8 GPUs, batch 8)", 9.0, key, steps=0.0),
        case("v5.1 F sys bert (8 GPUs, batch 8)", 1.0, "bert b200 1x8 ndr400x8 batch 8"),
        case("v5.1 G sys llama2_70b_lora (8 GPUs, batch 8)", 9.0, key, kind="energy"),
    ]
    t = round_trend(cases)
    assert list(t["model inputs"]) == [key]
    row = t.iloc[0]
    assert (row["first round"], row["last round"]) == ("v4.1 (1)", "v5.1 (1)")
    assert row["first s/step"] == pytest.approx(3.0)
    assert row["last s/step"] == pytest.approx(1.5)
    assert row["change %"] == pytest.approx(-50.0)
    assert row["model s/step"] == pytest.approx(1.8)
    text = round_trend_text(t)
    assert text.startswith("1 configuration of") and "In 1 of them" in text and "Blackwell LoRA -50% to -50%" in text
    assert round_trend_text(round_trend(cases[:1])) == "No configuration was measured in more than one round."


def test_interleaved_pipeline_memory() -> None:
    # Megatron's interleaved 1F1B: the first rank runs 2 (p - 1) + (v - 1) p chunks ahead, so (v + 1) p - 1 chunks
    # of L / (p v) layers are in flight. p = 8, v = 2: 23 chunks of L / 16 = 1 + 7/16 of the plain schedule's L
    # layers; v = 8: 71 / 64; never more than the step's m v chunks, never less than the plain schedule
    assert step.interleave_activation_factor(8, 2, 32)[()] == pytest.approx(23 / 16)
    assert step.interleave_activation_factor(8, 8, 32)[()] == pytest.approx(71 / 64)
    assert step.interleave_activation_factor(8, 2, 10)[()] == pytest.approx(20 / 16)
    assert step.interleave_activation_factor(8, 1, 32)[()] == 1.0
    # a fixed VP2 reports the plain layout's memory plus 7/16 of its activations
    base = dict(model="gpt3-175b", server="dgx-h100", nodes=32, global_batch=256, precision="bf16")
    lay = dict(tensor_parallel=4, pipeline_parallel=8, zero_stage=1, sequence_parallel=True, recompute="full")
    v1 = evaluate(CAT, Configuration(**base, layout=Layout(**lay, virtual_stages=1)))
    v2 = evaluate(CAT, Configuration(**base, layout=Layout(**lay, virtual_stages=2)))
    act = memory.transformer_activation_gb(2048, 12288, 96, 96, 1.0, 4, True, "full", False)[()]
    assert v2.memory_per_gpu_gb - v1.memory_per_gpu_gb == pytest.approx(act * 7 / 16, rel=1e-9)
    # the search never picks an interleave whose activations overflow the GPU: within the usable share of 80 GB
    for nodes in (16, 32, 64):
        est = evaluate(CAT, Configuration(model="gpt3-175b", server="dgx-h100", nodes=nodes))
        assert est.memory_per_gpu_gb <= memory.USABLE_FRACTION * 80.0 + 1e-9, est.layout


def test_caps_below_the_measured_range_cost_throughput() -> None:
    # below the curve's lowest level the cap binds harder than anything measured: power follows the cap and
    # throughput falls in proportion, so work per joule stays at the curve's bottom (no free energy savings)
    gpu = CAT.gpu("h100-sxm")
    curve = CAT.power_curves[gpu.power_curve]
    tf, pf = power.load_curve_at(curve, np.array([0.2, 0.25, 0.3]), gpu.training_power_fraction)
    assert tf[0] / tf[2] == pytest.approx(2 / 3) and tf[1] / tf[2] == pytest.approx(5 / 6)
    assert pf[0] / tf[0] == pytest.approx(pf[1] / tf[1]) == pytest.approx(pf[2] / tf[2])
    low = [
        evaluate(CAT, Configuration(model="llama3-8b", server="dgx-h100", nodes=4, power_cap=c, failures=False))
        for c in (0.3, 0.4, 0.5)
    ]
    assert low[0].step_time_s > low[1].step_time_s > low[2].step_time_s


def test_tf32_runs_at_half_the_bf16_peak() -> None:
    # dense TF32 tensor-core peak: A100 156 vs BF16 312 TFLOP/s, H100 SXM 495 vs 989 (NVIDIA datasheets)
    for gid in ("a100-sxm-80gb", "h100-sxm"):
        gpu = CAT.gpu(gid)
        assert compute.peak_tflops(gpu, "tf32") == (gpu.bf16_tflops / 2.0, "tf32")
    bf16, tf32 = (
        evaluate(CAT, Configuration(model="bert-large", server="dgx-a100-80gb", nodes=1, precision=p))
        for p in ("bf16", "tf32")
    )
    assert tf32.step_time_breakdown_s["compute"] > 1.5 * bf16.step_time_breakdown_s["compute"]


def test_full_recompute_repeats_the_forward_share_of_the_flops() -> None:
    # every weight trains: the forward pass is 1/3 of the FLOPs -> 4/3. LoRA (frozen base): forward 2 N s + a
    # third of attention's 12 s^2 h L over its 2.82e15 FLOPs per sequence: (2 x 69e9 x 8192 + 4 x 8192^2 x 8192 x
    # 80) / 2.82e15 = 0.4643 -> 1.4643
    assert compute.forward_flops_share(CAT.workload("gpt3-175b")) == pytest.approx(1 / 3)
    lora = CAT.workload("llama2-70b-lora")
    share = (2 * 69e9 * 8192 + 4 * 8192**2 * 8192 * 80) / 2.82e15
    assert compute.forward_flops_share(lora) == pytest.approx(share, rel=1e-12)
    assert compute.recompute_flops_factor("full", 8192, 8192, True, share) == pytest.approx(1 + share)


def test_the_busiest_pipeline_stage_sets_the_pace() -> None:
    # Llama 3 405B has 126 layers: 16 stages hold 8 or 7 (Megatron's uneven stages), the 8-layer stage paces the
    # pipeline: 8 x 16 / 126 = 1.0159 of the even share. GPT-3's 96 layers on 16 stages are 6 per stage: chunks of
    # whole layers allow v = 1 or 2 of the searched 1/2/4/8 (4 would need 1.5 layers per chunk); a fixed v = 4
    # pays for 4 chunks of ceil(96 / 64) = 2 layers
    l405, gpt3 = CAT.workload("llama3-405b"), CAT.workload("gpt3-175b")
    assert step.stage_layers(l405, Layout(pipeline_parallel=16)) == 8.0
    assert step.stage_layers(gpt3, Layout(pipeline_parallel=16)) == 6.0
    assert step.stage_layers(gpt3, Layout(pipeline_parallel=16, virtual_stages=4)) == 8.0
    assert step.stage_layers(gpt3, Layout(pipeline_parallel=1)) == 96.0
    assert virtual_options(Layout(pipeline_parallel=16), 96, gpt3) == [1, 2]
    assert virtual_options(Layout(pipeline_parallel=16), 126, l405) == [1, 2, 4]
    # the compute of the uneven 405B pipeline: 8 x 16 / 126 of the even share, at a fixed plain schedule
    base = dict(model="llama3-405b", server="dgx-h100", nodes=64, global_batch=1024, precision="bf16")
    lay = dict(tensor_parallel=8, zero_stage=1, sequence_parallel=True, recompute="full", virtual_stages=1)
    p16 = evaluate(CAT, Configuration(**base, layout=Layout(**lay, pipeline_parallel=16)))
    p2 = evaluate(CAT, Configuration(**base, layout=Layout(**lay, pipeline_parallel=2)))  # 63 + 63: even
    # (same GPUs, batch and GEMM shapes: each GPU's share of the FLOPs is equal but for the busiest stage)
    ratio = p16.step_time_breakdown_s["compute"] / p2.step_time_breakdown_s["compute"]
    assert ratio == pytest.approx(8 * 16 / 126, rel=1e-6)


def test_recompute_that_buys_a_larger_interleave_is_searched() -> None:
    # GPT-3 175B on 6 DGX H100, batch 8: without recomputation the layout TP8 PP6 fits only at v = 1 (75.8 GB);
    # with full recomputation it fits at v = 8, whose 8x smaller bubble outweighs the extra forward pass. The
    # search must not let the plain layout stand in for its recompute variant on that row (that would give
    # 0.873 s instead of 0.804 s)
    base = dict(model="gpt3-175b", server="dgx-h100", nodes=6, global_batch=8)
    searched = evaluate(CAT, Configuration(**base))
    vp8 = Layout(
        tensor_parallel=8, pipeline_parallel=6, virtual_stages=8, zero_stage=1, sequence_parallel=True, recompute="full"
    )
    fixed = evaluate(CAT, Configuration(**base, layout=vp8))
    assert fixed.fits_memory
    assert searched.step_time_s <= fixed.step_time_s * (1 + 1e-9)


def test_context_parallel_exchange_shows_where_attention_cannot_hide_it() -> None:
    # on PCIe L40S nodes the KV ring of CP4 leaves the node and attention cannot cover it: the term is exposed
    lay = Layout(tensor_parallel=2, pipeline_parallel=16, context_parallel=4, zero_stage=1, sequence_parallel=True)
    est = evaluate(CAT, Configuration(model="llama3-405b", server="l40s-4", nodes=64, global_batch=16, layout=lay))
    assert est.step_time_breakdown_s["context_parallel"] > 0


def test_data_parallel_batch_stops_at_the_largest_published_convergence_point() -> None:
    # ResNet-50's largest batch with an MLPerf convergence point is 67,456 images. 540 DGX A100 (4,320 GPUs) train
    # the 64,800 = 4,320 x 15 MLPerf trained there (15 per GPU, below the 64 the batch rule asks for); 100,000
    # nodes would need more than one image per replica at that batch: not offered, and the error says why
    est = evaluate(CAT, Configuration(model="resnet50", server="dgx-a100-80gb", nodes=540))
    assert est.global_batch == 64_800
    small = evaluate(CAT, Configuration(model="resnet50", server="dgx-a100-80gb", nodes=16))
    assert small.global_batch == 16 * 8 * 64  # below the cap the batch rule is unchanged
    with pytest.raises(PlannerInputError, match="67,456 samples per step"):
        evaluate(CAT, Configuration(model="resnet50", server="dgx-a100-80gb", nodes=100_000))


def test_fp32_and_tf32_keep_four_byte_weights_and_activations() -> None:
    # TF32 is a tensor-core mode for fp32 tensors: weights and activations are 4 bytes, not the 2 of bf16 (and the
    # peak is half: test_tf32_runs_at_half_the_bf16_peak). Megatron already keeps bf16 gradients in fp32, so the
    # difference is 2 more bytes per weight over the 8 TP ranks plus Megatron's 16-bit activations once more
    wl = CAT.workload("llama3-8b")
    lay = Layout(tensor_parallel=8, zero_stage=1, sequence_parallel=True)
    base = dict(model=wl.id, server="dgx-a100-80gb", nodes=1, global_batch=8, layout=lay)
    bf16, tf32 = (evaluate(CAT, Configuration(**base, precision=p)) for p in ("bf16", "tf32"))
    s, h, a, layers = wl.sequence_length, wl.hidden_size, wl.attention_heads, wl.layers
    act_bf16 = memory.transformer_activation_gb(s, h, a, layers, 1.0, 8, True, "none", True)[()]
    assert tf32.memory_per_gpu_gb - bf16.memory_per_gpu_gb == pytest.approx(2.0 * wl.params / 8 / 1e9 + act_bf16)


def _one_row(workload: str, framework: str | None = None, gpus: int = 32, batch: int = 128) -> step.Rows:
    """A (server, nodes) row of DGX H100 nodes for the step functions, figures stated (no catalog lookup)."""
    wl = CAT.workload(workload)
    fw = CAT.framework(framework or wl.framework)
    one = lambda v: np.asarray([v], dtype=float)  # noqa: E731
    return step.Rows(
        wl=wl, fw=fw, global_batch=batch, fixed_layout=True, g=np.asarray([8]), G=np.asarray([gpus]),
        N=np.asarray([gpus // 8]), intra_bytes_s=one(INTRA), mfu=one(0.5), peak_tflops=one(989.0),
        attention_peak_tflops=one(989.0), attention_mfu=one(0.5),
        cpu_cores=one(112.0), storage_bytes_s=one(50e9), gpu_memory_gb=one(80.0), memory_bandwidth_tbps=one(3.35),
        half_batch=1.0, overlap=0.85, grad_bytes_per_param=2.0, grad_reduce_bytes_per_param=2.0,
        fp8=np.asarray([False]), nvls=np.asarray([True]), tp_overlap=0.0,
    )  # fmt: skip


def test_zero3_gathers_the_weights_again_for_every_micro_batch() -> None:
    # FSDP / DeepSpeed stage 3 all-gather the weights for each micro-batch's forward and backward and reduce-scatter
    # each micro-batch's gradients: Llama 3 8B on 32 GPUs, 4 sequences per replica in 4 micro-batches of one moves
    # 4 x (trainable x 2 / 2 + params x 2) bytes a step; ZeRO-1 reduces once a step, whatever the micro-batches
    rows = _one_row("llama3-8b", "pytorch-fsdp")
    wl = rows.wl
    per_round = step.gradient_sync_bytes(wl.trainable, wl.params, 2.0, 2.0, 3, 1)
    assert per_round == pytest.approx(wl.trainable + 2.0 * wl.params)
    fab = step.FabricRows(
        u=np.asarray([0]), node_bytes_s=np.asarray([NODE]), latency_s=np.asarray([ALPHA]),
        peer_bytes_s=np.asarray([NODE / 8]), in_network=np.asarray([False]),
    )  # fmt: skip
    exposed = {}
    for zero, acc in ((3, 1), (3, 4), (1, 4)):
        lay = Layout(zero_stage=zero, micro_batch=4 // acc)  # 4 sequences per replica in acc micro-batches
        d = step.layout_rows(rows, lay)
        su = step.layout_terms(rows, lay, d)
        rounds = acc if zero == 3 else 1
        once = step.gradient_sync_bytes(wl.trainable, wl.params, 2.0, 2.0, zero, 1)
        assert su["grad_bytes"][0] == pytest.approx(rounds * once, rel=1e-12)
        terms = step.step_terms(rows, fab, lay, d, su, np.asarray([0]), np.asarray([1.0]), lambda a: a, [1])
        # each round's backward (2/3 of its compute) hides overlap of its share; each round's last bucket stays out
        t_sync, _ = comm.data_parallel_allreduce_time_s(
            su["grad_bytes"] / rounds, np.asarray([32]), np.asarray([8]), np.asarray([8]), np.asarray([INTRA]),
            np.asarray([NODE]), np.asarray([ALPHA]), bucket_bytes=rows.fw.bucket_mb * 1e6,
            in_network=np.asarray([False]), nvls=np.asarray([True]),
        )  # fmt: skip
        t_sync = t_sync * rounds  # m calls of a round's bytes, each paying its latency
        hide = 0.85 * (2.0 / 3.0) * terms["t_compute"][0]
        buckets = max(once / (rows.fw.bucket_mb * 1e6), 1.0)  # a round's last bucket is a whole one
        want = max(t_sync[0] - hide, t_sync[0] / buckets)
        assert terms["t_data_parallel_exposed"][0] == pytest.approx(want, rel=1e-9)
        exposed[(zero, acc)] = terms["t_data_parallel_exposed"][0]
    assert exposed[(3, 4)] > 3.5 * exposed[(3, 1)] > 0.0
    # ZeRO-1 leaves one bucket of a step exposed, ZeRO-3 one bucket of each of its 4 micro-batches
    assert exposed[(1, 4)] == pytest.approx(exposed[(3, 4)] / 4, rel=0.01)


def test_the_busiest_pipeline_stage_holds_its_share_of_the_model_state() -> None:
    # 405B's 126 layers on 16 stages: the 8-layer stage holds 8 x 16 / 126 of an even share of the weights,
    # gradients and optimizer state (Megatron assigns whole layers), and reduces that share of the gradients
    rows = _one_row("llama3-405b", gpus=1024, batch=1024)
    wl = rows.wl
    even = memory.model_state_gb(wl.params, wl.trainable, wl.optimizer_bytes_per_param, 8 * 16, 8, 1, 2.0, 2.0)
    lay = Layout(tensor_parallel=8, pipeline_parallel=16, zero_stage=1, sequence_parallel=True, recompute="full")
    d = step.layout_rows(rows, lay)
    state = d["mem"][0] - d["act"][0] - rows.embedding_gb[0] - memory.WORKSPACE_GB
    assert step.busiest_stage_share(wl, lay) == pytest.approx(8 * 16 / 126)
    assert state == pytest.approx(8 * 16 / 126 * even, rel=1e-9)
    su = step.layout_terms(rows, lay, d)
    sync = step.gradient_sync_bytes(wl.trainable, wl.params, 2.0, 2.0, 1, 8 * 16)
    assert su["grad_bytes"][0] == pytest.approx(8 * 16 / 126 * sync, rel=1e-12)
    # an even split (PP2: 63 + 63) holds exactly its share
    assert step.busiest_stage_share(wl, lay.model_copy(update={"pipeline_parallel": 2})) == 1.0


def test_the_lora_paragraph_takes_its_figures_from_the_table() -> None:
    """The report's LoRA paragraph computes its ranges from the table it describes, so they follow the next
    physics change -- ranges typed into the text would go stale."""
    t = pd.DataFrame(
        [
            ("v5.0 A h200_n2", "hopper", "h200", 16, 0.1, 40.0),
            ("v5.0 B h200_n64", "hopper", "h200", 512, 0.5, 60.0),
            ("v4.1 C h100_n16", "hopper", "h100-sxm", 128, 0.25, 55.0),
            ("v4.1 D h100_n2", "hopper", "h100-sxm", 16, 1.0, 400.0),
            ("v5.1 NVIDIA gb200_n18", "blackwell", "gb200", 72, -0.01, -3.0),
            ("v5.0 E gb200_n18", "blackwell", "gb200", 72, 0.05, 15.0),
        ],
        columns=["case", "family", "GPU", "GPUs", "missed s/step", "missed s/run"],
    )
    text = lora_gap_text(t)
    assert "the miss on multi-node H200 runs is 0.10-0.50 s and on 128-512 H100 0.25 s" in text
    assert (
        "40-60 s on every multi-node H200 run from 16 to 512 GPUs (while the steps fall from about 400 to 120)" in text
    )
    assert "55 s on 128-512 H100" in text and "v5.1 miss 3 s per run (the v5.0 Blackwell runs 15 s)" in text
    assert "(400 s per run on 16 H100)" in text
