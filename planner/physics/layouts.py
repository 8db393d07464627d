"""The parallel layouts searched for every configuration, and the exact search for the fastest that fits.

A layout is tensor parallel within a node, context parallel for long sequences, pipeline stages (powers of two and
divisors of the layers) with the fastest number of interleaved virtual stages, sequence parallelism, a ZeRO stage,
none/selective/block/full recomputation and gradient accumulation (``candidate_layouts``). ``LayoutSearch`` evaluates
every candidate for all configurations at once and keeps, per configuration, the fastest that fits GPU memory and
the workload's batch limit -- "fastest" meaning least time to train (layouts may differ in global batch, hence in
samples to converge). The search is exact: it prunes only with lower bounds and dominance relations, each proved
in the comment where it is used. The step-time terms themselves are planner/physics/step.py's.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from planner.data import Catalog, Gpu, Layout, Workload
from planner.errors import PlannerInputError
from planner.physics import memory, power, step
from planner.physics.tables import indices_by_value


def pipeline_depths(layers: int) -> list[int]:
    """Pipeline depths searched: powers of two up to 64 (stages of ceil / floor layers where they do not divide:
    Megatron's uneven first and last stages) and every divisor of the layer count up to 128 (a 105-layer model
    needs 3, 5, 7, 15, 21 or 35 stages to fill 35 nodes)."""
    twos = {p for p in (1, 2, 4, 8, 16, 32, 64) if p <= layers}
    divisors = {d for d in range(1, min(layers, 128) + 1) if layers % d == 0}
    return sorted(twos | divisors)


def candidate_layouts(catalog: Catalog, workload: Workload, max_gpus_per_node: int) -> list[Layout]:
    """Every layout the search tries for ``workload`` on servers of up to ``max_gpus_per_node`` GPUs, within what
    its framework runs (catalog/frameworks.yaml) and leaving out layouts another candidate dominates (the reason
    stands beside each restriction below). Transformers only are split by tensor, context and pipeline parallelism
    and recompute; gradient accumulation is searched where the workload fixes no micro-batch."""
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
    # expert parallelism for MoE workloads where the framework has it: powers of two dividing the routed experts
    # (Megatron-Core requires EP | experts), folded with TP x CP x DP (step.layout_rows checks that EP divides them)
    experts = workload.moe.routed_experts if workload.moe is not None and fw.expert_parallel else 1
    eps = [e for e in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512) if e <= experts and experts % e == 0]
    # expert tensor parallelism 1 or the attention TP, with EP (Megatron-Core practice: --expert-tensor-parallel-size
    # defaults to TP and its README recommends 1 for fine-grained experts, moe.md section 2.7); the product EP x ETP
    # must divide TP x CP x DP (step.layout_rows). At most twice the MoE layouts with TP > 1, none for dense models.
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
            expert_parallel=e,
            expert_tensor_parallel=x,
        )
        for t, p, z, r, a, c, e in itertools.product(tps, pps, sorted(set(zeros) | set(zeros_pp)), recs, accs, cps, eps)
        # context parallelism with any tensor parallelism: NVIDIA's own MLPerf Llama 2 70B LoRA configs run TP1 with
        # CP2 to CP8 (reference/mlperf_settings.csv), faster there than TP (8 x H200: DP4 CP2 3.13 s a step, DP4 TP2
        # 3.27 s in this model)
        if z in (zeros if p == 1 else zeros_pp)
        for x in sorted({1, t if e > 1 else 1})
    ]


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
    experts = (
        ", expert x expert-tensor parallelism the GPUs of a pipeline stage (tensor x context x data parallel)"
        if wl.moe is not None
        else ""
    )
    return (
        "no parallel layout is valid for these node counts (tensor x context x pipeline degrees must divide the GPUs, "
        f"tensor parallelism the GPUs per node{experts}{limit})"
    )


@dataclass(frozen=True)
class Subset:
    """The (server, nodes) rows U where layouts of one placement key can be placed, and their (server, nodes,
    fabric) rows R: ``u`` and ``r`` the rows themselves, ``pos_u`` / ``pos_r`` each row's position among them (-1
    where absent), ``rows`` and ``fab`` the step inputs restricted to them (``fab.u`` positions in ``u``)."""

    u: np.ndarray
    pos_u: np.ndarray
    r: np.ndarray
    pos_r: np.ndarray
    rows: step.Rows
    fab: step.FabricRows


class LayoutSearch:
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
    there (``dominating_keys``). ZeRO-3 is always searched: its traffic is larger but splits into more buckets,
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
        gpus: list[Gpu],
        catalog: Catalog,
    ) -> None:
        """``rows``: the inputs of each distinct (server, nodes) row U; ``fab``: those of each (server, nodes,
        fabric) row R; ``layouts``: the candidates; ``layers``: the workload's layers (1 where it states none).
        Per configuration (``n`` of them): ``u_of`` its U row, ``r_of`` its R row, ``cap`` its power cap,
        ``cap_tf`` the cap's throughput factor and ``si`` its server's index into ``gpus`` (the GPU of each
        server); ``first_r``: one configuration of each R row."""
        self.rows, self.fab, self.layouts, self.layers = rows, fab, layouts, layers
        self.n, self.u_of, self.r_of, self.cap_tf = n, u_of, r_of, cap_tf
        self.n_r = len(fab.u)
        cap_levels = np.sort(pd.unique(cap))
        self.c_of = np.searchsorted(cap_levels, cap)
        # the cap levels' throughput factors of each GPU (its power curve), read per server
        by_gpu = {
            gp.id: power.load_curve_at(catalog.power_curves[gp.power_curve], cap_levels, gp.training_power_fraction)[0]
            for gp in {gp.id: gp for gp in gpus}.values()
        }
        tf_by_server = np.asarray([by_gpu[gp.id] for gp in gpus]).reshape(len(gpus), len(cap_levels))
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
            "t_moe_all_to_all",
            "t_moe_inter_share",
            "t_framework_overhead",
            "t_data_pipeline_stall",
        ):
            self.cols[k] = np.full(n, np.nan)
        n_u = len(rows.N)
        self.min_mem = np.full(n_u, np.inf)
        self.min_layout = np.full(n_u, -1, dtype=np.int64)
        self.per_u: dict[int, step.Arrays] = {}  # each layout's arrays, on the rows of its subset
        self.terms_u: dict[int, step.Arrays] = {}
        self.subsets: dict[tuple[int, int, int, int], Subset] = {}
        self.subset_of: dict[int, Subset] = {}  # by id() of a candidate in ``layouts``

    def run(self) -> dict[str, np.ndarray]:
        """The winning layout's columns of every configuration: its index in ``layouts`` (-1 where none is valid),
        data-parallel degree, virtual stages, global batch, memory, whether it fits, the step time and its terms,
        and ``samples_factor`` (samples to converge at its batch / at the reference batch). A fixed layout that is
        valid nowhere is a PlannerInputError."""
        prepared = self._prepare()
        won = self._grid(prepared)
        self._finish(won)
        if self.rows.fixed_layout and (self.cols["layout_index"] < 0).all():
            raise PlannerInputError(invalid_layout_message(self.rows.wl, self.rows.global_batch))
        return self.cols

    def _virtual(self, lay: Layout) -> list[int]:
        """The interleaves (virtual stages per GPU) the layout may be timed at (``virtual_options``)."""
        return virtual_options(lay, self.layers, self.rows.wl)

    def _subset(self, lay: Layout) -> Subset:
        """The rows where layouts of ``lay``'s degrees can be placed (``step.placeable_rows``), built once per
        placement key: every array of a layout is computed on these rows only."""
        known = self.subset_of.get(id(lay))
        if known is not None:
            return known
        key = step.placement_key(lay)
        sub = self.subsets.get(key)
        if sub is None:
            u = np.flatnonzero(step.placeable_rows(self.rows, lay))
            pos_u = np.full(len(self.rows.N), -1, dtype=np.int64)
            pos_u[u] = np.arange(len(u))
            r = np.flatnonzero(pos_u[self.fab.u] >= 0)
            pos_r = np.full(self.n_r, -1, dtype=np.int64)
            pos_r[r] = np.arange(len(r))
            if len(u) == len(self.rows.N):  # placeable everywhere: the rows as they are
                sub = Subset(u, pos_u, r, pos_r, self.rows, self.fab)
            else:
                fab = step.FabricRows(
                    u=pos_u[self.fab.u[r]],
                    node_bytes_s=self.fab.node_bytes_s[r],
                    latency_s=self.fab.latency_s[r],
                    peer_bytes_s=self.fab.peer_bytes_s[r],
                    in_network=self.fab.in_network[r],
                )
                sub = Subset(u, pos_u, r, pos_r, step.sliced_rows(self.rows, u), fab)
            self.subsets[key] = sub
        self.subset_of[id(lay)] = sub  # the candidates live as long as the search: their ids stay theirs
        return sub

    def _prepare(self) -> list[tuple[float, int, Layout, step.Arrays, np.ndarray, np.ndarray]]:
        """Phase A: validity, memory, the smallest-memory layout per row, dominance and the lower bounds, each
        layout on the rows it can be placed on (``_subset``; its arrays are indexed by those rows)."""
        fits_by_key: dict[LayoutKey, np.ndarray] = {}
        phase_a = []
        for li, lay in enumerate(self.layouts):
            sub = self._subset(lay)
            if len(sub.u):
                self.per_u[li] = step.layout_rows(sub.rows, lay, placed=True)
        # A fixed global batch: on a row where some layout trains exactly it (no more replicas than micro-batches),
        # layouts that would round it up are not offered -- they would win by training a larger batch than asked.
        exact = np.zeros(len(self.rows.N), dtype=bool)
        for li, d in self.per_u.items():
            exact[self._subset(self.layouts[li]).u] |= d["valid"] & d["exact_batch"]
        for li, d in self.per_u.items():
            lay = self.layouts[li]
            sub = self._subset(lay)
            d["valid"] = d["valid"] & (d["exact_batch"] | ~exact[sub.u])
            if not d["valid"].any():
                continue
            smaller = d["valid"] & (d["mem"] < self.min_mem[sub.u])
            self.min_mem[sub.u[smaller]] = d["mem"][smaller]
            self.min_layout[sub.u[smaller]] = li
            fit = d["valid"] & memory.fits(d["mem"], sub.rows.gpu_memory_gb)
            if fit.any():
                fits_by_key[layout_key(lay)] = self._fits_every_interleave(lay, d, fit)
                phase_a.append((li, lay, d, fit))
        prepared = []
        for li, lay, d, fit in phase_a:
            for key in dominating_keys(lay):  # same degrees, hence the same rows
                if key in fits_by_key:
                    fit = fit & ~fits_by_key[key]
            if not fit.any():
                continue
            # the cheap bound (compute only) orders the layouts; the communication terms are computed only for a
            # layout some row of which that bound cannot rule out (in _grid)
            rows = self._subset(lay).rows
            lb_cheap = step.compute_lower_bound(rows, lay, d, max(self._virtual(lay)))
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
        rows = self._subset(lay).rows
        return fit & np.logical_and.reduce([step.interleave_fits(rows, lay, d, v) for v in options])

    def _terms(self, li: int, lay: Layout, d: step.Arrays) -> step.Arrays:
        """The layout's terms on its rows (``step.layout_terms``), computed once per layout, when first needed."""
        if li not in self.terms_u:
            self.terms_u[li] = step.layout_terms(self._subset(lay).rows, lay, d)
        return self.terms_u[li]

    def _score(self, lay: Layout, d: step.Arrays, rt: step.Arrays, u: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Time to train per reference sample (the search's score) at cap slowdown x, from the layout's
        ``step.row_terms`` on R rows whose U rows (positions in the layout's subset) are ``u``."""
        t = step.cap_terms(self._subset(lay).rows, lay, rt, x, lambda a: a, self._virtual(lay))
        return np.asarray(np.maximum(t["t_gpu"], t["t_data"]) * d["sf_per_B"][u])

    def _grid(self, prepared: list[tuple[float, int, Layout, step.Arrays, np.ndarray, np.ndarray]]) -> np.ndarray:
        """Phase B on a dense grid: columns = R rows, rows = distinct cap levels (reductions over caps are
        vectorized); only the winning layout's index and score are kept. Returns each configuration's winner."""
        best = np.full(self.inv_tf.shape, -np.inf)  # absent cells stay -inf: never block pruning
        best[self.c_of, self.r_of] = np.inf
        won = np.full(best.shape, -1, dtype=np.int64)
        worst = np.max(best, axis=0)
        x_min = self.inv_tf.min(axis=0)  # the fastest cap level of each row's GPU (a lower bound where absent)
        for _, li, lay, d, fit, lb in prepared:
            sub = self._subset(lay)  # r below: positions in the layout's rows; sub.r[r]: the R rows themselves
            r = np.flatnonzero(lb[sub.fab.u] < worst[sub.r])
            if len(r) == 0:
                continue
            su = self._terms(li, lay, d)
            lb_full = np.where(
                fit, step.step_lower_bound(sub.rows, lay, su, max(self._virtual(lay))) * d["sf_per_B"], np.inf
            )
            r = r[lb_full[sub.fab.u[r]] < worst[sub.r[r]]]
            if len(r) == 0:
                continue
            # second, exact bound per row: the score at the row's fastest cap (the step grows with compute time:
            # busy time rises 1:1 and more, hidden all-reduce by at most 2/3 of it); the cap-independent terms are
            # computed once for both
            rt = step.row_terms(sub.rows, sub.fab, lay, d, su, r, self._virtual(lay))
            u = sub.fab.u[r]
            keep = self._score(lay, d, rt, u, x_min[sub.r[r]]) < worst[sub.r[r]]
            r = r[keep]
            if len(r) == 0:
                continue
            rg = sub.r[r]
            sc = self._score(lay, d, step.take_rows(rt, keep), u[keep], self.inv_tf[:, rg])
            cur = best[:, rg]
            better = sc < cur
            if not better.any():
                continue
            new_best = np.where(better, sc, cur)
            best[:, rg] = new_best
            won[:, rg] = np.where(better, li, won[:, rg])
            worst[rg] = np.max(new_best, axis=0)
        return np.asarray(won[self.c_of, self.r_of])

    def _breakdown(self, li: int, idx: np.ndarray) -> step.Arrays:
        """The full step breakdown of the configurations idx under layout li."""
        lay, d = self.layouts[li], self.per_u[li]
        sub = self._subset(lay)
        su = self._terms(li, lay, d)
        rl = sub.pos_r[self.r_of[idx]]  # each configuration's R row, as a position in the layout's rows
        mask = np.zeros(len(sub.r), dtype=bool)  # their R rows, each once
        mask[rl] = True
        r = np.flatnonzero(mask)
        rr = (np.cumsum(mask) - 1)[rl]
        t = step.step_terms(
            sub.rows, sub.fab, lay, d, su, r, 1.0 / self.cap_tf[idx], lambda a: a[rr], self._virtual(lay)
        )
        uu = sub.fab.u[rl]
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
            "t_moe_all_to_all": t["t_moe_all_to_all"],
            "t_moe_inter_share": t["moe_inter"].astype(float),
            "t_framework_overhead": np.full(len(idx), self.rows.t_overhead_s),
            "t_data_pipeline_stall": np.maximum(t["t_data"] - t["t_gpu"], 0.0),
            "step_time_s": np.maximum(t["t_gpu"], t["t_data"]),
        }

    def _store(self, li: int, idx: np.ndarray, fit: bool) -> None:
        """Write layout li's breakdown and memory into the columns of configurations idx (``fit``: it fits them)."""
        parts = self._breakdown(li, idx)
        # the memory of the layout as chosen: its interleave's activations in flight included
        lay = self.layouts[li]
        local_u = self._subset(lay).pos_u[self.u_of[idx]]
        mem = step.interleaved_memory_gb(lay, self.per_u[li], local_u, parts["virtual_stages"])
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
        for li, idx in indices_by_value(won):
            self._store(li, idx, True)
        no_fit = np.where(self.cols["layout_index"] < 0, self.min_layout[self.u_of], -1)
        for li, idx in indices_by_value(no_fit):
            self._store(li, idx, False)


def virtual_options(lay: Layout, layers: float, wl: Workload) -> list[int]:
    """Virtual pipeline stages per GPU (Megatron's interleaved 1F1B schedule) to choose from: the layout's own
    number if it fixes one, else 1, 2, 4 or 8 with at least one layer per virtual stage and whole layers per chunk
    of the busiest stage (``step.virtual_divides``)."""
    if lay.pipeline_parallel == 1:
        return [1]
    if lay.virtual_stages is not None:
        return [lay.virtual_stages]
    return [v for v in (1, 2, 4, 8) if v * lay.pipeline_parallel <= layers and step.virtual_divides(wl, lay, v)] or [1]


# (tensor, pipeline, ZeRO stage, recompute, accumulation, sequence parallel, context parallel, expert parallel,
# expert tensor parallel)
LayoutKey = tuple[int, int, int, str, int, bool, int, int, int]
# the recomputation each one dominates where it fits: it recomputes (costs) no more -- selective and block are not
# ordered against each other (selective re-runs attention scores on every layer, block half the layers in full), nor
# selective and full: selective's s / (6 h) extra FLOPs are all attention, which an FP8 or FP4 run computes at the
# slower BF16 rate (compute.attention_precision), so at long sequences they can cost more than full's third of a
# forward pass at the run's mixed rate
RECOMPUTE_LESS = {"none": (), "selective": ("none",), "block": ("none",), "full": ("none", "block")}


def layout_key(lay: Layout) -> LayoutKey:
    """The fields that tell layouts apart in the dominance relation (everything but the interleave)."""
    return (
        lay.tensor_parallel,
        lay.pipeline_parallel,
        lay.zero_stage,
        lay.recompute,
        lay.accumulation,
        lay.sequence_parallel,
        lay.context_parallel,
        lay.expert_parallel,
        lay.expert_tensor_parallel,
    )


def dominating_keys(lay: Layout) -> list[LayoutKey]:
    """Layouts at least as fast as ``lay`` wherever they fit (same tensor and pipeline degrees)."""
    tp, pp, z, rec, acc, sp, cp, ep, etp = layout_key(lay)
    keys: list[LayoutKey] = []
    for less in RECOMPUTE_LESS[rec]:
        keys.append((tp, pp, z, less, acc, sp, cp, ep, etp))
    if pp == 1:
        keys += [(tp, pp, z, rec, a, sp, cp, ep, etp) for a in (1, 2, 4, 8, 16, 32) if a < acc]
    return keys
