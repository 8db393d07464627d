"""The `planner` command line. Tables for people by default, `--json` for machines.

Exit codes: 0 success, 1 infeasible request (with an explanation), 2 bad input (message, no traceback),
3 internal error. Heavy modules are imported inside the commands so `planner --help` stays instant.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_INFEASIBLE, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 3


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse's own errors: usage + message, exit 2
        self.print_usage(sys.stderr)
        sys.stderr.write(f"planner: error: {message}\n")
        raise SystemExit(EXIT_BAD_INPUT)


def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (v > 0 and math.isfinite(v)):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return v


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive whole number, got {text!r}")
    return v


def _fraction(text: str) -> float:
    v = _positive_float(text)
    if v > 1:
        raise argparse.ArgumentTypeError(f"a power cap is a fraction of TDP in (0, 1], got {text!r}")
    return v


def _csv_list(text: str) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise argparse.ArgumentTypeError("expected a comma-separated list")
    return items


def _json_default(o: Any) -> Any:
    if hasattr(o, "item"):
        return o.item()
    if hasattr(o, "model_dump"):
        return o.model_dump()
    if isinstance(o, float) and not math.isfinite(o):
        return None
    return str(o)


def emit_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, default=_json_default, allow_nan=False))


def _clean(obj: Any) -> Any:
    """NaN/inf -> None so the JSON is standard."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    if hasattr(obj, "item"):
        return _clean(obj.item())
    return obj


def _table(rows: list[dict[str, Any]], columns: Sequence[str]) -> str:
    from tabulate import tabulate

    return tabulate([[r.get(c, "") for c in columns] for r in rows], headers=list(columns), floatfmt=",.4g")


def _add_catalog_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--catalog", metavar="DIR", help="hardware catalog directory (default: the shipped one)")
    p.add_argument("--models", metavar="DIR", help="workload library directory (default: the shipped one)")


def _add_work_args(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--samples", type=_positive_float, help="samples to train (at the reference batch)")
    g.add_argument("--tokens", type=_positive_float, help="tokens to train (sequence models)")
    g.add_argument("--epochs", type=_positive_float, help="epochs over the workload's dataset")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="planner", description="Capacity planner for distributed ML training clusters.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    c = sub.add_parser("catalog", help="list GPUs, servers, fabrics or sites")
    c.add_argument("table", choices=["gpus", "servers", "fabrics", "sites"])
    c.add_argument("--json", action="store_true")
    _add_catalog_args(c)

    m = sub.add_parser("models", help="list the workload library")
    m.add_argument("--json", action="store_true")
    _add_catalog_args(m)

    e = sub.add_parser("evaluate", help="predict one configuration with the exact model")
    e.add_argument("--model", required=True)
    e.add_argument("--server", required=True)
    e.add_argument("--nodes", required=True, type=_positive_int)
    e.add_argument("--fabric")
    e.add_argument("--power-cap", type=_fraction, default=1.0, help="GPU power limit as a fraction of TDP")
    e.add_argument("--global-batch", type=_positive_int)
    _add_work_args(e)
    e.add_argument("--precision", choices=["bf16", "fp16", "fp8", "tf32", "fp32"])
    e.add_argument("--site", default="us-colo")
    e.add_argument("--rent", action="store_true", help="rent instead of buying")
    e.add_argument("--life-years", type=_positive_float, default=4.0)
    e.add_argument("--json", action="store_true")
    _add_catalog_args(e)

    v = sub.add_parser("validate", help="rerun published measurements and write docs/VALIDATION.md")
    v.add_argument("--out", default="docs/VALIDATION.md")
    v.add_argument("--reference", metavar="DIR")
    v.add_argument("--json", action="store_true")
    _add_catalog_args(v)

    k = sub.add_parser("calibrate", help="refit power-cap curves and calibration (writes the catalog)")
    k.add_argument("--reference", metavar="DIR")
    _add_catalog_args(k)

    from planner.cli_plan import add_plan_commands

    add_plan_commands(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from planner.errors import PlannerInputError

    try:
        return int(args.func(args) if hasattr(args, "func") else COMMANDS[args.command](args))
    except PlannerInputError as exc:
        sys.stderr.write(f"planner: error: {exc}\n")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        sys.stderr.write("planner: interrupted\n")
        return 130
    except Exception as exc:  # never a bare traceback for users
        if os.environ.get("PLANNER_DEBUG"):
            raise
        sys.stderr.write(f"planner: internal error: {type(exc).__name__}: {exc} (set PLANNER_DEBUG=1 for details)\n")
        return EXIT_INTERNAL


def _catalog(args: argparse.Namespace) -> Any:
    from planner.data import load_catalog

    return load_catalog(args.catalog, args.models)


def cmd_catalog(args: argparse.Namespace) -> int:
    cat = _catalog(args)
    table = getattr(cat, args.table)
    rows = [x.model_dump() for x in table.values()]
    if args.table == "servers":
        for r in rows:
            r["fabric_ports"] = r["nic_ports"]
    if args.json:
        emit_json(_clean(rows))
        return EXIT_OK
    cols = {
        "gpus": [
            "id",
            "family",
            "bf16_tflops",
            "fp8_tflops",
            "memory_gb",
            "tdp_w",
            "price_usd",
            "rent_usd_per_gpu_hour",
        ],
        "servers": ["id", "gpu", "gpus_per_node", "nic_ports", "fabrics", "price_usd", "rent_usd_per_month"],
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
    }[args.table]
    for r in rows:
        if isinstance(r.get("fabrics"), list):
            r["fabrics"] = ",".join(r["fabrics"])
    print(_table(rows, cols))
    return EXIT_OK


def cmd_models(args: argparse.Namespace) -> int:
    cat = _catalog(args)
    rows = []
    for w in cat.workloads.values():
        d = w.model_dump()
        d["params"] = w.params + w.embedding_params
        rows.append(d)
    if args.json:
        emit_json(_clean(rows))
        return EXIT_OK
    print(_table(rows, ["id", "family", "params", "precision", "framework", "default_samples", "default_global_batch"]))
    return EXIT_OK


def cmd_evaluate(args: argparse.Namespace) -> int:
    from planner.model import evaluate, work_from
    from planner.schemas import Configuration

    cat = _catalog(args)
    wl = cat.workload(args.model)
    samples = work_from(wl, args.samples, args.tokens, args.epochs)
    config = Configuration(
        model=args.model,
        server=args.server,
        nodes=args.nodes,
        fabric=args.fabric,
        power_cap=args.power_cap,
        global_batch=args.global_batch,
        samples=samples,
        precision=args.precision,
        site=args.site,
        purchase="rent" if args.rent else "buy",
        life_years=args.life_years,
    )
    cat.site(args.site)
    est = evaluate(cat, config)
    if args.json:
        emit_json(_clean(est.model_dump()))
        return EXIT_OK
    print(format_estimate(est.model_dump()))
    return EXIT_OK


def format_estimate(d: dict[str, Any]) -> str:
    fits = "yes" if d["fits_memory"] else "NO - does not fit"
    lines = [
        f"{d['model']} on {d['nodes']} x {d['server']} ({d['gpus']} x {d['gpu']}), fabric {d['fabric']}, "
        f"cap {d['power_cap']:.0%} ({d['power_cap_w']:.0f} W), {d['purchase']} at {d['site']}",
        f"  layout            {d['layout']}   global batch {d['global_batch']:,}   precision {d['precision']}",
        f"  throughput        {d['throughput_samples_per_s']:,.4g} samples/s   step {d['step_time_s']:.4g} s",
        f"  time to train     {d['time_to_train_h']:,.4g} h ({d['time_to_train_h'] / 24:,.3g} days) "
        f"for {d['samples_to_train']:,.4g} samples",
        f"  memory per GPU    {d['memory_per_gpu_gb']:,.1f} of {d['gpu_memory_gb']:.0f} GB  fits: {fits}",
        f"  power             {d['power_kw']:,.4g} kW IT, {d['facility_power_kw']:,.4g} kW facility "
        f"(GPU {d['gpu_power_w']:.0f} W, node {d['node_power_w']:,.0f} W, {d['switches']} switches)",
        f"  energy            {d['energy_kwh']:,.4g} kWh IT, {d['facility_energy_kwh']:,.4g} kWh facility",
        f"  cost              ${d['cost_usd']:,.0f} (hardware ${d['cost_breakdown_usd']['hardware']:,.0f}, "
        f"energy ${d['cost_breakdown_usd']['energy']:,.0f}; capex ${d['capex_usd']:,.0f})",
        f"  carbon            {d['carbon_kg']:,.4g} kgCO2e",
        f"  efficiency        {d['achieved_tflops_per_gpu']:.4g} TFLOP/s per GPU, MFU {d['mfu']:.1%}, "
        f"bottleneck: {d['bottleneck']}",
        "  step breakdown    " + ", ".join(f"{k} {v:.3g}s" for k, v in d["step_time_breakdown_s"].items() if v),
    ]
    return "\n".join(lines)


def cmd_validate(args: argparse.Namespace) -> int:
    from planner.validation import validate

    summary = validate(Path(args.out), args.catalog, args.reference)
    if args.json:
        emit_json(_clean(summary.to_dict(orient="records")))
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
