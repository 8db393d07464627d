"""The Plan page's Pareto table (present.pareto_view): compact headers with units, the objectives first and then the
hardware, and the columns every point shares said once above the table -- at 1,440 px the table was 1,302 px wide
in 978 (14 columns under long headers: 'Facility energy limit (kWh)', 'Power cap (of TDP)', a 'Solver status' of
'optimal' on every row), so the objectives and the hardware could not be seen together."""

from __future__ import annotations

import pandas as pd
import pytest

from planner.data import Catalog
from planner.plan import PlanRequest, pareto, solve
from planner.present import alternatives_view, front_with_precision, pareto_table, pareto_view, readable_column

# compact headers: none of the long forms the full table (pareto_table, the CSV) writes
LONG = ("Facility", "Time to train", "Power cap", "CO2e", "Evaluation", "Training", "Epsilon")


def front(**kw: object) -> pd.DataFrame:
    """A front as planner.plan.pareto returns it for x=cost, y=energy (with front_with_precision's column)."""
    n = 3
    base: dict[str, object] = {
        "epsilon": [273_982.9, 264_060.6, 250_830.9],
        "cost": [268_685.83, 282_358.33, 300_432.01],
        "energy": [273_982.89, 252_428.98, 250_830.92],
        "server": ["mi350x-8"] * n,
        "gpu": ["mi350x"] * n,
        "precision": ["bf16"] * n,
        "nodes": [35, 40, 40],
        "fabric": ["hdr200"] * n,
        "power_cap": [0.8, 0.6, 0.5],
        "site": ["us-colo"] * n,
        "purchase": ["buy"] * n,
        "time_to_train_days": [29.48487, 27.491631, 29.441216],
        "facility_power_kw": [387.180057, 382.584574, 1354.988346],
        "solver_status": ["optimal"] * n,
    }
    base.update(kw)
    return pd.DataFrame(base)


def test_the_pareto_view_leads_with_the_objectives_then_the_hardware_under_compact_headers() -> None:
    view, line = pareto_view(front(), "cost", "energy")
    assert list(view.columns) == [
        "Cost (USD)",
        "Energy (kWh)",
        "Time (days)",
        "Server",
        "GPU",
        "Nodes",
        "Fabric",
        "Cap (of TDP)",
        "Power (kW)",
        "Energy limit (kWh)",
    ]
    assert not [c for c in view.columns if any(w in c for w in LONG)]
    # the columns every point shares, said once (not one per row)
    assert line == "Every row: Precision: bf16; Buy / rent: buy; Site: us-colo; Solver status: optimal."
    assert not {"Precision", "Buy / rent", "Site", "Solver status"} & set(view.columns)
    # figures rounded as the alternatives table rounds them: whole dollars and kWh, 4 significant figures
    assert view["Cost (USD)"].tolist() == [268_686.0, 282_358.0, 300_432.0]
    assert view["Energy (kWh)"].tolist() == [273_983.0, 252_429.0, 250_831.0]
    assert view["Time (days)"].tolist() == [29.48, 27.49, 29.44]
    assert view["Cap (of TDP)"].tolist() == ["80%", "60%", "50%"]
    assert view["Power (kW)"].tolist() == [387.2, 382.6, 1355.0]
    # the full table keeps every column under its long header (the CSV and the tests of its figures read it)
    assert {"Facility energy limit (kWh)", "Solver status", "Precision"} <= set(pareto_table(front(), "cost", "energy"))


def test_a_column_that_varies_stays_a_column_and_a_time_objective_is_the_one_time_column() -> None:
    """Points on H100s in fp8 and B200s in fp4, bought or rented: precision and buy / rent stay columns, beside the
    hardware; with time an objective the table has one time column (the objective, in the unit it reads in) and
    the limit on it last."""
    varied = front(
        time=[707.6, 495.6, 129.7],  # hours, as pareto returns a time objective
        epsilon=[707.6, 542.5, 129.7],
        gpu=["h100-sxm", "b200", "b200"],
        precision=["fp8", "fp4", "fp4"],
        purchase=["buy", "rent", "rent"],
    ).drop(columns=["energy"])
    view, line = pareto_view(varied, "cost", "time")
    assert list(view.columns) == [
        "Cost (USD)",
        "Time (days)",
        "Server",
        "GPU",
        "Precision",
        "Nodes",
        "Fabric",
        "Cap (of TDP)",
        "Buy / rent",
        "Power (kW)",
        "Time limit (days)",
    ]
    assert view["Time (days)"].tolist() == [29.48, 20.65, 5.404]  # the objective's hours, in days
    assert line == "Every row: Site: us-colo; Solver status: optimal."
    view, _ = pareto_view(varied.rename(columns={"cost": "carbon"}), "time", "carbon")
    assert list(view.columns[:2]) == ["Time (days)", "Carbon (kg)"] and view.columns[-1] == "Carbon limit (kg)"


def test_the_run_terms_sit_beside_the_time_and_owned_nodes_every_point_uses_are_said_once() -> None:
    """A request with a start-up, evaluations and owned servers: the training and evaluation terms beside the time
    they sum to, the request's start-up and the owned nodes each point uses said once."""
    terms = front(
        training_days=[29.4, 27.4, 29.36],
        evaluation_h=[0.13, 0.12, 0.13],
        startup_h=[1.0, 1.0, 1.0],
        owned_nodes=[20, 20, 20],
    )
    view, line = pareto_view(terms, "cost", "energy")
    assert list(view.columns[:5]) == ["Cost (USD)", "Energy (kWh)", "Time (days)", "Train (days)", "Eval (min)"]
    assert "Start-up: 1 h" in line and "Owned nodes (of Nodes): 20" in line
    assert not any(c.startswith(("Start-up", "Owned")) for c in view.columns)
    view, line = pareto_view(terms.assign(owned_nodes=[20, 20, 12]), "cost", "energy")
    assert view["Owned nodes (of Nodes)"].tolist() == [20, 20, 12] and "Owned" not in line


def test_a_start_up_without_evaluations_reads_in_seconds_instead_of_failing(shipped: Catalog) -> None:
    """A start-up and no evaluations: each row's evaluation term is 0, a duration under a minute, and the page said
    'Something went wrong (KeyError: 's')' in place of the alternatives and the Pareto tab."""
    name, values = readable_column("evaluation_h", pd.Series([0.0, 0.0]))
    assert name == "evaluation_s" and values.tolist() == [0.0, 0.0]
    req = PlanRequest(model="llama3-8b", tokens=1e11, deadline_days=30, gpus=["H100"], max_nodes=16, startup_s=600)
    view, line = alternatives_view(solve(req.model_copy(update={"alternatives": 2}), shipped))
    assert "Eval (s)" in view.columns and "Start-up: 10 min" in line
    view, line = pareto_view(pareto(req, x="cost", y="energy", points=3, catalog=shipped), "cost", "energy")
    assert "Eval (s)" in view.columns and "Start-up: 10 min" in line


@pytest.mark.parametrize(("x", "y"), [("cost", "energy"), ("energy", "time"), ("time", "carbon")])
def test_the_app_s_front_has_no_column_of_one_value_it_could_say_once(shipped: Catalog, x: str, y: str) -> None:
    """The app's first request's front: objectives first, every header compact, and no column that has the same
    value in every row among those the line says (precision, buy / rent, site, start-up, owned nodes, status)."""
    req = PlanRequest(model="llama3-8b", deadline_days=30, sites=["us-colo"])
    data, _ = front_with_precision(shipped, req, pareto(req, x=x, y=y, points=4, catalog=shipped))  # type: ignore[arg-type]
    view, line = pareto_view(data, x, y)
    short = {"cost": "Cost (USD)", "energy": "Energy (kWh)", "time": "Time (days)", "carbon": "Carbon (kg)"}
    assert list(view.columns[:2]) == [short[x], short[y]]
    assert "Time (days)" in view.columns[:3] and list(view.columns).count("Time (days)") == 1
    assert not [c for c in view.columns if any(w in c for w in LONG)]
    for header in ("Precision", "Buy / rent", "Site", "Solver status"):
        assert header not in view.columns or view[header].nunique() > 1, header
        assert header in view.columns or f"{header}: " in line, (header, line)
    assert len(view) == len(data) and view.notna().all().all()
