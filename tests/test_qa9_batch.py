"""QA walk of `planner batch` (session 9): what a procurement engineer sweeping precisions and owned servers reads.

* A result row says the precision its plan computes in (``precision``) -- an fp4 scenario whose plan lands on a GPU
  without fp4 computes in fp8 -- and, with owned servers, how many of the plan's nodes are owned
  (``owned_nodes``) and how many owned ones it leaves unused (``owned_unused_nodes``): each equal to what
  ``solve`` of the same request reports. The report's ranked table shows the precision computed in.
* A scenario file whose ``base`` is not a mapping is bad input (exit 2, one line), not an internal error.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from planner.batch import expand, report, run_batch
from planner.batch_scenarios import run_scenario, to_request
from planner.data import Catalog
from planner.errors import PlannerInputError
from planner.optimize import solve

BASE = {"model": "llama3-8b", "tokens": 1.0e12, "deadline_days": 30, "objective": "cost"}


@pytest.mark.parametrize(
    ("extra", "gpu"),
    [
        ({"precision": "fp4", "gpus": ["B200"]}, "b200"),
        # fp4 asked for, B200 allowed, but the owned H100 cost no capex: the plan runs on them, in fp8
        ({"precision": "fp4", "gpus": ["H100", "B200"], "owned": [{"server": "dgx-h100", "count": 16}]}, "h100-sxm"),
    ],
    ids=["fp4-on-b200", "fp4-on-owned-h100"],
)
def test_a_batch_row_says_the_precision_and_owned_nodes_of_its_plan_as_solve_does(
    shipped: Catalog, extra: dict[str, object], gpu: str
) -> None:
    (s,) = expand({"base": {**BASE, **extra}})
    row = run_scenario(s, shipped)
    req, _ = to_request(s)
    plan = solve(req, shipped).plan
    assert row["status"] == "optimal" and plan is not None
    assert row["gpu"] == plan.estimate.gpu == gpu
    assert row["precision"] == plan.estimate.precision
    assert (row["owned_nodes"], row["owned_unused_nodes"]) == (plan.owned_nodes, plan.owned_unused_nodes)
    if gpu == "h100-sxm":  # the fallback is in the column and said in the message
        assert row["precision"] == "fp8" and "no fp4" in row["message"]
        assert row["owned_nodes"] == plan.nodes > 0
    else:
        assert row["precision"] == "fp4"


def test_the_results_csv_and_report_carry_the_precision_computed_in(tmp_path: Path) -> None:
    out = tmp_path / "out"
    spec = {"base": {**BASE, "gpus": ["B200"]}, "grid": {"precision": ["bf16", "fp4"]}}
    run_batch(spec, out, workers=1, progress=False)
    df = pd.read_csv(out / "results.csv")
    assert sorted(df["precision"]) == ["bf16", "fp4"]
    assert {"owned_nodes", "owned_unused_nodes"} <= set(df.columns)
    report(out)
    text = (out / "report.md").read_text()
    assert "computes in" in text


@pytest.mark.parametrize("base", [[1, 2], 3, "llama3-8b"])
def test_a_base_that_is_not_a_mapping_is_bad_input(base: object) -> None:
    with pytest.raises(PlannerInputError, match="base: a mapping of request fields"):
        expand({"base": base})


def test_the_cli_says_a_base_list_is_bad_input_without_a_traceback(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text("base: [1, 2]\n")
    r = subprocess.run(
        [sys.executable, "-m", "planner.cli", "batch", str(f), "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2, r.stderr
    assert "base: a mapping" in r.stderr and "Traceback" not in r.stderr and "internal error" not in r.stderr
