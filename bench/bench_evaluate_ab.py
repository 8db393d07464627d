"""A/B of the exact model's speed against an earlier commit, measured in one run on this machine.

Checks the earlier commit out into a temporary git worktree and runs this tree's bench/bench_evaluate.py against
each side's package (PYTHONPATH) in alternating subprocesses -- the same workloads, each side's shipped catalog --
in CPU time of the process, then prints the median configurations/s of each side and their ratio.
Run: python bench/bench_evaluate_ab.py --base <commit>
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_side(tree: Path, repeats: int, models: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, str(ROOT / "bench" / "bench_evaluate.py"), "--repeats", str(repeats), "--clock", "cpu"]
    if models:
        cmd += ["--models", models]
    out = subprocess.run(cmd, env=env, cwd=tree, capture_output=True, text=True, check=True).stdout
    rates = {}
    for line in out.splitlines():
        m = re.match(r"^(\S.*?)\s+([\d,]+)\s+([\d.]+)\s+([\d,]+)$", line)
        if m:
            rates[m.group(1).strip()] = float(m.group(4).replace(",", ""))
    return rates


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True, help="commit to compare against")
    ap.add_argument("--head", default="", help="commit to measure instead of this working tree")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds per side")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--models", default="")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        trees = [base]
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(base), args.base], cwd=ROOT, check=True, capture_output=True
        )
        head = ROOT
        if args.head:
            head = Path(tmp) / "head"
            trees.append(head)
            subprocess.run(
                ["git", "worktree", "add", "--detach", str(head), args.head], cwd=ROOT, check=True, capture_output=True
            )
        try:
            a: dict[str, list[float]] = {}
            b: dict[str, list[float]] = {}
            for _ in range(args.rounds):
                for side, tree in ((a, base), (b, head)):
                    for k, v in run_side(tree, args.repeats, args.models).items():
                        side.setdefault(k, []).append(v)
        finally:
            for tree in trees:
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True)
    print(f"{'workload':18} {'base cfg/s':>12} {'this cfg/s':>12} {'this/base':>10}")
    for k in a:
        if k in b:
            ma, mb = statistics.median(a[k]), statistics.median(b[k])
            print(f"{k:18} {ma:>12,.0f} {mb:>12,.0f} {mb / ma:>10.2f}")


if __name__ == "__main__":
    main()
