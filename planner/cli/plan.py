"""`planner solve`, `pareto`, `fleet` and `batch`: the optimizer on the command line."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from planner.cli.common import (
    COST_HELP,
    EXIT_BAD_INPUT,
    EXIT_INFEASIBLE,
    EXIT_INTERNAL,
    EXIT_OK,
    PRECISIONS,
    add_catalog_args,
    add_framework_arg,
    add_life_arg,
    add_work_args,
    bounded_int,
    catalog_from,
    check_work_flags,
    clean,
    csv_list,
    emit_json,
    fraction_list,
    gap_fraction,
    non_negative_float,
    notice,
    number_text,
    positive_float,
    positive_int,
    positive_limit,
    precision_arg,
    readable_text_file,
    table,
    validated,
    with_progress,
)
from planner.errors import PlannerInputError

MAX_PARETO_POINTS = 50
BUDGET_HELP = (
    "budget kinds: 'upfront' limits what is spent before the run (the whole capex when buying, the whole rent "
    "when renting); 'total' limits the run's cost (amortized hardware share + energy, or the rent)"
)


def owned_list(text: str) -> list[dict[str, Any]]:
    """--owned SERVER:COUNT[:FABRIC[:AGE_YEARS]][,...] (planner.plan.optimize.parse_owned)."""
    from planner.checks import parse_owned
    from planner.errors import PlannerInputError

    try:
        return parse_owned(text)
    except PlannerInputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_request_args(p: argparse.ArgumentParser, deadline_required: bool = True) -> None:
    p.add_argument("--model", required=True, help="workload id (see `planner models`)")
    add_work_args(p)
    p.add_argument(
        "--deadline-days",
        type=positive_float,
        required=deadline_required,
        help="training must finish within this many days (required)",
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
    add_catalog_args(p)


def add_plan_commands(sub: Any) -> None:
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
    add_request_args(s)
    s.add_argument(
        "--objective",
        choices=["energy", "cost", "carbon", "time"],
        default="energy",
        help="what to minimise: facility energy (kWh), run cost (USD), carbon (kgCO2e) or time to train (h)",
    )
    s.add_argument("--alternatives", type=bounded_int(0, 20), default=3, help="next-best distinct plans to list, 0-20")
    s.set_defaults(func=cmd_solve)

    p = sub.add_parser(
        "pareto",
        help="Pareto front between two objectives (epsilon-constraint)",
        description="Minimise --x subject to --y <= epsilon for evenly spaced epsilon; identical optimal plans "
        "are listed once, so the front may have fewer points than asked.\n\n" + COST_HELP,
    )
    add_request_args(p)
    units = "energy = facility kWh, cost = run USD, carbon = kgCO2e, time = hours"
    p.add_argument("--x", choices=["energy", "cost", "carbon", "time"], default="cost", help=f"minimised ({units})")
    p.add_argument("--y", choices=["energy", "cost", "carbon", "time"], default="energy", help=f"constrained ({units})")
    p.add_argument(
        "--points",
        type=bounded_int(2, MAX_PARETO_POINTS),
        default=8,
        help=f"epsilon values to solve, 2-{MAX_PARETO_POINTS} (one MIP each)",
    )
    p.set_defaults(func=cmd_pareto)

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

    b = sub.add_parser(
        "batch",
        help="solve many scenarios (grid or list) in parallel; `batch report DIR`",
        description="planner batch SCENARIOS.yaml --out DIR | planner batch report DIR\n\n"
        "Exit code: 4 when scenarios are left without an answer (not run, or an error such as a worker that died "
        "--max-attempts times: rerun the same command to resume); otherwise 0 when at least one scenario has a "
        "plan, 1 when none has (all infeasible), 2 when every scenario is bad input. Also 2 for an unusable "
        "output directory (a file in the way, read-only, disk full, results of other inputs there); 130/143 "
        "after SIGINT/SIGTERM (finished scenarios are kept, and written to results.csv).",
    )
    b.add_argument("target", nargs="+", help="a scenario file (YAML/CSV), or: report DIR")
    b.add_argument("--out", help="results directory, resumable: a rerun skips finished scenarios (required)")
    b.add_argument("--workers", type=bounded_int(1, 1024), help="parallel workers (default: CPU cores)")
    b.add_argument("--engine", choices=["local", "ray"], default="local", help="local processes or a Ray cluster")
    b.add_argument("--ray-address", help="address of an existing Ray cluster (engine ray; default: start one)")
    b.add_argument("--no-progress", action="store_true", help="no progress bar")
    b.add_argument("--json", action="store_true", help="print the results table as JSON")
    b.add_argument(
        "--force-new",
        action="store_true",
        help="DIR holds results of other inputs (scenarios, catalog, planner version): discard them and start over",
    )
    b.add_argument(
        "--max-attempts",
        type=bounded_int(1, 100),
        default=3,
        help="tries per scenario when its worker dies (default 3)",
    )
    add_catalog_args(b)
    b.set_defaults(func=cmd_batch)


def request_from_args(args: argparse.Namespace, objective: str = "energy", alternatives: int = 3) -> Any:
    from planner.plan import PlanRequest
    from planner.solver import SolverOptions

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
    }
    if args.power_caps:
        fields["power_caps"] = args.power_caps
    return validated(PlanRequest, {k: v for k, v in fields.items() if v is not None})


def _check_request(cat: Any, req: Any) -> None:
    """Every check `solve` runs before a search, worded in flags (exit 2 on the first problem), after the work
    flags; rentals the power caps leave out while others remain are a note (never silently dropped)."""
    from planner.checks import rentals_without_caps, request_problems

    check_work_flags(cat.workload(req.model), req.tokens, req.epochs)
    problems = request_problems(cat, req, "cli")
    if problems:
        raise PlannerInputError(problems[0].message)
    note_rentals_without_caps(cat, req, rentals_without_caps(cat, req))


def note_rentals_without_caps(cat: Any, req: Any, fixed: list[str]) -> None:
    """Rented servers whose GPU power limit the provider sets run at 1.0 of TDP only: caps that leave 1.0 out
    exclude them, said as a note where other rentals remain (where none does, request_problems refuses)."""
    if fixed:
        caps = ",".join(f"{c:g}" for c in req.power_caps)
        notice(
            f"rented {', '.join(fixed)} run at 1.0 of TDP only (the power limit is not settable), which --power-caps "
            f"{caps} leaves out: they are not considered as rentals"
        )


def result_json(res: Any) -> dict[str, Any]:
    """The machine form: the keys of `planner evaluate` plus the plan and solver fields."""
    out: dict[str, Any] = {
        "status": res.status,
        "objective": res.objective,
        "objective_value": res.objective_value,
        "binding": res.binding,
        "timings_s": res.timings_s,
    }
    if res.plan is not None:
        from planner.present import plan_cost_breakdown

        out.update(res.plan.estimate.model_dump())
        out.update(res.plan.model_dump(exclude={"estimate"}))
        out["cost_breakdown_usd"] = plan_cost_breakdown(res.plan)  # net of owned servers, as cost_usd
    rep = res.solver
    out["solver_status"] = rep.status.value if rep else res.status
    out["gap"] = rep.gap if rep else None
    out["solve_time_s"] = rep.solve_time_s if rep else None
    out["solver"] = rep.model_dump(mode="json") if rep else None
    out["alternatives"] = alternative_rows(res)
    out["explanation"] = res.explanation.model_dump() if res.explanation else None
    return out


def alternative_rows(res: Any) -> list[dict[str, Any]]:
    """The alternatives' plan fields and the precision each computes in (an alternative on a GPU without the
    precision asked for computes in its fallback: fp4 in fp8, fp8 in bf16)."""
    return [{**a.model_dump(exclude={"estimate"}), "precision": a.estimate.precision} for a in res.alternatives]


def cmd_solve(args: argparse.Namespace) -> int:
    from planner.plan import solve

    cat = catalog_from(args)
    req = request_from_args(args, args.objective, args.alternatives)
    _check_request(cat, req)
    res = with_progress(lambda: solve(req, cat), "solving")
    from planner.present import batch_limit_notes, plan_notes

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
        print(render_result(res))
    return EXIT_OK if res.plan is not None else EXIT_INFEASIBLE


def render_result(res: Any) -> str:
    if res.plan is None:
        lines = ["No feasible plan.", res.explanation.message if res.explanation else ""]
        for r in res.explanation.relaxations if res.explanation else []:
            lines.append(f"  - relax {r.requirement}: {r.message}")
        for pr in res.explanation.pairs if res.explanation else []:
            lines.append(f"  - relax {' and '.join(r.requirement for r in pr.relaxations)}: {pr.message}")
        return "\n".join(lines)
    rep = res.solver
    head = "Optimal plan" if res.status == "optimal" else "BEST PLAN FOUND WITHIN THE TIME LIMIT (not proven optimal)"
    # with the precision the plan computes in under its layout, and what it adds to owned servers (purchase_text)
    summary = res.summary().splitlines()
    lines = [f"{head} (objective: {res.objective})", *summary]
    if rep:
        lines.append(
            f"  solver: HiGHS {rep.highs_status}, objective {number_text(rep.objective)}, bound "
            f"{rep.bound if rep.bound is None else number_text(rep.bound)}, gap "
            f"{0.0 if rep.gap is None else rep.gap:.2e}, {rep.solve_time_s:.3f} s, {rep.variables} vars x "
            f"{rep.constraints} rows"
        )
    lines.append("  " + COST_HELP)
    if res.alternatives:
        from planner.present import PLAN_COLUMNS

        rows = alternative_rows(res)
        columns = list(PLAN_COLUMNS)
        if res.request.owned:  # of each alternative's nodes, those owned (the others are bought or rented)
            columns.insert(columns.index("nodes") + 1, "owned_nodes")
        lines += [
            "",
            "Alternatives (next-best distinct hardware, then the best of each other GPU type):",
            table(rows, columns),
        ]
    return "\n".join(lines)


def cmd_pareto(args: argparse.Namespace) -> int:
    from planner.errors import PlannerInputError
    from planner.plan import pareto, solve

    if args.x == args.y:
        raise PlannerInputError(f"--x and --y are both '{args.x}': choose two different objectives")
    cat = catalog_from(args)
    req = request_from_args(args, args.x, 0)
    _check_request(cat, req)
    try:
        front = with_progress(
            lambda: pareto(req, x=args.x, y=args.y, points=args.points, catalog=cat), "solving the front"
        )
    except PlannerInputError:
        res = solve(req, cat)  # infeasible (exit 1 with the explanation, as solve) or truly bad input (raises)
        if res.plan is not None:
            raise
        if args.json:
            emit_json(clean(result_json(res)))
        else:
            print(render_result(res))
        return EXIT_INFEASIBLE
    from planner.present import front_with_precision

    front, notes = front_with_precision(cat, req, front)  # a point on a GPU without fp4 computes in fp8: said
    for n in notes:
        notice(n)
    if args.json:
        emit_json(clean(front.to_dict(orient="records")))
    else:
        print(f"Pareto front: minimise {args.x} subject to {args.y} <= epsilon")
        if len(front) < args.points:
            print(
                f"{len(front)} distinct optimal plans from {args.points} epsilon values: several epsilon values "
                "share the same optimal plan (the front has only these corners)"
            )
        from planner.plan import PLAN_METRIC  # the objective's column with its unit, as in a plan

        named = front.rename(columns={args.x: PLAN_METRIC[args.x], args.y: PLAN_METRIC[args.y]})
        print(
            table(
                named.to_dict(orient="records"),
                [
                    PLAN_METRIC[args.x],
                    PLAN_METRIC[args.y],
                    "server",
                    "precision",
                    "nodes",
                    *(["owned_nodes"] if "owned_nodes" in named else []),  # of the nodes, those owned
                    "fabric",
                    "power_cap",
                    "purchase",
                    "time_to_train_days",
                ],
            )
        )
    return EXIT_OK


def batch_exit_code(df: Any) -> int:
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


def cmd_batch(args: argparse.Namespace) -> int:
    import os
    import sys

    from planner.batch import EXIT_INCOMPLETE, BatchInterrupted, read_results, report, run_batch
    from planner.errors import PlannerInputError

    if args.target[0] == "report":
        if len(args.target) != 2:
            raise PlannerInputError("usage: planner batch report RESULTS_DIR")
        out = Path(args.target[1])
        if not out.is_dir():
            raise PlannerInputError(f"results directory not found: {out} (give the --out of a batch run)")
        path = report(out)
        if args.json:
            emit_json(clean(read_results(out).to_dict(orient="records")))
        else:
            print(f"wrote {path} and {path.with_suffix('.html')}")
        return EXIT_OK
    if len(args.target) != 1:
        raise PlannerInputError("give one scenario file")
    if not args.out:
        raise PlannerInputError("--out DIR is required (results are written there as they finish)")
    if Path(args.out).exists() and not Path(args.out).is_dir():
        raise PlannerInputError(f"--out {args.out} is an existing file; give a directory (new or from a past run)")
    readable_text_file(args.target[0], "scenario file")
    cores = os.cpu_count() or 1
    if args.engine == "local" and args.workers and args.workers > cores:
        notice(
            f"--workers {args.workers} on {cores} CPU cores: local workers are processes, one solve each at a time "
            f"and each with its own memory; more than the cores do not go faster (up to {args.workers} start, at "
            "most one per scenario left)"
        )
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
    df = res.frame
    code = batch_exit_code(df) if res.complete else EXIT_INCOMPLETE
    if args.json:
        emit_json(clean({"summary": res.summary(), "results": df.to_dict(orient="records")}))
    else:
        counts = ", ".join(f"{v} {k}" for k, v in res.counts.items())
        print(f"{res.total} scenarios, {len(df)} rows in {Path(args.out) / 'results.sqlite'} (+ results.csv): {counts}")
        if code == EXIT_BAD_INPUT and len(df) and "message" in df:
            print("every scenario is bad input, e.g.: " + str(df["message"].iloc[0]))
    if not res.complete:
        sys.stderr.write(
            f"planner: {len(res.unfinished)} of {res.total} scenarios have no answer (errors: see the message "
            "column); rerun the same command to retry them\n"
        )
    return code


def cmd_fleet(args: argparse.Namespace) -> int:
    import sys

    from planner.fleet import check_fleet_ids, fleet
    from planner.present import read_fleet_upload

    path = readable_text_file(args.file, "fleet request file")
    req = read_fleet_upload(path, Path(path).read_bytes())  # the app's reader: the same request, the same messages
    if args.time_limit or args.gap is not None:
        opts = req.solver.model_copy(
            update={k: v for k, v in (("time_limit_s", args.time_limit), ("mip_rel_gap", args.gap)) if v is not None}
        )
        req = req.model_copy(update={"solver": opts})
    from planner.present import fleet_owned_service_notes, fleet_progress_text

    cat = catalog_from(args)
    check_fleet_ids(cat, req)  # an unknown model or owned server: said with the job (entry) it is written in
    csv_dir = None if args.csv is None else writable_csv_dir(args.csv)  # said before the solve, not after it
    plan = with_progress(lambda: fleet(req, cat), "planning the fleet", fleet_progress_text(req))
    for text in fleet_owned_service_notes(cat, req):  # owned servers past their service: why they are retired
        notice(text)
    code = EXIT_OK if plan.objective_value is not None else EXIT_INFEASIBLE

    def save_tables() -> None:
        if csv_dir is not None and plan.objective_value is not None:
            written = write_fleet_csv(plan, csv_dir)
            sys.stderr.write(f"planner: wrote {', '.join(str(p) for p in written)}\n")
        elif csv_dir is not None:
            notice(f"no fleet, so no tables were written to {csv_dir}")

    try:
        if args.json:
            emit_json(clean(plan.model_dump(mode="json")))
        else:
            print_fleet_plan(plan, req.slots, req.slot_hours)
        sys.stdout.flush()
    except BrokenPipeError:  # `planner fleet ... --csv DIR | head`: the reader left, the tables asked for still go
        save_tables()
        raise
    save_tables()  # after the plan is out: a late error loses no plan
    return code


def print_fleet_plan(plan: Any, slots: int, slot_hours: float) -> None:
    """The plan as text: its summary, then (when there is a fleet) the purchases, the jobs, the schedule per slot and
    the totals as tables."""
    print(plan.summary())  # status, objective, what is kept / bought / rented, the jobs, totals, bound and gap
    if plan.objective_value is None:
        return
    print("\nPurchase / rental:")
    print(table(plan.purchases, list(plan.purchases[0])))
    print("\nJobs:")
    print(
        table(
            plan.assignment_frame().to_dict("records"),
            [
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
            ],
        )
    )
    print(
        "\nSchedule per slot (nodes busy; facility power, kW: on site counts against the envelope, rented is the "
        "provider's):"
    )
    print(fleet_schedule_text(plan, slots, slot_hours))
    print("\n" + fleet_totals_text(plan.totals))


def writable_csv_dir(text: str) -> Path:
    """``--csv DIR`` checked before the solve, so that a directory the tables cannot go to is said at once and not
    after a solve of up to the time limit: DIR is named (not empty), is not a file, is made if missing (with its
    parents), and a file can be created in it (a temp file, made and removed). Each failure is bad input."""
    import os
    import tempfile

    from planner.errors import PlannerInputError

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


FLEET_CSV_FILES = ("purchases.csv", "jobs.csv", "schedule.csv")  # `planner fleet --csv DIR` writes these


def write_fleet_csv(plan: Any, out: Path) -> list[Path]:
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
    import os

    from planner.errors import PlannerInputError

    frames = dict(
        zip(FLEET_CSV_FILES, (plan.purchase_frame(), plan.assignment_frame(), plan.schedule_frame()), strict=True)
    )
    temps = {name: out / f".{name}.{os.getpid()}.tmp" for name in frames}  # per process: two runs do not collide
    replaced: list[str] = []
    try:
        out.mkdir(parents=True, exist_ok=True)  # (checked before the solve; made again if removed since)
        _remove_stale_temps(out)
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


def _remove_stale_temps(out: Path) -> None:
    """The temp files of an earlier run in ``out`` that was killed (SIGKILL) between writing its tables and renaming
    them -- ``.jobs.csv.<pid>.tmp`` whose process is gone -- are removed; a running writer's are left alone."""
    import os

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


def fleet_totals_text(totals: dict[str, float]) -> str:
    """'Totals: capex_usd 6,294,600, rent_usd 33,155, ...' (was 6.295e+06, 3.316e+04)."""
    return "Totals: " + ", ".join(f"{k} {number_text(v)}" for k, v in totals.items())


def fleet_schedule_text(plan: Any, slots: int, slot_hours: float) -> str:
    """Per slot: whole nodes busy, and facility power on site and rented (views.fleet_power_frame, as the app)."""
    import pandas as pd

    from planner.present import fleet_power_frame

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
    return frame.to_string()
