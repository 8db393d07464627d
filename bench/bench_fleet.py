"""Fleet MIP at LLM scale: 50 jobs x 30 server types x 52 weekly slots, fabric choice, modes at every node count
up to 2,048 nodes per pool; time to a proven 1% gap on one HiGHS thread, and the root LP bound of each
formulation step.

Server types are the shipped buyable GPU servers and perturbed copies (price, host power +-30%), each on every
fabric it can be built with (the plan picks one per type). Jobs: pre-training runs, fine-tunes and short
evaluation-sized runs with staggered release/due weeks. The root LP bound is the LP relaxation's optimum
(integrality dropped, before HiGHS's own presolve and cuts) of: (a) the work row in hours and no valid cuts,
(b) the work row in whole slots ceil(T/H), then adding the valid-inequality families of planner/fleet/formulation.py
one at a time: (c) (12) cover and node-slots, (d) (14) network-capex envelope, (e) (15) fabric cover, (f) (13)
energetic intervals -- (f) is the formulation `fleet` solves. The run line gives the start heuristic's figures
(greedy plan, LP relaxation, MIP restricted to the LP's modes, local search, squeeze of the most expensive
type, every job packed onto one cluster) and HiGHS's own on the full MIP: incumbent, bound, gap, seconds, B&B
nodes; the bound is HiGHS's or, when higher, the LP relaxation's optimum of the same MIP (planner/fleet/run.py).
`--time-limit` is the whole `fleet()` call's (modes, build, LP, restricted MIP, local search, squeeze, packing,
full MIP).

`--purchase-bound S` then runs planner/fleet/bound.py on the same MIP for S seconds from the run's plan: best-first
branching on the nodes bought per server type over the LP relaxation (with `--leaf-mip S2`, each leaf -- all
type totals integral -- solved as a MIP for up to S2 s), and prints its root LP, its bound and the gap to the
best plan known (the run's, or a leaf MIP's).

`--long S` replaces the timed run: the start heuristics within the time limit, then HiGHS alone on the full MIP
for S seconds (presolve on, its log to --log): where the optimum lies, incumbent or bound.

`--profile-modes` times the mode stage again under cProfile (evaluate_space, the dominance pruning, the rest) and
stops.

What these runs have measured, with the command of each figure: docs/fleet-bound.md.

Run: python bench/bench_fleet.py [--jobs 50 --types 30 --slots 52 --max-nodes 2048 --time-limit 60 --repeats 1]
         [--purchase-bound 60 --leaf-mip 10] [--no-root --long 1200 --log bench_fleet_long.log] [--profile-modes]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time
from typing import Any

import highspy
import numpy as np
import pandas as pd
import pyomo.environ as pyo

from planner import load_catalog
from planner.data import Catalog, Server
from planner.fleet import (
    CUT_FAMILIES,
    FleetRequest,
    Pools,
    StartState,
    build_fleet_model,
    fleet,
    improve_start,
    job_modes,
    pools_of,
    set_greedy_start,
)
from planner.fleet.bound import as_highs_lp, purchase_bound
from planner.solver import SolverOptions, solve_model

# (workload, amount of work, shortest and longest window in weeks)
JOBS: list[tuple[str, dict[str, float], int, int]] = [
    ("llama3-70b", {"tokens": 2.0e12}, 8, 20),  # pre-training
    ("llama3-8b", {"tokens": 1.5e12}, 4, 12),  # pre-training
    ("llama2-70b-lora", {"samples": 2e6}, 2, 6),  # fine-tune
    ("llama3-8b", {"tokens": 5e10}, 1, 4),  # continued pre-training / fine-tune
    ("gpt3-175b", {}, 1, 3),  # benchmark-sized run
    ("bert-large", {}, 1, 3),  # evaluation-sized
    ("resnet50", {"epochs": 90}, 1, 3),
    ("llama2-70b-lora", {"samples": 2e5}, 1, 3),
    ("dlrm-dcnv2", {}, 1, 3),
    ("llama3-8b", {"tokens": 2e11}, 2, 8),
]


def catalog_with(n_types: int, seed: int = 0) -> Catalog:
    """The shipped catalog with ``n_types`` buyable server types: the shipped ones and perturbed copies (price and
    host power within +-30%), named type-00, type-01, ..."""
    cat = load_catalog()
    rng = np.random.default_rng(seed)
    base = [s for s in cat.gpu_servers() if s.price_usd is not None]
    servers: dict[str, Server] = {}
    for i in range(n_types):
        b = base[i % len(base)]
        servers[f"type-{i:02d}"] = b.model_copy(
            update={
                "id": f"type-{i:02d}",
                "price_usd": (b.price_usd or 1e5) * float(rng.uniform(0.7, 1.3)),
                "other_power_w": b.other_power_w * float(rng.uniform(0.7, 1.3)),
            }
        )
    return cat.replace(servers=servers)


def request(n_jobs: int, slots: int, max_nodes: int, seed: int = 0) -> FleetRequest:
    """The bench's fleet request: ``n_jobs`` jobs drawn in turn from JOBS with random windows, cost objective,
    a 30 MW site, caps 0.7 and 1.0, one HiGHS thread, a 1% gap."""
    rng = np.random.default_rng(seed)
    jobs = []
    for i in range(n_jobs):
        model, work, lo, hi = JOBS[i % len(JOBS)]
        rel = int(rng.integers(0, max(1, slots - hi)))
        due = min(slots - 1, rel + int(rng.integers(lo, hi + 1)) - 1)
        jobs.append({"id": f"job-{i:02d}", "model": model, **work, "release_slot": rel, "due_slot": due})
    return FleetRequest.model_validate(
        {
            "jobs": jobs,
            "slots": slots,
            "objective": "cost",
            "power_kw": 30_000,
            "power_caps": [0.7, 1.0],
            "max_nodes": max_nodes,
            "solver": {"time_limit_s": 600, "mip_rel_gap": 0.01, "presolve": True, "threads": 1},
        }
    )


def root_bound(cat: Catalog, req: FleetRequest, modes: pd.DataFrame, pools: Pools, **kw: Any) -> tuple[float, float]:
    """LP relaxation optimum of a formulation variant, and the seconds it took."""
    m = build_fleet_model(cat, req, modes, pools, **kw).model
    pyo.TransformationFactory("core.relax_integer_vars").apply_to(m)
    t = time.perf_counter()
    rep = solve_model(m, SolverOptions(time_limit_s=600, presolve=False, threads=1)).report
    return float(rep.objective or float("nan")), time.perf_counter() - t


def long_run(cat: Catalog, req: FleetRequest, modes: pd.DataFrame, pools: Pools, seconds: float, log: str) -> None:
    """The start heuristics of ``fleet`` (greedy, LP, restricted MIP, local search, squeeze, packing, with fleet's time
    shares of the request's time limit, which here excludes the modes and the build), then HiGHS alone on the
    full MIP from the best start for ``seconds``, with presolve and its log written to ``log``; prints its
    incumbent, bound and gap at the end (the log has them over time)."""
    mip = build_fleet_model(cat, req, modes, pools)
    state = StartState()
    set_greedy_start(mip, cat, req, state)
    t0 = time.perf_counter()
    heur = improve_start(mip, cat, req, state, lambda: max(1.0, req.solver.time_limit_s - (time.perf_counter() - t0)))
    print(f"  start: {', '.join(f'{k} {v:,.1f}' for k, v in heur.items())}")
    lp, cols = as_highs_lp(mip.model)
    h = highspy.Highs()
    h.setOptionValue("log_to_console", False)
    h.setOptionValue("log_file", log)
    h.setOptionValue("threads", 1)
    h.setOptionValue("time_limit", float(seconds))
    h.setOptionValue("mip_rel_gap", 1e-4)
    h.passModel(lp)
    start = highspy.HighsSolution()
    start.col_value = [float(v.value or 0.0) for v in cols]
    start.value_valid = True
    h.setSolution(start)
    t = time.perf_counter()
    h.run()
    info = h.getInfo()
    print(
        f"  long run: {time.perf_counter() - t:.0f} s, status {h.modelStatusToString(h.getModelStatus())}, "
        f"incumbent {info.objective_function_value:,.0f}, bound {info.mip_dual_bound:,.0f}, gap {info.mip_gap:.2%}, "
        f"{info.mip_node_count} B&B nodes (log: {log})"
    )


def profile_modes(cat: Catalog, req: FleetRequest, pools: Pools) -> None:
    """The mode stage (``job_modes``) once more under cProfile: where its seconds go."""
    prof = cProfile.Profile()
    t = time.perf_counter()
    prof.runcall(job_modes, cat, req, pools=pools)
    total = time.perf_counter() - t
    cum = {f[2]: v[3] for f, v in pstats.Stats(prof).stats.items()}  # type: ignore[attr-defined]
    ev, pm = cum.get("evaluate_space", 0.0), cum.get("pareto_mask", 0.0)
    print(
        f"  mode stage under cProfile: {total:.1f} s; planner.physics.evaluate_space {ev:.1f} s, "
        f"pareto_mask {pm:.1f} s, "
        f"the rest of job_modes {total - ev - pm:.1f} s"
    )


def instance_arguments(ap: argparse.ArgumentParser) -> None:
    """The instance's size on the command line: --jobs, --types, --slots, --max-nodes (the bench's defaults)."""
    ap.add_argument("--jobs", type=int, default=50)
    ap.add_argument("--types", type=int, default=30)
    ap.add_argument("--slots", type=int, default=52)
    ap.add_argument("--max-nodes", type=int, default=2048)


def main() -> None:
    """The command line (module docstring)."""
    ap = argparse.ArgumentParser()
    instance_arguments(ap)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--no-root", action="store_true", help="skip the root-bound history")
    ap.add_argument("--time-limit", type=float, default=60.0, help="time limit of the whole solve, seconds (the goal)")
    ap.add_argument("--no-presolve", action="store_true", help="HiGHS MIP presolve off")
    ap.add_argument(
        "--purchase-bound",
        type=float,
        default=0.0,
        help="after the run, branch on the nodes bought per type for this many seconds (planner/fleet/bound.py)",
    )
    ap.add_argument("--leaf-mip", type=float, default=0.0, help="seconds per leaf MIP of --purchase-bound")
    ap.add_argument(
        "--long",
        type=float,
        default=0.0,
        help="instead of the timed run: the start heuristics, then HiGHS on the full MIP for this many seconds "
        "(presolve on, its log to --log) -- where the optimum lies, incumbent or bound",
    )
    ap.add_argument("--log", default="bench_fleet_long.log", help="HiGHS log file of --long")
    ap.add_argument(
        "--profile-modes",
        action="store_true",
        help="then evaluate the modes again under cProfile: the seconds in planner.physics.evaluate_space, in the "
        "dominance pruning (pareto_mask) and in the rest of job_modes, and stop",
    )
    args = ap.parse_args()
    cat = catalog_with(args.types)
    req = request(args.jobs, args.slots, args.max_nodes)
    opts = {"time_limit_s": args.time_limit, "presolve": not args.no_presolve}
    req = req.model_copy(update={"solver": req.solver.model_copy(update=opts)})
    pools = pools_of(cat, req)
    t = time.perf_counter()
    modes = job_modes(cat, req, pools=pools)
    t_modes = time.perf_counter() - t
    n_opts = sum(len(f) for f in pools.buy.values())
    print(
        f"{args.jobs} jobs x {args.types} server types ({n_opts} type-fabric options) x {args.slots} slots, "
        f"nodes 1..{args.max_nodes}: {modes.attrs['fitting_modes']:,} job modes fit their windows, {len(modes):,} "
        f"after exact dominance pruning (evaluated and pruned in {t_modes:.1f} s)"
    )
    if args.profile_modes:
        profile_modes(cat, req, pools)
        return
    if not args.no_root:
        steps: list[tuple[str, dict[str, Any]]] = [
            ("(a) work in hours, no cuts", {"rounded_work": False, "cuts": ()}),
            ("(b) work in whole slots", {"cuts": ()}),
            ("(c) + (12) cover and node-slots", {"cuts": ("cover",)}),
            ("(d) + (14) network envelope", {"cuts": ("cover", "network")}),
            ("(e) + (15) fabric cover", {"cuts": ("cover", "network", "fabric_cover")}),
            ("(f) + (13) energetic intervals (solved)", {"cuts": CUT_FAMILIES}),
        ]
        for label, kw in steps:
            bound, secs = root_bound(cat, req, modes, pools, **kw)
            print(f"  root LP bound {label}: {bound:,.0f} USD ({secs:.1f} s)")
    if args.long > 0:
        long_run(cat, req, modes, pools, args.long, args.log)
        return
    rows = []
    for _ in range(args.repeats):
        t, c = time.perf_counter(), time.process_time()
        plan = fleet(req, cat)
        total, cpu = time.perf_counter() - t, time.process_time() - c
        rep = plan.solver
        assert rep is not None
        rows.append((total, rep.solve_time_s, rep.gap or 0.0))
        tm = plan.timings_s
        figures = (
            f"HiGHS objective {rep.objective:,.0f}, bound {rep.bound:,.0f}, gap {rep.gap or 0:.2%}"
            if rep.objective is not None and rep.bound is not None
            else "no incumbent"
        )
        st = plan.start
        if st:
            print(
                f"  start: greedy {st.get('start_objective', float('nan')):,.0f}; LP relaxation "
                f"{st.get('lp_bound', float('nan')):,.0f} ({tm.get('lp_s', 0):.1f} s); restricted MIP "
                f"{st.get('restricted_objective', float('nan')):,.0f} ({tm.get('restricted_s', 0):.1f} s); flattened "
                f"{st.get('flatten_objective', float('nan')):,.0f} ({st.get('flatten_moves', 0):.0f} moves, "
                f"{tm.get('flatten_s', 0):.1f} s); squeezed "
                f"{st.get('squeeze_objective', float('nan')):,.0f} ({st.get('squeeze_steps', 0):.0f} steps, "
                f"{tm.get('squeeze_s', 0):.1f} s); packed "
                f"{st.get('pack_objective', float('nan')):,.0f} ({st.get('pack_nodes', 0):.0f} nodes"
                f"{', the fewest of its option: proved' if st.get('pack_min_proved') else ''}, "
                f"{tm.get('pack_s', 0):.1f} s)"
            )
        start_s = sum(tm.get(k, 0.0) for k in ("lp_s", "restricted_s", "flatten_s", "squeeze_s", "pack_s"))
        print(
            f"  run: total {total:.1f} s CPU {cpu:.1f} s (modes {tm.get('modes_s', 0):.1f}, Pyomo build "
            f"{tm.get('build_s', 0):.1f}, start {start_s:.1f}, "
            f"hand-off {rep.handoff_time_s:.1f}, HiGHS {rep.solve_time_s:.1f}); status {plan.status} (HiGHS: "
            f"{rep.highs_status}), {figures}, "
            f"{rep.nodes} B&B nodes, {rep.simplex_iterations} simplex iterations, {rep.variables} vars x "
            f"{rep.constraints} rows"
        )
        bought = [p for p in plan.purchases if p["added"]]
        if plan.objective_value is not None:
            busy = plan.schedule_frame().groupby("pool")["nodes"].mean() if plan.schedule else pd.Series(dtype=float)
            print(
                "  plan: "
                + ", ".join(
                    f"{p['added']} x {p['server']} on {p['fabric']} (busy: peak {p['peak_busy_nodes']}, mean "
                    f"{busy.get(p['server'] + '|' + p['fabric'], 0.0):.1f} over the slots)"
                    for p in bought
                )
                + f"; capex ${plan.totals['capex_usd']:,.0f}, cost ${plan.totals['cost_usd']:,.0f}"
            )
            for p in bought:  # the jobs on each bought cluster: nodes x slots
                on = [a for a in plan.assignments if a["pool"] == f"{p['server']}|{p['fabric']}"]
                sizes = sorted(((a["nodes"], len(a["slots"])) for a in on), reverse=True)
                print(f"    {p['server']}: {len(on)} jobs, nodes x slots " + " ".join(f"{n}x{d}" for n, d in sizes))
        if args.purchase_bound > 0 and plan.objective_value is not None:
            m = build_fleet_model(cat, req, modes, pools).model
            pb = purchase_bound(m, plan.objective_value, args.purchase_bound, leaf_mip_s=args.leaf_mip)
            inc = pb.incumbent
            trail = ", ".join(f"{b:,.0f} at {s:.0f} s" for s, b in pb.history[:: max(1, len(pb.history) // 6)])
            print(
                f"  purchase bound ({args.purchase_bound:g} s, leaf MIPs {args.leaf_mip:g} s): root LP {pb.root:,.0f}, "
                f"bound {pb.bound:,.0f}, gap {(inc - pb.bound) / inc:.2%} to {inc:,.0f}; {pb.nodes} LPs, {pb.leaves} "
                f"leaves, {pb.open_nodes} open, {'complete' if pb.complete else 'stopped'} in {pb.seconds:.1f} s; "
                f"bound over time: {trail}"
            )
    print(
        f"median: total {statistics.median(r[0] for r in rows):.1f} s, "
        f"HiGHS {statistics.median(r[1] for r in rows):.1f} s, gap {statistics.median(r[2] for r in rows):.2%}"
    )


if __name__ == "__main__":
    main()
