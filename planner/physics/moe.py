"""Mixture-of-Experts terms: the FLOP convention, expert and dense parameters, the expert GEMMs' efficiency, load
imbalance, the dispatch/combine all-to-all and the MoE activations. Facts and measurements: reference/moe.md.

FLOPs follow the active experts, memory all of them. The step composes these terms in planner/physics/step.py:

  expert GEMMs        the routed experts' share of the FLOPs (``expert_flops_share``) runs at the grouped-GEMM
                      efficiency (``grouped_gemm_efficiency``) and waits for the busiest expert-parallel rank
                      (``load_imbalance_factor``);
  FP8 casts           in FP8 the casts of every GEMM input and output gradient (``fp8_cast_elements_per_token``)
                      move bytes over HBM that FP8's doubled GEMM peak does not shorten (``fp8_cast_time_s``);
  all-to-all          4 per MoE layer and micro-batch (dispatch and combine, forward and backward), 2 more for a
                      recomputed layer, each T k h b bytes per GPU (``all_to_all_bytes``), over NVLink inside the
                      NVLink domain and the NICs across it (``expert_all_to_all_time_s``), and with expert tensor
                      parallelism the all-gather / reduce-scatter of the dispatched tokens over the ETP group
                      (``expert_tensor_parallel_time_s``), hidden under compute as far as the framework overlaps it;
  memory              expert weights, gradients and optimizer state sharded by EP x ETP (x PP) and over the expert
                      data-parallel ranks, dense ones by TP x PP and over DP x CP (step.layout_rows); activations of
                      the routed token copies (``moe_activation_bytes_per_token``) and the dispatcher's buffers
                      (``dispatcher_buffer_gb``).
"""

from __future__ import annotations

import functools

import numpy as np
from numpy.typing import ArrayLike, NDArray

from planner.data import MixtureOfExperts, Workload
from planner.physics.compute import MEMORY_BW_ACHIEVED

# Achieved share of the one-way NVLink bandwidth of a GPU an all-to-all reaches inside the NVLink domain, by
# dispatcher (reference/moe.md section 2.2, derived there from logical bandwidths at 4,096 tokens, h 7,168, top-8):
# HybridEP 696 GB/s at EP64 on GB200 MNNVL (900 GB/s), 735 GB/s on B200 EP8 -> 0.75 of the bytes leaving the GPU;
# NCCL's all-to-all 505 GB/s at EP64 on GB200 -> 0.55. DeepEP's normal kernels reach 153 of 160 GB/s on H800
# (intranode EP8); taken as HybridEP's (the two share the design).
DISPATCHER_NVLINK_EFFICIENCY = {"alltoall": 0.55, "deepep": 0.75, "hybridep": 0.75}
# Across nodes every routed copy bound for another node crosses the NICs, at the fabric's achieved bandwidth, with
# every dispatcher: HybridEP's measured algorithm bandwidths on H100 over 400G IB under a uniform router (4,096
# tokens, h 7,168, top-8: EP16 76.8 / 68.0 GB/s BF16 dispatch / combine, EP64 50.6 / 51.0) and DeepEP V2's (EP8x2
# 81 GB/s combine) are the (EP - 8) / EP remote share of the logical bytes at 34-45 GB/s of the NIC's 47 (moe.md
# section 2.2, derived): a hierarchical dispatcher's once-per-node transfer does not shorten the exchange under
# uniform routing.
# The latency of one dispatch or combine kernel, seconds: DeepEP's low-latency kernels take 77 us (EP8 dispatch) to
# 194 us (EP256) for 128 tokens (moe.md section 2.2); a floor of one call, not fitted.
ALL_TO_ALL_LATENCY_INTRA_S = 77e-6
ALL_TO_ALL_LATENCY_INTER_S = 150e-6
# Real (unforced) dropless routing against forced balance: Qwen3-235B on 256 H100 loses 8-20% of its throughput
# (295 vs 237 TFLOP/s at 16K ... 389 vs 357 at 128K: moe.md section 2.4, row A25). The busiest expert-parallel rank
# receives more token copies than the mean; applied to the expert GEMMs and the all-to-all as 1 + this share, an
# estimate chosen so that the 16K row's MoE share of the step reproduces its 20% (published benchmark numbers force
# balance and are predicted without it).
LOAD_IMBALANCE_SHARE = 0.3
# Grouped GEMMs of small experts: efficiency relative to the dense GEMMs at the expert FFN width per GPU, w / (w +
# EXPERT_GEMM_WIDTH_HALF), and at the tokens each local expert receives, t / (t + EXPERT_GEMM_TOKENS_HALF). MegaBlocks'
# block-sparse kernels reach 98.6% of cuBLAS on large experts (moe.md section 2.5); fine-grained MoE (64 experts of
# 2,048, top-8) reaches about half the MFU of coarse (8 of 16,384, top-2) at the same size (A2 vs A5). The width
# half-point is catalog/calibration.yaml's ``moe_expert_width_half`` where given (fitted on the MoE fit rows:
# planner/validation/moe.py), else this value.
EXPERT_GEMM_WIDTH_HALF = 256.0
EXPERT_GEMM_TOKENS_HALF = 128.0  # tiles of 128 rows: a local expert with fewer tokens wastes the tile (estimate)
ACTIVATION_BYTES = 2.0  # 16-bit activations
# Bytes an FP8 cast moves per element of a GEMM input or output gradient: Transformer Engine's fused cast-transpose
# reads the 16-bit tensor (2 bytes) and writes its FP8 copy and the transposed FP8 copy the other GEMM of the
# backward pass needs (1 + 1 bytes): an estimate from the kernel's reads and writes, amax and scale traffic left out.
FP8_CAST_BYTES_PER_ELEMENT = 4.0


def moe_layer_counts(wl: Workload) -> tuple[int, int]:
    """(dense layers, MoE layers) of the model trained, multi-token-prediction layers included as Megatron counts
    them (megatron/training/training.py ``num_floating_point_operations``: an MTP layer is an MoE layer when the
    last layer is one): the first_k_dense layers are dense, then every moe_layer_frequency-th layer is MoE."""
    moe = require_moe(wl)
    return _layer_counts(int(wl.layers or 1), moe.first_k_dense, moe.moe_layer_frequency, moe.mtp_layers)


@functools.lru_cache(maxsize=64)
def _layer_counts(layers: int, first_k_dense: int, frequency: int, mtp_layers: int) -> tuple[int, int]:
    """``moe_layer_counts`` of a layer pattern (the search asks it once per layout)."""
    pattern = [i >= first_k_dense and (i - first_k_dense) % frequency == 0 for i in range(layers)]
    n_moe = sum(pattern) + (mtp_layers if pattern[-1] else 0)
    return layers + mtp_layers - n_moe, n_moe


def require_moe(wl: Workload) -> MixtureOfExperts:
    """The workload's MoE block (a ValueError for a dense workload: a caller's mistake, never user input)."""
    if wl.moe is None:
        raise ValueError(f"workload '{wl.id}' has no moe block")
    return wl.moe


def ffn_matrices(moe: MixtureOfExperts) -> float:
    """Weight matrices of an FFN: 3 for a gated one (SwiGLU: gate, up, down), 2 otherwise."""
    return 3.0 if moe.gated else 2.0


def attention_flops_per_token(wl: Workload) -> float:
    """Training FLOPs of one layer's attention per token (forward + both backward GEMMs, multiply-add = 2), by
    Megatron's convention (megatron/training/training.py ``num_floating_point_operations`` @d98e8a64, moe.md
    section 0): the projections, and the core attention halved for the causal mask. Multi-head latent attention
    counts its low-rank projections; grouped-query attention 12 h^2 (1 + g/n + s/(2h)) x (n d / h)."""
    moe = require_moe(wl)
    h, s, n = float(wl.hidden_size or 0), float(wl.sequence_length or 1), float(wl.attention_heads or 1)
    if moe.mla is not None:
        m = moe.mla
        qk = float(m.qk_head_dim + m.qk_rope_head_dim)
        q_term = n * h * qk if m.q_lora_rank is None else m.q_lora_rank * (h + n * qk + 1.0)
        terms = (
            q_term
            + m.kv_lora_rank * (h + n * (m.qk_head_dim + m.v_head_dim) + 1.0)
            + h * m.qk_rope_head_dim
            + n * m.v_head_dim * h
            + s * n * qk / 2.0
            + s * n * m.v_head_dim / 2.0
        )
        return 6.0 * terms
    groups = float(wl.kv_heads or wl.attention_heads or 1)
    head_dim = float(moe.head_dim or h / n)
    ratio = n * head_dim / h
    return 12.0 * h * h * (1.0 + groups / n + s / h / 2.0) * ratio


def megatron_flops_per_token(wl: Workload) -> float:
    """Model training FLOPs per token of an MoE transformer by the convention the published MoE numbers use
    (Megatron ``num_floating_point_operations``; Megatron-Bridge flop_utils.py; moe.md section 0): 3 (forward,
    weight and data gradients) x 2 (multiply-add) x GEMM MACs; the routed top-k experts and the shared experts of
    each MoE layer, the dense FFN of the others (x 3/2 gated); attention (``attention_flops_per_token``); the MTP
    layers' projections; the logits once per prediction head; recomputation not counted. DeepSeek-V3 at 4,096
    tokens: 260 GFLOP/token; Qwen3-235B-A22B: 148 (moe.md, implied by TFLOP/s / tokens/s)."""
    moe = require_moe(wl)
    h = float(wl.hidden_size or 0)
    dense, n_moe = moe_layer_counts(wl)
    layers = dense + n_moe
    gate = ffn_matrices(moe) / 2.0
    mlp = (
        12.0
        * h
        * (
            float(moe.dense_ffn_hidden or 0) * gate * dense
            + float(moe.expert_ffn_hidden * moe.top_k) * gate * n_moe
            + float(moe.shared_expert_ffn_hidden) * gate * n_moe
        )
    )
    mtp = 6.0 * moe.mtp_layers * (3.0 * h + 2.0 * h * h)
    logits = 6.0 * h * moe.vocab_size * (moe.mtp_layers + 1)
    return mlp + layers * attention_flops_per_token(wl) + mtp + logits


def routed_expert_flops_per_token(wl: Workload) -> float:
    """The routed experts' training FLOPs per token (the top-k experts of every MoE layer), same convention."""
    moe = require_moe(wl)
    _, n_moe = moe_layer_counts(wl)
    return 12.0 * float(wl.hidden_size or 0) * moe.expert_ffn_hidden * moe.top_k * ffn_matrices(moe) / 2.0 * n_moe


def expert_flops_share(wl: Workload) -> float:
    """The routed experts' share of the model FLOPs per token (the part that runs as grouped GEMMs)."""
    return routed_expert_flops_per_token(wl) / megatron_flops_per_token(wl)


def expert_params(wl: Workload) -> float:
    """Routed-expert parameters, MTP layers included: MoE layers x experts x FFN matrices x h x expert FFN
    (DeepSeek-V3: 58 x 256 x 3 x 7168 x 2048 = 654B of its 671B; moe.md section 2.6). Sharded by expert
    parallelism; the rest (attention, shared experts, dense FFNs, embeddings) by tensor parallelism."""
    moe = require_moe(wl)
    _, n_moe = moe_layer_counts(wl)
    return n_moe * moe.routed_experts * ffn_matrices(moe) * float(wl.hidden_size or 0) * moe.expert_ffn_hidden


def grouped_gemm_efficiency(
    tokens_per_expert: ArrayLike, expert_width_per_gpu: float, width_half: float = EXPERT_GEMM_WIDTH_HALF
) -> NDArray[np.float64]:
    """Efficiency of the routed experts' grouped GEMMs relative to the dense GEMMs of the same model: w / (w +
    width half-point) at the expert FFN width per GPU, x t / (t + EXPERT_GEMM_TOKENS_HALF) at the token copies
    each local expert receives per micro-batch (the module constants' sources)."""
    t = np.asarray(tokens_per_expert, dtype=float)
    w = float(expert_width_per_gpu)
    return np.asarray(w / (w + width_half) * t / (t + EXPERT_GEMM_TOKENS_HALF))


def tokens_per_local_expert(
    tokens_per_gpu: ArrayLike, top_k: int, expert_parallel: int, experts: int, expert_tensor_parallel: int = 1
) -> NDArray:
    """Token copies one local expert receives per micro-batch under uniform routing: the EP x ETP group's T x k
    copies each spread over the experts, each GPU holding experts / EP of them and gathering its ETP group's
    tokens for its slice of the FFN: T k EP ETP / E."""
    copies = np.asarray(tokens_per_gpu, dtype=float) * top_k * expert_parallel * expert_tensor_parallel
    return np.asarray(copies / experts)


def expert_tensor_parallel_time_s(
    bytes_per_call: ArrayLike, expert_tensor_parallel: int, nvlink_bytes_s: ArrayLike, dispatcher: str
) -> NDArray[np.float64]:
    """Time of the expert tensor-parallel collective that follows one dispatch (or precedes one combine) per GPU:
    Megatron-Core's all-to-all dispatcher all-gathers the dispatched tokens over the ETP group before the experts
    and reduce-scatters their outputs after them (megatron/core/transformer/moe/token_dispatcher.py, the ``tp``
    group of MoEAlltoAllTokenDispatcher; moe.md section 2.7: ETP splits each expert's FFN). A ring all-gather of
    a dispatch's ``bytes_per_call`` (T k h b, the tokens the GPU received) from each of ETP ranks sends (ETP - 1)
    x those bytes per GPU; inside the node's NVLink domain at the dispatcher's share of the NVLink bandwidth (as
    the dispatch: DISPATCHER_NVLINK_EFFICIENCY). 0 for ETP 1."""
    v = np.asarray(bytes_per_call, dtype=float)
    if expert_tensor_parallel <= 1:
        return np.zeros_like(v)
    link = np.asarray(nvlink_bytes_s, dtype=float) * DISPATCHER_NVLINK_EFFICIENCY[dispatcher]
    return np.asarray(v * (expert_tensor_parallel - 1.0) / link + ALL_TO_ALL_LATENCY_INTRA_S)


def fp8_cast_elements_per_token(wl: Workload, layers: float) -> float:
    """Elements an FP8 step casts per token entering a GPU's MoE block (its T, moe.md section 2.1), over ``layers``
    layers in the model's proportion of MoE and dense layers: every GEMM's input in the forward pass and its
    output gradient in the backward (the weight- and data-gradient GEMMs read their FP8 copies). Attention: the
    QKV and output projections' inputs (h, the heads' value width) and output gradients (the QKV width, h; MLA: its
    heads' query, key and value widths, the low-rank latents left out); each
    routed copy (x top-k) and the shared experts: the FFN's input and its down projection's input (h, F) and their
    output gradients (F x the gated FFN's two matrices, h); a dense layer's FFN the same. They scale with the GEMMs'
    widths, the FLOPs with width x width: the casts take a larger share of a fine-grained expert's GEMM time."""
    moe = require_moe(wl)
    h = float(wl.hidden_size or 0)
    n = float(wl.attention_heads or 1)
    if moe.mla is not None:
        qkv = n * (moe.mla.qk_head_dim + moe.mla.qk_rope_head_dim + moe.mla.v_head_dim)
        context = n * moe.mla.v_head_dim
    else:
        d = float(moe.head_dim or h / n)
        qkv = (n + 2.0 * float(wl.kv_heads or wl.attention_heads or 1)) * d
        context = n * d
    up = ffn_matrices(moe) - 1.0  # the up projection's output width in F (gate and up: 2)

    def ffn(width: float) -> float:  # none without the FFN (no shared experts)
        return 2.0 * h + (1.0 + up) * width if width > 0 else 0.0

    attention = h + context + qkv + h
    moe_layer = attention + moe.top_k * ffn(moe.expert_ffn_hidden) + ffn(moe.shared_expert_ffn_hidden)
    dense_layer = attention + ffn(float(moe.dense_ffn_hidden or 0))
    dense, n_moe = moe_layer_counts(wl)
    return float(layers * (moe_layer * n_moe + dense_layer * dense) / (n_moe + dense))


def fp8_cast_time_s(elements: ArrayLike, memory_bandwidth_tbps: ArrayLike) -> NDArray[np.float64]:
    """Time of the FP8 casts of ``elements`` GEMM inputs and gradients (``fp8_cast_elements_per_token`` x the
    tokens of a step) over HBM: FP8_CAST_BYTES_PER_ELEMENT each at compute.MEMORY_BW_ACHIEVED of the GPU's memory
    bandwidth. Memory-bound: FP8's doubled GEMM peak does not shorten it."""
    moved = np.asarray(elements, dtype=float) * FP8_CAST_BYTES_PER_ELEMENT
    return np.asarray(moved / (np.asarray(memory_bandwidth_tbps, dtype=float) * 1e12 * MEMORY_BW_ACHIEVED))


def load_imbalance_factor(force_balance: bool) -> float:
    """Time of the busiest expert-parallel rank relative to balanced routing: 1 under forced balance (the
    benchmarks' --moe-router-force-load-balancing), 1 + LOAD_IMBALANCE_SHARE under real routing (its source)."""
    return 1.0 if force_balance else 1.0 + LOAD_IMBALANCE_SHARE


def all_to_all_bytes(tokens_per_gpu: ArrayLike, top_k: int, hidden: float, bytes_per_element: float = 2.0) -> NDArray:
    """Logical bytes of one dispatch (or combine) per GPU: its T tokens x top-k copies x hidden x bytes (moe.md
    section 2.1; DeepEP docs: the backward of a dispatch is a combine and vice versa)."""
    return np.asarray(np.asarray(tokens_per_gpu, dtype=float) * top_k * hidden * bytes_per_element)


def expert_all_to_all_time_s(
    bytes_per_call: ArrayLike,
    expert_parallel: int,
    gpus_per_domain: ArrayLike,
    nvlink_bytes_s: ArrayLike,
    nic_bytes_s_per_gpu: ArrayLike,
    dispatcher: str,
) -> NDArray[np.float64]:
    """Time of one dispatch or combine all-to-all of ``bytes_per_call`` logical bytes per GPU over an EP group of
    ``expert_parallel`` consecutive ranks (Megatron-Core's expert rank order): inside the NVLink domain
    (``gpus_per_domain``: 8 on HGX, 72 on NVL72, the catalog server's GPUs per node) the share bound for the other
    GPUs of the domain, (min(EP, domain) - 1) / EP, at the dispatcher's share of the NVLink bandwidth
    (DISPATCHER_NVLINK_EFFICIENCY); an EP group spanning domains also sends its remote copies, (EP - domain) / EP,
    over the NICs at their achieved bandwidth (moe.md section 2.2's measured algorithm bandwidths: the module
    constants); the two paths run concurrently and the slower sets the time. Plus one kernel latency. 0 for EP 1.

    DeepSeek-V3 on eight HGX H100 nodes (EP64, 4,096 tokens, top-8, h 7,168, BF16): 469.8 MB x 56/64 / 47 GB/s
    = 8.75 ms, HybridEP's measured 9.3 ms (50.6 GB/s of logical bytes)."""
    ep = float(expert_parallel)
    if ep <= 1:
        return np.zeros_like(np.asarray(bytes_per_call, dtype=float))
    v = np.asarray(bytes_per_call, dtype=float)
    g = np.asarray(gpus_per_domain, dtype=float)
    eff = DISPATCHER_NVLINK_EFFICIENCY[dispatcher]
    per_domain = np.minimum(g, ep)
    t_nvlink = v * (per_domain - 1.0) / ep / (np.asarray(nvlink_bytes_s, dtype=float) * eff)
    t_nic = v * (ep - per_domain) / ep / np.asarray(nic_bytes_s_per_gpu, dtype=float)
    spans = ep > g
    latency = np.where(spans, ALL_TO_ALL_LATENCY_INTER_S, ALL_TO_ALL_LATENCY_INTRA_S)
    return np.asarray(np.maximum(t_nvlink, t_nic) + latency)


def all_to_all_calls(moe_layers_per_stage: float, micro_batches: ArrayLike, recomputed_share: float) -> NDArray:
    """Dispatch/combine all-to-alls per GPU per step: 4 per MoE layer of its stage and micro-batch (forward
    dispatch and combine, their backward), 2 more for a recomputed layer (moe.md section 2.1)."""
    return np.asarray((4.0 + 2.0 * recomputed_share) * moe_layers_per_stage * np.asarray(micro_batches, dtype=float))


def moe_activation_bytes_per_token(wl: Workload) -> tuple[float, float]:
    """(activation bytes per token of an MoE layer, of a dense layer) stored for the backward pass, 16-bit, no
    recomputation, Megatron's accounting (Korthikanti et al. 2022: a GEMM keeps its input, a nonlinearity its
    input, dropout a 1-byte mask) extended to routed experts. Per layer:

      attention   2 (h [norm input] + h [projection input] + the projections' outputs kept for the core
                  attention (Q, K, V; MLA also its two latents) + the context) + h [mask];  13 h for MHA (as
                  Korthikanti's 11 h + 2 h of its norm)
      MoE FFN     2 h [norm] + h [mask] + per routed copy k x 2 (h [expert input] + 3 F_e [SwiGLU's gate/up
                  outputs and the activation]; 2 F_e ungated) + k x 2 h [the combine's expert outputs] + the shared
                  experts' 2 x 3 F_s
      dense FFN   2 h + h + 2 (h + 3 F) (21 h for an ungated 4h FFN, Korthikanti's 19 h + 2 h)

    An estimate beyond Korthikanti's dense table: DeepSeek-V3 at PP4 VP4 EP64 gives 143 GB for one micro-batch's
    62 layers against 131 GB published (moe.md section 2.6)."""
    moe = require_moe(wl)
    h = float(wl.hidden_size or 0)
    n = float(wl.attention_heads or 1)
    if moe.mla is not None:
        m = moe.mla
        qk = n * (m.qk_head_dim + m.qk_rope_head_dim)
        kept = float(m.q_lora_rank or 0) + m.kv_lora_rank + m.qk_rope_head_dim + 2.0 * qk + 2.0 * n * m.v_head_dim
    else:
        d = float(moe.head_dim or h / n)
        kv = float(wl.kv_heads or wl.attention_heads or 1) * d
        kept = 2.0 * n * d + 2.0 * kv
    b = ACTIVATION_BYTES
    attention = b * (2.0 * h + kept) + h
    f_mat = ffn_matrices(moe)
    routed = moe.top_k * b * (h + f_mat * moe.expert_ffn_hidden) + moe.top_k * b * h
    shared = b * f_mat * moe.shared_expert_ffn_hidden
    moe_ffn = b * h + h + routed + shared
    dense_ffn = b * h + h + b * (h + f_mat * float(moe.dense_ffn_hidden or 0))
    return attention + moe_ffn, attention + dense_ffn


def dispatcher_buffer_gb(tokens_per_gpu: ArrayLike, top_k: int, hidden: float) -> NDArray[np.float64]:
    """The dispatcher's receive buffers, GB: one dispatch and one combine of a layer in flight, T k h x 2 bytes
    each (moe.md section 2.1's volume; DeepEP and HybridEP preallocate them)."""
    return np.asarray(2.0 * all_to_all_bytes(tokens_per_gpu, top_k, hidden) / 1e9)
