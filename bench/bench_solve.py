"""End-to-end solve time, broken down, for the shipped catalog and synthetic catalogs of 100 / 500 server
types, plus brute-force enumeration of the same candidates as a ratio. Medians of --repeats runs.

Stages: evaluate (exact model over the ladder), build (Pyomo), hand-off (standard-form compile + highspy
load), HiGHS (its own run time), extract (solution back to a plan incl. the exact re-evaluation).
Run: python bench/bench_solve.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np

from planner import load_catalog
from planner.data import Catalog
from planner.mip import OBJECTIVE_COLUMNS
from planner.optimize import PlanRequest, _satisfies, candidates, limits_for, solve
from planner.schemas import Server


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


def timed(cat: Catalog, req: PlanRequest, repeats: int) -> dict[str, float]:
    rows: list[dict[str, float]] = []
    for i in range(repeats + 1):
        from planner import optimize

        optimize._PHYSICS.clear()
        t = time.perf_counter()
        res = solve(req, cat)
        total = time.perf_counter() - t
        rep = res.solver
        assert rep is not None
        ts = res.timings_s
        row = {
            "total": total,
            "evaluate": ts["evaluate_s"],
            "build": rep.build_time_s,
            "handoff": rep.handoff_time_s,
            "highs": rep.solve_time_s,
            "extract": ts["solve_s"] - rep.build_time_s - rep.handoff_time_s - rep.solve_time_s + ts["refine_s"],
        }
        # brute force over the same candidate table: filter every constraint, take the minimum
        cand = candidates(cat, req)
        t = time.perf_counter()
        ok = _satisfies(cand, limits_for(cat, req))
        float(cand.loc[ok, OBJECTIVE_COLUMNS[req.objective]].min())
        row["enumerate_filter"] = time.perf_counter() - t
        if i:
            rows.append(row)
    return {k: statistics.median(r[k] for r in rows) for k in rows[0]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    cat = load_catalog()
    req = PlanRequest(model="llama3-8b", tokens=1e12, deadline_days=30, objective="energy", alternatives=0)
    cases: list[tuple[str, Catalog]] = [
        ("shipped (10 GPU servers)", cat),
        ("synthetic 100 types", synthetic(cat, 100)),
        ("synthetic 500 types", synthetic(cat, 500)),
    ]
    print("median seconds; request: llama3-8b, 1e12 tokens, 30 days, min energy, no alternatives")
    hdr = ["catalog", "total", "evaluate", "build", "handoff", "highs", "extract", "overhead/highs", "enum filter"]
    print(" | ".join(hdr))
    for name, c in cases:
        r: dict[str, Any] = timed(c, req, args.repeats)
        overhead = r["build"] + r["handoff"] + r["extract"]
        print(
            f"{name} | {r['total']:.3f} | {r['evaluate']:.3f} | {r['build']:.3f} | {r['handoff']:.3f} | "
            f"{r['highs']:.3f} | {r['extract']:.3f} | {overhead / r['highs']:.2f} | {r['enumerate_filter']:.4f}"
        )


if __name__ == "__main__":
    main()
