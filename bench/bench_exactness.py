"""`solve` against brute force over every integer node count on many random requests: the exactness argument of
planner/plan/formulation.py's docstring, checked on a larger sample than the test suite draws.

For each request (tests/brute.py::random_request: LLMs incl. llama3-405b with node limits up to 4,096, rack and
budget limits, every objective, buy/rent/either, one or two sites, GPU and cap subsets) it checks that
  * solve finds a plan exactly when brute force does, with the brute-force optimum (rel 1e-6);
  * the plan and every alternative, re-evaluated with planner.evaluate, meet every requirement;
  * every stated relaxation equals the brute-force threshold (rel 1e-3), every pair is Pareto-minimal;
and, for every 10th feasible request, that no Pareto point (cost vs energy) is dominated by a brute-force plan.
Run: python bench/bench_exactness.py [--requests 300] [--seed 12]   (prints the counts; exit 1 on a mismatch)
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner import load_catalog
from planner.plan import PlanRequest, pareto, solve
from tests import brute


def pareto_dominated(cat: object, r: PlanRequest) -> int:
    front = pareto(r, x="cost", y="energy", points=6, catalog=cat)  # type: ignore[arg-type]
    df = brute.table(cat, r, 1, r.max_nodes)  # type: ignore[arg-type]
    df = df[brute.meets(df, r)]
    c, e = df["cost_usd"].to_numpy(), df["facility_energy_kwh"].to_numpy()
    bad = 0
    for _, p in front.iterrows():
        dom = ((c <= p["cost"] * (1 - 1e-9)) & (e <= p["energy"])) | (
            (c <= p["cost"]) & (e <= p["energy"] * (1 - 1e-9))
        )
        bad += int(dom.any())
    return bad


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--seed", type=int, default=12)
    args = ap.parse_args()
    cat = load_catalog()
    rng = np.random.default_rng(args.seed)
    n: Counter[str] = Counter()
    t0 = time.perf_counter()
    for i in range(args.requests):
        r = brute.random_request(rng, cat)
        if i % 3 == 0:
            r = PlanRequest.model_validate({**r.model_dump(), "alternatives": 3})
        res = solve(r, cat)
        v = brute.check(cat, r, res)
        n["requests"] += 1
        n[f"model {r.model}"] += 1
        n["feasible (brute)"] += v.feasible_brute
        n["feasibility agrees"] += v.feasible_brute == v.feasible_solve
        n["optimum agrees"] += v.optimum_agrees and v.feasible_brute == v.feasible_solve
        n["requests whose plans all re-check ok"] += v.plan_ok
        n["plans checked"] += 0 if res.plan is None else 1 + len(res.alternatives)
        n["relaxations checked"] += v.relaxations_checked
        n["relaxation sets agree"] += v.relaxations_agree
        n["with rack limit"] += r.max_rack_units is not None
        n["with budget"] += r.budget_usd is not None
        n["405b with > 1024 nodes"] += r.model == "llama3-405b" and r.max_nodes > 1024
        n["infeasible with pairs"] += bool(res.explanation and res.explanation.pairs)
        if v.problems:
            n["MISMATCHES"] += 1
            print("MISMATCH", r.model_dump(exclude_defaults=True), v.problems, flush=True)
        if res.plan is not None and n["feasible (brute)"] % 10 == 1:
            n["pareto fronts"] += 1
            n["pareto points dominated"] += pareto_dominated(cat, r)
        if (i + 1) % 25 == 0:
            print(f"{i + 1} requests, {time.perf_counter() - t0:.0f} s", flush=True)
    print(f"\n{args.requests} requests in {time.perf_counter() - t0:.0f} s (seed {args.seed})")
    for k in sorted(n):
        print(f"  {k}: {n[k]}")
    return 1 if n["MISMATCHES"] or n["pareto points dominated"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
