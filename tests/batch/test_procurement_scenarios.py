"""Batch scenarios as a procurement engineer writes them: each refused the way `planner solve` refuses it, worded in
the scenario's fields, and each plan row saying what was adjusted (scenarios run in-process through run_scenario, as
a worker runs them)."""

from __future__ import annotations

from planner.batch import run_scenario, scenario_id
from planner.data import Catalog
from planner.plan import PlanRequest, solve


def _scenario(**fields: object) -> dict[str, object]:
    s = dict(fields)
    s["id"] = scenario_id(s)
    return s


def test_fp8_on_gpus_without_fp8_is_bad_input_as_in_solve(shipped: Catalog) -> None:
    """A scenario {precision: fp8, gpus: [A100]} is bad input naming the GPUs and the precision to give, as
    `planner solve --precision fp8 --gpus A100` exits 2; with an fp8 GPU (B300) it plans."""
    row = run_scenario(_scenario(model="llama3-8b", deadline_days=30, precision="fp8", gpus=["A100"]), shipped)
    assert row["status"] == "bad_input", row
    assert "precision fp8: none of the allowed GPUs (a100-pcie-80gb, a100-sxm-80gb) has fp8" in row["message"]
    assert "give precision: bf16" in row["message"]
    row = run_scenario(_scenario(model="llama3-8b", deadline_days=30, precision="fp8", gpus=["B300"]), shipped)
    assert row["status"] == "optimal" and row["gpu"] == "b300", row


def test_a_plan_row_says_what_was_adjusted(shipped: Catalog) -> None:
    """A plan row's message carries the plan's notes, as `planner solve` prints them: a global batch rounded up to
    whole micro-batches is said."""
    from planner.plan import plan_notes

    fields = {"model": "llama3-8b", "deadline_days": 30, "gpus": ["H100"], "global_batch": 1001, "objective": "cost"}
    row = run_scenario(_scenario(**fields), shipped)
    req = PlanRequest.model_validate({**fields, "alternatives": 0})
    res = solve(req, shipped)
    assert res.plan is not None and row["status"] == "optimal"
    notes = plan_notes(shipped, req, res.plan)
    assert notes and row["message"] == "; ".join(notes)
    assert "global batch 1,001 was rounded up" in row["message"]


def test_filters_that_exclude_each_other_are_said_in_the_scenarios_fields(shipped: Catalog) -> None:
    """{gpus: [MI350X], fabrics: [xdr800]} in a sweep over fabrics is bad input saying which servers the fabric
    excludes and the fabric they take, in the scenario's fields."""
    row = run_scenario(_scenario(model="llama3-8b", deadline_days=30, gpus=["MI350X"], fabrics=["xdr800"]), shipped)
    assert row["status"] == "bad_input", row
    assert (
        "fabrics xdr800: none of the allowed servers (mi350x-8) can be built with it; they take ndr400"
        in (row["message"])
    )


def test_the_apps_batch_table_leads_with_status_and_plan(shipped: Catalog) -> None:
    """The app's batch results open with a count per status and lead with id, status and the plan (server, GPU,
    precision, nodes) as in the plan tables; the plan's GPU count is 'Gpu count' (a scenario's 'gpus' are the allowed
    GPU types); the scenario's JSON comes after the message."""
    import pandas as pd

    from planner.present import batch_results_table

    rows = [
        run_scenario(_scenario(model="llama3-8b", deadline_days=30, gpus=["B300"], objective="cost"), shipped),
        run_scenario(_scenario(model="llama3-8b", deadline_days=-3), shipped),
    ]
    head, table = batch_results_table(pd.DataFrame(rows))
    assert head == "2 scenarios: 1 optimal, 1 bad_input"
    assert list(table.columns[:6]) == ["Id", "Status", "Server", "GPU", "Precision", "Nodes"]  # as in the plan tables
    assert "Gpu count" in table.columns and "Gpus" not in table.columns
    assert list(table.columns).index("Scenario") > list(table.columns).index("Message")
    assert table["Cost (USD)"].iloc[0] == round(rows[0]["cost_usd"])


def test_a_too_large_search_is_said_in_the_scenarios_fields(shipped: Catalog) -> None:
    """A too-large search in a scenario is said in the scenario's fields ('give max_nodes ...'), with no
    command-line flag."""
    row = run_scenario(_scenario(model="llama3-8b", deadline_days=30, max_nodes=100_000), shipped)
    assert row["status"] == "bad_input", row
    assert "max_nodes 100,000 makes too large a search" in row["message"] and "give max_nodes " in row["message"]
    assert "--" not in row["message"]
