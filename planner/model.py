"""The exact performance / power / cost model, vectorized over configurations.

One configuration = (server type, node count, fabric, GPU power cap, parallel layout). For every
configuration the model predicts (formulas in planner/compute.py, communication.py, memory.py,
power.py, cost.py):

  step time = compute + tensor-parallel comm + pipeline bubble + pipeline p2p
              + exposed data-parallel all-reduce + optimizer update + embedding all-to-all
              + framework overhead,
  bounded below by the data pipeline (CPU preprocessing / storage reads per node);
  throughput = global batch / step time;
  time-to-train = samples to converge at that batch / throughput;
  memory per GPU, power (GPU at its cap and utilisation, host, NICs, PSU, switches, PUE), energy,
  cost (amortized capex or rent, plus energy), carbon, achieved TFLOP/s, MFU and the bottleneck.

The parallel layout is searched: every candidate layout (tensor parallel within a node, pipeline
stages with the fastest number of interleaved virtual stages, ZeRO stage, recomputation, gradient
accumulation) is evaluated for all configurations at once and the fastest that fits memory is kept --
"fastest" meaning least time to train (layouts may differ in global batch, hence in samples to
converge). The search is exact: it prunes only with lower bounds and dominance relations that are proved
in the comments where they are used. ``evaluate_space`` is the single implementation; the scalar
``evaluate`` calls it with one configuration, so the optimizer, the CLI and the brute-force checks all
see the same numbers.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from planner import communication as comm
from planner import compute, cost, memory, power
from planner.data import Catalog
from planner.errors import PlannerInputError
from planner.schemas import Configuration, Estimate, Layout, Server, Workload

DEFAULT_CAPS = (0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
DEFAULT_NODE_COUNTS = tuple(range(1, 1025))
BOTTLENECKS = ["compute", "fabric", "intra-node link", "pipeline bubble", "data pipeline", "power cap", "memory"]
BREAKDOWN = (
    "compute",
    "tensor_parallel",
    "pipeline_bubble",
    "pipeline_p2p",
    "data_parallel_exposed",
    "optimizer_step",
    "embedding_all_to_all",
    "framework_overhead",
    "data_pipeline_stall",
)


@dataclass(frozen=True)
class Work:
    """What to train: samples at the reference batch, optional fixed batch and precision."""

    samples: float | None = None
    global_batch: int | None = None
    precision: str | None = None


def work_from(
    workload: Workload, samples: float | None = None, tokens: float | None = None, epochs: float | None = None
) -> float | None:
    """Convert --samples / --tokens / --epochs to samples (at the reference batch)."""
    given = [x for x in (samples, tokens, epochs) if x is not None]
    if len(given) > 1:
        raise PlannerInputError("give only one of samples, tokens or epochs")
    for name, v in (("samples", samples), ("tokens", tokens), ("epochs", epochs)):
        if v is not None and not (v > 0 and math.isfinite(v)):
            raise PlannerInputError(f"{name} must be a positive number (got {v})")
    if tokens is not None:
        if workload.sequence_length is None:
            raise PlannerInputError(f"model '{workload.id}' is not a sequence model: give samples or epochs")
        return tokens / workload.sequence_length
    if epochs is not None:
        if workload.dataset_samples is None:
            raise PlannerInputError(f"model '{workload.id}' has no dataset_samples: give samples or tokens")
        return epochs * workload.dataset_samples
    return samples


def candidate_layouts(catalog: Catalog, workload: Workload, max_gpus_per_node: int) -> list[Layout]:
    fw = catalog.framework(workload.framework)
    transformer = workload.layers is not None and workload.hidden_size is not None
    tps = [t for t in (1, 2, 4, 8) if t <= max_gpus_per_node] if fw.tensor_parallel and transformer else [1]
    pps = (
        [p for p in (1, 2, 4, 8, 16, 32, 64) if p <= (workload.layers or 1)]
        if fw.pipeline_parallel and transformer
        else [1]
    )
    # ZeRO-1/2 shard state at the communication volume of a plain all-reduce, so in this model the
    # highest of them dominates stage 0 (same time, less memory); stage 3 trades 1.5x volume for memory.
    zeros = sorted({min(fw.max_zero_stage, 2)} | ({3} if fw.max_zero_stage == 3 else set()))
    recs = [False, True] if transformer else [False]
    accs = [1, 2, 4, 8] if workload.micro_batch is None else [1]
    return [
        Layout(tensor_parallel=t, pipeline_parallel=p, zero_stage=z, recompute=r, accumulation=a)
        for t, p, z, r, a in itertools.product(tps, pps, zeros, recs, accs)
    ]


@dataclass(frozen=True)
class Space:
    """Flat configuration table as integer codes: server/fabric index into the listed ids."""

    server_ids: list[str]
    fabric_ids: list[str]
    server_idx: np.ndarray
    fabric_idx: np.ndarray
    power_cap: np.ndarray
    nodes: np.ndarray

    @classmethod
    def from_frame(cls, df: pd.DataFrame) -> Space:
        s_cat = pd.Categorical(df["server"])
        f_cat = pd.Categorical(df["fabric"])
        return cls(
            [str(x) for x in s_cat.categories],
            [str(x) for x in f_cat.categories],
            np.asarray(s_cat.codes, dtype=np.int64),
            np.asarray(f_cat.codes, dtype=np.int64),
            df["power_cap"].to_numpy(dtype=float),
            df["nodes"].to_numpy(dtype=np.int64),
        )


def build_space(
    catalog: Catalog,
    servers: Sequence[Server],
    fabrics: Iterable[str] | None,
    caps: Sequence[float],
    nodes: Sequence[int],
) -> Space:
    """All (server, fabric, cap, nodes) with caps restricted to each GPU's configurable range."""
    allowed = set(fabrics) if fabrics is not None else None
    servers = [s for s in servers if s.gpu is not None]
    fabric_ids = sorted({f for s in servers for f in s.fabrics if allowed is None or f in allowed})
    fpos = {f: i for i, f in enumerate(fabric_ids)}
    node_arr = np.asarray(nodes, dtype=np.int64)
    parts: list[tuple[np.ndarray, ...]] = []
    for i, s in enumerate(servers):
        gpu = catalog.gpu(s.gpu or "")
        lo = gpu.min_power_limit_w / gpu.tdp_w - 1e-9
        hi = gpu.max_power_limit_w / gpu.tdp_w + 1e-9
        ok_caps = np.asarray([c for c in caps if lo <= c <= hi], dtype=float)
        for f in s.fabrics:
            if f not in fpos:
                continue
            c_arr, n_arr = np.meshgrid(ok_caps, node_arr, indexing="ij")
            k = c_arr.size
            parts.append((np.full(k, i), np.full(k, fpos[f]), c_arr.ravel(), n_arr.ravel()))
    if not parts:
        empty = np.zeros(0)
        return Space(
            [s.id for s in servers],
            fabric_ids,
            empty.astype(np.int64),
            empty.astype(np.int64),
            empty,
            empty.astype(np.int64),
        )
    cols = [np.concatenate(c) for c in zip(*parts, strict=True)]
    return Space(
        [s.id for s in servers],
        fabric_ids,
        cols[0].astype(np.int64),
        cols[1].astype(np.int64),
        cols[2],
        cols[3].astype(np.int64),
    )


def evaluate_space(
    catalog: Catalog,
    workload: Workload | str,
    *,
    servers: Sequence[str] | None = None,
    fabrics: Iterable[str] | None = None,
    caps: Sequence[float] = DEFAULT_CAPS,
    nodes: Sequence[int] = DEFAULT_NODE_COUNTS,
    site: str = "us-colo",
    purchase: str = "buy",
    work: Work | None = None,
    layout: Layout | None = None,
    life_years: float = 4.0,
    space: pd.DataFrame | Space | None = None,
) -> pd.DataFrame:
    """Evaluate every configuration (servers x their fabrics x caps x node counts) in one call.

    Returns one row per configuration with the chosen (fastest fitting) layout and all predictions.
    ``space`` may give an explicit table with columns server, fabric, power_cap, nodes instead."""
    wl = catalog.workload(workload) if isinstance(workload, str) else workload
    work = work or Work()
    site_ = catalog.site(site)
    if purchase not in ("buy", "rent"):
        raise PlannerInputError(f"purchase must be 'buy' or 'rent' (got {purchase!r})")
    if space is None:
        listed = [catalog.server(s) for s in servers] if servers is not None else catalog.gpu_servers()
        for f in fabrics or ():
            catalog.fabric(f)
        _no_gpu(catalog, [s for s in listed if s.gpu is None])
        space = build_space(catalog, listed, fabrics, caps, nodes)
    elif isinstance(space, pd.DataFrame):
        space = Space.from_frame(space)
    server_objs = [catalog.server(s) for s in space.server_ids]
    _no_gpu(catalog, [s for s in server_objs if s.gpu is None])
    n = len(space.nodes)
    if n == 0:
        return pd.DataFrame()
    res: dict[str, Any] = {
        "server": _categorical(space.server_idx, categories=space.server_ids),
        "fabric": _categorical(space.fabric_idx, categories=space.fabric_ids),
        "power_cap": space.power_cap,
        "nodes": space.nodes,
    }
    # ---- per-configuration hardware columns -----------------------------------------------------
    si = space.server_idx
    gpus_ = [catalog.gpu(s.gpu or "") for s in server_objs]

    def per_server(fn: Any) -> np.ndarray:
        return np.asarray([fn(s, g) for s, g in zip(server_objs, gpus_, strict=True)])[si]

    fi = space.fabric_idx
    fabs = [catalog.fabric(f) for f in space.fabric_ids]

    def per_fabric(attr: str) -> np.ndarray:
        return np.asarray([getattr(f, attr) for f in fabs], dtype=float)[fi]

    precision = work.precision or wl.precision
    peak_used = [compute.peak_tflops(g, precision) for g in gpus_]
    peak = np.asarray([p for p, _ in peak_used])[si]
    prec_cats = sorted({u for _, u in peak_used})
    prec_used = _categorical(
        np.asarray([prec_cats.index(u) for _, u in peak_used], dtype=np.int8)[si], categories=prec_cats
    )
    mfu_cap = np.asarray(
        [compute.mfu_max(catalog.calibration, g, wl, u) for g, (_, u) in zip(gpus_, peak_used, strict=True)]
    )[si]
    N = space.nodes
    g = per_server(lambda s, _g: s.gpus_per_node).astype(np.int64)
    G = N * g
    cap = space.power_cap
    cap_tf = np.empty(n)
    cap_pf = np.empty(n)
    for i, gp in enumerate(gpus_):
        m = si == i
        cap_tf[m], cap_pf[m] = power.cap_curve_at(catalog.power_curves[gp.power_curve], cap[m])
    intra_bw = per_server(lambda s, gp: gp.intra_node_bandwidth_gb_s).astype(float) * 1e9 * comm.NVLINK_ACHIEVED
    node_bw = comm.node_bandwidth_bytes_s(
        per_server(lambda s, _g: s.nic_ports),
        per_fabric("port_bandwidth_gbps"),
        per_server(lambda s, _g: s.max_nic_port_gbps),
        per_fabric("achieved_efficiency"),
    )
    inter_lat = per_fabric("latency_us") * 1e-6 + comm.SOFTWARE_LATENCY_S
    gpu_mem = per_server(lambda s, gp: gp.memory_gb).astype(float)
    mem_bw = per_server(lambda s, gp: gp.memory_bandwidth_tbps).astype(float)
    cpu_cores = per_server(lambda s, _g: s.cpu_cores).astype(float)
    storage_bw = per_server(lambda s, _g: s.storage_read_gb_s).astype(float) * 1e9
    fw = catalog.framework(wl.framework)
    half_batch = wl.efficiency_half_batch * float(catalog.calibration.get("half_batch_scale", 1.0))
    overlap = min(1.0, fw.overlap_fraction * float(catalog.calibration.get("overlap_scale", 1.0)))

    # ---- layout search ----------------------------------------------------------------------------
    # Three levels: everything that depends only on (server, node count) and the layout -- validity, batch,
    # memory, compute at full power, tensor-parallel and intra-node terms, the data pipeline -- is computed
    # once per distinct (server, nodes) row U; the fabric terms once per (server, nodes, fabric) row R; only
    # the cap enters per configuration, by broadcasting over the cap levels, and only where the layout fits
    # memory. Configurations where no layout fits keep their smallest-memory layout (reported as not fitting).
    layouts = [layout] if layout is not None else candidate_layouts(catalog, wl, int(g.max()))
    samples_base = work.samples if work.samples is not None else wl.default_samples
    grad_bytes_per_param = 4.0 if precision == "fp32" else 2.0
    seq = float(wl.sequence_length or 1)
    hidden = float(wl.hidden_size or 0)
    layers = float(wl.layers or 1)
    if layout is not None and layout.virtual_stages and layout.virtual_stages * layout.pipeline_parallel > layers:
        raise PlannerInputError(
            f"layout has {layout.pipeline_parallel} x {layout.virtual_stages} = "
            f"{layout.pipeline_parallel * layout.virtual_stages} virtual pipeline stages but '{wl.id}' has only "
            f"{int(layers)} layers: lower virtual_stages (or leave it unset to choose the fastest)"
        )
    ukey = si.astype(np.int64) * (int(N.max()) + 1) + N
    n_u, u_of, first = _group(ukey)  # first: a representative configuration of each U row
    gU, GU, NU = g[first], G[first], N[first]
    intraU, mfuU, peakU = intra_bw[first], mfu_cap[first], peak[first]
    cpuU, storU, memU_cap, mem_bwU = cpu_cores[first], storage_bw[first], gpu_mem[first], mem_bw[first]
    embedU = wl.embedding_params * wl.embedding_bytes_per_param / GU / 1e9
    ig_bw = np.where(N > 1, node_bw / g, intra_bw)  # per-GPU bandwidth to other nodes (or peers)
    t_over = fw.step_overhead_ms / 1000.0

    cols: dict[str, np.ndarray] = {
        "layout_index": np.full(n, -1, dtype=np.int64),
        "data_parallel": np.zeros(n, dtype=np.int64),
        "virtual_stages": np.ones(n, dtype=np.int64),
        "global_batch": np.zeros(n, dtype=np.int64),
        "memory_per_gpu_gb": np.full(n, np.inf),
        "fits_memory": np.zeros(n, dtype=bool),
        "step_time_s": np.full(n, np.inf),
        "samples_factor": np.full(n, np.nan),
    }
    for k in (
        "micro_batch",
        "t_compute",
        "t_tensor_parallel",
        "t_pipeline_bubble",
        "t_pipeline_p2p",
        "t_data_parallel_exposed",
        "t_dp_inter_share",
        "t_optimizer_step",
        "t_embedding_all_to_all",
        "t_framework_overhead",
        "t_data_pipeline_stall",
    ):
        cols[k] = np.full(n, np.nan)
    min_memU = np.full(n_u, np.inf)
    min_layoutU = np.full(n_u, -1, dtype=np.int64)

    def per_u(lay: Layout) -> dict[str, np.ndarray]:
        """Layout quantities on the (server, nodes) rows."""
        tp, pp = lay.tensor_parallel, lay.pipeline_parallel
        valid = (gU % tp == 0) & (GU % (tp * pp) == 0)
        if layout is None:
            valid &= ~((pp > 1) & (pp > NU))  # candidate pipelines span nodes (one stage group per node)
        dp = np.maximum(GU // (tp * pp), 1)
        # the batch is rounded up to whole micro-batches per replica, independently of accumulation (which
        # may only split a replica's batch evenly), so every layout of a row trains the same batch
        unit = dp * (wl.micro_batch or 1)
        per_replica_min = max(wl.min_samples_per_gpu, pp * (wl.micro_batch or 1))
        b0 = (
            work.global_batch
            if work.global_batch is not None
            else np.maximum(wl.default_global_batch, dp * per_replica_min)
        )
        B = (-(-np.asarray(b0, dtype=np.int64) // unit)) * unit
        if wl.micro_batch:
            mb = np.full(len(dp), float(wl.micro_batch))
        else:
            mb = B / dp / lay.accumulation
            valid &= (B // dp) % lay.accumulation == 0
        valid &= mb >= 1.0 - 1e-9
        kept = wl.recompute_activation_fraction if lay.recompute else 1.0
        mem = (
            memory.model_state_gb(wl.params, wl.trainable, wl.optimizer_bytes_per_param, tp * pp, dp, lay.zero_stage)
            + memory.activation_gb(wl.activation_bytes_per_sample, mb, tp, kept)
            + embedU
            + memory.WORKSPACE_GB
        )
        return {"valid": valid, "dp": dp, "B": B, "mb": mb, "mem": mem, "sf_per_B": compute.samples_factor(wl, B) / B}

    def step_u(lay: Layout, d: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Cap- and fabric-independent step terms on the (server, nodes) rows."""
        tp, pp = lay.tensor_parallel, lay.pipeline_parallel
        dp, B, mb = d["dp"], d["B"], d["mb"]
        m = B / dp / mb  # micro-batches per step per replica
        flops_gpu = B * wl.train_flops_per_sample / GU * (compute.RECOMPUTE_FLOPS_FACTOR if lay.recompute else 1.0)
        t_comp1 = compute.compute_time_s(flops_gpu, peakU, compute.kernel_efficiency(mfuU, mb, half_batch), 1.0)
        act_msg = mb * seq * hidden * 2.0
        t_tp = (
            comm.tensor_parallel_time_s(act_msg, tp, layers / pp, m, lay.recompute, intraU)
            if tp > 1
            else np.zeros(len(dp))
        )
        grad_bytes = wl.trainable * grad_bytes_per_param / (tp * pp) * (1.5 if lay.zero_stage >= 3 else 1.0)
        owned = wl.trainable / (tp * pp) / (dp if lay.zero_stage >= 1 else 1)
        per_node = B / NU
        t_data = np.maximum(
            per_node * wl.cpu_core_ms_per_sample / 1000.0 / cpuU, per_node * wl.data_bytes_per_sample / storU
        )
        return {
            "m": m,
            "t_comp1": t_comp1,
            "act": act_msg,
            "t_tp": t_tp,
            "grad_bytes": np.full(len(dp), grad_bytes),
            "dp_local": np.maximum(np.minimum(dp, gU // tp), 1),
            "t_opt": compute.optimizer_step_time_s(owned, wl.optimizer_bytes_per_param, mem_bwU),
            "a2a_bytes": B / GU * wl.embedding_exchange_bytes_per_sample,
            "t_data": t_data,
        }

    def step_terms(
        lay: Layout,
        d: dict[str, np.ndarray],
        su: dict[str, np.ndarray],
        rows: np.ndarray,
        x: np.ndarray,
        at: Any,
    ) -> dict[str, np.ndarray]:
        """The step terms of a layout on (server, nodes, fabric) rows at cap slowdown x = 1 / throughput
        factor. ``at`` spreads a per-row array onto x's shape: broadcasting on the search grid (caps x rows),
        gathering for a list of configurations. The one formula for the step, used by search and report."""
        tp, pp = lay.tensor_parallel, lay.pipeline_parallel
        uu = u_of_r[rows]
        m = at(su["m"][uu])
        t_comp = at(su["t_comp1"][uu]) * x
        t_tp = at(su["t_tp"][uu])
        t_dp, via_fabric = comm.data_parallel_allreduce_time_s(
            su["grad_bytes"][uu], d["dp"][uu], su["dp_local"][uu], gU[uu], intraU[uu], node_bw_r[rows], lat_r[rows]
        )
        if pp > 1:
            bubble1 = (t_comp + t_tp) * ((pp - 1) / m)
            p2p1 = at(2.0 * su["m"][uu] * su["act"][uu] / tp / ig_bw_r[rows])
            pipe, virtual = comm.interleaved_pipeline_time_s(bubble1, p2p1, _virtual_options(lay, layers))
        else:
            bubble1 = p2p1 = pipe = np.zeros_like(t_comp)
            virtual = np.ones(t_comp.shape, dtype=np.int64)
        exposed = np.maximum(at(t_dp) - (overlap * (2.0 / 3.0) / m) * t_comp, 0.0)
        t_opt = at(su["t_opt"][uu])
        t_a2a = (
            at(comm.all_to_all_time_s(su["a2a_bytes"][uu], GU[uu], ig_bw_r[rows]))
            if wl.embedding_exchange_bytes_per_sample
            else np.zeros_like(t_comp)
        )
        t_gpu = t_comp + t_tp + pipe + exposed + t_opt + t_a2a + t_over
        t_data = at(su["t_data"][uu])
        return {
            "t_compute": t_comp,
            "t_tensor_parallel": t_tp,
            "bubble1": bubble1,
            "p2p1": p2p1,
            "virtual_stages": virtual,
            "t_data_parallel_exposed": exposed,
            "via_fabric": at(via_fabric),
            "t_optimizer_step": t_opt,
            "t_embedding_all_to_all": t_a2a,
            "t_gpu": t_gpu,
            "t_data": t_data,
        }

    def step_configs(
        lay: Layout, idx: np.ndarray, su: dict[str, np.ndarray], d: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        """The full step breakdown of the configurations idx."""
        mask = np.zeros(n_r, dtype=bool)  # their (server, nodes, fabric) rows, each once
        mask[r_of[idx]] = True
        rows = np.flatnonzero(mask)
        rr = (np.cumsum(mask) - 1)[r_of[idx]]
        t = step_terms(lay, d, su, rows, 1.0 / cap_tf[idx], lambda a: a[rr])
        uu = u_of[idx]
        virtual = t["virtual_stages"]
        return {
            "data_parallel": d["dp"][uu],
            "global_batch": d["B"][uu],
            "samples_factor": d["sf_per_B"][uu] * d["B"][uu],
            "micro_batch": d["mb"][uu],
            "t_compute": t["t_compute"],
            "t_tensor_parallel": t["t_tensor_parallel"],
            "t_pipeline_bubble": t["bubble1"] / virtual,
            "t_pipeline_p2p": t["p2p1"] * virtual,
            "virtual_stages": virtual,
            "t_data_parallel_exposed": t["t_data_parallel_exposed"],
            "t_dp_inter_share": t["via_fabric"].astype(float),
            "t_optimizer_step": t["t_optimizer_step"],
            "t_embedding_all_to_all": t["t_embedding_all_to_all"],
            "t_framework_overhead": np.full(len(idx), t_over),
            "t_data_pipeline_stall": np.maximum(t["t_data"] - t["t_gpu"], 0.0),
            "step_time_s": np.maximum(t["t_gpu"], t["t_data"]),
        }

    def store(li: int, idx: np.ndarray, parts: dict[str, np.ndarray], mem: np.ndarray, fit: bool) -> None:
        if len(idx) == n:  # one layout wins everywhere: take the arrays as they are
            cols["layout_index"][:] = li
            cols["fits_memory"][:] = fit
            cols.update(parts, memory_per_gpu_gb=np.asarray(mem, dtype=float))
            return
        cols["layout_index"][idx] = li
        cols["memory_per_gpu_gb"][idx] = mem
        cols["fits_memory"][idx] = fit
        for k, v in parts.items():
            cols[k][idx] = v

    # Phase A, per layout on the (server, nodes) rows: validity, memory and a lower bound of the layout's
    # score -- the step at full clock without data-parallel, p2p or all-to-all communication (every term
    # left out is >= 0 and a cap only slows compute). Phase B visits layouts from the best bound and skips a
    # row whose bound cannot beat the worst current score among its configurations: exact pruning.
    # Dominance (also exact): on a row where a layout fits, a variant that only adds recomputation, only
    # raises ZeRO from stage 1 or 2 to 3, or (without pipelining) only adds accumulation steps is never faster -- every
    # step term is at least as large (more recompute FLOPs or collectives hide at most as much all-reduce as
    # they add) -- so the variant is skipped there.
    fits_by_key: dict[tuple[int, int, int, bool, int], np.ndarray] = {}
    phase_a = []
    per_u_of: dict[int, dict[str, np.ndarray]] = {}
    for li, lay in enumerate(layouts):
        d = per_u_of[li] = per_u(lay)
        if not d["valid"].any():
            continue
        smaller = d["valid"] & (d["mem"] < min_memU)
        min_memU = np.where(smaller, d["mem"], min_memU)
        min_layoutU = np.where(smaller, li, min_layoutU)
        fitU = d["valid"] & memory.fits(d["mem"], memU_cap)
        if fitU.any():
            fits_by_key[_layout_key(lay)] = fitU
            phase_a.append((li, lay, d, fitU))
    prepared = []
    for li, lay, d, fitU in phase_a:
        for key in _dominating_keys(lay):
            if key in fits_by_key:
                fitU = fitU & ~fits_by_key[key]
        if not fitU.any():
            continue
        su = step_u(lay, d)
        busy = su["t_comp1"] + su["t_tp"]
        pp = lay.pipeline_parallel
        vmax = max(_virtual_options(lay, layers))
        lb_bubble = busy / su["m"] * (pp - 1) / vmax if pp > 1 else 0.0
        lb_step = np.maximum(busy + lb_bubble + su["t_opt"] + t_over, su["t_data"])
        lb = np.where(fitU, lb_step * d["sf_per_B"], np.inf)
        prepared.append((float(np.min(lb)), li, lay, d, su, lb))
    prepared.sort(key=lambda x: (x[0], x[1]))
    # Phase B runs on a dense grid: columns = distinct (server, nodes, fabric) rows, rows = distinct cap levels
    # (caps x rows, so reductions over caps are vectorized). The row terms are computed once per row, the cap
    # enters by broadcasting, and only the winning layout's index and score are kept; the full breakdown is
    # computed once per configuration afterwards, for its winner.
    n_r, r_of, first_r = _group(ukey * (len(space.fabric_ids) + 1) + fi)
    cap_levels = np.sort(pd.unique(cap))
    c_of = np.searchsorted(cap_levels, cap)
    u_of_r = u_of[first_r]
    tf_by_server = np.asarray(
        [power.cap_curve_at(catalog.power_curves[gp.power_curve], cap_levels)[0] for gp in gpus_]
    ).reshape(len(gpus_), len(cap_levels))
    inv_tf = np.ascontiguousarray((1.0 / tf_by_server[si[first_r]]).T)  # caps x rows
    best2 = np.full((len(cap_levels), n_r), -np.inf)  # absent cells stay -inf: never block pruning
    best2[c_of, r_of] = np.inf
    lay2 = np.full(best2.shape, -1, dtype=np.int64)
    worst_r = np.max(best2, axis=0)
    node_bw_r, lat_r, ig_bw_r = node_bw[first_r], inter_lat[first_r], ig_bw[first_r]
    x_min = inv_tf.min(axis=0)  # the fastest cap level of each row's GPU (a lower bound where it is absent)

    def grid_score(
        lay: Layout, d: dict[str, np.ndarray], su: dict[str, np.ndarray], rows: np.ndarray, x: np.ndarray
    ) -> np.ndarray:
        """Time to train per reference sample (the search's score) on the rows at cap slowdown x."""
        t = step_terms(lay, d, su, rows, x, lambda a: a)
        return np.asarray(np.maximum(t["t_gpu"], t["t_data"]) * d["sf_per_B"][u_of_r[rows]])

    for _, li, lay, d, su, lb in prepared:
        rows = np.flatnonzero(lb[u_of_r] < worst_r)
        if len(rows) == 0:
            continue
        # second, exact bound per row: the score at the row's fastest cap (the step grows with compute time:
        # busy time rises 1:1 and more, hidden all-reduce by at most 2/3 of it)
        rows = rows[grid_score(lay, d, su, rows, x_min[rows]) < worst_r[rows]]
        if len(rows) == 0:
            continue
        sc = grid_score(lay, d, su, rows, inv_tf[:, rows])
        cur = best2[:, rows]
        better = sc < cur
        if not better.any():
            continue
        new_best = np.where(better, sc, cur)
        best2[:, rows] = new_best
        lay2[:, rows] = np.where(better, li, lay2[:, rows])
        worst_r[rows] = np.max(new_best, axis=0)
    won = lay2[c_of, r_of]
    step_u_of = {li: su for _, li, _, _, su, _ in prepared}
    for li, idx in _indices_by_value(won):
        d, su = per_u_of[li], step_u_of[li]
        store(li, idx, step_configs(layouts[li], idx, su, d), d["mem"][u_of[idx]], True)
    # configurations where no layout fits: the smallest-memory layout, reported as not fitting
    no_fit = np.where(cols["layout_index"] < 0, min_layoutU[u_of], -1)
    for li, idx in _indices_by_value(no_fit):
        d = per_u_of[li]
        su = step_u_of[li] if li in step_u_of else step_u(layouts[li], d)
        store(li, idx, step_configs(layouts[li], idx, su, d), min_memU[u_of[idx]], False)
    if (cols["layout_index"] < 0).all():
        cols = {}

    if not cols:  # no layout is even valid (e.g. a fixed layout that does not divide the GPUs)
        raise PlannerInputError(
            "no parallel layout is valid for these node counts (tensor/pipeline degrees "
            "must divide the GPUs per node and the total GPUs)"
        )
    samples_factor = cols.pop("samples_factor")
    res.update(cols)
    li_arr = np.maximum(cols["layout_index"], 0)
    for attr in ("tensor_parallel", "pipeline_parallel", "zero_stage", "recompute", "accumulation"):
        res[attr] = np.asarray([getattr(lay, attr) for lay in layouts])[li_arr]
    fits_mem = cols["fits_memory"].astype(bool)
    res["fits_memory"] = fits_mem
    step = cols["step_time_s"].astype(float)
    valid_any = cols["layout_index"] >= 0
    gpu_ids = sorted({gp.id for gp in gpus_})
    gpu_code = np.asarray([gpu_ids.index(gp.id) for gp in gpus_], dtype=np.int16)
    res["gpu"] = _categorical(gpu_code[si], categories=gpu_ids)
    res["gpus"] = G
    res["precision"] = prec_used
    res["power_cap_w"] = cap * per_server(lambda s, gp: gp.tdp_w)
    res["cap_throughput_factor"] = cap_tf
    res["gpu_memory_gb"] = gpu_mem

    # ---- throughput, time ---------------------------------------------------------------------------
    B = cols["global_batch"].astype(float)
    thr = B / step
    samples = samples_base * samples_factor
    hours = samples / thr / 3600.0
    res["throughput_samples_per_s"] = thr
    res["samples_to_train"] = samples
    res["time_to_train_h"] = hours
    achieved = thr * wl.train_flops_per_sample / G / 1e12
    res["achieved_tflops_per_gpu"] = achieved
    res["mfu"] = achieved / peak
    t_comp = cols["t_compute"].astype(float)
    res["scaling_efficiency"] = t_comp / step

    # ---- power & energy ------------------------------------------------------------------------------
    busy = t_comp / step
    gpu_w = power.gpu_power_w(
        per_server(lambda s, gp: gp.tdp_w), per_server(lambda s, gp: gp.idle_power_w), cap_pf, busy
    )
    busy_cores = g + thr / N * wl.cpu_core_ms_per_sample / 1000.0
    host_w = power.cpu_power_w(per_server(lambda s, _g: s.cpu_power_w), cpu_cores, busy_cores) + per_server(
        lambda s, _g: s.ram_power_w + s.storage_power_w + s.other_power_w
    )
    nic_ports = per_server(lambda s, _g: s.nic_ports)
    node_w = power.node_power_w(
        g, gpu_w, host_w, nic_ports, per_fabric("nic_power_w"), per_server(lambda s, _g: s.psu_efficiency), N > 1
    )
    radix = per_fabric("switch_radix").astype(np.int64)
    switches = cost.switch_count(N[first_r], nic_ports[first_r], radix[first_r])[r_of]  # per (server, nodes, fabric)
    it_kw = (N * node_w + switches * per_fabric("switch_power_w")) / 1000.0
    res.update(gpu_power_w=gpu_w, node_power_w=node_w, switches=switches, power_kw=it_kw, energy_kwh=it_kw * hours)
    res["bottleneck"] = _bottleneck(res, N)
    res["layout"] = _layout_labels(li_arr, cols["data_parallel"], cols["virtual_stages"], layouts)
    res["model"] = _categorical(np.zeros(n, dtype=np.int8), categories=[wl.id])
    res["valid_layout"] = valid_any
    res.update(_price_columns(catalog, res, site_.id, purchase, life_years, (r_of, first_r)))
    return pd.DataFrame(res, copy=False)


def price_space(catalog: Catalog, df: pd.DataFrame, site: str, purchase: str, life_years: float) -> pd.DataFrame:
    """The site- and money-dependent columns of evaluated configurations (facility power and energy via PUE,
    capex or rent, energy cost, carbon, availability, feasibility) from the physical ones. Re-pricing a table
    for another site, purchase mode or price list needs no re-evaluation of the physics."""
    out = df.copy(deep=False)  # copy-on-write: the caller's table is not modified
    for k, v in _price_columns(catalog, out, site, purchase, life_years).items():
        out[k] = v
    return out


def _price_columns(
    catalog: Catalog,
    df: Any,
    site: str,
    purchase: str,
    life_years: float,
    rows: tuple[np.ndarray, np.ndarray] | None = None,
) -> dict[str, Any]:
    """The priced columns from a table or dict of physical columns (see price_space). ``rows`` = (row of each
    configuration, a configuration of each row) for rows of equal (server, fabric, nodes): capex is computed
    once per row."""
    site_ = catalog.site(site)
    if purchase not in ("buy", "rent"):
        raise PlannerInputError(f"purchase must be 'buy' or 'rent' (got {purchase!r})")
    out: dict[str, Any] = {}
    srv_cat = pd.Categorical(df["server"])
    fab_cat = pd.Categorical(df["fabric"])
    srv_codes, fab_codes = np.asarray(srv_cat.codes), np.asarray(fab_cat.codes)

    def srv_attr(fn: Any, sel: Any = slice(None)) -> np.ndarray:
        return np.asarray([fn(catalog.server(str(c))) for c in srv_cat.categories], dtype=float)[srv_codes[sel]]

    def fab_attr(attr: str, sel: Any = slice(None)) -> np.ndarray:
        return np.asarray([getattr(catalog.fabric(str(c)), attr) for c in fab_cat.categories], dtype=float)[
            fab_codes[sel]
        ]

    N = np.asarray(df["nodes"])
    hours = np.asarray(df["time_to_train_h"], dtype=float)
    it_kw = np.asarray(df["power_kw"], dtype=float)
    fac_kwh = it_kw * site_.pue * hours
    out["facility_power_kw"] = it_kw * site_.pue
    out["facility_energy_kwh"] = fac_kwh
    price = srv_attr(lambda s: np.nan if s.price_usd is None else s.price_usd)
    rent = srv_attr(lambda s: np.nan if s.rent_usd_per_month is None else s.rent_usd_per_month)

    def capex_of(sel: Any) -> np.ndarray:
        nic_ports = srv_attr(lambda s: s.nic_ports, sel)
        radix = fab_attr("switch_radix", sel).astype(np.int64)
        return cost.capex_usd(
            N[sel],
            price[sel],
            nic_ports,
            fab_attr("nic_price_usd", sel),
            np.asarray(df["switches"])[sel],
            fab_attr("switch_price_usd", sel),
            cost.cable_count(N[sel], nic_ports.astype(np.int64), radix),
            fab_attr("cable_price_usd", sel),
        )

    capex = capex_of(slice(None)) if rows is None else capex_of(rows[1])[rows[0]]
    energy_usd = fac_kwh * site_.electricity_usd_per_kwh
    if purchase == "buy":
        hw = cost.amortized_usd(capex, hours, life_years)
        out["capex_usd"], out["hardware_usd"], out["energy_usd"] = capex, hw, energy_usd
        out["cost_usd"], out["rent_usd_per_month"] = hw + energy_usd, np.nan
        available = np.isfinite(price)
    else:
        r = cost.rent_usd(N, rent, hours)  # rent includes power and network: no separate energy bill
        out["capex_usd"], out["hardware_usd"], out["energy_usd"] = 0.0, r, 0.0
        out["cost_usd"], out["rent_usd_per_month"] = r, N * rent
        available = np.isfinite(rent)
    out["available"] = available
    out["carbon_kg"] = fac_kwh * site_.carbon_kg_per_kwh
    out["site"] = _categorical(np.zeros(len(N), dtype=np.int8), categories=[site_.id])
    out["purchase"] = _categorical(np.zeros(len(N), dtype=np.int8), categories=[purchase])
    out["feasible"] = np.asarray(df["fits_memory"], dtype=bool) & available & np.asarray(df["valid_layout"], dtype=bool)
    return out


def _no_gpu(catalog: Catalog, servers: Sequence[Server]) -> None:
    if servers:
        raise PlannerInputError(
            f"server '{servers[0].id}' has no GPU: the training model places work on accelerators only "
            f"(choose one of: {', '.join(x.id for x in catalog.gpu_servers())})"
        )


def _bottleneck(df: dict[str, Any], nodes: np.ndarray) -> np.ndarray:
    dp_exp = df["t_data_parallel_exposed"]
    inter_share = df["t_dp_inter_share"]
    multi = nodes > 1
    a2a, p2p = df["t_embedding_all_to_all"], df["t_pipeline_p2p"]
    fabric = dp_exp * inter_share + (a2a + p2p) * multi
    intra = df["t_tensor_parallel"] + dp_exp * (1 - inter_share) + (a2a + p2p) * ~multi
    code = np.zeros(len(nodes), dtype=np.int8)
    top = np.asarray(df["t_compute"], dtype=float)
    for k, part in enumerate((fabric, intra, df["t_pipeline_bubble"], df["t_data_pipeline_stall"]), start=1):
        larger = part > top  # first maximum wins, as argmax
        code[larger] = k
        top = np.maximum(top, part)
    code = np.where((code == 0) & (df["cap_throughput_factor"] < 0.95), 5, code)
    code = np.where(df["fits_memory"], code, 6)
    return _categorical(code, categories=BOTTLENECKS)


def _categorical(codes: np.ndarray, categories: Any) -> pd.Categorical:
    """A categorical column from codes that are in range by construction (pandas' range check skipped)."""
    return pd.Categorical.from_codes(codes, dtype=pd.CategoricalDtype(categories), validate=False)


def _virtual_options(lay: Layout, layers: float) -> list[int]:
    """Virtual pipeline stages per GPU (Megatron's interleaved 1F1B schedule) to choose from: the layout's own
    number if it fixes one, else 1, 2, 4 or 8 with at least one layer per virtual stage."""
    if lay.pipeline_parallel == 1:
        return [1]
    if lay.virtual_stages is not None:
        return [lay.virtual_stages]
    return [v for v in (1, 2, 4, 8) if v * lay.pipeline_parallel <= layers] or [1]


def _layout_key(lay: Layout) -> tuple[int, int, int, bool, int]:
    return (lay.tensor_parallel, lay.pipeline_parallel, lay.zero_stage, lay.recompute, lay.accumulation)


def _dominating_keys(lay: Layout) -> list[tuple[int, int, int, bool, int]]:
    """Layouts at least as fast as ``lay`` wherever they fit (same tensor and pipeline degrees)."""
    tp, pp, z, rec, acc = _layout_key(lay)
    keys = []
    if rec:
        keys.append((tp, pp, z, False, acc))
    if z == 3:
        keys += [(tp, pp, lower, rec, acc) for lower in (1, 2)]  # same sharded optimizer step, 2/3 the traffic
    if pp == 1:
        keys += [(tp, pp, z, rec, a) for a in (1, 2, 4, 8, 16, 32) if a < acc]
    return keys


def _indices_by_value(values: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """(value, positions holding it) for every value >= 0, positions ascending; one sort for all values."""
    pos = np.flatnonzero(values >= 0)
    if len(pos) == 0:
        return []
    vals = values[pos]
    order = np.argsort(vals, kind="stable")
    sorted_vals = vals[order]
    starts = np.flatnonzero(np.r_[True, sorted_vals[1:] != sorted_vals[:-1]])
    ends = np.r_[starts[1:], len(order)]
    return [(int(sorted_vals[a]), pos[order[a:b]]) for a, b in zip(starts, ends, strict=True)]


def _group(keys: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    """(number of distinct keys, group of each element in key order, first element of each group), like
    np.unique(return_inverse) but by a presence table, without sorting, when the keys are small integers."""
    n = len(keys)
    top = int(keys.max()) + 1 if n else 1
    if top > 8 * n + 1_000_000:
        uniq, inverse = np.unique(keys, return_inverse=True)
        count, inverse = len(uniq), inverse.ravel()
    else:
        present = np.zeros(top, dtype=bool)
        present[keys] = True
        ids = np.cumsum(present) - 1
        count, inverse = int(ids[-1]) + 1, ids[keys]
    first = np.zeros(count, dtype=np.int64)
    first[inverse[::-1]] = np.arange(n)[::-1]
    return count, inverse, first


def _layout_labels(
    layout_index: np.ndarray, data_parallel: np.ndarray, virtual: np.ndarray, layouts: Sequence[Layout]
) -> Any:
    """Labels like 'DP16 TP8 PP4 VP2 ZeRO-1', built once per distinct (layout, data-parallel degree, virtual
    stages)."""
    dp = data_parallel.astype(np.int64)
    v = virtual.astype(np.int64)
    n_dp, dp_code, _ = _group(dp)  # compact codes keep the presence table small
    keys = (layout_index.astype(np.int64) * n_dp + dp_code) * (int(v.max()) + 1) + v
    _, inverse, first = _group(keys)
    li_f, v_f = layout_index[first].astype(np.int64), v[first]
    _, pair, pair_first = _group(li_f * (int(v.max()) + 1) + v_f)  # few distinct (layout, virtual stages)
    suffix = np.asarray(
        [
            layouts[int(li_f[i])].model_copy(update={"virtual_stages": int(v_f[i])}).label(1)[len("DP1") :]
            for i in pair_first
        ],
        dtype=object,
    )
    # distinct (layout, data-parallel degree, virtual stages) give distinct labels: vectorized concatenation
    labels = "DP" + pd.Series(dp[first]).astype(str) + pd.Series(suffix[pair], dtype=str)
    return _categorical(inverse, categories=pd.Index(labels))


def evaluate(catalog: Catalog, config: Configuration) -> Estimate:
    """Evaluate one configuration with the exact model."""
    server = catalog.server(config.server)
    if server.gpu is None:
        raise PlannerInputError(
            f"server '{server.id}' has no GPU; choose one of: " + ", ".join(s.id for s in catalog.gpu_servers())
        )
    fabric = config.fabric or server.fabrics[0]
    catalog.fabric(fabric)
    if fabric not in server.fabrics:
        raise PlannerInputError(
            f"server '{server.id}' cannot use fabric '{fabric}'; its fabrics: {', '.join(server.fabrics)}"
        )
    gpu = catalog.gpu(server.gpu)
    lo, hi = gpu.min_power_limit_w / gpu.tdp_w, gpu.max_power_limit_w / gpu.tdp_w
    if not lo - 1e-9 <= config.power_cap <= hi + 1e-9:
        raise PlannerInputError(
            f"power cap {config.power_cap} is outside {gpu.id}'s configurable range "
            f"{lo:.2f}-{hi:.2f} of TDP ({gpu.min_power_limit_w:.0f}-{gpu.max_power_limit_w:.0f} W)"
        )
    wl = catalog.workload(config.model)
    space = pd.DataFrame(
        {"server": [server.id], "fabric": [fabric], "power_cap": [config.power_cap], "nodes": [config.nodes]}
    )
    df = evaluate_space(
        catalog,
        wl,
        site=config.site,
        purchase=config.purchase,
        work=Work(config.samples, config.global_batch, config.precision),
        layout=config.layout,
        life_years=config.life_years,
        space=space,
    )
    return estimate_from_row(df.iloc[0])


def estimate_from_row(r: pd.Series) -> Estimate:
    def f(k: str) -> float:
        return float(r[k])

    return Estimate(
        model=str(r["model"]),
        server=str(r["server"]),
        fabric=str(r["fabric"]),
        site=str(r["site"]),
        purchase=r["purchase"],
        nodes=int(r["nodes"]),
        gpus=int(r["gpus"]),
        gpu=str(r["gpu"]),
        power_cap=f("power_cap"),
        power_cap_w=f("power_cap_w"),
        precision=str(r["precision"]),
        layout=str(r["layout"]),
        global_batch=int(r["global_batch"]),
        samples_to_train=f("samples_to_train"),
        throughput_samples_per_s=f("throughput_samples_per_s"),
        step_time_s=f("step_time_s"),
        step_time_breakdown_s={k: f(f"t_{k}") for k in BREAKDOWN},
        time_to_train_h=f("time_to_train_h"),
        memory_per_gpu_gb=f("memory_per_gpu_gb"),
        gpu_memory_gb=f("gpu_memory_gb"),
        fits_memory=bool(r["fits_memory"]),
        gpu_power_w=f("gpu_power_w"),
        node_power_w=f("node_power_w"),
        power_kw=f("power_kw"),
        facility_power_kw=f("facility_power_kw"),
        energy_kwh=f("energy_kwh"),
        facility_energy_kwh=f("facility_energy_kwh"),
        switches=int(r["switches"]),
        capex_usd=f("capex_usd"),
        cost_usd=f("cost_usd"),
        cost_breakdown_usd={"hardware": f("hardware_usd"), "energy": f("energy_usd")},
        carbon_kg=f("carbon_kg"),
        achieved_tflops_per_gpu=f("achieved_tflops_per_gpu"),
        mfu=f("mfu"),
        scaling_efficiency=f("scaling_efficiency"),
        bottleneck=str(r["bottleneck"]),
    )
