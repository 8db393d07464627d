"""`planner validate` (rerun the published measurements, write docs/VALIDATION.md) and `planner calibrate` (refit the
power-cap curves and the calibration, writing the catalog)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from planner.cli.common import EXIT_OK, add_catalog_args, clean, emit_json, with_progress, writable_file
from planner.validation import calibrate, validate


def add_validate_commands(sub: Any) -> None:
    """Register `validate` and `calibrate` on the subcommands of the `planner` parser."""
    v = sub.add_parser("validate", help="rerun published measurements and write docs/VALIDATION.md")
    v.add_argument("--out", default="docs/VALIDATION.md", help="report file to write")
    v.add_argument("--reference", metavar="DIR", help="reference data directory (default: the shipped one)")
    v.add_argument("--json", action="store_true", help="print the summary as JSON")
    add_catalog_args(v)
    v.set_defaults(func=cmd_validate)

    k = sub.add_parser("calibrate", help="refit power-cap curves and calibration (writes the catalog)")
    k.add_argument("--reference", metavar="DIR", help="reference data directory (default: the shipped one)")
    add_catalog_args(k)
    k.set_defaults(func=cmd_calibrate)


def cmd_validate(args: argparse.Namespace) -> int:
    """`planner validate`: --out checked writable first, then every published case predicted (progress on stderr);
    the summary by scale and family printed (or as JSON) and the report written."""
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
    """`planner calibrate`: refit and write the calibration, printed as JSON."""
    cal = calibrate(args.catalog, args.reference)
    print(json.dumps(cal, indent=2))
    return EXIT_OK
