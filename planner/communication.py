"""Communication: collective times over NVLink/PCIe inside a node and the fabric between nodes.

* Ring all-reduce of S bytes over n participants at bandwidth B and per-step latency a:
  T = 2(n-1)/n * S/B + 2(n-1) * a.
* Hierarchical data-parallel all-reduce: reduce-scatter/all-gather inside the node among the dp_local
  replicas there (NVLink), plus an inter-node ring over dp_nodes nodes in which all g GPUs of a node
  push their S/dp_local shards through the node's NICs at once.
* Tensor parallelism: 4 all-reduces of the activations per layer and micro-batch (6 with recompute).
* Pipeline parallelism: bubble (p-1)/m of the busy time, plus point-to-point activations.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

NVLINK_ACHIEVED = 0.8  # reference/hardware.md: NVLink all-reduce bus bandwidth ~80% of one-way link speed
INTRA_LATENCY_S = 3e-6
SOFTWARE_LATENCY_S = 5e-6  # NCCL per-step software latency added to the wire latency


def ring_allreduce_time_s(
    size_bytes: ArrayLike, n: ArrayLike, bandwidth_bytes_s: ArrayLike, latency_s: ArrayLike
) -> NDArray[np.float64]:
    n_ = np.asarray(n, dtype=float)
    t = 2.0 * (n_ - 1.0) / n_ * np.asarray(size_bytes, dtype=float) / np.asarray(bandwidth_bytes_s, dtype=float)
    t = t + 2.0 * (n_ - 1.0) * np.asarray(latency_s, dtype=float)
    return np.where(n_ > 1, t, 0.0)


def node_bandwidth_bytes_s(
    nic_ports: ArrayLike, port_gbps: ArrayLike, max_port_gbps: ArrayLike, efficiency: ArrayLike
) -> NDArray[np.float64]:
    """Achieved aggregate fabric bandwidth of one node, bytes/s."""
    per_port = np.minimum(np.asarray(port_gbps, dtype=float), np.asarray(max_port_gbps, dtype=float))
    return np.asarray(nic_ports) * per_port * 1e9 / 8.0 * np.asarray(efficiency)


def hierarchical_allreduce_time_s(
    size_bytes: ArrayLike,
    dp_local: ArrayLike,
    dp_nodes: ArrayLike,
    gpus_per_node: ArrayLike,
    tensor_parallel: ArrayLike,
    intra_bytes_s: ArrayLike,
    node_bytes_s: ArrayLike,
    inter_latency_s: ArrayLike,
) -> NDArray[np.float64]:
    s = np.asarray(size_bytes, dtype=float)
    dpl = np.asarray(dp_local, dtype=float)
    intra = ring_allreduce_time_s(s, dpl, intra_bytes_s, INTRA_LATENCY_S)
    # all GPUs of the node (g / tp tensor-parallel groups x tp) share the NICs, each with S / dp_local
    node_traffic = np.asarray(gpus_per_node, dtype=float) * s / dpl
    inter = ring_allreduce_time_s(node_traffic, dp_nodes, node_bytes_s, inter_latency_s)
    return intra + inter


def tensor_parallel_time_s(
    activation_bytes: ArrayLike,
    tensor_parallel: ArrayLike,
    layers_per_stage: ArrayLike,
    micro_batches: ArrayLike,
    recompute: bool,
    intra_bytes_s: ArrayLike,
) -> NDArray[np.float64]:
    per = ring_allreduce_time_s(activation_bytes, tensor_parallel, intra_bytes_s, INTRA_LATENCY_S)
    collectives = 6.0 if recompute else 4.0
    return per * collectives * np.asarray(layers_per_stage) * np.asarray(micro_batches)


def pipeline_bubble_fraction(stages: ArrayLike, micro_batches: ArrayLike) -> NDArray[np.float64]:
    """Idle share of a 1F1B pipeline step: (p-1)/(m+p-1)."""
    p = np.asarray(stages, dtype=float)
    m = np.asarray(micro_batches, dtype=float)
    return (p - 1.0) / (m + p - 1.0)


def all_to_all_time_s(bytes_per_gpu: ArrayLike, participants: ArrayLike, bytes_s: ArrayLike) -> NDArray[np.float64]:
    n = np.asarray(participants, dtype=float)
    t = np.asarray(bytes_per_gpu, dtype=float) * (n - 1.0) / n / np.asarray(bytes_s, dtype=float)
    return np.where(n > 1, t, 0.0)
