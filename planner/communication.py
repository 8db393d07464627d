"""Communication: collective times over NVLink/PCIe inside a node and the fabric between nodes.

* Ring all-reduce of S bytes over n participants at bandwidth B and per-step latency a:
  T = 2(n-1)/n * S/B + 2(n-1) * a.
* Data-parallel all-reduce as NCCL runs it for large messages: a ring over all dp replicas. Every link
  of the ring carries 2(dp-1)/dp x S; the slowest link sets the time ("bus bandwidth"). Inside one node
  that is NVLink/PCIe; once the group spans nodes, each ring enters and leaves every node through the
  node's NICs, which the g / dp_local data-parallel groups hosted on the node (one per tensor/pipeline
  shard) share. So T = 2(dp-1)/dp x S / min(B_intra, B_node x dp_local / g) + 2(dp-1) a. (An ideal
  hierarchical all-reduce would move only 2(n-1)/n x S per node; NCCL's ring does not, and its measured
  bus bandwidth across nodes is the NIC bandwidth, reference/hardware.md.)
* Tensor parallelism: 4 all-reduces of the activations per layer and micro-batch (6 with recompute).
* Pipeline parallelism (interleaved 1F1B, v chunks per GPU): bubble (p-1)/(v m) of the busy time, plus v x the
  point-to-point activations.
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


def data_parallel_allreduce_time_s(
    size_bytes: ArrayLike,
    data_parallel: ArrayLike,
    dp_local: ArrayLike,
    gpus_per_node: ArrayLike,
    intra_bytes_s: ArrayLike,
    node_bytes_s: ArrayLike,
    inter_latency_s: ArrayLike,
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """(ring all-reduce time of the data-parallel group, whether the fabric is the slowest link).

    dp_local of the dp replicas share a node; the group spans nodes when dp > dp_local."""
    dp = np.asarray(data_parallel, dtype=float)
    dpl = np.asarray(dp_local, dtype=float)
    intra = np.asarray(intra_bytes_s, dtype=float)
    spans = dp > dpl
    nic_share = np.asarray(node_bytes_s, dtype=float) * dpl / np.asarray(gpus_per_node, dtype=float)
    via_fabric = spans & (nic_share < intra)
    bus = np.where(via_fabric, nic_share, intra)
    latency = np.where(spans, np.asarray(inter_latency_s, dtype=float), INTRA_LATENCY_S)
    return ring_allreduce_time_s(size_bytes, dp, bus, latency), via_fabric


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


def interleaved_pipeline_time_s(
    bubble_one_stage_s: ArrayLike, p2p_one_stage_s: ArrayLike, options: list[int]
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """(bubble + point-to-point time, chosen v) of an interleaved 1F1B pipeline: with v model chunks per GPU
    the bubble is 1/v of the plain schedule's and every micro-batch crosses v times as many stage boundaries;
    v is the fastest of ``options`` (the first on a tie)."""
    b1 = np.asarray(bubble_one_stage_s, dtype=float)
    p1 = np.asarray(p2p_one_stage_s, dtype=float)
    best = b1 / options[0] + options[0] * p1
    chosen = np.full(best.shape, options[0], dtype=np.int64)
    for v in options[1:]:
        cand = b1 * (1.0 / v) + v * p1
        better = cand < best
        best = np.where(better, cand, best)
        chosen = np.where(better, v, chosen)
    return best, chosen


def pipeline_bubble_fraction(stages: ArrayLike, micro_batches: ArrayLike) -> NDArray[np.float64]:
    """Idle share of a 1F1B pipeline step: (p-1)/(m+p-1)."""
    p = np.asarray(stages, dtype=float)
    m = np.asarray(micro_batches, dtype=float)
    return (p - 1.0) / (m + p - 1.0)


def all_to_all_time_s(bytes_per_gpu: ArrayLike, participants: ArrayLike, bytes_s: ArrayLike) -> NDArray[np.float64]:
    n = np.asarray(participants, dtype=float)
    t = np.asarray(bytes_per_gpu, dtype=float) * (n - 1.0) / n / np.asarray(bytes_s, dtype=float)
    return np.where(n > 1, t, 0.0)


def exposed_gradient_sync_s(
    sync_s: ArrayLike, compute_s: ArrayLike, micro_batches: ArrayLike, overlap: float
) -> NDArray[np.float64]:
    """Gradient synchronisation left exposed after the backward pass of the last micro-batch hides what it can:
    the backward is 2/3 of the compute of one micro-batch, and a share ``overlap`` of it runs beside the
    all-reduce of the buckets already complete."""
    hide = overlap * (2.0 / 3.0) / np.asarray(micro_batches, dtype=float) * np.asarray(compute_s, dtype=float)
    return np.asarray(np.maximum(np.asarray(sync_s, dtype=float) - hide, 0.0))
