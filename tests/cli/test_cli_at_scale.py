"""The command line at scale (1,000-16,000 GPUs): figures written out in whole units, not exponents; files and flags
that cannot work said in the user's terms (exit 2, no traceback); a plan on owned servers costed as it is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.plan import Relaxation
from planner.plan.explain import _delta

from .test_cli_input_errors import planner_process


def _r(requirement: str, given: float, needed: float, unit: str) -> Relaxation:
    return Relaxation(requirement=requirement, given=given, needed=needed, unit=unit, message="")


def test_relaxation_pairs_write_large_deltas_out_not_in_scientific_notation() -> None:
    """The smallest pairs of relaxations of an infeasible request write each delta out, rounded up to 3 significant
    figures: '+1,310 days', '+4,980 kW' (not '+1.3e+03 days')."""
    assert _delta(_r("deadline", 30, 1330.2, "days")) == "+1,310 days"  # 1,300.2 rounded up to 3 figures
    assert _delta(_r("power", 2000, 6976.4, "kW")) == "+4,980 kW"
    assert _delta(_r("deadline", 30, 39.25, "days")) == "+9.25 days"
    assert _delta(_r("power", 500, 500.4201, "kW")) == "+0.421 kW"


def test_an_empty_request_file_says_it_is_empty(tmp_path: Path) -> None:
    """`planner fleet` and `planner batch` of a file of nothing but blanks and comments: exit 2 saying the file is
    empty, with no schema name (FleetRequest) and no traceback."""
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing yet\n\n")
    for args in (["fleet", str(empty)], ["batch", str(empty), "--out", str(tmp_path / "out")]):
        p = planner_process(*args)
        assert p.returncode == 2 and f"{empty} is empty (nothing but blanks or comments)" in p.stderr, p.stderr
        assert "FleetRequest" not in p.stderr and "Traceback" not in p.stderr


def test_the_cost_breakdown_of_a_plan_on_owned_servers_sums_to_its_cost(capsys: pytest.CaptureFixture[str]) -> None:
    """A plan on owned servers: its cost breakdown (`solve --json`'s cost_breakdown_usd and the app's cost chart)
    sums to its cost_usd, and when every node is owned the hardware share is 0 (energy only), not the share of
    servers bought new."""
    from planner.cli.main import main
    from planner.plan import PlanRequest, solve
    from planner.present import breakdown_frame
    from tests.conftest import toy_catalog, toy_server

    cat = toy_catalog(servers=[toy_server()])
    req = PlanRequest(
        model="toy-model", sites=["clean"], power_caps=[1.0], deadline_days=1.0, max_nodes=4, owned={"toy-a": 4}
    )
    res = solve(req, cat)
    assert res.plan is not None and res.plan.owned_nodes == res.plan.nodes and res.plan.capex_usd == 0
    money = breakdown_frame(res).query("kind == 'cost (USD)' and plan.str.startswith('plan')")
    assert dict(zip(money["part"], money["value"], strict=True)) == {
        "hardware / rent": pytest.approx(0, abs=1e-9),
        "energy": pytest.approx(res.plan.cost_usd),
    }
    code = main(["solve", "--model", "llama3-8b", "--tokens", "1e12", "--deadline-days", "30", "--servers",
                 "dgx-h100", "--fabrics", "ndr400", "--owned", "dgx-h100:16:ndr400", "--alternatives", "0",
                 "--json"])  # fmt: skip
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and d["owned_nodes"] > 0
    assert sum(d["cost_breakdown_usd"].values()) == pytest.approx(d["cost_usd"])
    if d["owned_nodes"] == d["nodes"]:
        assert d["capex_usd"] == 0 and d["cost_breakdown_usd"]["hardware"] == pytest.approx(0, abs=1e-6)


def test_tables_write_prices_costs_and_power_out_in_whole_units() -> None:
    """The CLI's tables (catalog servers and sites, a solve's alternatives) write prices, costs and power from 1,000
    on in whole units with thousands separators (380,000; 30,000; 45,502,345), numbers right-aligned."""
    from planner.cli.common import table

    rows = [
        {"id": "dgx-h100", "price_usd": 380_000.0, "kw": 30_000.0, "pue": 1.4, "ok": False, "n": 1312},
        {"id": "rental", "price_usd": None, "kw": 45_502_345.4, "pue": 0.37, "ok": True, "n": 8},
    ]
    lines = table(rows, ["id", "price_usd", "kw", "pue", "ok", "n"]).splitlines()
    assert lines[2].split() == ["dgx-h100", "380,000", "30,000", "1.4", "False", "1,312"]
    assert lines[3].split() == ["rental", "45,502,345", "0.37", "True", "8"]
    assert lines[3].index("45,502,345") + len("45,502,345") == lines[2].index("30,000") + len("30,000")  # right


def test_a_fixed_layout_over_the_batch_limit_says_which_flags_to_raise() -> None:
    """`evaluate --model llama3-405b --server dgx-h100 --nodes 2048 --cp 2`: with --cp 2 alone tp = pp = 1, so
    8,192 replicas of one sequence each are 4x the 2,050-sequence (16.8M-token) batch Llama 3 trains at. Exit 2
    naming the replicas, the limit and the least tp x cp x pp that fits (8 = ceil(16,384 / 2,050)); the layout Meta
    published runs."""
    base = ["evaluate", "--model", "llama3-405b", "--server", "dgx-h100", "--nodes", "2048"]
    p = planner_process(*base, "--cp", "2")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "--tp 1 --cp 2 --pp 1 (a degree left out is 1) leave 8,192 data-parallel replicas" in p.stderr
    assert "above the largest global batch 'llama3-405b' trains at, 2,050 sequences" in p.stderr
    assert "give tp x cp x pp of at least 8" in p.stderr, p.stderr
    # the layout Meta published fits and runs
    ok = planner_process(*base, "--tp", "8", "--pp", "16", "--cp", "2", "--sequence-parallel", "--zero", "1", "--json")
    assert ok.returncode == 0 and json.loads(ok.stdout)["layout"].startswith("DP64 TP8 PP16"), ok.stderr


def test_fp8_asked_for_on_gpus_without_fp8_is_bad_input_in_solve_and_pareto(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`solve` and `pareto` with --precision fp8 where no allowed GPU has fp8 (--gpus A100): exit 2 naming the
    GPUs, as `evaluate` refuses fp8 on a GPU without it; with an fp8 GPU allowed too, it plans."""
    from planner.cli.main import main

    for cmd in ("solve", "pareto"):
        code = main([cmd, "--model", "llama3-70b", "--deadline-days", "30", "--precision", "fp8", "--gpus", "A100"])
        err = capsys.readouterr().err
        assert code == 2 and "--precision fp8: none of the allowed GPUs (a100-pcie-80gb, a100-sxm-80gb) has fp8" in err
    # with an fp8 GPU allowed it plans (the A100 ones would compute in bf16, with a note if chosen)
    code = main(["solve", "--model", "llama3-8b", "--tokens", "1e11", "--deadline-days", "30", "--precision", "fp8",
                 "--gpus", "A100,H100", "--alternatives", "0"])  # fmt: skip
    assert code == 0, capsys.readouterr().err


def test_relaxations_write_large_thresholds_out_not_in_scientific_notation() -> None:
    """The explanation's thresholds and the values given are written out: 'at least 15,330 kW of power (you gave
    2,000 kW)', 'a deadline of at least 12,350 days' (rounded up to 4 significant figures)."""
    from planner.plan.explain import _phrase

    assert _phrase("power", 15_327.2, 2000) == "at least 15,330 kW of power (you gave 2,000 kW)"
    assert _phrase("power", 45_001.0, 30_000) == "at least 45,010 kW of power (you gave 30,000 kW)"
    assert _phrase("power", 0.4201, 0.05) == "at least 0.4201 kW of power (you gave 0.05 kW)"
    assert _phrase("deadline", 12_345.6, 30) == "a deadline of at least 12,350 days (33.8 years; you gave 30)"
    assert _phrase("deadline", 62.7301) == "a deadline of at least 62.74 days"
    # under a day, also in the unit that reads (the days are what --deadline-days takes)
    assert _phrase("deadline", 0.0002524, 0.0001) == "a deadline of at least 0.0002524 days (21.8 s; you gave 0.0001)"
    assert _phrase("deadline", 0.25) == "a deadline of at least 0.25 days (6 h)"


def test_a_global_batch_given_above_the_workload_limit_is_said(capsys: pytest.CaptureFixture[str]) -> None:
    """A global batch the user gives above the workload's limit (`evaluate --model llama3-70b --global-batch
    100000`: 819M tokens a step, 49x the recipe's 16.8M) is said in a note with what the estimate then assumes (the
    same tokens: optimistic); within the limit there is no note; an infeasible solve says it too."""
    from planner.cli.main import main

    args = ["evaluate", "--model", "llama3-70b", "--server", "dgx-h100", "--nodes", "128", "--global-batch"]
    code = main([*args, "100000"])
    err = capsys.readouterr().err
    assert code == 0 and "global batch 100,000 sequences (819,200,000 tokens per step) is above the largest" in err
    assert "'llama3-70b' trains at, 2,050 sequences (16,800,000 tokens): this estimate trains the same tokens" in err
    assert main([*args, "2048"]) == 0 and "is above the largest" not in capsys.readouterr().err
    code = main(["solve", "--model", "llama3-70b", "--deadline-days", "30", "--global-batch", "999999999"])
    assert "global batch 999,999,999 sequences" in capsys.readouterr().err  # said on an infeasible solve too


def test_a_fleet_file_that_is_not_a_mapping_says_so(tmp_path: Path) -> None:
    """A fleet file holding a list: exit 2 saying a fleet request is a YAML mapping (slots, slot_hours, jobs, ...),
    with no schema name and no traceback."""
    f = tmp_path / "f.yaml"
    f.write_text("- {id: a, model: llama3-8b}\n")
    p = planner_process("fleet", str(f))
    assert p.returncode == 2 and f"{f}: a fleet request is a YAML mapping (slots, slot_hours, jobs" in p.stderr
    assert "FleetRequest" not in p.stderr and "Traceback" not in p.stderr


def test_the_fleet_totals_line_writes_money_and_energy_out() -> None:
    """The fleet's totals line writes each total in whole units from 1,000 on: 'capex_usd 6,294,600'."""
    from planner.cli.fleet import fleet_totals_text

    text = fleet_totals_text({"capex_usd": 6_294_600.0, "rent_usd": 33_155.4, "penalty_usd": 0.0, "peak_kw": 527.04})
    assert text == "Totals: capex_usd 6,294,600, rent_usd 33,155, penalty_usd 0, peak_kw 527"


def test_evaluate_at_scale_writes_its_figures_out(capsys: pytest.CaptureFixture[str]) -> None:
    """Llama 3 405B on 2,048 DGX H100 (16,384 GPUs): every headline figure of `evaluate` (power, energy, carbon,
    samples) in whole units or 4 significant figures, none in exponent form; only absurd amounts keep an exponent."""
    import re

    from planner.cli.main import main
    from planner.formatting import sig4

    assert [sig4(x) for x in (25_674_321.0, 1777.4, 74.06, 8.3081, 0.000337, 0.0)] == [
        "25,670,000", "1,777", "74.06", "8.308", "0.000337", "0",
    ]  # fmt: skip
    assert sig4(4.084e291) == "4.084e+291"  # absurd amounts stay short
    code = main(["evaluate", "--model", "llama3-405b", "--server", "dgx-h100", "--nodes", "2048"])
    out = capsys.readouterr().out
    body = out.split("step breakdown")[0]
    assert code == 0 and not re.search(r"\de[+-]\d", body), body
    assert re.search(r"energy +[\d,]{10} kWh IT", body) and "switches)" in body


def test_a_unit_of_work_the_model_has_not_is_said_in_flags(capsys: pytest.CaptureFixture[str]) -> None:
    """--epochs for a workload without a dataset size, --tokens for one that is not a sequence model: exit 2 naming
    the flags to give instead (--samples or --tokens / --epochs), not the request's field names."""
    from planner.cli.main import main

    assert main(["solve", "--model", "llama3-405b", "--epochs", "3", "--deadline-days", "90"]) == 2
    err = capsys.readouterr().err
    assert "--epochs: 'llama3-405b' states no dataset size" in err and "give --samples or --tokens" in err
    assert main(["evaluate", "--model", "resnet50", "--tokens", "1e9", "--server", "dgx-h100", "--nodes", "2"]) == 2
    err = capsys.readouterr().err
    assert "--tokens: 'resnet50' is not a sequence model (its work is counted in images)" in err
    assert "give --samples or --epochs" in err


def test_the_batch_report_writes_relaxations_out() -> None:
    """The batch report's relaxations write given and needed values out: 'power: given 2,000, needs 15,330 kW'."""
    from planner.batch.report import relaxation_text

    rel = [
        {"requirement": "power", "given": 2000.0, "needed": 15_327.2, "unit": "kW"},
        {"requirement": "budget", "given": 3e6, "needed": 24_108_600.0, "unit": "USD"},
    ]
    text = relaxation_text(json.dumps(rel))
    assert text == "power: given 2,000, needs 15,330 kW; budget: given 3,000,000, needs 24,110,000 USD"


def test_the_plan_headline_writes_its_figures_out(capsys: pytest.CaptureFixture[str]) -> None:
    """`planner solve`'s plan summary (facility energy, the objective) has no figure in exponent form."""
    from planner.cli.main import main

    args = ["solve", "--model", "llama3-405b", "--tokens", "15e12", "--deadline-days", "90", "--power-kw", "20000"]
    code = main(args)
    out = capsys.readouterr().out
    assert code == 0
    headline = out.split("  solver:")[0]  # the plan's figures (the solver's own diagnostics follow)
    assert "e+0" not in headline and "facility energy" in headline and "objective energy =" in headline, headline
