"""Batch throughput: 1,000 scenarios on the shipped catalog, local engine with 1 and 2 workers and the Ray
engine with 2 workers, in one run (so the ratios compare like with like). Scenarios per second include
process start-up. Run: python bench/bench_batch.py [--scenarios 1000]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from planner.batch import batch, expand


def spec(n: int) -> dict:
    deadlines = [0.25, 0.5, 1, 2, 3, 5, 7, 10, 14, 20]
    return {
        "base": {"model": "resnet50"},
        "grid": {
            "deadline_days": deadlines,
            "objective": ["energy", "cost", "carbon", "time"],
            "purchase": ["buy", "rent"],
            "sites": [["us-colo"], ["hydro-nordic"], ["coal-heavy"]],
            "electricity_price_multiplier": [0.7, 1.0, 1.3],
            "budget_usd": [None, 2e6],
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenarios", type=int, default=1000)
    ap.add_argument("--no-ray", action="store_true")
    args = ap.parse_args()
    items = expand(spec(args.scenarios))[: args.scenarios]
    print(f"{len(items)} scenarios (resnet50; deadline x objective x buy/rent x site x electricity price x budget)")
    rates = {}
    runs = [("local", 1), ("local", 2)] + ([] if args.no_ray else [("ray", 2)])
    for engine, workers in runs:
        out = Path(tempfile.mkdtemp())
        t = time.perf_counter()
        df = batch(items, out, workers=workers, engine=engine, progress=False)
        dt = time.perf_counter() - t
        rates[(engine, workers)] = len(df) / dt
        print(
            f"{engine:5} workers={workers}: {len(df)} rows in {dt:.1f} s = {len(df) / dt:.1f} scenarios/s; "
            f"statuses {df['status'].value_counts().to_dict()}"
        )
        shutil.rmtree(out)
    if ("ray", 2) in rates:
        print(f"ray overhead vs local at 2 workers: {rates[('local', 2)] / rates[('ray', 2)] - 1:+.1%}")
    print(f"local speed-up 2 vs 1 worker: {rates[('local', 2)] / rates[('local', 1)]:.2f}x")


if __name__ == "__main__":
    main()
