"""`planner batch SCENARIOS --out DIR` (many scenarios solved in parallel, resumable) and `planner batch report DIR`
(its own parser: its options and --help).

Exit codes: 4 when scenarios are left without an answer (rerun to resume); otherwise 0 when at least one scenario
has a plan, 1 when none has, 2 when every scenario is bad input (or the output directory is unusable, its store
damaged); 128 + the signal after SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from planner.batch import (
    EXIT_INCOMPLETE,
    MAX_SCENARIOS,
    BatchInterrupted,
    BatchOutcome,
    report_blocks,
    report_document,
    run_batch,
    write_report,
)
from planner.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_INFEASIBLE,
    EXIT_INTERNAL,
    EXIT_OK,
    Parser,
    add_catalog_args,
    bounded_int,
    clean,
    emit_json,
    notice,
    one_line,
    readable_text_file,
)
from planner.errors import PlannerInputError

BATCH_DESCRIPTION = (
    "planner batch SCENARIOS.yaml --out DIR | planner batch report DIR\n\n"
    "Exit code: 4 when scenarios are left without an answer (not run, or an error such as a worker that died "
    "--max-attempts times: rerun the same command to resume); otherwise 0 when at least one scenario has a "
    "plan, 1 when none has (all infeasible), 2 when every scenario is bad input. Also 2 for an unusable "
    "output directory (a file in the way, read-only, disk full, results of other inputs there, a damaged store: "
    "what finished is saved to results.csv, and --force-new starts over); 130/143 after SIGINT/SIGTERM (finished "
    f"scenarios are kept, and written to results.csv). A scenario file of more than {MAX_SCENARIOS:,} scenarios is "
    "refused."
)


def add_batch_command(sub: Any) -> None:
    """Register `batch` on the subcommands of the `planner` parser, with `batch report` routed to its own parser."""
    b = sub.add_parser(
        "batch",
        help="solve many scenarios (grid or list) in parallel; `batch report DIR`",
        description=BATCH_DESCRIPTION,
    )
    b.add_argument("target", nargs="+", help="a scenario file (YAML/CSV); `planner batch report --help` for the report")
    b.add_argument("--out", help="results directory, resumable: a rerun skips finished scenarios (required)")
    b.add_argument("--workers", type=bounded_int(1, 1024), help="parallel workers (default: CPU cores)")
    b.add_argument("--engine", choices=["local", "ray"], default="local", help="local processes or a Ray cluster")
    b.add_argument("--ray-address", help="address of an existing Ray cluster (with --engine ray; default: start one)")
    b.needs("--ray-address", "--engine ray (the local engine runs on this machine)", lambda a: a.engine == "ray")
    b.add_argument("--no-progress", action="store_true", help="no progress bar")
    b.add_argument("--json", action="store_true", help="print the run's summary and results table as JSON")
    b.add_argument(
        "--force-new",
        action="store_true",
        help="DIR holds results of other inputs (scenarios, catalog, planner version) or a damaged store: discard "
        "them and start over in DIR",
    )
    b.add_argument(
        "--max-attempts",
        type=bounded_int(1, 100),
        default=3,
        help="tries per scenario when its worker dies (default 3)",
    )
    add_catalog_args(b)
    b.set_defaults(func=cmd_batch)
    r = Parser(
        prog="planner batch report",
        description="Write DIR/report.md (charts in DIR/charts/) and a self-contained DIR/report.html from the results "
        "of a batch run: per workload, the plans ranked by their budget's measure, the scenarios without a plan and "
        "what would make them feasible, and which varied parameter changes which plan attribute.",
    )
    r.add_argument("dir", metavar="DIR", help="a results directory (the --out of a `planner batch` run)")
    r.add_argument(
        "--json",
        action="store_true",
        help="print the report as JSON (its sections with their text, tables and charts) instead of the files' names",
    )
    r.set_defaults(func=batch_report)
    b.route("report", r)


def cmd_batch(args: argparse.Namespace) -> int:
    """`planner batch`: the scenario file checked, run (resumable) and summed up; see the module docstring for the exit
    code."""
    check_batch_args(args)
    note_workers_over_cores(args)
    try:
        res = run_batch(
            args.target[0],
            args.out,
            workers=args.workers,
            engine=args.engine,
            ray_address=args.ray_address,
            catalog_dir=args.catalog,
            models_dir=args.models,
            progress=not args.no_progress,
            force_new=args.force_new,
            max_attempts=args.max_attempts,
        )
    except BatchInterrupted as exc:
        sys.stderr.write(
            f"planner: batch interrupted by {exc.args[0]}; every finished scenario is saved in "
            f"{Path(args.out) / 'results.sqlite'} (and results.csv): rerun the same command to resume\n"
        )
        return 128 + exc.signum
    code = batch_exit_code(res.frame) if res.complete else EXIT_INCOMPLETE
    print_batch_outcome(args, res, code)
    return code


def batch_report(args: argparse.Namespace) -> int:
    """`planner batch report DIR`: the Markdown and HTML report of a results directory, and its name (or the report
    itself as JSON)."""
    out = Path(args.dir)
    if not out.is_dir():
        raise PlannerInputError(f"results directory not found: {out} (give the --out of a batch run)")
    blocks = report_blocks(out)
    path = write_report(blocks, out / "report.md")
    if args.json:
        emit_json(clean({"report": str(path), "html": str(path.with_suffix(".html")), **report_document(blocks, out)}))
    else:
        print(f"wrote {path} and {path.with_suffix('.html')}")
    return EXIT_OK


def check_batch_args(args: argparse.Namespace) -> None:
    """One scenario file, readable text, and --out a directory (new or from a past run): bad input otherwise."""
    if len(args.target) != 1:
        raise PlannerInputError(
            f"give one scenario file (got {len(args.target)}: {' '.join(args.target)}); for the report: planner batch "
            "report DIR"
        )
    if not args.out:
        raise PlannerInputError("--out DIR is required (results are written there as they finish)")
    if Path(args.out).exists() and not Path(args.out).is_dir():
        raise PlannerInputError(f"--out {args.out} is an existing file; give a directory (new or from a past run)")
    readable_text_file(args.target[0], "scenario file")


def note_workers_over_cores(args: argparse.Namespace) -> None:
    """More local workers than CPU cores: said (each is a process with its own memory, and none goes faster)."""
    cores = os.cpu_count() or 1
    if args.engine == "local" and args.workers and args.workers > cores:
        notice(
            f"--workers {args.workers} on {cores} CPU cores: local workers are processes, one solve each at a time "
            f"and each with its own memory; more than the cores do not go faster (up to {args.workers} start, at "
            "most one per scenario left)"
        )


def print_batch_outcome(args: argparse.Namespace, res: BatchOutcome, code: int) -> None:
    """The run's summary and rows as JSON, or a line of counts; on stderr, when every scenario is bad input, why
    (``bad_input_error``), and how many scenarios are left without an answer."""
    df = res.frame
    if args.json:
        emit_json(clean({"summary": res.summary(), "results": df.to_dict(orient="records")}))
    else:
        counts = ", ".join(f"{v} {k}" for k, v in res.counts.items())
        print(f"{res.total} scenarios, {len(df)} rows in {Path(args.out) / 'results.sqlite'} (+ results.csv): {counts}")
    if code == EXIT_BAD_INPUT and len(df) and "message" in df:
        sys.stderr.write(bad_input_error(df, Path(args.out) / "results.csv"))
    if not res.complete:
        not_run = res.stats.get("not_run", 0)
        why = (
            f"{not_run} not run: no Ray worker was left (its nodes lost, no room for a new one); "
            if not_run
            else "errors: see the message column; "
        )
        sys.stderr.write(
            f"planner: {len(res.unfinished)} of {res.total} scenarios have no answer ({why}rerun the same command to "
            "retry them)\n"
        )


BAD_INPUT_SHOWN = 3  # distinct reasons of an all-bad-input batch said on the error line


def bad_input_error(df: pd.DataFrame, csv_path: Path) -> str:
    """The one error line of a batch whose every scenario is bad input: its first ``BAD_INPUT_SHOWN`` distinct
    reasons (a message without its 'scenario <id>: '), each with its first scenario and how many others share it,
    joined by ' | ' (a message of several lines, one per field, on one line), how many more, and where they all
    are."""
    reasons: dict[str, list[str]] = {}
    for sid, message in zip(df["id"].astype(str), df["message"].astype(str), strict=True):
        reason = one_line(message.replace(f"scenario {sid}: ", ""))
        reasons.setdefault(reason, []).append(sid)
    said = [
        f"scenario {ids[0]}" + (f" (and {len(ids) - 1:,} more)" if len(ids) > 1 else "") + f": {reason}"
        for reason, ids in list(reasons.items())[:BAD_INPUT_SHOWN]
    ]
    more = len(reasons) - BAD_INPUT_SHOWN
    where = f"{'+' + str(more) + ' more reasons; ' if more > 0 else ''}each scenario's message is in {csv_path}"
    return f"planner: error: every scenario is bad input ({len(df)} of {len(df)}): {' | '.join(said)} ({where})\n"


def batch_exit_code(df: pd.DataFrame) -> int:
    """0 when some scenario has a plan; else 2 when every scenario is bad input, 3 on an internal error, 1 when
    the requests were valid but infeasible."""
    if not len(df) or "status" not in df:
        return EXIT_BAD_INPUT
    status = df["status"].astype(str)
    if status.isin(["optimal", "time_limit"]).any():
        return EXIT_OK
    if (status == "bad_input").all():
        return EXIT_BAD_INPUT
    if (status == "error").any():
        return EXIT_INTERNAL
    return EXIT_INFEASIBLE
