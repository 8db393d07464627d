"""What a plan, an infeasible request and bad input say, as the Python API writes them (the CLI and the app print
the same): a plan on owned servers says what it adds to them, a power limit the request did not give is the site's,
and a server that cannot be had as asked (bought without a price, rented without a rent) is bad input."""

from __future__ import annotations

import pytest

from planner.checks import PlanRequest
from planner.cli.main import main
from planner.data import load_catalog
from planner.errors import PlannerInputError
from planner.plan import solve
from planner.plan.explain import _phrase


def test_the_summary_of_a_plan_on_owned_servers_alone_says_it_buys_nothing() -> None:
    # 4 owned dgx-a100-80gb carry 1e11 tokens of Llama 3 8B in 30 days at the least cost: the plan buys no node,
    # and its first line says so (not 'buy at us-colo', which reads as a purchase of 4 nodes)
    res = solve(
        PlanRequest(
            model="llama3-8b",
            tokens=1e11,
            deadline_days=30,
            gpus=["A100"],
            objective="cost",
            owned=[{"server": "dgx-a100-80gb", "count": 4}],
        )
    )
    assert res.plan is not None and res.plan.nodes == res.plan.owned_nodes == 4
    head = res.summary().splitlines()[0]
    assert head.endswith("nothing to buy: runs on 4 owned nodes at us-colo"), head
    assert "buy at" not in head


def test_a_power_limit_from_the_site_is_said_as_the_sites_not_as_given() -> None:
    # no power_kw in the request: the limit is the site's envelope (coal-heavy, 1,000 kW), and the relaxation says
    # that, not '(you gave 1,000 kW)'; a power_kw the request gives is still 'you gave'
    assert _phrase("power", 1500.0, 1000.0, site_power="site") == (
        "at least 1,500 kW of power (the site's own envelope is 1,000 kW; a power limit you set, --power-kw, "
        "replaces it)"
    )
    assert _phrase("power", 1500.0, 1000.0) == "at least 1,500 kW of power (you gave 1,000 kW)"
    assert "(the largest of the sites' envelopes is 1,000 kW;" in _phrase("power", 1500.0, 1000.0, site_power="sites")
    res = solve(PlanRequest(model="llama3-70b", tokens=2e12, deadline_days=3, sites=["coal-heavy"]))
    assert res.plan is None and res.explanation is not None
    power = [r for r in res.explanation.relaxations if r.requirement == "power"]
    assert power and "the site's own envelope is 1,000 kW" in power[0].message
    assert "you gave" not in power[0].message
    given = solve(PlanRequest(model="llama3-70b", tokens=2e12, deadline_days=3, sites=["coal-heavy"], power_kw=900))
    assert given.explanation is not None
    assert any("(you gave 900 kW)" in r.message for r in given.explanation.relaxations if r.requirement == "power")


def test_a_server_that_cannot_be_had_as_asked_is_bad_input_not_an_infeasible_plan(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # rental-i5-13500-rtx4000 has a rent and no price: buying it is bad input that says to rent it (exit 2, not an
    # infeasible plan blamed on GPU memory, exit 1); a dgx-h100 without a rent cannot be rented
    with pytest.raises(PlannerInputError, match=r"rental-i5-13500-rtx4000\) can be bought: .*no price.*--rent"):
        solve(PlanRequest(model="resnet50", epochs=1, deadline_days=5, servers=["rental-i5-13500-rtx4000"]))
    assert main(["solve", "--model", "resnet50", "--epochs", "1", "--deadline-days", "5",
                 "--servers", "rental-i5-13500-rtx4000", "--buy"]) == 2  # fmt: skip
    assert "can be bought" in capsys.readouterr().err
    cat = load_catalog()
    h100 = cat.server("dgx-h100").model_copy(update={"rent_usd_per_month": None})
    no_rent = cat.replace(servers={**cat.servers, "dgx-h100": h100})
    with pytest.raises(PlannerInputError, match=r"\(dgx-h100\) can be rented: .*no rent.*--buy"):
        solve(
            PlanRequest(model="llama3-8b", tokens=1e10, deadline_days=30, servers=["dgx-h100"], purchase="rent"),
            no_rent,
        )


def test_the_fleet_api_says_what_is_wrong_with_its_arguments() -> None:
    # as solve does: a bad field is a PlannerInputError naming it (not pydantic's ValidationError), a path says
    # how to read a YAML file (not a ValidationError), a wrong catalog type says what to pass (not AttributeError)
    from planner.fleet import fleet, load_fleet_request

    with pytest.raises(PlannerInputError, match=r"fleet request: .*slots: Input should be greater than or equal"):
        fleet({"slots": -1, "jobs": []})
    with pytest.raises(PlannerInputError, match=r"not a path .*load_fleet_request\(path\)"):
        fleet("examples/fleet.yaml")  # type: ignore[arg-type]
    with pytest.raises(PlannerInputError, match=r"catalog must be a planner\.Catalog"):
        fleet(load_fleet_request("examples/fleet.yaml"), "catalog")  # type: ignore[arg-type]


def test_a_configuration_with_a_non_finite_cap_or_life_says_it_must_be_finite() -> None:
    # a NaN cap is named as not finite, not 'Input should be less than or equal to 1' (NaN compares false with
    # everything, so a range check alone misreads it)
    from planner.physics import evaluate

    for field in ("power_cap", "life_years"):
        with pytest.raises(PlannerInputError, match=rf"{field}: Input should be a finite number"):
            evaluate(load_catalog(), {"model": "llama3-8b", "server": "dgx-h100", "nodes": 1, field: float("nan")})


def test_a_pareto_front_with_owned_servers_says_how_many_of_each_points_nodes_are_owned() -> None:
    # 8 owned dgx-a100-80gb on its first fabric: a bought point of that type and fabric runs on min(nodes, 8) owned
    # nodes, every other point on none (as a plan of it says); without owned servers the column is absent
    from planner.plan import pareto

    req = PlanRequest(
        model="llama3-8b", tokens=1e11, deadline_days=30, gpus=["A100"], owned=[{"server": "dgx-a100-80gb", "count": 8}]
    )
    owned_fabric = load_catalog().server("dgx-a100-80gb").fabrics[0]
    front = pareto(req, x="cost", y="energy", points=4)
    assert "owned_nodes" in front
    for _, r in front.iterrows():
        on_owned = (r["server"], r["fabric"], r["purchase"]) == ("dgx-a100-80gb", owned_fabric, "buy")
        expected = min(int(r["nodes"]), 8) if on_owned else 0
        assert r["owned_nodes"] == expected
    assert (front["owned_nodes"] > 0).any()
    plain = pareto(req.model_copy(update={"owned": []}), x="cost", y="energy", points=3)
    assert "owned_nodes" not in plain


def test_rented_servers_at_full_power_only_with_caps_below_full_power_are_bad_input() -> None:
    # the shipped DGX/HGX rent offers do not let the renter set the GPU power limit (power_cap_settable: false):
    # renting them with caps [0.6] is bad input that says why and what to do (not 'infeasible: no parallel layout
    # fits GPU memory'); with 1.0 among the caps, or buying allowed, it plans
    servers = ["dgx-a100-80gb", "dgx-h100", "hgx-h200"]
    assert not any(load_catalog().server(s).power_cap_settable for s in servers)
    base = {"model": "resnet50", "deadline_days": 30, "servers": servers}
    with pytest.raises(PlannerInputError, match=r"run at full power .*add 1\.0 to power_caps"):
        solve({**base, "purchase": "rent", "power_caps": [0.6]})
    assert solve({**base, "purchase": "rent", "power_caps": [0.6, 1.0]}).plan is not None
    assert solve({**base, "purchase": "either", "power_caps": [0.6]}).plan is not None
