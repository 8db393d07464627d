"""The Plan page's inputs (Streamlit's AppTest; test_browser_plan_inputs.py does the same in Chromium): a workload's
own inputs follow it and its default deadline plans, the page keeps its inputs across pages, the amount of work has
thousands separators, and Allowed GPUs offers the GPUs some server carries."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from planner.data import Catalog
from planner.formatting import ceil_sig
from planner.plan import PlanRequest, PlanResult, solve
from planner.present import deadline_that_plans, default_inputs, inputs_request, trainable_gpus
from tests.app.test_app import metrics

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def app() -> AppTest:
    return AppTest.from_file(APP, default_timeout=180).run()


def api_default(shipped: Catalog, model: str, deadline_days: float = 30) -> PlanResult:
    """The API's answer to the workload's default request (its default amount of work, us-colo)."""
    return solve(PlanRequest(model=model, deadline_days=deadline_days, sites=["us-colo"]), shipped)


def shows_the_workloads_plan(at: AppTest, shipped: Catalog, model: str) -> None:
    """The page shows the API's plan of the workload's default request, with its own precision and framework
    in the boxes and no input problem."""
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    wl = shipped.workload(model)
    api = api_default(shipped, model)
    assert api.plan is not None
    card = metrics(at)
    assert card["Servers"] == f"{api.plan.nodes} x {api.plan.server}", (model, card)
    assert card["Precision"] == api.plan.estimate.precision == wl.precision
    assert at.selectbox(key="precision").value == wl.precision
    assert at.selectbox(key="framework").value == wl.framework
    command = " ".join(c.value for c in at.code)
    assert f"--model {model}" in command and "--framework" not in command and "--precision" not in command


def test_a_workload_round_trip_shows_each_workloads_plan_with_its_framework_and_precision(shipped: Catalog) -> None:
    """llama3-8b -> resnet50 -> llama3-8b and gpt3-175b (fp8) -> llama3-8b: each time the workload's own plan,
    precision and framework (resnet50 trains under Horovod, gpt3-175b in fp8), never the other workload's."""
    at = app()
    shows_the_workloads_plan(at, shipped, "llama3-8b")
    for model in ("resnet50", "llama3-8b", "gpt3-175b", "llama3-8b"):
        at.selectbox(key="model").set_value(model).run()
        shows_the_workloads_plan(at, shipped, model)


def test_a_changed_precision_and_framework_give_way_to_the_next_workloads_own() -> None:
    """Precision and framework follow the workload: an fp8 / pytorch-fsdp choice on llama3-8b gives way to
    resnet50's bf16 / horovod when resnet50 is chosen; inputs that do not depend on the workload are kept."""
    at = app()
    at.selectbox(key="precision").set_value("fp8").run()
    at.selectbox(key="framework").set_value("pytorch-fsdp").run()
    at.selectbox(key="objective").set_value("cost").run()
    at.selectbox(key="model").set_value("resnet50").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.selectbox(key="precision").value == "bf16" and at.selectbox(key="framework").value == "horovod"
    assert at.selectbox(key="objective").value == "cost"
    assert at.radio(key="unit").value == "samples"


@pytest.mark.parametrize("model", ["llama3-70b", "llama3-405b"])
def test_a_workload_too_large_for_30_days_gets_a_default_deadline_that_plans(shipped: Catalog, model: str) -> None:
    """llama3-70b and llama3-405b need more than 30 days at the default inputs: their default deadline is the
    shortest that plans (from the explanation of the 30-day request), rounded up to 2 significant figures, the
    page shows a plan at it and says why the default is not 30 days."""
    short = api_default(shipped, model)
    assert short.plan is None and short.explanation is not None
    need = next(r.needed for r in short.explanation.relaxations if r.requirement == "deadline")
    at = app()
    at.selectbox(key="model").set_value(model).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    days = at.number_input(key="deadline").value
    assert days == ceil_sig(need, 2) and days > 30
    api = api_default(shipped, model, days)
    assert api.plan is not None and metrics(at)["Servers"] == f"{api.plan.nodes} x {api.plan.server}"
    said = " ".join(c.value for c in at.caption) + (at.number_input(key="deadline").help or "")
    assert f"Default deadline for {model}" in said and "30 days is too short" in said


def test_the_default_deadline_is_30_days_where_30_days_plans(shipped: Catalog) -> None:
    req, problems = inputs_request(shipped, default_inputs(shipped, "llama3-8b"))
    assert req is not None and not problems
    assert deadline_that_plans(solve(req, shipped)) == (30.0, "a plan meets it at the default inputs")


def test_leaving_the_plan_page_and_coming_back_keeps_its_inputs() -> None:
    """Inputs set on the Plan page (workload, objective, deadline, budget, GPUs, servers owned, Pareto axes) are
    there again after a visit to another page, and so is the plan they make."""
    at = app()
    at.selectbox(key="model").set_value("resnet50").run()
    at.selectbox(key="objective").set_value("cost").run()
    at.number_input(key="deadline").set_value(45.0).run()
    at.checkbox(key="use_budget").check().run()
    at.number_input(key="budget").set_value(2e6).run()
    at.multiselect(key="gpus").set_value(["h100-sxm", "b200"]).run()
    at.text_input(key="owned").set_value("dgx-h100:2").run()
    at.selectbox(key="pareto_x").set_value("time").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    card = metrics(at)
    for page in ("Catalog", "Models", "Batch"):
        at.radio(key="page").set_value(page).run()
        at.radio(key="page").set_value("Plan").run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        assert at.selectbox(key="model").value == "resnet50"
        assert at.selectbox(key="objective").value == "cost"
        assert at.number_input(key="deadline").value == 45.0
        assert at.checkbox(key="use_budget").value and at.number_input(key="budget").value == 2e6
        assert at.multiselect(key="gpus").value == ["h100-sxm", "b200"]
        assert at.text_input(key="owned").value == "dgx-h100:2"
        assert at.selectbox(key="pareto_x").value == "time"
        assert metrics(at) == card


def test_the_amount_of_work_has_thousands_separators_and_reads_them_back() -> None:
    """The amount field shows 14,999,552,000,000 (not 14999552000000); an amount typed as 1.5e13 is read, shown
    with separators and planned; text that is no number is a message, not a plan."""
    at = app()
    box = at.text_input(key="amount_llama3-8b_tokens")
    assert box.value == "14,999,552,000,000"
    box.set_value("1.5e13").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.text_input(key="amount_llama3-8b_tokens").value == "15,000,000,000,000"
    assert any("--tokens 15000000000000" in c.value for c in at.code)
    at.text_input(key="amount_llama3-8b_tokens").set_value("lots").run()
    assert not at.exception and any("'lots' is not a number" in e.value for e in at.error) and not metrics(at)


def test_allowed_gpus_offers_only_the_gpus_some_server_carries(shipped: Catalog) -> None:
    carried = {s.gpu for s in shipped.gpu_servers()}
    assert set(shipped.gpus) - carried, "the shipped catalog has a GPU no server carries (the case this checks)"
    at = app()
    options = at.multiselect(key="gpus").options
    assert options == trainable_gpus(shipped) == sorted(carried)


def test_start_up_in_minutes_and_evaluations_become_the_requests_run_terms(shipped: Catalog) -> None:
    inputs = {**default_inputs(shipped, "llama3-8b"), "startup_min": 30.0, "evaluations": 20, "evaluation_samples": 5e3}
    req, problems = inputs_request(shipped, inputs)
    assert problems == [] and req is not None
    assert (req.startup_s, req.evaluations, req.evaluation_samples) == (1800.0, 20, 5000.0)
    req, problems = inputs_request(shipped, {**inputs, "evaluation_samples": 0.0})
    assert req is None and problems == [
        "Evaluations during the run needs Held-out samples per evaluation > 0 (got 0): give how many evaluations "
        "the run makes and the held-out samples in each, or neither."
    ]
    req, problems = inputs_request(shipped, {**inputs, "startup_min": -1.0})
    assert req is None and "start-up" in problems[0]


def test_the_command_line_says_what_it_needs_besides_itself_once_the_catalog_is_edited(shipped: Catalog) -> None:
    """The "same request on the command line" plans over the shipped catalog: after an edit on the Catalog page the
    page says that the command needs the edited tables (--catalog DIR) to give the same plan; before, it says
    nothing."""
    at = app()
    said = "the catalog as edited in this session"
    assert not any(said in c.value for c in at.caption)
    dearer = shipped.server("mi350x-8").model_copy(update={"price_usd": 9_310_000.0})
    at.session_state["catalog"] = shipped.replace(servers={**shipped.servers, "mi350x-8": dearer})
    at.session_state["catalog_version"] = "edited"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(said in c.value and "--catalog DIR" in c.value for c in at.caption)
