"""`planner fleet FILE`: one procurement for a portfolio of jobs over a horizon (the fleet MIP), printed as text
or JSON, its tables optionally written as CSV files (``--csv DIR``, replaced atomically)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from planner.cli.common import (
    EXIT_INFEASIBLE,
    EXIT_OK,
    add_catalog_args,
    add_wide_arg,
    catalog_from,
    clean,
    emit_json,
    gap_fraction,
    notice,
    number_text,
    output_width,
    positive_float,
    readable_text_file,
    table,
    with_progress,
    wrap_line,
)
from planner.errors import PlannerInputError
from planner.formatting import cap_text
from planner.present import fleet_owned_service_notes, fleet_power_frame, fleet_progress_text, read_fleet_upload

if TYPE_CHECKING:
    from planner.fleet import FleetPlan, FleetRequest

FLEET_CSV_FILES = ("purchases.csv", "jobs.csv", "schedule.csv")  # `planner fleet --csv DIR` writes these
JOB_COLUMNS = [
    "job",
    "model",
    "server",
    "nodes",
    "power_cap",
    "layout",
    "precision",
    "time_to_train_h",
    "slots",
    "slots_run",
    "late_slots",
    "facility_energy_kwh",
]


def add_fleet_command(sub: Any) -> None:
    """Register `fleet` on the subcommands of the `planner` parser."""
    f = sub.add_parser("fleet", help="plan one procurement for a portfolio of jobs over a horizon (MIP)")
    f.add_argument("file", help="fleet request YAML (see examples/fleet.yaml)")
    f.add_argument(
        "--time-limit",
        type=positive_float,
        help="limit of the whole call, seconds (default 60): evaluating every job's modes, building the MIP, the "
        "start heuristics, HiGHS and, for an infeasible fleet, the explanation's re-solves (cut short when it runs "
        "out). A limit shorter than the modes and the build take is overrun by those, and the plan may then be only "
        "the greedy start (bound 0)",
    )
    f.add_argument("--gap", type=gap_fraction, help="relative MIP gap in [0, 1) (default 1e-4)")
    f.add_argument("--json", action="store_true", help="print JSON instead of tables")
    add_wide_arg(f)
    f.add_argument(
        "--csv",
        metavar="DIR",
        help="also write the plan's tables to DIR (made if missing; checked before the solve, written after the plan "
        "is printed, each replaced atomically): purchases.csv, jobs.csv (slots a job runs in as '3-9,12': slots 3 to "
        "9 and 12) and schedule.csv, one row per server type and fabric / job / slot and pool. Read the id and text "
        "columns back as text (planner.formatting.FLEET_CSV_TEXT_COLUMNS), or a job id '007' reads as 7",
    )
    add_catalog_args(f)
    f.set_defaults(func=cmd_fleet)


def cmd_fleet(args: argparse.Namespace) -> int:
    """`planner fleet FILE`: the request read as the app reads an upload, its ids and --csv DIR checked before the
    solve, the plan solved (progress on stderr) and printed, then the tables written. Exit 1 when no fleet meets
    the request."""
    from planner.fleet import check_fleet_ids, fleet

    req = fleet_request_from_args(args)
    cat = catalog_from(args)
    check_fleet_ids(cat, req)  # an unknown model or owned server: said with the job (entry) it is written in
    csv_dir = None if args.csv is None else writable_csv_dir(args.csv)  # said before the solve, not after it
    plan = with_progress(lambda: fleet(req, cat), "planning the fleet", fleet_progress_text(req))
    for text in fleet_owned_service_notes(cat, req):  # owned servers past their service: why they are retired
        notice(text)
    code = EXIT_OK if plan.objective_value is not None else EXIT_INFEASIBLE
    try:
        if args.json:
            emit_json(clean(plan.model_dump(mode="json")))
        else:
            print_fleet_plan(plan, req.slots, req.slot_hours, output_width(args.wide))
        sys.stdout.flush()
    except BrokenPipeError:  # `planner fleet ... --csv DIR | head`: the reader left, the tables asked for still go
        save_fleet_tables(plan, csv_dir)
        raise
    save_fleet_tables(plan, csv_dir)  # after the plan is out: a late error loses no plan
    return code


def fleet_request_from_args(args: argparse.Namespace) -> FleetRequest:
    """The fleet request of the file (the app's reader: the same request, the same messages), with --time-limit
    and --gap replacing the file's solver options when given."""
    path = readable_text_file(args.file, "fleet request file")
    req: FleetRequest = read_fleet_upload(path, Path(path).read_bytes())
    if args.time_limit or args.gap is not None:
        opts = req.solver.model_copy(
            update={k: v for k, v in (("time_limit_s", args.time_limit), ("mip_rel_gap", args.gap)) if v is not None}
        )
        req = req.model_copy(update={"solver": opts})
    return req


def save_fleet_tables(plan: FleetPlan, csv_dir: Path | None) -> None:
    """--csv DIR: the plan's tables written there (said on stderr), or a note that there is no fleet to write."""
    if csv_dir is not None and plan.objective_value is not None:
        written = write_fleet_csv(plan, csv_dir)
        sys.stderr.write(f"planner: wrote {', '.join(str(p) for p in written)}\n")
    elif csv_dir is not None:
        notice(f"no fleet, so no tables were written to {csv_dir}")


def print_fleet_plan(plan: FleetPlan, slots: int, slot_hours: float, width: int | None = None) -> None:
    """The plan as text: its summary, then (when there is a fleet) the purchases, the jobs, the schedule per slot and
    the totals as tables (the purchase and job tables fitted to ``width`` characters; None: as written)."""
    # status, objective, what is kept / bought / rented, the jobs, totals, bound and gap
    print("\n".join(wrap_line(line, width) for line in plan.summary().splitlines()))
    if plan.objective_value is None:
        return
    print("\nPurchase / rental:")
    print(table(plan.purchases, list(plan.purchases[0]), width))
    print("\nJobs:")
    jobs = plan.assignment_frame().to_dict("records")
    # the cap as a share of TDP, as solve and pareto write it ('70%', not 0.7; --json and the CSV keep the fraction)
    jobs = [{**j, "power_cap": cap_text(j["power_cap"])} if "power_cap" in j else j for j in jobs]
    print(table(jobs, JOB_COLUMNS, width))
    heading = (
        "Schedule per slot (nodes busy; facility power, kW: on site counts against the envelope, rented is the "
        "provider's):"
    )
    print("\n" + wrap_line(heading, width))
    print(fleet_schedule_text(plan, slots, slot_hours, width))
    print("\n" + wrap_line(fleet_totals_text(plan.totals), width))


def fleet_totals_text(totals: dict[str, float]) -> str:
    """'Totals: capex_usd 6,294,600, rent_usd 33,155, ...': each total in whole units from 1,000 on."""
    return "Totals: " + ", ".join(f"{k} {number_text(v)}" for k, v in totals.items())


def fleet_schedule_text(plan: FleetPlan, slots: int, slot_hours: float, width: int | None = None) -> str:
    """Per slot: whole nodes busy, and facility power on site and rented (present.fleet_power_frame, as the app);
    the slots in blocks of columns that fit ``width`` (None: one block)."""
    sched = plan.schedule_frame()
    nodes = sched.groupby("slot")["nodes"].sum() if len(sched) else pd.Series(dtype=float)
    power = fleet_power_frame(plan, slot_hours)
    kw = power.pivot_table(index="slot", columns="where", values="facility_power_kw", aggfunc="sum").fillna(0.0)
    rows = {
        "nodes_busy": [f"{round(float(nodes.get(t, 0))):,}" for t in range(slots)],
        "on_site_kw": [f"{kw['on site'].get(t, 0.0):,.1f}" if "on site" in kw else "0.0" for t in range(slots)],
        "rented_kw": [f"{kw['rented'].get(t, 0.0):,.1f}" if "rented" in kw else "0.0" for t in range(slots)],
    }
    frame = pd.DataFrame(rows, index=[f"slot {t}" for t in range(slots)]).T
    return frame.to_string(line_width=width)


# ------------------------------------------------------------------------------------------------ --csv DIR
def writable_csv_dir(text: str) -> Path:
    """``--csv DIR`` checked before the solve, so that a directory the tables cannot go to is said at once and not
    after a solve of up to the time limit: DIR is named (not empty), is not a file, is made if missing (with its
    parents), and a file can be created in it (a temp file, made and removed). Each failure is bad input."""
    if not text.strip():
        raise PlannerInputError(
            "--csv needs a directory name (it was empty): give one, e.g. --csv plan (made if missing)"
        )
    out = Path(text)
    if out.exists() and not out.is_dir():
        raise PlannerInputError(f"--csv {text} is an existing file; give a directory (made if missing)")
    taken = [name for name in FLEET_CSV_FILES if (out / name).is_dir()]
    if taken:
        raise PlannerInputError(
            f"--csv {text}: {', '.join(taken)} in it is a directory; move it, or give another directory"
        )
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=out, prefix=".planner-write-test.", suffix=".tmp")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise PlannerInputError(
            f"--csv {text}: cannot write the plan's tables there ({exc.strerror or exc}); give a directory you can "
            "create and write files in"
        ) from None
    return out


def write_fleet_csv(plan: FleetPlan, out: Path) -> list[Path]:
    """The plan's tables as CSV files in ``out``: purchases.csv, jobs.csv (``FleetPlan.assignment_frame``: the slots
    as '3-9,12') and schedule.csv. Each reads back to the same values with ``pandas.read_csv(path,
    keep_default_na=False, dtype=dict.fromkeys(planner.formatting.FLEET_CSV_TEXT_COLUMNS, str))``: the id and text
    columns as text, so that a job id such as '007' or '1e3' stays that text (not 7 or 1000.0), a ``slots`` column
    whose every job runs in one slot stays '5' (``parse_slot_ranges`` reads either back into the list), and the
    schedule's ``jobs`` is '' in a slot where none runs (not NaN).

    Atomic: every table is written to a temp file in ``out`` first, and only when all three are complete are they
    renamed over the final names (``os.replace``); whatever stops the writing (a disk error, Ctrl-C) removes the
    temp files, so no final name ever holds half a table and an earlier run's tables stay whole when the writing
    fails. A write that fails is bad input (the caller has printed the plan already)."""
    frames = dict(
        zip(FLEET_CSV_FILES, (plan.purchase_frame(), plan.assignment_frame(), plan.schedule_frame()), strict=True)
    )
    temps = {name: out / f".{name}.{os.getpid()}.tmp" for name in frames}  # per process: two runs do not collide
    replaced: list[str] = []
    try:
        out.mkdir(parents=True, exist_ok=True)  # (checked before the solve; made again if removed since)
        remove_stale_temps(out)
        for name, frame in frames.items():
            frame.to_csv(temps[name], index=False)
        for name in frames:
            os.replace(temps[name], out / name)
            replaced.append(name)
    except BaseException as exc:  # KeyboardInterrupt too: no temp file is left behind
        for tmp in temps.values():
            tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            done = f"only {', '.join(replaced)} replaced" if replaced else "no table replaced"
            raise PlannerInputError(
                f"--csv {out}: cannot write the plan's tables there ({exc.strerror or exc}); the plan was printed, "
                f"{done}: free space or give another directory, and rerun"
            ) from None
        raise
    return [out / name for name in frames]


def remove_stale_temps(out: Path) -> None:
    """The temp files of an earlier run in ``out`` that was killed (SIGKILL) between writing its tables and renaming
    them -- ``.jobs.csv.<pid>.tmp`` whose process is gone -- are removed; a running writer's are left alone."""
    for name in FLEET_CSV_FILES:
        for tmp in out.glob(f".{name}.*.tmp"):
            pid = tmp.name[len(name) + 2 : -len(".tmp")]
            if not pid.isdigit():
                continue
            try:
                os.kill(int(pid), 0)
            except ProcessLookupError:
                tmp.unlink(missing_ok=True)
            except OSError:  # alive, another user's: not ours to remove
                pass
