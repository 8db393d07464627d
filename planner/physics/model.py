"""The exact performance / power / cost model, vectorized over configurations.

One configuration = (server type, node count, fabric, GPU power cap, parallel layout). For every
configuration the model predicts:

  step time            planner/physics/step.py states and composes it: compute + tensor- and context-parallel
                       communication + pipeline bubble and p2p + the exposed gradient all-reduce (NCCL's fastest
                       algorithm, in buckets, hidden under the backward pass as the framework does it) + optimizer
                       update + embedding all-to-all + framework overhead, bounded below by the data pipeline;
  throughput           global batch / step time;
  time-to-train        samples to converge at that batch / throughput / goodput (planner/physics/reliability.py);
  memory per GPU, power (GPU at its cap and what the step does, host, NICs, PSU, switches, PUE), energy,
  cost (amortized capex or rent in whole billing periods, plus energy), carbon, achieved TFLOP/s, MFU and the
  bottleneck.

The parallel layout is searched (``_LayoutSearch``): every candidate layout (tensor parallel within a node,
context parallel for long sequences, pipeline stages -- powers of two and divisors of the layers -- with the
fastest number of interleaved virtual stages, sequence parallelism, ZeRO stage, none/selective/full
recomputation, gradient accumulation) is evaluated for all configurations at once and the fastest that fits
memory and the workload's batch limit is kept -- "fastest" meaning least time to train (layouts may differ in
global batch, hence in samples to converge). The search is exact: it prunes only with lower bounds and
dominance relations that are proved in the comments where they are used. ``evaluate_space`` is the single
implementation; the scalar ``evaluate`` calls it with one configuration, so the optimizer, the CLI and the
brute-force checks all see the same numbers.
"""

from __future__ import annotations

import itertools
import math
import numbers
import reprlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, get_args

import numpy as np
import pandas as pd
from pydantic import BaseModel, ValidationError

from planner.data import Catalog, Configuration, Estimate, Layout, Precision, Server, Workload
from planner.errors import PlannerInputError, describe_validation_error
from planner.physics import communication as comm
from planner.physics import compute, cost, memory, power, reliability, step

DEFAULT_CAPS = (0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
DEFAULT_NODE_COUNTS = tuple(range(1, 1025))
BOTTLENECKS = ["compute", "fabric", "intra-node link", "pipeline bubble", "data pipeline", "power cap", "memory"]
BREAKDOWN = (
    "compute",
    "tensor_parallel",
    "context_parallel",
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
    """What to train: samples at the reference batch, optional fixed batch and precision.

    ``samples``: samples to train at the workload's reference batch (None: the workload's default; tokens or
    epochs convert with ``work_from``); ``global_batch``: a fixed global batch in samples, a whole number (an int,
    or a float such as 2048.0 that is one, kept as the int; None: the workload's policy); ``precision``: bf16,
    fp16, fp8, fp4, tf32 or fp32 (None: the workload's); ``failures``: include failures, restarts and checkpoints
    (goodput, planner/physics/reliability.py). A value out of range is a PlannerInputError."""

    samples: float | None = None
    global_batch: int | None = None
    precision: str | None = None
    failures: bool = True  # goodput: failures, restarts and checkpoints (planner/physics/reliability.py)

    def __post_init__(self) -> None:
        s = scenario_number(self.samples)
        if self.samples is not None and not (s is not None and math.isfinite(s) and s > 0):
            raise PlannerInputError(
                f"Work.samples must be a finite number of samples > 0 (got {self.samples!r}); leave it out for the "
                "workload's"
            )
        b = scenario_number(self.global_batch)
        if self.global_batch is not None and not (b is not None and math.isfinite(b) and b >= 1 and b == int(b)):
            raise PlannerInputError(
                f"Work.global_batch must be a whole number of samples >= 1 (got {self.global_batch!r}); leave it out "
                "for the workload's batch policy"
            )
        if b is not None:  # 2048.0 (or NumPy's 2048) is the whole number 2048: kept as an int
            g = self.global_batch
            object.__setattr__(self, "global_batch", int(g) if isinstance(g, numbers.Integral) else int(b))
        if self.precision is not None and self.precision not in PRECISIONS:
            raise PlannerInputError(
                f"Work.precision must be one of {', '.join(PRECISIONS)} (got {self.precision!r}); leave it out for "
                "the workload's"
            )


def scenario_number(v: Any) -> float | None:
    """v as a float where it is a real number (int, float, NumPy scalar; not a bool or a string), else None."""
    if isinstance(v, bool | np.bool_) or not isinstance(v, numbers.Real):
        return None
    return float(v)


def _listed(v: Any) -> list[Any] | None:
    """One number as a one-element list, an iterable (not a string) as a list, anything else None."""
    if scenario_number(v) is not None:
        return [v]
    if isinstance(v, str | bytes) or not isinstance(v, Iterable):
        return None
    return list(v)


PRECISIONS: tuple[str, ...] = get_args(Precision)
_M = TypeVar("_M", bound=BaseModel)


def check_catalog(catalog: Any) -> Catalog:
    """The catalog argument of a public entry point: a ``Catalog`` (``planner.load_catalog()``), else bad input."""
    if not isinstance(catalog, Catalog):
        raise PlannerInputError(
            f"catalog must be a planner.Catalog, got {type(catalog).__name__}: pass planner.load_catalog() (or "
            "load_catalog('my/catalog', 'my/models') for your own folders)"
        )
    return catalog


def validated(model: type[_M], value: Any, what: str) -> _M:
    """``value`` as a ``model`` instance: an instance as is, a mapping validated field by field; a field that is
    wrong or a value of another type is a PlannerInputError naming it (not pydantic's ValidationError)."""
    if isinstance(value, model):
        return value
    if not isinstance(value, dict):
        raise PlannerInputError(
            f"{what} must be a planner {model.__name__} or a dict of its fields, got {type(value).__name__}"
        )
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise PlannerInputError(describe_validation_error(exc, what)) from None


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


def pipeline_depths(layers: int) -> list[int]:
    """Pipeline depths searched: powers of two up to 64 (stages of ceil / floor layers where they do not divide:
    Megatron's uneven first and last stages) and every divisor of the layer count up to 128 (a 105-layer model
    needs 3, 5, 7, 15, 21 or 35 stages to fill 35 nodes)."""
    twos = {p for p in (1, 2, 4, 8, 16, 32, 64) if p <= layers}
    divisors = {d for d in range(1, min(layers, 128) + 1) if layers % d == 0}
    return sorted(twos | divisors)


def candidate_layouts(catalog: Catalog, workload: Workload, max_gpus_per_node: int) -> list[Layout]:
    fw = catalog.framework(workload.framework)
    transformer = workload.layers is not None and workload.hidden_size is not None
    tps = [t for t in (1, 2, 4, 8) if t <= max_gpus_per_node] if fw.tensor_parallel and transformer else [1]
    pps = pipeline_depths(workload.layers or 1) if fw.pipeline_parallel and transformer else [1]
    # ZeRO-1/2 shard state at no more communication than a plain all-reduce (the same volume, or 3/4 of it where
    # gradients are reduced in fp32 and parameters gathered in 16 bits), so in this model the highest of them
    # dominates stage 0 (no more time, less memory); stage 3 trades more volume for memory.
    zeros = sorted({min(fw.max_zero_stage, 2)} | ({3} if fw.max_zero_stage == 3 else set()))
    # pipelines only with the ZeRO stages the framework runs them with (DeepSpeed: ZeRO-2 and ZeRO-3 are
    # incompatible with pipeline parallelism), at the highest of them
    pipeline_zero = fw.max_zero_stage if fw.pipeline_max_zero_stage is None else fw.pipeline_max_zero_stage
    zeros_pp = [z for z in zeros if z <= pipeline_zero] or [pipeline_zero]
    # Selective recomputation only where the framework has it and the attention kernel stores its scores (a
    # FlashAttention kernel never does, so selective would equal none).
    recs = ["none", "block", "full"] if transformer else ["none"]
    if transformer and fw.selective_recompute and not workload.flash_attention:
        recs.insert(1, "selective")
    accs = [1, 2, 4, 8] if workload.micro_batch is None else [1]
    # context parallelism for long sequences: at least 4,096 tokens per GPU of a sequence
    seq = workload.sequence_length or 1
    cps = [c for c in (1, 2, 4, 8, 16) if c == 1 or seq // c >= 4096] if fw.context_parallel and transformer else [1]
    # Sequence parallelism where the framework has it and TP > 1, never without: it moves the same bytes (a
    # reduce-scatter + all-gather is an all-reduce) and only divides activations further, so it dominates.
    return [
        Layout(
            tensor_parallel=t,
            pipeline_parallel=p,
            zero_stage=z,
            recompute=r,
            accumulation=a,
            sequence_parallel=fw.sequence_parallel and t > 1,
            context_parallel=c,
        )
        for t, p, z, r, a, c in itertools.product(tps, pps, sorted(set(zeros) | set(zeros_pp)), recs, accs, cps)
        # context parallelism only once tensor parallelism spans at least half a node (Megatron practice: CP after
        # TP has used the NVLink domain; it keeps the layout space, and the search time, in proportion)
        if (c == 1 or t >= min(4, tps[-1])) and z in (zeros if p == 1 else zeros_pp)
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
        ok_caps = np.asarray([c for c in caps if gpu.allows_cap(c)], dtype=float)
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
    servers: Sequence[str] | str | None = None,
    fabrics: Iterable[str] | str | None = None,
    caps: Sequence[float] | float = DEFAULT_CAPS,
    nodes: Iterable[int] | int = DEFAULT_NODE_COUNTS,
    site: str = "us-colo",
    purchase: str = "buy",
    work: Work | None = None,
    layout: Layout | None = None,
    life_years: float = 4.0,
    space: pd.DataFrame | Space | None = None,
) -> pd.DataFrame:
    """Evaluate every configuration (servers x their fabrics x caps x node counts) in one call.

    Arguments (defaults in brackets):

    * ``workload``: a workload id (``planner models``) or a ``Workload``;
    * ``servers``: server ids, or one id [every GPU server of the catalog];
    * ``fabrics``: fabric ids, or one id, to keep [each server's fabrics];
    * ``caps``: GPU power caps as fractions of TDP in (0, 1] [0.4, 0.5, ..., 1.0]; each server keeps the caps
      within its GPU's configurable range (``min_power_limit_w`` / ``tdp_w`` .. 1);
    * ``nodes``: node counts, whole numbers >= 1, or one count [1..1024];
    * ``site``: site id (electricity price, PUE, carbon) ['us-colo']; ``purchase``: 'buy' or 'rent' ['buy'];
    * ``work``: samples, fixed global batch, precision, failures (``Work``) [the workload's];
    * ``layout``: a fixed parallel layout [None: the fastest that fits memory];
    * ``life_years``: service life of bought hardware, years > 0 (amortization) [4];
    * ``space``: an explicit table with columns server, fabric, power_cap, nodes instead of the grid.

    Returns one row per configuration with the chosen (fastest fitting) layout and all predictions; units are in
    the column names (``time_to_train_h``, ``power_kw``, ``facility_energy_kwh``, ``cost_usd``, ``carbon_kg``,
    ``memory_per_gpu_gb``, ``step_time_s``; ``power_cap`` is the fraction of TDP, ``power_cap_w`` in watts; the
    ``t_*`` columns are the step-time terms in seconds per step, ``mfu`` and ``goodput`` fractions).
    Rows whose layout does not fit GPU memory are kept with ``fits_memory`` False, and ``feasible`` says whether
    the configuration can run at all (fits memory, a valid layout, available to buy or rent at that cap); a bought
    run longer than ``life_years`` is not excluded here (``solve`` excludes it): compare ``time_to_train_h``.
    Caps outside every listed GPU's range give no rows (with the columns). Bad arguments (an unknown id, a cap
    outside (0, 1], a node count below 1 or fractional, servers on none of the listed fabrics, an explicit space
    with a missing column or a row out of range) raise PlannerInputError."""
    catalog = check_catalog(catalog)
    if isinstance(workload, str):
        wl = catalog.workload(workload)
    elif isinstance(workload, Workload):
        wl = workload
    else:
        raise PlannerInputError(
            f"workload must be a workload id such as 'llama3-8b' (planner models) or a Workload, got "
            f"{type(workload).__name__}"
        )
    if work is not None and not isinstance(work, Work):
        raise PlannerInputError(
            f"work must be a planner.Work(samples=..., global_batch=...), got {type(work).__name__}"
        )
    work = work or Work()
    site_ = catalog.site(site)
    if purchase not in ("buy", "rent"):
        raise PlannerInputError(f"purchase must be 'buy' or 'rent' (got {purchase!r})")
    _check_life(life_years)
    if space is None:
        servers = [servers] if isinstance(servers, str) else servers
        fabrics = [fabrics] if isinstance(fabrics, str) else fabrics
        caps = _check_caps(caps)
        nodes = _check_nodes(nodes)
        listed = [catalog.server(s) for s in servers] if servers is not None else catalog.gpu_servers()
        for f in fabrics or ():
            catalog.fabric(f)
        _no_gpu(catalog, [s for s in listed if s.gpu is None])
        space = build_space(catalog, listed, fabrics, caps, nodes)
        if not len(space.nodes):
            allowed = set(fabrics) if fabrics is not None else None
            pairs = [(s, f) for s in listed for f in s.fabrics if allowed is None or f in allowed]
            if not pairs:  # no listed server on a listed fabric: bad input, said with the fabrics each has
                raise PlannerInputError(_empty_space_message(listed, allowed or set()))
            # no cap within any listed GPU's range: no rows, with the columns (one row's evaluation, none kept)
            s, f = pairs[0]
            gpu = catalog.gpu(s.gpu or "")
            full = np.asarray([gpu.max_power_limit_w / gpu.tdp_w])
            one = Space([s.id], [f], np.zeros(1, np.int64), np.zeros(1, np.int64), full, np.ones(1, np.int64))
            return evaluate_space(
                catalog, wl, site=site, purchase=purchase, work=work, life_years=life_years, space=one
            ).iloc[0:0]
    elif isinstance(space, pd.DataFrame):
        space = _space_from_frame(catalog, space)
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
        cap_tf[m], cap_pf[m] = power.load_curve_at(
            catalog.power_curves[gp.power_curve], cap[m], gp.training_power_fraction
        )
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
    half_batch = wl.efficiency_half_batch * compute.half_batch_scale(catalog.calibration, wl)
    overlap, tp_overlap = compute.overlap_fractions(catalog.calibration, fw)

    # ---- layout search ----------------------------------------------------------------------------
    layouts = [layout] if layout is not None else candidate_layouts(catalog, wl, int(g.max()))
    samples_base = work.samples if work.samples is not None else wl.default_samples
    layers = float(wl.layers or 1)
    if layout is not None and layout.recompute == "block" and not (wl.layers and wl.hidden_size):
        raise PlannerInputError(
            f"block recomputation recomputes half of each pipeline stage's transformer layers, and '{wl.id}' states "
            "no transformer layers: use --recompute full (or none)"
        )
    if layout is not None and layout.virtual_stages and layout.virtual_stages * layout.pipeline_parallel > layers:
        raise PlannerInputError(
            f"layout has {layout.pipeline_parallel} x {layout.virtual_stages} = "
            f"{layout.pipeline_parallel * layout.virtual_stages} virtual pipeline stages but '{wl.id}' has only "
            f"{int(layers)} layers: lower virtual_stages (or leave it unset to choose the fastest)"
        )
    ukey = si.astype(np.int64) * (int(N.max()) + 1) + N
    _, u_of, first = _group(ukey)  # first: a representative configuration of each U row
    rows = step.Rows(
        wl=wl,
        fw=fw,
        global_batch=work.global_batch,
        fixed_layout=layout is not None,
        g=g[first],
        G=G[first],
        N=N[first],
        intra_bytes_s=intra_bw[first],
        mfu=mfu_cap[first],
        peak_tflops=peak[first],
        cpu_cores=cpu_cores[first],
        storage_bytes_s=storage_bw[first],
        gpu_memory_gb=gpu_mem[first],
        memory_bandwidth_tbps=mem_bw[first],
        half_batch=half_batch,
        overlap=overlap,
        grad_bytes_per_param=4.0 if precision in ("fp32", "tf32") else 2.0,  # TF32 computes on fp32 tensors
        grad_reduce_bytes_per_param=(
            4.0
            if precision in ("fp32", "tf32") or (fw.gradient_reduce_fp32 and precision in ("bf16", "fp8", "fp4"))
            else 2.0
        ),
        nvls=per_server(lambda s, gp: gp.nvlink_sharp).astype(bool)[first],
        fp8=np.asarray([u in ("fp8", "fp4") for _, u in peak_used])[si][first],
        tp_overlap=tp_overlap,
        tensor_bytes=4.0 if precision in ("fp32", "tf32") else 2.0,
        gemm_tokens_half=float(catalog.calibration.get("gemm_tokens_half", 0.0)),
        gemm_width_half=float(catalog.calibration.get("gemm_width_half", 0.0)),
    )
    _, r_of, first_r = _group(ukey * (len(space.fabric_ids) + 1) + fi)
    ig_bw = np.where(N > 1, node_bw / g, intra_bw)  # per-GPU bandwidth to other nodes (or peers)
    fab = step.FabricRows(
        u=u_of[first_r],
        node_bytes_s=node_bw[first_r],
        latency_s=inter_lat[first_r],
        peer_bytes_s=ig_bw[first_r],
        in_network=per_fabric("in_network_reduction").astype(bool)[first_r],
    )
    search = _LayoutSearch(rows, fab, layouts, layers, n, u_of, r_of, first_r, cap, cap_tf, si, gpus_, catalog)
    cols = search.run()
    samples_factor = cols.pop("samples_factor")
    res.update(cols)
    li_arr = np.maximum(cols["layout_index"], 0)
    for attr in (
        "tensor_parallel",
        "pipeline_parallel",
        "zero_stage",
        "recompute",
        "accumulation",
        "sequence_parallel",
        "context_parallel",
    ):
        values = [getattr(lay, attr) for lay in layouts]
        if isinstance(values[0], str):  # a categorical, not per-row Python strings (pandas would copy them)
            cats = sorted(set(values))
            res[attr] = _categorical(np.asarray([cats.index(v) for v in values], dtype=np.int8)[li_arr], cats)
        else:
            res[attr] = np.asarray(values)[li_arr]
    fits_mem = cols["fits_memory"].astype(bool)
    res["fits_memory"] = fits_mem
    step_s = cols["step_time_s"].astype(float)
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
    thr = B / step_s
    samples = samples_base * samples_factor
    ideal_hours = samples / thr / 3600.0
    if work.failures:
        write_s = reliability.checkpoint_write_s(reliability.checkpoint_bytes(wl.params, wl.trainable), N, storage_bw)
        good = reliability.goodput(G, write_s)
    else:
        good = np.ones(n)
    hours = ideal_hours / good
    res["goodput"] = good
    res["time_lost_to_failures_h"] = hours - ideal_hours
    res["throughput_samples_per_s"] = thr
    res["samples_to_train"] = samples
    res["time_to_train_h"] = hours
    achieved = thr * wl.train_flops_per_sample / G / 1e12
    res["achieved_tflops_per_gpu"] = achieved
    res["mfu"] = achieved / peak
    t_comp = cols["t_compute"].astype(float)
    res["scaling_efficiency"] = t_comp / step_s

    # ---- power & energy ------------------------------------------------------------------------------
    busy = t_comp / step_s
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
    if not valid_any.all():  # rows no layout is valid for (e.g. beyond the workload's largest batch)
        res["layout"] = pd.Categorical(np.where(valid_any, np.asarray(res["layout"], dtype=object), "no valid layout"))
    res["model"] = _categorical(np.zeros(n, dtype=np.int8), categories=[wl.id])
    res["valid_layout"] = valid_any
    res.update(_price_columns(catalog, res, site_.id, purchase, life_years, (r_of, first_r)))
    return pd.DataFrame(res, copy=False)


# Columns of an evaluate_space table proportional to the samples to train, all else fixed (see scale_work).
WORK_PROPORTIONAL_COLUMNS = ("samples_to_train", "time_to_train_h", "time_lost_to_failures_h", "energy_kwh")


def scale_work(
    catalog: Catalog,
    df: pd.DataFrame,
    samples_from: float,
    samples_to: float,
    site: str,
    purchase: str,
    life_years: float,
) -> pd.DataFrame:
    """The table ``evaluate_space`` returns for ``samples_to`` samples, from its table for ``samples_from`` with the
    same workload, configurations, global batch, precision and failures setting -- without evaluating again.

    The property it rests on, stated here because callers rely on it (fleet planning evaluates each workload
    once per precision and batch, not once per job): every term of a configuration's step time, its layout
    choice (the fastest per sample), throughput, power and goodput (planner/physics/reliability.py: a fraction of time,
    set by the GPU count and checkpoint write time) are independent of how many samples are trained, so
    ``WORK_PROPORTIONAL_COLUMNS`` (samples, hours, hours lost to failures, IT energy) scale by samples_to /
    samples_from, and every priced column follows from them (``price_space``: facility energy, amortized capex,
    energy cost, rent in whole billing periods, carbon). A per-run cost added to the model (start-up,
    evaluation, a fixed checkpoint) would break the proportionality: tests/physics/test_space_properties.py compares
    this with a fresh evaluation, column for column, and fails then."""
    for v, name in ((samples_from, "samples_from"), (samples_to, "samples_to")):
        if not (isinstance(v, numbers.Real) and math.isfinite(v) and v > 0):
            raise PlannerInputError(f"scale_work: {name} must be a finite number of samples > 0 (got {v!r})")
    out = df.copy(deep=False)  # copy-on-write: the caller's table is not modified
    factor = float(samples_to) / float(samples_from)
    for col in WORK_PROPORTIONAL_COLUMNS:
        out[col] = np.asarray(df[col], dtype=float) * factor
    return price_space(catalog, out, site, purchase, life_years)


def invalid_layout_message(wl: Workload, global_batch: int | None) -> str:
    """Why no parallel layout is valid for a configuration, and what to change."""
    limit = ""
    if global_batch is None and wl.max_global_batch_tokens:
        limit = (
            f", and data parallelism must keep the global batch within the largest '{wl.id}' trains at, "
            f"{wl.max_global_batch_tokens:,.0f} tokens per step (use fewer nodes)"
        )
    elif global_batch is None and wl.max_global_batch:
        limit = (
            f", and the data-parallel replicas at most the largest global batch with a published convergence "
            f"point for '{wl.id}', {wl.max_global_batch:,.0f} samples per step, one or more each (use fewer nodes)"
        )
    return (
        "no parallel layout is valid for these node counts (tensor x context x pipeline degrees must divide the GPUs, "
        f"tensor parallelism the GPUs per node{limit})"
    )


class _LayoutSearch:
    """The exact search for the fastest fitting layout of every configuration.

    Three levels: everything that depends only on (server, node count) and the layout -- validity, batch,
    memory, compute at full power, tensor-parallel and intra-node terms, the data pipeline -- is computed once
    per distinct (server, nodes) row U (``step.layout_rows``, ``step.layout_terms``); the fabric terms once per
    (server, nodes, fabric) row R; only the cap enters per configuration, by broadcasting over the cap levels,
    and only where the layout fits memory. Configurations where no layout fits keep their smallest-memory
    layout (reported as not fitting).

    Phase A (``_prepare``), per layout on the U rows: validity, memory and a lower bound of the layout's score
    (``step.step_lower_bound`` x samples per sample of batch). Phase B (``_grid``) visits layouts from the best
    bound and skips a row whose bound cannot beat the worst current score among its configurations: exact
    pruning. Dominance (also exact): on a row where a layout fits at every interleave it may be timed at (a
    variant that holds less memory may be allowed a larger one), a variant that only adds recomputation or
    (without pipelining) only adds accumulation steps is never faster -- every step term is at least as large
    (more recompute FLOPs or micro-batches hide at most as much all-reduce as they add) -- so the variant is skipped
    there (``_dominating_keys``). ZeRO-3 is always searched: its traffic is larger but splits into more buckets,
    and no term-by-term ordering against stage 1 or 2 is proved. ``_finish`` computes the full breakdown
    once per configuration, for its winner."""

    def __init__(
        self,
        rows: step.Rows,
        fab: step.FabricRows,
        layouts: list[Layout],
        layers: float,
        n: int,
        u_of: np.ndarray,
        r_of: np.ndarray,
        first_r: np.ndarray,
        cap: np.ndarray,
        cap_tf: np.ndarray,
        si: np.ndarray,
        gpus_: list[Any],
        catalog: Catalog,
    ) -> None:
        self.rows, self.fab, self.layouts, self.layers = rows, fab, layouts, layers
        self.n, self.u_of, self.r_of, self.cap_tf = n, u_of, r_of, cap_tf
        self.n_r = len(fab.u)
        cap_levels = np.sort(pd.unique(cap))
        self.c_of = np.searchsorted(cap_levels, cap)
        tf_by_server = np.asarray(
            [
                power.load_curve_at(catalog.power_curves[gp.power_curve], cap_levels, gp.training_power_fraction)[0]
                for gp in gpus_
            ]
        ).reshape(len(gpus_), len(cap_levels))
        self.inv_tf = np.ascontiguousarray((1.0 / tf_by_server[si[first_r]]).T)  # caps x rows
        self.cols: dict[str, np.ndarray] = {
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
            "t_context_parallel",
            "t_pipeline_bubble",
            "t_pipeline_p2p",
            "t_data_parallel_exposed",
            "t_dp_inter_share",
            "t_optimizer_step",
            "t_embedding_all_to_all",
            "t_framework_overhead",
            "t_data_pipeline_stall",
        ):
            self.cols[k] = np.full(n, np.nan)
        n_u = len(rows.N)
        self.min_mem = np.full(n_u, np.inf)
        self.min_layout = np.full(n_u, -1, dtype=np.int64)
        self.per_u: dict[int, step.Arrays] = {}
        self.terms_u: dict[int, step.Arrays] = {}

    def run(self) -> dict[str, np.ndarray]:
        prepared = self._prepare()
        won = self._grid(prepared)
        self._finish(won)
        if self.rows.fixed_layout and (self.cols["layout_index"] < 0).all():
            raise PlannerInputError(invalid_layout_message(self.rows.wl, self.rows.global_batch))
        return self.cols

    def _virtual(self, lay: Layout) -> list[int]:
        return _virtual_options(lay, self.layers, self.rows.wl)

    def _prepare(self) -> list[tuple[float, int, Layout, step.Arrays, np.ndarray, np.ndarray]]:
        """Phase A: validity, memory, the smallest-memory layout per row, dominance and the lower bounds."""
        fits_by_key: dict[LayoutKey, np.ndarray] = {}
        phase_a = []
        for li, lay in enumerate(self.layouts):
            self.per_u[li] = step.layout_rows(self.rows, lay)
        # A fixed global batch: on a row where some layout trains exactly it (no more replicas than micro-batches),
        # layouts that would round it up are not offered -- they would win by training a larger batch than asked.
        exact = np.zeros(len(self.rows.N), dtype=bool)
        for d in self.per_u.values():
            exact |= d["valid"] & d["exact_batch"]
        for li, lay in enumerate(self.layouts):
            d = self.per_u[li]
            d["valid"] = d["valid"] & (d["exact_batch"] | ~exact)
            if not d["valid"].any():
                continue
            smaller = d["valid"] & (d["mem"] < self.min_mem)
            self.min_mem = np.where(smaller, d["mem"], self.min_mem)
            self.min_layout = np.where(smaller, li, self.min_layout)
            fit = d["valid"] & memory.fits(d["mem"], self.rows.gpu_memory_gb)
            if fit.any():
                fits_by_key[_layout_key(lay)] = self._fits_every_interleave(lay, d, fit)
                phase_a.append((li, lay, d, fit))
        prepared = []
        for li, lay, d, fit in phase_a:
            for key in _dominating_keys(lay):
                if key in fits_by_key:
                    fit = fit & ~fits_by_key[key]
            if not fit.any():
                continue
            # the cheap bound (compute only) orders the layouts; the communication terms are computed only for a
            # layout some row of which that bound cannot rule out (in _grid)
            lb_cheap = step.compute_lower_bound(self.rows, lay, d, max(self._virtual(lay)))
            lb = np.where(fit, lb_cheap * d["sf_per_B"], np.inf)
            prepared.append((float(np.min(lb)), li, lay, d, fit, lb))
        prepared.sort(key=lambda x: (x[0], x[1]))
        return prepared

    def _fits_every_interleave(self, lay: Layout, d: step.Arrays, fit: np.ndarray) -> np.ndarray:
        """Rows where the layout fits at every interleave it may be timed at: only there may it stand in for its
        variants with more recomputation or a higher ZeRO stage (which hold less memory and so may be allowed a
        larger interleave, whose smaller bubble can outweigh their extra work)."""
        options = self._virtual(lay)
        if lay.virtual_stages is not None or len(options) == 1:
            return fit  # one interleave, already in the memory
        return fit & np.logical_and.reduce([step.interleave_fits(self.rows, lay, d, v) for v in options])

    def _terms(self, li: int, lay: Layout, d: step.Arrays) -> step.Arrays:
        if li not in self.terms_u:
            self.terms_u[li] = step.layout_terms(self.rows, lay, d)
        return self.terms_u[li]

    def _score(self, lay: Layout, d: step.Arrays, su: step.Arrays, r: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Time to train per reference sample (the search's score) on the R rows at cap slowdown x."""
        t = step.step_terms(self.rows, self.fab, lay, d, su, r, x, lambda a: a, self._virtual(lay))
        return np.asarray(np.maximum(t["t_gpu"], t["t_data"]) * d["sf_per_B"][self.fab.u[r]])

    def _grid(self, prepared: list[tuple[float, int, Layout, step.Arrays, np.ndarray, np.ndarray]]) -> np.ndarray:
        """Phase B on a dense grid: columns = R rows, rows = distinct cap levels (reductions over caps are
        vectorized); only the winning layout's index and score are kept. Returns each configuration's winner."""
        best = np.full(self.inv_tf.shape, -np.inf)  # absent cells stay -inf: never block pruning
        best[self.c_of, self.r_of] = np.inf
        won = np.full(best.shape, -1, dtype=np.int64)
        worst = np.max(best, axis=0)
        x_min = self.inv_tf.min(axis=0)  # the fastest cap level of each row's GPU (a lower bound where absent)
        for _, li, lay, d, fit, lb in prepared:
            r = np.flatnonzero(lb[self.fab.u] < worst)
            if len(r) == 0:
                continue
            su = self._terms(li, lay, d)
            lb_full = np.where(
                fit, step.step_lower_bound(self.rows, lay, su, max(self._virtual(lay))) * d["sf_per_B"], np.inf
            )
            r = r[lb_full[self.fab.u[r]] < worst[r]]
            if len(r) == 0:
                continue
            # second, exact bound per row: the score at the row's fastest cap (the step grows with compute time:
            # busy time rises 1:1 and more, hidden all-reduce by at most 2/3 of it)
            r = r[self._score(lay, d, su, r, x_min[r]) < worst[r]]
            if len(r) == 0:
                continue
            sc = self._score(lay, d, su, r, self.inv_tf[:, r])
            cur = best[:, r]
            better = sc < cur
            if not better.any():
                continue
            new_best = np.where(better, sc, cur)
            best[:, r] = new_best
            won[:, r] = np.where(better, li, won[:, r])
            worst[r] = np.max(new_best, axis=0)
        return np.asarray(won[self.c_of, self.r_of])

    def _breakdown(self, li: int, idx: np.ndarray) -> step.Arrays:
        """The full step breakdown of the configurations idx under layout li."""
        lay, d = self.layouts[li], self.per_u[li]
        su = self._terms(li, lay, d)
        mask = np.zeros(self.n_r, dtype=bool)  # their R rows, each once
        mask[self.r_of[idx]] = True
        r = np.flatnonzero(mask)
        rr = (np.cumsum(mask) - 1)[self.r_of[idx]]
        t = step.step_terms(
            self.rows, self.fab, lay, d, su, r, 1.0 / self.cap_tf[idx], lambda a: a[rr], self._virtual(lay)
        )
        uu = self.u_of[idx]
        virtual = t["virtual_stages"]
        return {
            "data_parallel": d["dp"][uu],
            "global_batch": d["B"][uu],
            "samples_factor": d["sf_per_B"][uu] * d["B"][uu],
            "micro_batch": d["mb"][uu],
            "t_compute": t["t_compute"],
            "t_tensor_parallel": t["t_tensor_parallel"],
            "t_context_parallel": t["t_context_parallel"],
            "t_pipeline_bubble": t["bubble1"] / virtual,
            "t_pipeline_p2p": t["p2p1"] * virtual,
            "virtual_stages": virtual,
            "t_data_parallel_exposed": t["t_data_parallel_exposed"],
            "t_dp_inter_share": t["via_fabric"].astype(float),
            "t_optimizer_step": t["t_optimizer_step"],
            "t_embedding_all_to_all": t["t_embedding_all_to_all"],
            "t_framework_overhead": np.full(len(idx), self.rows.t_overhead_s),
            "t_data_pipeline_stall": np.maximum(t["t_data"] - t["t_gpu"], 0.0),
            "step_time_s": np.maximum(t["t_gpu"], t["t_data"]),
        }

    def _store(self, li: int, idx: np.ndarray, fit: bool) -> None:
        parts = self._breakdown(li, idx)
        # the memory of the layout as chosen: its interleave's activations in flight included
        mem = step.interleaved_memory_gb(self.layouts[li], self.per_u[li], self.u_of[idx], parts["virtual_stages"])
        cols = self.cols
        if len(idx) == self.n:  # one layout wins everywhere: take the arrays as they are
            cols["layout_index"][:] = li
            cols["fits_memory"][:] = fit
            cols.update(parts, memory_per_gpu_gb=np.asarray(mem, dtype=float))
            return
        cols["layout_index"][idx] = li
        cols["memory_per_gpu_gb"][idx] = mem
        cols["fits_memory"][idx] = fit
        for k, v in parts.items():
            cols[k][idx] = v

    def _finish(self, won: np.ndarray) -> None:
        """Breakdowns of the winners; configurations where no layout fits get the smallest-memory layout."""
        for li, idx in _indices_by_value(won):
            self._store(li, idx, True)
        no_fit = np.where(self.cols["layout_index"] < 0, self.min_layout[self.u_of], -1)
        for li, idx in _indices_by_value(no_fit):
            self._store(li, idx, False)


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
        period_h = srv_attr(lambda s: cost.BILLING_PERIOD_H[s.rent_billing_period])
        r = cost.rent_usd(N, rent, hours, period_h)  # rent includes power and network: no separate energy bill
        out["capex_usd"], out["hardware_usd"], out["energy_usd"] = 0.0, r, 0.0
        out["cost_usd"], out["rent_usd_per_month"] = r, N * rent
        cap_ok = (srv_attr(lambda s: float(s.power_cap_settable)) > 0) | (np.asarray(df["power_cap"]) >= 1 - 1e-9)
        available = np.isfinite(rent) & cap_ok  # a rented GPU whose limit cannot be set runs at TDP
    out["available"] = available
    out["carbon_kg"] = fac_kwh * site_.carbon_kg_per_kwh
    out["site"] = _categorical(np.zeros(len(N), dtype=np.int8), categories=[site_.id])
    out["purchase"] = _categorical(np.zeros(len(N), dtype=np.int8), categories=[purchase])
    out["feasible"] = np.asarray(df["fits_memory"], dtype=bool) & available & np.asarray(df["valid_layout"], dtype=bool)
    return out


def _check_life(life_years: Any) -> None:
    v = scenario_number(life_years)
    if v is None or not (math.isfinite(v) and v > 0):
        raise PlannerInputError(f"life_years must be a finite number of years > 0 (got {life_years!r}); default 4")


def _check_caps(caps: Any) -> list[float]:
    """Power caps: fractions of TDP in (0, 1], at least one (one number is read as one cap)."""
    listed = _listed(caps)
    values = [scenario_number(c) for c in listed or []]
    bad = [c for c, v in zip(listed or [], values, strict=True) if v is None or not 0 < v <= 1]
    if listed is None or bad or not listed:
        raise PlannerInputError(
            f"caps are GPU power caps as fractions of TDP in (0, 1], e.g. [0.6, 0.8, 1.0] (got {reprlib.repr(caps)}"
            + (f": {bad[0]!r} is not one)" if bad else ")")
        )
    return [float(v) for v in values if v is not None]


def _check_nodes(nodes: Any) -> list[int]:
    """Node counts: whole numbers >= 1, at least one (one number is read as one count)."""
    listed = _listed(nodes)
    values = [scenario_number(n) for n in listed or []]
    bad = [
        n
        for n, v in zip(listed or [], values, strict=True)
        if v is None or not (math.isfinite(v) and v >= 1 and v == int(v))
    ]
    if listed is None or bad or not listed:
        raise PlannerInputError(
            f"nodes are node counts, whole numbers >= 1, e.g. range(1, 65) (got {reprlib.repr(nodes)}"
            + (f": {bad[0]!r} is not one)" if bad else ")")
        )
    return [int(v) for v in values if v is not None]


SPACE_COLUMNS = ("server", "fabric", "power_cap", "nodes")


def _space_from_frame(catalog: Catalog, df: pd.DataFrame) -> Space:
    """An explicit table of configurations, checked row by row (vectorized): every column there, known servers on
    fabrics they can use, whole node counts >= 1, caps within the GPU's configurable range -- a row the model
    would otherwise estimate anyway (a cap of 0.1 on an H100, an H100 on EDR) or turn into NaN (0 nodes)."""
    missing = [c for c in SPACE_COLUMNS if c not in df.columns]
    if missing:
        raise PlannerInputError(
            f"space needs the columns {', '.join(SPACE_COLUMNS)} (one row per configuration); missing: "
            + ", ".join(missing)
        )
    if df[["server", "fabric"]].isna().to_numpy().any():
        raise PlannerInputError("space: every row needs a server and a fabric id (a missing one found)")
    nodes = pd.to_numeric(df["nodes"], errors="coerce").to_numpy(dtype=float)
    bad = ~(np.isfinite(nodes) & (nodes >= 1) & (nodes == np.floor(nodes)))
    if bad.any():
        raise PlannerInputError(
            f"space: nodes are whole numbers >= 1 (row {_shown(df.index[int(np.argmax(bad))])}: "
            f"{_shown(df['nodes'].iloc[int(np.argmax(bad))])})"
        )
    caps = pd.to_numeric(df["power_cap"], errors="coerce").to_numpy(dtype=float)
    s_cat, f_cat = pd.Categorical(df["server"]), pd.Categorical(df["fabric"])
    sp = Space(
        [str(x) for x in s_cat.categories],
        [str(x) for x in f_cat.categories],
        np.asarray(s_cat.codes, dtype=np.int64),
        np.asarray(f_cat.codes, dtype=np.int64),
        caps,
        nodes.astype(np.int64),
    )
    servers = [catalog.server(s) for s in sp.server_ids]
    for f in sp.fabric_ids:
        catalog.fabric(f)
    _no_gpu(catalog, [s for s in servers if s.gpu is None])
    usable = np.asarray([[f in s.fabrics for f in sp.fabric_ids] for s in servers], dtype=bool)
    wrong = ~usable[sp.server_idx, sp.fabric_idx]
    if wrong.any():
        s = servers[int(sp.server_idx[np.argmax(wrong)])]
        f = sp.fabric_ids[int(sp.fabric_idx[np.argmax(wrong)])]
        raise PlannerInputError(f"space: server '{s.id}' cannot use fabric '{f}'; its fabrics: {', '.join(s.fabrics)}")
    gpus = [catalog.gpu(s.gpu or "") for s in servers]
    lo = np.asarray([g.min_power_limit_w / g.tdp_w for g in gpus])[sp.server_idx] - 1e-9
    hi = np.asarray([g.max_power_limit_w / g.tdp_w for g in gpus])[sp.server_idx] + 1e-9
    out = ~((caps > 0) & (caps <= 1) & (caps >= lo) & (caps <= hi))  # NaN is out
    if out.any():
        k = int(np.argmax(out))
        g, server_id = gpus[int(sp.server_idx[k])], servers[int(sp.server_idx[k])].id
        raise PlannerInputError(
            f"space: power cap {_shown(df['power_cap'].iloc[k])} of server '{server_id}' is outside "
            f"{g.id}'s configurable range {g.min_power_limit_w / g.tdp_w:.2f}-{g.max_power_limit_w / g.tdp_w:.2f} "
            "of TDP (power_cap is a fraction of TDP)"
        )
    return sp


def _shown(v: Any) -> str:
    """A value as the user typed it: 0.1, not np.float64(0.1)."""
    return repr(v.item() if isinstance(v, np.generic) else v)


def _empty_space_message(servers: Sequence[Server], fabrics: set[str]) -> str:
    """Why no listed server is on a listed fabric, with the fabrics each has."""
    return f"none of the listed servers can use fabric(s) {', '.join(sorted(fabrics))}; their fabrics: " + "; ".join(
        f"{s.id}: {', '.join(s.fabrics)}" for s in servers
    )


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
    intra = df["t_tensor_parallel"] + df["t_context_parallel"] + dp_exp * (1 - inter_share) + (a2a + p2p) * ~multi
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


def _virtual_options(lay: Layout, layers: float, wl: Workload) -> list[int]:
    """Virtual pipeline stages per GPU (Megatron's interleaved 1F1B schedule) to choose from: the layout's own
    number if it fixes one, else 1, 2, 4 or 8 with at least one layer per virtual stage and whole layers per chunk
    of the busiest stage (``step.virtual_divides``)."""
    if lay.pipeline_parallel == 1:
        return [1]
    if lay.virtual_stages is not None:
        return [lay.virtual_stages]
    return [v for v in (1, 2, 4, 8) if v * lay.pipeline_parallel <= layers and step.virtual_divides(wl, lay, v)] or [1]


LayoutKey = tuple[int, int, int, str, int, bool, int]
# the recomputation each one dominates where it fits: it recomputes (costs) no more -- selective and block are not
# ordered against each other (selective re-runs attention scores on every layer, block half the layers in full)
RECOMPUTE_LESS = {"none": (), "selective": ("none",), "block": ("none",), "full": ("none", "selective", "block")}


def _layout_key(lay: Layout) -> LayoutKey:
    return (
        lay.tensor_parallel,
        lay.pipeline_parallel,
        lay.zero_stage,
        lay.recompute,
        lay.accumulation,
        lay.sequence_parallel,
        lay.context_parallel,
    )


def _dominating_keys(lay: Layout) -> list[LayoutKey]:
    """Layouts at least as fast as ``lay`` wherever they fit (same tensor and pipeline degrees)."""
    tp, pp, z, rec, acc, sp, cp = _layout_key(lay)
    keys: list[LayoutKey] = []
    for less in RECOMPUTE_LESS[rec]:
        keys.append((tp, pp, z, less, acc, sp, cp))
    if pp == 1:
        keys += [(tp, pp, z, rec, a, sp, cp) for a in (1, 2, 4, 8, 16, 32) if a < acc]
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


def evaluate(catalog: Catalog, config: Configuration | dict[str, Any]) -> Estimate:
    """Evaluate one configuration with the exact model.

    ``catalog``: ``planner.load_catalog()``; ``config``: a ``Configuration`` or a dict of its fields -- model,
    server and nodes required; fabric [the server's first listed], power_cap as a fraction of TDP [1.0], site
    ['us-colo'], purchase 'buy' or 'rent' ['buy'], samples [the workload's], global_batch [the workload's
    policy], precision [the workload's], layout [the fastest that fits], life_years [4], failures [True].

    The ``Estimate`` states its units in its field names (``time_to_train_h``, ``facility_energy_kwh``,
    ``cost_usd``, ``power_kw``, ``memory_per_gpu_gb``...). A configuration whose layout does not fit GPU memory is
    still estimated, with ``fits_memory`` False and ``memory_per_gpu_gb`` above ``gpu_memory_gb``: check it before
    using the figures (``planner evaluate`` exits 1 there), or fix a layout that shards more (``Layout``). A bought
    run longer than ``life_years`` is likewise estimated; compare ``time_to_train_h`` with the life.

    Raises PlannerInputError for an unknown id, a field out of range, a fabric the server cannot use, a cap outside
    the GPU's configurable range or a layout that cannot run. A precision given by name that the server's GPU
    lacks (fp8, fp4) is bad input, never an estimate silently in another precision; the workload's own falls back
    (fp4 to fp8, fp8 to bf16) and the estimate's ``precision`` says which it computed in."""
    catalog = check_catalog(catalog)
    config = validated(Configuration, config, "configuration")
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
    if config.precision is not None and not compute.has_precision(gpu, config.precision):
        used = compute.precision_used(gpu, config.precision)  # asked for by name: refused, as `planner evaluate` does
        raise PlannerInputError(
            f"{gpu.id} has no {config.precision}: give precision='{used}', or leave precision out (the workload's "
            f"own falls back to the next precision the GPU has), or choose a server whose GPU has {config.precision}"
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
        work=Work(config.samples, config.global_batch, config.precision, config.failures),
        layout=config.layout,
        life_years=config.life_years,
        space=space,
    )
    if not bool(df["valid_layout"].iloc[0]):
        raise PlannerInputError(invalid_layout_message(wl, config.global_batch))
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
        goodput=f("goodput"),
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
