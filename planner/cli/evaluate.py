"""`planner evaluate`: one configuration (server x nodes x fabric x power cap, optionally a fixed parallel layout)
through the exact model, with the checks of a fixed layout said in the flags' own terms.

Exit 0 when the configuration runs, 1 when it does not fit in GPU memory or a bought run outlasts its servers'
--life-years (the estimate is still printed, with a note saying why it is not a plan), 2 for bad input.
"""

from __future__ import annotations

import argparse
from typing import Any

from planner.checks import PRECISION_GPUS_HINT, evaluations_problem, in_service, raise_problem
from planner.cli.common import (
    COST_HELP,
    EXIT_INFEASIBLE,
    EXIT_OK,
    PRECISIONS,
    add_catalog_args,
    add_framework_arg,
    add_life_arg,
    add_run_terms_args,
    add_wide_arg,
    add_work_args,
    bounded_int,
    catalog_from,
    check_work_flags,
    clean,
    emit_json,
    fraction,
    notice,
    output_width,
    positive_int,
    precision_arg,
    run_terms_fields,
    validated,
    wrap_line,
)
from planner.data import Catalog, Configuration, Estimate, FrameworkProfile, Layout, Server, Workload
from planner.errors import PlannerInputError
from planner.formatting import money_text, precision_caveat, sig4, switches_text, time_terms_text
from planner.physics import acquisition_problem, compute, cost, evaluate, layout_cluster_problem, work_from
from planner.plan import batch_limit_notes


# ------------------------------------------------------------------------------------------------ parser
def add_evaluate_command(sub: Any) -> None:
    """Register `evaluate` on the subcommands of the `planner` parser."""
    e = sub.add_parser(
        "evaluate",
        help="predict one configuration with the exact model",
        description="Predict one configuration (server x nodes x fabric x power cap, optionally a fixed parallel "
        "layout) with the exact model.\n\n" + COST_HELP,
    )
    add_configuration_args(e)
    add_work_args(e)
    add_run_terms_args(e)
    add_precision_and_purchase_args(e)
    add_layout_args(e)
    e.needs(
        "--sequence-parallel",
        "--tp > 1 (sequence parallelism splits the activations over a tensor-parallel group)",
        lambda a: (a.tp or 1) > 1,
    )
    e.needs("--vp", "--pp > 1 (virtual stages interleave pipeline stages)", lambda a: a.vp == 1 or (a.pp or 1) > 1)
    e.add_argument("--json", action="store_true", help="print JSON instead of a summary")
    add_wide_arg(e)
    add_catalog_args(e)
    e.set_defaults(func=cmd_evaluate)


def add_configuration_args(e: argparse.ArgumentParser) -> None:
    """--model, --server, --nodes, --fabric, --power-cap and --global-batch: the configuration itself."""
    e.add_argument("--model", required=True, help="workload id (see `planner models`)")
    e.add_argument("--server", required=True, help="server id (see `planner catalog servers`)")
    e.add_argument(
        "--nodes", required=True, type=bounded_int(1, 100_000), help="number of servers (nodes), 1 to 100,000"
    )
    e.add_argument("--fabric", help="fabric id (default: the server's first listed fabric)")
    e.add_argument(
        "--power-cap",
        type=fraction,
        default=1.0,
        help="GPU power limit as a fraction of TDP, in (0, 1]; must be within the GPU's configurable range",
    )
    e.add_argument(
        "--global-batch",
        type=positive_int,
        help="global batch in samples (default: the workload's, grown to keep every GPU busy); rounded up to "
        "whole micro-batches per data-parallel replica, with a note when it is",
    )


def add_precision_and_purchase_args(e: argparse.ArgumentParser) -> None:
    """--precision, --site, --rent, --life-years, --framework and --no-failures."""
    e.add_argument(
        "--precision",
        type=precision_arg,
        metavar="{" + ",".join(PRECISIONS) + "}",
        help="compute precision (default: the workload's); fp4 is block-scaled FP4 training (NVFP4 / MXFP4, on the "
        "GPUs with an fp4 peak: `planner catalog gpus`); fp8 or fp4 asked for on a GPU without it is an error "
        "(the workload's own runs in the next precision the GPU has, with a note)",
    )
    e.add_argument("--site", default="us-colo", help="site id: electricity price, PUE, grid carbon")
    e.add_argument(
        "--rent",
        action="store_true",
        help="rent instead of buying (default: buy); rent is billed in whole billing periods of the offer",
    )
    add_life_arg(e)
    add_framework_arg(e)
    e.add_argument(
        "--no-failures",
        action="store_true",
        help="leave out failures, restarts and checkpoints (goodput 1; default: the expected loss of a run of "
        "this size, planner/physics/reliability.py)",
    )


def add_layout_args(e: argparse.ArgumentParser) -> None:
    """The parallel layout group: --tp, --pp, --vp, --zero, --recompute, --sequence-parallel, --cp,
    --micro-batch and --accumulation (each left out: searched, or its default)."""
    lay = e.add_argument_group("parallel layout (default: the fastest layout that fits)")
    lay.add_argument("--tp", type=bounded_int(1, 72), help="tensor-parallel degree (inside a node; default 1)")
    lay.add_argument("--pp", type=bounded_int(1, 4096), help="pipeline-parallel stages (default 1)")
    lay.add_argument(
        "--vp",
        type=bounded_int(1, 64),
        help="virtual pipeline stages per GPU, interleaved schedule (needs --pp > 1; default: the fastest)",
    )
    lay.add_argument("--zero", type=bounded_int(0, 3), help="ZeRO/FSDP sharding stage 0-3 (default 0)")
    lay.add_argument(
        "--recompute",
        choices=["none", "selective", "block", "full"],
        help="activation recomputation: selective (attention scores), block (half of each stage's layers in full) "
        "or full (default: none)",
    )
    lay.add_argument("--sequence-parallel", action="store_true", help="Megatron sequence parallelism (with --tp > 1)")
    lay.add_argument(
        "--cp",
        type=bounded_int(1, 1024),
        help="context-parallel degree: each sequence split over this many GPUs (default 1)",
    )
    lay.add_argument(
        "--ep",
        type=bounded_int(1, 1024),
        help="expert-parallel degree of a Mixture-of-Experts model: its routed experts split over this many GPUs of "
        "a pipeline stage; must divide the experts and TP x CP x DP (default 1)",
    )
    lay.add_argument(
        "--etp",
        type=bounded_int(1, 64),
        help="expert tensor-parallel degree of a Mixture-of-Experts model: each routed expert's FFN split over this "
        "many GPUs (Megatron-Core --expert-tensor-parallel-size: 1 for fine-grained experts, or TP); EP x ETP must "
        "divide TP x CP x DP (default 1)",
    )
    lay.add_argument(
        "--micro-batch", type=positive_int, help="micro-batch per GPU, samples (default: the workload's or searched)"
    )
    lay.add_argument(
        "--accumulation", type=positive_int, help="gradient-accumulation steps per optimizer step (default 1)"
    )


# ------------------------------------------------------------------------------------------------ command
def cmd_evaluate(args: argparse.Namespace) -> int:
    """`planner evaluate`: check the flags, evaluate the configuration, say what was adjusted or why it is not a
    plan (notes on stderr), print the estimate. Exit 1 when it does not fit in memory or outlives its servers."""
    cat = catalog_from(args)
    wl = cat.workload(args.model)
    server = cat.server(args.server)
    cat.site(args.site)
    check_purchase_flags(args, server)
    notes = precision_notes(cat, server, args.precision, args.precision or wl.precision)
    layout = layout_from_args(args)
    if layout is not None:
        check_layout_framework(layout, cat.framework(wl.framework))
        check_layout_cluster(layout, server, args.nodes)
        if args.global_batch is None:
            check_layout_batch_limit(layout, wl, cat.framework(wl.framework), server.gpus_per_node * args.nodes)
    check_work_flags(wl, args.tokens, args.epochs)
    raise_problem(evaluations_problem(args.evaluations or 0, args.evaluation_samples or 0.0, "cli"))
    config = configuration_from_args(args, wl, layout)
    est = estimate_layout(cat, config, layout, f"{args.nodes} x {server.id}")
    in_life = args.rent or bool(in_service(0.0, est.time_to_train_h, args.life_years))
    notes += estimate_notes(args, wl, est, in_life)
    for n in notes:
        notice(n)
    if args.json:
        emit_json(estimate_json(args, wl, est, layout, notes, in_life))
    else:
        print(format_estimate(est.model_dump(), output_width(args.wide)))
    return EXIT_OK if est.fits_memory and in_life else EXIT_INFEASIBLE


def check_purchase_flags(args: argparse.Namespace, server: Server) -> None:
    """--rent (or buying, its absence) of a server not offered that way, and --power-cap on a rented server whose
    power limit the provider sets: bad input naming the flag to change."""
    refused = acquisition_problem(server, "rent" if args.rent else "buy", args.power_cap)
    if refused is not None:
        problem, reason = refused
        fix = {
            "rent_only": "add --rent",
            "not_rented": "leave out --rent to buy it",
            "cap_fixed": "leave out --power-cap (or buy the server)",
        }[problem]
        raise PlannerInputError(f"{reason}: {fix}")


def precision_notes(cat: Catalog, server: Server, asked: str | None, precision: str) -> list[str]:
    """A precision the server's GPU lacks: bad input when asked for with --precision (``asked``), else a note that
    the workload's own precision runs in the next one the GPU has."""
    if server.gpu is None or compute.has_precision(cat.gpu(server.gpu), precision):
        return []
    used = compute.precision_used(cat.gpu(server.gpu), precision)
    if asked in compute.LOW_PRECISION_FIELDS:
        raise PlannerInputError(
            f"{server.gpu} has no {precision}: give --precision {used}, or a server with an {precision} GPU "
            f"({PRECISION_GPUS_HINT[precision][0]})"
        )
    return [f"{server.gpu} has no {precision}: the workload's {precision} runs at {used} (give --precision to choose)"]


def configuration_from_args(args: argparse.Namespace, wl: Workload, layout: Layout | None) -> Configuration:
    """The Configuration of the flags, the work (--samples/--tokens/--epochs) counted in samples."""
    samples = work_from(wl, args.samples, args.tokens, args.epochs)
    config: Configuration = validated(
        Configuration,
        {
            "model": args.model,
            "server": args.server,
            "nodes": args.nodes,
            "fabric": args.fabric,
            "power_cap": args.power_cap,
            "global_batch": args.global_batch,
            "samples": samples,
            "precision": args.precision,
            "site": args.site,
            "purchase": "rent" if args.rent else "buy",
            "life_years": args.life_years,
            "layout": layout,
            "failures": not args.no_failures,
            **run_terms_fields(args),
        },
        "configuration",
    )
    return config


def estimate_layout(cat: Catalog, config: Configuration, layout: Layout | None, cluster: str) -> Estimate:
    """The exact model's estimate of ``config``; a fixed layout that cannot run on ``cluster`` ('2 x dgx-h100') is
    bad input naming the flags that set it."""
    try:
        return evaluate(cat, config)
    except PlannerInputError as exc:
        if layout is None or not str(exc).startswith("no parallel layout"):
            raise
        raise PlannerInputError(
            f"the layout you gave ({layout_flags(layout)}) cannot run on {cluster}: {exc}; change --tp/--cp/--pp/"
            "--ep/--etp/--micro-batch/--global-batch, or leave the layout out to search for the fastest one"
        ) from None


def estimate_notes(args: argparse.Namespace, wl: Workload, est: Estimate, in_life: bool) -> list[str]:
    """What the estimate cannot be or assumes, in order: it does not fit in GPU memory; a bought run outlasts its
    servers' life; a global batch above the workload's limit; a precision no published recipe trains the workload
    in; a global batch rounded up to whole micro-batches."""
    notes: list[str] = []
    if not est.fits_memory:
        notes.append(
            f"this configuration does not fit in GPU memory ({est.memory_per_gpu_gb:,.1f} GB per GPU of "
            f"{est.gpu_memory_gb:,.0f} GB): it cannot run, so its time, energy and cost are not a plan; use more "
            "nodes, a server with more GPU memory, or a layout that holds less per GPU (--tp/--pp, --zero 3, "
            "--recompute full)"
        )
    if not in_life:
        notes.append(
            f"the run takes {est.time_to_train_h / cost.HOURS_PER_YEAR:,.4g} years, longer than the bought servers' "
            f"service life (--life-years {args.life_years:g}): they retire before it ends, so it is not a plan (as "
            f"`planner solve` holds: a bought run ends within its servers' life); its hardware share, capex x run "
            f"time / life, would be {est.time_to_train_h / (args.life_years * cost.HOURS_PER_YEAR):,.3g} times the "
            "capex. Use more nodes, less work, or --rent"
        )
    notes += batch_limit_notes(wl, args.global_batch)
    # fp4 for a CNN: an extrapolation; for a frozen-base fine-tune: no faster than fp8 where published -- said
    caveat = precision_caveat(wl.id, wl.family, est.precision, wl.trainable_params is not None)
    notes += [caveat] if caveat else []
    if args.global_batch is not None and est.global_batch != args.global_batch:
        notes.append(
            f"global batch {args.global_batch:,} was rounded up to {est.global_batch:,} (a whole micro-batch for "
            f"each data-parallel replica of layout {est.layout}); give a multiple of it to keep it exact"
        )
    return notes


def estimate_json(
    args: argparse.Namespace, wl: Workload, est: Estimate, layout: Layout | None, notes: list[str], in_life: bool
) -> dict[str, Any]:
    """The machine form: the estimate's fields, the layout given, the framework, the notes and the service-life
    verdict."""
    d: dict[str, Any] = clean(est.model_dump())
    d["layout_spec"] = layout.model_dump() if layout is not None else None
    d["framework"] = wl.framework if args.framework is None else args.framework
    d["notices"] = notes
    d["within_service_life"] = in_life
    return d


# ------------------------------------------------------------------------------------------------ layout
def layout_from_args(args: argparse.Namespace) -> Layout | None:
    """A Layout from --tp/--pp/--vp/--zero/--recompute/--sequence-parallel/--cp/--ep/--etp/--micro-batch/
    --accumulation, or None when none is given (the model then picks the fastest layout that fits)."""
    given: dict[str, Any] = {
        "tensor_parallel": args.tp,
        "pipeline_parallel": args.pp,
        "virtual_stages": args.vp,
        "zero_stage": args.zero,
        "recompute": args.recompute,
        "sequence_parallel": True if args.sequence_parallel else None,
        "context_parallel": args.cp,
        "expert_parallel": args.ep,
        "expert_tensor_parallel": args.etp,
        "micro_batch": args.micro_batch,
        "accumulation": args.accumulation,
    }
    fields = {k: v for k, v in given.items() if v is not None}
    if not fields:
        return None
    layout: Layout = validated(Layout, fields, "layout")
    return layout


def check_layout_framework(layout: Layout, fw: FrameworkProfile) -> None:
    """A layout the framework profile cannot run is bad input (say which framework can)."""
    problems = []
    if layout.tensor_parallel > 1 and not fw.tensor_parallel:
        problems.append(f"tensor parallelism (--tp {layout.tensor_parallel})")
    if layout.pipeline_parallel > 1 and not fw.pipeline_parallel:
        problems.append(f"pipeline parallelism (--pp {layout.pipeline_parallel})")
    if layout.zero_stage > fw.max_zero_stage:
        problems.append(f"ZeRO stage {layout.zero_stage} (it goes up to {fw.max_zero_stage})")
    elif (
        layout.pipeline_parallel > 1
        and fw.pipeline_max_zero_stage is not None
        and layout.zero_stage > fw.pipeline_max_zero_stage
    ):
        problems.append(
            f"ZeRO stage {layout.zero_stage} with pipeline parallelism (--pp {layout.pipeline_parallel}: it pipelines "
            f"up to stage {fw.pipeline_max_zero_stage})"
        )
    if layout.sequence_parallel and not fw.sequence_parallel:
        problems.append("sequence parallelism (--sequence-parallel)")
    if layout.recompute == "selective" and not fw.selective_recompute:
        problems.append("selective recomputation (--recompute selective)")
    if layout.context_parallel > 1 and not fw.context_parallel:
        problems.append(f"context parallelism (--cp {layout.context_parallel})")
    if problems:
        raise PlannerInputError(
            f"framework '{fw.id}' does not support {' or '.join(problems)}: choose another layout or --framework "
            "(see `planner catalog frameworks`)"
        )


def layout_flags(layout: Layout) -> str:
    """The layout as the command-line flags that set it (--tp 3 --pp 2 ...), degree 1 left out."""
    parts = [
        f"--tp {layout.tensor_parallel}",
        f"--cp {layout.context_parallel}",
        f"--pp {layout.pipeline_parallel}",
        f"--ep {layout.expert_parallel}",
        f"--etp {layout.expert_tensor_parallel}",
    ]
    parts = [p for p in parts if not p.endswith(" 1")]
    if layout.micro_batch is not None:
        parts.append(f"--micro-batch {layout.micro_batch}")
    return " ".join(parts) or "--tp 1"


def check_layout_cluster(layout: Layout, server: Server, nodes: int) -> None:
    """A fixed layout whose degrees cannot divide the cluster is bad input, said in the flags' own terms:
    tensor parallelism stays inside a node (it divides the GPUs per node) and tensor x context x pipeline
    degrees divide the cluster's GPUs (the rest is data parallelism)."""
    per_node = server.gpus_per_node
    tp = layout.tensor_parallel
    problem = layout_cluster_problem(layout, per_node, nodes)
    if problem == "tensor":
        fits = [d for d in range(1, per_node + 1) if per_node % d == 0]
        raise PlannerInputError(
            f"--tp {tp} does not divide the {per_node} GPUs of a {server.id} node (tensor parallelism stays inside "
            f"a node): give --tp {' or '.join(map(str, fits))}"
        )
    gpus = per_node * nodes
    model_parallel = tp * layout.context_parallel * layout.pipeline_parallel
    if problem == "model":
        raise PlannerInputError(
            f"--tp x --cp x --pp = {model_parallel} does not divide the {gpus:,} GPUs of {nodes} x {server.id} (the "
            "data-parallel degree is GPUs / (tp x cp x pp)): change the degrees or --nodes"
        )


def check_layout_batch_limit(layout: Layout, wl: Workload, framework: FrameworkProfile, gpus: int) -> None:
    """A fixed layout whose data-parallel degree alone exceeds the workload's largest global batch is bad input
    in the flags' terms: the degrees left out are 1, so DP = GPUs / (tp x cp x pp) replicas train at least one
    micro-batch each (``--micro-batch`` samples, default 1), more than the recipe's batch limit allows
    (Workload.max_global_batch_tokens / sequence length, or max_global_batch)."""
    if wl.max_global_batch_tokens and wl.sequence_length:
        limit = int(wl.max_global_batch_tokens // wl.sequence_length)
        what = f"{limit:,} sequences ({wl.max_global_batch_tokens:,.0f} tokens)"
    elif wl.max_global_batch:
        limit = int(wl.max_global_batch)
        what = f"{limit:,} samples"
    else:
        return
    model_parallel = layout.tensor_parallel * layout.context_parallel * layout.pipeline_parallel
    dp = gpus // model_parallel
    micro = layout.micro_batch or 1
    if dp * micro <= limit:
        return
    need = -(-gpus * micro // limit)  # the least tp x cp x pp that keeps the batch within the limit
    if framework.tensor_parallel or framework.pipeline_parallel:
        fix = f"use fewer --nodes, give tp x cp x pp of at least {need:,}" + (
            " (Llama 3 405B trained on 16,384 H100 at --tp 8 --pp 16 --cp 2)" if wl.family == "llm" else ""
        )
    else:
        fix = f"use fewer --nodes (its framework '{framework.id}' runs data parallelism only)"
    raise PlannerInputError(
        f"--tp {layout.tensor_parallel} --cp {layout.context_parallel} --pp {layout.pipeline_parallel} (a degree "
        f"left out is 1) leave {dp:,} data-parallel replicas on the {gpus:,} GPUs: at {micro} per replica that is "
        f"{dp * micro:,} per step, above the largest global batch '{wl.id}' trains at, {what}. To run it, {fix}, "
        "or leave the layout out to search for the fastest one"
    )


# ------------------------------------------------------------------------------------------------ text
def format_estimate(d: dict[str, Any], width: int | None = None) -> str:
    """An estimate (``Estimate.model_dump()``) as the text `planner evaluate` prints: one line per quantity, a line
    longer than ``width`` wrapped under its value (None: as written)."""
    fits = "yes" if d["fits_memory"] else "NO - does not fit"
    parts = d["cost_breakdown_usd"]
    money = (
        f"  cost              {usd(d['cost_usd'])} for this run (hardware share {usd(parts['hardware'])} "
        f"+ energy {usd(parts['energy'])}); up-front capex {usd(d['capex_usd'])}"
        if d["purchase"] == "buy"
        else f"  cost              {usd(d['cost_usd'])} rent for the whole billing periods of the run "
        "(power and network included); up-front = the same"
    )
    lines = [
        f"{d['model']} on {d['nodes']:,} x {d['server']} ({d['gpus']:,} x {d['gpu']}), fabric {d['fabric']}, "
        f"cap {d['power_cap']:.0%} ({d['power_cap_w']:.0f} W), {d['purchase']} at {d['site']}",
        f"  layout            {d['layout']}   global batch {d['global_batch']:,}   precision {d['precision']}",
        f"  throughput        {sig4(d['throughput_samples_per_s'])} samples/s   step {sig4(d['step_time_s'])} s",
        f"  time to train     {sig4(d['time_to_train_h'])} h ({sig4(d['time_to_train_h'] / 24)} days) "
        f"for {d['samples_to_train']:,.0f} samples",
        f"  memory per GPU    {d['memory_per_gpu_gb']:,.1f} of {d['gpu_memory_gb']:.0f} GB  fits: {fits}",
        f"  power             {sig4(d['power_kw'])} kW IT, {sig4(d['facility_power_kw'])} kW facility "
        f"(GPU {d['gpu_power_w']:,.0f} W, node {d['node_power_w']:,.0f} W, {switches_text(d['switches'])})",
        f"  energy            {sig4(d['energy_kwh'])} kWh IT, {sig4(d['facility_energy_kwh'])} kWh facility",
        money,
        f"  carbon            {sig4(d['carbon_kg'])} kgCO2e",
        f"  efficiency        {sig4(d['achieved_tflops_per_gpu'])} TFLOP/s per GPU, MFU {d['mfu']:.1%}, "
        f"bottleneck: {d['bottleneck']}",
        "  step breakdown    " + ", ".join(f"{k} {sig4(v)} s" for k, v in d["step_time_breakdown_s"].items() if v),
    ]
    terms = time_terms_text(Estimate.model_validate(d).time_to_train_breakdown_h)
    if terms:
        lines.insert(4, f"  time terms        {terms}")
    return "\n".join(wrap_line(line, width, hanging=ESTIMATE_VALUE_COLUMN) for line in lines)


ESTIMATE_VALUE_COLUMN = 20  # where format_estimate's values start ('  throughput        9,613 samples/s')


def usd(value: float) -> str:
    """A dollar amount as every table writes it (formatting.money_text: cents under $10, so a short run's $0.40 of
    energy is not '$0'), or 4 significant figures past a trillion (no 300-digit sums)."""
    return money_text(value) if abs(value) < 1e12 else f"${value:,.4g}"
