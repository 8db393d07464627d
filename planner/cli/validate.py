"""`planner validate` (rerun the published measurements, write docs/VALIDATION.md) and `planner calibrate` (refit the
power-cap curves and the calibration, writing the catalog)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from planner.cli.common import EXIT_OK, add_catalog_args, clean, emit_json, with_progress, writable_file
from planner.data import catalog_dir, reference_dir
from planner.errors import PlannerInputError
from planner.validation import calibrate, validate

CALIBRATE_S = 900.0  # `planner calibrate` on the shipped reference/, 2 cores: 16 min measured


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
    ref = usable_reference(args.reference)
    with reference_files(ref, "validate"):
        summary = with_progress(
            lambda: validate(Path(args.out), args.catalog, ref),
            "validating",
            "predicting every published case, then each GPU family as if unseen (about half a minute)",
            expected_s=30,
        )
    if args.json:
        emit_json(clean(summary.to_dict(orient="records")))
    else:
        print(summary.to_string(index=False, float_format=lambda x: f"{x:.1f}"))
        print(f"\nwrote {args.out}")
    return EXIT_OK


def cmd_calibrate(args: argparse.Namespace) -> int:
    """`planner calibrate`: the catalog checked writable and the reference folder usable first, then the refit
    (progress and an estimate on stderr); the calibration written and printed as JSON."""
    cdir = catalog_dir(args.catalog)
    for name in ("power_caps.yaml", "calibration.yaml"):
        writable_file(str(cdir / name), "--catalog")
    ref = usable_reference(args.reference)
    with reference_files(ref, "calibrate"):
        cal = with_progress(
            lambda: calibrate(args.catalog, ref),
            "calibrating",
            f"refitting the power-cap curves, then MFU, GEMM shape half points and overlaps on every fit case, at "
            f"each small-batch scale (about {CALIBRATE_S / 60:.0f} minutes on 2 cores); writes "
            f"{cdir / 'power_caps.yaml'} and {cdir / 'calibration.yaml'}",
            expected_s=CALIBRATE_S,
        )
    print(json.dumps(cal, indent=2))
    return EXIT_OK


def usable_reference(path: str | None) -> Path:
    """The reference folder (--reference, $PLANNER_REFERENCE or the shipped one), refused at once when it is missing
    or empty."""
    ref = reference_dir(path)
    if not any(p for p in ref.iterdir() if not p.name.startswith(".")):
        raise PlannerInputError(
            f"the reference folder {ref} is empty: give --reference a folder with the published measurements, as the "
            "shipped reference/ has them (or leave --reference out)"
        )
    return ref


@contextmanager
def reference_files(ref: Path, command: str) -> Iterator[None]:
    """A file of the reference folder that is not there is bad input naming it (the folder is incomplete)."""
    try:
        yield
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError) as exc:
        missing = Path(str(exc.filename)) if exc.filename else None
        if missing is None or ref.resolve() not in missing.resolve().parents:
            raise
        raise PlannerInputError(
            f"the reference folder {ref} lacks {missing.relative_to(ref)} ({exc.strerror}), which `planner {command}` "
            "reads: add it (the shipped reference/ has it), or leave --reference out"
        ) from None
