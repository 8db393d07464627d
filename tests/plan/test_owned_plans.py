"""Single-job plans on servers a team already owns (`PlanRequest.owned`, `planner solve --owned`).

Specifications: owned servers serve a run only on the fabric they are cabled to and only while in service
(the fleet planner's rule, planner/fleet/billing.py); a plan pays capex(n) - capex(min(n, owned)) on that fabric and the
full capex on any other. Hand-derived toy cases, and MIP == brute force over every node count with an
independently written credit.
"""

from __future__ import annotations

import itertools
import json
import math
from typing import Any

import pytest

from planner.data import Catalog
from planner.errors import PlannerInputError
from planner.physics import Work, cost, evaluate_space, price_space, work_from
from planner.plan import PlanRequest, solve
from tests.cli.test_cli import run
from tests.conftest import toy_catalog, toy_server

H = 1 / 24  # one hour, in days


def two_fabric_toy(nic_price_usd: float = 1000.0) -> Catalog:
    """The toy world with a second fabric "toy-net2": the same network (time, power) but NICs at
    ``nic_price_usd`` each (no switch or cable price). toy-a (10,000 USD) and toy-b (20,000 USD) can use both;
    toy-net stays the first listed fabric."""
    base = toy_catalog(
        servers=[
            toy_server(fabrics=["toy-net", "toy-net2"]),
            toy_server(id="toy-b", name="Toy B", price_usd=20000.0, fabrics=["toy-net", "toy-net2"]),
        ]
    )
    net = base.fabric("toy-net")
    net2 = net.model_copy(update={"id": "toy-net2", "nic_price_usd": nic_price_usd})
    return base.replace(fabrics={"toy-net": net, "toy-net2": net2})


def req(**kw: Any) -> PlanRequest:
    base: dict[str, Any] = {
        "model": "toy-model",
        "sites": ["clean"],
        "power_caps": [1.0],
        "alternatives": 0,
        "objective": "cost",
    }
    return PlanRequest.model_validate({**base, **kw})


# ---------------------------------------------------------------------------------------- hand-derived
# T(n) = 1000 (20/n + 1) s: T(1) = 5.83 h, T(2) = 3.06 h. A 4 h deadline needs 2 nodes. Fresh: 2 x toy-a on
# toy-net (no NIC price) = 20,000 USD; on toy-net2 2 x (10,000 + 1,000) = 22,000 USD.


def test_owned_on_the_default_fabric_extend_that_cluster() -> None:
    # one toy-a, no fabric named: it is on toy-net (first listed); the plan adds one node there: 10,000 USD
    res = solve(req(deadline_days=4 * H, owned=[{"server": "toy-a", "count": 1}]), two_fabric_toy())
    p = res.plan
    assert p is not None and (p.server, p.fabric, p.nodes) == ("toy-a", "toy-net", 2)
    assert p.upfront_usd == pytest.approx(10_000) and (p.owned_nodes, p.owned_unused_nodes) == (1, 0)


def test_owned_on_a_named_fabric_put_the_plan_on_that_fabric() -> None:
    # one toy-a on toy-net2: growing that cluster to 2 costs capex(2) - capex(1) = 22,000 - 10,000 = 12,000 USD
    # (one node alone needs no NIC, two on the fabric need one each), less than 20,000 fresh on toy-net
    res = solve(
        req(deadline_days=4 * H, owned=[{"server": "toy-a", "count": 1, "fabric": "toy-net2"}]), two_fabric_toy()
    )
    p = res.plan
    assert p is not None and (p.server, p.fabric, p.nodes) == ("toy-a", "toy-net2", 2)
    assert p.upfront_usd == pytest.approx(12_000) and p.owned_nodes == 1


def test_owned_on_a_dear_fabric_are_left_unused_and_their_idle_power_reported() -> None:
    # NICs at 6,000 USD: growing the toy-net2 cluster costs 2 x 16,000 - 10,000 = 22,000 > 20,000 fresh on
    # toy-net, so the plan buys two toy-a on toy-net and runs on no owned node (a job runs inside one cluster)
    cat = two_fabric_toy(nic_price_usd=6000.0)
    res = solve(req(deadline_days=4 * H, owned=[{"server": "toy-a", "count": 1, "fabric": "toy-net2"}]), cat)
    p = res.plan
    assert p is not None and (p.server, p.fabric, p.nodes) == ("toy-a", "toy-net", 2)
    assert p.upfront_usd == pytest.approx(20_000)
    assert (p.owned_nodes, p.owned_unused_nodes) == (0, 1)
    # idle node: GPU idle 10 W + CPU at its idle share (planner/physics/power.py) + RAM/storage 0.0002 W, PSU 1, PUE 1
    from planner.physics import power

    idle_w = 10.0 + float(power.cpu_power_w(1.0, 1, 0.0)) + 0.0002
    assert p.owned_unused_idle_kw == pytest.approx(idle_w / 1000.0)
    # and the energy of the plan is that of the two bought nodes only
    fresh = solve(req(deadline_days=4 * H), cat)
    assert fresh.plan is not None and p.facility_energy_kwh == pytest.approx(fresh.plan.facility_energy_kwh)
    assert "1 owned nodes unused" in res.summary()


def test_owned_nodes_that_leave_service_during_the_run_do_not_serve_it() -> None:
    # a 6 h deadline: one node (T = 5.83 h). An owned toy-b aged 4 years minus 1 h retires during the run:
    # the plan buys one toy-a (10,000 USD); aged 4 years minus 6 h it serves the run: free
    year_h = cost.HOURS_PER_YEAR
    late = [{"server": "toy-b", "count": 1, "age_years": 4.0 - 1.0 / year_h}]
    p = solve(req(deadline_days=6 * H, owned=late), two_fabric_toy()).plan
    assert p is not None and (p.server, p.upfront_usd, p.owned_nodes) == ("toy-a", pytest.approx(10_000), 0)
    early = [{"server": "toy-b", "count": 1, "age_years": 4.0 - 6.0 / year_h}]
    p = solve(req(deadline_days=6 * H, owned=early), two_fabric_toy()).plan
    assert p is not None and (p.server, p.upfront_usd, p.owned_nodes) == ("toy-b", 0.0, 1)


def test_the_short_form_is_the_first_fabric() -> None:
    a = req(deadline_days=4 * H, owned={"toy-a": 1})
    assert [o.model_dump() for o in a.owned] == [
        {"server": "toy-a", "count": 1, "fabric": None, "age_years": 0.0, "retire_at_age_years": None}
    ]
    assert PlanRequest.model_validate_json(a.model_dump_json()) == a


@pytest.mark.parametrize(
    ("owned", "message"),
    [
        ({"server": "toy-c", "count": 1}, "unknown server 'toy-c'"),
        ({"server": "toy-a", "count": 1, "fabric": "ib9000"}, "unknown fabric 'ib9000'"),
    ],
)
def test_unknown_owned_server_or_fabric_is_bad_input(owned: dict[str, Any], message: str) -> None:
    with pytest.raises(PlannerInputError, match=message):
        solve(req(deadline_days=1, owned=[owned]), two_fabric_toy())


def test_a_fabric_the_server_cannot_use_is_bad_input() -> None:
    cat = two_fabric_toy()
    cat = cat.replace(servers={**cat.servers, "toy-a": cat.server("toy-a").model_copy(update={"fabrics": ["toy-net"]})})
    with pytest.raises(PlannerInputError, match=r"owned toy-a: fabric 'toy-net2' is not one it can be built with"):
        solve(req(deadline_days=1, owned=[{"server": "toy-a", "count": 1, "fabric": "toy-net2"}]), cat)


# ---------------------------------------------------------------------------------------- brute force
def brute_owned(cat: Catalog, r: PlanRequest) -> float | None:
    """The optimum over every (server, fabric, node count) by enumeration, with the owned credit written here
    independently: per owned entry in service at the end of the run on the row's server and fabric, k = min(n,
    owned) nodes are there; the plan pays capex(n) - capex(k)."""
    wl = cat.workload(r.model)
    phys = evaluate_space(
        cat,
        wl,
        servers=sorted(cat.servers),
        caps=r.power_caps,
        nodes=range(1, r.max_nodes + 1),
        site=r.sites[0],
        work=Work(work_from(wl, r.samples, r.tokens, r.epochs), r.global_batch, r.precision),
    )
    phys = phys[phys["fits_memory"] & phys["valid_layout"]]
    df = price_space(cat, phys, r.sites[0], "buy", r.life_years)
    best = math.inf
    for row in df.itertuples():
        s, f = cat.server(str(row.server)), cat.fabric(str(row.fabric))
        n, hours = int(row.nodes), float(row.time_to_train_h)

        def capex(k: int, s: Any = s, f: Any = f) -> float:
            nics = s.nic_ports * f.nic_price_usd if k > 1 else 0.0
            sw = int(cost.switch_count(k, s.nic_ports, f.switch_radix))
            cab = int(cost.cable_count(k, s.nic_ports, f.switch_radix))
            return k * (s.price_usd + nics) + sw * f.switch_price_usd + cab * f.cable_price_usd

        owned = sum(
            o.count
            for o in r.owned
            if o.server == s.id
            and (o.fabric or s.fabrics[0]) == f.id
            and o.age_years + hours / cost.HOURS_PER_YEAR <= (o.retire_at_age_years or r.life_years) + 1e-12
        )
        credit = capex(min(n, owned))
        up = float(row.capex_usd) - credit
        run_cost = float(row.cost_usd) - credit * hours / (r.life_years * cost.HOURS_PER_YEAR)
        if r.deadline_days is not None and hours > r.deadline_days * 24 * (1 + 1e-9):
            continue
        if r.budget_usd is not None and up > r.budget_usd * (1 + 1e-9):
            continue
        value = {"cost": run_cost, "energy": float(row.facility_energy_kwh), "time": hours}[r.objective]
        best = min(best, value)
    return None if best == math.inf else best


CASES = list(
    itertools.product(
        [[], [("toy-a", 1, None)], [("toy-a", 3, "toy-net2")], [("toy-b", 2, "toy-net2"), ("toy-a", 1, "toy-net")]],
        [2.5 * H, 4 * H, 7 * H],
        [None, 5_000.0, 25_000.0],
        ["cost", "time"],
    )
)


@pytest.mark.parametrize("case", range(0, len(CASES), 5))  # a sample in CI: every 5th of 72
def test_solve_with_owned_servers_equals_brute_force(case: int) -> None:
    owned, deadline, budget, objective = CASES[case]
    r = req(
        deadline_days=deadline,
        budget_usd=budget,
        objective=objective,
        max_nodes=6,
        owned=[{"server": s, "count": c, "fabric": f} for s, c, f in owned],
    )
    cat = two_fabric_toy()
    want = brute_owned(cat, r)
    res = solve(r, cat)
    if want is None:
        assert res.plan is None
    else:
        assert res.objective_value is not None and res.objective_value == pytest.approx(want, rel=1e-9, abs=1e-9)


# ---------------------------------------------------------------------------------------- command line
@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("dgx-a100-80gb:64:ib9000", "unknown fabric 'ib9000'"),
        ("dgx-a100-80gb:64:ndr400", "fabric 'ndr400' is not one it can be built with (hdr200, edr100"),
        ("dgx-a100-80gb", "is not SERVER:COUNT[:FABRIC[:AGE_YEARS]]"),
        ("dgx-a100-80gb:0", "positive whole count"),
        ("dgx-a100-80gb:8:hdr200:old", "the age must be a number of years >= 0"),
        ("dgx-x:8", "unknown server 'dgx-x'"),
    ],
)
def test_bad_owned_spec_exits_2(capsys: pytest.CaptureFixture[str], spec: str, message: str) -> None:
    code, _, err = run(capsys, "solve", "--model", "resnet50", "--deadline-days", "1", "--owned", spec)
    assert code == 2 and message in err and "Traceback" not in err


def test_owned_fabric_on_the_command_line_is_the_api_plan(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--model", "resnet50", "--deadline-days", "0.5", "--gpus", "A100", "--max-nodes", "8"]
    code, out, _ = run(capsys, "solve", *args, "--objective", "cost", "--owned", "dgx-a100-80gb:4:roce100", "--json")
    api = solve(
        PlanRequest.model_validate(
            {
                "model": "resnet50",
                "deadline_days": 0.5,
                "gpus": ["A100"],
                "max_nodes": 8,
                "objective": "cost",
                "owned": [{"server": "dgx-a100-80gb", "count": 4, "fabric": "roce100"}],
            }
        )
    )
    assert code == 0 and api.plan is not None
    d = json.loads(out)
    assert (d["server"], d["fabric"], d["nodes"]) == (api.plan.server, api.plan.fabric, api.plan.nodes)
    assert d["owned_nodes"] == api.plan.owned_nodes and d["upfront_usd"] == pytest.approx(api.plan.upfront_usd)
    if d["server"] == "dgx-a100-80gb" and d["fabric"] == "roce100":
        assert d["owned_nodes"] == min(4, d["nodes"])
    else:
        assert d["owned_nodes"] == 0 and d["owned_unused_nodes"] == 4


def solve_resnet_owned(capsys: pytest.CaptureFixture[str], gpus: str, owned: str) -> tuple[int, str, str]:
    """`planner solve` of ResNet-50 in a day on up to 4 nodes of the allowed GPUs, with owned servers."""
    return run(
        capsys, "solve", "--model", "resnet50", "--deadline-days", "1", "--gpus", gpus, "--max-nodes", "4",
        "--owned", owned, "--alternatives", "0",
    )  # fmt: skip


def test_owned_summary_line_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = solve_resnet_owned(capsys, "A100", "dgx-a100-80gb:2")
    assert code == 0 and "owned servers:" in out


@pytest.mark.parametrize(
    "owned",
    [
        [{"server": "dgx-a100-80gb", "count": 64}],
        [{"server": "dgx-a100-80gb", "count": 64, "fabric": "roce100", "age_years": 2.5}],
        [{"server": "dgx-a100-80gb", "count": 8, "age_years": 1.5}, {"server": "dgx-h100", "count": 2}],
    ],
)
def test_the_apps_command_line_round_trips_owned_precision_and_framework(owned: list[dict[str, Any]]) -> None:
    import shlex

    from planner import present
    from planner.cli.main import build_parser
    from planner.cli.plan import request_from_args

    r = PlanRequest.model_validate(
        {
            "model": "llama3-8b",
            "deadline_days": 30,
            "precision": "fp8",
            "framework": "pytorch-fsdp",
            "owned": owned,
            "objective": "cost",
        }
    )
    argv = shlex.split(present.cli_command(r))[1:]
    args = build_parser().parse_args([*argv, "--objective", "cost"])
    back = request_from_args(args, args.objective, args.alternatives)
    assert back.model_dump(exclude={"solver"}) == r.model_dump(exclude={"solver"})


def test_owned_servers_the_request_excludes_are_a_note(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = solve_resnet_owned(capsys, "H100", "dgx-a100-80gb:2:roce100")
    assert code == 0 and "the 2 owned dgx-a100-80gb on roce100 cannot serve this request" in err
    assert "outside the allowed GPUs/servers" in err
