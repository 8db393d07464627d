"""Memory per GPU.

Model state (mixed-precision Adam): weights 2 B/param, gradients 2 B/trainable param, optimizer state
(optimizer_bytes_per_param - 4: fp32 master + two moments = 12 B) per trainable param; tensor and
pipeline parallelism divide them; ZeRO-1 shards the optimizer state over the data-parallel group,
ZeRO-2 also gradients, ZeRO-3/FSDP also weights. Activations: per sample x micro-batch / tensor
parallel (a 1F1B pipeline keeps p micro-batches of L/p layers in flight = one micro-batch of L layers),
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
) -> NDArray[np.float64]:
    mp = np.asarray(model_parallel, dtype=float)
    dp = np.asarray(data_parallel, dtype=float)
    weights = 2.0 * params / mp
    grads = 2.0 * trainable / mp
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
    return np.asarray(
        bytes_per_sample * np.asarray(micro_batch, dtype=float) * kept_fraction / np.asarray(tensor_parallel) / 1e9,
        dtype=float,
    )


def fits(memory_gb: ArrayLike, gpu_memory_gb: ArrayLike) -> NDArray[np.bool_]:
    return np.asarray(memory_gb) <= USABLE_FRACTION * np.asarray(gpu_memory_gb)
