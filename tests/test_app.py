"""The Streamlit app: every page renders, inputs change the plan as the API says, bad input is a message.

AppTest runs app.py in-process; test_browser.py drives the real server in Chromium.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from planner.optimize import PlanRequest, solve

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def app() -> AppTest:
    return AppTest.from_file(APP, default_timeout=120).run()


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: str(m.value) for m in at.metric}


@pytest.mark.parametrize("page", ["Plan", "Catalog", "Models", "Validation", "Fleet", "Batch"])
def test_every_page_renders_without_exception(page: str) -> None:
    at = app()
    at.radio(key="page").set_value(page).run()
    assert not at.exception, [e.value for e in at.exception]


def test_plan_page_shows_the_api_plan_and_follows_the_deadline() -> None:
    at = app()
    assert not at.exception
    api = solve(PlanRequest(model="llama3-8b", tokens=1e12, deadline_days=30, sites=["us-colo"]))
    assert api.plan is not None
    assert metrics(at)["Servers"] == f"{api.plan.nodes} x {api.plan.server}"
    at.number_input(key="deadline").set_value(10).run()
    api10 = solve(PlanRequest(model="llama3-8b", tokens=1e12, deadline_days=10, sites=["us-colo"]))
    assert api10.plan is not None and api10.plan.nodes > api.plan.nodes
    assert metrics(at)["Servers"] == f"{api10.plan.nodes} x {api10.plan.server}"


def test_changing_the_objective_changes_the_plan_as_the_api_says() -> None:
    at = app()
    at.selectbox(key="objective").set_value("time").run()
    api = solve(PlanRequest(model="llama3-8b", tokens=1e12, deadline_days=30, objective="time"))
    assert api.plan is not None
    assert metrics(at)["Servers"] == f"{api.plan.nodes} x {api.plan.server}"


def test_impossible_deadline_shows_the_explanation() -> None:
    at = app()
    at.number_input(key="deadline").set_value(0.01).run()
    assert not at.exception
    text = " ".join(e.value for e in at.error)
    assert "No feasible plan" in text and "deadline of at least" in text


def test_zero_budget_is_a_clear_message() -> None:
    at = app()
    at.checkbox(key="use_budget").check().run()
    at.number_input(key="budget").set_value(0.0).run()
    assert not at.exception
    text = " ".join(e.value for e in at.error)
    assert "No feasible plan" in text and "budget of at least" in text


def test_zero_work_is_a_clear_message() -> None:
    at = app()
    at.number_input(key="amount").set_value(0.0).run()
    assert not at.exception and any("must be positive" in e.value for e in at.error)


def test_pareto_tab_computes_a_front() -> None:
    at = app()
    at.checkbox(key="pareto_on").check().run()
    assert not at.exception


def test_catalog_page_applies_a_valid_table() -> None:
    at = app()
    at.radio(key="page").set_value("Catalog").run()
    at.button(key="apply").click().run()  # unchanged table validates
    assert not at.exception and any("Using the edited" in s.value for s in at.success)


def test_a_bad_catalog_edit_is_reported_per_field_and_changes_nothing(shipped) -> None:  # type: ignore[no-untyped-def]
    from planner import views

    df = views.catalog_table(shipped, "servers")
    df.loc[df["id"] == "dgx-h100", "gpus_per_node"] = -8
    df.loc[df["id"] == "l40s-4", "psu_efficiency"] = 2.0
    new, problems = views.apply_table(shipped, "servers", df)
    assert new is None
    assert any("id=dgx-h100" in p and "gpus_per_node" in p for p in problems)
    assert any("id=l40s-4" in p and "psu_efficiency" in p for p in problems)


def test_a_malformed_upload_names_the_file() -> None:
    from planner import views
    from planner.errors import PlannerInputError

    with pytest.raises(PlannerInputError, match=r"servers\.yaml: not valid YAML"):
        views.read_upload("servers.yaml", b"- id: [broken\n")
    with pytest.raises(PlannerInputError, match=r"my\.yaml: name: Field required"):
        views.add_workload(__import__("planner").load_catalog(), "my.yaml", b"id: x\nfamily: llm\n")


def test_fleet_page_plans_the_example_portfolio() -> None:
    at = app()
    at.radio(key="page").set_value("Fleet").run()
    at.button(key="fleet_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("fleet" in h.value.lower() for h in at.subheader)
