"""Compute: peak throughput, achievable efficiency, compute time per step, convergence growth.

Step compute time of one GPU = FLOPs it must do / (peak x efficiency x power-cap throughput factor), with
efficiency = MFU_max(GPU family, workload family, precision) x mb / (mb + mb_half): kernels lose efficiency
when the per-GPU micro-batch mb is small. MFU_max is fitted (catalog/calibration.yaml,
planner/validation/fit.py).

The optimizer update runs once per step, after the gradients are reduced, and is memory-bound: each
trainable parameter the GPU owns (divided by tensor x pipeline parallelism, and by data parallelism
under ZeRO) reads and writes its optimizer state (fp32 master weight and moments) and reads its
gradient and writes its weight: 2 x optimizer_bytes_per_param + 4 bytes, at the GPU's memory
bandwidth x MEMORY_BW_ACHIEVED. It does not shrink with the micro-batch, so it is part of why small
per-GPU batches scale poorly.

A transformer layer also runs memory-bound kernels between its GEMMs (normalisations, activation functions,
residual adds, dropout, softmax where no FlashAttention kernel fuses it, precision casts). Their time is not
in the FLOP count: it is the bytes they move over the GPU's memory bandwidth (``elementwise_time_s``). The bytes
are those of the activations Megatron's per-layer accounting lists (memory.transformer_activation_gb:
Korthikanti et al. 2022, Table 2), each written once in the forward pass and read once in the backward
pass. Per FLOP this share falls as 1 / hidden size (the GEMMs grow as h^2 per token, these as h), which is why
small transformers reach a lower MFU than large ones on the same GPU (Megatron-LM Table 1: 137 TFLOP/s per
A100 at 1.7B parameters, 163 at 530B-1T), and it is larger for LoRA fine-tuning, whose frozen weights skip
a third of the GEMM FLOPs but none of these kernels. Workloads without a stated transformer shape (CNNs, BERT as
shipped, recommenders) move their stated activation bytes per sample the same way: a CNN's batch normalisations,
activations, pooling and residual adds are memory-bound too, which is why ResNet-50 gains less than the FLOP ratio
from an H100 over an A100 (3.2x the FLOPs, 1.6x the bandwidth) and runs slower on the L40S (0.86 TB/s) than its
FLOPs say.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from planner.data import FrameworkProfile, Gpu, Workload


def recompute_flops_factor(
    recompute: str, sequence_length: float, hidden_size: float, flash_attention: bool, forward_share: float = 1 / 3
) -> float:
    """FLOPs with recomputation / model FLOPs. Full: one extra forward pass, 1 + the forward pass's share of the
    training FLOPs (4/3 when every weight trains; more for LoRA, whose frozen weights skip the weight-gradient
    GEMMs: ``forward_flops_share``). Selective: the attention scores' forward again, s / (6 h) of the model FLOPs
    (2.7% for GPT-3 175B: Korthikanti et al. 2022); nothing with a FlashAttention kernel, which recomputes them
    anyway and is costed in its efficiency."""
    if recompute == "full":
        return 1.0 + forward_share
    if recompute == "selective" and not flash_attention and hidden_size > 0:
        return 1.0 + sequence_length / (6.0 * hidden_size)
    return 1.0


def forward_flops_share(workload: Workload) -> float:
    """The forward pass's share of a sample's training FLOPs: 1/3 when every weight trains (backward = 2 x
    forward), else -- frozen base weights (LoRA) -- the forward pass 2 N s + a third of attention's 12 s^2 h L
    over the workload's training FLOPs (its notes: forward 2N, backward activation gradients 2N per token)."""
    seq, h, layers = workload.sequence_length, workload.hidden_size, workload.layers
    if workload.trainable >= workload.params or not (seq and h and layers):
        return 1.0 / 3.0
    forward = 2.0 * workload.params * seq + attention_flops_per_sample(seq, h, layers) / 3.0
    return float(min(forward / workload.train_flops_per_sample, 1.0))


# FP8 GEMMs against BF16's, where a calibration file leaves the key out: the shipped estimate (catalog/calibration.yaml)
FP8_EFFICIENCY_RATIO = 0.8
# FP4 GEMMs against FP8's: the same engineering estimate as FP8 against BF16 (0.8): block-scaled NVFP4 training keeps
# some linear layers in BF16 and adds scaling and Hadamard transforms (NVIDIA, "Pretraining Large Language Models
# with NVFP4", arXiv 2509.25149; attention's own GEMMs, which it never quantizes to FP4, are timed apart:
# ``attention_precision``); a handful of published runs in reference/ state FP4, too few to fit it apart from FP8's
FP4_EFFICIENCY_RATIO = 0.8
MEMORY_BW_ACHIEVED = 0.8  # streaming kernels reach ~80-90% of HBM peak (STREAM-class measurements)
ACTIVATION_PASSES = 2.0  # each stored activation byte is written in the forward and read in the backward pass


# A transformer layer's forward and backward pass is a chain of some sixty dependent kernels (GEMMs,
# normalisations, attention, activations, casts, collectives); even replayed from a CUDA graph each costs a few
# microseconds of launch and drain whatever its size: 60 x 2.5 us. An engineering estimate, not fitted (a fit on
# the fit split runs to the edge of any grid, absorbing what it cannot identify).
LAYER_PASS_LATENCY_S = 150e-6


def layer_latency_time_s(layer_passes: ArrayLike, per_layer_s: float = LAYER_PASS_LATENCY_S) -> NDArray[np.float64]:
    """The latency floor of a step's kernels: the layer passes a GPU runs in a step (its layers L / p x its
    micro-batches) x the latency of one pass. It is what keeps a step from shrinking with the per-GPU batch at
    thousands of GPUs (BERT at 4 sequences per GPU: 24 x 150 us = 3.6 ms of an 18 ms step)."""
    return np.asarray(np.asarray(layer_passes, dtype=float) * per_layer_s)


def attention_flops_per_sample(sequence_length: float, hidden_size: float, layers: float) -> float:
    """Training FLOPs of attention's score and context GEMMs per sequence: 2 x 2 s h per token and layer in
    the forward pass, twice that in the backward (12 s h per token and layer; Narayanan et al. 2021, eq. 3)."""
    return 12.0 * sequence_length * sequence_length * hidden_size * layers


def elementwise_time_s(activation_bytes_per_gpu: ArrayLike, memory_bandwidth_tbps: ArrayLike) -> NDArray[np.float64]:
    """Time of the memory-bound (non-GEMM) kernels of a step on one GPU: the activation bytes it produces in
    the step (all its micro-batches, its layers, its tensor/context-parallel share), ACTIVATION_PASSES times
    over HBM at MEMORY_BW_ACHIEVED of the peak bandwidth."""
    moved = ACTIVATION_PASSES * np.asarray(activation_bytes_per_gpu, dtype=float)
    return np.asarray(moved / (np.asarray(memory_bandwidth_tbps, dtype=float) * 1e12 * MEMORY_BW_ACHIEVED))


# Precisions whose tensor-core peak only some GPUs have: the Gpu field carrying it, and the precision a GPU without
# it computes in instead (FP4 falls back to FP8 where the GPU has that, else BF16).
LOW_PRECISION_FIELDS = {"fp8": "fp8_tflops", "fp4": "fp4_tflops"}
LOW_PRECISION_FALLBACK = {"fp4": "fp8", "fp8": "bf16"}


def has_precision(gpu: Gpu, precision: str) -> bool:
    """The GPU computes in this precision natively (every GPU has BF16/FP16/TF32/FP32; FP8 and FP4 need the field)."""
    field = LOW_PRECISION_FIELDS.get(precision)
    return field is None or getattr(gpu, field) is not None


def precision_used(gpu: Gpu, precision: str) -> str:
    """The precision a GPU actually computes a requested one in: the request where the GPU has it, else the
    fallback chain (fp4 -> fp8 -> bf16)."""
    while not has_precision(gpu, precision):
        precision = LOW_PRECISION_FALLBACK[precision]
    return "bf16" if precision == "fp16" else precision


def peak_tflops(gpu: Gpu, precision: str) -> tuple[float, str]:
    """(dense peak TFLOP/s, precision actually used). FP4 falls back to FP8, FP8 to BF16 on GPUs without them."""
    used = precision_used(gpu, precision)
    if used in LOW_PRECISION_FIELDS:
        return float(getattr(gpu, LOW_PRECISION_FIELDS[used])), used
    if used == "fp32":
        return gpu.bf16_tflops / 16.0, "fp32"  # no tensor cores for strict fp32
    if used == "tf32":  # dense TF32 tensor-core peak is half of BF16 on every catalog GPU (A100 156 vs 312,
        return gpu.bf16_tflops / 2.0, "tf32"  # H100 SXM 495 vs 989, L40S 183 vs 362, MI300X 654 vs 1307 TFLOP/s)
    return gpu.bf16_tflops, used


def mfu_max(calibration: dict[str, Any], gpu: Gpu, workload: Workload, precision_used: str) -> float:
    """Achievable model-FLOPs utilisation at a large micro-batch, from the fitted calibration table.

    A (GPU family, workload family) pair without a fit borrows the first listed reference family that has
    one, scaled by measured matmul efficiency (gpu / reference); the rule is stated in calibration.yaml.
    Against a lower precision's peak the GEMMs reach a smaller share (more of their time is spent on scaling,
    casts and the layers kept in higher precision): FP8 x fp8_efficiency_ratio of BF16's MFU, FP4 (block-scaled
    NVFP4 / MXFP4 GEMMs) a further x fp4_efficiency_ratio of FP8's -- both engineering estimates, not fitted
    (catalog/calibration.yaml). Attention's score and context GEMMs take the MFU of their own precision
    (``attention_precision``, ``attention_split_gemm_time_s``)."""
    table: dict[str, dict[str, float]] = calibration.get("mfu", {})
    fam = table.get(gpu.family, {})
    if workload.family in fam:
        value = float(fam[workload.family])
    else:
        value = float(calibration.get("default_mfu", {}).get(workload.family, 0.3))
        for ref in calibration.get("fallback_references", []):
            ref_value = table.get(ref["family"], {}).get(workload.family)
            if ref_value is not None:
                value = float(ref_value) * gpu.matmul_efficiency / float(ref["matmul_efficiency"])
                break
    if precision_used in ("fp8", "fp4"):
        value *= float(calibration.get("fp8_efficiency_ratio", FP8_EFFICIENCY_RATIO))
    if precision_used == "fp4":
        value *= float(calibration.get("fp4_efficiency_ratio", FP4_EFFICIENCY_RATIO))
    return value


def overlap_fractions(calibration: dict[str, Any], framework: FrameworkProfile) -> tuple[float, float]:
    """(share of the backward pass the gradient all-reduce hides under, share of tensor-parallel communication
    hidden under GEMMs) of a framework: the fitted values of calibration.yaml (``overlap``,
    ``tp_overlap``, per framework fitted on at-scale runs) where the framework has one, else its profile's."""
    dp = calibration.get("overlap", {}).get(framework.id, framework.overlap_fraction)
    tp = calibration.get("tp_overlap", {}).get(framework.id, framework.tp_overlap_fraction)
    return min(1.0, float(dp)), min(1.0, float(tp))


# the workload families whose MLPerf cases fit the half-batch scale (LLMs use the GEMM shape efficiency instead);
# other families (recommenders: no validation data) keep their stated efficiency_half_batch
HALF_BATCH_FIT_FAMILIES = ("cnn", "encoder")


def half_batch_scale(calibration: dict[str, Any], workload: Workload) -> float:
    """The fitted scale of the workload's efficiency_half_batch, for the workload families it was fitted on
    (calibration.yaml half_batch_scale_families: the MLPerf CNN and encoder cases); 1 for the others, whose
    stated half-batch no data has checked."""
    families = calibration.get("half_batch_scale_families", HALF_BATCH_FIT_FAMILIES)
    return float(calibration.get("half_batch_scale", 1.0)) if workload.family in families else 1.0


def kernel_efficiency(mfu: ArrayLike, micro_batch: ArrayLike, half_batch: float) -> NDArray[np.float64]:
    """Kernel efficiency at a per-GPU micro-batch: MFU_max x mb / (mb + mb_half), half of MFU_max at the
    workload's (calibrated) half-batch (the module docstring)."""
    mb = np.asarray(micro_batch, dtype=float)
    return np.asarray(mfu, dtype=float) * mb / (mb + half_batch)


def gemm_shape_efficiency(
    tokens_per_gpu: ArrayLike, width_per_gpu: ArrayLike, tokens_half: float, width_half: float
) -> NDArray[np.float64]:
    """Share of the large-GEMM efficiency a transformer layer's GEMMs reach at their per-GPU shape: the rows are
    the tokens of a micro-batch on the GPU (micro-batch x sequence / context parallel) and the inner width the
    hidden size over tensor parallelism. Throughput rises with each dimension until the GEMM is math-bound
    (tile and wave quantization: NVIDIA's matrix-multiplication performance guide; a larger TP "makes compute too
    short": Megatron-Core CP docs), modelled as t / (t + t_half) x w / (w + w_half) with the two half-points
    fitted on the fit split (catalog/calibration.yaml gemm_tokens_half, gemm_width_half)."""
    t = np.asarray(tokens_per_gpu, dtype=float)
    w = np.asarray(width_per_gpu, dtype=float)
    return np.asarray(t / (t + tokens_half) * w / (w + width_half))


def compute_time_s(
    flops_per_gpu: ArrayLike, peak_tflops_: ArrayLike, efficiency: ArrayLike, cap_throughput: ArrayLike
) -> NDArray[np.float64]:
    """GEMM time of a step on one GPU: FLOPs / (peak x efficiency x the cap's throughput factor)."""
    denom = np.asarray(peak_tflops_, dtype=float) * 1e12 * np.asarray(efficiency) * np.asarray(cap_throughput)
    return np.asarray(flops_per_gpu, dtype=float) / denom


def attention_precision(precision_used: str, fp8_attention: bool) -> str:
    """The precision attention's score and context GEMMs (the fused FlashAttention / cuDNN attention kernel) run in,
    for a run whose other GEMMs compute in ``precision_used`` (``precision_used``'s result): the run's own in BF16,
    FP16, TF32 or FP32; in an FP8 or FP4 run BF16, or FP8 where FP8 attention is on (``fp8_attention``).

    Transformer Engine's FP8 recipes quantize the linear layers' GEMMs; its fused attention runs in FP8 only with
    ``fp8_dpa`` (NeMo / Megatron-Core ``fp8_dot_product_attention``), off by default (Transformer Engine's recipe
    field ``fp8_dpa: bool = False``). NVIDIA's NVFP4 recipe quantizes the linear layers' GEMMs only, never
    attention's (NVIDIA, "Pretraining Large Language Models with NVFP4", arXiv 2509.25149): in an FP4 run attention
    is BF16, or FP8 with fp8_dpa (as NVIDIA's MLPerf v5.1 Llama 2 70B LoRA NVFP4 submissions set it:
    reference/mlperf_settings.csv ``fp8_attention``)."""
    if precision_used not in ("fp8", "fp4"):
        return precision_used
    return "fp8" if fp8_attention else "bf16"


def attention_split_gemm_time_s(
    flops_per_gpu: ArrayLike,
    attention_share: ArrayLike,
    peak_tflops_: ArrayLike,
    efficiency: ArrayLike,
    attention_peak_tflops: ArrayLike,
    attention_efficiency: ArrayLike,
) -> NDArray[np.float64]:
    """GEMM time of a step on one GPU with attention's score and context GEMMs at their own precision
    (``attention_precision``): the ``attention_share`` a of the FLOPs F at the attention peak P_a and efficiency e_a,
    the rest at the run's peak P and efficiency e,

      t = (1 - a) F / (P e) + a F / (P_a e_a) = F / (P e) x (1 + a (P e / (P_a e_a) - 1)),

    the second form computed, so that where attention runs at the run's own precision (P_a e_a = P e: every BF16
    run) the time is exactly ``compute_time_s``'s F / (P e). In an FP8 run on an H100 (989 TFLOP/s BF16, 1,979
    FP8; FP8 GEMMs at 0.8 of BF16's MFU) attention's GEMMs take 1,979 x 0.8 / 989 = 1.6x the time the FP8 peak
    would give them; in an NVFP4 run 2.56x (FP4 at 2x FP8 and 0.8 of its MFU). Sources: ``attention_precision``."""
    plain = compute_time_s(flops_per_gpu, peak_tflops_, efficiency, 1.0)
    rate = np.asarray(peak_tflops_, dtype=float) * np.asarray(efficiency, dtype=float)
    attention_rate = np.asarray(attention_peak_tflops, dtype=float) * np.asarray(attention_efficiency, dtype=float)
    return np.asarray(plain * (1.0 + np.asarray(attention_share, dtype=float) * (rate / attention_rate - 1.0)))


def optimizer_step_time_s(
    params_per_gpu: ArrayLike, optimizer_bytes_per_param: float, memory_bandwidth_tbps: ArrayLike
) -> NDArray[np.float64]:
    """The memory-bound optimizer update: the parameters the GPU owns x (2 x optimizer bytes + 4) bytes read and
    written, at MEMORY_BW_ACHIEVED of the HBM bandwidth (the module docstring)."""
    touched = np.asarray(params_per_gpu, dtype=float) * (2.0 * optimizer_bytes_per_param + 4.0)
    return np.asarray(touched / (np.asarray(memory_bandwidth_tbps, dtype=float) * 1e12 * MEMORY_BW_ACHIEVED))


def samples_factor(workload: Workload, global_batch: ArrayLike) -> NDArray[np.float64]:
    """Samples to converge at this global batch / samples at the reference batch (>= the first knot)."""
    b = np.asarray(global_batch, dtype=float)
    if not workload.convergence:
        return np.ones_like(b)
    xs = np.log([c.global_batch for c in workload.convergence])
    ys = np.array([c.samples_factor for c in workload.convergence])
    out = np.interp(np.log(np.maximum(b, 1.0)), xs, ys)
    if len(xs) >= 2:  # beyond the last knot: extrapolate the last segment's slope in log batch
        slope = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
        beyond = np.log(np.maximum(b, 1.0)) > xs[-1]
        out = np.where(beyond, ys[-1] + slope * (np.log(np.maximum(b, 1.0)) - xs[-1]), out)
    ref = float(np.interp(np.log(workload.reference_global_batch), xs, ys))
    return np.asarray(out / ref, dtype=float)


def data_pipeline_time_s(
    samples_per_node: ArrayLike,
    cpu_core_ms_per_sample: float,
    cpu_cores: ArrayLike,
    data_bytes_per_sample: float,
    storage_bytes_s: ArrayLike,
) -> NDArray[np.float64]:
    """Time for one node to prepare its share of a step: CPU preprocessing on all cores or reading the samples
    from local storage, whichever is slower (the data pipeline runs beside the GPUs and bounds the step)."""
    s = np.asarray(samples_per_node, dtype=float)
    cpu = s * cpu_core_ms_per_sample / 1000.0 / np.asarray(cpu_cores, dtype=float)
    return np.asarray(np.maximum(cpu, s * data_bytes_per_sample / np.asarray(storage_bytes_s, dtype=float)))
