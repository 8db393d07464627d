"""Median / worst |error| binned by scale for any revision: the before/after table of a model change.

Checks REV out into a temporary git worktree and, with that revision's own package and catalog, runs its
``planner.validation.run_cases`` plus ``at_scale_cases`` where the revision has them apart (revisions whose
``run_cases`` has no case above 128 GPUs), then bins the time and throughput cases by the GPUs of the run as
docs/VALIDATION.md does. Without --rev it measures this tree.
Run: python bench/validation_by_scale.py --rev <commit> ; python bench/validation_by_scale.py
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

INNER = r"""
import re, sys
import numpy as np, pandas as pd
import planner.validation as V
from planner.data import load_catalog, reference_dir
cat = load_catalog(); ref = reference_dir(None)
cases = V.run_cases(cat, ref)
if hasattr(V, "at_scale_cases") and not any(getattr(c, "gpus", 0) > 128 for c in cases):
    cases += V.at_scale_cases(cat, ref)
seen, rows = set(), []
for c in cases:
    if c.kind not in ("time_to_train", "throughput") or (c.kind, c.name) in seen:
        continue
    seen.add((c.kind, c.name))
    g = getattr(c, "gpus", 0)
    if not g:
        m = re.search(r"\((\d+) GPUs", c.name) or re.search(r"on (\d+)(?:\.0)? A100", c.name)
        g = int(m.group(1)) if m else (8 if "8xH100" in c.name else 0)
    rows.append({"split": c.split, "gpus": g, "err": abs(c.error)})
df = pd.DataFrame(rows)
bins = [(1, 64, "<= 64"), (65, 512, "65-512"), (513, 4096, "513-4,096"), (4097, 10**9, "> 4,096")]
df["bin"] = [next(label for lo, hi, label in bins if lo <= g <= hi) for g in df.gpus]
for split in ("test", "all"):
    d = df if split == "all" else df[df.split == "test"]
    t = d.groupby("bin", sort=False).err.agg(cases="size", median_pct=lambda x: 100 * np.median(x),
                                             worst_pct=lambda x: 100 * np.max(x))
    print(f"time / throughput, {split} cases"); print(t.round(1).to_string()); print()
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rev", default="", help="revision to measure (default: this working tree)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tree = ROOT
        if args.rev:
            tree = Path(tmp) / "rev"
            subprocess.run(
                ["git", "worktree", "add", "--detach", str(tree), args.rev], cwd=ROOT, check=True, capture_output=True
            )
        try:
            env = {"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"}
            subprocess.run([sys.executable, "-c", INNER], cwd=tree, env=env, check=True)
        finally:
            if args.rev:
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True)


if __name__ == "__main__":
    main()
