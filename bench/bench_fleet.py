"""Fleet MIP: 20 jobs x 30 server types x 26 weekly slots, time to a proven gap <= 1% (median of --repeats).

Server types are the shipped GPU servers and perturbed copies (price, host power +-30%); jobs mix the
library's workloads with staggered release/due slots. Run: python bench/bench_fleet.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from planner import load_catalog
from planner.data import Catalog
from planner.fleet import FleetRequest, build_fleet_model, fleet, job_modes
from planner.schemas import Server

WORK: dict[str, dict[str, float]] = {
    "llama3-8b": {"tokens": 2e11},
    "bert-large": {},
    "resnet50": {"epochs": 90},
    "llama2-70b-lora": {"samples": 5e4},
    "inception-v3": {"epochs": 90},
    "gpt3-175b": {},
    "dlrm-dcnv2": {},
}


def catalog_with(n_types: int, seed: int = 0) -> Catalog:
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


def request(n_jobs: int, slots: int, seed: int = 0) -> FleetRequest:
    rng = np.random.default_rng(seed)
    names = list(WORK)
    jobs = []
    for i in range(n_jobs):
        model = names[i % len(names)]
        rel = int(rng.integers(0, slots // 2))
        due = min(slots - 1, rel + int(rng.integers(4, slots)))
        jobs.append({"id": f"job-{i:02d}", "model": model, **WORK[model], "release_slot": rel, "due_slot": due})
    return FleetRequest.model_validate(
        {
            "jobs": jobs,
            "slots": slots,
            "objective": "cost",
            "power_kw": 3000,
            "power_caps": [0.7, 1.0],
            "node_counts": [1, 2, 4, 8, 16, 32],
            "solver": {"time_limit_s": 600, "mip_rel_gap": 0.01, "presolve": True, "threads": 1},
        }
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=20)
    ap.add_argument("--types", type=int, default=30)
    ap.add_argument("--slots", type=int, default=26)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    cat = catalog_with(args.types)
    req = request(args.jobs, args.slots)
    t = time.perf_counter()
    modes = job_modes(cat, req)
    t_modes = time.perf_counter() - t
    m = build_fleet_model(cat, req, modes)
    print(
        f"{args.jobs} jobs x {args.types} server types x {args.slots} slots: {len(modes)} job modes "
        f"(evaluated in {t_modes:.1f} s)"
    )
    del m
    rows = []
    for _ in range(args.repeats):
        t = time.perf_counter()
        plan = fleet(req, cat)
        total = time.perf_counter() - t
        rep = plan.solver
        assert rep is not None
        rows.append((total, rep.solve_time_s, rep.handoff_time_s, rep.gap or 0.0))
        print(
            f"  run: total {total:.1f} s, HiGHS {rep.solve_time_s:.1f} s, hand-off {rep.handoff_time_s:.1f} s, "
            f"gap {rep.gap or 0:.2%}, status {plan.status}, {rep.variables} vars x {rep.constraints} rows, "
            f"objective {plan.objective_value:,.0f}"
        )
    print(
        f"median: total {statistics.median(r[0] for r in rows):.1f} s, "
        f"HiGHS {statistics.median(r[1] for r in rows):.1f} s, gap {statistics.median(r[3] for r in rows):.2%}"
    )


if __name__ == "__main__":
    main()
