"""`planner solve`: the plan that minimises the objective within the deadline, budget and power (the MIP, HiGHS)."""

from __future__ import annotations

import argparse
from typing import Any

from planner.cli.common import (
    COST_HELP,
    EXIT_INFEASIBLE,
    EXIT_OK,
    bounded_int,
    catalog_from,
    clean,
    emit_json,
    notice,
    output_width,
    with_progress,
)
from planner.cli.plan import BUDGET_HELP, add_request_args, check_request, render_result, request_from_args, result_json
from planner.errors import PlannerInputError
from planner.plan import batch_limit_notes, plan_notes, solve


def add_solve_command(sub: Any) -> None:
    """Register `solve` on the subcommands of the `planner` parser."""
    s = sub.add_parser(
        "solve",
        help="find the optimal plan (MIP, HiGHS)",
        description="Find the plan that minimises the objective within the deadline, budget and power.\n\n"
        + COST_HELP
        + "\n"
        + BUDGET_HELP[0].upper()
        + BUDGET_HELP[1:]
        + ".",
    )
    add_request_args(s, deadline_required=False)  # the fastest plan needs no deadline (--objective time)
    s.add_argument(
        "--objective",
        choices=["energy", "cost", "carbon", "time"],
        default="energy",
        help="what to minimise: facility energy (kWh), run cost (USD), carbon (kgCO2e) or time to train (h)",
    )
    s.add_argument(
        "--alternatives",
        type=bounded_int(0, 20),
        default=3,
        help="next-best other options to list, 0-20; the best plan of each other GPU type follows them (0: no "
        "alternatives at all)",
    )
    s.set_defaults(func=cmd_solve)


def cmd_solve(args: argparse.Namespace) -> int:
    """`planner solve`: the request checked, solved (progress on stderr), its notes said, the plan or the explanation
    printed. Exit 1 when no plan meets the request."""

    if args.deadline_days is None and args.objective != "time":
        raise PlannerInputError(
            "--deadline-days is required (training must finish within it), unless --objective time asks for the "
            "fastest plan"
        )
    cat = catalog_from(args)
    req = request_from_args(args, args.objective, args.alternatives)
    check_request(cat, req)
    res = with_progress(lambda: solve(req, cat), "solving")
    if res.plan is not None:
        notes = plan_notes(cat, req, res.plan)
    else:
        notes = batch_limit_notes(cat.workload(req.model), req.global_batch)
    for n in notes:
        notice(n)
    if args.json:
        d = result_json(res)
        d["notices"] = notes
        d["framework"] = cat.workload(req.model).framework
        emit_json(clean(d))
    else:
        print(render_result(res, output_width(args.wide)))
    return EXIT_OK if res.plan is not None else EXIT_INFEASIBLE
