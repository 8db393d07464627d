"""`planner solve` and `planner pareto`: the optimizer on the command line."""

from __future__ import annotations

import argparse
from typing import Any

from planner.cli import (
    EXIT_INFEASIBLE,
    EXIT_OK,
    _add_catalog_args,
    _add_work_args,
    _catalog,
    _clean,
    _csv_list,
    _fraction,
    _positive_float,
    _positive_int,
    _table,
    emit_json,
)


def add_request_args(p: argparse.ArgumentParser, deadline_required: bool = True) -> None:
    p.add_argument("--model", required=True, help="workload id (see `planner models`)")
    _add_work_args(p)
    p.add_argument(
        "--deadline-days",
        type=_positive_float,
        required=deadline_required,
        help="training must finish within this many days",
    )
    p.add_argument("--budget-usd", type=float, help="money limit in USD (>= 0)")
    p.add_argument(
        "--budget-kind",
        choices=["upfront", "total"],
        default="upfront",
        help="upfront: capex when buying / whole rent when renting (default); total: run cost",
    )
    p.add_argument("--power-kw", type=_positive_float, help="facility power envelope, kW (default: the site's)")
    p.add_argument("--site", type=_csv_list, default=["us-colo"], help="site id(s), comma separated")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--rent", dest="purchase", action="store_const", const="rent")
    g.add_argument("--buy", dest="purchase", action="store_const", const="buy")
    g.add_argument("--either", dest="purchase", action="store_const", const="either", help="buy or rent")
    p.add_argument("--gpus", type=_csv_list, help="allowed GPUs, e.g. A100,H100 (ids or substrings)")
    p.add_argument("--servers", type=_csv_list, help="allowed server ids")
    p.add_argument("--fabrics", type=_csv_list, help="allowed fabric ids")
    p.add_argument(
        "--power-caps",
        type=lambda t: [_fraction(x) for x in _csv_list(t)],
        help="allowed GPU power caps as fractions of TDP, e.g. 0.6,0.8,1.0",
    )
    p.add_argument("--global-batch", type=_positive_int)
    p.add_argument("--precision", choices=["bf16", "fp16", "fp8", "tf32", "fp32"])
    p.add_argument("--max-nodes", type=_positive_int, default=1024)
    p.add_argument("--life-years", type=_positive_float, default=4.0)
    p.add_argument("--time-limit", type=_positive_float, default=60.0, help="HiGHS time limit per solve, s")
    p.add_argument("--gap", type=float, default=1e-9, help="relative MIP gap to stop at")
    p.add_argument("--threads", type=_positive_int, help="HiGHS threads")
    p.add_argument("--json", action="store_true")
    _add_catalog_args(p)


def add_plan_commands(sub: Any) -> None:
    s = sub.add_parser("solve", help="find the optimal plan (MIP, HiGHS)")
    add_request_args(s)
    s.add_argument("--objective", choices=["energy", "cost", "carbon", "time"], default="energy")
    s.add_argument("--alternatives", type=int, default=3, help="next-best distinct plans (0-20)")
    s.set_defaults(func=cmd_solve)

    p = sub.add_parser("pareto", help="Pareto front between two objectives (epsilon-constraint)")
    add_request_args(p)
    p.add_argument("--x", choices=["energy", "cost", "carbon", "time"], default="cost")
    p.add_argument("--y", choices=["energy", "cost", "carbon", "time"], default="energy")
    p.add_argument("--points", type=_positive_int, default=8)
    p.set_defaults(func=cmd_pareto)

    f = sub.add_parser("fleet", help="plan one procurement for a portfolio of jobs over a horizon (MIP)")
    f.add_argument("file", help="fleet request YAML (see examples/fleet.yaml)")
    f.add_argument("--time-limit", type=_positive_float, help="HiGHS time limit, s (default 60)")
    f.add_argument("--gap", type=float, help="relative MIP gap (default 1e-4)")
    f.add_argument("--json", action="store_true")
    _add_catalog_args(f)
    f.set_defaults(func=cmd_fleet)

    b = sub.add_parser(
        "batch",
        help="solve many scenarios (grid or list) in parallel; `batch report DIR`",
        description="planner batch SCENARIOS.yaml --out DIR | planner batch report DIR",
    )
    b.add_argument("target", nargs="+", help="a scenario file (YAML/CSV), or: report DIR")
    b.add_argument("--out", help="results directory (resumable)")
    b.add_argument("--workers", type=_positive_int, help="parallel workers (default: CPU cores)")
    b.add_argument("--engine", choices=["local", "ray"], default="local")
    b.add_argument("--ray-address", help="address of an existing Ray cluster (engine ray)")
    b.add_argument("--no-progress", action="store_true")
    b.add_argument("--json", action="store_true", help="print the results table as JSON")
    _add_catalog_args(b)
    b.set_defaults(func=cmd_batch)


def request_from_args(args: argparse.Namespace, objective: str = "energy", alternatives: int = 3) -> Any:
    from planner.optimize import PlanRequest
    from planner.solver import SolverOptions

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
        "life_years": args.life_years,
        "alternatives": alternatives,
        "solver": SolverOptions(time_limit_s=args.time_limit, mip_rel_gap=args.gap, threads=args.threads),
    }
    if args.power_caps:
        fields["power_caps"] = args.power_caps
    return _validated(PlanRequest, {k: v for k, v in fields.items() if v is not None})


def _validated(model: Any, data: dict[str, Any]) -> Any:
    from pydantic import ValidationError

    from planner.errors import PlannerInputError, describe_validation_error

    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise PlannerInputError(describe_validation_error(exc, "request")) from None


def result_json(res: Any) -> dict[str, Any]:
    """The machine form: the keys of `planner evaluate` plus the plan and solver fields."""
    out: dict[str, Any] = {
        "status": res.status,
        "objective": res.objective,
        "objective_value": res.objective_value,
        "binding": res.binding,
        "ladder_gap": res.ladder_gap,
        "timings_s": res.timings_s,
    }
    if res.plan is not None:
        out.update(res.plan.estimate.model_dump())
        out.update(res.plan.model_dump(exclude={"estimate"}))
    rep = res.solver
    out["solver_status"] = rep.status.value if rep else res.status
    out["gap"] = rep.gap if rep else None
    out["solve_time_s"] = rep.solve_time_s if rep else None
    out["solver"] = rep.model_dump(mode="json") if rep else None
    out["alternatives"] = [a.model_dump(exclude={"estimate"}) for a in res.alternatives]
    out["explanation"] = res.explanation.model_dump() if res.explanation else None
    return out


def cmd_solve(args: argparse.Namespace) -> int:
    from planner.optimize import solve

    if args.alternatives < 0 or args.alternatives > 20:
        from planner.errors import PlannerInputError

        raise PlannerInputError("--alternatives must be between 0 and 20")
    cat = _catalog(args)
    req = request_from_args(args, args.objective, args.alternatives)
    res = solve(req, cat)
    if args.json:
        emit_json(_clean(result_json(res)))
    else:
        print(render_result(res))
    return EXIT_OK if res.plan is not None else EXIT_INFEASIBLE


def render_result(res: Any) -> str:
    if res.plan is None:
        lines = ["No feasible plan.", res.explanation.message if res.explanation else ""]
        for r in res.explanation.relaxations if res.explanation else []:
            lines.append(f"  - relax {r.requirement}: {r.message}")
        return "\n".join(lines)
    rep = res.solver
    head = "Optimal plan" if res.status == "optimal" else "BEST PLAN FOUND WITHIN THE TIME LIMIT (not proven optimal)"
    lines = [f"{head} (objective: {res.objective})", res.summary()]
    if rep:
        lines.append(
            f"  solver: HiGHS {rep.highs_status}, objective {rep.objective:,.6g}, bound "
            f"{rep.bound if rep.bound is None else format(rep.bound, ',.6g')}, gap "
            f"{0.0 if rep.gap is None else rep.gap:.2e}, {rep.solve_time_s:.3f} s, {rep.variables} vars x "
            f"{rep.constraints} rows"
        )
    if res.ladder_gap:
        lines.append(f"  ladder refinement improved the MIP plan by {res.ladder_gap:.3%}")
    if res.alternatives:
        from planner.views import PLAN_COLUMNS

        rows = [a.model_dump(exclude={"estimate"}) for a in res.alternatives]
        lines += [
            "",
            "Alternatives (best per other GPU type, then next-best distinct hardware):",
            _table(rows, PLAN_COLUMNS),
        ]
    return "\n".join(lines)


def cmd_pareto(args: argparse.Namespace) -> int:
    from planner.optimize import pareto

    cat = _catalog(args)
    req = request_from_args(args, args.x, 0)
    front = pareto(req, x=args.x, y=args.y, points=args.points, catalog=cat)
    if args.json:
        emit_json(_clean(front.to_dict(orient="records")))
    else:
        print(f"Pareto front: minimise {args.x} subject to {args.y} <= epsilon ({len(front)} distinct optimal plans)")
        print(
            _table(
                front.to_dict(orient="records"),
                [args.x, args.y, "server", "nodes", "fabric", "power_cap", "purchase", "time_to_train_days"],
            )
        )
    return EXIT_OK


def cmd_batch(args: argparse.Namespace) -> int:
    from planner import batch as batch_mod
    from planner.errors import PlannerInputError

    if args.target[0] == "report":
        if len(args.target) != 2:
            raise PlannerInputError("usage: planner batch report RESULTS_DIR")
        path = batch_mod.report(args.target[1])
        print(f"wrote {path}")
        return EXIT_OK
    if len(args.target) != 1:
        raise PlannerInputError("give one scenario file")
    if not args.out:
        raise PlannerInputError("--out DIR is required (results are written there as they finish)")
    df = batch_mod.batch(
        args.target[0],
        args.out,
        workers=args.workers,
        engine=args.engine,
        ray_address=args.ray_address,
        catalog_dir=args.catalog,
        models_dir=args.models,
        progress=not args.no_progress,
    )
    if args.json:
        emit_json(_clean(df.to_dict(orient="records")))
    else:
        counts = df["status"].value_counts().to_dict() if len(df) else {}
        print(f"{len(df)} scenarios in {args.out}/results.csv: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    return EXIT_OK


def cmd_fleet(args: argparse.Namespace) -> int:
    from planner.fleet import fleet, load_fleet_request

    req = load_fleet_request(args.file)
    if args.time_limit or args.gap is not None:
        opts = req.solver.model_copy(
            update={k: v for k, v in (("time_limit_s", args.time_limit), ("mip_rel_gap", args.gap)) if v is not None}
        )
        req = req.model_copy(update={"solver": opts})
    plan = fleet(req, _catalog(args))
    if args.json:
        emit_json(_clean(plan.model_dump(mode="json")))
        return EXIT_OK if plan.objective_value is not None else EXIT_INFEASIBLE
    if plan.objective_value is None:
        print("No feasible fleet.", plan.explanation or "")
        return EXIT_INFEASIBLE
    head = "Optimal fleet" if plan.status == "optimal" else "BEST FLEET WITHIN THE TIME LIMIT (not proven optimal)"
    gap = plan.solver.gap if plan.solver and plan.solver.gap is not None else 0.0
    print(f"{head}: {plan.objective} = {plan.objective_value:,.6g} (gap {gap:.2e})")
    print("\nPurchase / rental:")
    print(_table(plan.purchases, list(plan.purchases[0])))
    print("\nJobs:")
    print(
        _table(
            plan.assignments,
            [
                "job",
                "model",
                "server",
                "nodes",
                "power_cap",
                "layout",
                "time_to_train_h",
                "first_slot",
                "last_slot",
                "late_slots",
                "facility_energy_kwh",
            ],
        )
    )
    sched = plan.schedule_frame()
    per_slot = sched.groupby("slot").agg(nodes=("nodes", "sum"), facility_power_kw=("facility_power_kw", "sum"))
    print("\nSchedule (nodes busy and facility power per slot):")
    print(per_slot.T.to_string())
    print("\nTotals: " + ", ".join(f"{k} {v:,.4g}" for k, v in plan.totals.items()))
    return EXIT_OK
