"""End-to-end solve time, broken down, measured in one run (medians of --repeats runs).

Cases (request: llama3-8b, 1e12 tokens, 30 days, minimum energy, default node limit 1,024 -- every integer
node count 1..1,034 is evaluated, incl. the 1% binding step):
  warm plan, 3 alternatives     the default `solve` in a warm process whose physics cache holds this workload
                                (the app, batch runs, a second plan): goal <= 0.05 s. The chunks priced for it
                                are kept too (candidates.price_chunk), as for any request that differs only in
                                its limits or objective
  warm plan, prices not kept    the same with the priced chunks cleared first (a request that changes a price,
                                site, purchase mode, life, owned servers or run terms prices them again)
  warm process, cold physics    the same with the physics cache cleared first (the model evaluates every count)
  warm plan, no alternatives    for the cost of the alternatives
  re-evaluate the warm plan's row
                                one re-evaluation of the chosen candidate by the exact model at its layout
                                (plans.plan_from_row), what the plan and, batched, its alternatives cost
  cold CLI                      `planner solve` in a fresh process (imports, catalog, everything): goal <= 1.5 s
                                with an empty on-disk physics store (the first run on a machine), <= 0.8 s with the
                                store an earlier run filled (planner/physics/store.py: every later run); the
                                package's bytecode compiled by an earlier process, as an installed package has it
  synthetic 100 / 500 types     perturbed copies of the shipped servers, physics cache cleared, no alternatives

Stages: evaluate (the model over every count), price_reduce (pricing and the exact per-chunk reduction),
build (Pyomo), handoff (standard form -> highspy), highs (HiGHS's own time), alternatives (re-evaluation and
checks of the alternatives).
Run: python bench/bench_solve.py [--repeats 5] [--no-synthetic]
Today's figures: the README's "Measured" table; how they were measured and what was found: docs/PERFORMANCE.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from planner import load_catalog
from planner.data import Catalog, Server
from planner.plan import PlanRequest, candidates, solve

ROOT = Path(__file__).resolve().parent.parent


def synthetic(cat: Catalog, n_types: int, seed: int = 0) -> Catalog:
    """n_types server types: perturbed copies of the shipped GPU servers (price, power, GPUs per node)."""
    rng = np.random.default_rng(seed)
    base = cat.gpu_servers()
    servers: dict[str, Server] = {}
    for i in range(n_types):
        b = base[i % len(base)]
        servers[f"syn-{i}"] = b.model_copy(
            update={
                "id": f"syn-{i}",
                "price_usd": (b.price_usd or 1e5) * float(rng.uniform(0.7, 1.3)),
                "rent_usd_per_month": (b.rent_usd_per_month or 5e3) * float(rng.uniform(0.7, 1.3)),
                "other_power_w": b.other_power_w * float(rng.uniform(0.7, 1.3)),
                "cpu_power_w": b.cpu_power_w * float(rng.uniform(0.7, 1.3)),
            }
        )
    return cat.replace(servers=servers)


def clear_prices() -> None:
    """Drop the priced chunks candidates.price_chunk keeps (none in a planner that keeps none: bench/compare.py runs
    this script on a base revision too)."""
    priced = getattr(candidates, "_PRICED", None)
    if priced is not None:
        priced.clear()


def timed(cat: Catalog, req: PlanRequest, repeats: int, cold: str) -> dict[str, float]:
    """Medians of ``repeats`` solves after one that warms imports and caches; ``cold``: 'physics' (the physics cache
    cleared before each), 'prices' (the priced chunks cleared before each) or '' (nothing cleared)."""
    rows: list[dict[str, float]] = []
    for i in range(repeats + 1):
        if cold == "physics":
            candidates.PHYSICS.clear()
        if cold in ("physics", "prices"):
            clear_prices()
        t = time.perf_counter()
        res = solve(req, cat)
        total = time.perf_counter() - t
        rep = res.solver
        assert rep is not None and res.plan is not None
        ts = res.timings_s
        row = {
            "total": total,
            "evaluate": ts.get("evaluate_s", 0.0),
            "price_reduce": ts.get("price_reduce_s", 0.0),
            "build": rep.build_time_s,
            "handoff": rep.handoff_time_s,
            "highs": rep.solve_time_s,
            "alternatives": ts.get("alternatives_s", 0.0),
            "configurations": ts.get("configurations", 0.0),
        }
        if i:  # the first run warms imports and caches
            rows.append(row)
    return {k: statistics.median(r[k] for r in rows) for k in rows[0]}


def evaluate_s(cat: Catalog, req: PlanRequest, repeats: int) -> float:
    """Median seconds of re-evaluating the plan's candidate row with the exact model at the layout the search chose
    for it (``plans.plan_from_row``: a plan and, batched, its alternatives), over ``repeats`` rounds of 20 after one
    that warms."""
    from planner.checks.search import node_step
    from planner.plan.formulation import OBJECTIVE_COLUMNS
    from planner.plan.limits import limits_for
    from planner.plan.mip import solve_mip
    from planner.plan.plans import Columns, plan_from_row
    from planner.plan.reduce import Masks, scan, solve_reducer

    lim, column = limits_for(cat, req), OBJECTIVE_COLUMNS[req.objective]
    kept, _ = scan(cat, req, 1, req.max_nodes + node_step(req.max_nodes), solve_reducer(cat, req, lim, column), {})
    pool = kept[Masks(kept, lim, req, cat).all].reset_index(drop=True)
    pos, _ = solve_mip(pool, lim, column, req.solver, exclude=[])
    assert pos is not None
    row = Columns(pool).row(pos)
    plan_from_row(cat, req, row)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(20):
            plan_from_row(cat, req, row)
        times.append((time.perf_counter() - t) / 20)
    return statistics.median(times)


def cold_cli(repeats: int, imports_only: bool = False, store: str = "off") -> float:
    """Median wall time of a fresh `planner solve` process. store: 'off' (no on-disk physics store), 'empty' (a new
    store each run: the first run on a machine) or 'warm' (a store one earlier run filled)."""
    cmd = [sys.executable, "-m", "planner.cli", "solve", "--model", "llama3-8b", "--tokens", "1e12"]
    cmd += ["--deadline-days", "30"]
    if imports_only:  # the floor: what the process pays before planning anything
        imports = "import planner.cli.main, planner.cli.plan, planner.plan.solve; planner.load_catalog()"
        cmd = [sys.executable, "-c", imports]
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PLANNER_CACHE_DIR": "off" if store == "off" else tmp}
        # bytecode compiled once, as an installed package has it (pip compiles it; a machine that sets
        # PYTHONDONTWRITEBYTECODE would otherwise recompile the planner's ~100 modules in every process)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "bytecode")
        warm_env = {**env, "PLANNER_CACHE_DIR": "off"} if store == "empty" else env
        subprocess.run(cmd, env=warm_env, check=True, capture_output=True)
        for i in range(repeats):
            if store == "empty":
                env["PLANNER_CACHE_DIR"] = str(Path(tmp) / f"run{i}")
            t = time.perf_counter()
            subprocess.run(cmd, env=env, check=True, capture_output=True)
            times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--no-synthetic", action="store_true")
    args = ap.parse_args()
    os.environ["PLANNER_CACHE_DIR"] = "off"  # in-process cases: the model's own time (the CLI cases say which store)
    cat = load_catalog()
    req = PlanRequest(model="llama3-8b", tokens=1e12, deadline_days=30, objective="energy")
    cases: list[tuple[str, Catalog, PlanRequest, str]] = [
        ("warm plan, 3 alternatives (goal <= 0.05 s)", cat, req, ""),
        ("warm plan, prices not kept, 3 alternatives", cat, req, "prices"),
        ("warm process, cold physics, 3 alternatives", cat, req, "physics"),
        ("warm plan, no alternatives", cat, req.model_copy(update={"alternatives": 0}), ""),
    ]
    if not args.no_synthetic:
        none = req.model_copy(update={"alternatives": 0})
        cases += [
            ("synthetic 100 types, cold physics", synthetic(cat, 100), none, "physics"),
            ("synthetic 500 types, cold physics", synthetic(cat, 500), none, "physics"),
        ]
    print("median seconds; request: llama3-8b, 1e12 tokens, 30 days, min energy, every node count 1..1,034")
    hdr = ["case", "total", "evaluate", "price+reduce", "build", "handoff", "highs", "alternatives", "configs"]
    print(" | ".join(hdr))
    for name, c, r, cold in cases:
        reps = args.repeats if "500" not in name else max(1, args.repeats // 3)
        m: dict[str, Any] = timed(c, r, reps, cold)
        print(
            f"{name} | {m['total']:.3f} | {m['evaluate']:.3f} | {m['price_reduce']:.3f} | {m['build']:.3f} | "
            f"{m['handoff']:.3f} | {m['highs']:.3f} | {m['alternatives']:.3f} | {m['configurations']:,.0f}"
        )
        candidates.PHYSICS.clear()
        clear_prices()
    print(f"re-evaluate the warm plan's row (plan_from_row) | {evaluate_s(cat, req, args.repeats):.4f}")
    print(
        f"cold CLI `planner solve`, empty physics store (goal <= 1.5 s) | {cold_cli(args.repeats, store='empty'):.3f}"
    )
    print(f"cold CLI `planner solve`, stored physics (goal <= 0.8 s) | {cold_cli(args.repeats, store='warm'):.3f}")
    print(f"cold process: imports + catalog only | {cold_cli(args.repeats, imports_only=True):.3f}")


if __name__ == "__main__":
    main()
