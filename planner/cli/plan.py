"""The single-job plan request on the command line, shared by `planner solve` and `planner pareto`: its flags, the
`PlanRequest` built from them, the checks run before a search (worded as flags), and a result as text and JSON."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from planner.checks import PlanRequest, parse_owned, rentals_without_caps, request_problems
from planner.cli.common import (
    COST_HELP,
    PRECISIONS,
    add_catalog_args,
    add_framework_arg,
    add_life_arg,
    add_run_terms_args,
    add_wide_arg,
    add_work_args,
    bounded_int,
    check_work_flags,
    csv_list,
    fraction_list,
    gap_fraction,
    non_negative_float,
    notice,
    number_text,
    positive_float,
    positive_int,
    positive_limit,
    precision_arg,
    run_terms_fields,
    table,
    validated,
    wrap_line,
)
from planner.data import Catalog
from planner.errors import PlannerInputError
from planner.formatting import cap_text
from planner.present import PLAN_COLUMNS, plan_cost_breakdown
from planner.solver import SolverOptions

if TYPE_CHECKING:
    from planner.plan import PlanResult

# what the alternatives are (planner.plan.alternatives): each a distinct option -- server, fabric, power cap, site or
# purchase -- at its best node count, so the next-best can be the plan's servers at another cap
ALTERNATIVES_HEADING = (
    "Alternatives (the next-best other options: another server, fabric, power cap, site or purchase; then the best "
    "of each other GPU type):"
)
BUDGET_HELP = (
    "budget kinds: 'upfront' limits what is spent before the run (the whole capex when buying, the whole rent "
    "when renting); 'total' limits the run's cost (amortized hardware share + energy, or the rent)"
)


# ------------------------------------------------------------------------------------------------ flags
def owned_list(text: str) -> list[dict[str, Any]]:
    """--owned SERVER:COUNT[:FABRIC[:AGE_YEARS]][,...] (planner.checks.parse_owned), a malformed entry said as
    argparse says a bad value."""
    try:
        return parse_owned(text)
    except PlannerInputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_request_args(p: argparse.ArgumentParser, deadline_required: bool = True) -> None:
    """Every flag of a single-job request, in the order `--help` lists them: the workload and its work, the limits,
    the hardware allowed, the layout's inputs, owned servers, the service life, the framework, the solver."""
    p.add_argument("--model", required=True, help="workload id (see `planner models`)")
    add_work_args(p)
    add_run_terms_args(p)
    add_limit_args(p, deadline_required)
    add_hardware_args(p)
    p.add_argument(
        "--owned",
        type=owned_list,
        help="servers already owned, SERVER:COUNT[:FABRIC[:AGE_YEARS]][,...], e.g. dgx-a100-80gb:64:hdr200:2.5 "
        "(FABRIC left out or empty: the server's first listed; AGE_YEARS default 0): a bought plan of that server "
        "on that fabric runs on them at no capex and pays only for the nodes and network it adds; they serve "
        "until --life-years of age; a plan on another fabric or server does not use them (their idle power is "
        "reported, not charged)",
    )
    add_life_arg(p)
    add_framework_arg(p)
    p.add_argument("--time-limit", type=positive_float, default=60.0, help="HiGHS time limit per solve, seconds")
    p.add_argument("--gap", type=gap_fraction, default=1e-9, help="relative MIP gap to stop at, in [0, 1)")
    p.add_argument("--threads", type=bounded_int(1, 256), help="HiGHS threads (default: HiGHS's choice)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a summary")
    add_wide_arg(p)
    add_catalog_args(p)


def add_limit_args(p: argparse.ArgumentParser, deadline_required: bool) -> None:
    """--deadline-days, --budget-usd, --budget-kind, --power-kw, --site and the purchase (--rent/--buy/--either)."""
    p.add_argument(
        "--deadline-days",
        type=positive_float,
        required=deadline_required,
        help="training must finish within this many days ("
        + ("required)" if deadline_required else "required unless --objective time, which may leave it out)"),
    )
    p.add_argument(
        "--budget-usd",
        type=non_negative_float,
        help="money limit, USD, finite and >= 0 (default: no limit); what it covers: --budget-kind",
    )
    p.add_argument("--budget-kind", choices=["upfront", "total"], default="upfront", help=BUDGET_HELP)
    p.add_argument(
        "--power-kw",
        type=positive_limit,
        help="facility power envelope incl. cooling (PUE), kW, finite and > 0 (default: the site's envelope)",
    )
    p.add_argument("--site", type=csv_list, default=["us-colo"], help="site id(s), comma separated: the planner picks")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--rent", dest="purchase", action="store_const", const="rent", help="rent only")
    g.add_argument("--buy", dest="purchase", action="store_const", const="buy", help="buy only (the default)")
    g.add_argument("--either", dest="purchase", action="store_const", const="either", help="buy or rent")


def add_hardware_args(p: argparse.ArgumentParser) -> None:
    """--gpus, --servers, --fabrics, --power-caps, --global-batch, --precision, --max-nodes and --max-rack-units."""
    p.add_argument(
        "--gpus",
        type=csv_list,
        help="allowed GPUs: ids, families or the start of ids, e.g. A100,H100 (B200 is not GB200; default: all)",
    )
    p.add_argument("--servers", type=csv_list, help="allowed server ids, comma separated (default: all)")
    p.add_argument("--fabrics", type=csv_list, help="allowed fabric ids, comma separated (default: all)")
    p.add_argument(
        "--power-caps",
        type=fraction_list,
        help="allowed GPU power caps as fractions of TDP in (0, 1], e.g. 0.6,0.8,1.0 (default: 0.4 to 1.0 in "
        "steps of 0.1); rented servers whose power limit is not settable run at 1.0",
    )
    p.add_argument(
        "--global-batch",
        type=positive_int,
        help="global batch, samples (default: the workload's, grown to keep every GPU busy); rounded up to "
        "whole micro-batches per replica, with a note when it is",
    )
    p.add_argument(
        "--precision",
        type=precision_arg,
        metavar="{" + ",".join(PRECISIONS) + "}",
        help="compute precision (default: the workload's); fp4 is block-scaled FP4 training (NVFP4 / MXFP4, on the "
        "GPUs with an fp4 peak: `planner catalog gpus`); fp8 or fp4 where no allowed GPU has it is an error, a "
        "plan on a GPU without it runs in the next precision it has (fp4 in fp8, fp8 in bf16) with a note",
    )
    p.add_argument("--max-nodes", type=bounded_int(1, 100_000), default=1024, help="most nodes a plan may use")
    p.add_argument(
        "--max-rack-units",
        type=bounded_int(1, 10_000_000),
        help="most rack units (U) the plan's servers may fill (default: no limit)",
    )


# ------------------------------------------------------------------------------------------------ request
def request_from_args(args: argparse.Namespace, objective: str = "energy", alternatives: int = 3) -> PlanRequest:
    """The PlanRequest of the flags (a flag left out: the request's default); a value the request refuses is bad
    input naming the field."""

    solver = validated(
        SolverOptions,
        {
            k: v
            for k, v in (("time_limit_s", args.time_limit), ("mip_rel_gap", args.gap), ("threads", args.threads))
            if v is not None
        },
        "solver",
    )
    fields: dict[str, Any] = {
        "model": args.model,
        "samples": args.samples,
        "tokens": args.tokens,
        "epochs": args.epochs,
        "deadline_days": args.deadline_days,
        "budget_usd": args.budget_usd,
        "budget_kind": args.budget_kind,
        "power_kw": args.power_kw,
        "sites": args.site,
        "objective": objective,
        "purchase": args.purchase or "buy",
        "gpus": args.gpus,
        "servers": args.servers,
        "fabrics": args.fabrics,
        "global_batch": args.global_batch,
        "precision": args.precision,
        "max_nodes": args.max_nodes,
        "max_rack_units": args.max_rack_units,
        "owned": getattr(args, "owned", None),
        "framework": getattr(args, "framework", None),
        "life_years": args.life_years,
        "alternatives": alternatives,
        "solver": solver,
        **run_terms_fields(args),
    }
    if args.power_caps:
        fields["power_caps"] = args.power_caps
    req: PlanRequest = validated(PlanRequest, {k: v for k, v in fields.items() if v is not None})
    return req


def check_request(cat: Catalog, req: PlanRequest) -> None:
    """Every check `solve` and `pareto` run before a search, worded in flags (bad input on the first problem), after
    the work flags; rentals the power caps leave out while others remain are a note (never silently dropped)."""
    check_work_flags(cat.workload(req.model), req.tokens, req.epochs)
    problems = request_problems(cat, req, "cli")
    if problems:
        raise PlannerInputError(problems[0].message)
    note_rentals_without_caps(cat, req, rentals_without_caps(cat, req))


def note_rentals_without_caps(cat: Catalog, req: PlanRequest, fixed: list[str]) -> None:
    """Rented servers whose GPU power limit the provider sets run at 1.0 of TDP only: caps that leave 1.0 out
    exclude them, said as a note where other rentals remain (where none does, request_problems refuses)."""
    if fixed:
        caps = ",".join(f"{c:g}" for c in req.power_caps)
        notice(
            f"rented {', '.join(fixed)} run at 1.0 of TDP only (the power limit is not settable), which --power-caps "
            f"{caps} leaves out: they are not considered as rentals"
        )


# ------------------------------------------------------------------------------------------------ result
def result_json(res: PlanResult) -> dict[str, Any]:
    """The machine form: the keys of `planner evaluate` plus the plan and solver fields."""
    out: dict[str, Any] = {
        "status": res.status,
        "objective": res.objective,
        "objective_value": res.objective_value,
        "binding": res.binding,
        "timings_s": res.timings_s,
    }
    if res.plan is not None:
        out.update(res.plan.estimate.model_dump())
        out.update(res.plan.model_dump(exclude={"estimate"}), training_h=res.plan.training_h)
        out["cost_breakdown_usd"] = plan_cost_breakdown(res.plan)  # net of owned servers, as cost_usd
    rep = res.solver
    out["solver_status"] = rep.status.value if rep else res.status
    out["gap"] = rep.gap if rep else None
    out["solve_time_s"] = rep.solve_time_s if rep else None
    out["solver"] = rep.model_dump(mode="json") if rep else None
    out["alternatives"] = alternative_rows(res)
    out["explanation"] = res.explanation.model_dump() if res.explanation else None
    return out


def alternative_rows(res: PlanResult) -> list[dict[str, Any]]:
    """The alternatives' plan fields and the precision each computes in (an alternative on a GPU without the
    precision asked for computes in its fallback: fp4 in fp8, fp8 in bf16)."""
    return [
        {**a.model_dump(exclude={"estimate"}), "training_h": a.training_h, "precision": a.estimate.precision}
        for a in res.alternatives
    ]


def render_result(res: PlanResult, width: int | None = None) -> str:
    """A result as `planner solve` prints it: the plan's summary, the solver's report, what the money means and
    the alternatives, the note and the table fitted to ``width`` characters (None: as written); or, with no plan,
    the explanation (the smallest relaxation of each requirement)."""
    if res.plan is None:
        return infeasible_text(res, width)
    rep = res.solver
    head = "Optimal plan" if res.status == "optimal" else "BEST PLAN FOUND WITHIN THE TIME LIMIT (not proven optimal)"
    # with the precision the plan computes in under its layout, and what it adds to owned servers (purchase_text)
    summary = res.summary().splitlines()
    lines = [f"{head} (objective: {res.objective})", *(wrap_line(line, width) for line in summary)]
    if rep:
        solver = (
            f"  solver: HiGHS {rep.highs_status}, objective "
            f"{rep.objective if rep.objective is None else number_text(rep.objective)}, bound "
            f"{rep.bound if rep.bound is None else number_text(rep.bound)}, gap "
            f"{0.0 if rep.gap is None else rep.gap:.2e}, {rep.solve_time_s:.3f} s, {rep.variables} vars x "
            f"{rep.constraints} rows"
        )
        lines.append(wrap_line(solver, width))
    lines.append(wrap_line("  " + COST_HELP, width))
    if res.alternatives:
        # the power cap as a share of TDP, as the plan's line above writes it ('60%', not 0.6; JSON keeps 0.6)
        rows = [{**r, "power_cap": cap_text(r["power_cap"])} for r in alternative_rows(res)]
        columns = list(PLAN_COLUMNS)
        if res.request.owned:  # of each alternative's nodes, those owned (the others are bought or rented)
            columns.insert(columns.index("nodes") + 1, "owned_nodes")
        if res.request.startup_s or res.request.evaluations:  # the time's terms beside it, as the Pareto table has them
            rows = [{**r, "training_days": r["training_h"] / 24.0} for r in rows]
            at = columns.index("time_to_train_days") + 1
            columns[at:at] = ["training_days", "evaluation_h", "startup_h"]
        lines += [
            "",
            wrap_line(ALTERNATIVES_HEADING, width),
            table(rows, columns, width),
        ]
    return "\n".join(lines)


def infeasible_text(res: PlanResult, width: int | None = None) -> str:
    """'No feasible plan.', the explanation, and each relaxation (single, then pairs) on its own line, each wrapped
    to ``width`` (a relaxation's continuation under its text; None: as written)."""
    lines = ["No feasible plan.", res.explanation.message if res.explanation else ""]
    for r in res.explanation.relaxations if res.explanation else []:
        lines.append(f"  - relax {r.requirement}: {r.message}")
    for pr in res.explanation.pairs if res.explanation else []:
        lines.append(f"  - relax {' and '.join(r.requirement for r in pr.relaxations)}: {pr.message}")
    return "\n".join(wrap_line(line, width, hanging=4) for line in lines)
