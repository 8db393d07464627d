"""App responsiveness: time for the plan page to re-plan after an input change on the shipped catalog.

Runs app.py in-process with Streamlit's AppTest (the same script a browser session runs), warms it once,
then changes the deadline (a new solve each time), the objective and the workload (the amount of work resets to
the new workload's default, a new solve); medians of --repeats changes.
Run: python bench/bench_app.py [--repeats 7]
Today's figure: the README's "Measured" table (docs/PERFORMANCE.md says how it is measured).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    at = AppTest.from_file(APP, default_timeout=120).run()
    deadline_s, objective_s, workload_s = [], [], []
    for i in range(args.repeats):
        t = time.perf_counter()
        at.number_input(key="deadline").set_value(20 + i).run()
        deadline_s.append(time.perf_counter() - t)
        t = time.perf_counter()
        at.selectbox(key="objective").set_value(["cost", "energy", "carbon", "time"][i % 4]).run()
        objective_s.append(time.perf_counter() - t)
        t = time.perf_counter()
        at.selectbox(key="model").set_value(["bert-large", "llama3-8b"][i % 2]).run()
        workload_s.append(time.perf_counter() - t)
        assert not at.exception
    print(
        f"re-plan after a deadline change: median {statistics.median(deadline_s):.2f} s "
        f"(max {max(deadline_s):.2f} s); after an objective change: median {statistics.median(objective_s):.2f} s; "
        f"after a workload change: median {statistics.median(workload_s):.2f} s"
    )


if __name__ == "__main__":
    main()
