"""One benchmark, run on a base revision and on the working tree in one run, with the ratio of every figure.

Speed claims are ratios measured on the same machine in the same run (a shared machine's load moves absolute
times). This runs ``bench/SCRIPT`` from a temporary worktree of ``--base`` and from this checkout, alternating
``--rounds`` times, prints the machine's load, both outputs, and for every line whose label (its first field)
appears in both, the figures as new / base: below 1 for a time that fell, above 1 for a rate that rose. Both runs
use this checkout's version of the script (the same measurement of two versions of the planner), copied into the
base worktree.

Run: python bench/compare.py --base c905ea8 bench_solve.py --repeats 3 --no-synthetic
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NUMBER = re.compile(r"^-?[\d,]*\.?\d+(e[-+]?\d+)?$")


def run(tree: Path, script: str, args: list[str]) -> str:
    """The benchmark's output, run with the planner package of ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, str(tree / "bench" / script), *args],
        cwd=tree,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout


def fields(line: str) -> list[str]:
    """A table line's fields: split at '|' where it has them, else at runs of spaces."""
    parts = line.split("|") if "|" in line else re.split(r"\s{2,}", line.strip())
    return [p.strip() for p in parts if p.strip()]


def numbers(line: str) -> tuple[str, list[float]] | None:
    """(label, its numeric fields) of a table line, or None where it has no number."""
    f = fields(line)
    if len(f) < 2:
        return None
    values = [float(x.replace(",", "")) for x in f[1:] if NUMBER.match(x.replace(" ", ""))]
    return (f[0], values) if values else None


def ratios(base: str, new: str) -> list[str]:
    """For each label in both outputs: its figures as new / base."""
    seen = dict(x for x in map(numbers, base.splitlines()) if x is not None)
    out = []
    for line in new.splitlines():
        x = numbers(line)
        if x is None or x[0] not in seen or len(seen[x[0]]) != len(x[1]):
            continue
        r = ["-" if b == 0 else f"{n / b:.2f}" for b, n in zip(seen[x[0]], x[1], strict=True)]
        out.append(f"{x[0]} | " + " | ".join(r))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="git revision to compare against (e.g. a commit of main)")
    ap.add_argument("--rounds", type=int, default=1, help="alternating runs of each; the last round's are compared")
    ap.add_argument("script", help="a script in bench/, e.g. bench_solve.py")
    ap.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base_tree = Path(tmp) / "base"
        subprocess.run(["git", "worktree", "add", "--detach", str(base_tree), a.base], cwd=ROOT, check=True)
        try:
            shutil.copy(ROOT / "bench" / a.script, base_tree / "bench" / a.script)
            print(f"load average before: {os.getloadavg()}")
            base_out = new_out = ""
            for _ in range(a.rounds):
                base_out = run(base_tree, a.script, a.args)
                new_out = run(ROOT, a.script, a.args)
            print(f"load average after: {os.getloadavg()}")
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base_tree)], cwd=ROOT, check=False)
    print(f"\n== base {a.base}\n{base_out}\n== working tree\n{new_out}\n== new / base")
    print("\n".join(ratios(base_out, new_out)))


if __name__ == "__main__":
    main()
