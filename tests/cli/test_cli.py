"""The command line: JSON shapes, exit codes, and clear messages (never a traceback) on bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from planner.cli.main import main

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
def test_catalog_json_lists_every_entry_with_its_fields(capsys: pytest.CaptureFixture[str], table: str) -> None:
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


def test_models_json_lists_each_workload_with_its_size_and_precision(capsys: pytest.CaptureFixture[str]) -> None:
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


def test_evaluate_time_scales_with_the_tokens_and_epochs_need_a_dataset_size(
    capsys: pytest.CaptureFixture[str],
) -> None:
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
    assert code == 2 and "--epochs: 'llama3-8b' states no dataset size (dataset_samples" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["evaluate", "--model", "bert", "--server", "dgx-h100", "--nodes", "1"], "unknown model 'bert'"),
        (
            ["evaluate", "--model", "bert-large", "--server", "dgx-h100", "--nodes", "0"],
            "must be a whole number from 1 to 100,000",
        ),
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
        (["solve", "--model", "bert-large", "--deadline-days", "3", "--budget-usd", "-1"], "--budget-usd"),
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
    ex = d["explanation"]
    assert code == 1 and d["status"] == "infeasible" and (ex["relaxations"] or ex["pairs"])
    # a bought plan ends within the servers' 4-year life: no stated deadline is longer (not "1,994 days" alone)
    stated = ex["relaxations"] + [x for p in ex["pairs"] for x in p["relaxations"]]
    assert all(x["needed"] <= 4 * 365.25 for x in stated if x["requirement"] == "deadline")
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


def test_pareto_json_has_a_row_per_point_with_both_objectives(capsys: pytest.CaptureFixture[str]) -> None:
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


# ------------------------------------------------------------------ every bad input: exit 2, never internal
BASE_SOLVE = ["solve", "--model", "llama3-8b", "--deadline-days", "30"]
BASE_EVAL = ["evaluate", "--model", "bert-large", "--server", "dgx-h100", "--nodes", "4"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([*BASE_SOLVE, "--gap", "-1"], "a relative MIP gap is a number in [0, 1)"),
        ([*BASE_SOLVE, "--gap", "1"], "a relative MIP gap is a number in [0, 1)"),
        ([*BASE_SOLVE, "--power-caps", "0.1"], "below every GPU's lowest power limit"),
        ([*BASE_SOLVE, "--tokens", "-1e12"], "--tokens: must be a positive number, got '-1e12'"),
        ([*BASE_SOLVE, "--budget-usd", "inf"], "leave the option out for no limit"),
        ([*BASE_SOLVE, "--power-kw", "inf"], "leave the option out for no limit"),
        ([*BASE_SOLVE, "--budget-usd", "nan"], "--budget-usd: must be a finite number"),
        ([*BASE_SOLVE, "--alternatives", "21"], "from 0 to 20"),
        (["pareto", "--model", "resnet50", "--deadline-days", "1", "--points", "100000"], "from 2 to 50"),
        (["pareto", "--model", "resnet50", "--deadline-days", "1", "--x", "cost", "--y", "cost"], "two different"),
        (
            ["evaluate", "--model", "llama3-8b", "--server", "rental-i5-13500-rtx4000", "--nodes", "2"],
            "offered for rent only: add --rent",
        ),
        ([*BASE_EVAL, "--rent", "--power-cap", "0.7"], "does not let you set the GPU power limit"),
        (
            ["evaluate", "--model", "gpt3-175b", "--server", "dgx-a100-80gb", "--nodes", "64", "--precision", "fp8"],
            "a100-sxm-80gb has no fp8",
        ),
        ([*BASE_EVAL, "--framework", "caffe"], "unknown framework 'caffe'"),
        ([*BASE_EVAL, "--tp", "3", "--framework", "megatron"], "--tp 3 does not divide the 8 GPUs of a dgx-h100 node"),
        ([*BASE_EVAL, "--tp", "2", "--framework", "pytorch-ddp"], "does not support tensor parallelism"),
        ([*BASE_EVAL, "--zero", "3", "--framework", "horovod"], "does not support ZeRO stage 3"),
        (
            [*BASE_EVAL, "--pp", "2", "--zero", "3", "--framework", "deepspeed"],
            "does not support ZeRO stage 3 with pipeline parallelism (--pp 2: it pipelines up to stage 1)",
        ),
        (
            [*BASE_EVAL, "--tp", "2", "--sequence-parallel", "--framework", "pytorch-fsdp"],
            "does not support sequence parallelism",
        ),
        ([*BASE_EVAL, "--zero", "4"], "from 0 to 3"),
        (["fleet", "/bin/sh"], "not a text file"),
        (["fleet", "/"], "is a directory"),
        (["batch", "/bin/sh", "--out", "x"], "not a text file"),
        (["batch", "/", "--out", "x"], "is a directory"),
        (["batch", "report", "/nonexistent-results"], "results directory not found"),
    ],
)
def test_every_bad_flag_value_or_input_file_exits_2_naming_it(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code, out, err = run(capsys, *args)
    assert code == 2, (out, err)
    assert message in err and "internal error" not in err and "Traceback" not in err


def test_batch_out_an_existing_file_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "results.txt"
    target.write_text("not a directory")
    code, _, err = run(capsys, "batch", "examples/procurement.yaml", "--out", str(target))
    assert code == 2 and "is an existing file; give a directory" in err


def test_batch_of_only_bad_scenarios_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Exit 2, and one error line on stderr with each distinct reason once, naming its first scenario."""
    f = tmp_path / "bad.yaml"
    f.write_text(
        "scenarios:\n  - {model: no-such-model, deadline_days: 3}\n  - {model: bert-large, deadline_days: -1}\n"
        "  - {model: no-such-model, deadline_days: 4}\n  - {model: bert-large, deadline_days: -1, budget_usd: -5}\n"
    )
    code, out, err = run(capsys, "batch", str(f), "--out", str(tmp_path / "out"), "--workers", "1", "--no-progress")
    assert code == 2 and "every scenario is bad input" not in out
    assert "every scenario is bad input (4 of 4): scenario " in err and err.count("every scenario is bad input") == 1
    assert "no-such-model" in err and "deadline_days" in err and "budget_usd" in err, err
    # one line: a message of one line per field joined; one reason said once, with how many share it
    assert len(err.splitlines()) == 1 and err.count("unknown model") == 1 and "(and 1 more)" in err, err


def test_batch_report_json_is_the_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`batch report DIR --json` prints the report it writes (its sections, text and tables), not the results rows
    (`planner batch FILE --out DIR --json` prints those)."""
    f = tmp_path / "one.yaml"
    f.write_text("scenarios:\n  - {model: resnet50, deadline_days: 1, alternatives: 0}\n")
    out_dir = tmp_path / "out"
    code, _, _ = run(capsys, "batch", str(f), "--out", str(out_dir), "--workers", "1", "--no-progress")
    assert code == 0
    code, out, _ = run(capsys, "batch", "report", str(out_dir), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["title"] == "Batch report" and doc["report"] == str(out_dir / "report.md")
    assert doc["text"][0] == "1 scenarios: 1 optimal."
    (workload,) = doc["sections"]
    assert workload["title"] == "Workload resnet50"
    ranked = next(s for s in workload["sections"] if s["title"].startswith("Plans ranked by"))
    (rows,) = ranked["tables"]
    assert len(rows) == 1 and rows[0]["rank"] == 1 and rows[0]["server"]
    rows_json = json.loads(run(capsys, "batch", str(f), "--out", str(out_dir), "--no-progress", "--json")[1])
    assert rows_json["results"][0]["server"] == rows[0]["server"]


def test_pareto_infeasible_exits_1_like_solve(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--model", "llama3-70b", "--tokens", "15e12", "--deadline-days", "30", "--power-kw", "50"]
    code_p, out_p, _ = run(capsys, "pareto", *args, "--points", "3")
    code_s, _, _ = run(capsys, "solve", *args)
    assert code_p == code_s == 1
    assert "No feasible plan" in out_p and "relax" in out_p


def test_pareto_says_why_it_has_fewer_points(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "pareto", "--model", "resnet50", "--deadline-days", "0.5", "--points", "8")
    assert code == 0
    shown = json.loads(run(capsys, "pareto", "--model", "resnet50", "--deadline-days", "0.5", "--json")[1])
    if len(shown) < 8:
        assert "share the same optimal plan" in out


def test_rent_only_server_without_rent_is_an_error_and_with_rent_a_price(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["evaluate", "--model", "resnet50", "--server", "rental-i5-13500-rtx4000", "--nodes", "2"]
    code, out, err = run(capsys, *args)
    assert code == 2 and "$nan" not in out + err
    code, out, _ = run(capsys, *args, "--rent", "--json")
    d = json.loads(out)
    assert code == 0 and d["cost_usd"] is not None and d["cost_usd"] % 260 == 0


def test_workload_fp8_on_a_gpu_without_fp8_is_noted(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "evaluate", "--model", "gpt3-175b", "--server", "dgx-a100-80gb", "--nodes", "64")
    assert code == 0 and "note:" in err and "has no fp8" in err and "precision bf16" in out


def test_global_batch_rounded_up_is_noted(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, *BASE_EVAL, "--global-batch", "3", "--json")
    d = json.loads(out)
    assert code == 0 and d["global_batch"] > 3
    assert f"global batch 3 was rounded up to {d['global_batch']}" in err and d["notices"]
    code, out, err = run(capsys, *BASE_EVAL, "--global-batch", str(d["global_batch"]), "--json")
    assert code == 0 and json.loads(out)["global_batch"] == d["global_batch"] and "rounded" not in err


def test_broken_pipe_is_not_an_internal_error(tmp_path: Path) -> None:
    # the reader closes its end at once, so every write of planner hits a broken pipe
    proc = subprocess.run(
        [
            "bash",
            "-c",
            f"'{sys.executable}' -m planner.cli catalog servers | (exec 0<&-; true); echo ${{PIPESTATUS[0]}}",
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "0"


def test_every_flag_has_help_with_its_default() -> None:
    import argparse

    from planner.cli.main import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, p in sub.choices.items():
        text = p.format_help()
        for action in p._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help, f"{name} {action.option_strings or action.dest} has no help"
            if action.option_strings and action.default not in (None, False, argparse.SUPPRESS):
                assert "default" in (p._get_formatter()._get_help_string(action) or ""), (name, action.dest)
        assert "%" not in text.replace("%%", "")  # help strings render


def test_help_explains_cost_and_up_front(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["solve", "--help"])
    out = capsys.readouterr().out
    assert "'up-front'" in out and "'cost'" in out and "upfront" in out and "total" in out
    assert "--life-years" in out and "amortized" in out


# ------------------------------------------------------------------ issue 11 item 5: layouts and frameworks
def test_layout_flags_round_trip_into_the_json_layout(capsys: pytest.CaptureFixture[str]) -> None:
    from planner.data import Layout

    args = ["evaluate", "--model", "llama3-8b", "--server", "dgx-h100", "--nodes", "4", "--json"]
    flags = ["--tp", "2", "--pp", "2", "--vp", "2", "--zero", "1", "--recompute", "selective"]
    flags += ["--sequence-parallel", "--micro-batch", "1"]
    code, out, err = run(capsys, *args, *flags)
    d = json.loads(out)
    assert code == 0, err
    spec = Layout.model_validate(d["layout_spec"])
    assert spec == Layout(
        tensor_parallel=2,
        pipeline_parallel=2,
        virtual_stages=2,
        zero_stage=1,
        recompute="selective",
        sequence_parallel=True,
        micro_batch=1,
    )
    assert d["layout"] == spec.label(d["gpus"] // 4) == "DP8 TP2 PP2 VP2 ZeRO-1 SP sel-recompute mb1"
    code, out, _ = run(capsys, *args, "--tp", "8", "--recompute", "full")
    d8 = json.loads(out)
    assert code == 0 and d8["layout"] == Layout(tensor_parallel=8, recompute="full").label(4)


def test_framework_flag_changes_the_profile(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["evaluate", "--model", "resnet50", "--server", "dgx-a100-80gb", "--nodes", "16", "--json"]
    base = json.loads(run(capsys, *args)[1])
    tf = json.loads(run(capsys, *args, "--framework", "tensorflow")[1])
    assert tf["framework"] == "tensorflow" and tf["step_time_s"] != base["step_time_s"]
    code, out, _ = run(capsys, "catalog", "frameworks", "--json")
    ids = {r["id"] for r in json.loads(out)}
    assert code == 0 and {"tensorflow", "pytorch-ddp", "horovod", "ray-train"} <= ids


def test_solve_json_names_the_framework_given(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "solve", "--model", "resnet50", "--deadline-days", "1", "--framework", "horovod", "--json"
    )
    assert code == 0 and json.loads(out)["framework"] == "horovod"


# ------------------------------------------------------------------ fuzz: exit codes 0/1/2, never internal
def _fuzz_args() -> Any:
    from hypothesis import strategies as st

    numbers = st.sampled_from(["0", "-1", "1", "0.5", "1e12", "-1e12", "inf", "nan", "abc", "", "3", "1e400"])
    flag_values = st.tuples(
        st.sampled_from(
            [
                "--tokens",
                "--samples",
                "--epochs",
                "--deadline-days",
                "--budget-usd",
                "--power-kw",
                "--power-caps",
                "--global-batch",
                "--max-nodes",
                "--gap",
                "--life-years",
                "--alternatives",
                "--precision",
                "--site",
                "--gpus",
                "--framework",
                "--tp",
                "--pp",
                "--vp",
                "--zero",
                "--recompute",
                "--micro-batch",
                "--power-cap",
            ]
        ),
        st.one_of(
            numbers,
            st.sampled_from(["fp8", "bf16", "us-colo", "mars", "A100", "megatron", "0.1,0.9", "2", "8", "full"]),
        ),
    )
    return st.tuples(
        st.sampled_from(["solve", "pareto", "evaluate", "evaluate"]),
        st.sampled_from(["resnet50", "bert-large", "nope"]),
        st.lists(flag_values, max_size=4),
    )


def test_fuzz_solve_pareto_and_evaluate_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    from hypothesis import HealthCheck, given, settings

    @settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(_fuzz_args())
    def check(case: Any) -> None:
        command, model, flags = case
        argv = [command, "--model", model]
        if command == "evaluate":
            argv += ["--server", "dgx-h100", "--nodes", "2"]
        else:
            argv += ["--time-limit", "5"]
        if command == "pareto":
            argv += ["--points", "2"]
        for flag, value in flags:
            argv += [flag, value]
        code, _, err = run(capsys, *argv)
        assert code in (0, 1, 2), (argv, code, err)
        assert "internal error" not in err and "Traceback" not in err, (argv, err)

    check()


def test_context_parallel_and_unsupported_megatron_features(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["evaluate", "--model", "llama3-8b", "--server", "dgx-h100", "--nodes", "4", "--tp", "2", "--json"]
    code, out, err = run(capsys, *args, "--cp", "2")
    d = json.loads(out)
    assert code == (0 if d["fits_memory"] else 1), err  # a layout that does not fit memory is exit 1, with a note
    assert d["layout_spec"]["context_parallel"] == 2 and "CP2" in d["layout"]
    code, _, err = run(capsys, *args, "--recompute", "selective", "--framework", "pytorch-fsdp")
    assert code == 2 and "does not support selective recomputation" in err
    code, _, err = run(capsys, *args, "--cp", "2", "--framework", "pytorch-fsdp")
    assert code == 2 and "does not support context parallelism (--cp 2)" in err


def test_solve_imports_neither_scipy_nor_the_other_commands() -> None:
    """`planner solve` hands its MIP to HiGHS without SciPy and imports the module of its own command only (not the
    batch, fleet, validation, evaluate or catalog commands), nor the fleet, batch or validation packages."""
    code = (
        "import sys\nfrom planner.cli.main import main\ncode = main(sys.argv[1:])\n"
        "heavy = ('scipy', 'planner.cli.batch', 'planner.cli.fleet', 'planner.cli.validate', 'planner.cli.evaluate', "
        "'planner.cli.catalog', 'planner.fleet', 'planner.batch', 'planner.validation')\n"
        "sys.stderr.write(repr((code, sorted(m for m in heavy if m in sys.modules))))\n"
    )
    args = ["solve", "--model", "llama3-8b", "--tokens", "2e11", "--deadline-days", "20", "--alternatives", "0"]
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300)
    assert proc.stderr.splitlines()[-1] == "(0, [])", proc.stderr[-2000:]


@pytest.mark.parametrize(
    "argv",
    [
        ["solve", "--model", "llama3-8b", "--tokens", "1e12", "--deadline-days", "30"],
        ["batch", "report", "out"],
        ["catalog", "gpus"],
        ["fleet", "x.yaml", "--json"],
        ["validate", "--case", "x"],
        ["pareto", "--model", "llama3-8b", "--tokens", "1e12"],
    ],
)
def test_a_command_parses_the_same_with_its_parser_alone(argv: list[str]) -> None:
    """`planner CMD ...` is read by the parser of CMD alone (planner.cli.main.parser_for): the same namespace as the
    whole parser's."""
    from planner.cli.main import build_parser, parser_for

    def parsed(parser: Any) -> dict[str, Any]:
        try:
            return {k: v for k, v in vars(parser.parse_args(argv)).items() if k != "func"}
        except SystemExit as exc:
            return {"exit": exc.code}

    assert parsed(parser_for(argv)) == parsed(build_parser())


def test_every_command_of_the_parser_is_registered_alone() -> None:
    import argparse

    from planner.cli.main import COMMANDS, build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert [n for names, _add in COMMANDS for n in names] == list(sub.choices)
    for names, _add in COMMANDS:
        alone = next(a for a in build_parser(names[0])._actions if isinstance(a, argparse._SubParsersAction))
        assert list(alone.choices) == list(names)


def test_power_caps_help_states_the_model_default() -> None:
    import argparse
    import itertools

    from planner.cli.main import build_parser
    from planner.physics import DEFAULT_CAPS

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    caps_help = next(a.help for a in sub.choices["solve"]._actions if "--power-caps" in a.option_strings) or ""
    steps = {round(b - a, 9) for a, b in itertools.pairwise(DEFAULT_CAPS)}
    assert len(steps) == 1, "DEFAULT_CAPS is not evenly spaced: update the --power-caps help"
    stated = f"default: {min(DEFAULT_CAPS):.1f} to {max(DEFAULT_CAPS):.1f} in steps of {steps.pop():g}"
    assert stated in " ".join(caps_help.split()), caps_help


def test_max_rack_units_limits_the_plan(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["solve", "--model", "llama3-8b", "--tokens", "2e11", "--deadline-days", "20", "--alternatives", "0"]
    code, out, _ = run(capsys, *args, "--json")
    free = json.loads(out)
    assert code == 0
    limit = max(1, free["rack_units"] - 1)  # one U less than the free plan fills
    code, out, err = run(capsys, *args, "--max-rack-units", str(limit), "--json")
    if code == 0:
        d = json.loads(out)
        assert d["rack_units"] <= limit
    else:
        assert code == 1 and "rack" in (out + err)
    assert run(capsys, *args, "--max-rack-units", "0")[0] == 2


@pytest.mark.parametrize(
    "args",
    [["catalog", "gpus"], ["--help"], ["evaluate", "--model", "llama3-8b", "--server", "dgx-h100", "--nodes", "2"]],
)
def test_commands_that_do_not_solve_do_not_import_the_optimizer(args: list[str]) -> None:
    """`planner catalog`, `planner --help` and `planner evaluate` run without loading Pyomo or HiGHS (the optimizer is
    imported by the commands that solve)."""
    code = (
        "import sys\nfrom planner.cli.main import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "sys.stderr.write(repr(sorted(m for m in ('pyomo', 'highspy') if m in sys.modules)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120)
    assert proc.stderr.splitlines()[-1] == "[]", proc.stderr[-2000:]
