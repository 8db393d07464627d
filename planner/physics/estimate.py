"""One configuration's estimate: the scalar entry point of the model and the ``Estimate`` of a table row.

``evaluate`` checks one ``Configuration`` as a user gives it (server with a GPU, a fabric it can use, a cap within
the GPU's range, a precision the GPU has where one is asked for by name) and evaluates it with the columns
``evaluate_space`` builds its table of (``space.space_columns``): a single configuration gets exactly the numbers it
has in any space.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from planner.data import Catalog, Configuration, Estimate, Layout, Server
from planner.errors import PlannerInputError
from planner.physics import compute, run_time
from planner.physics.layouts import invalid_layout_message
from planner.physics.space import Space, space_columns
from planner.physics.tables import ColumnsRow
from planner.physics.work import Work, check_catalog, validated

# the step-time terms of an Estimate's breakdown, each the table's column "t_<term>", seconds per step
BREAKDOWN = (
    "compute",
    "tensor_parallel",
    "context_parallel",
    "pipeline_bubble",
    "pipeline_p2p",
    "data_parallel_exposed",
    "optimizer_step",
    "embedding_all_to_all",
    "moe_all_to_all",
    "framework_overhead",
    "data_pipeline_stall",
)


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
    refused = acquisition_problem(server, config.purchase, config.power_cap)
    if refused is not None:
        problem, reason = refused
        fix = {
            "rent_only": "give purchase='rent'",
            "not_rented": "give purchase='buy' (the default)",
            "cap_fixed": "give power_cap=1.0 (or buy the server, purchase='buy')",
        }[problem]
        raise PlannerInputError(f"{reason}: {fix}")
    if config.layout is not None:
        degrees = layout_cluster_problem(config.layout, server.gpus_per_node, config.nodes)
        if degrees == "tensor":
            raise PlannerInputError(
                f"layout tensor_parallel={config.layout.tensor_parallel} does not divide the {server.gpus_per_node} "
                f"GPUs of a {server.id} node (tensor parallelism stays inside a node): give a divisor of them"
            )
        if degrees == "model":
            mp = config.layout.tensor_parallel * config.layout.context_parallel * config.layout.pipeline_parallel
            raise PlannerInputError(
                f"layout tensor x context x pipeline parallel = {mp} does not divide the "
                f"{server.gpus_per_node * config.nodes:,} GPUs of {config.nodes} x {server.id} (the data-parallel "
                "degree is GPUs / (tp x cp x pp)): change the degrees or nodes"
            )
        if degrees == "sequence":
            raise PlannerInputError(
                "layout sequence_parallel=True splits what tensor parallelism replicates, and tensor_parallel is 1: "
                "give tensor_parallel > 1, or leave sequence_parallel out"
            )
    if config.precision is not None and not compute.has_precision(gpu, config.precision):
        used = compute.precision_used(gpu, config.precision)  # asked for by name: refused, as `planner evaluate` does
        raise PlannerInputError(
            f"{gpu.id} has no {config.precision}: give precision='{used}', or leave precision out (the workload's "
            f"own falls back to the next precision the GPU has), or choose a server whose GPU has {config.precision}"
        )
    wl = catalog.workload(config.model)
    # validated above exactly as space_from_frame would validate a one-row table
    space = Space(
        [server.id],
        [fabric],
        np.zeros(1, dtype=np.int64),
        np.zeros(1, dtype=np.int64),
        np.asarray([config.power_cap], dtype=float),
        np.asarray([config.nodes], dtype=np.int64),
    )
    # the purchase mode and service life are Configuration's fields, validated with it
    work = Work(
        config.samples,
        config.global_batch,
        config.precision,
        config.failures,
        startup_s=config.startup_s,
        evaluation_s=config.evaluation_s,
        evaluation_samples=run_time.evaluation_sample_equivalents(
            config.evaluations, config.evaluation_samples, compute.forward_flops_share(wl)
        ),
    )
    # evaluate_space's columns of this one configuration, read without building its table of one row
    columns = space_columns(
        catalog,
        wl,
        space,
        catalog.site(config.site).id,
        config.purchase,
        work,
        layout=config.layout,
        life_years=config.life_years,
    )
    row = ColumnsRow(columns, 0)
    if not bool(row["valid_layout"]):
        raise PlannerInputError(invalid_layout_message(wl, config.global_batch))
    return estimate_from_row(row)


def layout_cluster_problem(layout: Layout, gpus_per_node: int, nodes: int) -> str | None:
    """Why a fixed layout cannot run on ``nodes`` servers of ``gpus_per_node`` GPUs, or None: tensor parallelism
    that does not divide a node's GPUs ('tensor': it stays inside a node), tensor x context x pipeline degrees that
    do not divide the cluster's GPUs ('model': the rest is data parallelism), or sequence parallelism without
    tensor parallelism ('sequence': it splits what TP replicates). One rule for ``evaluate`` and ``planner
    evaluate``, each wording it in its own terms."""
    if gpus_per_node % layout.tensor_parallel:
        return "tensor"
    if (gpus_per_node * nodes) % (layout.tensor_parallel * layout.context_parallel * layout.pipeline_parallel):
        return "model"
    if layout.sequence_parallel and layout.tensor_parallel == 1:
        return "sequence"
    return None


def acquisition_problem(server: Server, purchase: str, power_cap: float) -> tuple[str, str] | None:
    """Why a configuration cannot be had as asked -- (what, the reason in words) -- or None: bought but the catalog
    gives the server no price ('rent_only'), rented but it gives no rent ('not_rented'), or rented at a cap below
    TDP where the provider sets the GPU's limit ('cap_fixed': such rentals run at full power, the rule pricing applies
    to every row). One rule for ``evaluate`` and ``planner evaluate``, each adding the fix in its own terms."""
    if purchase != "rent" and server.price_usd is None:
        return "rent_only", f"server '{server.id}' is offered for rent only"
    if purchase == "rent" and server.rent_usd_per_month is None:
        return "not_rented", f"server '{server.id}' is not offered for rent"
    if purchase == "rent" and power_cap < 1 - 1e-9 and not server.power_cap_settable:
        return "cap_fixed", f"the rented '{server.id}' does not let you set the GPU power limit"
    return None


def estimate_from_row(r: Any) -> Estimate:
    """The ``Estimate`` of one row of an ``evaluate_space`` table (or of a priced table derived from it), read by
    column name (a pandas Series, ``tables.ColumnsRow``, ``plans.Row``): the row's figures under the Estimate's
    field names, the step-time terms as ``step_time_breakdown_s`` and the hardware and energy shares of the cost
    as ``cost_breakdown_usd``."""

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
        startup_s=f("startup_h") * run_time.SECONDS_PER_HOUR,
        evaluation_s=f("evaluation_h") * run_time.SECONDS_PER_HOUR,
        memory_per_gpu_gb=f("memory_per_gpu_gb"),
        gpu_memory_gb=f("gpu_memory_gb"),
        fits_memory=bool(r["fits_memory"]),
        gpu_power_w=f("gpu_power_w"),
        node_power_w=f("node_power_w"),
        power_kw=f("power_kw"),
        startup_power_kw=f("startup_power_kw"),
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
