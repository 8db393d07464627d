"""Figures read the same on the plan card and in every table (planner.formatting writes them all): a short run in
minutes or hours, a small footprint in kg, money to the cent under $10, a power cap as a share of TDP; the Pareto
chart spans its front; batch rows are named by their scenario and lead with why they failed; a broken YAML file is
one line naming its line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from planner.batch import expand, run_scenario
from planner.data import Catalog
from planner.errors import PlannerInputError
from planner.formatting import (
    cap_text,
    carbon_text,
    duration_text,
    money_text,
    money_value,
    number_text,
    parse_number,
)
from planner.plan import PlanRequest, pareto, solve
from planner.present import (
    add_workload,
    alternatives_table,
    batch_results_table,
    blank_missing,
    breakdown_chart,
    breakdown_frame,
    pareto_chart,
    pareto_table,
    pareto_view,
    plan_card,
    power_cap_chart,
    read_batch_upload,
    read_fleet_upload,
    read_upload,
    readable,
)


def test_one_formatter_writes_durations_money_carbon_caps_and_amounts() -> None:
    assert [duration_text(d) for d in (0.00465, 0.3, 27.8)] == ["6.7 min", "7.2 h", "27.8 days"]
    assert [money_text(x) for x in (2.468, 9.994, 10.4, 6_069_200.4)] == ["$2.47", "$9.99", "$10", "$6,069,200"]
    assert [carbon_text(kg) for kg in (0.247, 412.0, 3_180_000.0)] == ["0.247 kg CO2e", "412 kg CO2e", "3,180 t CO2e"]
    assert [cap_text(c) for c in (0.5, 0.45, 1.0)] == ["50%", "45%", "100%"]
    assert number_text(14_999_552_000_000.0) == "14,999,552,000,000" and number_text(-1234.5) == "-1,234.5"
    for x in (14_999_552_000_000.0, 45005000 / 1281167, 0.5, 1e-5, 3e22):
        assert parse_number(number_text(x)) == x
    assert parse_number("15 000_000") == 15e6 and parse_number("1.5e13") == 1.5e13
    with pytest.raises(ValueError, match="'lots' is not a number"):
        parse_number("lots")
    with pytest.raises(ValueError, match="not a finite number"):
        parse_number("inf")


def test_a_short_run_reads_in_minutes_kg_and_cents_on_the_card_and_in_the_table(shipped: Catalog) -> None:
    """resnet50 at its default amount trains in minutes for a couple of dollars: the card says '6.7 min',
    '$1.72' and '0.462 kg CO2e' (not '0.00465 days', '$2', '0.000462 t CO2e'), the alternatives table gives times in
    the unit its longest reads in, costs to the cent and caps as on the card."""
    res = solve(PlanRequest(model="resnet50", deadline_days=30), shipped)
    p = res.plan
    assert p is not None and p.time_to_train_days < 1 / 24 and p.cost_usd < 10 and p.carbon_kg < 1000
    card = plan_card(res)
    assert card["Time to train"] == duration_text(p.time_to_train_days) and card["Time to train"].endswith(" min")
    assert card["Cost (this run)"] == f"${p.cost_usd:.2f}"
    assert card["Carbon"] == carbon_text(p.carbon_kg) and card["Carbon"].endswith(" kg CO2e")
    assert card["Power cap"].startswith(cap_text(p.power_cap) + " of TDP")
    table = alternatives_table(res)
    times = [c for c in table.columns if c.startswith("Time to train")]
    longest = max(a.time_to_train_days for a in [p, *res.alternatives])
    assert times == [f"Time to train ({duration_text(longest).split()[-1]})"], table.columns
    assert table["Cost (USD)"].iloc[0] == money_value(p.cost_usd) == round(p.cost_usd, 2)
    assert table["Power cap (of TDP)"].iloc[0] == cap_text(p.power_cap)


def test_caps_read_as_a_share_of_tdp_in_every_table() -> None:
    """The Pareto, fleet and batch tables go through readable: a cap of 0.5 reads '50%' as on the plan card."""
    frame = readable(pd.DataFrame({"server": ["a", "b"], "power_cap": [0.5, 1.0], "cost_usd": [3.456, 1234.56]}))
    assert frame["Power cap (of TDP)"].tolist() == ["50%", "100%"]
    assert frame["Cost (USD)"].tolist() == [3.46, 1235.0]


def test_the_pareto_chart_spans_its_front_and_names_facility_energy(shipped: Catalog) -> None:
    """Both axes start at the front's own range (a 307k-336k kWh front is not a flat line at the top of a chart
    from 0), titled 'energy (facility kWh)' and 'cost (USD)'; the table's caps read as a share of TDP."""
    req = PlanRequest(model="llama3-8b", deadline_days=30, tokens=1e11)
    front = pareto(req, x="cost", y="energy", points=4, catalog=shipped)
    spec = pareto_chart(front, "cost", "energy").to_dict()
    enc = spec["encoding"]
    assert enc["x"]["title"] == "cost (USD)" and enc["y"]["title"] == "energy (facility kWh)"
    assert enc["x"]["scale"]["zero"] is False and enc["y"]["scale"]["zero"] is False
    assert all(str(c).endswith("%") for c in pareto_table(front, "cost", "energy")["Power cap (of TDP)"])


def test_a_pareto_chart_of_time_is_drawn_in_the_days_of_the_table_beside_it(shipped: Catalog) -> None:
    """The time axis is the front's time_to_train_days, titled in days, as the table under the chart says it."""
    req = PlanRequest(model="llama3-8b", deadline_days=30, tokens=1e11)
    front = pareto(req, x="time", y="energy", points=3, catalog=shipped)
    enc = pareto_chart(front, "time", "energy").to_dict()["encoding"]
    assert enc["x"]["field"] == "time_to_train_days" and enc["x"]["title"] == "time to train (days)"
    table, _ = pareto_view(front, "time", "energy")
    days = [c for c in table.columns if "days" in str(c).lower()]
    assert days and np.allclose(table[days[0]].astype(float), front["time_to_train_days"], rtol=1e-3)


def test_the_power_cap_chart_ticks_at_four_significant_figures() -> None:
    """A rented server's one cap is a chart of one point, whose axis ticks at the point's own value: written at 4
    significant figures (284,600), not Vega's 6 decimals (284,600.773060)."""
    frame = pd.DataFrame(
        {
            "power_cap": [1.0],
            "power_cap_w": [1000.0],
            "label": ["100%"],
            "plan": [True],
            "time_to_train_days": [29.4212],
            "facility_energy_kwh": [284600.77306],
            "cost_usd": [1.0],
        }
    )
    enc = power_cap_chart(frame).to_dict()["layer"][0]["encoding"]
    assert enc["x"]["axis"]["format"] == ",.4~r" and enc["y"]["axis"]["format"] == ",.4~r"
    # a handful of ticks: one point and the deadline beside it span 0.6 days, which Vega ticked every 0.02
    assert enc["x"]["axis"]["tickCount"] <= 8 and enc["y"]["axis"]["tickCount"] <= 8


def test_the_cost_and_energy_chart_writes_each_plans_label_whole(shipped: Catalog) -> None:
    """The plan and its first alternatives are often the same servers at another cap or fabric, said at the end of
    the label ('plan: 40x mi350x-8, ndr400, cap 80%'): the axis does not cut it."""
    res = solve(PlanRequest(model="llama3-8b", tokens=1e12, deadline_days=30, alternatives=3), shipped)
    labels = breakdown_frame(res)["plan"].unique()
    assert len(labels) == 1 + len(res.alternatives) and all(", cap " in label for label in labels)
    for part in breakdown_chart(breakdown_frame(res)).to_dict()["vconcat"]:
        assert part["encoding"]["y"]["axis"]["labelLimit"] == 0  # Vega: no limit


def test_a_value_left_unset_is_an_empty_cell_not_none() -> None:
    """A job that states tokens but not samples, an owned server without a retirement age: the app's tables show
    the unset fields empty, and the set ones as numbers with thousands separators."""
    table = readable(pd.DataFrame({"tokens": [1e12, None], "samples": [None, 5e6], "id": ["pretrain", None]}))
    shown = blank_missing(table)
    assert shown.iloc[1].tolist() == ["", "5,000,000", ""]
    assert shown.iloc[0].tolist() == ["1,000,000,000,000", "", "pretrain"]
    assert blank_missing(readable(pd.DataFrame({"n": [1, 2]}))).equals(readable(pd.DataFrame({"n": [1, 2]})))


def test_batch_rows_are_named_by_their_scenario_and_lead_with_why_they_failed(shipped: Catalog) -> None:
    """A row's Id is its number in the file and the fields that tell it from the others (not a hash; the hash
    results.csv keys it by is the last column, 'Results id'), rows in the file's order, and the message -- why it
    failed -- right after the plan's hardware, a message's 'scenario <hash>' saying the number."""
    scenarios = expand(
        {"base": {"model": "llama3-8b", "tokens": 1e11}, "grid": {"deadline_days": [30, -3], "gpus": [["H100"]]}}
    )
    rows = [run_scenario(s, shipped) for s in reversed(scenarios)]  # as a run may finish them
    _, table = batch_results_table(pd.DataFrame(rows), scenarios)
    assert table["Id"].tolist() == ["1: deadline_days 30", "2: deadline_days -3"]
    assert table["Results id"].tolist() == [s["id"] for s in scenarios]
    columns = list(table.columns)
    assert columns.index("Message") == columns.index("Nodes") + 1 < columns.index("Time to train (days)")
    failed = table["Message"].iloc[1]
    assert failed.startswith("scenario 2: deadline_days") and scenarios[1]["id"] not in failed
    assert table["Power cap (of TDP)"].iloc[0].endswith("%")


BROKEN = b"slots: 4\njobs:\n  - id: a\n   model: llama3-8b\n"


def test_a_broken_yaml_file_is_one_line_naming_the_problem_and_the_line(shipped: Catalog) -> None:
    """Fleet, batch, catalog and workload uploads alike: the file, 'line 4, column 4', what is wrong in words and
    the line itself -- one line, not PyYAML's five-line report."""
    cases = [
        (read_fleet_upload, ("fleet.yaml", BROKEN)),
        (read_batch_upload, ("batch.yaml", BROKEN)),
        (read_upload, ("servers.yaml", BROKEN)),
        (lambda name, data: add_workload(shipped, name, data), ("model.yaml", BROKEN)),
    ]
    for read, (name, data) in cases:
        with pytest.raises(PlannerInputError) as exc:
            read(name, data)
        text = str(exc.value)
        assert "\n" not in text, text
        assert text.startswith(f"{name}: not valid YAML") and "at line 4, column 4" in text, text
        assert "indentation does not line up" in text and '"   model: llama3-8b"' in text, text
    with pytest.raises(PlannerInputError, match=r'line 1, column 4: a \[ list \] that is not closed.*"a: \[1,2"'):
        read_fleet_upload("fleet.yaml", b"a: [1,2\n")


def test_the_shipped_examples_still_read(shipped: Catalog) -> None:
    root = Path(__file__).resolve().parents[2] / "examples"
    assert read_fleet_upload("portfolio.yaml", (root / "portfolio.yaml").read_bytes()).jobs
    scenarios = read_batch_upload("procurement.yaml", (root / "procurement.yaml").read_bytes())
    assert len(scenarios) == len({json.dumps(s, sort_keys=True) for s in scenarios}) > 1
