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
    """The plan card's label -> value (an HTML grid, so values wrap instead of being cut off)."""
    import html
    import re

    cards = [m.value for m in at.markdown if "plan-card" in m.value]
    if not cards:
        return {}
    pairs = re.findall(r'opacity:0.7">(.*?)</div><div class="plan-value"[^>]*>(.*?)</div>', cards[0])
    return {html.unescape(k): html.unescape(v) for k, v in pairs}


def default_request(**kw: object) -> PlanRequest:
    """The app's first request: llama3-8b, its default amount of work, 30 days, us-colo."""
    return PlanRequest.model_validate({"model": "llama3-8b", "deadline_days": 30, "sites": ["us-colo"], **kw})


@pytest.mark.parametrize("page", ["Plan", "Catalog", "Models", "Validation", "Fleet", "Batch"])
def test_every_page_renders_without_exception(page: str) -> None:
    at = app()
    at.radio(key="page").set_value(page).run()
    assert not at.exception, [e.value for e in at.exception]


def test_plan_page_shows_the_api_plan_and_follows_the_deadline() -> None:
    at = app()
    assert not at.exception
    api = solve(default_request())
    assert api.plan is not None
    assert metrics(at)["Servers"] == f"{api.plan.nodes} x {api.plan.server}"
    at.number_input(key="deadline").set_value(10).run()
    api10 = solve(default_request(deadline_days=10))
    assert api10.plan is not None and api10.plan.nodes > api.plan.nodes
    assert metrics(at)["Servers"] == f"{api10.plan.nodes} x {api10.plan.server}"


def test_changing_the_objective_changes_the_plan_as_the_api_says() -> None:
    at = app()
    at.selectbox(key="objective").set_value("time").run()
    api = solve(default_request(objective="time"))
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
    at.number_input(key="amount_llama3-8b_tokens").set_value(0.0).run()
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

    at.selectbox(key="fleet_example").set_value(at.selectbox(key="fleet_example").options[1]).run()
    at.button(key="fleet_run").click().run()  # the owned + bought + rented portfolio plans too
    assert not at.exception, [e.value for e in at.exception]


def test_switching_workload_or_unit_shows_its_default_amount_and_plan() -> None:
    at = app()
    at.number_input(key="amount_llama3-8b_tokens").set_value(1e12).run()
    at.selectbox(key="model").set_value("resnet50").run()
    assert not at.exception
    amount = at.number_input(key="amount_resnet50_samples")
    from planner import load_catalog

    wl = load_catalog().workload("resnet50")
    assert amount.value == wl.default_samples
    api = solve(PlanRequest(model="resnet50", samples=wl.default_samples, deadline_days=30))
    assert api.plan is not None and metrics(at)["Servers"] == f"{api.plan.nodes} x {api.plan.server}"
    at.radio(key="unit_resnet50").set_value("epochs").run()
    assert at.number_input(key="amount_resnet50_epochs").value == wl.default_samples / (wl.dataset_samples or 1)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("max_nodes", 0, "Max nodes must be"),
        ("max_nodes", 1_000_000, "Max nodes must be"),
        ("power", -5.0, "power envelope must be"),
        ("deadline", -1.0, "deadline must be"),
    ],
)
def test_an_invalid_input_says_so_and_hides_the_plan(key: str, value: float, message: str) -> None:
    at = app()
    assert metrics(at)
    at.number_input(key=key).set_value(value).run()
    assert not at.exception
    assert any(message in e.value for e in at.error)
    assert metrics(at) == {}


def test_a_negative_or_empty_budget_says_so_and_hides_the_plan() -> None:
    at = app()
    at.checkbox(key="use_budget").check().run()
    at.number_input(key="budget").set_value(-1.0).run()
    assert any("budget must be" in e.value for e in at.error) and metrics(at) == {}
    at.number_input(key="budget").set_value(None).run()
    assert any("budget must be" in e.value for e in at.error) and metrics(at) == {}


def test_why_this_plan_names_the_runner_up_per_gpu_type() -> None:
    from planner import views

    res = solve(default_request(alternatives=3))
    lines = views.why_this_plan(res)
    assert res.plan is not None and lines
    others = {a.gpu for a in res.alternatives} - {res.plan.gpu}
    for gpu in others:
        assert any(f"Runner-up on **{gpu}**" in line and "To win it would need" in line for line in lines)
    assert any(("Binding constraints" in line) or ("No constraint binds" in line) for line in lines)


def test_chart_downloads_are_self_contained(shipped) -> None:  # type: ignore[no-untyped-def]
    from planner import views

    res = solve(default_request(alternatives=1))
    chart = views.breakdown_chart(views.breakdown_frame(res))
    page = views.chart_html(chart)
    import re

    assert "cdn.jsdelivr" not in page and not re.search(r"<(script|link)[^>]+(src|href)=[\"']https?:", page)
    assert "vegaEmbed" in page and len(page) > 100_000  # the libraries are inlined
    assert views.chart_png(chart)[:8] == b"\x89PNG\r\n\x1a\n"


def test_scaling_chart_stays_within_max_nodes_and_starts_at_efficiency_one(shipped) -> None:  # type: ignore[no-untyped-def]
    from planner import views

    req = default_request(max_nodes=64)
    frame = views.scaling_frame(shipped, req)
    assert frame["nodes"].max() <= 64
    first = frame.sort_values("nodes").groupby("gpu").head(1)
    assert (first["scaling_efficiency"] - 1).abs().max() < 1e-12


def test_malformed_batch_csv_is_one_clear_error() -> None:
    from planner import views
    from planner.errors import PlannerInputError

    with pytest.raises(PlannerInputError, match=r"bad\.csv: not a valid CSV"):
        views.read_batch_upload("bad.csv", b'model,deadline_days\n"llama3-8b,3\n')


def test_fp8_workload_on_a_gpu_without_fp8_is_noted_on_the_plan_page() -> None:
    at = app()
    at.selectbox(key="model").set_value("gpt3-175b").run()
    at.multiselect(key="gpus").set_value(["a100-sxm-80gb"]).run()
    at.number_input(key="deadline").set_value(365.0).run()
    assert not at.exception
    api = solve(PlanRequest(model="gpt3-175b", deadline_days=365, gpus=["a100-sxm-80gb"]))
    assert api.plan is not None and metrics(at)["Servers"] == f"{api.plan.nodes} x {api.plan.server}"
    assert any("a100-sxm-80gb has no fp8: this plan computes in bf16" in w.value for w in at.warning)


def test_tables_for_people_have_readable_headers_and_rounded_numbers() -> None:
    from planner import views

    df = views.readable([{"facility_energy_kwh": 123456.789, "cost_usd": 0.123456, "time_to_train_days": 9.87654}])
    assert list(df.columns) == ["Facility energy (kWh)", "Cost (USD)", "Time to train (days)"]
    assert df.iloc[0].tolist() == [123500.0, 0.1235, 9.877]
    table = views.alternatives_table(solve(default_request(alternatives=1)))
    assert "Time to train (days)" in table.columns and not any("_" in c for c in table.columns)


def test_power_cap_points_are_labelled_once_each_and_the_plan_marked(shipped) -> None:  # type: ignore[no-untyped-def]
    from planner import views

    req = default_request()
    res = solve(req, shipped)
    assert res.plan is not None
    frame = views.power_cap_frame(shipped, req, res)
    named = [c for label in frame["label"] if label for c in label.split(", ")]
    assert sorted(named) == sorted(f"{c:.0%}" for c in frame["power_cap"])
    assert frame["plan"].sum() == 1 and float(frame.loc[frame["plan"], "power_cap"].iloc[0]) == res.plan.power_cap
    spec = views.power_cap_chart(frame, req.deadline_days).to_dict()
    assert any(layer.get("mark", {}).get("type") == "rule" for layer in spec["layer"])  # the deadline
