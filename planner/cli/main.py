"""The `planner` command line. Tables for people by default, `--json` for machines.

Exit codes: 0 success, 1 infeasible request (with an explanation), 2 bad input (message, no traceback),
3 internal error. Heavy modules are imported inside the commands so `planner --help` stays instant.
Shared helpers live in planner/cli/common.py; solve/pareto/fleet/batch in planner/cli/plan.py.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from planner.cli.common import (
    COST_HELP,
    EXIT_BAD_INPUT,
    EXIT_INFEASIBLE,
    EXIT_INTERNAL,
    EXIT_OK,
    PRECISIONS,
    Parser,
    add_catalog_args,
    add_framework_arg,
    add_life_arg,
    add_work_args,
    bounded_int,
    catalog_from,
    check_work_flags,
    clean,
    emit_json,
    fraction,
    negative_numbers_as_values,
    notice,
    positive_int,
    precision_arg,
    table,
    validated,
    with_progress,
    writable_file,
)
from planner.formatting import precision_caveat, sig4, switches_text

__all__ = ["EXIT_BAD_INPUT", "EXIT_INTERNAL", "EXIT_OK", "build_parser", "format_estimate", "main"]

DESCRIPTION = f"""Capacity planner for distributed ML training clusters.

Exit codes: 0 ok, 1 no feasible plan (with the smallest relaxation of each requirement; `evaluate`: the
configuration does not fit in GPU memory, or a bought run outlasts its servers' --life-years), 2 bad input,
3 internal error (please report it), 4 `batch` left scenarios without an answer (rerun to resume), 130/143
interrupted (SIGINT/SIGTERM).
{COST_HELP}"""


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="planner", description=DESCRIPTION)
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)

    c = sub.add_parser("catalog", help="list GPUs, servers, fabrics, sites or framework profiles")
    c.add_argument("table", choices=["gpus", "servers", "fabrics", "sites", "frameworks"], help="which table to list")
    c.add_argument("--json", action="store_true", help="print JSON instead of a table")
    add_catalog_args(c)

    m = sub.add_parser("models", help="list the workload library")
    m.add_argument("--json", action="store_true", help="print JSON instead of a table")
    add_catalog_args(m)

    e = sub.add_parser(
        "evaluate",
        help="predict one configuration with the exact model",
        description="Predict one configuration (server x nodes x fabric x power cap, optionally a fixed parallel "
        "layout) with the exact model.\n\n" + COST_HELP,
    )
    e.add_argument("--model", required=True, help="workload id (see `planner models`)")
    e.add_argument("--server", required=True, help="server id (see `planner catalog servers`)")
    e.add_argument("--nodes", required=True, type=positive_int, help="number of servers (nodes)")
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
    add_work_args(e)
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
        "--micro-batch", type=positive_int, help="micro-batch per GPU, samples (default: the workload's or searched)"
    )
    lay.add_argument(
        "--accumulation", type=positive_int, help="gradient-accumulation steps per optimizer step (default 1)"
    )
    e.add_argument("--json", action="store_true", help="print JSON instead of a summary")
    add_catalog_args(e)

    v = sub.add_parser("validate", help="rerun published measurements and write docs/VALIDATION.md")
    v.add_argument("--out", default="docs/VALIDATION.md", help="report file to write")
    v.add_argument("--reference", metavar="DIR", help="reference data directory (default: the shipped one)")
    v.add_argument("--json", action="store_true", help="print the summary as JSON")
    add_catalog_args(v)

    k = sub.add_parser("calibrate", help="refit power-cap curves and calibration (writes the catalog)")
    k.add_argument("--reference", metavar="DIR", help="reference data directory (default: the shipped one)")
    add_catalog_args(k)

    from planner.cli.plan import add_plan_commands

    add_plan_commands(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(negative_numbers_as_values(sys.argv[1:] if argv is None else argv))
    from planner.errors import PlannerInputError

    try:
        return int(args.func(args) if hasattr(args, "func") else COMMANDS[args.command](args))
    except PlannerInputError as exc:
        sys.stderr.write(f"planner: error: {exc}\n")
        return EXIT_BAD_INPUT
    except BrokenPipeError:  # `planner ... | head`: the reader left; not an error of ours
        _silence_stdout()
        return EXIT_OK
    except KeyboardInterrupt:
        sys.stderr.write("planner: interrupted\n")
        return 130
    except Exception as exc:  # never a bare traceback for users
        if os.environ.get("PLANNER_DEBUG"):
            raise
        sys.stderr.write(f"planner: internal error: {type(exc).__name__}: {exc} (set PLANNER_DEBUG=1 for details)\n")
        return EXIT_INTERNAL


def _silence_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null so the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # pytest's captured stdout has no real descriptor
        pass


def cmd_catalog(args: argparse.Namespace) -> int:
    cat = catalog_from(args)
    rows = [x.model_dump() for x in getattr(cat, args.table).values()]
    if args.table == "servers":
        for r in rows:
            r["fabric_ports"] = r["nic_ports"]
    if args.json:
        emit_json(clean(rows))
        return EXIT_OK
    cols = {
        "gpus": [
            "id",
            "family",
            "bf16_tflops",
            "fp8_tflops",
            "fp4_tflops",
            "memory_gb",
            "tdp_w",
            "price_usd",
            "rent_usd_per_gpu_hour",
        ],
        "servers": [
            "id",
            "gpu",
            "gpus_per_node",
            "nic_ports",
            "fabrics",
            "price_usd",
            "rent_usd_per_month",
            "rent_billing_period",
            "power_cap_settable",
        ],
        "fabrics": [
            "id",
            "kind",
            "port_bandwidth_gbps",
            "latency_us",
            "switch_radix",
            "nic_price_usd",
            "switch_price_usd",
        ],
        "sites": ["id", "pue", "electricity_usd_per_kwh", "carbon_kg_per_kwh", "power_envelope_kw"],
        "frameworks": [
            "id",
            "name",
            "overlap_fraction",
            "step_overhead_ms",
            "tensor_parallel",
            "pipeline_parallel",
            "max_zero_stage",
        ],
    }[args.table]
    for r in rows:
        if isinstance(r.get("fabrics"), list):
            r["fabrics"] = ",".join(r["fabrics"])
    print(table(rows, [c for c in cols if any(c in r for r in rows)]))
    return EXIT_OK


def cmd_models(args: argparse.Namespace) -> int:
    cat = catalog_from(args)
    rows = []
    for w in cat.workloads.values():
        d = w.model_dump()
        d["params"] = w.params + w.embedding_params
        rows.append(d)
    if args.json:
        emit_json(clean(rows))
        return EXIT_OK
    print(table(rows, ["id", "family", "params", "precision", "framework", "default_samples", "default_global_batch"]))
    return EXIT_OK


def layout_from_args(args: argparse.Namespace) -> Any:
    """A planner.data.schemas.Layout from --tp/--pp/--vp/--zero/--recompute/--sequence-parallel/--cp/--micro-batch/
    --accumulation, or None when none is given (the model then picks the fastest layout that fits)."""
    from planner.data import Layout

    given: dict[str, Any] = {
        "tensor_parallel": args.tp,
        "pipeline_parallel": args.pp,
        "virtual_stages": args.vp,
        "zero_stage": args.zero,
        "recompute": args.recompute,
        "sequence_parallel": True if args.sequence_parallel else None,
        "context_parallel": args.cp,
        "micro_batch": args.micro_batch,
        "accumulation": args.accumulation,
    }
    fields = {k: v for k, v in given.items() if v is not None}
    if not fields:
        return None
    return validated(Layout, fields, "layout")


def check_layout_framework(layout: Any, fw: Any) -> None:
    """A layout the framework profile cannot run is bad input (say which framework can)."""
    from planner.errors import PlannerInputError

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


def cmd_evaluate(args: argparse.Namespace) -> int:
    from planner.checks import PRECISION_GPUS_HINT, in_service
    from planner.data import Configuration
    from planner.errors import PlannerInputError
    from planner.physics import compute, cost, evaluate, work_from

    cat = catalog_from(args)
    wl = cat.workload(args.model)
    server = cat.server(args.server)
    cat.site(args.site)
    if not args.rent and server.price_usd is None:
        raise PlannerInputError(f"server '{server.id}' is offered for rent only: add --rent")
    if args.rent and server.rent_usd_per_month is None:
        raise PlannerInputError(f"server '{server.id}' is not offered for rent: leave out --rent to buy it")
    if args.rent and args.power_cap < 1 and not getattr(server, "power_cap_settable", True):
        raise PlannerInputError(
            f"the rented '{server.id}' does not let you set the GPU power limit: leave out --power-cap "
            "(or buy the server)"
        )
    precision = args.precision or wl.precision
    notes: list[str] = []
    if server.gpu is not None and not compute.has_precision(cat.gpu(server.gpu), precision):
        used = compute.precision_used(cat.gpu(server.gpu), precision)
        if args.precision in compute.LOW_PRECISION_FIELDS:
            raise PlannerInputError(
                f"{server.gpu} has no {precision}: give --precision {used}, or a server with an {precision} GPU "
                f"({PRECISION_GPUS_HINT[precision][0]})"
            )
        notes.append(
            f"{server.gpu} has no {precision}: the workload's {precision} runs at {used} (give --precision to choose)"
        )
    layout = layout_from_args(args)
    if layout is not None:
        check_layout_framework(layout, cat.framework(wl.framework))
        check_layout_cluster(layout, server, args.nodes)
        if args.global_batch is None:
            check_layout_batch_limit(layout, wl, cat.framework(wl.framework), server.gpus_per_node * args.nodes)
    check_work_flags(wl, args.tokens, args.epochs)
    samples = work_from(wl, args.samples, args.tokens, args.epochs)
    config = validated(
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
        },
        "configuration",
    )
    try:
        est = evaluate(cat, config)
    except PlannerInputError as exc:
        if layout is None or not str(exc).startswith("no parallel layout"):
            raise
        raise PlannerInputError(
            f"the layout you gave ({layout_flags(layout)}) cannot run on {args.nodes} x {server.id}: {exc}; change "
            "--tp/--cp/--pp/--micro-batch/--global-batch, or leave the layout out to search for the fastest one"
        ) from None
    if not est.fits_memory:
        notes.append(
            f"this configuration does not fit in GPU memory ({est.memory_per_gpu_gb:,.1f} GB per GPU of "
            f"{est.gpu_memory_gb:,.0f} GB): it cannot run, so its time, energy and cost are not a plan; use more "
            "nodes, a server with more GPU memory, or a layout that holds less per GPU (--tp/--pp, --zero 3, "
            "--recompute full)"
        )
    in_life = args.rent or bool(in_service(0.0, est.time_to_train_h, args.life_years))
    if not in_life:
        notes.append(
            f"the run takes {est.time_to_train_h / cost.HOURS_PER_YEAR:,.4g} years, longer than the bought servers' "
            f"service life (--life-years {args.life_years:g}): they retire before it ends, so it is not a plan (as "
            f"`planner solve` holds: a bought run ends within its servers' life); its hardware share, capex x run "
            f"time / life, would be {est.time_to_train_h / (args.life_years * cost.HOURS_PER_YEAR):,.3g} times the "
            "capex. Use more nodes, less work, or --rent"
        )
    from planner.present import batch_limit_notes

    notes += batch_limit_notes(wl, args.global_batch)
    caveat = precision_caveat(wl.id, wl.family, est.precision)  # fp4 for a CNN: an extrapolation, said
    notes += [caveat] if caveat else []
    if args.global_batch is not None and est.global_batch != args.global_batch:
        notes.append(
            f"global batch {args.global_batch:,} was rounded up to {est.global_batch:,} (a whole micro-batch for "
            f"each data-parallel replica of layout {est.layout}); give a multiple of it to keep it exact"
        )
    for n in notes:
        notice(n)
    if args.json:
        d = clean(est.model_dump())
        d["layout_spec"] = layout.model_dump() if layout is not None else None
        d["framework"] = wl.framework if args.framework is None else args.framework
        d["notices"] = notes
        d["within_service_life"] = in_life
        emit_json(d)
        return EXIT_OK if est.fits_memory and in_life else EXIT_INFEASIBLE
    print(format_estimate(est.model_dump()))
    return EXIT_OK if est.fits_memory and in_life else EXIT_INFEASIBLE


def layout_flags(layout: Any) -> str:
    """The layout as the command-line flags that set it (--tp 3 --pp 2 ...), degree 1 left out."""
    parts = [f"--tp {layout.tensor_parallel}", f"--cp {layout.context_parallel}", f"--pp {layout.pipeline_parallel}"]
    parts = [p for p in parts if not p.endswith(" 1")]
    if layout.micro_batch is not None:
        parts.append(f"--micro-batch {layout.micro_batch}")
    return " ".join(parts) or "--tp 1"


def check_layout_cluster(layout: Any, server: Any, nodes: int) -> None:
    """A fixed layout whose degrees cannot divide the cluster is bad input, said in the flags' own terms:
    tensor parallelism stays inside a node (it divides the GPUs per node) and tensor x context x pipeline
    degrees divide the cluster's GPUs (the rest is data parallelism)."""
    from planner.errors import PlannerInputError

    per_node = server.gpus_per_node
    tp = layout.tensor_parallel
    if per_node % tp:
        fits = [d for d in range(1, per_node + 1) if per_node % d == 0]
        raise PlannerInputError(
            f"--tp {tp} does not divide the {per_node} GPUs of a {server.id} node (tensor parallelism stays inside "
            f"a node): give --tp {' or '.join(map(str, fits))}"
        )
    gpus = per_node * nodes
    model_parallel = tp * layout.context_parallel * layout.pipeline_parallel
    if gpus % model_parallel:
        raise PlannerInputError(
            f"--tp x --cp x --pp = {model_parallel} does not divide the {gpus:,} GPUs of {nodes} x {server.id} (the "
            "data-parallel degree is GPUs / (tp x cp x pp)): change the degrees or --nodes"
        )


def check_layout_batch_limit(layout: Any, wl: Any, framework: Any, gpus: int) -> None:
    """A fixed layout whose data-parallel degree alone exceeds the workload's largest global batch is bad input
    in the flags' terms: the degrees left out are 1, so DP = GPUs / (tp x cp x pp) replicas train at least one
    micro-batch each (``--micro-batch`` samples, default 1), more than the recipe's batch limit allows
    (Workload.max_global_batch_tokens / sequence length, or max_global_batch)."""
    from planner.errors import PlannerInputError

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


def format_estimate(d: dict[str, Any]) -> str:
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
        f"{d['model']} on {d['nodes']} x {d['server']} ({d['gpus']} x {d['gpu']}), fabric {d['fabric']}, "
        f"cap {d['power_cap']:.0%} ({d['power_cap_w']:.0f} W), {d['purchase']} at {d['site']}",
        f"  layout            {d['layout']}   global batch {d['global_batch']:,}   precision {d['precision']}",
        f"  throughput        {sig4(d['throughput_samples_per_s'])} samples/s   step {sig4(d['step_time_s'])} s",
        f"  time to train     {sig4(d['time_to_train_h'])} h ({sig4(d['time_to_train_h'] / 24)} days) "
        f"for {sig4(d['samples_to_train'])} samples",
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
    return "\n".join(lines)


def usd(value: float) -> str:
    """Dollars to the cent's nearest dollar, or in 4 significant figures past a trillion (no 300-digit sums)."""
    return f"${value:,.0f}" if abs(value) < 1e12 else f"${value:,.4g}"


def cmd_validate(args: argparse.Namespace) -> int:
    from planner.validation import validate

    writable_file(args.out, "--out")
    summary = with_progress(
        lambda: validate(Path(args.out), args.catalog, args.reference),
        "validating",
        "predicting every published case, then each GPU family as if unseen (about half a minute)",
    )
    if args.json:
        emit_json(clean(summary.to_dict(orient="records")))
    else:
        print(summary.to_string(index=False, float_format=lambda x: f"{x:.1f}"))
        print(f"\nwrote {args.out}")
    return EXIT_OK


def cmd_calibrate(args: argparse.Namespace) -> int:
    from planner.validation import calibrate

    cal = calibrate(args.catalog, args.reference)
    print(json.dumps(cal, indent=2))
    return EXIT_OK


COMMANDS = {
    "catalog": cmd_catalog,
    "models": cmd_models,
    "evaluate": cmd_evaluate,
    "validate": cmd_validate,
    "calibrate": cmd_calibrate,
}

if __name__ == "__main__":
    raise SystemExit(main())
