"""Mixture-of-Experts terms: FLOPs by Megatron's convention, the all-to-all, memory under EP, the breakdown term and
the exactness of the layout search over expert parallelism (planner/physics/moe.py, step.py, layouts.py)."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from planner import load_catalog
from planner.data import Layout
from planner.errors import PlannerInputError
from planner.physics import candidate_layouts, evaluate, evaluate_space, moe, step

MOE_MODELS = (
    "deepseek-v3",
    "kimi-k2",
    "qwen3-235b-a22b",
    "qwen3-30b-a3b",
    "mixtral-8x22b",
    "gpt-oss-120b",
    "gpt-oss-20b",
)


@pytest.fixture(scope="module")
def cat() -> Any:
    return load_catalog()


def test_deepseek_v3_flops_per_token_follow_megatrons_convention(cat: Any) -> None:
    """By hand (h 7168, 62 layers with the MTP layer: 3 dense + 59 MoE, s 4096):
    MLP 12 h (18432 x 1.5 x 3 + 2048 x 8 x 1.5 x 59 + 2048 x 1.5 x 59) = 147.446e9;
    MLA 6 x 62 x (1536 (7168 + 128 x 192 + 1) + 512 (7168 + 128 x 256 + 1) + 7168 x 64 + 128 x 128 x 7168
    + 4096 x 128 x 192 / 2 + 4096 x 128 x 128 / 2) = 6 x 62 x 270,993,408 = 100.810e9;
    MTP 6 (3 h + 2 h^2) = 0.617e9; logits 6 h 129280 x 2 = 11.120e9; 259.99 GFLOP/token (moe.md: ~260)."""
    wl = cat.workloads["deepseek-v3"]
    mlp = 12 * 7168 * (18432 * 1.5 * 3 + 2048 * 8 * 1.5 * 59 + 2048 * 1.5 * 59)
    mla = 6 * 62 * 270_993_408
    by_hand = mlp + mla + 6 * (3 * 7168 + 2 * 7168**2) + 6 * 7168 * 129280 * 2
    assert moe.megatron_flops_per_token(wl) == pytest.approx(by_hand, rel=1e-9)
    assert moe.megatron_flops_per_token(wl) / 1e9 == pytest.approx(260.0, abs=0.5)


def test_qwen3_235b_flops_per_token_follow_megatrons_convention(cat: Any) -> None:
    """By hand (h 4096, 94 MoE layers, 64 heads of 128 with 4 KV groups, s 4096): attention 12 x 94 x h^2 x
    (1 + 4/64 + 4096 / 4096 / 2) x (64 x 128 / 4096) = 59.141e9; experts 12 x 94 x h x 1536 x 8 x 1.5 = 85.164e9;
    logits 6 h 151936 = 3.734e9; 148.04 GFLOP/token (moe.md: ~148)."""
    wl = cat.workloads["qwen3-235b-a22b"]
    by_hand = 12 * 94 * 4096**2 * (1 + 4 / 64 + 0.5) * 2 + 12 * 94 * 4096 * 1536 * 8 * 1.5 + 6 * 4096 * 151936
    assert moe.megatron_flops_per_token(wl) == pytest.approx(by_hand, rel=1e-9)
    assert moe.megatron_flops_per_token(wl) / 1e9 == pytest.approx(148.0, abs=0.3)


@pytest.mark.parametrize("model", MOE_MODELS)
def test_shipped_moe_workloads_state_the_conventions_flops_and_total_parameters(cat: Any, model: str) -> None:
    wl = cat.workloads[model]
    per_sample = moe.megatron_flops_per_token(wl) * wl.sequence_length
    assert wl.train_flops_per_sample == pytest.approx(per_sample, rel=5e-3)
    assert moe.expert_params(wl) < wl.params  # memory follows all parameters, experts a part of them


def test_all_to_all_inside_an_nvl72_rack_by_hand() -> None:
    """4,096 tokens x top-8 x h 7168 x 2 bytes = 469,762,048 bytes per dispatch; EP64 inside a 72-GPU NVLink
    domain, HybridEP at 0.75 of 900 GB/s: 63/64 of it leaves the GPU -> 469,762,048 x 63/64 / 675e9 = 685.1 us,
    plus the 77 us kernel latency."""
    v = moe.all_to_all_bytes(4096, 8, 7168)
    assert float(v) == 469_762_048
    t = moe.expert_all_to_all_time_s(v, 64, 72, 900e9, 400e9 / 8, "hybridep")
    assert float(t) == pytest.approx(469_762_048 * 63 / 64 / 675e9 + 77e-6, rel=1e-12)


def test_all_to_all_across_hgx_nodes_by_hand() -> None:
    """EP64 over eight 8-GPU H100 nodes, 47 GB/s of NIC per GPU: the 56/64 remote copies cross the NICs with
    every dispatcher -> 469,762,048 x 56/64 / 47e9 = 8.746 ms (NVLink's 7/64 at 0.75 or 0.55 of 450 GB/s is
    faster), + 150 us latency: HybridEP's measured 50.6 GB/s of logical bytes at EP64 (moe.md section 2.2) is
    9.28 ms."""
    v = moe.all_to_all_bytes(4096, 8, 7168)
    for dispatcher in ("hybridep", "deepep", "alltoall"):
        t = moe.expert_all_to_all_time_s(v, 64, 8, 450e9, 47e9, dispatcher)
        assert float(t) == pytest.approx(469_762_048 * 56 / 64 / 47e9 + 150e-6, rel=1e-12)
    assert 469_762_048 / float(t) == pytest.approx(50.6e9, rel=0.1)
    assert float(moe.expert_all_to_all_time_s(v, 1, 8, 450e9, 47e9, "alltoall")) == 0.0


def test_all_to_all_of_ep16_over_two_hgx_nodes_by_hand() -> None:
    """EP16 over two 8-GPU H100 nodes: half the copies cross the NICs, 469,762,048 / 2 / 47e9 = 4.998 ms + 150 us;
    HybridEP measured 76.8 GB/s of logical bytes (6.12 ms) and DeepEP V2 81 GB/s at EP8x2 (moe.md section 2.2):
    within 20%."""
    v = moe.all_to_all_bytes(4096, 8, 7168)
    t = float(moe.expert_all_to_all_time_s(v, 16, 8, 450e9, 47e9, "hybridep"))
    assert t == pytest.approx(469_762_048 / 2 / 47e9 + 150e-6, rel=1e-12)
    assert 469_762_048 / t == pytest.approx(76.8e9, rel=0.2)


def test_expert_tensor_parallel_gather_by_hand() -> None:
    """ETP2 after a dispatch of 469,762,048 bytes: the ring all-gather sends (2 - 1) x those bytes over NVLink at
    HybridEP's 0.75 of 450 GB/s -> 469,762,048 / 337.5e9 = 1.392 ms, + 77 us; ETP4 three times the bytes; ETP1
    nothing."""
    v = moe.all_to_all_bytes(4096, 8, 7168)
    assert float(moe.expert_tensor_parallel_time_s(v, 2, 450e9, "hybridep")) == pytest.approx(
        469_762_048 / 337.5e9 + 77e-6, rel=1e-12
    )
    assert float(moe.expert_tensor_parallel_time_s(v, 4, 450e9, "hybridep")) == pytest.approx(
        3 * 469_762_048 / 337.5e9 + 77e-6, rel=1e-12
    )
    assert float(moe.expert_tensor_parallel_time_s(v, 1, 450e9, "hybridep")) == 0.0


def test_tokens_per_local_expert_with_expert_tensor_parallelism_by_hand() -> None:
    """Qwen3-235B (128 experts, top-8), 2,048 tokens per GPU, EP32: 2048 x 8 x 32 / 128 = 4,096 copies per local
    expert; with ETP2 the pair gathers both ranks' copies: 8,192."""
    assert float(moe.tokens_per_local_expert(2048, 8, 32, 128)) == 4096.0
    assert float(moe.tokens_per_local_expert(2048, 8, 32, 128, 2)) == 8192.0


def test_expert_tensor_parallelism_splits_the_expert_state_by_hand(cat: Any) -> None:
    """Qwen3-235B at TP2 PP1 EP8 on 64 GPUs (DP32): experts E = 94 x 128 x 3 x 4096 x 1536 split over EP8 x ETP2 =
    16 GPUs, their ZeRO-1 optimizer over TP x DP / (EP x ETP) = 4 ranks: E / 16 x (2 + 4 + 12 / 4) bytes; ETP1:
    E / 8 x (2 + 4 + 12 / 8). The dense part is the same in both."""
    wl = cat.workloads["qwen3-235b-a22b"]
    rows: Any = SimpleNamespace(wl=wl, grad_reduce_bytes_per_param=4.0, tensor_bytes=2.0)
    experts = 94 * 128 * 3 * 4096 * 1536
    assert moe.expert_params(wl) == experts
    lay1 = Layout(tensor_parallel=2, expert_parallel=8, zero_stage=1)
    lay2 = lay1.model_copy(update={"expert_tensor_parallel": 2})
    dp = np.asarray([32.0])
    s1 = float(step.moe_model_state_gb(rows, lay1, dp)[0])
    s2 = float(step.moe_model_state_gb(rows, lay2, dp)[0])
    assert s1 - s2 == pytest.approx(experts / 8 * (6 + 12 / 8) / 1e9 - experts / 16 * (6 + 12 / 4) / 1e9, rel=1e-9)
    assert lay2.label(32) == "DP32 TP2 ZeRO-1 EP8 ETP2"


def test_deepseek_v3_model_state_at_pp4_ep64_matches_the_published_breakdown(cat: Any) -> None:
    """moe.md section 2.6: BF16, PP4 x VPP4 x EP64 on 256 GPUs: weights + grads 36.4 GB, master + optimizer
    32.1 GB = 68.5 GB per GPU. By hand: experts 665.2B / (64 x 4) x (2 + 4 + 8) = 36.4 GB, dense 19.8B / 4 x
    (2 + 4 + 8 / 64) = 30.3 GB, x the busiest stage's 16 of 61 / 4 layers (1.049) = 70.0 GB: within 5%."""
    wl = cat.workloads["deepseek-v3"]
    lay = Layout(pipeline_parallel=4, virtual_stages=4, expert_parallel=64, zero_stage=1)
    rows: Any = SimpleNamespace(wl=wl, grad_reduce_bytes_per_param=4.0, tensor_bytes=2.0)
    state = float(step.moe_model_state_gb(rows, lay, np.asarray([64.0]))[0]) * step.busiest_stage_share(wl, lay)
    assert state == pytest.approx(68.5, rel=0.05)


def test_evaluate_of_deepseek_v3_on_hgx_h100_names_the_all_to_all(cat: Any) -> None:
    est = evaluate(cat, {"model": "deepseek-v3", "server": "dgx-h100", "nodes": 32})
    assert "EP" in est.layout
    assert est.step_time_breakdown_s["moe_all_to_all"] > 0
    assert est.fits_memory


def test_real_routing_is_slower_than_forced_balance(cat: Any) -> None:
    wl = cat.workloads["qwen3-30b-a3b"]
    assert wl.moe is not None
    forced = wl.model_copy(update={"moe": wl.moe.model_copy(update={"force_load_balance": True})})
    lay = Layout(expert_parallel=8, micro_batch=1)
    real_s = evaluate(cat.replace(workloads={**cat.workloads, wl.id: wl}), _cfg(wl.id, lay)).step_time_s
    forced_s = evaluate(cat.replace(workloads={**cat.workloads, wl.id: forced}), _cfg(wl.id, lay)).step_time_s
    assert real_s > forced_s


def _cfg(model: str, lay: Layout) -> dict[str, Any]:
    return {"model": model, "server": "dgx-h100", "nodes": 4, "layout": lay, "failures": False}


def test_expert_parallelism_on_a_dense_workload_is_bad_input(cat: Any) -> None:
    with pytest.raises(PlannerInputError, match="dense"):
        evaluate(cat, {"model": "llama3-8b", "server": "dgx-h100", "nodes": 1, "layout": Layout(expert_parallel=2)})


def test_layout_search_over_expert_parallelism_is_exact(cat: Any) -> None:
    """Brute force: every candidate layout of gpt-oss-20b (EP 1-32 and ETP 1 or TP among them) evaluated as a fixed
    layout where the search places it (pipelines across nodes: stages <= nodes); the search's time to train equals
    the least over the layouts that fit, at every node count."""
    layouts = candidate_layouts(cat, cat.workloads["gpt-oss-20b"], 8)
    assert {lay.expert_parallel for lay in layouts} == {1, 2, 4, 8, 16, 32}
    assert {lay.expert_tensor_parallel for lay in layouts} == {1, 2, 4, 8}
    assert all(lay.expert_tensor_parallel in (1, lay.tensor_parallel) for lay in layouts)
    space = {"servers": "dgx-h100", "fabrics": "ndr400", "caps": 1.0}
    chose_ep = False
    for n in (1, 2, 3):
        searched = evaluate_space(cat, "gpt-oss-20b", nodes=n, **space)
        best = math.inf
        for lay in (lay for lay in layouts if lay.pipeline_parallel <= n):
            try:
                df = evaluate_space(cat, "gpt-oss-20b", nodes=n, layout=lay, **space)
            except PlannerInputError:  # valid nowhere at this node count
                continue
            if bool(df["fits_memory"].iloc[0]) and bool(df["valid_layout"].iloc[0]):
                best = min(best, float(df["time_to_train_h"].iloc[0]))
        assert float(searched["time_to_train_h"].iloc[0]) == pytest.approx(best, rel=1e-9)
        chose_ep |= int(searched["expert_parallel"].iloc[0]) > 1
    assert chose_ep


def test_fp8_casts_of_qwen3_30b_by_hand(cat: Any) -> None:
    # h 2048, 32 heads of 128, 4 KV heads, 8 of 128 experts of 768 (SwiGLU), no shared expert, 48 MoE layers:
    # attention h + 32 x 128 + (32 + 2 x 4) x 128 + h = 13,312; each routed copy 2 h + 3 x 768 = 6,400, x 8
    wl = cat.workloads["qwen3-30b-a3b"]
    assert moe.fp8_cast_elements_per_token(wl, 1.0) == 13_312 + 8 * 6_400
    assert moe.fp8_cast_elements_per_token(wl, 48.0) == 48 * 64_512
    # 1e9 elements x 4 bytes over 0.8 of 3.35 TB/s
    assert math.isclose(float(moe.fp8_cast_time_s(1e9, 3.35)), 4e9 / (0.8 * 3.35e12))


def test_fp8_casts_slow_an_fp8_moe_step_only(cat: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    lay = Layout(expert_parallel=8, micro_batch=1)

    def step_s(precision: str) -> float:
        return float(evaluate(cat, {**_cfg("qwen3-30b-a3b", lay), "precision": precision}).step_time_s)

    bf16, fp8 = step_s("bf16"), step_s("fp8")
    monkeypatch.setattr(moe, "FP8_CAST_BYTES_PER_ELEMENT", 0.0)
    assert step_s("bf16") == bf16
    assert bf16 > fp8 > step_s("fp8")
