"""`planner catalog TABLE` and `planner models`: the hardware catalog and the workload library as tables or JSON."""

from __future__ import annotations

import argparse
from typing import Any

from planner.cli.common import (
    EXIT_OK,
    add_catalog_args,
    add_wide_arg,
    catalog_from,
    clean,
    emit_json,
    output_width,
    table,
    wrap_line,
)

CATALOG_TABLES = ("gpus", "servers", "fabrics", "sites", "frameworks")

# the columns of each table shown as text (a column no row has is left out); --json prints every field
CATALOG_COLUMNS: dict[str, list[str]] = {
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
        "rented_cap_settable",
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
}
MODEL_COLUMNS = ["id", "family", "params", "precision", "framework", "default_samples", "default_global_batch"]
# what a table's columns mean where the name alone does not say it, printed under the table
CATALOG_NOTES: dict[str, str] = {
    "servers": "rented_cap_settable (power_cap_settable in --json): whether a renter may set the GPU power limit of "
    "the rented server; a cloud instance's is fixed, so it runs at full power (cap 1.0). A bought server's limit is "
    "always settable: its plans try every allowed cap. Empty for a server not offered for rent."
}


def add_catalog_commands(sub: Any) -> None:
    """Register `catalog` and `models` on the subcommands of the `planner` parser."""
    c = sub.add_parser("catalog", help="list GPUs, servers, fabrics, sites or framework profiles")
    # the metavar names the tables in the usage line and in 'the following arguments are required: ...'
    c.add_argument(
        "table", choices=list(CATALOG_TABLES), metavar="{" + ",".join(CATALOG_TABLES) + "}", help="which table to list"
    )
    c.add_argument("--json", action="store_true", help="print JSON instead of a table")
    add_wide_arg(c)
    add_catalog_args(c)
    c.set_defaults(func=cmd_catalog)

    m = sub.add_parser("models", help="list the workload library")
    m.add_argument("--json", action="store_true", help="print JSON instead of a table")
    add_wide_arg(m)
    add_catalog_args(m)
    m.set_defaults(func=cmd_models)


def cmd_catalog(args: argparse.Namespace) -> int:
    """`planner catalog TABLE`: one table of the catalog (a server's NIC ports are also its ``fabric_ports``), fitted
    to the terminal, with what a column means where its name does not say it (CATALOG_NOTES)."""
    cat = catalog_from(args)
    rows = [x.model_dump() for x in getattr(cat, args.table).values()]
    if args.table == "servers":
        for r in rows:
            r["fabric_ports"] = r["nic_ports"]
    if args.json:
        emit_json(clean(rows))
        return EXIT_OK
    for r in rows:
        if isinstance(r.get("fabrics"), list):
            r["fabrics"] = ",".join(r["fabrics"])
        if args.table == "servers":  # the flag is about rentals: said for servers offered for rent only
            offered = r.get("rent_usd_per_month") is not None
            r["rented_cap_settable"] = ("yes" if r.get("power_cap_settable") else "no") if offered else None
            if not offered:  # a billing period of a server nobody rents out reads as an offer
                r["rent_billing_period"] = None
    cols = CATALOG_COLUMNS[args.table]
    width = output_width(args.wide)
    print(table(rows, [c for c in cols if any(c in r for r in rows)], width))
    if args.table in CATALOG_NOTES:
        print("\n" + wrap_line(CATALOG_NOTES[args.table], width))
    if args.table == "gpus":  # a GPU is planned only through a server that carries it
        carried = {s.gpu for s in cat.gpu_servers()}
        alone = sorted(g for g in cat.gpus if g not in carried)
        if alone:
            note = (
                f"No server of the catalog carries {', '.join(alone)}: listed for reference, a plan cannot use "
                f"{'it' if len(alone) == 1 else 'them'} until a server does (catalog/servers.yaml, or the app's "
                "Catalog page)."
            )
            print("\n" + wrap_line(note, width))
    return EXIT_OK


def cmd_models(args: argparse.Namespace) -> int:
    """`planner models`: the workload library, each model's parameters counted with its embeddings."""
    cat = catalog_from(args)
    rows = []
    for w in cat.workloads.values():
        d = w.model_dump()
        d["params"] = w.params + w.embedding_params
        rows.append(d)
    if args.json:
        emit_json(clean(rows))
        return EXIT_OK
    print(table(rows, MODEL_COLUMNS, output_width(args.wide)))
    return EXIT_OK
