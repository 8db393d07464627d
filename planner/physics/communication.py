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
  point-to-point activations -- or, where the framework overlaps them with compute, the transfers on the schedule's
  critical path only (``exposed_p2p_time_s``).
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
    """Ring all-reduce of S bytes over n participants: 2(n-1)/n x S / B + 2(n-1) x latency (the module
    docstring; Patarasuk and Yuan 2009, NCCL's ring); 0 for one participant."""
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


TREE_BANDWIDTH_FACTOR = 0.8  # tree vs ring all-reduce bus bandwidth across nodes: 150 vs 190 GB/s (nccl#1368)
NVLS_BUS_GAIN = {5: 420 / 370, 6: 440 / 370, 7: 460 / 370, 8: 480 / 370}  # NVLS vs ring busbw, H100 (nccl#1455)


def nvls_gain(gpus_in_node: ArrayLike) -> NDArray[np.float64]:
    """All-reduce bus bandwidth with NVLink SHARP relative to the ring, by GPUs of the node in the collective:
    none up to 4 GPUs, 420 / 440 / 460 / 480 vs 370 GB/s for 5 / 6 / 7 / 8 H100s (NVIDIA/nccl#1455)."""
    n = np.clip(np.asarray(gpus_in_node, dtype=np.int64), 1, 8)
    table = np.asarray([1.0, 1.0, 1.0, 1.0, 1.0, *(NVLS_BUS_GAIN[k] for k in (5, 6, 7, 8))])
    return np.asarray(table[n])


# NCCL's latency of one NVLS all-reduce (src/graph/tuning.cc: the NVLink hardware latency of the NVLS algorithm,
# about 25 us with the Simple protocol, against 3.4 us per ring step): one switch round trip, whatever the GPU count
NVLS_LATENCY_S = 25e-6


def nvls_time_s(
    size_bytes: ArrayLike, n: ArrayLike, intra_bytes_s: ArrayLike, calls: ArrayLike = 1.0
) -> NDArray[np.float64]:
    """NVLink SHARP (NCCL's NVLS algorithm) all-reduce of S bytes over the n GPUs of one NVSwitch domain: the switch
    reduces (multimem loads and stores), so the bus carries the ring's 2(n-1)/n x S at the NVLS bus bandwidth
    (``nvls_gain``: 480 vs 370 GB/s on 8 H100s, NVIDIA/nccl#1455) and each call pays one switch round trip
    (``NVLS_LATENCY_S``) instead of the ring's 2(n-1) steps; 0 for one GPU."""
    n_ = np.asarray(n, dtype=float)
    bw = np.asarray(intra_bytes_s, dtype=float) * nvls_gain(n_)
    t = 2.0 * (n_ - 1.0) / np.maximum(n_, 1.0) * np.asarray(size_bytes, dtype=float) / bw
    return np.asarray(np.where(n_ > 1, t + np.asarray(calls, dtype=float) * NVLS_LATENCY_S, 0.0))


def bucket_count(size_bytes: ArrayLike, bucket_bytes: float) -> NDArray[np.float64]:
    """Gradient buckets (DDP buckets, Horovod fusion buffers): each all-reduce call pays its latency once."""
    return np.asarray(np.maximum(np.ceil(np.asarray(size_bytes, dtype=float) / bucket_bytes), 1.0))


def ring_time_s(
    size_bytes: ArrayLike, n: ArrayLike, bus_bytes_s: ArrayLike, hop_latency_s: ArrayLike, calls: ArrayLike = 1.0
) -> NDArray[np.float64]:
    """NCCL ring all-reduce: every link carries 2(n-1)/n x S; 2(n-1) steps of latency per call."""
    return ring_allreduce_time_s(size_bytes, n, bus_bytes_s, hop_latency_s) + (np.asarray(calls) - 1.0) * np.where(
        np.asarray(n) > 1, 2.0 * (np.asarray(n, dtype=float) - 1.0) * np.asarray(hop_latency_s, dtype=float), 0.0
    )


def tree_time_s(
    size_bytes: ArrayLike,
    n: ArrayLike,
    nodes: ArrayLike,
    local: ArrayLike,
    bus_bytes_s: ArrayLike,
    inter_latency_s: ArrayLike,
    calls: ArrayLike = 1.0,
) -> NDArray[np.float64]:
    """NCCL double binary tree across nodes (a chain inside each node): the ring's bandwidth term at
    TREE_BANDWIDTH_FACTOR of its bus bandwidth, but latency 2 log2(nodes) inter-node hops + the intra-node chain."""
    n_ = np.asarray(n, dtype=float)
    bw = 2.0 * (n_ - 1.0) / n_ * np.asarray(size_bytes, dtype=float) / (np.asarray(bus_bytes_s) * TREE_BANDWIDTH_FACTOR)
    hops = 2.0 * np.ceil(np.log2(np.maximum(np.asarray(nodes, dtype=float), 1.0))) * np.asarray(inter_latency_s)
    hops = hops + 2.0 * (np.asarray(local, dtype=float) - 1.0) * INTRA_LATENCY_S
    return np.asarray(np.where(n_ > 1, bw + np.asarray(calls) * hops, 0.0))


def in_network_time_s(
    size_bytes: ArrayLike,
    local: ArrayLike,
    intra_bytes_s: ArrayLike,
    nic_bytes_s: ArrayLike,
    inter_latency_s: ArrayLike,
    calls: ArrayLike = 1.0,
) -> NDArray[np.float64]:
    """In-network reduction (IB SHARP via NCCL CollNet): reduce-scatter and all-gather inside the node over
    NVLink, and each node sends its share once to the switches and receives the result once -- S instead of
    2(n-1)/n x S through the NICs (NVIDIA/nccl#457). The phases pipeline: the slower one sets the time; latency
    is a switch round trip (two hops) plus the intra-node steps."""
    S = np.asarray(size_bytes, dtype=float)
    loc = np.asarray(local, dtype=float)
    intra = 2.0 * (loc - 1.0) / loc * S / np.asarray(intra_bytes_s, dtype=float)
    inter = S / np.asarray(nic_bytes_s, dtype=float)
    lat = 2.0 * 2.0 * np.asarray(inter_latency_s, dtype=float) + 2.0 * (loc - 1.0) * INTRA_LATENCY_S
    return np.asarray(np.maximum(intra, inter) + np.asarray(calls) * lat)


def data_parallel_allreduce_time_s(
    size_bytes: ArrayLike,
    data_parallel: ArrayLike,
    dp_local: ArrayLike,
    gpus_per_node: ArrayLike,
    intra_bytes_s: ArrayLike,
    node_bytes_s: ArrayLike,
    inter_latency_s: ArrayLike,
    bucket_bytes: float = np.inf,
    in_network: ArrayLike = False,
    nvls: ArrayLike = False,
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """(gradient all-reduce time of the data-parallel group in buckets, whether the fabric is the slowest link),
    as NCCL runs it: the fastest of its algorithms for this size and scale (NCCL models every algorithm and
    picks the fastest: NVIDIA/nccl#457).

    dp_local of the dp replicas share a node; the group spans dp / dp_local nodes when dp > dp_local. The NICs
    of a node are shared by the g / dp_local data-parallel groups it hosts (one per tensor/pipeline shard).
    * ring: 2(dp-1)/dp x S over the slowest link (NVLink, or the group's NIC share), 2(dp-1) latency steps
      per bucket -- the latency that makes rings slow at thousands of GPUs;
    * tree: same volume at TREE_BANDWIDTH_FACTOR of the bandwidth, 2 log2(nodes) inter-node steps;
    * in-network reduction where the fabric has it (SHARP): S once through the NICs;
    * inside one node, the ring or, where the GPU's NVSwitch has it, NVLink SHARP (``nvls_time_s``): one switch
      round trip of latency per bucket instead of 2(dp-1) ring steps -- what keeps a 64- or 72-GPU NVLink domain's
      gradient all-reduce from being latency-bound."""
    dp = np.asarray(data_parallel, dtype=float)
    dpl = np.asarray(dp_local, dtype=float)
    intra = np.asarray(intra_bytes_s, dtype=float)
    S = np.asarray(size_bytes, dtype=float)
    spans = dp > dpl
    nic_share = np.asarray(node_bytes_s, dtype=float) * dpl / np.asarray(gpus_per_node, dtype=float)
    via_fabric = spans & (nic_share < intra)
    calls = bucket_count(S, bucket_bytes)
    inter_lat = np.asarray(inter_latency_s, dtype=float)
    nvls_ = np.asarray(nvls, dtype=bool)
    intra_nvls = np.where(nvls_, intra * nvls_gain(dpl), intra)
    # inside one node: the ring, or NVLS where the NVSwitch has it and it is faster (NCCL picks the faster)
    t_node = ring_time_s(S, dp, intra, INTRA_LATENCY_S, calls)
    if nvls_.any():
        t_node = np.where(nvls_, np.minimum(t_node, nvls_time_s(S, dp, intra, calls)), t_node)
    # across nodes: ring over the slowest link, tree, in-network reduction
    bus = np.minimum(intra, nic_share)
    t_ring = ring_time_s(S, dp, bus, inter_lat, calls)
    t_tree = tree_time_s(S, dp, dp / dpl, dpl, bus, inter_lat, calls)
    t_span = np.minimum(t_ring, t_tree)
    sharp = np.asarray(in_network, dtype=bool)
    if sharp.any():
        t_span = np.where(
            sharp, np.minimum(t_span, in_network_time_s(S, dpl, intra_nvls, nic_share, inter_lat, calls)), t_span
        )
    return np.asarray(np.where(spans, t_span, t_node)), via_fabric


def tensor_parallel_time_s(
    activation_bytes: ArrayLike,
    tensor_parallel: ArrayLike,
    layers_per_stage: ArrayLike,
    micro_batches: ArrayLike,
    recomputed_share: float,
    intra_bytes_s: ArrayLike,
) -> NDArray[np.float64]:
    """Megatron tensor parallelism's communication per step: 4 all-reduces of the layer's activations per layer
    and micro-batch (2 in the forward, 2 in the backward pass; Shoeybi et al. 2019), 2 more for a recomputed
    layer's forward pass (``recomputed_share`` of the layers), each a ring over the tensor-parallel group inside
    the node."""
    per = ring_allreduce_time_s(activation_bytes, tensor_parallel, intra_bytes_s, INTRA_LATENCY_S)
    collectives = 4.0 + 2.0 * float(recomputed_share)  # a recomputed layer's forward collectives run again
    return per * collectives * np.asarray(layers_per_stage) * np.asarray(micro_batches)


def exposed_p2p_time_s(
    p2p_one_stage_s: ArrayLike, stages: int, virtual: int, micro_batches: ArrayLike, overlap: bool = False
) -> NDArray[np.float64]:
    """Point-to-point time a pipeline stage waits on per step, with v model chunks per GPU. ``p2p_one_stage_s`` is
    the plain schedule's: each of the m micro-batches sends its activations forward and its gradients backward
    once (2 m transfers of tau = p2p_one_stage_s / (2 m)); with v chunks every micro-batch crosses v times as many
    stage boundaries: v x p2p_one_stage_s, all of it exposed where the sends and receives block.

    ``overlap`` (Megatron-Core ``overlap_p2p_comm``, which the interleaved schedule only supports: v > 1): each send
    and receive is posted asynchronously and waited on only when the next chunk needs it, a chunk's compute later,
    so a transfer is exposed only on the schedule's critical path -- the first micro-batch's forward through the
    p v - 1 chunk boundaries of the pipeline and the last one's backward through as many, 2 (p v - 1) transfers:
    (p v - 1) / m x p2p_one_stage_s, never more than the blocking schedule's v x p2p_one_stage_s."""
    p1 = np.asarray(p2p_one_stage_s, dtype=float)
    blocking = float(virtual) * p1
    if not overlap or virtual <= 1:
        return np.asarray(blocking)
    critical = (stages * virtual - 1.0) / np.asarray(micro_batches, dtype=float) * p1
    return np.asarray(np.minimum(critical, blocking))


def interleaved_pipeline_time_s(
    bubble_one_stage_s: ArrayLike,
    p2p_one_stage_s: ArrayLike,
    options: list[int],
    allowed: list[NDArray[np.bool_]] | None = None,
    stages: int = 1,
    micro_batches: ArrayLike = 1.0,
    p2p_overlap: bool = False,
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """(bubble + exposed point-to-point time, chosen v) of an interleaved 1F1B pipeline of ``stages`` stages and
    ``micro_batches`` per step: with v model chunks per GPU the bubble is 1/v of the plain schedule's and the
    point-to-point time ``exposed_p2p_time_s`` (v x the plain schedule's where transfers block; the critical path's
    only under ``p2p_overlap``); v is the fastest of ``options`` (the first on a tie) among those ``allowed`` (per
    option, where its extra activation memory still fits; the first option is always allowed)."""
    b1 = np.asarray(bubble_one_stage_s, dtype=float)
    p1 = np.asarray(p2p_one_stage_s, dtype=float)
    best = b1 / options[0] + exposed_p2p_time_s(p1, stages, options[0], micro_batches, p2p_overlap)
    chosen = np.full(best.shape, options[0], dtype=np.int64)
    for i, v in enumerate(options[1:], start=1):
        cand = b1 * (1.0 / v) + exposed_p2p_time_s(p1, stages, v, micro_batches, p2p_overlap)
        better = cand < best
        if allowed is not None:
            better &= allowed[i]
        best = np.where(better, cand, best)
        chosen = np.where(better, v, chosen)
    return best, chosen


def pipeline_bubble_fraction(stages: ArrayLike, micro_batches: ArrayLike) -> NDArray[np.float64]:
    """Idle share of a 1F1B pipeline step: (p-1)/(m+p-1)."""
    p = np.asarray(stages, dtype=float)
    m = np.asarray(micro_batches, dtype=float)
    return (p - 1.0) / (m + p - 1.0)


def all_to_all_time_s(bytes_per_gpu: ArrayLike, participants: ArrayLike, bytes_s: ArrayLike) -> NDArray[np.float64]:
    """All-to-all (recommender embedding exchange): each GPU sends (n-1)/n of its bytes to the others at its
    bandwidth; 0 for one participant."""
    n = np.asarray(participants, dtype=float)
    t = np.asarray(bytes_per_gpu, dtype=float) * (n - 1.0) / n / np.asarray(bytes_s, dtype=float)
    return np.where(n > 1, t, 0.0)


def exposed_gradient_sync_s(
    sync_s: ArrayLike, compute_s: ArrayLike, micro_batches: ArrayLike, overlap: float, buckets: ArrayLike = 1.0
) -> NDArray[np.float64]:
    """Gradient synchronisation left exposed after the backward pass of the last micro-batch hides what it can
    (bucketed DDP / Horovod tensor fusion / Megatron's overlapped gradient reduce: Li et al., VLDB 2020): the
    backward is 2/3 of the compute of one micro-batch and a share ``overlap`` of it runs beside the all-reduce of
    the buckets already complete; the last bucket is produced when the backward ends, so its all-reduce (1 / buckets
    of the whole) is always exposed."""
    sync = np.asarray(sync_s, dtype=float)
    hide = overlap * (2.0 / 3.0) / np.asarray(micro_batches, dtype=float) * np.asarray(compute_s, dtype=float)
    return np.asarray(np.maximum(sync - hide, np.minimum(sync, sync / np.asarray(buckets, dtype=float))))


def context_parallel_bytes(
    micro_batch: ArrayLike,
    sequence_length: float,
    hidden_size: float,
    heads: float,
    kv_heads: float | None,
    cp: int,
    tp: int = 1,
) -> NDArray[np.float64]:
    """Bytes one GPU receives per layer and micro-batch under context parallelism (Megatron-Core CP: KV
    all-gathered in a ring in the forward pass, KV again and their gradients reduce-scattered in the backward:
    docs/api-guide/context_parallel.md): 3 x (cp-1)/cp x K and V of the whole sequence for the GPU's heads
    (2 x s x b x d_kv x 2 bytes, d_kv = h x kv_heads / heads for grouped-query attention, over the tensor-parallel
    ranks that split the KV heads: Megatron gives each TP rank kv_heads / tp query groups, and TE's ring
    attention runs on that rank's [s/cp, b, heads/tp, d] -- replicated once tp exceeds kv_heads)."""
    if cp <= 1:
        return np.zeros_like(np.asarray(micro_batch, dtype=float))
    groups = float(kv_heads or heads)
    d_kv = hidden_size * groups / heads / min(float(tp), groups)
    kv = 2.0 * sequence_length * np.asarray(micro_batch, dtype=float) * d_kv * 2.0
    return np.asarray(3.0 * (cp - 1.0) / cp * kv)
