"""The compile of a MIP to HiGHS's arrays: planner.solver.standard_form against Pyomo's LinearStandardFormCompiler
(mixed form, the arrays it replaces), on the single-job MIP of the bench request (llama3-8b, 1e12 tokens, 30 days)
and on a fleet MIP of bench/bench_fleet.py's instance (every cut family). The two are run alternately; each figure is
the median CPU seconds (process time) of --repeats compiles, and every compile is checked to give the same arrays.

Run: python bench/bench_handoff.py [--repeats 7 --jobs 25 --types 15 --slots 26]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

import numpy as np
import pyomo.environ as pyo
from bench_fleet import catalog_with, request
from pyomo.repn.plugins.standard_form import LinearStandardFormCompiler

from planner.fleet import build_fleet_model, job_modes, pools_of
from planner.plan import PlanRequest, solve
from planner.plan import mip as plan_mip
from planner.solver import standard_form


def pyomo_compile(m: pyo.ConcreteModel) -> Any:
    return LinearStandardFormCompiler().write(m, mixed_form=True, set_sense=None)


def same(m: pyo.ConcreteModel) -> bool:
    ref, got = pyomo_compile(m), standard_form(m)
    A = ref.A.tocsc()
    return (
        [id(v) for v in ref.columns] == [id(v) for v in got.columns]
        and np.array_equal(A.indptr, got.indptr)
        and np.array_equal(A.indices, got.indices)
        and np.array_equal(A.data, got.data)
        and np.array_equal(np.asarray(ref.rhs, dtype=float), got.rhs)
    )


def timed(m: pyo.ConcreteModel, repeats: int) -> tuple[float, float]:
    """Median CPU seconds of (Pyomo's compiler, standard_form), run alternately."""
    pyomo_compile(m)  # imports and first-use costs out of the figures
    standard_form(m)
    old, new = [], []
    for _ in range(repeats):
        t = time.process_time()
        pyomo_compile(m)
        old.append(time.process_time() - t)
        t = time.process_time()
        standard_form(m)
        new.append(time.process_time() - t)
    return statistics.median(old), statistics.median(new)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--jobs", type=int, default=25)
    ap.add_argument("--types", type=int, default=15)
    ap.add_argument("--slots", type=int, default=26)
    args = ap.parse_args()
    os.environ["PLANNER_CACHE_DIR"] = "off"
    models: list[pyo.ConcreteModel] = []
    build = plan_mip.build_model

    def keep(*a: Any, **kw: Any) -> pyo.ConcreteModel:
        models.append(build(*a, **kw))
        return models[-1]

    plan_mip.build_model = keep
    solve(PlanRequest(model="llama3-8b", tokens=1e12, deadline_days=30, objective="energy", alternatives=0))
    plan_mip.build_model = build
    cat = catalog_with(args.types)
    req = request(args.jobs, args.slots, 2048)
    pools = pools_of(cat, req)
    fleet_m = build_fleet_model(cat, req, job_modes(cat, req, pools=pools), pools).model
    print(f"load average: {os.getloadavg()}")
    print("median CPU seconds | Pyomo compiler | standard_form | new / Pyomo | same arrays")
    for label, m in (("single-job MIP", models[0]), (f"fleet MIP {args.jobs}x{args.types}x{args.slots}", fleet_m)):
        old, new = timed(m, args.repeats)
        nnz = len(standard_form(m).data)
        print(f"{label} ({nnz:,} nonzeros) | {old:.4f} | {new:.4f} | {new / old:.2f} | {same(m)}")


if __name__ == "__main__":
    main()
