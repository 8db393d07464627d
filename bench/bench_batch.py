"""Batch throughput and resume, in one run (so the ratios compare like with like).

1. Mixed scenarios: ``--scenarios`` of the 1,000 of five workloads (resnet50, bert-large, llama3-8b, llama3-70b,
   gpt3-175b) x deadline x objective x buy/rent x electricity price, drawn at random (seed 0, in the grid's
   order), so every workload, objective and price is in the run: the local engine with 1 and 2 workers and the
   Ray engine with 2 workers, each twice -- with an empty physics store (a fresh directory: the first batch on
   a machine, every physics computed) and then with the store that run filled (a later batch: physics loaded).
   Scenarios per second include process (and Ray) start-up and one SQLite commit per scenario.
   Goals: >= 40 scenarios/s with 2 local workers; Ray at 2 workers within 25% of local.
2. The batch machinery alone: 2,000 scenarios that end at once (an unknown workload: bad input), so the
   rate is that of scheduling, pipes and one durable SQLite commit per scenario -- the ceiling the solver's
   own time per scenario is divided into.
3. Where a scenario's time goes: the same scenarios solved twice in this process in the worker queue's order
   (``pool.ScenarioQueue``), the second pass measured, from the timings each result carries (``timings_s``): the
   scan (physics read, pricing and reduction), the MIP with the plan's re-evaluation and check, the alternatives,
   the explanation of an infeasible request, and what is left (request checks, the catalog's overrides, the row).
4. Resume of 10,000 finished scenarios: a 10,000-scenario store whose rows are the real rows of step 1
   (copied under the ids of the larger grid, written in one transaction outside the timing), then the same
   ``run_batch`` call a user's rerun makes: expand, fingerprint the inputs, open the store, one indexed query
   for the finished ids, export results.csv/.parquet. Goal: <= 2 s.

Run: python bench/bench_batch.py [--scenarios 1000] [--repeats 2] [--no-ray]
Today's figures: the README's "Measured" table; how they were measured and what was found: docs/PERFORMANCE.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import planner
from planner.batch import Identity, Store, expand, input_files, run_batch, scenarios_sha
from planner.batch.pool import ScenarioQueue
from planner.batch.scenarios import overridden_catalog, to_request
from planner.data import catalog_dir, models_dir
from planner.plan import candidates

MODELS = ["resnet50", "bert-large", "llama3-8b", "llama3-70b", "gpt3-175b"]


def spec(multipliers: int = 5) -> dict[str, Any]:
    return {
        "base": {"alternatives": 0},
        "grid": {
            "model": MODELS,
            "deadline_days": [3, 7, 14, 30, 60],
            "objective": ["energy", "cost", "carbon", "time"],
            "purchase": ["buy", "rent"],
            "electricity_price_multiplier": [round(0.5 + 0.1 * i, 2) for i in range(multipliers)],
        },
    }


def mixed(n: int) -> list[dict[str, Any]]:
    """n of the grid's 1,000 scenarios drawn at random (seed 0), in the grid's order."""
    items = expand(spec())
    keep = sorted(random.Random(0).sample(range(len(items)), min(n, len(items))))
    return [items[i] for i in keep]


def throughput(items: list[dict[str, Any]], engine: str, workers: int, store: Path) -> tuple[float, Any]:
    """Scenarios per second of one batch run with the physics store in ``store``, nothing in memory: the physics
    and priced chunks this process holds are dropped first (one local worker runs in this process, and local
    workers fork from it)."""
    out = Path(tempfile.mkdtemp(prefix="bench-batch-"))
    before = os.environ.get("PLANNER_CACHE_DIR")
    os.environ["PLANNER_CACHE_DIR"] = str(store)
    candidates.PHYSICS.clear()
    candidates._PRICED.clear()
    try:
        t = time.perf_counter()
        res = run_batch(items, out, workers=workers, engine=engine, progress=False)
        dt = time.perf_counter() - t
        assert res.complete and len(res.frame) == len(items), res.summary()
        return len(items) / dt, res
    finally:
        shutil.rmtree(out)
        if before is None:
            os.environ.pop("PLANNER_CACHE_DIR", None)
        else:
            os.environ["PLANNER_CACHE_DIR"] = before


def breakdown(items: list[dict[str, Any]]) -> None:
    """Mean milliseconds a scenario spends in each stage, warm, in this process, in the queue's order (item 3)."""
    queue = ScenarioQueue(items)
    ordered = [queue.popleft() for _ in range(len(items))]
    base = planner.load_catalog()
    stages = ("price_reduce_s", "scan_s", "solve_s", "alternatives_s", "explain_s")  # price_reduce_s: of scan_s
    for _ in ("warm-up", "measured"):  # the second pass's sums are kept
        sums: dict[str, dict[str, float]] = {}
        for s in ordered:
            t = time.perf_counter()
            req, over = to_request(s)
            res = planner.solve(req, overridden_catalog(base, req, over))
            total = time.perf_counter() - t
            got = sums.setdefault(res.status, {"n": 0.0, "total": 0.0, **dict.fromkeys(stages, 0.0)})
            got["n"] += 1
            got["total"] += total
            for k in stages:
                got[k] += res.timings_s.get(k, 0.0)
    print("where a scenario's time goes (warm, one process, the queue's order; mean ms a scenario):")
    print("status | scenarios | total | price+reduce | scan (all) | MIP+re-evaluation | alternatives | explain | rest")
    for status, g in sums.items():
        n = g["n"]
        rest = g["total"] - sum(g[k] for k in stages[1:])
        parts = [g[k] / n * 1e3 for k in ("total", *stages)] + [rest / n * 1e3]
        print(f"{status} | {n:.0f} | " + " | ".join(f"{v:.1f}" for v in parts))


def resume_10k(rows: list[dict[str, Any]]) -> tuple[float, float]:
    big = spec(multipliers=50)  # 5 x 5 x 4 x 2 x 50 = 10,000
    items = expand(big)
    assert len(items) == 10_000
    out = Path(tempfile.mkdtemp(prefix="bench-resume-"))
    try:
        ident = Identity(
            scenarios_sha=scenarios_sha(s["id"] for s in items),
            scenario_source="<python>",
            input_files=input_files(catalog_dir(), models_dir()),
            planner_version=planner.__version__,
        )
        with Store(out) as st:
            st.begin_run(ident, items)
            st.db.execute("BEGIN")
            for i, s in enumerate(items):
                row = {**rows[i % len(rows)], "id": s["id"], "scenario": json.dumps(s, sort_keys=True)}
                st.db.execute(
                    "INSERT INTO results VALUES (?, ?, ?, 1, 'bench', ?)",
                    (s["id"], st.run_id, row["status"], json.dumps(row, default=str)),
                )
            st.db.execute("COMMIT")
        t = time.perf_counter()
        res = run_batch(big, out, workers=2, progress=False)
        dt = time.perf_counter() - t
        assert res.ran == 0 and res.complete and len(res.frame) == 10_000
        t = time.perf_counter()
        with Store(out) as st:
            st.done_ids()
        q = time.perf_counter() - t
        return dt, q
    finally:
        shutil.rmtree(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenarios", type=int, default=1000)
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--repeats", type=int, default=1, help="interleaved rounds; the median rate is reported")
    args = ap.parse_args()
    items = mixed(args.scenarios)
    print(f"{len(items)} scenarios drawn from {', '.join(MODELS)} x deadline x objective x buy/rent x electricity")
    counts = Counter(s["model"] for s in items)
    print("in the run: " + ", ".join(f"{m} {counts[m]}" for m in MODELS))
    rows: list[dict[str, Any]] = []
    solve_ms: dict[tuple[str, int, str], float] = {}
    runs = [("local", 1), ("local", 2)] + ([] if args.no_ray else [("ray", 2)])
    keys = [(engine, workers, store) for engine, workers in runs for store in ("empty", "filled")]
    samples: dict[tuple[str, int, str], list[float]] = {k: [] for k in keys}
    for r in range(args.repeats):
        for engine, workers in runs:
            store = Path(tempfile.mkdtemp(prefix="bench-store-"))
            try:
                for state in ("empty", "filled"):  # the first run fills the store the second one loads
                    rate, res = throughput(items, engine, workers, store)
                    samples[(engine, workers, state)].append(rate)
                    rows = res.frame.to_dict(orient="records")
                    solve_ms.setdefault((engine, workers, state), float(res.frame["seconds"].median() * 1e3))
                    print(
                        f"round {r + 1}: {engine:5} workers={workers} store {state:6}: {rate:5.1f} scenarios/s "
                        f"({res.seconds:.1f} s); statuses {res.counts}; "
                        f"worker deaths {res.stats.get('worker_deaths', 0)}",
                        flush=True,
                    )
            finally:
                shutil.rmtree(store)
    rates = {k: statistics.median(v) for k, v in samples.items()}
    for (engine, workers, state), rate in rates.items():
        print(f"median over {args.repeats} round(s): {engine} workers={workers} store {state}: {rate:.1f} scenarios/s")
    machinery = [{"model": f"no-such-model-{i}", "deadline_days": 1} for i in range(2000)]
    for engine, workers in [("local", 2)]:
        out = Path(tempfile.mkdtemp(prefix="bench-machinery-"))
        t = time.perf_counter()
        res = run_batch(machinery, out, workers=workers, engine=engine, progress=False)
        dt = time.perf_counter() - t
        shutil.rmtree(out)
        per = (res.frame["seconds"].median() if len(res.frame) else 0) * 1e3
        print(
            f"machinery only ({engine}, {workers} workers): {len(machinery) / dt:.0f} scenarios/s "
            f"(median {per:.2f} ms in the worker per scenario)"
        )
    for (engine, workers, state), med in solve_ms.items():
        print(f"{engine} workers={workers} store {state}: median {med:.0f} ms per scenario inside the worker")
    for state in ("empty", "filled"):
        two, one = rates[("local", 2, state)], rates[("local", 1, state)]
        print(f"local speed-up 2 vs 1 worker, store {state}: {two / one:.2f}x")
        if ("ray", 2, state) in rates:
            print(f"Ray 2 workers vs local 2 workers, store {state}: {rates[('ray', 2, state)] / two - 1:+.1%}")
    breakdown(items)
    dt, q = resume_10k(rows)
    print(f"resume of 10,000 finished scenarios: {dt:.2f} s (of which the finished-ids query {q * 1e3:.0f} ms)")


if __name__ == "__main__":
    main()
