"""The step-time equation of one parallel layout, composed from the physics modules.

For a layout (tensor parallel t, pipeline p, context parallel c, data parallel d = G / (t p c), ZeRO stage,
recomputation) on a row
of configurations (server, node count, fabric) at power-cap slowdown x = 1 / throughput factor:

  step = max(t_gpu, t_data)                                                         (the data pipeline bounds it)
  t_gpu = t_compute                       (all three parts x x, a simplification for the last two)
                                          compute.attention_split_gemm_time_s
                                                                          FLOPs / (peak x efficiency), attention's
                                                                          score and context GEMMs at their own
                                                                          precision (compute.attention_precision)
                                        + compute.elementwise_time_s      activation bytes x 2 / HBM bandwidth
                                        + compute.layer_latency_time_s    layer passes x 150 us (estimate)
                                        + moe.fp8_cast_time_s             MoE in FP8: the casts of GEMM inputs and
                                                                          gradients over HBM
        + t_tensor_parallel               communication.tensor_parallel_time_s
        + t_context_parallel              communication.context_parallel_bytes / link bandwidth, less
                                          the attention GEMMs it overlaps (context_parallel_cover_s)
        + t_pipeline_bubble + t_p2p       communication.interleaved_pipeline_time_s   (p-1)/(v m) busy, and
                                          communication.exposed_p2p_time_s: v x p2p, or the critical path's
                                          transfers where the framework overlaps them (overlap_p2p_comm)
        + t_data_parallel_exposed         communication.exposed_gradient_sync_s       what backward cannot hide
                                          (once a step; every micro-batch under ZeRO-3, which re-gathers weights)
        + t_optimizer_step                compute.optimizer_step_time_s     memory-bound update
        + t_embedding_all_to_all          communication.all_to_all_time_s   recommender embeddings
        + t_moe_all_to_all                moe.expert_all_to_all_time_s      MoE dispatch/combine, 4 per MoE layer
                                          and micro-batch, less what the framework overlaps
        + t_framework_overhead            frameworks.yaml step_overhead_ms
  t_data = max(CPU preprocessing, storage reads) per node                  compute.data_pipeline_time_s
  memory per GPU = model state + activations + embeddings + workspace   memory.py; an interleaved pipeline
                   holds (v+1)p-1 chunks of L/(pv) layers in flight (interleave_activation_factor), and v is
                   chosen among the interleaves whose activations fit

Every term is one named function in its physics module, with its source there. This module only gathers
the hardware of the rows (``Rows``), evaluates the layout-dependent quantities per (server, nodes) row
(``layout_rows``, ``layout_terms``) and composes the step on (server, nodes, fabric) rows
(``step_terms``: its cap-independent part ``row_terms``, computed once per layout and row, combined at each cap
level by ``cap_terms``). The layout search (planner/physics/layouts.py) calls these functions and nothing else
computes a step time, so the search, the reported breakdown and every check see the same numbers.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from planner.data import FrameworkProfile, Layout, Workload
from planner.physics import communication as comm
from planner.physics import compute, memory, moe
from planner.physics.tables import row_classes

Arrays = dict[str, np.ndarray]


@dataclass(frozen=True)
class Rows:
    """The hardware and workload context of the distinct (server, node count) rows U of a space."""

    wl: Workload
    fw: FrameworkProfile
    global_batch: int | None  # a fixed global batch, or None for the workload's rule
    fixed_layout: bool  # a layout given by the caller (pipelines may then stay inside one node)
    g: np.ndarray  # GPUs per node
    G: np.ndarray  # GPUs
    N: np.ndarray  # nodes
    intra_bytes_s: np.ndarray  # achieved NVLink/PCIe bandwidth per GPU
    mfu: np.ndarray  # achievable MFU at a large micro-batch
    peak_tflops: np.ndarray  # dense peak of the precision the row computes in
    # attention's score and context GEMMs: the peak and achievable MFU of their own precision
    # (compute.attention_precision: BF16 in an FP8 or FP4 run unless FP8 attention is on; else the row's own)
    attention_peak_tflops: np.ndarray
    attention_mfu: np.ndarray
    cpu_cores: np.ndarray
    storage_bytes_s: np.ndarray
    gpu_memory_gb: np.ndarray
    memory_bandwidth_tbps: np.ndarray
    half_batch: float  # micro-batch at half kernel efficiency
    overlap: float  # share of the backward pass that can hide gradient communication
    grad_bytes_per_param: float  # bytes of a parameter (and of its gradient) as the GPUs compute it
    grad_reduce_bytes_per_param: float  # bytes of a gradient as the framework reduces it (fp32 in Megatron)
    fp8: np.ndarray  # the row trains in FP8 or FP4 (its GPU has it, and it was asked for): GEMM inputs kept in FP8
    # for the backward pass (taken for FP4 too: NVFP4 recipes re-quantize the weight-gradient inputs: no less kept)
    nvls: np.ndarray  # the node's NVSwitch reduces all-reduce data (NVLink SHARP)
    tp_overlap: float  # share of tensor-parallel communication hidden under GEMMs
    tensor_bytes: float = 2.0  # bytes of a weight or activation element as the GPUs compute (4 in fp32 / TF32)
    gemm_tokens_half: float = 0.0  # GEMM shape efficiency half-points (calibration.yaml)
    gemm_width_half: float = 0.0
    moe_width_half: float = moe.EXPERT_GEMM_WIDTH_HALF  # grouped-GEMM width half-point (calibration.yaml)
    moe_a2a_overlap: float = 0.0  # share of the MoE all-to-all hidden under compute (framework or calibration.yaml)

    @cached_property
    def embedding_gb(self) -> np.ndarray:
        """Embedding tables per GPU, GB (sharded over all GPUs; read by every layout: computed once)."""
        return np.asarray(self.wl.embedding_params * self.wl.embedding_bytes_per_param / self.G / 1e9)

    @property
    def t_overhead_s(self) -> float:
        """The framework's fixed overhead per step, seconds (frameworks.yaml step_overhead_ms)."""
        return self.fw.step_overhead_ms / 1000.0

    @property
    def layers(self) -> float:
        """The workload's layers (1 where it states none)."""
        return float(self.wl.layers or 1)


@dataclass(frozen=True)
class FabricRows:
    """The (server, nodes, fabric) rows R: their U row and the fabric as the collectives see it."""

    u: np.ndarray  # the (server, nodes) row of each R row
    node_bytes_s: np.ndarray  # achieved aggregate NIC bandwidth of a node
    latency_s: np.ndarray  # per-hop latency between nodes (wire + NCCL software)
    peer_bytes_s: np.ndarray  # per-GPU bandwidth to the GPUs of other nodes (or to peers in a node)
    in_network: np.ndarray  # the fabric's switches reduce all-reduce data (SHARP)


def stage_layers(wl: Workload, lay: Layout) -> float:
    """Transformer layers on the busiest pipeline stage, which sets the pace of the pipeline: ceil(L / p) where p
    does not divide L (Megatron's uneven first and last stages), and with a fixed interleave v the stage's v
    chunks of ceil(L / (p v)) layers each (a searched interleave only takes v that divide the stage's layers:
    ``virtual_divides``). L for workloads that do not state their layers or do not pipeline."""
    layers = float(wl.layers or 1)
    pp = lay.pipeline_parallel
    if pp <= 1 or not wl.layers:
        return layers
    v = lay.virtual_stages or 1
    return float(v * math.ceil(layers / (pp * v)))


def busiest_stage_share(wl: Workload, lay: Layout) -> float:
    """The busiest pipeline stage's layers relative to an even split (``stage_layers`` x p / L, 1 without a
    pipeline): its compute, activations, weights, optimizer state and gradients all scale with it (405B's 126
    layers on 16 stages: 8 x 16 / 126 = 1.016)."""
    if not wl.layers or lay.pipeline_parallel <= 1:
        return 1.0
    return stage_layers(wl, lay) * lay.pipeline_parallel / float(wl.layers)


def virtual_divides(wl: Workload, lay: Layout, v: int) -> bool:
    """An interleave of v chunks per stage is offered only where each chunk holds whole layers of the busiest
    stage (Megatron-Core assigns num_layers / (p v) layers per virtual stage)."""
    return not wl.layers or lay.pipeline_parallel <= 1 or stage_layers(wl, lay) % v == 0


def placeable_rows(rows: Rows, lay: Layout) -> np.ndarray:
    """The (server, nodes) rows the layout's parallel degrees can be placed on: tensor parallelism divides the
    GPUs of a node, tensor x context x pipeline degrees divide the GPUs, expert (x expert tensor) parallelism the
    GPUs of a pipeline stage, and a searched pipeline spans nodes (``pipeline_placeable``). It depends on the
    layout's degrees only (``placement_key``); ``layout_rows`` adds the batch rules."""
    gU, GU, NU = rows.g, rows.G, rows.N
    tp, pp, cp = lay.tensor_parallel, lay.pipeline_parallel, lay.context_parallel
    valid = (gU % tp == 0) & (GU % (tp * cp * pp) == 0)
    if lay.expert_parallel * lay.expert_tensor_parallel > 1:  # EP x ETP folds into a stage's GPUs (TP x CP x DP)
        valid &= (GU // pp) % (lay.expert_parallel * lay.expert_tensor_parallel) == 0
    if not rows.fixed_layout:
        # candidate pipelines span nodes, one stage group per node -- or per 8-GPU board of a node whose NVLink
        # domain is larger (a GB200 NVL72 rack holds up to 9 stage groups)
        valid &= pipeline_placeable(pp, gU, NU)
    return np.asarray(valid)


def placement_key(lay: Layout) -> tuple[int, int, int, int]:
    """The layout fields ``placeable_rows`` reads: layouts with one key are placeable on the same rows."""
    experts = lay.expert_parallel * lay.expert_tensor_parallel
    return (lay.tensor_parallel, lay.context_parallel, lay.pipeline_parallel, experts)


def sliced_rows(rows: Rows, u: np.ndarray) -> Rows:
    """``rows`` restricted to the (server, nodes) rows u: every per-row array taken at u."""
    n = len(rows.N)
    taken = {
        f.name: getattr(rows, f.name)[u]
        for f in dataclasses.fields(rows)
        if isinstance(getattr(rows, f.name), np.ndarray) and getattr(rows, f.name).shape[:1] == (n,)
    }
    return dataclasses.replace(rows, **taken)


def distinct_rows(
    rows: Rows, fab: FabricRows, kind: np.ndarray, server: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rows whose step inputs are equal, found once so the search computes each only once: (class of each U row,
    one U row of each class, class of each R row, one R row of each class). Two U rows are one class where every
    per-row array of ``Rows`` is equal and so is ``kind`` (a caller's label that must also match: the GPU, whose
    power curve sets the cap's slowdown); two R rows where their U classes and every array of ``FabricRows`` are.
    Servers that differ only in what the step does not read (price, host power, a vendor's name) share a class:
    a catalog of many vendors' boards of one GPU searches each board's layouts once.

    ``server`` (the server of each U row), where the U rows are every server at the same node counts in the same
    order (a grid space): servers are compared whole, all their rows at once (a sort of the servers, not of the
    rows); two rows are then one class where their servers are equal at every node count, which for the grid is
    the same partition."""
    n_u = len(rows.N)
    per_u = [  # every per-row field ``sliced_rows`` slices, whatever its shape
        np.asarray(v, dtype=float).reshape(n_u, -1)
        for f in dataclasses.fields(rows)
        if isinstance(v := getattr(rows, f.name), np.ndarray) and v.shape[:1] == (n_u,)
    ]
    table = np.column_stack([np.asarray(kind, dtype=float), *per_u])
    blocks = server_blocks(server, rows.N) if server is not None else None
    if blocks is not None:
        servers, per = blocks
        rep_s, class_s = row_classes(table.reshape(servers, -1))
        class_u = (class_s[:, None] * per + np.arange(per)).ravel()
        rep_u = (rep_s[:, None] * per + np.arange(per)).ravel()
    else:
        rep_u, class_u = row_classes(table)
    per_r = [fab.node_bytes_s, fab.latency_s, fab.peer_bytes_s, fab.in_network]
    rep_r, class_r = row_classes(
        np.column_stack([class_u[fab.u].astype(float), *(np.asarray(a, dtype=float) for a in per_r)])
    )
    return class_u, rep_u, class_r, rep_r


def server_blocks(server: np.ndarray, nodes: np.ndarray) -> tuple[int, int] | None:
    """(servers, rows per server) where the rows are consecutive blocks, one per server, each at the same node
    counts in the same order; None otherwise."""
    n = len(server)
    starts = np.flatnonzero(np.r_[True, server[1:] != server[:-1]])
    per = n // len(starts) if len(starts) else 0
    if per == 0 or per * len(starts) != n or len(np.unique(server[starts])) != len(starts):
        return None
    grid = nodes.reshape(len(starts), per)
    if not (grid == grid[0]).all() or not (server.reshape(len(starts), per) == server[starts][:, None]).all():
        return None
    return len(starts), per


def layout_rows(rows: Rows, lay: Layout, placed: bool = False) -> Arrays:
    """Validity, data parallelism, global batch, micro-batch, memory per GPU and the convergence factor of a
    layout on the (server, nodes) rows (``placed``: rows the layout's degrees are known to be placeable on, the
    search's subsets, where ``placeable_rows`` need not run again)."""
    wl = rows.wl
    GU = rows.G
    tp, pp, cp = lay.tensor_parallel, lay.pipeline_parallel, lay.context_parallel
    valid = np.ones(len(GU), dtype=bool) if placed else placeable_rows(rows, lay)
    dp = np.maximum(GU // (tp * cp * pp), 1)
    # the batch is rounded up to whole micro-batches per replica, independently of accumulation (which
    # may only split a replica's batch evenly), so every layout of a row trains the same batch
    fixed_mb = lay.micro_batch or wl.micro_batch
    unit = dp * (fixed_mb or 1)
    per_replica_min = max(wl.min_samples_per_gpu, pp * (fixed_mb or 1))
    b0 = (
        rows.global_batch
        if rows.global_batch is not None
        else np.maximum(wl.default_global_batch, dp * per_replica_min)
    )
    B = (-(-np.asarray(b0, dtype=np.int64) // unit)) * unit
    if rows.global_batch is None and wl.max_global_batch:
        # the largest batch with a published convergence point: beyond it, more replicas train smaller
        # micro-batches (as MLPerf's 4,320-GPU ResNet-50 run did, 15 images per GPU) -- whole micro-batches per
        # replica, at least one
        cap = np.maximum((int(wl.max_global_batch) // unit) * unit, unit)
        B = np.where(wl.max_global_batch < B, cap, B)
        valid &= wl.max_global_batch * (1.0 + 1e-9) >= B  # one sample per replica already exceeds it
    if fixed_mb:
        mb = np.full(len(dp), float(fixed_mb))
    else:
        mb = B / dp / lay.accumulation
        valid &= (B // dp) % lay.accumulation == 0
    valid &= mb >= 1.0 - 1e-9
    if rows.global_batch is None and wl.max_global_batch_tokens and wl.sequence_length:
        # the recipe's largest batch: data parallelism that would need a larger one is not offered
        valid &= B * wl.sequence_length <= wl.max_global_batch_tokens * (1.0 + 1e-9)
    # Megatron's formulas count 16-bit activations: fp32 / TF32 training keeps 4-byte ones
    act = activation_memory_gb(wl, lay, mb, rows.fp8) / cp * (rows.tensor_bytes / 2.0)
    if lay.virtual_stages and lay.virtual_stages > 1 and pp > 1:  # a fixed interleave holds more in flight
        act = act * interleave_activation_factor(pp, lay.virtual_stages, B / dp / mb)
    state = (
        moe_model_state_gb(rows, lay, dp)
        if wl.moe is not None
        else memory.model_state_gb(
            wl.params,
            wl.trainable,
            wl.optimizer_bytes_per_param,
            tp * pp,
            dp * cp,
            lay.zero_stage,
            rows.grad_reduce_bytes_per_param,
            rows.tensor_bytes,
            memory.frozen_weight_bytes_per_param(
                rows.tensor_bytes, rows.fp8, wl.fp8_frozen_weights, wl.frozen_bytes_per_param
            ),
        )
    )
    if wl.moe is not None and lay.expert_parallel > 1:
        act = act + moe.dispatcher_buffer_gb(moe_tokens_per_gpu(wl, lay, mb), wl.moe.top_k, float(wl.hidden_size or 0))
    # weights are split by TP x PP (the busiest stage holds ceil(L / p) layers' worth); context-parallel ranks hold
    # replicas and share the (distributed) optimizer state with the data-parallel ones (Megatron shards it over DP x CP)
    mem = busiest_stage_share(wl, lay) * state + act + rows.embedding_gb + memory.WORKSPACE_GB
    return {
        "valid": valid,
        # trains the batch asked for (a fixed global batch is only rounded up when no layout of the row can keep it)
        "exact_batch": b0 == B if rows.global_batch is not None else np.ones(len(dp), dtype=bool),
        "dp": dp,
        "B": B,
        "mb": mb,
        "mem": mem,  # with the searched interleave, at v = 1 (the least; interleaved_memory_gb adds the rest)
        "act": act,  # its activation part
        "sf_per_B": compute.samples_factor(wl, B) / B,
    }


def moe_model_state_gb(rows: Rows, lay: Layout, dp: np.ndarray) -> np.ndarray:
    """Model state per GPU of an MoE workload (parallel folding, Megatron-Core README @d98e8a64; moe.md section
    2.6): the routed experts' weights, gradients and optimizer state split by EP x ETP x PP and their optimizer
    state sharded over the expert data-parallel ranks (TP x CP x DP / (EP x ETP)); the dense parameters
    (attention, shared experts, dense FFNs, embeddings) split by TP x PP, their optimizer state sharded over DP x
    CP."""
    wl = rows.wl
    tp, pp, cp = lay.tensor_parallel, lay.pipeline_parallel, lay.context_parallel
    ep = lay.expert_parallel * lay.expert_tensor_parallel  # the GPUs one MoE layer's experts are split over
    experts = moe.expert_params(wl)
    dense = max(wl.params - experts, 0.0)
    common = (rows.grad_reduce_bytes_per_param, rows.tensor_bytes)
    opt = wl.optimizer_bytes_per_param
    dense_gb = memory.model_state_gb(dense, dense, opt, tp * pp, dp * cp, lay.zero_stage, *common)
    expert_gb = memory.model_state_gb(experts, experts, opt, ep * pp, dp * cp * tp / ep, lay.zero_stage, *common)
    return np.asarray(dense_gb + expert_gb)


def moe_tokens_per_gpu(wl: Workload, lay: Layout, mb: np.ndarray) -> np.ndarray:
    """Tokens of a micro-batch entering a GPU's MoE layers: micro-batch x sequence / (TP x CP) (sequence-parallel
    tokens; moe.md section 2.1's T)."""
    return np.asarray(mb * float(wl.sequence_length or 1) / (lay.tensor_parallel * lay.context_parallel))


def moe_layers_on_stage(wl: Workload, lay: Layout) -> float:
    """MoE layers on the busiest pipeline stage: its layers x the model's MoE share (MTP layers spread with them)."""
    _, n_moe = moe.moe_layer_counts(wl)
    return stage_layers(wl, lay) * n_moe / float(wl.layers or 1)


def moe_compute_factor(rows: Rows, lay: Layout, mb: np.ndarray) -> np.ndarray:
    """GEMM time of an MoE model relative to all its FLOPs at the dense efficiency: the dense share as is, the
    routed experts' share (moe.expert_flops_share) / their grouped-GEMM efficiency at the expert FFN width per GPU
    (F / ETP) and the tokens each local expert receives x the busiest EP rank's load (moe.load_imbalance_factor).
    1 for a dense workload."""
    wl = rows.wl
    if wl.moe is None:
        return np.ones(len(np.atleast_1d(mb)))
    share = moe.expert_flops_share(wl)
    etp = lay.expert_tensor_parallel
    tokens = moe.tokens_per_local_expert(
        moe_tokens_per_gpu(wl, lay, mb), wl.moe.top_k, lay.expert_parallel, wl.moe.routed_experts, etp
    )
    eff = moe.grouped_gemm_efficiency(tokens, float(wl.moe.expert_ffn_hidden) / etp, rows.moe_width_half)
    return np.asarray(1.0 - share + share * moe.load_imbalance_factor(wl.moe.force_load_balance) / eff)


def interleave_activation_factor(pp: int, virtual: ArrayLike, micro_batches: ArrayLike) -> np.ndarray:
    """Activations the first pipeline rank holds under Megatron's interleaved 1F1B schedule, relative to the
    plain schedule's one micro-batch of L layers: its warm-up runs 2 (p - 1) + (v - 1) p model chunks ahead, so
    (v + 1) p - 1 chunks of L / (p v) layers are in flight -- L (1 + (p - 1) / (p v)) -- at most all m v chunks
    of the step (Megatron-Core schedules.py, interleaved warm-up count; Korthikanti et al. 2022 section 4.2.3).
    1 for v = 1."""
    v = np.asarray(virtual, dtype=float)
    m = np.asarray(micro_batches, dtype=float)
    inflight = np.minimum((v + 1.0) * pp - 1.0, np.maximum(m * v, 1.0))
    return np.asarray(np.where(v > 1, np.maximum(inflight / (pp * v), 1.0), 1.0))


def interleaved_memory_gb(lay: Layout, d: Arrays, u: np.ndarray, virtual: np.ndarray) -> np.ndarray:
    """Memory per GPU of the layout on the rows u at the chosen interleave ``virtual``: the v = 1 memory plus the
    activations the extra chunks in flight hold (nothing more where the layout fixed v: already counted)."""
    if lay.pipeline_parallel == 1 or lay.virtual_stages is not None:
        return np.asarray(d["mem"][u])
    m = d["B"][u] / d["dp"][u] / d["mb"][u]
    extra = interleave_activation_factor(lay.pipeline_parallel, virtual, m) - 1.0
    return np.asarray(d["mem"][u] + d["act"][u] * extra)


def interleave_fits(rows: Rows, lay: Layout, d: Arrays, v: int) -> np.ndarray:
    """Per (server, nodes) row, whether the layout fits GPU memory at interleave v (``interleaved_memory_gb``);
    computed once per layout and v and kept in ``d``, the layout's rows."""
    key = f"fits_v{v}"
    if key not in d:
        u = np.arange(len(d["mem"]))
        d[key] = memory.fits(interleaved_memory_gb(lay, d, u, np.full(len(u), v)), rows.gpu_memory_gb)
    return d[key]


def pipeline_placeable(pp: int, gpus_per_node: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """Where the search places a pipeline of pp stages: across nodes (pp <= nodes), or -- on nodes whose NVLink
    domain is larger than an 8-GPU board (a GB200 NVL72 rack) -- at most one stage per board (pp <= nodes x g / 8).
    A stage may then straddle two such nodes (9 stages on 8 racks); the model still prices every stage boundary
    at the NICs' bandwidth and shares a node's NICs among the data-parallel groups it hosts, an approximation
    there."""
    g = np.asarray(gpus_per_node)
    n = np.asarray(nodes)
    return np.asarray((pp == 1) | (pp <= n * np.maximum(g // 8, 1)))


def recomputed_share(wl: Workload, lay: Layout) -> float:
    """Share of the busiest stage's layers recomputed in full, whose forward pass (and its tensor-parallel
    collectives) runs twice: 1 under full recomputation; ceil(L_stage / 2) / L_stage under block recomputation
    (Megatron-LM --recompute-method block --recompute-num-layers N recomputes the first N layers of each pipeline
    stage and stores the rest; here N is half, rounded up); 0 otherwise (selective recomputation re-runs only the
    attention scores: compute.recompute_flops_factor)."""
    if lay.recompute == "full":
        return 1.0
    if lay.recompute != "block":
        return 0.0
    layers = stage_layers(wl, lay)
    return float(math.ceil(layers / 2.0) / layers)


def activation_memory_gb(
    wl: Workload, lay: Layout, micro_batch: np.ndarray, fp8: np.ndarray | bool = False
) -> np.ndarray:
    """Activations per GPU: Megatron's per-layer formula for transformers that state their attention heads
    (GEMM inputs kept in FP8 when training in FP8; a frozen base's linear layers without adapters keeping no input,
    memory.frozen_linear_input_sbh), else the workload's bytes per sample x micro-batch / TP (x
    the kept share under recomputation). Block recomputation keeps a fraction f of the layers at the full
    recomputation's (their input only) and the rest whole (``recomputed_share``)."""
    if lay.recompute == "block":
        f = recomputed_share(wl, lay)
        stored = activation_memory_gb(wl, lay.model_copy(update={"recompute": "none"}), micro_batch, fp8)
        inputs_only = activation_memory_gb(wl, lay.model_copy(update={"recompute": "full"}), micro_batch, fp8)
        return np.asarray((1.0 - f) * stored + f * inputs_only)
    if wl.moe is not None:
        return moe_activation_gb(wl, lay, micro_batch, stage_layers(wl, lay) * lay.pipeline_parallel, lay.recompute)
    if wl.attention_heads and wl.hidden_size and wl.sequence_length and wl.layers:
        return memory.transformer_activation_gb(
            wl.sequence_length,
            wl.hidden_size,
            wl.attention_heads,
            stage_layers(wl, lay) * lay.pipeline_parallel,  # p micro-batches of the first stage's layers
            micro_batch,
            lay.tensor_parallel,
            lay.sequence_parallel,
            lay.recompute,
            wl.flash_attention,
            fp8,
            wl.adapter_linears,
            wl.fp8_activation_function_input,
        )
    kept = wl.recompute_activation_fraction if lay.recompute == "full" else 1.0
    return memory.activation_gb(wl.activation_bytes_per_sample, micro_batch, lay.tensor_parallel, kept)


def moe_activation_gb(wl: Workload, lay: Layout, micro_batch: np.ndarray, layers: float, recompute: str) -> np.ndarray:
    """Activations per GPU of an MoE transformer for ``layers`` layers of one micro-batch, GB: the MoE and dense
    layers' bytes per token (moe.moe_activation_bytes_per_token) in the model's proportion, split by TP with
    sequence parallelism (expert parallelism does not divide activations: moe.md section 2.6); the layer input
    only (2 s b h, / TP with sequence parallelism) under full recomputation. Selective recomputation keeps all
    (FlashAttention stores no scores)."""
    tokens = np.asarray(micro_batch, dtype=float) * float(wl.sequence_length or 1)
    split = float(lay.tensor_parallel) if lay.sequence_parallel else 1.0
    if recompute == "full":
        return np.asarray(2.0 * tokens * float(wl.hidden_size or 0) * layers / split / 1e9)
    per_moe, per_dense = moe.moe_activation_bytes_per_token(wl)
    dense, n_moe = moe.moe_layer_counts(wl)
    per_layer = (per_moe * n_moe + per_dense * dense) / (n_moe + dense)
    return np.asarray(per_layer * tokens * layers / split / 1e9)


def kernel_efficiency(rows: Rows, lay: Layout, mb: np.ndarray, mfu: np.ndarray | None = None) -> np.ndarray:
    """Achieved share of peak of the layout's kernels: the achievable MFU (``mfu``, default the row's; attention's
    GEMMs pass ``rows.attention_mfu``) times, for LLMs, the efficiency of their GEMMs at the per-GPU shape (tokens
    of a micro-batch on the GPU x hidden / TP), else the small micro-batch penalty mb / (mb + half)."""
    wl = rows.wl
    mfu = rows.mfu if mfu is None else mfu
    if wl.family == "llm" and wl.hidden_size and wl.sequence_length:
        shape = compute.gemm_shape_efficiency(
            mb * wl.sequence_length / lay.context_parallel,
            wl.hidden_size / lay.tensor_parallel,
            rows.gemm_tokens_half,
            rows.gemm_width_half,
        )
        return np.asarray(mfu * shape)
    return compute.kernel_efficiency(mfu, mb, rows.half_batch)


def recompute_factor(wl: Workload, lay: Layout) -> float:
    """FLOPs with recomputation / model FLOPs of the layout (compute.recompute_flops_factor); block recomputation
    pays the full recomputation's extra forward pass on its fraction of the layers only."""
    args = (
        float(wl.sequence_length or 1),
        float(wl.hidden_size or 0),
        wl.flash_attention,
        compute.forward_flops_share(wl),
    )
    if lay.recompute == "block":
        return 1.0 + recomputed_share(wl, lay) * (compute.recompute_flops_factor("full", *args) - 1.0)
    return compute.recompute_flops_factor(lay.recompute, *args)


def compute_full_clock_s(rows: Rows, lay: Layout, d: Arrays) -> np.ndarray:
    """Compute time of one step on one GPU at full clock: its FLOPs (with recomputation) / (peak x the layout's
    kernel efficiency), attention's score and context GEMMs at their own precision's peak and MFU
    (compute.attention_split_gemm_time_s, ``attention_recompute_share`` of the FLOPs), plus the memory-bound
    kernels between the GEMMs (``activation_bytes_per_step`` over HBM) and the kernel latency floor of its
    transformer layer passes (the busiest stage's layers x micro-batches). The busiest pipeline stage
    (``stage_layers``) sets the pace. A power cap slows all three alike (a simplification: memory-bound kernels
    lose less to a cap than GEMMs). Kept in ``d`` (the layout's rows) once computed, with the model FLOPs'
    attention GEMM time ``t_attention1_model`` (what context parallelism hides its KV ring behind)."""
    if "t_comp1" in d:
        return d["t_comp1"]
    wl = rows.wl
    extra = recompute_factor(wl, lay)
    uneven = busiest_stage_share(wl, lay)  # the busiest stage's share of the layers (ceil(L / p) of L) sets the pace
    model_flops_gpu = d["B"] * wl.train_flops_per_sample / rows.G * uneven
    flops_gpu = model_flops_gpu * extra
    # attention's share of the FLOPs timed at the dense efficiency: an MoE's expert factor scales the rest only
    share: float | np.ndarray = attention_recompute_share(wl, lay)
    if wl.moe is not None:
        factor = moe_compute_factor(rows, lay, d["mb"])
        flops_gpu = flops_gpu * factor
        share = share / factor
    efficiency = kernel_efficiency(rows, lay, d["mb"])
    attention_efficiency = kernel_efficiency(rows, lay, d["mb"], rows.attention_mfu)
    t_gemm = compute.attention_split_gemm_time_s(
        flops_gpu, share, rows.peak_tflops, efficiency, rows.attention_peak_tflops, attention_efficiency
    )
    d["t_attention1_model"] = compute.compute_time_s(
        model_flops_gpu * attention_share(wl), rows.attention_peak_tflops, attention_efficiency, 1.0
    )
    t_elementwise = compute.elementwise_time_s(
        activation_bytes_per_step(wl, lay, d) * extra * (rows.tensor_bytes / 2.0), rows.memory_bandwidth_tbps
    )
    layer_passes = (
        stage_layers(wl, lay) * d["B"] / d["dp"] / d["mb"] * extra
        if wl.hidden_size and wl.sequence_length and wl.layers
        else np.zeros(len(d["dp"]))
    )
    d["t_comp1"] = t_gemm + t_elementwise + compute.layer_latency_time_s(layer_passes)
    if wl.moe is not None:  # the FP8 casts of its GEMM inputs and gradients, memory-bound (moe.fp8_cast_time_s)
        tokens = moe_tokens_per_gpu(wl, lay, d["mb"]) * d["B"] / d["dp"] / d["mb"]
        elements = tokens * moe.fp8_cast_elements_per_token(wl, stage_layers(wl, lay)) * extra
        d["t_comp1"] = d["t_comp1"] + np.where(rows.fp8, moe.fp8_cast_time_s(elements, rows.memory_bandwidth_tbps), 0.0)
    return d["t_comp1"]


def activation_bytes_per_step(wl: Workload, lay: Layout, d: Arrays) -> np.ndarray:
    """Activation bytes one GPU produces in a step, for the memory-bound kernels' time: Megatron's per-layer
    bytes (no recompute; replicated outside the tensor-parallel regions without sequence parallelism) of the
    GPU's layers (the busiest stage's: ``stage_layers``), of its share of the sequence (1 / CP), for every
    micro-batch of the step. Workloads that do not state their transformer shape (CNNs, BERT as shipped,
    recommenders) move their stated activation bytes per sample (the figure their memory uses) for each sample
    of the replica's batch, split over its tensor- and pipeline-parallel GPUs: their batch-norm, activation,
    pooling and residual kernels are memory-bound as a transformer's are (He et al. 2016's ResNet-50 has 11.1M
    batch-normalised elements per 224 x 224 image, each read and written in both passes)."""
    if wl.moe is not None:
        per_mb = moe_activation_gb(wl, lay, d["mb"], stage_layers(wl, lay), "none")
        return np.asarray(per_mb * 1e9 / lay.context_parallel * (d["B"] / d["dp"] / d["mb"]))
    if not (wl.attention_heads and wl.hidden_size and wl.sequence_length and wl.layers):
        samples = d["B"] / d["dp"]
        model_parallel = lay.tensor_parallel * lay.pipeline_parallel * lay.context_parallel
        share = busiest_stage_share(wl, lay)
        return np.asarray(wl.activation_bytes_per_sample * samples / model_parallel * share, dtype=float)
    per_micro_batch = memory.transformer_activation_gb(
        wl.sequence_length,
        wl.hidden_size,
        wl.attention_heads,
        stage_layers(wl, lay),
        d["mb"],
        lay.tensor_parallel,
        lay.sequence_parallel,
        "none",
        wl.flash_attention,
    )
    micro_batches = d["B"] / d["dp"] / d["mb"]
    return np.asarray(per_micro_batch * 1e9 / lay.context_parallel * micro_batches)


def attention_share(wl: Workload) -> float:
    """Share of a transformer's training FLOPs in attention's two sequence-length GEMMs (scores and context,
    12 s h per token and layer: compute.attention_flops_per_sample): the FLOPs that run at attention's own
    precision (compute.attention_precision) and that context-parallel KV exchange hides behind."""
    if not (wl.hidden_size and wl.sequence_length and wl.layers):
        return 0.0
    flops = compute.attention_flops_per_sample(wl.sequence_length, wl.hidden_size, wl.layers)
    return float(min(flops / wl.train_flops_per_sample, 1.0))


def attention_recompute_share(wl: Workload, lay: Layout) -> float:
    """Share of the step's FLOPs with recomputation (``recompute_factor`` x the model FLOPs) in attention's score
    and context GEMMs: the model FLOPs' share a (``attention_share``), plus what recomputation runs of them again
    -- under full or block recomputation the attention forward pass of the recomputed layers, a third of a
    (4 of the 12 s h per token and layer: Narayanan et al. 2021, eq. 3) x ``recomputed_share``; under selective
    recomputation all of its extra FLOPs (it re-runs the attention scores and context only: Korthikanti et al.
    2022) -- over the recompute factor. a where nothing is recomputed."""
    a = attention_share(wl)
    extra = recompute_factor(wl, lay)
    again = a / 3.0 * recomputed_share(wl, lay) if lay.recompute in ("full", "block") else extra - 1.0
    return float(min((a + again) / extra, 1.0))


def context_parallel_cover_s(t_attention_model_s: np.ndarray, cp: int) -> np.ndarray:
    """Attention time that hides the context-parallel KV ring (Megatron-Core / Transformer Engine ring attention
    sends the next KV block while attention runs on this one): cp - 1 of the cp blocks overlap a transfer, so
    (cp - 1) / cp of the attention GEMMs' time -- the model FLOPs' attention GEMMs at their own precision, at full
    clock (``t_attention1_model`` of ``compute_full_clock_s``). Independent of the cap and of recomputation (a
    conservative choice that keeps the step monotone in both, which the search's bounds rely on)."""
    if cp <= 1:
        return np.zeros_like(np.asarray(t_attention_model_s, dtype=float))
    return np.asarray((cp - 1.0) / cp * np.asarray(t_attention_model_s, dtype=float))


def compute_lower_bound(rows: Rows, lay: Layout, d: Arrays, virtual_max: int) -> np.ndarray:
    """A cheaper lower bound of the step than ``step_lower_bound``, before any communication term is computed:
    compute at full clock, its share of the least pipeline bubble and the fixed overhead."""
    t = compute_full_clock_s(rows, lay, d)
    pp = lay.pipeline_parallel
    m = d["B"] / d["dp"] / d["mb"]
    bubble = t / m * (pp - 1) / virtual_max if pp > 1 else 0.0
    return np.asarray(t + bubble + rows.t_overhead_s)


def layout_terms(rows: Rows, lay: Layout, d: Arrays) -> Arrays:
    """The cap- and fabric-independent step terms of a layout on the (server, nodes) rows."""
    wl = rows.wl
    tp, pp, cp = lay.tensor_parallel, lay.pipeline_parallel, lay.context_parallel
    dp, B, mb = d["dp"], d["B"], d["mb"]
    m = B / dp / mb  # micro-batches per step per replica
    t_comp1 = compute_full_clock_s(rows, lay, d)
    seq = float(wl.sequence_length or 1)
    act_msg = mb * seq / cp * float(wl.hidden_size or 0) * rows.tensor_bytes  # a GPU's activations of a micro-batch
    # inside an NVSwitch node with NVLink SHARP, NCCL reduces the TP group's collectives in the switch (NVLS)
    tp_bytes_s = rows.intra_bytes_s * np.where(rows.nvls, comm.nvls_gain(np.full(len(dp), tp)), 1.0)
    t_tp = (
        comm.tensor_parallel_time_s(act_msg, tp, stage_layers(wl, lay), m, recomputed_share(wl, lay), tp_bytes_s)
        * (1.0 - rows.tp_overlap)
        if tp > 1
        else np.zeros(len(dp))
    )
    uneven = busiest_stage_share(wl, lay)  # the busiest stage's parameters set the pace of its collectives
    grad_bytes = uneven * gradient_sync_bytes(
        wl.trainable, wl.params, rows.grad_reduce_bytes_per_param, rows.grad_bytes_per_param, lay.zero_stage, tp * pp
    )
    # ZeRO-3 / FSDP gathers the weights again for every micro-batch's forward and backward and reduce-scatters each
    # micro-batch's gradients (DeepSpeed stage 3; FSDP outside no_sync, which would keep whole gradients): the
    # synchronisation repeats m times a step, and each micro-batch's backward hides its own share
    sync_rounds = m if lay.zero_stage >= 3 else np.ones(len(dp))
    owned = uneven * wl.trainable / (tp * pp) / (dp * cp if lay.zero_stage >= 1 else 1)
    kv_bytes = (
        comm.context_parallel_bytes(mb, seq, wl.hidden_size or 0, wl.attention_heads or 1, wl.kv_heads, cp, tp)
        * stage_layers(wl, lay)
        * m
        * (rows.tensor_bytes / 2.0)
    )
    cp_cover = context_parallel_cover_s(d["t_attention1_model"], cp)
    moe_terms = moe_layout_terms(rows, lay, d, m) if wl.moe is not None else {}
    if wl.moe is not None:  # the dense part's gradients and optimizer shard only (the experts': moe_layout_terms)
        experts = moe.expert_params(wl)
        grad_bytes = uneven * gradient_sync_bytes(
            wl.trainable - experts,
            wl.params - experts,
            rows.grad_reduce_bytes_per_param,
            rows.grad_bytes_per_param,
            lay.zero_stage,
            tp * pp,
        )
        owned = uneven * (wl.trainable - experts) / (tp * pp) / (dp * cp if lay.zero_stage >= 1 else 1) + moe_terms.pop(
            "owned"
        )
    return {
        **moe_terms,
        "m": m,
        "t_comp1": t_comp1,
        "act": act_msg,
        "t_tp": t_tp,
        "grad_bytes": grad_bytes * sync_rounds,
        "sync_rounds": sync_rounds,
        "sync_ranks": dp * cp,  # gradients are reduced over data- and context-parallel ranks
        "kv_bytes": np.asarray(kv_bytes) * np.ones(len(dp)),
        "cp_cover": np.asarray(cp_cover) * np.ones(len(dp)),
        # buckets of a round as a fraction (bytes / bucket size, at least 1): the round's last bucket is a whole
        # bucket, so the exposed floor (sync / buckets) is one bucket's time and never falls as the bytes grow
        "buckets": np.maximum(grad_bytes / (rows.fw.bucket_mb * 1e6), 1.0) * np.ones(len(dp)),
        "dp_local": np.maximum(np.minimum(dp * cp, rows.g // tp), 1),
        "t_opt": compute.optimizer_step_time_s(owned, wl.optimizer_bytes_per_param, rows.memory_bandwidth_tbps),
        "a2a_bytes": B / rows.G * wl.embedding_exchange_bytes_per_sample,
        "t_data": compute.data_pipeline_time_s(
            B / rows.N, wl.cpu_core_ms_per_sample, rows.cpu_cores, wl.data_bytes_per_sample, rows.storage_bytes_s
        ),
    }


def moe_layout_terms(rows: Rows, lay: Layout, d: Arrays, m: np.ndarray) -> Arrays:
    """The MoE terms of a layout on the (server, nodes) rows: the bytes of one dispatch/combine per GPU and the
    calls per step (moe.all_to_all_bytes, moe.all_to_all_calls), the routed experts' gradient bytes, reduced over
    the expert data-parallel ranks (TP x CP x DP / (EP x ETP), of which ``edp_local`` share a node: ETP and EP
    ranks are consecutive, Megatron-Core's expert rank order), and the expert parameters each GPU updates
    (``owned``)."""
    wl = rows.wl
    moe_ = wl.moe
    assert moe_ is not None
    tp, pp, cp = lay.tensor_parallel, lay.pipeline_parallel, lay.context_parallel
    ep = lay.expert_parallel * lay.expert_tensor_parallel  # the GPUs one MoE layer's experts are split over
    uneven = busiest_stage_share(wl, lay)
    experts = moe.expert_params(wl)
    edp = np.maximum(d["dp"] * cp * tp // ep, 1)  # rows where EP x ETP does not divide are invalid (layout_rows)
    ones = np.ones(len(d["dp"]))
    return {
        "moe_a2a_bytes": moe.all_to_all_bytes(moe_tokens_per_gpu(wl, lay, d["mb"]), moe_.top_k, wl.hidden_size or 0)
        * ones,
        "moe_a2a_calls": moe.all_to_all_calls(moe_layers_on_stage(wl, lay), m, recomputed_share(wl, lay)) * ones,
        "grad_bytes_expert": uneven
        * gradient_sync_bytes(
            experts, experts, rows.grad_reduce_bytes_per_param, rows.grad_bytes_per_param, lay.zero_stage, ep * pp
        )
        * ones,
        "edp": edp,
        "edp_local": np.maximum(np.minimum(edp, rows.g // np.minimum(ep, rows.g)), 1),
        "owned": uneven * experts / (ep * pp) / (edp if lay.zero_stage >= 1 else 1),
    }


def gradient_sync_bytes(
    trainable: float, params: float, reduce_bytes: float, param_bytes: float, zero_stage: int, model_parallel: int
) -> float:
    """Bytes one GPU synchronises per step over the data-parallel group, in all-reduce equivalents (an all-reduce
    = a reduce-scatter + an all-gather), with gradients reduced at ``reduce_bytes`` and parameters gathered at
    ``param_bytes`` per parameter, for the parameters of its tensor x pipeline shard:

      plain data parallel      an all-reduce of the trainable gradients                 trainable x r
      ZeRO-1/2 (distributed    a reduce-scatter of them and an all-gather of the        trainable x (r + w) / 2
      optimizer)               updated parameters
      ZeRO-3 / FSDP            the reduce-scatter and an all-gather of every weight     trainable x r / 2 + params x w
                               in the forward and again in the backward pass, frozen
                               weights included (LoRA on FSDP gathers the whole base model)

    With r = w this is the all-reduce for stages 0-2 and 1.5 x it for stage 3 when everything trains."""
    r, w = reduce_bytes / model_parallel, param_bytes / model_parallel
    if zero_stage >= 3:
        return 0.5 * trainable * r + 1.0 * params * w
    if zero_stage >= 1:
        return 0.5 * trainable * (r + w)
    return trainable * r


def step_lower_bound(rows: Rows, lay: Layout, su: Arrays, virtual_max: int) -> np.ndarray:
    """A lower bound of the step on every fabric and cap: the busy time at full clock, the least pipeline
    bubble, the optimizer update and the fixed overhead (every term left out is >= 0, a cap only slows
    compute), or the data pipeline."""
    busy = su["t_comp1"] + su["t_tp"]
    pp = lay.pipeline_parallel
    bubble = busy / su["m"] * (pp - 1) / virtual_max if pp > 1 else 0.0
    return np.asarray(np.maximum(busy + bubble + su["t_opt"] + rows.t_overhead_s, su["t_data"]))


def row_terms(
    rows: Rows, fab: FabricRows, lay: Layout, d: Arrays, su: Arrays, r: np.ndarray, virtual_options: list[int]
) -> Arrays:
    """The cap-independent terms of a layout's step on the (server, nodes, fabric) rows ``r``, one value per row:
    the collectives (data-parallel gradient sync, MoE dispatch/combine, embedding all-to-all, context-parallel
    KV ring), the pipeline's point-to-point time per micro-batch, the interleaves whose activations fit, and the
    per-row inputs the cap-dependent part (``cap_terms``) combines. Only compute scales with the cap, so the search
    computes these once per layout and row and re-uses them at every cap level (``take_rows`` keeps a subset)."""
    tp, pp = lay.tensor_parallel, lay.pipeline_parallel
    uu = fab.u[r]
    rounds = su["sync_rounds"][uu]  # ZeRO-3 synchronises every micro-batch: m calls of a round's bytes
    t_dp, via_fabric = comm.data_parallel_allreduce_time_s(
        su["grad_bytes"][uu] / rounds,
        su["sync_ranks"][uu],
        su["dp_local"][uu],
        rows.g[uu],
        rows.intra_bytes_s[uu],
        fab.node_bytes_s[r],
        fab.latency_s[r],
        bucket_bytes=rows.fw.bucket_mb * 1e6,
        in_network=fab.in_network[r],
        nvls=rows.nvls[uu],
    )
    t_dp = t_dp * rounds
    out: Arrays = {
        "m": su["m"][uu],
        "t_comp1": su["t_comp1"][uu],
        "t_tp": su["t_tp"][uu],
        "sync_rounds": rounds,
        "buckets": su["buckets"][uu],
        "t_opt": su["t_opt"][uu],
        "t_data": su["t_data"][uu],
        "via_fabric": via_fabric,
    }
    if rows.wl.moe is not None:  # the experts' gradients over their data-parallel ranks; the dispatch/combine
        t_dp_expert, _ = comm.data_parallel_allreduce_time_s(
            su["grad_bytes_expert"][uu],
            su["edp"][uu],
            su["edp_local"][uu],
            rows.g[uu],
            rows.intra_bytes_s[uu],
            fab.node_bytes_s[r],
            fab.latency_s[r],
            bucket_bytes=rows.fw.bucket_mb * 1e6,
            in_network=fab.in_network[r],
            nvls=rows.nvls[uu],
        )
        t_dp = t_dp + t_dp_expert
        out["t_moe"] = moe_all_to_all_time_s(rows, fab, lay, su, r)
        out["moe_inter"] = np.asarray(lay.expert_parallel * lay.expert_tensor_parallel > rows.g[uu])
    out["t_dp"] = t_dp
    if pp > 1:
        out["p2p1"] = 2.0 * su["m"][uu] * su["act"][uu] / tp / fab.peer_bytes_s[r]
        if len(virtual_options) > 1:  # only the interleaves whose extra activations fit the GPU (a layout that
            # does not fit even at v = 1 is reported as not fitting, and timed at its fastest interleave)
            over = ~interleave_fits(rows, lay, d, 1)[uu]
            for v in virtual_options:
                out[f"allowed_{v}"] = over | interleave_fits(rows, lay, d, v)[uu]
    if rows.wl.embedding_exchange_bytes_per_sample:
        out["t_a2a"] = comm.all_to_all_time_s(su["a2a_bytes"][uu], rows.G[uu], fab.peer_bytes_s[r])
    if lay.context_parallel > 1:  # the KV ring runs over NVLink while TP x CP fits a node, else over the NICs
        cp_bw = np.where(
            lay.tensor_parallel * lay.context_parallel <= rows.g[uu], rows.intra_bytes_s[uu], fab.peer_bytes_s[r]
        )
        out["kv_ring"] = su["kv_bytes"][uu] / cp_bw - su["cp_cover"][uu]
    return out


def take_rows(rt: Arrays, keep: np.ndarray) -> Arrays:
    """``row_terms`` on a subset of its rows (a boolean mask or positions)."""
    return {k: v[keep] for k, v in rt.items()}


def cap_terms(rows: Rows, lay: Layout, rt: Arrays, x: np.ndarray, at: Any, virtual_options: list[int]) -> Arrays:
    """The step terms at cap slowdown x from the layout's ``row_terms``: compute scales with x, and with it the
    pipeline bubble, the interleave chosen and the gradient sync the backward pass hides. ``at`` spreads a per-row
    array onto x's shape: broadcasting on the search grid (caps x rows), gathering for a list of configurations."""
    pp = lay.pipeline_parallel
    m = at(rt["m"])
    t_comp = at(rt["t_comp1"]) * x
    t_tp = at(rt["t_tp"])
    moe_ = rows.wl.moe is not None
    t_moe = at(rt["t_moe"]) if moe_ else np.zeros_like(t_comp)
    if pp > 1:
        bubble1 = (t_comp + t_tp + t_moe) * ((pp - 1) / m)
        p2p1 = at(rt["p2p1"])
        allowed = [at(rt[f"allowed_{v}"]) for v in virtual_options] if len(virtual_options) > 1 else None
        overlap_p2p = rows.fw.pipeline_p2p_overlap
        pipe, virtual = comm.interleaved_pipeline_time_s(bubble1, p2p1, virtual_options, allowed, pp, m, overlap_p2p)
        # the exposed point-to-point time at the chosen v, and p2p1 restated per chunk (exposed / v) so that the
        # breakdown's p2p1 x v is the exposed time whether or not the framework overlaps the transfers
        t_p2p = np.maximum(pipe - bubble1 / virtual, 0.0)
        p2p1 = t_p2p / virtual
    else:
        bubble1 = p2p1 = pipe = t_p2p = np.zeros_like(t_comp)
        virtual = np.ones(t_comp.shape, dtype=np.int64)
    # per synchronisation round (a step, or a micro-batch under ZeRO-3): its backward hides what it can and its last
    # bucket stays exposed
    exposed = comm.exposed_gradient_sync_s(
        at(rt["t_dp"]), t_comp, m / at(rt["sync_rounds"]), rows.overlap, at(rt["buckets"])
    )
    t_opt = at(rt["t_opt"])
    t_a2a = at(rt["t_a2a"]) if "t_a2a" in rt else np.zeros_like(t_comp)
    t_cp = np.maximum(at(rt["kv_ring"]), 0.0) if "kv_ring" in rt else np.zeros_like(t_comp)
    t_gpu = t_comp + t_tp + t_cp + pipe + exposed + t_opt + t_a2a + rows.t_overhead_s
    if moe_:
        t_gpu = t_gpu + t_moe
    return {
        "t_compute": t_comp,
        "t_tensor_parallel": t_tp,
        "t_context_parallel": t_cp,
        "bubble1": bubble1,
        "p2p1": p2p1,
        "t_pipeline_p2p": t_p2p,
        "virtual_stages": virtual,
        "t_data_parallel_exposed": exposed,
        "via_fabric": at(rt["via_fabric"]),
        "t_optimizer_step": t_opt,
        "t_embedding_all_to_all": t_a2a,
        "t_moe_all_to_all": t_moe,
        "moe_inter": at(rt["moe_inter"]) if moe_ else at(np.zeros(len(rt["m"]), dtype=bool)),
        "t_gpu": t_gpu,
        "t_data": at(rt["t_data"]),
    }


def step_terms(
    rows: Rows,
    fab: FabricRows,
    lay: Layout,
    d: Arrays,
    su: Arrays,
    r: np.ndarray,
    x: np.ndarray,
    at: Any,
    virtual_options: list[int],
) -> Arrays:
    """The step terms of a layout on the (server, nodes, fabric) rows ``r`` at cap slowdown x: ``row_terms``
    combined by ``cap_terms`` (the search calls the two apart, to share the first between cap levels). ``at``
    spreads a per-row array onto x's shape: broadcasting on the search grid (caps x rows), gathering for a list of
    configurations."""
    return cap_terms(rows, lay, row_terms(rows, fab, lay, d, su, r, virtual_options), x, at, virtual_options)


def moe_all_to_all_time_s(rows: Rows, fab: FabricRows, lay: Layout, su: Arrays, r: np.ndarray) -> np.ndarray:
    """Exposed dispatch/combine time per step on the (server, nodes, fabric) rows r: the calls of a step x one
    all-to-all (moe.expert_all_to_all_time_s: NVLink inside the node's NVLink domain, the NICs across it; the EP
    ranks strided by ETP, so a domain of g GPUs holds g / ETP of them) and, with expert tensor parallelism, its
    all-gather or reduce-scatter over the ETP group (moe.expert_tensor_parallel_time_s), x the busiest EP rank's
    load (moe.load_imbalance_factor), less the share the framework hides under compute (frameworks.yaml
    expert_all_to_all_overlap_fraction, or calibration.yaml moe_all_to_all_overlap per framework)."""
    wl = rows.wl
    moe_ = wl.moe
    assert moe_ is not None
    uu = fab.u[r]
    etp = lay.expert_tensor_parallel
    nvlink_bytes_s = rows.intra_bytes_s[uu] / comm.NVLINK_ACHIEVED
    one = moe.expert_all_to_all_time_s(
        su["moe_a2a_bytes"][uu],
        lay.expert_parallel,
        np.maximum(rows.g[uu] // etp, 1),
        nvlink_bytes_s,
        fab.node_bytes_s[r] / rows.g[uu],
        moe_.dispatcher,
    ) + moe.expert_tensor_parallel_time_s(su["moe_a2a_bytes"][uu], etp, nvlink_bytes_s, moe_.dispatcher)
    exposed = 1.0 - rows.moe_a2a_overlap
    return np.asarray(su["moe_a2a_calls"][uu] * one * moe.load_imbalance_factor(moe_.force_load_balance) * exposed)
