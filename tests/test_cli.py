"""The command line: JSON shapes, exit codes, and clear messages (never a traceback) on bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from planner.cli import main

EVALUATE_KEYS = {
    "gpus",
    "throughput_samples_per_s",
    "time_to_train_h",
    "memory_per_gpu_gb",
    "fits_memory",
    "layout",
    "power_kw",
    "facility_power_kw",
    "energy_kwh",
    "facility_energy_kwh",
    "cost_usd",
    "carbon_kg",
    "achieved_tflops_per_gpu",
    "mfu",
    "bottleneck",
    "step_time_breakdown_s",
}
SOLVE_KEYS = EVALUATE_KEYS | {
    "server",
    "nodes",
    "fabric",
    "power_cap",
    "objective_value",
    "solver_status",
    "gap",
    "solve_time_s",
    "alternatives",
    "explanation",
}


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        code = main(list(args))
    except SystemExit as exc:  # argparse's own usage errors
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("table", ["gpus", "servers", "fabrics", "sites"])
def test_catalog_json(capsys: pytest.CaptureFixture[str], table: str) -> None:
    code, out, _ = run(capsys, "catalog", table, "--json")
    rows = json.loads(out)
    assert code == 0 and rows and all("id" in r for r in rows)
    if table == "servers":
        dgx = next(r for r in rows if r["id"] == "dgx-h100")
        assert dgx["gpu"] == "h100-sxm" and dgx["gpus_per_node"] == 8 and dgx["fabric_ports"] == 8
        assert dgx["price_usd"] > 0 and dgx["rent_usd_per_month"] > 0


def test_catalog_table_for_people(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "catalog", "gpus")
    assert code == 0 and "h100-sxm" in out and "bf16_tflops" in out


def test_models_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "models", "--json")
    rows = json.loads(out)
    assert code == 0 and {"id", "params", "precision"} <= set(rows[0])
    assert any(r["id"] == "gpt3-175b" and r["precision"] == "fp8" for r in rows)


def test_evaluate_json_has_the_documented_keys(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "evaluate",
        "--model",
        "bert-large",
        "--server",
        "dgx-a100-80gb",
        "--nodes",
        "4",
        "--power-cap",
        "0.8",
        "--json",
    )
    d = json.loads(out)
    assert code == 0 and set(d) >= EVALUATE_KEYS and d["gpus"] == 32


def test_evaluate_work_options(capsys: pytest.CaptureFixture[str]) -> None:
    _, a, _ = run(
        capsys, "evaluate", "--model", "llama3-8b", "--server", "dgx-h100", "--nodes", "8", "--tokens", "1e11", "--json"
    )
    _, b, _ = run(
        capsys, "evaluate", "--model", "llama3-8b", "--server", "dgx-h100", "--nodes", "8", "--tokens", "2e11", "--json"
    )
    assert json.loads(b)["time_to_train_h"] == pytest.approx(2 * json.loads(a)["time_to_train_h"])
    code, _, err = run(
        capsys, "evaluate", "--model", "llama3-8b", "--server", "dgx-h100", "--nodes", "8", "--epochs", "1"
    )
    assert code == 2 and "no dataset_samples" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["evaluate", "--model", "bert", "--server", "dgx-h100", "--nodes", "1"], "unknown model 'bert'"),
        (["evaluate", "--model", "bert-large", "--server", "dgx-h100", "--nodes", "0"], "positive whole number"),
        (
            ["evaluate", "--model", "bert-large", "--server", "dgx-h100", "--nodes", "1", "--power-cap", "1.5"],
            "fraction",
        ),
        (
            ["evaluate", "--model", "bert-large", "--server", "dgx-h100", "--nodes", "1", "--fabric", "eth1"],
            "cannot use fabric",
        ),
        (
            ["evaluate", "--model", "bert-large", "--server", "dgx-h100", "--nodes", "1", "--site", "mars"],
            "unknown site",
        ),
        (["solve", "--model", "bert-large", "--deadline-days", "-3"], "positive number"),
        (["solve", "--model", "bert-large", "--deadline-days", "3", "--gpus", "V100"], "no GPU matches 'V100'"),
        (["solve", "--model", "bert-large", "--deadline-days", "3", "--budget-usd", "-1"], "budget_usd"),
        (["catalog", "gpus", "--catalog", "/nonexistent"], "catalog directory not found"),
    ],
)
def test_bad_input_exits_2_with_a_message(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    code, _, err = run(capsys, *args)
    assert code == 2
    assert message in err and "Traceback" not in err


def test_solve_json_and_reevaluation_agree(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "solve",
        "--model",
        "llama3-8b",
        "--tokens",
        "2e11",
        "--deadline-days",
        "20",
        "--objective",
        "cost",
        "--alternatives",
        "1",
        "--json",
    )
    d = json.loads(out)
    assert code == 0 and set(d) >= SOLVE_KEYS and d["solver_status"] == "optimal"
    code, out, _ = run(
        capsys,
        "evaluate",
        "--model",
        "llama3-8b",
        "--tokens",
        "2e11",
        "--server",
        d["server"],
        "--nodes",
        str(d["nodes"]),
        "--fabric",
        d["fabric"],
        "--power-cap",
        str(d["power_cap"]),
        "--json",
    )
    e = json.loads(out)
    for key in ("time_to_train_h", "facility_energy_kwh", "cost_usd", "carbon_kg", "power_kw", "layout"):
        assert e[key] == pytest.approx(d[key], rel=1e-12) if isinstance(e[key], float) else e[key] == d[key]


def test_infeasible_solve_exits_1_with_the_relaxations(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "solve",
        "--model",
        "llama3-70b",
        "--tokens",
        "15e12",
        "--deadline-days",
        "30",
        "--budget-usd",
        "3e6",
        "--power-kw",
        "500",
        "--json",
    )
    d = json.loads(out)
    assert code == 1 and d["status"] == "infeasible" and d["explanation"]["relaxations"]
    code, out, _ = run(
        capsys,
        "solve",
        "--model",
        "llama3-70b",
        "--tokens",
        "15e12",
        "--deadline-days",
        "30",
        "--budget-usd",
        "3e6",
        "--power-kw",
        "500",
    )
    assert code == 1 and "No feasible plan" in out and "relax" in out


def test_pareto_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "pareto", "--model", "resnet50", "--deadline-days", "0.5", "--points", "4", "--json")
    rows = json.loads(out)
    assert code == 0 and len(rows) >= 1 and {"cost", "energy", "server", "nodes"} <= set(rows[0])


def test_installed_console_script_runs_from_any_directory(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "planner.cli", "catalog", "sites", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0 and "us-colo" in proc.stdout


def test_user_catalog_directory_is_used(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    from planner.data import catalog_dir

    shutil.copytree(catalog_dir(), tmp_path / "cat")
    sites = (tmp_path / "cat" / "sites.yaml").read_text().replace("id: us-colo", "id: my-site")
    (tmp_path / "cat" / "sites.yaml").write_text(sites)
    code, out, _ = run(capsys, "catalog", "sites", "--json", "--catalog", str(tmp_path / "cat"))
    assert code == 0 and "my-site" in out
