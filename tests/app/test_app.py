"""The Streamlit app: every page renders, inputs change the plan as the API says, bad input is a message.

AppTest runs app.py in-process; test_browser.py drives the real server in Chromium.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from planner.plan import PlanRequest, solve

APP = str(Path(__file__).resolve().parents[2] / "app.py")


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
    at.text_input(key="amount_llama3-8b_tokens").set_value("0").run()
    assert not at.exception and any("must be positive" in e.value for e in at.error)


def test_pareto_tab_computes_a_front() -> None:
    """...with units in its table's compact headers ('Cost (USD)', not a bare 'Cost', 'Energy' or 'Epsilon'), the
    objectives first, and what every point shares said once above the table (present.pareto_view), not per row."""
    at = app()
    at.checkbox(key="pareto_on").check().run()
    assert not at.exception
    front = at.dataframe[-1].value
    assert list(front.columns[:3]) == ["Cost (USD)", "Energy (kWh)", "Time (days)"], front.columns
    assert "Energy limit (kWh)" in front.columns
    assert not {"Epsilon", "Cost", "Energy", "Precision", "Buy / rent", "Site", "Solver status"} & set(front.columns)
    assert any(c.value.startswith("Every row: Precision: bf16;") for c in at.caption), [c.value for c in at.caption]


def test_catalog_page_applies_a_valid_table() -> None:
    at = app()
    at.radio(key="page").set_value("Catalog").run()
    at.button(key="apply").click().run()  # unchanged table validates
    assert not at.exception and any("Using the edited" in s.value for s in at.success)


def test_a_bad_catalog_edit_is_reported_per_field_and_changes_nothing(shipped) -> None:  # type: ignore[no-untyped-def]
    from planner import present

    df = present.catalog_table(shipped, "servers")
    df.loc[df["id"] == "dgx-h100", "gpus_per_node"] = -8
    df.loc[df["id"] == "l40s-4", "psu_efficiency"] = 2.0
    new, problems = present.apply_table(shipped, "servers", df)
    assert new is None
    assert any("id=dgx-h100" in p and "gpus_per_node" in p for p in problems)
    assert any("id=l40s-4" in p and "psu_efficiency" in p for p in problems)


def test_a_malformed_upload_names_the_file() -> None:
    from planner import present
    from planner.errors import PlannerInputError

    with pytest.raises(PlannerInputError, match=r"servers\.yaml: not valid YAML"):
        present.read_upload("servers.yaml", b"- id: [broken\n")
    with pytest.raises(PlannerInputError, match=r"my\.yaml: name: Field required"):
        present.add_workload(__import__("planner").load_catalog(), "my.yaml", b"id: x\nfamily: llm\n")


def test_fleet_page_opens_on_the_portfolio_and_shows_kept_retired_bought_rented() -> None:
    import re

    import yaml

    at = app()
    at.radio(key="page").set_value("Fleet").run()
    assert at.selectbox(key="fleet_example").value.startswith("portfolio.yaml")  # the owned + bought + rented one
    at.button(key="fleet_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("fleet" in h.value.lower() for h in at.subheader)
    owned = yaml.safe_load((Path(APP).parent / "examples" / "portfolio.yaml").read_text())["owned"]
    text = " ".join(m.value for m in at.markdown)
    kept = re.search(r"\*\*Keeps\*\* (\d+) of (\d+) owned dgx-a100-80gb on hdr200", text)
    assert kept is not None and int(kept.group(2)) == owned[0]["count"], text
    assert "**Owned servers: kept and retired**" in text and "**Bought**" in text and "**Rented**" in text
    # the tables are the plan's own rows (kept + retired = owned), and the plan stays on screen after a rerun
    from planner import present

    path = Path(APP).parent / "examples" / "portfolio.yaml"
    req = present.read_fleet_upload(path.name, path.read_bytes())
    plan, _ = at.session_state[f"fleet_plan::shipped::{req.model_dump_json()}"]
    table = next(d.value for d in at.dataframe if "Retired" in d.value.columns)
    assert (table["Kept"] + table["Retired"] == table["Owned"]).all()
    assert int(table["Kept"].sum()) == int(kept.group(1))
    for p in plan.purchases:
        if p["kind"] != "rent" and p["added"]:
            assert f"**Buys** {p['added']} x {p['server']}" in text
        if p["kind"] == "rent":
            assert f"**Rents** {p['nodes']} x {p['server']}" in text
    at.run()
    assert any("fleet" in h.value.lower() for h in at.subheader)


def test_fleet_page_plans_the_small_example_too() -> None:
    at = app()
    at.radio(key="page").set_value("Fleet").run()
    options = at.selectbox(key="fleet_example").options
    at.selectbox(key="fleet_example").set_value(next(o for o in options if o.startswith("fleet.yaml"))).run()
    at.button(key="fleet_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("Bought" in m.value for m in at.markdown)


def _shows(at: AppTest, api: object) -> None:
    """The page shows the API's answer: its plan on the card, or its explanation."""
    assert not at.exception, [e.value for e in at.exception]
    plan = api.plan  # type: ignore[attr-defined]
    if plan is None:
        assert any("No feasible plan" in e.value for e in at.error)
    else:
        assert metrics(at)["Servers"] == f"{plan.nodes} x {plan.server}" and metrics(at)["Layout"] == plan.layout


def test_precision_and_framework_go_through_the_request() -> None:
    at = app()
    at.selectbox(key="precision").set_value("fp8").run()
    _shows(at, solve(default_request(precision="fp8")))
    assert any("--precision fp8" in c.value for c in at.code)
    at.selectbox(key="framework").set_value("pytorch-fsdp").run()
    _shows(at, solve(default_request(precision="fp8", framework="pytorch-fsdp")))
    assert any("--precision fp8 --framework pytorch-fsdp" in c.value for c in at.code)
    help_text = at.selectbox(key="framework").help or ""
    assert "megatron" in help_text and "overlap" in help_text  # the workload's default and what a profile sets


def test_servers_you_own_go_through_the_request() -> None:
    at = app()
    at.selectbox(key="objective").set_value("cost").run()
    at.text_input(key="owned").set_value("dgx-a100-80gb:64:hdr200:1").run()
    api = solve(
        default_request(
            objective="cost", owned=[{"server": "dgx-a100-80gb", "count": 64, "fabric": "hdr200", "age_years": 1}]
        )
    )
    _shows(at, api)
    assert api.plan is not None
    assert metrics(at)["Owned servers"].startswith(f"{api.plan.owned_nodes:,} used, ")
    assert any("--owned dgx-a100-80gb:64:hdr200:1" in c.value for c in at.code)
    at.text_input(key="owned").set_value("dgx-a100-80gb:64:ndr400").run()
    assert not at.exception and any("fabric 'ndr400' is not one it can be built with" in e.value for e in at.error)
    at.text_input(key="owned").set_value("dgx-a100-80gb").run()
    assert not at.exception and any("is not SERVER:COUNT" in e.value for e in at.error)


def test_allowed_gpus_are_exactly_the_chosen_ones() -> None:
    """The app passes the servers that carry exactly the chosen GPUs, and shows them in the command: the request's
    GPU patterns match substrings, so passing the pattern b200 alone would also allow gb200 and put the cost plan
    on a GB200 NVL72."""
    at = app()
    at.selectbox(key="objective").set_value("cost").run()
    at.multiselect(key="gpus").set_value(["b200"]).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert metrics(at)["GPUs"].endswith(" x b200"), metrics(at)
    assert any("--servers hgx-b200" in c.value for c in at.code)


def test_the_service_life_goes_through_the_request() -> None:
    """The bought servers' service life is an input of the app as `--life-years` is of the command line: the plan
    is amortized over it (not a fixed 4 years), and a life beyond the request's bound is a message, not a plan."""
    at = app()
    at.selectbox(key="objective").set_value("cost").run()
    at.number_input(key="life_years").set_value(1.5).run()
    api = solve(default_request(objective="cost", life_years=1.5))
    _shows(at, api)
    assert api.plan is not None and metrics(at)["Cost (this run)"] == f"${api.plan.cost_usd:,.0f}"
    assert any("--life-years 1.5" in c.value for c in at.code)
    assert "years" in (at.number_input(key="life_years").help or "")
    at.number_input(key="life_years").set_value(16.0).run()  # beyond the request's bound: a message, no plan
    assert not at.exception and any("service life" in e.value and "15" in e.value for e in at.error)
    assert not metrics(at)


def test_a_too_large_search_names_the_apps_inputs() -> None:
    """A search too large to be exact is a message in the app's words: it names the Max nodes input and a limit
    that would do -- no command-line flag ('--max-nodes', '--gpus') that the app does not have."""
    at = app()
    at.number_input(key="max_nodes").set_value(100_000).run()
    text = " ".join(e.value for e in at.error)
    assert not at.exception and "Max nodes 100,000 makes too large a search" in text and "--" not in text, text
    assert re.search(r"set Max nodes to [\d,]+ or less, or allow fewer GPUs or fabrics", text), text
    assert not metrics(at)


def test_gpus_and_fabrics_that_exclude_each_other_say_what_would_do() -> None:
    """Allowed GPUs and fabrics that no server combines are a message naming both sides -- the servers of the
    allowed GPUs and the servers that take the fabric -- not a bare 'no server in the catalog matches'."""
    at = app()
    at.multiselect(key="gpus").set_value(["mi325x"]).run()
    at.multiselect(key="fabrics").set_value(["xdr800"]).run()
    text = " ".join(e.value for e in at.error)
    assert not at.exception and "Allowed fabrics xdr800: none of the servers of the allowed GPUs (mi325x-8)" in text
    assert "servers that take xdr800 (hgx-b300, gb300-nvl72)" in text and not metrics(at)


def test_fp8_where_no_allowed_gpu_has_it_is_a_message_as_on_the_command_line() -> None:
    """fp8 where none of the allowed GPUs has it is a message and no plan, as `planner solve` exits 2 for it --
    a bf16 plan beside a command that exits 2 would disagree with the command line. Once some allowed GPU has fp8,
    there is a plan."""
    at = app()
    at.multiselect(key="gpus").set_value(["a100-sxm-80gb"]).run()
    at.selectbox(key="precision").set_value("fp8").run()
    text = " ".join(e.value for e in at.error)
    assert not at.exception and "Precision fp8: none of the allowed GPUs (a100-sxm-80gb) has fp8" in text
    assert not metrics(at)
    at.multiselect(key="gpus").set_value(["a100-sxm-80gb", "b300"]).run()  # some have fp8: a plan
    assert not at.error and metrics(at)
