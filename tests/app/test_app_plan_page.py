"""What the app's pages show a new user (the present-layer views behind app.py): the scaling chart limited to the
allowed hardware, a scenario or fleet file read as the command line reads it, fleet headlines and tables with
units and whole amounts, chart tooltips with units, and the precision on the plan card and its alternatives."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from planner.data import Catalog
from planner.errors import PlannerInputError
from planner.plan import PlanRequest
from planner.present import scaling_frame


def test_the_scaling_chart_shows_only_the_allowed_gpus_servers_and_fabrics(shipped: Catalog) -> None:
    """With B200 and H100 allowed, the scaling chart plots those two GPU types and their servers only -- the
    catalog's other GPUs (A100, GB200, MI300X, L40S, ...) beside the plan would read as options."""
    req = PlanRequest(model="llama3-8b", deadline_days=30, servers=["hgx-b200", "dgx-h100"], max_nodes=16)
    frame = scaling_frame(shipped, req)
    assert set(frame["gpu"]) == {"b200", "h100-sxm"} and set(frame["server"]) == {"hgx-b200", "dgx-h100"}
    # a GPU pattern and a fabric restriction follow the request's rules too (B200 does not allow gb200)
    req = PlanRequest(model="llama3-8b", deadline_days=30, gpus=["B200"], fabrics=["roce400"], max_nodes=16)
    assert set(scaling_frame(shipped, req)["gpu"]) == {"b200"}


def test_the_app_reads_a_scenario_file_as_planner_batch_does(tmp_path: Path) -> None:
    """The app's batch page reads a YAML or CSV scenario file into the same scenarios as `planner batch FILE`:
    ``tokens: 1e12`` a number (not a string, as YAML 1.1 rules would give), a CSV cell ``30`` a number. The same
    scenarios have the same ids, so the two runs' results match and a rerun on the command line resumes the app's."""
    from planner.batch import load_scenarios
    from planner.present import read_batch_upload

    text = "base:\n  model: llama3-8b\n  tokens: 1e12\n  objective: cost\ngrid:\n  deadline_days: [30, 4.5e1]\n"
    (tmp_path / "s.yaml").write_text(text)
    cli = load_scenarios(tmp_path / "s.yaml")
    app = read_batch_upload("s.yaml", text.encode())
    assert app == cli and cli[0]["tokens"] == 1e12 and [s["deadline_days"] for s in cli] == [30, 45.0]
    csv = "model,tokens,deadline_days,gpus,electricity_price_multiplier\nllama3-8b,1e12,30,H100;B200,1.5\n"
    (tmp_path / "s.csv").write_text(csv)
    cli = load_scenarios(tmp_path / "s.csv")
    assert read_batch_upload("s.csv", csv.encode()) == cli and cli[0]["deadline_days"] == 30


@pytest.mark.parametrize("row", ["llama3-8b", "llama3-8b,1e12,5"])
def test_the_app_refuses_a_csv_row_of_another_width_as_planner_batch_does(tmp_path: Path, row: str) -> None:
    """A CSV row with a cell missing or one too many (an unquoted comma) is bad input naming the upload and its
    line, with the command line's words -- never a scenario read with its columns shifted."""
    from planner.batch import load_scenarios
    from planner.present import read_batch_upload

    csv = f"model,tokens\n{row}\n"
    (tmp_path / "s.csv").write_text(csv)
    with pytest.raises(PlannerInputError) as cli:
        load_scenarios(tmp_path / "s.csv")
    with pytest.raises(PlannerInputError) as app:
        read_batch_upload("upload.csv", csv.encode())
    assert str(app.value) == str(cli.value).replace(str(tmp_path / "s.csv"), "upload.csv")
    assert str(app.value).startswith("upload.csv, line 2: ")


def test_the_fleet_page_says_what_is_wrong_with_an_uploaded_file() -> None:
    """An empty file, a YAML list and a binary file are each named for what they are (empty; not a mapping; not
    UTF-8 text) -- never pydantic's 'Input should be a valid dictionary or instance of FleetRequest' or a codec
    error."""
    import pytest

    from planner.errors import PlannerInputError
    from planner.present import read_fleet_upload

    cases = {
        b"# to do\n\n": "f.yaml is empty (nothing but blanks or comments)",
        b"- slots: 4\n": "f.yaml: a fleet request is a YAML mapping (slots, slot_hours, jobs, ...",
        b"\xc5\x00\xff": "f.yaml is not a text file (not UTF-8)",
    }
    for data, said in cases.items():
        with pytest.raises(PlannerInputError) as exc:
            read_fleet_upload("f.yaml", data)
        assert said in str(exc.value) and "FleetRequest" not in str(exc.value)
    ok = read_fleet_upload("f.yaml", (Path(__file__).resolve().parents[2] / "examples" / "portfolio.yaml").read_bytes())
    assert len(ok.jobs) > 1


def test_the_fleet_headline_writes_the_objective_out_with_its_unit() -> None:
    """The headline writes the objective as a whole amount with thousands separators and its unit, on the command
    line and in the app alike ('31,815,406 USD', not '3.18154e+07')."""
    from planner.fleet import FleetPlan

    empty = {"purchases": [], "assignments": [], "schedule": [], "totals": {}, "solver": None}
    plan = FleetPlan(objective="cost", objective_value=31_815_406.2, status="optimal", **empty)
    assert plan.headline() == "Optimal fleet: cost = 31,815,406 USD"
    plan = FleetPlan(objective="energy", objective_value=527.04, status="time_limit", **empty)
    assert plan.headline() == "Best fleet within the time limit (not proven optimal): energy = 527.04 kWh (facility)"


def test_app_tables_keep_whole_amounts_and_units_in_their_headers() -> None:
    """Amounts keep every digit (capex 6,069,200 in the Bought table, as the summary above it says; rounding every
    float to 4 significant figures would show 6069000), small fractions keep theirs, a power cap reads as on the plan
    card ('70%'), and headers carry their unit in parentheses ('Penalty (USD per slot)', not 'Penalty usd per
    slot')."""
    import pandas as pd

    from planner.present import readable, readable_header, separated_columns

    frame = readable(pd.DataFrame({"capex_usd": [6_069_200.0], "gap": [1.23456e-5], "power_cap": [0.7]}))
    assert frame.to_dict("records") == [{"Capex (USD)": 6_069_200.0, "Gap": 1.235e-5, "Power cap (of TDP)": "70%"}]
    assert separated_columns(frame) == ["Capex (USD)"]  # a column of small fractions keeps its digits
    assert {c: readable_header(c) for c in ("penalty_usd_per_slot", "rent_usd_per_month", "age_years")} == {
        "penalty_usd_per_slot": "Penalty (USD per slot)",
        "rent_usd_per_month": "Rent (USD per month)",
        "age_years": "Age (years)",
    }
    assert readable_header("carbon_kg_per_kwh") == "Carbon (kg CO2e per kWh)"
    assert readable_header("port_bandwidth_gbps") == "Port bandwidth (Gb/s)"


def test_app_tables_write_thousands_separators_and_leave_unset_values_empty() -> None:
    """Large numbers in the fleet page's job table are written with thousands separators (st.dataframe's plain
    numbers would show 'Tokens 1500000000000'), small ones as they are, and a field a job leaves unset (its tokens,
    where it states samples) is an empty cell, not 'None'."""
    from streamlit.testing.v1 import AppTest

    app = Path(__file__).resolve().parents[2] / "app.py"
    at = AppTest.from_file(str(app), default_timeout=120).run()
    at.radio(key="page").set_value("Fleet").run()
    jobs = at.dataframe[0].value.set_index("Id")
    assert jobs.at["pretrain-70b", "Tokens"] == "1,500,000,000,000" and jobs.at["pretrain-70b", "Samples"] == ""
    assert jobs.at["cpt-70b", "Penalty (USD per slot)"] == "50,000"
    assert jobs.at["pretrain-70b", "Penalty (USD per slot)"] == ""
    assert jobs["Release slot"].tolist()[:3] == [0, 5, 3]  # small numbers as they are
    assert not jobs.isna().any().any()


def test_the_fleet_summary_counts_one_billing_period_in_the_singular() -> None:
    """'1 node billing period' in the singular, '1,624 node billing periods' in the plural (one rented node for
    one period occurs in examples/portfolio.yaml)."""
    from planner.fleet import FleetPlan

    rent = {"kind": "rent", "nodes": 1, "server": "a100-pcie-4", "node_periods": 1, "rent_usd": 6.0}
    plan = FleetPlan(
        purchases=[rent, {**rent, "nodes": 5, "node_periods": 1624}],
        **{"status": "optimal", "objective": "cost", "objective_value": 6.0},
        **{"assignments": [], "schedule": [], "totals": {}, "solver": None},
    )
    lines = plan.decisions(markdown=True)
    assert "- **Rents** 1 x a100-pcie-4 at peak (1 node billing period, $6)." in lines
    assert "- **Rents** 5 x a100-pcie-4 at peak (1,624 node billing periods, $6)." in lines


def test_the_cost_and_energy_chart_tooltips_carry_units_and_round() -> None:
    """The breakdown chart's tooltips name the unit and round as the plan card does: dollars to the cent, kWh to
    4 significant figures (not a bare 'value 34948.12345678')."""
    import pandas as pd

    from planner.present import breakdown_chart

    frame = pd.DataFrame(
        {
            "plan": ["plan", "plan"],
            "part": ["energy", "energy"],
            "kind": ["cost (USD)", "energy (kWh)"],
            "value": [34_948.123, 24_354.3],
        }
    )
    spec = breakdown_chart(frame).to_dict()
    tips = [c["encoding"]["tooltip"][-1] for c in spec["vconcat"]]
    assert [(t["title"], t["format"]) for t in tips] == [("cost (USD)", ",.2f"), ("energy (kWh)", ",.4~r")]


def test_the_plan_page_says_fp4_on_the_card_and_in_the_alternatives() -> None:
    """Choosing fp4, the plan card says the precision, and the alternatives have a precision column (an H100 plan
    among them computes in fp8); with no fp4 GPU allowed the page says what to do, in the app's terms."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=120).run()
    assert "fp4" in at.selectbox(key="precision").options
    at.multiselect(key="gpus").set_value(["h100-sxm", "b200"])
    at.selectbox(key="precision").set_value("fp4").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    card = " ".join(m.value for m in at.markdown if "plan-card" in m.value)
    assert re.search(r"Precision</div><div[^>]*>fp4<", card), card
    table = at.dataframe[0].value
    assert dict(zip(table["GPU"], table["Precision"], strict=True)) == {"b200": "fp4", "h100-sxm": "fp8"}
    at.multiselect(key="gpus").set_value(["h100-sxm"]).run()
    text = " ".join(e.value for e in at.error)
    assert "Precision fp4: none of the allowed GPUs (h100-sxm) has fp4: choose fp8" in text, text
    assert "allow GPUs with fp4 (Blackwell or MI350, e.g. b200, mi355x)" in text and "--" not in text


def test_blank_lines_above_a_csv_header_are_skipped_by_the_app_and_the_command_line(tmp_path: Path) -> None:
    """A scenario CSV that starts with a blank line (or one of only commas or spaces) is read from its header on,
    by `planner batch FILE` and the app alike."""
    from planner.batch import load_scenarios
    from planner.present import read_batch_upload

    csv = "\n , \nmodel,tokens,deadline_days\nllama3-8b,1e12,30\n"
    (tmp_path / "s.csv").write_text(csv)
    cli = load_scenarios(tmp_path / "s.csv")
    assert read_batch_upload("s.csv", csv.encode()) == cli and cli[0]["deadline_days"] == 30


def test_the_scaling_chart_plots_only_servers_the_request_can_have(shipped: Catalog) -> None:
    """A plan that buys plots no server sold for rent only (the RTX 4000 Ada rental), one that rents plots it, and a
    server the request owns is plotted whatever its price."""
    from planner.present.charts import obtainable_servers

    rental = "rental-i5-13500-rtx4000"
    assert shipped.server(rental).price_usd is None and shipped.server(rental).rent_usd_per_month is not None
    buy = PlanRequest(model="llama3-8b", deadline_days=30, max_nodes=4)
    assert rental not in set(scaling_frame(shipped, buy)["server"]) and rental not in obtainable_servers(shipped, buy)
    for purchase in ("rent", "either"):
        assert rental in obtainable_servers(shipped, buy.model_copy(update={"purchase": purchase}))
    unpriced = shipped.replace(
        servers={**shipped.servers, "hgx-b200": shipped.server("hgx-b200").model_copy(update={"price_usd": None})}
    )
    assert "hgx-b200" not in obtainable_servers(unpriced, buy)
    owned = PlanRequest(model="llama3-8b", deadline_days=30, owned=[{"server": "hgx-b200", "count": 2}])
    assert "hgx-b200" in obtainable_servers(unpriced, owned)


def test_the_scaling_chart_names_the_layout_that_explains_a_rise_in_per_gpu_throughput(shipped: Catalog) -> None:
    """Llama 3 8B on one 4 x L40S node must split the model by tensor parallelism over PCIe and recompute (48 GB a
    GPU); on four nodes it pipelines instead, over twice as fast per GPU. The point's tooltip says which layout."""
    from planner.present import scaling_chart

    req = PlanRequest(model="llama3-8b", deadline_days=30, servers=["l40s-4"], max_nodes=4)
    frame = scaling_frame(shipped, req).set_index("nodes")
    assert "TP4" in frame.loc[1, "layout"] and "recompute" in frame.loc[1, "layout"]
    assert "TP" not in frame.loc[4, "layout"] and frame.loc[4, "scaling_efficiency"] > 2
    spec = scaling_chart(frame.reset_index(), None, 4).to_dict()

    def tooltips(node: object) -> list[str]:
        if isinstance(node, dict):
            here = [t if isinstance(t, str) else t.get("field", "") for t in node.get("tooltip", [])]
            return here + [f for v in node.values() for f in tooltips(v)]
        return [f for v in node for f in tooltips(v)] if isinstance(node, list) else []

    assert tooltips(spec).count("layout") == 2  # the throughput and the per-GPU curves
