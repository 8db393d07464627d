"""Evaluations per second of the vectorized exact model over the full shipped configuration space.

All GPU servers x their fabrics x the 7 power-cap levels x node counts 1..1024, one call per workload.
Median of --repeats runs (after one warm-up), single process, in CPU time of the process by default (a shared
machine's load stretches wall time, not the CPU time the evaluation needs; --clock wall for elapsed time).
Run: python bench/bench_evaluate.py
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

from planner import load_catalog
from planner.physics import evaluate_space


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--models", default="")
    ap.add_argument(
        "--clock",
        choices=["cpu", "wall"],
        default="cpu",
        help="cpu: this process's CPU time (steady on a shared, oversubscribed machine); wall: elapsed time",
    )
    args = ap.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    cat = load_catalog()
    models = args.models.split(",") if args.models else sorted(cat.workloads)
    print(f"{'model':18} {'configs':>9} {'median s':>9} {'configs/s':>12}   ({args.clock} time)")
    total_n, total_t = 0, 0.0
    for m in models:
        evaluate_space(cat, m)
        times = []
        for _ in range(args.repeats):
            t = clock()
            df = evaluate_space(cat, m)
            times.append(clock() - t)
        med = statistics.median(times)
        total_n += len(df)
        total_t += med
        print(f"{m:18} {len(df):>9,} {med:>9.3f} {len(df) / med:>12,.0f}")
    print(f"{'all workloads':18} {total_n:>9,} {total_t:>9.3f} {total_n / total_t:>12,.0f}")


if __name__ == "__main__":
    main()
