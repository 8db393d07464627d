"""Bad input and notes on the command line and in the app: each problem said in the user's terms, with the exit code
the command line documents.

Exit codes through real `planner` processes where the code is the point (a fixed layout that cannot divide the
cluster, a configuration that does not fit, a malformed CSV scenario table); messages in-process (fast).
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from planner.data import Catalog
from planner.errors import PlannerInputError
from planner.plan import OwnedServers, PlanRequest, solve
from tests.cli.test_cli import run

ROOT = Path(__file__).resolve().parents[2]


def planner_process(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`planner ARGS` as a user runs it: a new interpreter, this checkout first on the path."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PLANNER_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-c", "import sys; from planner.cli.main import main; sys.exit(main())", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


# --------------------------------------------------------------------------------------------- evaluate
def test_a_fixed_layout_that_cannot_divide_the_cluster_says_which_flag(capsys: pytest.CaptureFixture[str]) -> None:
    """--tp 3 on 8-GPU nodes, or --pp 7 on 32 GPUs: exit 2 naming the flag and the degrees that divide (--tp 1 or 2
    or 4 or 8), never 'use fewer nodes'."""
    base = ["evaluate", "--model", "llama3-8b", "--server", "dgx-h100", "--nodes", "4"]
    code, _, err = run(capsys, *base, "--tp", "3")
    assert code == 2 and "--tp 3 does not divide the 8 GPUs of a dgx-h100 node" in err
    assert "give --tp 1 or 2 or 4 or 8" in err and "fewer nodes" not in err
    code, _, err = run(capsys, *base, "--pp", "7")
    assert code == 2 and "--tp x --cp x --pp = 7 does not divide the 32 GPUs of 4 x dgx-h100" in err


def test_evaluate_of_a_configuration_that_does_not_fit_exits_1(tmp_path: Path) -> None:
    """A configuration that does not fit in GPU memory (947 GB per 80 GB GPU) cannot start: exit 1, fits_memory
    false and a note saying so (and that the run would outlast the servers' life)."""
    args = ["evaluate", "--model", "llama3-405b", "--server", "dgx-h100", "--nodes", "1"]
    p = planner_process(*args, "--json")
    assert p.returncode == 1, p.stderr
    assert json.loads(p.stdout)["fits_memory"] is False
    assert "does not fit in GPU memory" in p.stderr and "Traceback" not in p.stderr
    # the run it describes would also outlast the servers' life: said, with how many times the capex it would cost
    assert "longer than the bought servers' service life (--life-years 4)" in p.stderr


def test_huge_amounts_print_money_in_significant_figures(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["evaluate", "--model", "llama3-8b", "--server", "dgx-h100", "--nodes", "4", "--tokens", "1e300"]
    code, out, _ = run(capsys, *args)
    cost_line = next(line for line in out.splitlines() if line.strip().startswith("cost"))
    assert code == 1 and len(cost_line) < 200, cost_line  # exit 1: a run of 1e300 tokens outlasts the servers


# ------------------------------------------------------------------------------------------ bad input
def test_argument_errors_are_one_message_not_a_screen_of_usage(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "solve", "--model", "llama3-8b", "--tokens", "nan", "--deadline-days", "30")
    assert code == 2
    assert err.splitlines()[0] == "planner: error: argument --tokens: must be a finite positive number, got 'nan'"
    assert "usage:" not in err and "`planner solve --help`" in err and len(err.splitlines()) == 2
    # "leave the option out for no limit" only where leaving it out means no limit (the work amount is not one)
    assert "no limit" not in err


def test_life_years_is_bounded_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    """--life-years above 15 is an argument error naming the option and its range (0, 15], not the field."""
    code, _, err = run(capsys, "solve", "--model", "llama3-8b", "--deadline-days", "30", "--life-years", "16")
    assert code == 2 and "argument --life-years: must be a number of years in (0, 15], got '16'" in err


def test_a_cpu_only_server_in_servers_is_bad_input_saying_why(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["solve", "--model", "llama3-8b", "--deadline-days", "30", "--servers", "rental-ryzen5-3600"]
    code, _, err = run(capsys, *args)
    assert code == 2 and "server 'rental-ryzen5-3600' has no GPU" in err and "dgx-h100" in err


def test_validate_out_a_directory_is_bad_input_before_the_work(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`validate --out` a directory, or a path under a file: exit 2 before any measurement is rerun."""
    code, _, err = run(capsys, "validate", "--out", str(tmp_path))
    assert code == 2 and "is a directory; give a file name" in err
    (tmp_path / "f").write_text("x")
    code, _, err = run(capsys, "validate", "--out", str(tmp_path / "f" / "r.md"))
    assert code == 2 and "is a file, not a folder" in err


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ('model,deadline_days\nbert-large,1\n"unterminated,2\n', 3),  # an unterminated quote
        ("model,deadline_days\nbert-large\n", 2),  # a missing cell
        ("model,deadline_days\nbert-large,1,5\n", 2),  # an extra cell
    ],
)
def test_a_malformed_csv_scenario_table_is_bad_input_naming_the_line(tmp_path: Path, text: str, line: int) -> None:
    """A malformed CSV scenario table is bad input (exit 2) naming the file and line, not an internal error."""
    f = tmp_path / "s.csv"
    f.write_text(text)
    p = planner_process("batch", str(f), "--out", str(tmp_path / "out"), "--no-progress")
    assert p.returncode == 2, p.stderr
    assert f"s.csv, line {line}:" in p.stderr and "cells where the header has 2" in p.stderr
    assert "internal error" not in p.stderr and "Traceback" not in p.stderr


# ---------------------------------------------------------------------------------------------- notes
def test_allowed_gpu_patterns_are_ids_families_or_prefixes(shipped: Catalog) -> None:
    """A --gpus pattern is a GPU id, a family or the start of an id, never a substring: B200 does not allow GB200
    (NVL72 racks); a pattern that matches nothing is bad input."""
    from planner.checks import match_gpus, servers_with_gpus

    assert match_gpus(shipped, ["B200"]) == {"b200"}
    assert match_gpus(shipped, ["gb200"]) == {"gb200"}
    assert match_gpus(shipped, ["H100"]) == {"h100-sxm", "h100-pcie"}
    assert match_gpus(shipped, ["A100"]) == {g for g in shipped.gpus if g.startswith("a100")}
    assert match_gpus(shipped, ["blackwell"]) == {"b200", "gb200", "b300", "gb300"}
    with pytest.raises(PlannerInputError, match="no GPU matches '200'"):
        match_gpus(shipped, ["200"])
    res = solve(PlanRequest(model="llama3-8b", tokens=1e12, deadline_days=30, objective="cost", gpus=["B200"]))
    assert res.plan is not None and res.plan.gpu == "b200"
    # the app's exact choice: the servers that carry exactly b200
    servers = servers_with_gpus(shipped, ["b200"])
    assert servers and all(shipped.server(s).gpu == "b200" for s in servers)


def test_owned_servers_past_their_life_are_said_not_silently_unused(shipped: Catalog) -> None:
    from planner.plan import owned_notes

    old = OwnedServers(server="dgx-h100", count=64, fabric="ndr400", age_years=10)
    (note,) = owned_notes(shipped, PlanRequest(model="llama3-8b", deadline_days=30, owned=[old]))
    assert "64 owned dgx-h100 on ndr400 cannot serve" in note and "past the end of their service at 4 years" in note
    young = old.model_copy(update={"age_years": 1})
    assert owned_notes(shipped, PlanRequest(model="llama3-8b", deadline_days=30, owned=[young])) == []


# ---------------------------------------------------------------------------------------- tables
def test_pareto_table_names_its_objective_columns_with_units(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["pareto", "--model", "resnet50", "--deadline-days", "0.5", "--points", "2", "--x", "cost", "--y", "time"]
    code, out, _ = run(capsys, *args)
    head = next(line for line in out.splitlines() if "server" in line).split()
    assert code == 0 and head[:2] == ["cost_usd", "time_to_train_h"], out


def test_fleet_schedule_splits_on_site_and_rented_power_in_whole_nodes() -> None:
    """The fleet schedule per slot shows whole nodes busy and facility power in two rows, on site (what counts
    against the envelope) and rented, each to 0.1 kW."""
    from planner.cli.fleet import fleet_schedule_text
    from planner.fleet import FleetPlan

    schedule = [
        {"slot": 0, "nodes": 6, "on_site": True, "facility_power_kw": 13.047609},
        {"slot": 1, "nodes": 2, "on_site": True, "facility_power_kw": 5.0},
        {"slot": 1, "nodes": 8, "on_site": False, "facility_power_kw": 80.04},
    ]
    plan = FleetPlan(
        status="optimal",
        objective="cost",
        objective_value=1.0,
        purchases=[],
        assignments=[],
        schedule=schedule,
        totals={},
        solver=None,
    )
    lines = fleet_schedule_text(plan, slots=3, slot_hours=168).splitlines()
    assert lines[0].split() == ["slot", "0", "slot", "1", "slot", "2"]
    assert lines[1].split() == ["nodes_busy", "6", "10", "0"]
    assert lines[2].split() == ["on_site_kw", "13.0", "5.0", "0.0"]
    assert lines[3].split() == ["rented_kw", "0.0", "80.0", "0.0"]


# ------------------------------------------------------------------------------------------ guide
def test_no_module_of_the_package_imports_the_package_itself() -> None:
    """No upward imports: `import planner` (or `from planner import NAME` of a non-module) inside planner/ goes
    through planner/__init__.py, which imports the subpackages: a cycle."""
    pkg = ROOT / "planner"
    modules = {p.stem for p in pkg.glob("*.py")} | {p.name for p in pkg.iterdir() if (p / "__init__.py").exists()}
    bad = []
    for path in sorted(pkg.rglob("*.py")):
        if path == pkg / "__init__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import) and any(a.name == "planner" for a in node.names):
                bad.append(f"{path.name}:{node.lineno} import planner")
            if isinstance(node, ast.ImportFrom) and node.module == "planner":
                bad += [
                    f"{path.name}:{node.lineno} from planner import {a.name}"
                    for a in node.names
                    if a.name not in modules
                ]
    assert not bad, bad


def test_cli_modules_import_each_other_one_way() -> None:
    """common imports no other module of the CLI; plan (the single-job request of solve and pareto) imports only
    common; a command module imports neither main nor another command (solve and pareto share plan); main imports
    every command; no presentation module imports the CLI."""

    def planner_imports(name: str) -> set[str]:
        tree = ast.parse((ROOT / "planner" / f"{name}.py").read_text())
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("planner."):
                found.add(node.module.removeprefix("planner."))
        return found

    commands = {f"cli.{c}" for c in ("catalog", "evaluate", "validate", "solve", "pareto", "fleet", "batch")}
    assert not {m for m in planner_imports("cli/common") if m.startswith("cli")}
    assert not planner_imports("cli/plan") & {"cli.main", "cli", *commands}
    for command in sorted(commands):
        assert not planner_imports(command.replace(".", "/")) & {"cli.main", "cli", *(commands - {command})}, command
    assert commands <= planner_imports("cli/main")
    for path in sorted((ROOT / "planner" / "present").glob("*.py")):
        assert not {m for m in planner_imports(f"present/{path.stem}") if m.startswith("cli")}, path.name


def test_fleet_says_what_it_does_and_when_it_stops(tmp_path: Path) -> None:
    """`planner fleet` says on stderr what runs and when it stops (its time limit) before the plan, which may take a
    minute or more for many jobs; the schedule per slot shows on-site and rented power."""
    f = tmp_path / "tiny.yaml"
    f.write_text(
        "slots: 2\nslot_hours: 24\nsite: us-colo\nobjective: cost\npurchase: buy\ngpus: [L40S]\nmax_nodes: 4\n"
        "jobs:\n  - {id: bert, model: bert-large, release_slot: 0, due_slot: 1}\n"
    )
    p = planner_process("fleet", str(f), "--time-limit", "7")
    assert p.returncode == 0, p.stderr
    assert "Planning the fleet (1 job over 2 slots)" in p.stderr and "stops at 7 s" in p.stderr
    assert "Schedule per slot" in p.stdout and "on_site_kw" in p.stdout and "rented_kw" in p.stdout


def test_batch_exports_counts_as_whole_numbers(tmp_path: Path) -> None:
    """results.csv writes counts (nodes, gpus, attempts) as whole numbers even beside a row with no plan, whose
    count cells are empty."""
    import csv

    from planner.batch import run as batch

    scenarios = [
        {"model": "bert-large", "deadline_days": 1, "gpus": ["H100"]},
        {"model": "bert-large", "deadline_days": 1e-5, "max_nodes": 1},  # infeasible: no nodes
    ]
    batch(scenarios, tmp_path / "o", workers=1, progress=False)
    rows = list(csv.DictReader((tmp_path / "o" / "results.csv").open()))
    planned = next(r for r in rows if r["status"] == "optimal")
    assert planned["nodes"].isdigit() and planned["gpus"].isdigit() and planned["attempts"].isdigit(), planned
    assert next(r for r in rows if r["status"] == "infeasible")["nodes"] == ""


def test_the_apps_command_line_reproduces_the_request_exactly() -> None:
    """The app's `planner` command for a request parses back into the same request: every digit of the tokens
    (14999552000000, not 1.49996e+13), of budgets such as 1234567.89, and every field set."""
    import argparse
    import shlex

    from planner.cli.main import build_parser
    from planner.cli.plan import request_from_args
    from planner.present import cli_command

    req = PlanRequest.model_validate(
        {
            "model": "llama3-8b",
            "tokens": 14999552000000.0,
            "deadline_days": 29.123456789,
            "budget_usd": 1234567.89,
            "budget_kind": "total",
            "power_kw": 1234.5678,
            "sites": ["us-colo", "hydro-nordic"],
            "objective": "cost",
            "purchase": "either",
            "gpus": ["H100"],
            "servers": ["dgx-h100", "hgx-h200"],
            "fabrics": ["ndr400"],
            "power_caps": [0.55, 1.0],
            "global_batch": 1000,
            "max_nodes": 77,
            "max_rack_units": 900,
            "precision": "fp8",
            "framework": "megatron",
            "owned": [{"server": "dgx-h100", "count": 8, "fabric": "ndr400", "age_years": 2.5}],
            "life_years": 5.5,
            "alternatives": 5,
            "solver": {"time_limit_s": 12.5, "mip_rel_gap": 1e-4, "threads": 2},
        }
    )
    argv = shlex.split(cli_command(req))
    assert argv[:2] == ["planner", "solve"]
    args = build_parser().parse_args(argv[1:])
    assert isinstance(args, argparse.Namespace)
    back = request_from_args(args, args.objective, args.alternatives)
    assert back.model_dump() == req.model_dump()


def test_long_solves_tick_their_seconds_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long solve (--max-nodes 100000: ~40 s) ticks its seconds on one line of a terminal's stderr, then says
    when it is done; where stderr is a file (scripts) nothing is added."""
    import io
    import time

    from planner.cli import common as cli_common

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(cli_common, "FIRST_TICK_S", 0.1)
    monkeypatch.setattr(cli_common, "TICK_S", 0.2)
    for stream, shown in ((Terminal(), True), (io.StringIO(), False)):
        monkeypatch.setattr(sys, "stderr", stream)
        assert cli_common.with_progress(lambda: time.sleep(0.6) or 42, "solving") == 42
        text = stream.getvalue()
        ticks = re.findall(r"\rplanner: solving: (\d+) s", text)
        assert (len(ticks) >= 2 and re.search(r"\rplanner: solving: done in \d+ s\n$", text) is not None) == shown
        assert bool(text) == shown


@pytest.mark.parametrize("text", ["scenarios: []\n", "[]\n"])
def test_an_empty_scenario_list_is_said_to_be_empty(tmp_path: Path, text: str) -> None:
    """A scenario file whose list is empty is bad input saying the list is empty (not one scenario of nothing)."""
    from planner.batch import load_scenarios
    from planner.errors import PlannerInputError

    f = tmp_path / "s.yaml"
    f.write_text(text)
    with pytest.raises(PlannerInputError, match="the list is empty"):
        load_scenarios(f)


def test_caps_that_leave_out_full_power_with_rented_cloud_gpus_are_said(
    capsys: pytest.CaptureFixture[str], shipped: Catalog
) -> None:
    """A rented cloud server runs at 1.0 of TDP only: `--rent --power-caps 0.5 --servers hgx-b200` is exit 2 saying
    so and to add 1.0 to --power-caps; where other rentals remain, a note names the rentals the caps exclude."""
    from planner.checks import rentals_without_caps
    from planner.cli.plan import note_rentals_without_caps

    def check_rented_caps(cat: Catalog, req: PlanRequest) -> None:
        note_rentals_without_caps(cat, req, rentals_without_caps(cat, req))

    args = ["solve", "--model", "llama3-8b", "--deadline-days", "30", "--rent", "--power-caps", "0.5"]
    code, _, err = run(capsys, *args, "--servers", "hgx-b200")
    assert code == 2 and "rented hgx-b200 do not let you set the GPU power limit" in err
    assert "add 1.0 to --power-caps" in err
    # renting only, with dedicated rentals (settable) left: a note names the servers the caps exclude
    req = PlanRequest(model="llama3-8b", deadline_days=30, purchase="rent", power_caps=[0.5])
    check_rented_caps(shipped, req)
    assert "hgx-b200" in capsys.readouterr().err
    check_rented_caps(shipped, req.model_copy(update={"power_caps": [0.5, 1.0]}))
    check_rented_caps(shipped, req.model_copy(update={"purchase": "buy"}))
    assert capsys.readouterr().err == ""


def test_more_local_workers_than_cores_is_a_note(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More local --workers than CPU cores is a note (each is a process with its own memory)."""
    f = tmp_path / "s.yaml"
    f.write_text("scenarios:\n  - {model: no-such-model, deadline_days: 1}\n")
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    code, _, err = run(capsys, "batch", str(f), "--out", str(tmp_path / "o"), "--workers", "2", "--no-progress")
    assert code == 2 and "--workers 2 on 1 CPU cores" in err


def test_every_csv_read_checks_its_rows_against_the_header(tmp_path: Path) -> None:
    """Every CSV the planner reads (catalog or scenarios) is checked row by row against its header: a missing or an
    extra cell is bad input naming the line; an empty cell is None."""
    from planner.data import read_records

    good = tmp_path / "ok.csv"
    good.write_text("id,count\na,1\nb,\n")
    assert read_records(good) == [{"id": "a", "count": "1"}, {"id": "b", "count": None}]
    for body, line in (("id,count\na,1\nb\n", 3), ("id,count\na,1,2\n", 2)):
        bad = tmp_path / "bad.csv"
        bad.write_text(body)
        with pytest.raises(PlannerInputError, match=f"bad.csv, line {line}: "):
            read_records(bad)


def test_owned_servers_round_trip_every_digit_of_their_age() -> None:
    from planner.checks import format_owned, parse_owned

    owned = [OwnedServers.model_validate(o) for o in parse_owned("dgx-a100-80gb:64:hdr200:2.123456")]
    assert format_owned(owned) == "dgx-a100-80gb:64:hdr200:2.123456"


def test_an_unknown_option_is_answered_with_what_to_write_instead(capsys: pytest.CaptureFixture[str]) -> None:
    """A scenario's or the API's field name that the command line spells otherwise (--purchase) says which options
    set it; a misspelt option names the nearest ones of any command; neither runs anything."""
    base = ["solve", "--model", "llama3-8b", "--deadline-days", "30"]
    code, out, err = run(capsys, *base, "--purchase", "rent")
    assert code == 2 and not out
    assert "unrecognized arguments: --purchase rent" in err and "--purchase: use --rent or --either" in err
    code, _, err = run(capsys, *base, "--powr-kw", "100")
    assert code == 2 and "--powr-kw: did you mean --power-kw?" in err
    code, _, err = run(capsys, *base, "--zzz")
    assert code == 2 and "did you mean" not in err and "(all options: `planner --help`)" in err


def test_a_misspelt_required_option_is_named_before_the_missing_one(capsys: pytest.CaptureFixture[str]) -> None:
    """`--modl` for `--model`: the misspelling is the error (with the nearest options), not "--model is required";
    a required option left out with nothing misspelt is still said as missing."""
    code, out, err = run(capsys, "solve", "--modl", "llama3-8b", "--tokens", "1e12")
    assert code == 2 and not out
    assert "unrecognized arguments: --modl" in err and "did you mean --model" in err and "required" not in err
    code, _, err = run(capsys, "solve", "--tokens", "1e12")
    assert code == 2 and "the following arguments are required: --model" in err


def test_solve_needs_a_deadline_unless_it_asks_for_the_fastest_plan(capsys: pytest.CaptureFixture[str]) -> None:
    """`planner solve --objective time` plans without --deadline-days, as the API and the app do (the app's "same
    request on the command line" for a deadline left at 0 has none); any other objective without one is exit 2,
    saying so."""
    from planner.cli.main import main

    args = ["solve", "--model", "llama3-8b", "--tokens", "1e11", "--alternatives", "0"]
    assert main([*args, "--objective", "time"]) == 0
    assert "Optimal plan (objective: time)" in capsys.readouterr().out
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "--deadline-days is required" in err and "unless --objective time" in err
