"""`planner pareto`: the Pareto front between two objectives (epsilon-constraint: minimise --x subject to
--y <= epsilon for evenly spaced epsilon)."""

from __future__ import annotations

import argparse
from typing import Any

import pandas as pd

from planner.checks import PlanRequest
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
    table,
    with_progress,
    wrap_line,
)
from planner.cli.plan import add_request_args, check_request, render_result, request_from_args, result_json
from planner.data import Catalog
from planner.errors import PlannerInputError
from planner.formatting import cap_text
from planner.plan import PLAN_METRIC, pareto, solve
from planner.present import front_with_precision

MAX_PARETO_POINTS = 50
OBJECTIVES = ["energy", "cost", "carbon", "time"]


def add_pareto_command(sub: Any) -> None:
    """Register `pareto` on the subcommands of the `planner` parser."""
    p = sub.add_parser(
        "pareto",
        help="Pareto front between two objectives (epsilon-constraint)",
        description="Minimise --x subject to --y <= epsilon for evenly spaced epsilon; identical optimal plans "
        "are listed once, so the front may have fewer points than asked.\n\n" + COST_HELP,
    )
    add_request_args(p)
    units = "energy = facility kWh, cost = run USD, carbon = kgCO2e, time = hours"
    p.add_argument("--x", choices=OBJECTIVES, default="cost", help=f"minimised ({units})")
    p.add_argument("--y", choices=OBJECTIVES, default="energy", help=f"constrained ({units})")
    p.add_argument(
        "--points",
        type=bounded_int(2, MAX_PARETO_POINTS),
        default=8,
        help=f"epsilon values to solve, 2-{MAX_PARETO_POINTS} (one MIP each)",
    )
    p.set_defaults(func=cmd_pareto)


def cmd_pareto(args: argparse.Namespace) -> int:
    """`planner pareto`: the request checked, the front solved (progress on stderr) and printed with the precision
    each point computes in. A request with no plan at all exits 1 with `solve`'s explanation."""

    if args.x == args.y:
        raise PlannerInputError(f"--x and --y are both '{args.x}': choose two different objectives")
    cat = catalog_from(args)
    req = request_from_args(args, args.x, 0)
    check_request(cat, req)
    try:
        front = with_progress(
            lambda: pareto(req, x=args.x, y=args.y, points=args.points, catalog=cat), "solving the front"
        )
    except PlannerInputError as exc:
        return explain_no_front(args, cat, req, exc)
    front, notes = front_with_precision(cat, req, front)  # a point on a GPU without fp4 computes in fp8: said
    for n in notes:
        notice(n)
    if args.json:
        emit_json(clean(front.to_dict(orient="records")))
    else:
        print(front_text(front, args.x, args.y, args.points, output_width(args.wide)))
    return EXIT_OK


def explain_no_front(args: argparse.Namespace, cat: Catalog, req: PlanRequest, error: PlannerInputError) -> int:
    """No front (``error``): the request solved once as `solve` would; infeasible is exit 1 with its explanation,
    and a request that does have a plan means ``error`` was bad input of the front's own (raised again)."""

    res = solve(req, cat)
    if res.plan is not None:
        raise error
    if args.json:
        emit_json(clean(result_json(res)))
    else:
        print(render_result(res, output_width(args.wide)))
    return EXIT_INFEASIBLE


def front_text(front: pd.DataFrame, x: str, y: str, points: int, width: int | None = None) -> str:
    """The front as text: a heading, a line when several epsilon values share a plan, and the table of points with
    the two objectives named with their units (as in a plan), fitted to ``width`` characters (None: as written)."""

    lines = [f"Pareto front: minimise {x} subject to {y} <= epsilon"]
    if len(front) < points:
        lines.append(
            wrap_line(
                f"{len(front)} distinct optimal plans from {points} epsilon values: several epsilon values "
                "share the same optimal plan (the front has only these corners)",
                width,
            )
        )
    named = front.rename(columns={x: PLAN_METRIC[x], y: PLAN_METRIC[y]})
    if "power_cap" in named:  # a share of TDP, as a plan's line and the alternatives write it ('70%', not 0.7)
        named["power_cap"] = [cap_text(c) for c in named["power_cap"]]
    columns = [
        PLAN_METRIC[x],
        PLAN_METRIC[y],
        "server",
        "precision",
        "nodes",
        *(["owned_nodes"] if "owned_nodes" in named else []),  # of the nodes, those owned
        "fabric",
        "power_cap",
        "purchase",
        "time_to_train_days",
        *[c for c in ("training_days", "evaluation_h", "startup_h") if c in named],  # its terms, where stated
    ]
    lines.append(table(named.to_dict(orient="records"), columns, width))
    return "\n".join(lines)
