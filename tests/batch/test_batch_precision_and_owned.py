"""`planner batch` over precisions and owned servers: what a procurement engineer sweeping them reads.

* A result row says the precision its plan computes in (``precision``) -- an fp4 scenario whose plan lands on a GPU
  without fp4 computes in fp8 -- and, with owned servers, how many of the plan's nodes are owned
  (``owned_nodes``) and how many owned ones it leaves unused (``owned_unused_nodes``): each equal to what
  ``solve`` of the same request reports. The report's ranked table shows the precision computed in.
* A scenario file whose ``base`` is not a mapping is bad input (exit 2, one line), not an internal error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from planner.batch import expand, report, run_batch, run_scenario, to_request
from planner.data import Catalog
from planner.errors import PlannerInputError
from planner.plan import solve

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


def test_an_interrupted_batch_leaves_results_csv_with_every_finished_scenario(tmp_path: Path) -> None:
    """Ctrl-C (SIGINT to the process group) of a real `planner batch`: results.csv holds exactly the rows the store
    committed (written on the interruption, not only when a run completes), and the rerun resumes."""
    import signal

    from tests.batch.test_batch_faults import children, rows_in, start, wait_gone, wait_rows

    spec = {
        "base": {"model": "resnet50", "objective": "energy"},
        "grid": {"deadline_days": [0.2, 0.5, 1], "gpus": [["A100"], ["H100"]], "purchase": ["buy", "rent"]},
    }
    total = len(expand(spec))  # 12
    spec_file = tmp_path / "grid.yaml"
    spec_file.write_text(json.dumps(spec))
    out = tmp_path / "out"
    proc = start(spec_file, out, "--workers", "1")
    wait_rows(out, 2, proc)
    kids = children(proc.pid)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert wait_gone(kids, timeout=30) == []
    assert proc.returncode == 130 and "interrupted by SIGINT" in err and "results.csv" in err, err
    committed = {i for i, _ in rows_in(out)}
    assert 2 <= len(committed) < total, f"the signal came too late ({len(committed)}/{total})"
    assert set(pd.read_csv(out / "results.csv")["id"]) == committed
    res = run_batch(str(spec_file), out, workers=1, progress=False)
    assert res.complete and res.ran == total - len(committed)
    assert len(pd.read_csv(out / "results.csv")) == total


def test_a_misspelt_field_names_the_field_it_meant() -> None:
    (s,) = expand({"base": {"model": "llama3-8b", "tokens": 1e12, "deadline_dayz": 30}})
    with pytest.raises(PlannerInputError) as exc:
        to_request(s)
    text = str(exc.value)
    assert "unknown field 'deadline_dayz' (did you mean deadline_days?)" in text
    assert "electricity_price_multiplier" in text  # the catalog overrides are fields a scenario may set too
    # left empty (a blank CSV column, or null) it is still named, not dropped silently
    (empty,) = expand({"base": {"model": "llama3-8b", "tokens": 1e12, "deadline_days": 30, "deadline_dayz": None}})
    with pytest.raises(PlannerInputError, match=r"unknown field 'deadline_dayz'"):
        to_request(empty)


def test_a_scenario_gives_owned_servers_as_the_command_line_does(tmp_path: Path) -> None:
    """A scenario's owned servers in the command line's form, SERVER:COUNT[:FABRIC[:AGE_YEARS]] (several as a;b in a
    CSV cell, comma-separated in YAML), read as --owned reads them; an empty cell is the default (none); a malformed
    entry is bad input naming the field."""
    from planner.batch import load_scenarios

    f = tmp_path / "s.csv"
    f.write_text(
        "model,tokens,deadline_days,owned\n"
        "llama3-8b,1e11,30,dgx-a100-80gb:8:hdr200:1;dgx-h100:4\n"
        "llama3-8b,1e11,30,\n"
        "llama3-8b,1e11,30,dgx-a100-80gb:x\n"
    )
    short, empty, bad = load_scenarios(f)
    req, _ = to_request(short)
    assert [(o.server, o.count, o.fabric, o.age_years) for o in req.owned] == [
        ("dgx-a100-80gb", 8, "hdr200", 1.0),
        ("dgx-h100", 4, None, 0.0),
    ]
    assert to_request(empty)[0].owned == []
    with pytest.raises(PlannerInputError, match=r"owned: 'dgx-a100-80gb:x' is not SERVER:COUNT"):
        to_request(bad)
    yaml_form, _ = to_request(expand({"base": {**BASE, "owned": "dgx-a100-80gb:8:hdr200:1,dgx-h100:4"}})[0])
    assert yaml_form.owned == req.owned


def test_the_reports_relaxation_is_a_minimum_that_suffices(shipped: Catalog) -> None:
    """The report's relaxations round the needed value up, as the solver's message states it ('needs 53.19 days'
    beside 'a deadline of at least 53.19 days'): a stated minimum always suffices."""
    import re

    from planner.batch.report import relaxation_text

    rel = [{"requirement": "deadline", "given": 1.0, "needed": 53.1805, "unit": "days"}]
    assert relaxation_text(json.dumps(rel)) == "deadline: given 1, needs 53.19 days"
    exact = [{"requirement": "nodes", "given": 64.0, "needed": 1836.0, "unit": "nodes"}]
    assert relaxation_text(json.dumps(exact)) == "nodes: given 64, needs 1,836 nodes"  # a whole number stays itself
    # and the report's figures are the ones the solver's message states, on a real infeasible scenario
    (s,) = expand({"base": {**BASE, "deadline_days": 0.5, "gpus": ["H100"]}})
    row = run_scenario(s, shipped)
    assert row["status"] == "infeasible" and row.get("relaxations")
    for figure in re.findall(r"needs ([0-9.,]+)", relaxation_text(row["relaxations"])):
        assert f"at least {figure}" in row["message"], (figure, row["message"])
