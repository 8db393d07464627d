"""What the command line promises beyond a plan: output that cannot be written is one line and exit 2 (standard
output on a full disk too); a reference folder that is empty or lacks a file is bad input naming it; a scenario grid
too large to run is refused before it is expanded; a CSV header naming a column twice is bad input and a byte-order
mark is read; an option given where it does nothing is refused; `batch report` has its own help; `calibrate` says what
it does and how long it takes; `catalog servers` says what its rental column means; `--version`; tables and notes fit
the terminal (or `--wide`).
"""

from __future__ import annotations

import errno
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from planner.cli.main import main
from planner.data import catalog_dir, reference_dir
from planner.version import __version__
from tests.cli.test_cli import run

ROOT = Path(__file__).resolve().parents[2]


def planner_to(stdout: Any, *args: str) -> subprocess.CompletedProcess[str]:
    """`planner ARGS` in a new interpreter, its standard output sent to ``stdout``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PLANNER_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "planner.cli", *args], stdout=stdout, stderr=subprocess.PIPE, text=True, env=env,
        timeout=120,
    )  # fmt: skip


# --------------------------------------------------------------------------------------------- output
@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize(
    "args",
    [
        ["catalog", "gpus"],
        ["models", "--json"],
        ["--version"],
        ["--help"],
        ["evaluate", "--model", "resnet50", "--server", "dgx-a100-80gb", "--nodes", "2"],
    ],
)
def test_standard_output_on_a_full_disk_is_one_line_and_exit_2(args: list[str]) -> None:
    """`planner ... > file` on a full disk (/dev/full): exit 2 and one line saying the output cannot be written, never
    an internal error or Python's 'Exception ignored' at exit; short output (--version) too, which only fails when it
    is flushed."""
    with open("/dev/full", "w") as full:
        p = planner_to(full, *args)
    assert p.returncode == 2, p.stderr
    assert (
        p.stderr.splitlines() == [p.stderr.splitlines()[0]]
        and "cannot write the output" in p.stderr
        and "No space left on device (disk full)" in p.stderr
    ), p.stderr


def test_a_write_error_of_the_output_in_process_is_exit_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    class Full(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(sys, "stdout", Full())
    code = main(["catalog", "sites"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("planner: error: cannot write the output") and err.count("\n") == 1, err


@pytest.mark.parametrize("command", ["validate", "calibrate"])
def test_an_empty_or_incomplete_reference_folder_is_bad_input_naming_the_file(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`planner validate` and `planner calibrate` with --reference an empty folder, or one without a file they read:
    exit 2 at once naming the folder or the missing file (calibrate writes nothing)."""
    cat = tmp_path / "catalog"
    shutil.copytree(catalog_dir(), cat)
    before = {p.name: p.read_bytes() for p in cat.iterdir()}
    empty = tmp_path / "empty"
    empty.mkdir()
    part = tmp_path / "part"
    part.mkdir()
    for f in reference_dir().glob("*.md"):  # the notes, none of the tables
        shutil.copy(f, part / f.name)
    extra = ["--out", str(tmp_path / "V.md")] if command == "validate" else []
    code, _, err = run(capsys, command, "--reference", str(empty), "--catalog", str(cat), *extra)
    assert code == 2 and f"the reference folder {empty} is empty" in err and "Traceback" not in err, err
    code, _, err = run(capsys, command, "--reference", str(part), "--catalog", str(cat), *extra)
    missing = "mlperf_training_calibration.csv" if command == "validate" else "zeus/zeus_v100.csv"
    assert code == 2 and f"the reference folder {part} lacks {missing}" in err, err
    assert "internal error" not in err
    assert {p.name: p.read_bytes() for p in cat.iterdir()} == before


# --------------------------------------------------------------------------------------------- batch input
def test_a_huge_grid_is_refused_in_under_a_second_with_its_size_and_the_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """6 keys x 40 values (4.1e9 scenarios) is counted before it is expanded: exit 2 in under a second naming the
    count, each key's values and the limit; nothing is written."""
    values = list(range(1, 41))
    keys = ("deadline_days", "budget_usd", "power_kw", "max_nodes", "pue", "carbon_kg_per_kwh")
    spec = {"base": {"model": "resnet50"}, "grid": dict.fromkeys(keys, values)}
    f = tmp_path / "huge.yaml"
    f.write_text(json.dumps(spec))
    out = tmp_path / "out"
    t0 = time.perf_counter()
    code, _, err = run(capsys, "batch", str(f), "--out", str(out), "--no-progress")
    took = time.perf_counter() - t0
    assert code == 2 and took < 1.0, (took, err)
    assert "makes 4,096,000,000 scenarios (40 deadline_days x 40 budget_usd x" in err and "than the 100,000" in err
    assert not out.exists()


def test_a_csv_header_naming_a_column_twice_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "s.csv"
    f.write_text("model,deadline_days,model\nresnet50,1,bert-large\n")
    code, _, err = run(capsys, "batch", str(f), "--out", str(tmp_path / "out"), "--no-progress")
    assert code == 2 and "the header names 'model' more than once" in err, err


def test_a_csv_with_a_byte_order_mark_reads_its_first_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Excel writes CSV with a UTF-8 byte-order mark: the first column is `model`, not an unknown field."""
    f = tmp_path / "s.csv"
    f.write_bytes("\ufeffmodel,deadline_days\nresnet50,1\n".encode())
    out = tmp_path / "out"
    code, stdout, err = run(capsys, "batch", str(f), "--out", str(out), "--no-progress", "--workers", "1", "--json")
    doc = json.loads(stdout)
    assert code == 0, err
    assert doc["results"][0]["model"] == "resnet50" and doc["results"][0]["status"] == "optimal"


# --------------------------------------------------------------------------------------------- options
EVAL = ["evaluate", "--model", "llama3-8b", "--server", "dgx-h100", "--nodes", "4"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["batch", "examples/procurement.yaml", "--out", "o", "--ray-address", "10.0.0.1:6379"],
         "--ray-address needs --engine ray"),
        ([*EVAL, "--sequence-parallel"], "--sequence-parallel needs --tp > 1"),
        ([*EVAL, "--tp", "1", "--sequence-parallel"], "--sequence-parallel needs --tp > 1"),
        ([*EVAL, "--vp", "2"], "--vp needs --pp > 1"),
    ],
)  # fmt: skip
def test_an_option_given_where_it_does_nothing_is_refused(
    capsys: pytest.CaptureFixture[str], args: list[str], said: str
) -> None:
    code, _, err = run(capsys, *args)
    assert code == 2 and err.startswith(f"planner: error: {said}"), err


def test_an_option_with_what_it_needs_runs(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, *EVAL, "--json", "--tp", "2", "--sequence-parallel", "--pp", "2", "--vp", "2")
    assert code in (0, 1) and "SP" in json.loads(out)["layout"] and "VP2" in json.loads(out)["layout"], err


def test_vp_left_out_is_searched_as_the_help_and_readme_say(capsys: pytest.CaptureFixture[str]) -> None:
    """A degree left out is 1, except --vp: the fastest interleave that fits (what the model did all along), as the
    help and the README say."""
    code, out, _ = run(capsys, *EVAL, "--pp", "2", "--json")
    d = json.loads(out)
    assert code in (0, 1) and d["layout_spec"]["virtual_stages"] is None and "VP" in d["layout"]
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "(a degree left out is 1; --vp left out: the fastest that fits)" in readme
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    assert "interleaved schedule (needs --pp > 1; default: the fastest)" in " ".join(capsys.readouterr().out.split())


# --------------------------------------------------------------------------------------------- help and text
def test_batch_report_help_is_the_reports_own(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "batch", "report", "--help")
    assert code == 0 and out.startswith("usage: planner batch report [-h] [--json] DIR")
    assert not re.search(r"^\s+--(out|workers|engine)", out, re.M) and "print the report as JSON" in out
    code, _, err = run(capsys, "batch", "report", "a", "b")
    assert code == 2 and "unrecognized arguments: b" in err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out == f"planner {__version__}\n"


def test_calibrate_says_what_it_does_and_how_long_it_takes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`planner calibrate` runs for about a quarter of an hour: it says so first, and on a terminal ticks its seconds
    against the estimate (the refit itself is stubbed here)."""
    import planner.cli.common as common
    import planner.cli.validate as validate_cli

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    cat = tmp_path / "catalog"
    shutil.copytree(catalog_dir(), cat)
    monkeypatch.setattr(validate_cli, "calibrate", lambda *a: time.sleep(0.5) or {"mfu": {}})
    monkeypatch.setattr(common, "FIRST_TICK_S", 0.1)
    monkeypatch.setattr(common, "TICK_S", 0.1)
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    code = main(["calibrate", "--catalog", str(cat)])
    text = terminal.getvalue()
    assert code == 0 and json.loads(capsys.readouterr().out) == {"mfu": {}}
    message = " ".join(text.split("\rplanner: calibrating")[0].split())  # wrapped to the terminal
    assert message.startswith("planner: refitting the power-cap curves") and "(about 15 minutes on 2 cores)" in message
    assert re.search(r"\rplanner: calibrating: \d+ s of about 15 min", text), text


def test_catalog_servers_says_the_cap_column_is_about_rentals(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "catalog", "servers", "--wide")
    lines = out.splitlines()
    header = lines[0].split()
    assert code == 0 and header[-1] == "rented_cap_settable" and "power_cap_settable" not in header
    col = lines[0].index("rented_cap_settable")
    cells = {line.split()[0]: line[col:].strip() for line in lines[2:] if line and not line.startswith(" ")}
    assert cells["power-optimized-a100"] == "" and cells["dgx-h100"] == "no"  # bought only; rented in the cloud
    note = " ".join(out.split())
    assert "whether a renter may set the GPU power limit" in note
    assert "A bought server's limit is always settable" in note
    code, out, _ = run(capsys, "catalog", "servers", "--json")
    assert "power_cap_settable" in json.loads(out)[0]


SOLVE = ["solve", "--model", "llama3-8b", "--tokens", "1e12", "--deadline-days", "30", "--alternatives", "4"]


def test_the_alternatives_and_the_money_note_fit_the_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 100 columns the note on money is wrapped and the alternatives table continues below itself (each part led
    by the server); --wide (or a file or pipe, $COLUMNS unset) prints them as written. The heading says what the
    alternatives are: other options, a power cap on the same servers among them."""
    monkeypatch.setenv("COLUMNS", "100")
    code, out, _ = run(capsys, *SOLVE)
    assert code == 0
    money = out[out.index("  Money:") : out.index("\nAlternatives")]
    assert len(money.splitlines()) > 1 and all(len(line) <= 100 for line in money.splitlines())
    table = out[out.index("\nAlternatives") :].strip().splitlines()
    assert all(len(line) <= 100 for line in table), max(map(len, table))
    heads = [line for line in table if line.startswith("server ")]
    assert len(heads) >= 2 and "carbon_kg" in heads[-1] and "carbon_kg" not in heads[0]
    assert "next-best distinct hardware" not in out and "another server, fabric, power cap, site or purchase" in out
    code, wide, _ = run(capsys, *SOLVE, "--wide")
    (head,) = [line for line in wide.splitlines() if line.startswith("server ")]
    assert code == 0 and head.split()[0] == "server" and head.split()[-1] == "carbon_kg"
    assert max(len(line) for line in wide.splitlines() if "Money:" in line) > 300
    monkeypatch.delenv("COLUMNS")

    def timeless(text: str) -> str:  # the solver's seconds differ between two solves
        return re.sub(r"\d+\.\d+ s,", "s,", text)

    assert timeless(run(capsys, *SOLVE)[1]) == timeless(wide)  # not a terminal, no $COLUMNS: as written


def test_the_alternatives_table_writes_the_power_cap_as_the_plan_line_does(capsys: pytest.CaptureFixture[str]) -> None:
    """'cap 50% (500 W)' on the plan's line and '60%' in the alternatives' power_cap column, not 0.6."""
    from planner.cli.main import main

    code = main(["solve", "--model", "llama3-8b", "--tokens", "1e12", "--deadline-days", "30"])
    out = capsys.readouterr().out
    assert code == 0 and "cap 50% (500 W)" in out
    rows = out.split("power_cap", 1)[1].splitlines()[2:]
    assert rows and all(re.search(r"\s\d+%\s", r) for r in rows if r.strip()), out
    main(["solve", "--model", "llama3-8b", "--tokens", "1e12", "--deadline-days", "30", "--json"])
    alternatives = json.loads(capsys.readouterr().out)["alternatives"]
    assert alternatives and all(isinstance(a["power_cap"], float) for a in alternatives)  # JSON keeps the fraction


def test_evaluate_writes_a_short_runs_cost_in_cents_as_the_tables_do(capsys: pytest.CaptureFixture[str]) -> None:
    """100,000 ResNet-50 samples on one 4 x L40S node cost about a cent: the cost line says '$0.01' (cents under
    $10, formatting.money_text), not '$0' -- a cost of nothing."""
    assert main(["evaluate", "--model", "resnet50", "--server", "l40s-4", "--nodes", "1", "--samples", "1e5"]) == 0
    cost = next(line for line in capsys.readouterr().out.splitlines() if line.strip().startswith("cost"))
    assert re.search(r"cost\s+\$0\.0[1-9] for this run", cost), cost


def test_the_servers_table_gives_a_billing_period_only_to_servers_offered_for_rent(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """power-optimized-a100 is sold, not rented: its billing period cell is empty (the schema's default 'hour' read as
    an offer), as its rented_cap_settable cell is; a rented server keeps its period."""
    assert main(["catalog", "servers", "--json"]) == 0
    periods = {r["id"]: r["rent_billing_period"] for r in json.loads(capsys.readouterr().out)}
    assert main(["catalog", "servers", "--wide"]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line.strip()}
    assert periods["power-optimized-a100"] == "hour"  # the data keeps the schema's value
    assert "hour" not in lines["power-optimized-a100"] and "month" in lines["rental-i7-8700"]
    assert "hour" in lines["dgx-h100"]


def test_a_plan_printed_for_an_80_column_terminal_fits_it() -> None:
    """Every line of `planner solve`'s plan -- the summary's time and power line, the solver's report, the notes and
    the alternatives table -- fits 80 columns when the terminal is that wide (wrapped, continuation indented)."""
    from planner.cli.plan import render_result
    from planner.plan import PlanRequest, solve

    res = solve(PlanRequest(model="llama3-8b", tokens=1e12, deadline_days=30, alternatives=1))
    text = render_result(res, 80)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "rack" in text and "vars x" in text  # the lines that were longer are there, wrapped
    # and with no plan: the explanation and each relaxation
    none = solve(PlanRequest(model="llama3-8b", tokens=1e13, deadline_days=1, max_nodes=16, alternatives=0))
    text = render_result(none, 80)
    assert none.plan is None and "  - relax deadline:" in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_evaluate_refuses_a_node_count_past_the_limit_as_an_argument_error(capsys: pytest.CaptureFixture[str]) -> None:
    """--nodes 1000000 is refused by the command line's own words (the range and the help hint, exit 2), not by the
    schema's ('configuration: nodes: Input should be less than or equal to 100000')."""
    with pytest.raises(SystemExit) as exc:
        main(["evaluate", "--model", "bert-large", "--server", "dgx-a100-80gb", "--nodes", "1000000"])
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert "argument --nodes: must be a whole number from 1 to 100,000, got '1000000'" in err and "Input" not in err


def test_evaluate_and_pareto_fit_an_80_column_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """At COLUMNS=80 every line `planner evaluate` prints (its cost and step-breakdown lines were 122 and 199
    characters, continued under their values now) and `planner pareto` prints fits; --wide prints them as written."""
    monkeypatch.setenv("COLUMNS", "80")
    evaluate = ["evaluate", "--model", "llama3-405b", "--server", "dgx-h100", "--nodes", "2048", "--tokens", "1.5e13"]
    assert main(evaluate) == 0
    text = capsys.readouterr().out
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "2,048 x dgx-h100 (16,384 x h100-sxm)" in text
    breakdown = text.split("  step breakdown    ")[1].splitlines()
    assert len(breakdown) > 1 and all(line.startswith(" " * 20) for line in breakdown[1:])
    assert main([*evaluate, "--wide"]) == 0
    assert max(len(line) for line in capsys.readouterr().out.splitlines()) > 80
    pareto = ["pareto", "--model", "llama3-8b", "--tokens", "1e12", "--deadline-days", "30", "--points", "3"]
    assert main(pareto) == 0
    text = capsys.readouterr().out
    assert max(len(line) for line in text.splitlines()) <= 80 and "%" in text  # caps as shares of TDP


def test_errors_and_notes_wrap_to_a_terminal_and_stay_one_line_for_scripts(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a terminal a long 'planner: error: ...' is wrapped to its width, continuation lines indented; written to a
    file or a pipe it stays one line (what a script greps)."""
    import planner.cli.common as common

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    long = "planner: error: " + "unknown model 'llama-8b'. " * 8
    monkeypatch.setattr(common.shutil, "get_terminal_size", lambda: os.terminal_size((80, 24)))
    monkeypatch.setattr(sys, "stderr", Terminal())
    wrapped = common.said_on_stderr(long).splitlines()
    assert len(wrapped) > 1 and max(map(len, wrapped)) <= 80 and all(w.startswith("  ") for w in wrapped[1:])
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert common.said_on_stderr(long) == long


def test_catalog_gpus_says_which_gpus_no_server_carries(capsys: pytest.CaptureFixture[str]) -> None:
    """`--gpus H100` plans on dgx-h100 only: the gpus table lists h100-pcie too, and says that no server carries it
    (a GPU is planned only through a server)."""
    assert main(["catalog", "gpus", "--wide"]) == 0
    out = capsys.readouterr().out
    assert "No server of the catalog carries a100-sxm-40gb, h100-pcie: listed for reference" in out


def test_catalog_without_a_table_names_the_tables(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["catalog"])
    assert exc.value.code == 2
    assert "the following arguments are required: {gpus,servers,fabrics,sites,frameworks}" in capsys.readouterr().err
