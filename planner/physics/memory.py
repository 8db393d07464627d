"""Memory per GPU.

Model state (mixed-precision Adam): weights 2 B/param, gradients 2 B/trainable param, optimizer state
(optimizer_bytes_per_param - 4: fp32 master + two moments = 12 B) per trainable param; tensor and
pipeline parallelism divide them; ZeRO-1 shards the optimizer state over the data-parallel group,
ZeRO-2 also gradients, ZeRO-3/FSDP also weights. Activations: per sample x micro-batch / tensor
parallel (a 1F1B pipeline keeps p micro-batches of L/p layers in flight = one micro-batch of L layers; an
interleaved one (v+1)p-1 chunks of L/(pv) layers),
times the kept share under recomputation. Embeddings (recommenders) are sharded over all GPUs.
A fixed workspace covers the CUDA context, NCCL buffers and fragmentation.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

WORKSPACE_GB = 2.0
USABLE_FRACTION = 0.95


def model_state_gb(
    params: float,
    trainable: float,
    optimizer_bytes_per_param: float,
    model_parallel: ArrayLike,
    data_parallel: ArrayLike,
    zero_stage: int,
    grad_bytes_per_param: float = 2.0,
    weight_bytes_per_param: float = 2.0,
) -> NDArray[np.float64]:
    """Weights, gradients and optimizer state per GPU, GB. ``grad_bytes_per_param``: 2 for 16-bit gradients, 4
    where the framework keeps and reduces them in fp32 (Megatron's main-grad buffer for bf16).
    ``weight_bytes_per_param``: 2 for 16-bit (and FP8) training, 4 where the GPUs compute in fp32 / TF32."""
    mp = np.asarray(model_parallel, dtype=float)
    dp = np.asarray(data_parallel, dtype=float)
    weights = weight_bytes_per_param * params / mp
    grads = grad_bytes_per_param * trainable / mp
    optim = max(optimizer_bytes_per_param - 4.0, 0.0) * trainable / mp
    if zero_stage >= 1:
        optim = optim / dp
    if zero_stage >= 2:
        grads = grads / dp
    if zero_stage >= 3:
        weights = weights / dp
    return np.asarray((weights + grads + optim) / 1e9, dtype=float)


def activation_gb(
    bytes_per_sample: float, micro_batch: ArrayLike, tensor_parallel: ArrayLike, kept_fraction: float
) -> NDArray[np.float64]:
    """Activation memory per GPU of a workload stated per sample (no transformer shape): bytes per sample x
    micro-batch x the share recomputation keeps / tensor parallelism, GB."""
    return np.asarray(
        bytes_per_sample * np.asarray(micro_batch, dtype=float) * kept_fraction / np.asarray(tensor_parallel) / 1e9,
        dtype=float,
    )


def fits(memory_gb: ArrayLike, gpu_memory_gb: ArrayLike) -> NDArray[np.bool_]:
    """The memory fits the GPU's usable share (USABLE_FRACTION: allocator fragmentation and reserved memory)."""
    return np.asarray(memory_gb) <= USABLE_FRACTION * np.asarray(gpu_memory_gb)


def transformer_activation_gb(
    sequence_length: float,
    hidden_size: float,
    attention_heads: float,
    layers: float,
    micro_batch: ArrayLike,
    tensor_parallel: ArrayLike,
    sequence_parallel: bool,
    recompute: str,
    flash_attention: bool,
    fp8_gemm_inputs: ArrayLike = False,
) -> NDArray[np.float64]:
    """Activation memory per GPU of a transformer, Megatron's formulas (Korthikanti et al. 2022, Table 2;
    reference/scale_facts.md section 5.1), bytes per layer with 16-bit activations, s sequence, b micro-batch,
    h hidden, a heads, t tensor parallel:

      no recompute, TP only           s b h (10 + 24/t + 5 a s/(h t))
      no recompute, TP + sequence par  s b h (34/t + 5 a s/(h t))
      selective recompute              the 5 a s/h attention-score term is recomputed, not stored
      full recompute                   2 s b h (the layer input only; 2 s b h / t with sequence parallelism,
                                       whose layer inputs are split along the sequence)

    A FlashAttention kernel never stores the scores (the 5as/h term is absent even without recompute). A 1F1B
    pipeline's first stage holds p micro-batches of L/p layers in flight: the activations of L layers of one
    micro-batch, which is what is returned (per GPU, its tensor-parallel share; an interleaved schedule holds
    more, planner/physics/step.py interleave_activation_factor).

    FP8 training (Transformer Engine) keeps the inputs of its GEMMs for the backward pass in FP8, one byte
    instead of two: the QKV and FC1 inputs (2 s b h each, outside the tensor-parallel regions), the attention
    projection input (2 s b h) and the FC2 input (8 s b h) -- 7 of the 34 s b h, so 27 with sequence
    parallelism, and 8 + 19/t without it (``fp8_gemm_inputs``)."""
    s, h, a = float(sequence_length), float(hidden_size), float(attention_heads)
    t = np.asarray(tensor_parallel, dtype=float)
    sbh = s * np.asarray(micro_batch, dtype=float) * h
    scores = 0.0 if (flash_attention or recompute != "none") else 5.0 * a * s / h
    fp8 = np.asarray(fp8_gemm_inputs, dtype=bool)  # per row where rows differ in precision
    replicated, sharded = np.where(fp8, 8.0, 10.0), np.where(fp8, 19.0, 24.0)
    if recompute == "full":
        per_layer = 2.0 * sbh * np.ones_like(replicated) / (t if sequence_parallel else 1.0)
    elif sequence_parallel:
        per_layer = sbh * (replicated + sharded + scores) / t
    else:
        per_layer = sbh * (replicated + (sharded + scores) / t)
    return np.asarray(per_layer * float(layers) / 1e9, dtype=float)
