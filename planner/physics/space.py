"""The exact performance / power / cost model, vectorized over a space of configurations.

One configuration = (server type, node count, fabric, GPU power cap); the parallel layout is searched for each
(planner/physics/layouts.py). For every configuration ``evaluate_space`` predicts:

  step time            planner/physics/step.py states and composes it: compute + tensor- and context-parallel
                       communication + pipeline bubble and p2p + the exposed gradient all-reduce (NCCL's fastest
                       algorithm, in buckets, hidden under the backward pass as the framework does it) + optimizer
                       update + embedding all-to-all + framework overhead, bounded below by the data pipeline;
  throughput           global batch / step time;
  time-to-train        samples to converge at that batch / throughput / goodput (planner/physics/reliability.py);
  memory per GPU, power (GPU at its cap and what the step does, host, NICs, PSU, switches; planner/physics/power.py),
  IT energy, achieved TFLOP/s, MFU and the bottleneck; then the priced columns (planner/physics/pricing.py: PUE,
  cost as amortized capex or rent in whole billing periods plus energy, carbon).

The evaluation runs in named steps: the space (``grid_space`` or ``space_from_frame``), its hardware columns
(``hardware_columns``), the layout search on the distinct (server, nodes) and (server, nodes, fabric) rows
(``search_layouts``), then the time, power and label columns and the prices. ``evaluate_space`` is the single
implementation; the scalar ``planner.physics.estimate.evaluate`` calls it with one configuration, so the optimizer,
the CLI and the brute-force checks all see the same numbers.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from planner.data import Catalog, Fabric, Gpu, Layout, Server, Workload
from planner.errors import PlannerInputError
from planner.physics import communication as comm
from planner.physics import compute, cost, moe, power, reliability, run_time, step
from planner.physics.layouts import LayoutSearch, candidate_layouts
from planner.physics.pricing import price_columns, price_space
from planner.physics.tables import categorical, group_keys
from planner.physics.work import (
    Work,
    check_caps,
    check_catalog,
    check_life,
    check_nodes,
    check_purchase,
    check_work,
    check_workload,
)

DEFAULT_CAPS = (0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
DEFAULT_NODE_COUNTS = tuple(range(1, 1025))
BOTTLENECKS = ["compute", "fabric", "intra-node link", "pipeline bubble", "data pipeline", "power cap", "memory"]
SPACE_COLUMNS = ("server", "fabric", "power_cap", "nodes")
# Columns of an evaluate_space table proportional to the samples to train, all else fixed (see scale_work).
WORK_PROPORTIONAL_COLUMNS = ("samples_to_train", "training_h", "time_lost_to_failures_h")
# the fields of a Layout that become columns of the table, one per configuration, from its chosen layout
LAYOUT_COLUMNS = (
    "tensor_parallel",
    "pipeline_parallel",
    "zero_stage",
    "recompute",
    "accumulation",
    "sequence_parallel",
    "context_parallel",
    "expert_parallel",
    "expert_tensor_parallel",
)


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
    options: list[tuple[int, int, float]] = []  # (server, fabric, cap), in the table's order
    for i, s in enumerate(servers):
        gpu = catalog.gpu(s.gpu or "")
        ok_caps = [c for c in caps if gpu.allows_cap(c)]
        options += [(i, fpos[f], c) for f in s.fabrics if f in fpos for c in ok_caps]
    opt = np.asarray(options, dtype=float).reshape(-1, 3)
    k = len(node_arr)  # every option at every node count, nodes ascending inside an option
    return Space(
        [s.id for s in servers],
        fabric_ids,
        np.repeat(opt[:, 0].astype(np.int64), k),
        np.repeat(opt[:, 1].astype(np.int64), k),
        np.repeat(opt[:, 2], k),
        np.tile(node_arr, len(opt)),
    )


def grid_space(
    catalog: Catalog,
    servers: Sequence[str] | str | None,
    fabrics: Iterable[str] | str | None,
    caps: Sequence[float] | float,
    nodes: Iterable[int] | int,
) -> tuple[Space, Space | None]:
    """The grid of ``evaluate_space``'s arguments, checked: (the space, None); where no listed cap is within any
    listed GPU's range, (the empty space, a one-configuration stand-in at the first server and fabric's full cap
    whose evaluation gives the table's columns). Servers on none of the listed fabrics are bad input."""
    servers = [servers] if isinstance(servers, str) else servers
    fabrics = [fabrics] if isinstance(fabrics, str) else fabrics
    caps = check_caps(caps)
    nodes = check_nodes(nodes)
    # a server named twice is the server once (the order kept)
    listed = [catalog.server(s) for s in dict.fromkeys(servers)] if servers is not None else catalog.gpu_servers()
    for f in fabrics or ():
        catalog.fabric(f)
    no_gpu(catalog, [s for s in listed if s.gpu is None])
    space = build_space(catalog, listed, fabrics, caps, nodes)
    if len(space.nodes):
        return space, None
    allowed = set(fabrics) if fabrics is not None else None
    pairs = [(s, f) for s in listed for f in s.fabrics if allowed is None or f in allowed]
    if not pairs:  # no listed server on a listed fabric: bad input, said with the fabrics each has
        raise PlannerInputError(empty_space_message(listed, allowed or set()))
    s, f = pairs[0]
    gpu = catalog.gpu(s.gpu or "")
    full = np.asarray([gpu.max_power_limit_w / gpu.tdp_w])
    return space, Space([s.id], [f], np.zeros(1, np.int64), np.zeros(1, np.int64), full, np.ones(1, np.int64))


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
    search_among: Sequence[Layout] | None = None,
    physical_only: bool = False,
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
    * ``work``: samples, fixed global batch, precision, failures, the run's start-up and evaluation (``Work``)
      [the workload's, no start-up or evaluation];
    * ``layout``: a fixed parallel layout [None: the fastest that fits memory];
    * ``life_years``: service life of bought hardware, years > 0 (amortization) [4];
    * ``space``: an explicit table with columns server, fabric, power_cap, nodes instead of the grid;
    * ``search_among``: search only these candidate layouts (as the search tries them: the interleave of each is
      chosen) [every candidate]; a configuration whose fastest layout is among them gets exactly its figures (a
      plan's alternatives are re-evaluated so, among the layouts the full search chose for them);
    * ``physical_only``: leave out the columns a caller that prices the rows itself does not read -- the priced
      columns (``pricing.price_columns``: cost, carbon, facility energy, availability, ``feasible``), the layout's
      label and the bottleneck [False].

    Returns one row per configuration with the chosen (fastest fitting) layout and all predictions; units are in
    the column names (``time_to_train_h``, ``power_kw``, ``facility_energy_kwh``, ``cost_usd``, ``carbon_kg``,
    ``memory_per_gpu_gb``, ``step_time_s``; ``power_cap`` is the fraction of TDP, ``power_cap_w`` in watts; the
    ``t_*`` columns are the step-time terms in seconds per step, ``mfu`` and ``goodput`` fractions;
    ``time_to_train_h`` = ``training_h`` + ``evaluation_h`` + ``startup_h``).
    Rows whose layout does not fit GPU memory are kept with ``fits_memory`` False, and ``feasible`` says whether
    the configuration can run at all (fits memory, a valid layout, available to buy or rent at that cap); a bought
    run longer than ``life_years`` is not excluded here (``solve`` excludes it): compare ``time_to_train_h``.
    Caps outside every listed GPU's range give no rows (with the columns). Bad arguments (an unknown id, a cap
    outside (0, 1], a node count below 1 or fractional, servers on none of the listed fabrics, an explicit space
    with a missing column or a row out of range) raise PlannerInputError."""
    catalog = check_catalog(catalog)
    wl = check_workload(catalog, workload)
    work = check_work(work)
    site_id = catalog.site(site).id
    check_purchase(purchase)
    check_life(life_years)
    if space is None:
        space, stand_in = grid_space(catalog, servers, fabrics, caps, nodes)
        if stand_in is not None:  # no cap within any listed GPU's range: no rows, with the columns
            return evaluate_space(
                catalog, wl, site=site, purchase=purchase, work=work, life_years=life_years, space=stand_in
            ).iloc[0:0]
    else:
        space = explicit_space(catalog, space, site_id, purchase, servers, fabrics, caps, nodes)
    if len(space.nodes) == 0:
        no_gpu(catalog, [s for s in (catalog.server(x) for x in space.server_ids) if s.gpu is None])
        return pd.DataFrame()
    cols = space_columns(catalog, wl, space, site_id, purchase, work, layout, life_years, search_among, physical_only)
    return pd.DataFrame(cols, copy=False)


def space_columns(
    catalog: Catalog,
    wl: Workload,
    space: Space,
    site_id: str,
    purchase: str,
    work: Work,
    layout: Layout | None = None,
    life_years: float = 4.0,
    search_among: Sequence[Layout] | None = None,
    physical_only: bool = False,
) -> dict[str, Any]:
    """The columns of ``evaluate_space``'s table for a space of at least one configuration, without building the
    table: NumPy arrays and pandas Categoricals of one entry per configuration, and a scalar where the table would
    broadcast one value to every row (a rented row's capex, 0). What ``estimate.evaluate`` and a plan's
    alternatives read their few rows from (``tables.ColumnsRow``): a table of one row costs more than its physics.
    The arguments are ``evaluate_space``'s, checked by the caller."""
    server_objs = [catalog.server(s) for s in space.server_ids]
    no_gpu(catalog, [s for s in server_objs if s.gpu is None])
    hw = hardware_columns(catalog, space, server_objs, wl, work.precision or wl.precision)
    res: dict[str, Any] = {
        "server": categorical(space.server_idx, categories=space.server_ids),
        "fabric": categorical(space.fabric_idx, categories=space.fabric_ids),
        "power_cap": space.power_cap,
        "nodes": space.nodes,
    }
    found = search_layouts(catalog, wl, work, layout, hw, search_among)
    cols = found.cols
    samples_factor = cols.pop("samples_factor")
    res.update(cols)
    li_arr = np.maximum(cols["layout_index"], 0)
    res.update(layout_columns(found.layouts, li_arr))
    res["fits_memory"] = cols["fits_memory"].astype(bool)
    res.update(configuration_columns(hw))
    times = time_columns(wl, work, hw, cols, samples_factor, (found.r_of, found.first_r))
    res.update(times)
    res.update(power_columns(wl, hw, found, times))
    valid_any = cols["layout_index"] >= 0
    model = categorical(np.zeros(len(hw.N), dtype=np.int8), categories=[wl.id])
    if physical_only:
        return {**res, "model": model, "valid_layout": valid_any}
    res["bottleneck"] = bottleneck_column(res, hw.N)
    res["layout"] = layout_labels(li_arr, cols["data_parallel"], cols["virtual_stages"], found.layouts)
    if not valid_any.all():  # rows no layout is valid for (e.g. beyond the workload's largest batch)
        res["layout"] = no_valid_layout_labels(res["layout"], valid_any)
    res["model"] = model
    res["valid_layout"] = valid_any
    res.update(price_columns(catalog, res, site_id, purchase, life_years, (found.r_of, found.first_r)))
    return res


@dataclass(frozen=True)
class Hardware:
    """The hardware of every configuration of a space, as the step-time terms read it: one array entry per
    configuration (bandwidths in bytes/s, memory in GB, power-cap factors as fractions)."""

    servers: list[Server]
    gpus: list[Gpu]  # the GPU of each server
    fabrics: list[Fabric]
    si: np.ndarray  # server index of each configuration
    fi: np.ndarray  # fabric index of each configuration
    N: np.ndarray  # nodes
    g: np.ndarray  # GPUs per node
    G: np.ndarray  # GPUs
    cap: np.ndarray  # power cap, fraction of TDP
    cap_tf: np.ndarray  # throughput factor at the cap (power.load_curve_at)
    cap_pf: np.ndarray  # GPU power at the cap under training load, fraction of TDP
    peak_used: list[tuple[float, str]]  # per server: (dense peak TFLOP/s, precision the GPU computes in)
    peak: np.ndarray  # dense peak TFLOP/s in the precision used
    mfu_cap: np.ndarray  # achievable MFU at a large micro-batch (calibration)
    intra_bw: np.ndarray  # achieved NVLink/PCIe bandwidth per GPU
    node_bw: np.ndarray  # achieved aggregate NIC bandwidth of a node
    inter_lat: np.ndarray  # per-hop latency between nodes, wire + NCCL software
    gpu_mem: np.ndarray  # GPU memory, GB
    mem_bw: np.ndarray  # GPU memory bandwidth, TB/s
    cpu_cores: np.ndarray
    storage_bw: np.ndarray  # local storage read bandwidth of a node

    def per_server(self, fn: Callable[[Server, Gpu], Any]) -> np.ndarray:
        """fn(server, its GPU) of each configuration, computed once per server."""
        return by_server(self.servers, self.gpus, self.si, fn)

    def per_fabric(self, attr: str) -> np.ndarray:
        """A fabric attribute of each configuration, read once per fabric."""
        return by_fabric(self.fabrics, self.fi, attr)


def by_server(servers: list[Server], gpus: list[Gpu], si: np.ndarray, fn: Callable[[Server, Gpu], Any]) -> np.ndarray:
    """fn(server, its GPU) of each configuration (``si``: its server's index), computed once per server."""
    return np.asarray([fn(s, g) for s, g in zip(servers, gpus, strict=True)])[si]


def by_fabric(fabrics: list[Fabric], fi: np.ndarray, attr: str) -> np.ndarray:
    """A fabric attribute of each configuration (``fi``: its fabric's index), read once per fabric."""
    return np.asarray([getattr(f, attr) for f in fabrics], dtype=float)[fi]


def hardware_columns(catalog: Catalog, space: Space, servers: list[Server], wl: Workload, precision: str) -> Hardware:
    """The hardware of each configuration of ``space`` (``servers``: its servers, all with a GPU) for ``wl`` in
    ``precision``: peak and achievable MFU in the precision each GPU computes it in (compute.peak_tflops,
    compute.mfu_max), the power-cap factors of the GPU's load curve (power.load_curve_at), bandwidths as achieved
    (communication.NVLINK_ACHIEVED, node_bandwidth_bytes_s) and the host's cores and storage."""
    si, fi = space.server_idx, space.fabric_idx
    gpus = [catalog.gpu(s.gpu or "") for s in servers]
    fabrics = [catalog.fabric(f) for f in space.fabric_ids]

    def per_server(fn: Callable[[Server, Gpu], Any]) -> np.ndarray:
        return by_server(servers, gpus, si, fn)

    def per_fabric(attr: str) -> np.ndarray:
        return by_fabric(fabrics, fi, attr)

    peak_used = [compute.peak_tflops(gp, precision) for gp in gpus]
    mfu = [compute.mfu_max(catalog.calibration, gp, wl, u) for gp, (_, u) in zip(gpus, peak_used, strict=True)]
    cap = space.power_cap
    cap_tf = np.empty(len(cap))
    cap_pf = np.empty(len(cap))
    # the cap's factors depend on the GPU only: one pass over the configurations per GPU
    distinct = list({gp.id: gp for gp in gpus}.values())
    gpu_ids = [gp.id for gp in distinct]
    gpu_of_config = np.asarray([gpu_ids.index(gp.id) for gp in gpus], dtype=np.int64)[si]
    for k, gp in enumerate(distinct):
        m = gpu_of_config == k
        cap_tf[m], cap_pf[m] = power.load_curve_at(
            catalog.power_curves[gp.power_curve], cap[m], gp.training_power_fraction
        )
    g = per_server(lambda s, _g: s.gpus_per_node).astype(np.int64)
    return Hardware(
        servers=servers,
        gpus=gpus,
        fabrics=fabrics,
        si=si,
        fi=fi,
        N=space.nodes,
        g=g,
        G=space.nodes * g,
        cap=cap,
        cap_tf=cap_tf,
        cap_pf=cap_pf,
        peak_used=peak_used,
        peak=np.asarray([p for p, _ in peak_used])[si],
        mfu_cap=np.asarray(mfu)[si],
        intra_bw=per_server(lambda s, gp: gp.intra_node_bandwidth_gb_s).astype(float) * 1e9 * comm.NVLINK_ACHIEVED,
        node_bw=comm.node_bandwidth_bytes_s(
            per_server(lambda s, _g: s.nic_ports),
            per_fabric("port_bandwidth_gbps"),
            per_server(lambda s, _g: s.max_nic_port_gbps),
            per_fabric("achieved_efficiency"),
        ),
        inter_lat=per_fabric("latency_us") * 1e-6 + comm.SOFTWARE_LATENCY_S,
        gpu_mem=per_server(lambda s, gp: gp.memory_gb).astype(float),
        mem_bw=per_server(lambda s, gp: gp.memory_bandwidth_tbps).astype(float),
        cpu_cores=per_server(lambda s, _g: s.cpu_cores).astype(float),
        storage_bw=per_server(lambda s, _g: s.storage_read_gb_s).astype(float) * 1e9,
    )


@dataclass(frozen=True)
class SearchResult:
    """The layout search's outcome: the candidates, the winner's columns per configuration (``LayoutSearch.run``),
    and the (server, nodes, fabric) rows R -- the row of each configuration and one configuration of each row."""

    layouts: list[Layout]
    cols: dict[str, np.ndarray]
    r_of: np.ndarray
    first_r: np.ndarray


def search_layouts(
    catalog: Catalog,
    wl: Workload,
    work: Work,
    layout: Layout | None,
    hw: Hardware,
    among: Sequence[Layout] | None = None,
) -> SearchResult:
    """The fastest fitting layout of every configuration (``layout``: the only candidate, checked against the
    workload; ``among``: the candidates, else ``candidate_layouts``). The search runs on the distinct (server,
    nodes) rows U and (server, nodes, fabric) rows R: only the cap differs between the configurations of an R row
    (planner/physics/layouts.py); rows of servers whose step inputs are all equal (``step.distinct_rows``: the same
    GPU board sold under other prices, host powers or names) are searched once, and every configuration reads its
    class's result: the same numbers as searched alone."""
    if layout is not None:
        layouts = [layout]
    elif among is not None:
        layouts = list(dict.fromkeys(among))
    else:
        layouts = candidate_layouts(catalog, wl, int(hw.g.max()))
    layers = float(wl.layers or 1)
    if layout is not None:
        check_fixed_layout(wl, layout, layers)
    N, si, fi = hw.N, hw.si, hw.fi
    ukey = si.astype(np.int64) * (int(N.max()) + 1) + N
    _, u_of, first = group_keys(ukey)  # first: a representative configuration of each U row
    rows = server_rows(catalog, wl, work, layout is not None, hw, first)
    _, r_of, first_r = group_keys(ukey * (len(hw.fabrics) + 1) + fi)
    ig_bw = np.where(N > 1, hw.node_bw / hw.g, hw.intra_bw)  # per-GPU bandwidth to other nodes (or peers)
    fab = step.FabricRows(
        u=u_of[first_r],
        node_bytes_s=hw.node_bw[first_r],
        latency_s=hw.inter_lat[first_r],
        peer_bytes_s=ig_bw[first_r],
        in_network=hw.per_fabric("in_network_reduction").astype(bool)[first_r],
    )
    search_u_of, search_r_of, search_first_r = u_of, r_of, first_r
    cell_of: np.ndarray | None = None  # each configuration's (class R row, cap) cell, where classes were found
    cap, cap_tf, cap_si = hw.cap, hw.cap_tf, si  # of each configuration, or of each cell where classes were found
    # only servers alike in the GPU and the host figures the rows read can share their step inputs (a cheap test
    # before the exact one, step.distinct_rows, which compares every array)
    alike = [(s.gpu, s.gpus_per_node, s.cpu_cores, s.storage_read_gb_s) for s in hw.servers]
    if len(set(alike)) < len(alike):
        gpu_ids = [gp.id for gp in hw.gpus]
        gpu_index = np.asarray([gpu_ids.index(g) for g in gpu_ids])[si[first]]
        class_u, rep_u, class_r, rep_r = step.distinct_rows(rows, fab, gpu_index, si[first])
        if len(rep_r) < len(first_r):
            fab = step.FabricRows(
                u=class_u[fab.u[rep_r]],
                node_bytes_s=fab.node_bytes_s[rep_r],
                latency_s=fab.latency_s[rep_r],
                peer_bytes_s=fab.peer_bytes_s[rep_r],
                in_network=fab.in_network[rep_r],
            )
            rows = step.sliced_rows(rows, rep_u)
            # configurations of one class R row at one cap are one cell: the same GPU (part of the class), hence
            # the same throughput factor, and the same step inputs -- the search and its breakdowns run per cell
            _, cap_code = np.unique(hw.cap, return_inverse=True)
            _, cell_of, first_cell = group_keys(class_r[r_of] * (int(cap_code.max()) + 1) + cap_code.ravel())
            _, search_first_r = np.unique(class_r[r_of][first_cell], return_index=True)
            search_u_of, search_r_of = class_u[u_of][first_cell], class_r[r_of][first_cell]
            cap, cap_tf, cap_si = hw.cap[first_cell], hw.cap_tf[first_cell], si[first_cell]
    search = LayoutSearch(
        rows,
        fab,
        layouts,
        layers,
        len(search_u_of),
        search_u_of,
        search_r_of,
        search_first_r,
        cap,
        cap_tf,
        cap_si,
        hw.gpus,
        catalog,
    )
    cols = search.run()
    if cell_of is not None:
        cols = {k: v[cell_of] for k, v in cols.items()}
    return SearchResult(layouts, cols, r_of, first_r)


def check_fixed_layout(wl: Workload, layout: Layout, layers: float) -> None:
    """A layout given by the caller must be one the workload can run: block recomputation needs transformer
    layers, and the virtual pipeline stages at least one layer each."""
    if layout.recompute == "block" and not (wl.layers and wl.hidden_size):
        raise PlannerInputError(
            f"block recomputation recomputes half of each pipeline stage's transformer layers, and '{wl.id}' states "
            "no transformer layers: use --recompute full (or none)"
        )
    if layout.expert_parallel * layout.expert_tensor_parallel > 1 and wl.moe is None:
        raise PlannerInputError(
            f"expert (tensor) parallelism splits the experts of a Mixture-of-Experts model, and '{wl.id}' is dense: "
            "use --ep 1 and --etp 1 (or leave them out)"
        )
    if wl.moe is not None and wl.moe.routed_experts % layout.expert_parallel:
        raise PlannerInputError(
            f"expert parallelism {layout.expert_parallel} does not divide '{wl.id}''s {wl.moe.routed_experts} routed "
            "experts: use a divisor of them"
        )
    if layout.virtual_stages and layout.virtual_stages * layout.pipeline_parallel > layers:
        raise PlannerInputError(
            f"layout has {layout.pipeline_parallel} x {layout.virtual_stages} = "
            f"{layout.pipeline_parallel * layout.virtual_stages} virtual pipeline stages but '{wl.id}' has only "
            f"{int(layers)} layers: lower virtual_stages (or leave it unset to choose the fastest)"
        )


def server_rows(
    catalog: Catalog, wl: Workload, work: Work, fixed_layout: bool, hw: Hardware, first: np.ndarray
) -> step.Rows:
    """The inputs of the step-time terms on the (server, nodes) rows U (``first``: one configuration of each):
    the hardware, the workload's framework and its calibrated efficiencies (compute.half_batch_scale,
    compute.overlap_fractions), the peak and MFU of the precision attention's GEMMs run in
    (compute.attention_precision), and the bytes per element of the precision (gradients reduced in fp32 where the
    framework does so for 16-bit and 8-bit training; TF32 computes on fp32 tensors)."""
    precision = work.precision or wl.precision
    fw = catalog.framework(wl.framework)
    overlap, tp_overlap = compute.overlap_fractions(catalog.calibration, fw)
    wide = precision in ("fp32", "tf32")
    # attention's score and context GEMMs at their own precision's peak and MFU, per server
    attention = [
        compute.peak_tflops(gp, compute.attention_precision(used, wl.fp8_attention))
        for gp, (_, used) in zip(hw.gpus, hw.peak_used, strict=True)
    ]
    attention_mfu = [
        compute.mfu_max(catalog.calibration, gp, wl, used) for gp, (_, used) in zip(hw.gpus, attention, strict=True)
    ]
    return step.Rows(
        wl=wl,
        fw=fw,
        global_batch=work.global_batch,
        fixed_layout=fixed_layout,
        g=hw.g[first],
        G=hw.G[first],
        N=hw.N[first],
        intra_bytes_s=hw.intra_bw[first],
        mfu=hw.mfu_cap[first],
        peak_tflops=hw.peak[first],
        attention_peak_tflops=np.asarray([p for p, _ in attention])[hw.si][first],
        attention_mfu=np.asarray(attention_mfu)[hw.si][first],
        cpu_cores=hw.cpu_cores[first],
        storage_bytes_s=hw.storage_bw[first],
        gpu_memory_gb=hw.gpu_mem[first],
        memory_bandwidth_tbps=hw.mem_bw[first],
        half_batch=wl.efficiency_half_batch * compute.half_batch_scale(catalog.calibration, wl),
        overlap=overlap,
        grad_bytes_per_param=4.0 if wide else 2.0,
        grad_reduce_bytes_per_param=(
            4.0 if wide or (fw.gradient_reduce_fp32 and precision in ("bf16", "fp8", "fp4")) else 2.0
        ),
        nvls=hw.per_server(lambda s, gp: gp.nvlink_sharp).astype(bool)[first],
        fp8=np.asarray([u in ("fp8", "fp4") for _, u in hw.peak_used])[hw.si][first],
        tp_overlap=tp_overlap,
        tensor_bytes=4.0 if wide else 2.0,
        gemm_tokens_half=float(catalog.calibration.get("gemm_tokens_half", 0.0)),
        gemm_width_half=float(catalog.calibration.get("gemm_width_half", 0.0)),
        moe_width_half=float(catalog.calibration.get("moe_expert_width_half", moe.EXPERT_GEMM_WIDTH_HALF)),
        moe_a2a_overlap=min(
            1.0,
            float(
                catalog.calibration.get("moe_all_to_all_overlap", {}).get(fw.id, fw.expert_all_to_all_overlap_fraction)
            ),
        ),
    )


def layout_columns(layouts: Sequence[Layout], layout_index: np.ndarray) -> dict[str, Any]:
    """The chosen layout's fields (``LAYOUT_COLUMNS``) per configuration, from its index into ``layouts``;
    string fields as categoricals, not per-row Python strings (pandas would copy them)."""
    out: dict[str, Any] = {}
    for attr in LAYOUT_COLUMNS:
        values = [getattr(lay, attr) for lay in layouts]
        if isinstance(values[0], str):
            cats = sorted(set(values))
            out[attr] = categorical(np.asarray([cats.index(v) for v in values], dtype=np.int8)[layout_index], cats)
        else:
            out[attr] = np.asarray(values)[layout_index]
    return out


def configuration_columns(hw: Hardware) -> dict[str, Any]:
    """The GPU, GPU count, precision computed in, cap in watts and its throughput factor, and GPU memory."""
    gpu_ids = sorted({gp.id for gp in hw.gpus})
    gpu_code = np.asarray([gpu_ids.index(gp.id) for gp in hw.gpus], dtype=np.int16)
    prec_cats = sorted({u for _, u in hw.peak_used})
    prec_code = np.asarray([prec_cats.index(u) for _, u in hw.peak_used], dtype=np.int8)
    return {
        "gpu": categorical(gpu_code[hw.si], categories=gpu_ids),
        "gpus": hw.G,
        "precision": categorical(prec_code[hw.si], categories=prec_cats),
        "power_cap_w": hw.cap * hw.per_server(lambda s, gp: gp.tdp_w),
        "cap_throughput_factor": hw.cap_tf,
        "gpu_memory_gb": hw.gpu_mem,
    }


def time_columns(
    wl: Workload,
    work: Work,
    hw: Hardware,
    cols: dict[str, np.ndarray],
    samples_factor: np.ndarray,
    rows: tuple[np.ndarray, np.ndarray],
) -> dict[str, Any]:
    """Throughput (global batch / step time), samples to train (at the reference batch x the convergence factor of
    the chosen batch), time to train as its named terms (planner/physics/run_time.py): training (ideal time /
    goodput, planner/physics/reliability.py; goodput 1 without failures) + evaluation + start-up, the hours
    failures cost, achieved TFLOP/s per GPU, MFU and scaling efficiency (compute / step
    time), from the search's columns ``cols``; ``rows``: (row of each configuration, a configuration of each row) of
    the (server, nodes, fabric) rows."""
    step_s = cols["step_time_s"].astype(float)
    thr = cols["global_batch"].astype(float) / step_s
    samples_base = work.samples if work.samples is not None else wl.default_samples
    samples = samples_base * samples_factor
    ideal_hours = samples / thr / 3600.0
    if work.failures:
        checkpoint = reliability.checkpoint_bytes(wl.params, wl.trainable)
        r_of, first_r = rows  # goodput depends on the (server, nodes) only: computed once per row, then spread
        write_s = reliability.checkpoint_write_s(checkpoint, hw.N[first_r], hw.storage_bw[first_r])
        good = reliability.goodput(hw.G[first_r], write_s)[r_of]
    else:
        good = np.ones(len(hw.N))
    training_h = ideal_hours / good
    evaluation_h = run_time.evaluation_hours(work.evaluation_s, work.evaluation_samples, thr)
    startup_h = np.full(len(thr), work.startup_s / run_time.SECONDS_PER_HOUR)
    achieved = thr * wl.train_flops_per_sample / hw.G / 1e12
    return {
        "goodput": good,
        "time_lost_to_failures_h": training_h - ideal_hours,
        "throughput_samples_per_s": thr,
        "samples_to_train": samples,
        "training_h": training_h,
        "evaluation_h": evaluation_h,
        "startup_h": startup_h,
        "time_to_train_h": training_h + evaluation_h + startup_h,
        "achieved_tflops_per_gpu": achieved,
        "mfu": achieved / hw.peak,
        "scaling_efficiency": cols["t_compute"].astype(float) / step_s,
    }


# the columns of power_columns that depend on the host's power (HostPower), not on the GPU, fabric and step alone
HOST_POWER_COLUMNS = ("node_power_w", "power_kw", "startup_power_kw", "energy_kwh")


def power_columns(wl: Workload, hw: Hardware, found: SearchResult, times: dict[str, Any]) -> dict[str, Any]:
    """GPU power at the cap for the share of the step it computes (the scaling efficiency of ``times``), the
    switches of the fabric (cost.switch_count, once per (server, nodes, fabric) row), IT power while training and
    during start-up (``it_power_kw``) and IT energy over the time to train (``run_energy_kwh``)."""
    idle_w = hw.per_server(_idle_w)
    gpu_w = power.gpu_power_w(hw.per_server(_tdp_w), idle_w, hw.cap_pf, times["scaling_efficiency"])
    nic_ports = hw.per_server(_nic_ports)
    radix = hw.per_fabric("switch_radix").astype(np.int64)
    r_of, first_r = found.r_of, found.first_r
    switches = cost.switch_count(hw.N[first_r], nic_ports[first_r], radix[first_r])[r_of]
    node_w, it_kw, startup_kw = it_power_kw(
        wl,
        hw.N,
        hw.g,
        hw.cpu_cores,
        times["throughput_samples_per_s"],
        gpu_w,
        idle_w,
        HostPower.of(hw.per_server),
        nic_ports,
        hw.per_fabric("nic_power_w"),
        switches * hw.per_fabric("switch_power_w"),
    )
    return {
        "gpu_power_w": gpu_w,
        "node_power_w": node_w,
        "switches": switches,
        "power_kw": it_kw,
        "startup_power_kw": startup_kw,
        "energy_kwh": run_energy_kwh(it_kw, times["time_to_train_h"], startup_kw, times["startup_h"]),
    }


def _idle_w(_s: Server, gp: Gpu) -> float:
    return gp.idle_power_w


def _tdp_w(_s: Server, gp: Gpu) -> float:
    return gp.tdp_w


def _nic_ports(s: Server, _g: Gpu) -> int:
    return s.nic_ports


@dataclass(frozen=True)
class HostPower:
    """The host's power figures of each configuration: CPU package power with every core busy, the fixed power
    (RAM, storage, board and fans) and the PSU's efficiency."""

    package_w: np.ndarray
    fixed_w: np.ndarray
    psu_efficiency: np.ndarray

    @staticmethod
    def of(per_server: Callable[[Callable[[Server, Gpu], Any]], np.ndarray]) -> HostPower:
        """The figures of each configuration, ``per_server``: fn(server, its GPU) of each configuration."""
        return HostPower(
            package_w=per_server(lambda s, _g: s.cpu_power_w),
            fixed_w=per_server(lambda s, _g: s.ram_power_w + s.storage_power_w + s.other_power_w),
            psu_efficiency=per_server(lambda s, _g: s.psu_efficiency),
        )


def it_power_kw(
    wl: Workload,
    nodes: np.ndarray,
    gpus_per_node: np.ndarray,
    cpu_cores: np.ndarray,
    throughput_samples_per_s: np.ndarray,
    gpu_w: np.ndarray,
    idle_w: np.ndarray,
    host: HostPower,
    nic_ports: np.ndarray,
    nic_w: np.ndarray,
    switch_w: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(node power while training, W; IT power while training, kW; IT power during start-up, kW) of each
    configuration (planner/physics/power.py): host power for the cores the data pipeline keeps busy at the
    throughput (one per GPU during start-up, its GPUs idle: ``power.startup_gpu_w``), node power through the PSU
    with NICs where the job spans nodes, and the fabric's switches (``switch_w``)."""
    multi = nodes > 1
    busy_cores = gpus_per_node + throughput_samples_per_s / nodes * wl.cpu_core_ms_per_sample / 1000.0
    host_w = power.cpu_power_w(host.package_w, cpu_cores, busy_cores) + host.fixed_w
    node_w = power.node_power_w(gpus_per_node, gpu_w, host_w, nic_ports, nic_w, host.psu_efficiency, multi)
    it_kw = (nodes * node_w + switch_w) / 1000.0
    startup_busy = power.startup_busy_cores(gpus_per_node)
    startup_host_w = power.cpu_power_w(host.package_w, cpu_cores, startup_busy) + host.fixed_w
    startup_gpu_w = power.startup_gpu_w(idle_w)
    startup_node_w = power.node_power_w(
        gpus_per_node, startup_gpu_w, startup_host_w, nic_ports, nic_w, host.psu_efficiency, multi
    )
    startup_kw = (nodes * startup_node_w + switch_w) / 1000.0
    return node_w, it_kw, startup_kw


# Server fields the physics does not read, or reads only through the host's power (``HostPower``): servers equal in
# every other field are host twins -- one GPU board sold under other names, prices or host power -- whose
# configurations have the same layouts, step terms, times and switches, and differ in IT power alone.
NOT_PHYSICS_FIELDS = frozenset(
    {
        "id",
        "name",
        "source",
        "price_usd",
        "price_source",
        "rent_usd_per_month",
        "rent_billing_period",
        "power_cap_settable",
        "rack_units",
        "cpu_power_w",
        "ram_power_w",
        "storage_power_w",
        "other_power_w",
        "psu_efficiency",
    }
)


def host_twins(servers: Sequence[Server]) -> list[int]:
    """For each server, the position in ``servers`` of the first one it is a host twin of (``NOT_PHYSICS_FIELDS``;
    its own position where no server before it is)."""
    first: dict[str, int] = {}
    return [
        first.setdefault(repr(sorted(s.model_dump(exclude=set(NOT_PHYSICS_FIELDS)).items())), i)
        for i, s in enumerate(servers)
    ]


def twin_rows(
    table: pd.DataFrame, servers: Sequence[str], twin_of: Sequence[int], rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(row of ``table`` of each configuration, its server's position in ``servers``) of every server's
    configurations read through its host twin (``twin_of``: each server's position in ``servers`` of the twin
    ``table`` holds): each server's rows are its twin's ``rows``, in their order, servers in the order given."""
    codes = np.asarray(table["server"].cat.codes)[rows]
    of_twin = {str(sid): rows[codes == k] for k, sid in enumerate(table["server"].cat.categories)}
    parts = [of_twin.get(servers[t], rows[:0]) for t in twin_of]
    idx = np.concatenate(parts) if parts else rows[:0]
    return idx, np.repeat(np.arange(len(servers), dtype=np.int64), [len(p) for p in parts])


def on_twins(
    catalog: Catalog,
    workload: Workload | str,
    table: pd.DataFrame,
    servers: Sequence[str],
    idx: np.ndarray,
    si: np.ndarray,
    columns: Sequence[str],
) -> pd.DataFrame:
    """``columns`` of configurations of ``servers`` read from ``table``, ``evaluate_space(..., physical_only=True)``
    of their host twins (``host_twins``): configuration k is row ``idx[k]`` of the table on server ``si[k]``
    (``twin_rows``), with the server and its IT power (``it_power_kw``: ``power_kw``, ``startup_power_kw``) its
    own. For the rows ``twin_rows`` gives, it is the table ``evaluate_space`` returns for all the servers, restricted
    to those rows, column for column and bit for bit (tests/physics/test_host_twins.py). Other columns that depend
    on the host's power are refused."""
    own_power = {"power_kw", "startup_power_kw"}
    refused = set(HOST_POWER_COLUMNS) - own_power
    if refused & set(columns):
        raise ValueError(f"on_twins: {', '.join(sorted(refused & set(columns)))} depend on the host: not read")
    wl = check_workload(catalog, workload)
    out: dict[str, Any] = {}
    for c in columns:
        if c == "server":
            out[c] = categorical(si, categories=list(servers))
        elif c not in own_power:
            col = table[c]
            if isinstance(col.dtype, pd.CategoricalDtype):
                out[c] = pd.Categorical.from_codes(np.asarray(col.cat.codes)[idx], dtype=col.dtype, validate=False)
            else:
                out[c] = col.to_numpy()[idx]
    if own_power & set(columns):
        objs = [catalog.server(x) for x in servers]
        gpus = [catalog.gpu(x.gpu or "") for x in objs]
        fabrics = [catalog.fabric(str(f)) for f in table["fabric"].cat.categories]
        fi = np.asarray(table["fabric"].cat.codes, dtype=np.int64)[idx]

        def per_server(fn: Callable[[Server, Gpu], Any]) -> np.ndarray:
            return by_server(objs, gpus, si, fn)

        _, out["power_kw"], out["startup_power_kw"] = it_power_kw(
            wl,
            table["nodes"].to_numpy()[idx],
            per_server(lambda x, _g: x.gpus_per_node).astype(np.int64),
            per_server(lambda x, _g: x.cpu_cores).astype(float),
            table["throughput_samples_per_s"].to_numpy()[idx],
            table["gpu_power_w"].to_numpy()[idx],
            per_server(_idle_w),
            HostPower.of(per_server),
            per_server(_nic_ports),
            by_fabric(fabrics, fi, "nic_power_w"),
            table["switches"].to_numpy()[idx] * by_fabric(fabrics, fi, "switch_power_w"),
        )
    return pd.DataFrame({c: out[c] for c in columns}, copy=False)


def run_energy_kwh(power_kw: Any, hours: Any, startup_power_kw: Any, startup_h: Any) -> np.ndarray:
    """IT energy of a run: its power over its hours, the start-up's hours at the start-up's power
    (``power.startup_gpu_w``) instead: power x hours + (start-up power - power) x start-up hours."""
    p = np.asarray(power_kw, dtype=float)
    return np.asarray(p * np.asarray(hours, dtype=float) + (np.asarray(startup_power_kw, dtype=float) - p) * startup_h)


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
    choice (the fastest per sample), throughput, power and goodput (planner/physics/reliability.py: a fraction of
    time, set by the GPU count and checkpoint write time) are independent of how many samples are trained, so
    ``WORK_PROPORTIONAL_COLUMNS`` (samples, training hours, hours lost to failures) scale by samples_to /
    samples_from. The run's start-up and evaluation (``Work``: fixed seconds and training-sample equivalents) do
    not depend on the samples trained and are kept; the time-to-train is the sum of the three terms again and IT
    energy its product with the IT power, and every priced column follows (``price_space``: facility energy,
    amortized capex, energy cost, rent in whole billing periods, carbon). tests/physics/test_space_properties.py
    compares this with a fresh evaluation, column for column."""
    for v, name in ((samples_from, "samples_from"), (samples_to, "samples_to")):
        if not (isinstance(v, numbers.Real) and math.isfinite(v) and v > 0):
            raise PlannerInputError(f"scale_work: {name} must be a finite number of samples > 0 (got {v!r})")
    out = df.copy(deep=False)  # copy-on-write: the caller's table is not modified
    factor = float(samples_to) / float(samples_from)
    for col in WORK_PROPORTIONAL_COLUMNS:
        out[col] = np.asarray(df[col], dtype=float) * factor
    hours = np.asarray(out["training_h"]) + np.asarray(df["evaluation_h"]) + np.asarray(df["startup_h"])
    out["time_to_train_h"] = hours
    out["energy_kwh"] = run_energy_kwh(df["power_kw"], hours, df["startup_power_kw"], np.asarray(df["startup_h"]))
    return price_space(catalog, out, site, purchase, life_years)


def explicit_space(
    catalog: Catalog,
    space: Any,
    site: str,
    purchase: str,
    servers: Any,
    fabrics: Any,
    caps: Any,
    nodes: Any,
) -> Space:
    """``evaluate_space``'s ``space`` argument, checked: a ``Space`` as it is, a DataFrame read by
    ``space_from_frame``; anything else, a grid argument given beside it (which it would silently ignore: the table
    lists the configurations), or a site or purchase column that differs from the call's (one site and purchase
    mode per call) is bad input."""
    if isinstance(space, Space):
        return space
    if not isinstance(space, pd.DataFrame):
        raise PlannerInputError(
            f"space must be a pandas DataFrame with the columns {', '.join(SPACE_COLUMNS)} (one row per "
            f"configuration), got {type(space).__name__}: pd.DataFrame(...) of it, or leave space out for the grid"
        )
    given = [
        name
        for name, value, default in (
            ("servers", servers, None),
            ("fabrics", fabrics, None),
            ("caps", caps, DEFAULT_CAPS),
            ("nodes", nodes, DEFAULT_NODE_COUNTS),
        )
        if value is not default and not _same_grid(value, default)
    ]
    if given:
        raise PlannerInputError(
            f"give either space (the configurations, one per row) or {', '.join(given)} (a grid), not both: the "
            "space's rows would be evaluated and the grid's arguments ignored"
        )
    for column, value in (("site", site), ("purchase", purchase)):
        if column in space.columns and (space[column].astype(str) != value).any():
            raise PlannerInputError(
                f"space has a {column} column with values other than {column}={value!r}: one {column} per call "
                f"(evaluate_space(..., {column}=...) for each), the column is not read"
            )
    return space_from_frame(catalog, space)


def _same_grid(value: Any, default: Any) -> bool:
    """Whether a grid argument is its default however it was written (a list, a range, an array of the same)."""
    if default is None or value is None:
        return value is default
    try:
        return tuple(np.atleast_1d(np.asarray(value)).tolist()) == tuple(default)
    except (TypeError, ValueError):
        return False


def space_from_frame(catalog: Catalog, df: pd.DataFrame) -> Space:
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
            f"space: nodes are whole numbers >= 1 (row {shown(df.index[int(np.argmax(bad))])}: "
            f"{shown(df['nodes'].iloc[int(np.argmax(bad))])})"
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
    if not len(df):  # no configuration: nothing to check (evaluate_space gives no rows)
        return sp
    servers = [catalog.server(s) for s in sp.server_ids]
    for f in sp.fabric_ids:
        catalog.fabric(f)
    no_gpu(catalog, [s for s in servers if s.gpu is None])
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
            f"space: power cap {shown(df['power_cap'].iloc[k])} of server '{server_id}' is outside "
            f"{g.id}'s configurable range {g.min_power_limit_w / g.tdp_w:.2f}-{g.max_power_limit_w / g.tdp_w:.2f} "
            "of TDP (power_cap is a fraction of TDP)"
        )
    return sp


def shown(v: Any) -> str:
    """A value as the user typed it: 0.1, not np.float64(0.1)."""
    return repr(v.item() if isinstance(v, np.generic) else v)


def empty_space_message(servers: Sequence[Server], fabrics: set[str]) -> str:
    """Why no listed server is on a listed fabric, with the fabrics each has."""
    return f"none of the listed servers can use fabric(s) {', '.join(sorted(fabrics))}; their fabrics: " + "; ".join(
        f"{s.id}: {', '.join(s.fabrics)}" for s in servers
    )


def no_gpu(catalog: Catalog, servers: Sequence[Server]) -> None:
    """Servers without a GPU are bad input to the model (it places work on accelerators only)."""
    if servers:
        raise PlannerInputError(
            f"server '{servers[0].id}' has no GPU: the training model places work on accelerators only "
            f"(choose one of: {', '.join(x.id for x in catalog.gpu_servers())})"
        )


def bottleneck_column(df: dict[str, Any], nodes: np.ndarray) -> pd.Categorical:
    """The largest part of each configuration's step (``BOTTLENECKS``): compute, the fabric (the data-parallel
    all-reduce's share over the NICs, all-to-all and pipeline p2p across nodes), the intra-node link, the pipeline
    bubble or the data pipeline, the first maximum winning; a compute-bound step slowed by its cap more than 5% is
    'power cap'; a layout that does not fit is 'memory'."""
    dp_exp = df["t_data_parallel_exposed"]
    inter_share = df["t_dp_inter_share"]
    multi = nodes > 1
    a2a, p2p = df["t_embedding_all_to_all"], df["t_pipeline_p2p"]
    moe_a2a, moe_inter = df["t_moe_all_to_all"], df["t_moe_inter_share"]
    fabric = dp_exp * inter_share + (a2a + p2p) * multi + moe_a2a * moe_inter
    intra = (
        df["t_tensor_parallel"]
        + df["t_context_parallel"]
        + dp_exp * (1 - inter_share)
        + (a2a + p2p) * ~multi
        + moe_a2a * (1 - moe_inter)
    )
    code = np.zeros(len(nodes), dtype=np.int8)
    top = np.asarray(df["t_compute"], dtype=float)
    for k, part in enumerate((fabric, intra, df["t_pipeline_bubble"], df["t_data_pipeline_stall"]), start=1):
        larger = part > top  # first maximum wins, as argmax
        code[larger] = k
        top = np.maximum(top, part)
    code = np.where((code == 0) & (df["cap_throughput_factor"] < 0.95), 5, code)
    code = np.where(df["fits_memory"], code, 6)
    return categorical(code, categories=BOTTLENECKS)


NO_VALID_LAYOUT = "no valid layout"


def no_valid_layout_labels(labels: pd.Categorical, valid: np.ndarray) -> pd.Categorical:
    """``labels`` with the rows no layout is valid for labelled ``NO_VALID_LAYOUT``: one more category and its code
    on those rows (no string is built per row)."""
    categories = list(labels.categories)
    if NO_VALID_LAYOUT not in categories:
        categories.append(NO_VALID_LAYOUT)
    codes = np.where(valid, np.asarray(labels.codes), categories.index(NO_VALID_LAYOUT))
    return categorical(codes.astype(np.int32), categories=pd.Index(categories))


def layout_labels(
    layout_index: np.ndarray, data_parallel: np.ndarray, virtual: np.ndarray, layouts: Sequence[Layout]
) -> Any:
    """Labels like 'DP16 TP8 PP4 VP2 ZeRO-1', built once per distinct (layout, data-parallel degree, virtual
    stages)."""
    dp = data_parallel.astype(np.int64)
    v = virtual.astype(np.int64)
    n_dp, dp_code, _ = group_keys(dp)  # compact codes keep the presence table small
    keys = (layout_index.astype(np.int64) * n_dp + dp_code) * (int(v.max()) + 1) + v
    _, inverse, first = group_keys(keys)
    li_f, v_f = layout_index[first].astype(np.int64), v[first]
    _, pair, pair_first = group_keys(li_f * (int(v.max()) + 1) + v_f)  # few distinct (layout, virtual stages)
    suffix = np.asarray(
        [
            layouts[int(li_f[i])].model_copy(update={"virtual_stages": int(v_f[i])}).label(1)[len("DP1") :]
            for i in pair_first
        ],
        dtype=object,
    )
    # distinct (layout, data-parallel degree, virtual stages) give distinct labels: vectorized concatenation, or
    # for a few labels (one configuration, a plan's alternatives) Python's, which costs less than two Series
    if len(first) <= FEW_LABELS:
        said = [f"DP{d}{suffix[k]}" for d, k in zip(dp[first].tolist(), pair.tolist(), strict=True)]
        return categorical(inverse, categories=said)
    labels = "DP" + pd.Series(dp[first]).astype(str) + pd.Series(suffix[pair], dtype=str)
    return categorical(inverse, categories=pd.Index(labels))


FEW_LABELS = 64  # layout_labels builds up to this many labels in Python
