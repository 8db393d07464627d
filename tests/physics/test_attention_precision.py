"""Attention's score and context GEMMs at their own precision, each against a hand-derived number.

Transformer Engine's FP8 recipes quantize the linear layers' GEMMs and run fused attention in BF16 unless FP8
attention (``fp8_dpa``) is on; NVFP4 recipes never run attention in FP4 (arXiv 2509.25149). The model times the
attention share of the FLOPs at the peak and MFU of that precision and the rest at the run's
(compute.attention_split_gemm_time_s); where attention runs at the run's own precision (every BF16 run) the GEMM
time is exactly the single-peak figure.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from planner.data import Catalog, Configuration, Layout, load_catalog
from planner.physics import compute, evaluate, step
from planner.validation.at_scale import their_fp8_attention

CAT = load_catalog()


def test_attention_precision_follows_the_recipe() -> None:
    # FP8 and FP4 runs: BF16 attention unless fp8_dpa, then FP8 (NVFP4 never quantizes attention to FP4)
    assert compute.attention_precision("fp8", False) == "bf16"
    assert compute.attention_precision("fp8", True) == "fp8"
    assert compute.attention_precision("fp4", False) == "bf16"
    assert compute.attention_precision("fp4", True) == "fp8"
    # 16- and 32-bit runs: attention at the run's own precision, whatever the flag
    for p in ("bf16", "tf32", "fp32"):
        assert compute.attention_precision(p, True) == p == compute.attention_precision(p, False)


def test_fp8_run_on_an_h100_times_attention_at_the_bf16_peak() -> None:
    # 1e15 FLOPs, 10% of them attention's: 0.9e15 at the FP8 peak 1,979 TFLOP/s x 0.4 (FP8 efficiency) = 1.13694 s,
    # 0.1e15 at the BF16 peak 989 TFLOP/s x 0.5 (BF16 efficiency) = 0.20222 s: 1.33916 s
    t = compute.attention_split_gemm_time_s(1e15, 0.1, 1979.0, 0.4, 989.0, 0.5)
    assert float(t) == pytest.approx(1.339162, rel=1e-6)
    # all at the FP8 peak: 1e15 / (1,979e12 x 0.4) = 1.26326 s
    same = compute.attention_split_gemm_time_s(1e15, 0.1, 1979.0, 0.4, 1979.0, 0.4)
    assert float(same) == pytest.approx(1.263264, rel=1e-6)


def test_attention_at_the_runs_own_precision_is_exactly_the_single_peak_time() -> None:
    rng = np.random.default_rng(7)
    flops = rng.uniform(1e12, 1e17, 200)
    share = rng.uniform(0.0, 1.0, 200)
    peak = rng.choice([312.0, 989.0, 2250.0, 1307.4], 200)
    eff = rng.uniform(0.05, 0.8, 200)
    plain = compute.compute_time_s(flops, peak, eff, 1.0)
    split = compute.attention_split_gemm_time_s(flops, share, peak, eff, peak, eff)
    assert np.array_equal(split, plain)  # bit for bit: BF16 runs are unchanged


def _row(attention_peak_tflops: float, attention_mfu: float) -> step.Rows:
    """One (server, nodes) row of 4 DGX H100 nodes training Llama 3 8B in FP8 (1,979 TFLOP/s at MFU 0.4), attention at
    the peak and MFU given; no GEMM shape penalty (half-points 0), so the kernel efficiency is the MFU itself."""
    wl = CAT.workload("llama3-8b")
    one = lambda v: np.asarray([v], dtype=float)  # noqa: E731
    return step.Rows(
        wl=wl, fw=CAT.framework(wl.framework), global_batch=128, fixed_layout=True, g=np.asarray([8]),
        G=np.asarray([32]), N=np.asarray([4]), intra_bytes_s=one(360e9), mfu=one(0.4), peak_tflops=one(1979.0),
        attention_peak_tflops=one(attention_peak_tflops), attention_mfu=one(attention_mfu), cpu_cores=one(112.0),
        storage_bytes_s=one(50e9), gpu_memory_gb=one(80.0), memory_bandwidth_tbps=one(3.35), half_batch=1.0,
        overlap=1.0, grad_bytes_per_param=2.0, grad_reduce_bytes_per_param=4.0, fp8=np.asarray([True]),
        nvls=np.asarray([True]), tp_overlap=0.0,
    )  # fmt: skip


@pytest.mark.parametrize(("recompute", "again"), [("none", 1.0), ("full", 4.0 / 3.0)])
def test_bf16_attention_in_an_fp8_step(recompute: str, again: float) -> None:
    # Llama 3 8B (s 8,192, h 4,096, 32 layers, 5e14 FLOPs per sequence): attention is 12 s^2 h L = 1.0555e14 FLOPs
    # per sequence, 21.11% of them. 128 sequences on 32 GPUs: 4 per GPU, 4.222e14 attention FLOPs per GPU a step.
    # At the BF16 peak and MFU (989 x 0.5) instead of FP8's (1,979 x 0.4): 4.222e14 x (1 / 494.5e12 - 1 / 791.6e12)
    # = 0.3204 s more. Full recomputation runs attention's forward again (4 of its 12 s h): 4/3 of that.
    attention = 12 * 8192**2 * 4096 * 32
    assert step.attention_share(CAT.workload("llama3-8b")) == pytest.approx(attention / 5e14, rel=1e-12)
    lay = Layout(tensor_parallel=8, zero_stage=1, sequence_parallel=True, recompute=recompute)
    times = []
    for rows in (_row(989.0, 0.5), _row(1979.0, 0.4)):
        d = step.layout_rows(rows, lay)
        times.append(step.compute_full_clock_s(rows, lay, d)[0])
    more = 4 * attention * (1 / (989e12 * 0.5) - 1 / (1979e12 * 0.4)) * again
    assert more == pytest.approx(0.3204 * again, rel=1e-3)
    assert times[0] - times[1] == pytest.approx(more, rel=1e-9)


def test_context_parallelism_hides_behind_attention_at_its_own_precision() -> None:
    # CP2: half of the model FLOPs' attention GEMM time covers the KV ring -- a GPU's share of the step is still 4
    # sequences' FLOPs (128 on 32 GPUs), 4.222e14 of attention, at 989 x 0.5: 0.8538 s, half of it 0.4269 s, whatever
    # the recomputation
    attention_per_gpu = 4 * 12 * 8192**2 * 4096 * 32
    for recompute in ("none", "full"):
        lay = Layout(tensor_parallel=8, context_parallel=2, zero_stage=1, sequence_parallel=True, recompute=recompute)
        rows = _row(989.0, 0.5)
        d = step.layout_rows(rows, lay)
        su = step.layout_terms(rows, lay, d)
        assert su["cp_cover"][0] == pytest.approx(0.5 * attention_per_gpu / (989e12 * 0.5), rel=1e-9)
        assert su["cp_cover"][0] == pytest.approx(0.4269, rel=1e-3)


def _compute_s(cat: Catalog, precision: str, fp8_attention: bool) -> float:
    wl = cat.workload("llama3-8b").model_copy(update={"fp8_attention": fp8_attention})
    cat = cat.replace(workloads={**cat.workloads, wl.id: wl})
    config = Configuration(
        model=wl.id, server="dgx-h100", nodes=4, global_batch=128, samples=1e6, precision=precision,
        layout=Layout(tensor_parallel=8, zero_stage=1, sequence_parallel=True),
    )  # fmt: skip
    return evaluate(cat, config).step_time_breakdown_s["compute"]


def test_the_catalog_h100_runs_fp8_attention_at_the_fp8_rate_and_bf16_attention_at_the_bf16_rate() -> None:
    # the shipped H100 (989 / 1,979 TFLOP/s; FP8 MFU = 0.8 x BF16's): BF16 attention takes 1,979 x 0.8 / 989 = 1.6x
    # what FP8 attention takes, and a BF16 run does not look at the flag
    cal, gpu, wl = CAT.calibration, CAT.gpu("h100-sxm"), CAT.workload("llama3-8b")
    bf16_mfu = compute.mfu_max(cal, gpu, wl, "bf16")
    assert compute.mfu_max(cal, gpu, wl, "fp8") == pytest.approx(bf16_mfu * 0.8, rel=1e-12)
    shape = compute.gemm_shape_efficiency(8192.0, 4096.0 / 8, cal["gemm_tokens_half"], cal["gemm_width_half"])
    attention_per_gpu = 4 * 12 * 8192**2 * 4096 * 32
    fp8_rate = 1979e12 * bf16_mfu * 0.8 * float(shape)
    bf16_rate = 989e12 * bf16_mfu * float(shape)
    more = attention_per_gpu * (1 / bf16_rate - 1 / fp8_rate)
    assert _compute_s(CAT, "fp8", False) - _compute_s(CAT, "fp8", True) == pytest.approx(more, rel=1e-9)
    assert _compute_s(CAT, "bf16", False) == _compute_s(CAT, "bf16", True)


def test_fp8_attention_is_read_from_the_submissions_settings() -> None:
    # reference/mlperf_settings.csv fp8_attention: '1' (FP8_DPA=1) or 'True' on; '0', 'False' or unstated: off
    assert their_fp8_attention(pd.Series({"fp8_attention": "1"}))
    assert their_fp8_attention(pd.Series({"fp8_attention": "True"}))
    assert not their_fp8_attention(pd.Series({"fp8_attention": "0"}))
    assert not their_fp8_attention(pd.Series({"fp8_attention": "False"}))
    assert not their_fp8_attention(pd.Series({"fp8_attention": float("nan")}))
    assert not their_fp8_attention(pd.Series(dtype=str))
