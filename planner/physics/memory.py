"""Memory per GPU.

Model state (mixed-precision Adam): weights 2 B/param, gradients 2 B/trainable param, optimizer state
(optimizer_bytes_per_param - 4: fp32 master + two moments = 12 B) per trainable param; tensor and
pipeline parallelism divide them; ZeRO-1 shards the optimizer state over the data-parallel group,
ZeRO-2 also gradients, ZeRO-3/FSDP also weights. Activations: per sample x micro-batch / tensor
parallel (a 1F1B pipeline keeps p micro-batches of L/p layers in flight = one micro-batch of L layers; an
interleaved one (v+1)p-1 chunks of L/(pv) layers),
times the kept share under recomputation. Embeddings (recommenders) are sharded over all GPUs.
A fixed workspace covers the CUDA context, NCCL buffers and fragmentation.

Parameter-efficient fine-tuning (LoRA: a frozen base, trainable adapters) keeps less of both. Its frozen weights are
stored at the bytes of their stored precision, FP8 in an FP8 or FP4 run whose workload stores FP8 parameters
(``Workload.fp8_frozen_weights``, on by default as NeMo's LoRA recipe runs; ``frozen_weight_bytes_per_param``), and
have neither gradients nor optimizer state. A frozen linear layer without an
adapter keeps no input for the backward pass (``frozen_linear_input_sbh``): its backward computes only the input
gradient dX = dY W^T, and only a weight gradient dW = X^T dY needs the layer's input X.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
from numpy.typing import ArrayLike, NDArray

WORKSPACE_GB = 2.0
USABLE_FRACTION = 0.95
FP8_BYTES = 1.0  # an FP8 element (E4M3 / E5M2)
# the inputs each linear layer of a transformer layer keeps for its weight gradient, s b h at 16 bits, as
# (outside the tensor-parallel regions, inside them): Korthikanti et al. 2022 section 4.1 (QKV and FC1 inputs 2 s b h
# each, replicated without sequence parallelism; the attention projection input 2 s b h and the FC2 input 8 s b h)
LINEAR_INPUT_SBH = {"qkv": (2.0, 0.0), "proj": (0.0, 2.0), "fc1": (2.0, 0.0), "fc2": (0.0, 8.0)}
# the MLP activation function's input, 8 s b h at 16 bits inside the tensor-parallel region (Korthikanti section 4.1)
ACTIVATION_FUNCTION_INPUT_SBH = 8.0


def model_state_gb(
    params: float,
    trainable: float,
    optimizer_bytes_per_param: float,
    model_parallel: ArrayLike,
    data_parallel: ArrayLike,
    zero_stage: int,
    grad_bytes_per_param: float = 2.0,
    weight_bytes_per_param: float = 2.0,
    frozen_bytes_per_param: ArrayLike | None = None,
) -> NDArray[np.float64]:
    """Weights, gradients and optimizer state per GPU, GB. ``grad_bytes_per_param``: 2 for 16-bit gradients, 4
    where the framework keeps and reduces them in fp32 (Megatron's main-grad buffer for bf16).
    ``weight_bytes_per_param``: 2 for 16-bit (and FP8) training, 4 where the GPUs compute in fp32 / TF32: the
    trainable weights. ``frozen_bytes_per_param``: the frozen ones (params - trainable), per row where rows differ
    in precision (``frozen_weight_bytes_per_param``); None = ``weight_bytes_per_param``."""
    mp = np.asarray(model_parallel, dtype=float)
    dp = np.asarray(data_parallel, dtype=float)
    frozen_bytes = weight_bytes_per_param if frozen_bytes_per_param is None else np.asarray(frozen_bytes_per_param)
    weights = (weight_bytes_per_param * trainable + frozen_bytes * max(params - trainable, 0.0)) / mp
    grads = grad_bytes_per_param * trainable / mp
    optim = max(optimizer_bytes_per_param - 4.0, 0.0) * trainable / mp
    if zero_stage >= 1:
        optim = optim / dp
    if zero_stage >= 2:
        grads = grads / dp
    if zero_stage >= 3:
        weights = weights / dp
    return np.asarray((weights + grads + optim) / 1e9, dtype=float)


def frozen_weight_bytes_per_param(
    tensor_bytes: float, fp8: ArrayLike, fp8_frozen_weights: bool, stated_bytes: float | None = None
) -> NDArray[np.float64]:
    """Bytes of a frozen parameter (a LoRA base weight) as the run stores it, per row where rows differ in
    precision: ``stated_bytes`` where the workload states them (a format of its own: 0.5 for QLoRA's 4-bit NF4
    base, Dettmers et al. 2023); else one byte (``FP8_BYTES``) in an FP8 or FP4 run whose framework keeps FP8
    parameters (``fp8_frozen_weights``: Transformer Engine ``fp8_model_init``, NeMo ``fp8_params``: the weights held
    in FP8 only, no 16-bit copy; a frozen weight needs no master copy either), as MLPerf's NeMo LoRA submissions run
    (reference/mlperf_settings.csv fp8_params); else the width the GPUs compute in (``tensor_bytes``: 2 in BF16, FP16
    and in FP8 without FP8 parameters, 4 in fp32 / TF32). Llama 2 70B's 69e9 frozen parameters: 69 GB in FP8, 138 GB
    in BF16."""
    if stated_bytes is not None:
        return np.full(np.shape(fp8), float(stated_bytes))
    return np.asarray(np.where(np.asarray(fp8, dtype=bool) & fp8_frozen_weights, FP8_BYTES, tensor_bytes), dtype=float)


def frozen_linear_input_sbh(adapter_linears: Collection[str] | None, flash_attention: bool) -> tuple[float, float]:
    """The 16-bit inputs, s b h as (outside, inside the tensor-parallel regions), that the frozen linear layers of a
    transformer layer do not keep (``LINEAR_INPUT_SBH``). A linear layer whose weight is frozen and carries no
    adapter computes in its backward pass only the input gradient dX = dY W^T, which needs W, not the layer's input
    X; only a weight gradient dW = X^T dY does (Transformer Engine's Linear keeps its input only where the weight
    requires a gradient: ``backward_needs_input``; recalled from its source, not in reference/). The layers that
    carry adapters
    (``adapter_linears``: the LoRA target modules) keep X for the adapter's own weight gradient, and the non-linear
    operations keep theirs as before (norms, the activation function, attention). With FlashAttention the
    attention projection's input is the kernel's output O, which the kernel keeps for its own backward pass: a
    frozen projection frees nothing there. None: every linear layer trains, nothing is freed.

    MLPerf's Llama 2 70B LoRA adapts the fused QKV and the attention output projection (the reference's
    ``lora_target_modules "qkv_proj,o_proj"``, rank 16; models/llama2_70b_lora.yaml): its FC1 and FC2 are frozen,
    2 s b h outside and 8 s b h inside the tensor-parallel regions not kept."""
    if adapter_linears is None:
        return 0.0, 0.0
    frozen = [k for k in LINEAR_INPUT_SBH if k not in adapter_linears and not (k == "proj" and flash_attention)]
    return sum(LINEAR_INPUT_SBH[k][0] for k in frozen), sum(LINEAR_INPUT_SBH[k][1] for k in frozen)


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
    adapter_linears: Collection[str] | None = None,
    fp8_activation_function_input: bool = False,
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
    parallelism, and 8 + 19/t without it (``fp8_gemm_inputs``, per row where rows differ in precision).

    A frozen base (LoRA) keeps no input of its frozen linear layers that carry no adapter (``adapter_linears``;
    ``frozen_linear_input_sbh``): Llama 2 70B LoRA's frozen FC1 and FC2 free 10 of the 34 s b h (24 with sequence
    parallelism; 5 of the 27 in FP8: 22). In an FP8 run that keeps the MLP activation function's input in FP8
    (``fp8_activation_function_input``: Megatron-Core's ``activation_func_fp8_input_store``, NeMo's; MLPerf's LoRA
    submissions' fp8_activation in reference/mlperf_settings.csv), its 8 s b h take 4."""
    s, h, a = float(sequence_length), float(hidden_size), float(attention_heads)
    t = np.asarray(tensor_parallel, dtype=float)
    sbh = s * np.asarray(micro_batch, dtype=float) * h
    scores = 0.0 if (flash_attention or recompute != "none") else 5.0 * a * s / h
    fp8 = np.asarray(fp8_gemm_inputs, dtype=bool)  # per row where rows differ in precision
    linear_bytes = np.where(fp8, FP8_BYTES / 2.0, 1.0)  # a kept GEMM input's bytes relative to 16 bits
    linear_replicated = sum(r for r, _ in LINEAR_INPUT_SBH.values())
    linear_sharded = sum(sh for _, sh in LINEAR_INPUT_SBH.values())
    frozen_replicated, frozen_sharded = frozen_linear_input_sbh(adapter_linears, flash_attention)
    activation_input = np.where(
        fp8 & fp8_activation_function_input, ACTIVATION_FUNCTION_INPUT_SBH / 2.0, ACTIVATION_FUNCTION_INPUT_SBH
    )
    # the layer's other tensors: the two norms' inputs and dropout masks (6 s b h outside), Q, K and V (6 s b h inside)
    replicated = 10.0 - linear_replicated + linear_bytes * (linear_replicated - frozen_replicated)
    sharded = (
        24.0
        - linear_sharded
        - ACTIVATION_FUNCTION_INPUT_SBH
        + activation_input
        + linear_bytes * (linear_sharded - frozen_sharded)
    )
    if recompute == "full":
        per_layer = 2.0 * sbh * np.ones_like(replicated) / (t if sequence_parallel else 1.0)
    elif sequence_parallel:
        per_layer = sbh * (replicated + sharded + scores) / t
    else:
        per_layer = sbh * (replicated + (sharded + scores) / t)
    return np.asarray(per_layer * float(layers) / 1e9, dtype=float)
