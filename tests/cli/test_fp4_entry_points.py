"""FP4 (NVFP4 / MXFP4) training on Blackwell in every entry point. A request may allow GPUs with and without fp4: a
plan or alternative on one without computes in the fallback (fp4 in fp8, fp8 in bf16), and every table that lists
such plans says in which precision; catalog and calibration numbers that would make fp4 faster than its peak are
bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from planner.data import Catalog, Gpu, load_catalog
from planner.plan import PlanRequest, pareto, solve

ROOT = Path(__file__).resolve().parents[2]


def cheap_h100(cat: Catalog) -> Catalog:
    """The shipped catalog with a DGX H100 at $20,000: its (fp8) plans are the cheapest, the B200's (fp4) the
    fastest, so a cost-time front and a cost plan's alternatives mix the two precisions."""
    h = cat.server("dgx-h100").model_copy(update={"price_usd": 20_000.0})
    return cat.replace(servers={**cat.servers, "dgx-h100": h})


FP4_MIX = dict(model="llama3-8b", tokens=1e11, deadline_days=30, precision="fp4", gpus=["H100", "B200"])


def test_the_alternatives_say_in_which_precision_each_computes(capsys: pytest.CaptureFixture[str]) -> None:
    """`solve --precision fp4 --gpus H100,B200`: the plan's summary says its precision, and the alternatives (text
    table and JSON) say each one's: the best H100 plan computes in fp8, the B200's in fp4."""
    args = ["solve", "--model", "llama3-8b", "--tokens", "1e11", "--deadline-days", "30", "--precision", "fp4",
            "--gpus", "H100,B200", "--objective", "cost"]  # fmt: skip
    d = json.loads(_run(capsys, [*args, "--json"])[0])
    assert d["precision"] == "fp4" and d["gpu"] == "b200"
    by_gpu = {a["gpu"]: a["precision"] for a in d["alternatives"]}
    assert by_gpu == {"b200": "fp4", "h100-sxm": "fp8"}, by_gpu  # the best of each other GPU type is listed
    text = _run(capsys, args)[0]
    assert "  precision fp4" in text, text
    header = next(line for line in text.splitlines() if line.startswith("server "))
    assert header.split()[:3] == ["server", "gpu", "precision"], header
    h100 = next(line for line in text.splitlines() if line.startswith("dgx-h100 "))
    assert h100.split()[:3] == ["dgx-h100", "h100-sxm", "fp8"], h100


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[str, str]:
    """(stdout, stderr) of a `planner` command that must succeed."""
    from planner.cli.main import main

    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    return out, err


def test_the_app_tables_and_card_show_the_precision(shipped: Catalog) -> None:
    """The app's plan card and alternatives table (and the plan CSV) show the precision; 'why this plan' says the
    H100 runner-up of an fp4 request computes in fp8."""
    from planner.present import alternatives_frame, alternatives_table, plan_card, why_this_plan

    cat = cheap_h100(shipped)
    res = solve(PlanRequest(**FP4_MIX, objective="time", max_nodes=16), cat)
    assert res.plan is not None and res.plan.gpu == "b200"
    assert plan_card(res)["Precision"] == "fp4"
    frame = alternatives_frame(res)
    assert dict(zip(frame["gpu"], frame["precision"], strict=True)) == {"b200": "fp4", "h100-sxm": "fp8"}
    assert "Precision" in alternatives_table(res).columns
    runner_up = next(line for line in why_this_plan(res) if "Runner-up on **h100-sxm**" in line)
    assert "in fp8" in runner_up, runner_up


def test_a_pareto_front_says_which_points_fall_back(
    shipped: Catalog, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`planner pareto --precision fp4 --gpus H100,B200` (and the app's Pareto tab): a front whose cheap points run
    on H100s in fp8 and fast ones on B200s in fp4 has a precision column, and a note names the GPU that falls back."""
    from planner.present import front_with_precision, pareto_table

    cat = cheap_h100(shipped)
    req = PlanRequest(**FP4_MIX, objective="cost")
    front, notes = front_with_precision(cat, req, pareto(req, x="cost", y="time", points=6, catalog=cat))
    assert set(zip(front["gpu"], front["precision"], strict=True)) == {("h100-sxm", "fp8"), ("b200", "fp4")}
    assert notes == ["h100-sxm has no fp4: the front's plans on it compute in fp8"]
    assert "Precision" in pareto_table(front, "cost", "time").columns
    # the command line, on a catalog directory with that price
    shutil.copytree(ROOT / "catalog", tmp_path / "catalog")
    servers = tmp_path / "catalog" / "servers.yaml"
    text = servers.read_text()
    at = text.index("- id: dgx-h100")
    start = text.index("price_usd: 380000", at)
    servers.write_text(text[:start] + "price_usd: 20000" + text[start + len("price_usd: 380000") :])
    assert load_catalog(tmp_path / "catalog").server("dgx-h100").price_usd == 20_000
    argv = ["pareto", "--catalog", str(tmp_path / "catalog"), "--model", "llama3-8b", "--tokens", "1e11",
            "--deadline-days", "30", "--precision", "fp4", "--gpus", "H100,B200", "--x", "cost", "--y", "time",
            "--points", "6"]  # fmt: skip
    rows = json.loads(_run(capsys, [*argv, "--json"])[0])
    assert {(r["gpu"], r["precision"]) for r in rows} == {("h100-sxm", "fp8"), ("b200", "fp4")}
    text, err = _run(capsys, argv)
    assert "h100-sxm has no fp4: the front's plans on it compute in fp8" in err, err
    assert "precision" in next(line for line in text.splitlines() if "server" in line)


def _gpu(**kw: Any) -> Gpu:
    base = Gpu.model_validate(load_catalog().gpu("b200").model_dump())
    return Gpu.model_validate({**base.model_dump(), **kw})


def test_a_catalog_gpu_with_fp4_needs_fp8_and_a_finite_peak_at_least_fp8s() -> None:
    """A catalog GPU with fp4_tflops needs fp8_tflops (every GPU with FP4 tensor cores has FP8, and the model keeps
    an fp4 run's tensors and collectives in FP8); each lower precision's peak is at least the higher one's (10 for
    10 PFLOP/s typed in the wrong unit is refused); every catalog number is finite (.inf is refused)."""
    assert _gpu(fp4_tflops=None).fp4_tflops is None and _gpu(fp4_tflops=4500).fp4_tflops == 4500  # equal: allowed
    with pytest.raises(ValidationError, match="fp4_tflops is given but fp8_tflops is not"):
        _gpu(fp8_tflops=None)
    with pytest.raises(ValidationError, match=r"fp4_tflops \(10\) is below fp8_tflops \(4,500\)"):
        _gpu(fp4_tflops=10)
    with pytest.raises(ValidationError, match=r"fp8_tflops \(4.5\) is below bf16_tflops \(2,250\)"):
        _gpu(fp8_tflops=4.5, fp4_tflops=None)  # 4.5 PFLOP/s typed in the wrong unit
    for field in ("fp4_tflops", "bf16_tflops", "memory_gb", "price_usd"):
        with pytest.raises(ValidationError, match="finite number"):
            _gpu(**{field: float("inf")})


def test_a_catalog_file_with_those_mistakes_exits_2_with_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`planner catalog gpus` on a gpus.yaml with an infinite fp4 peak, one below fp8's, or fp4 without fp8: exit 2
    naming the GPU and the field."""
    from planner.cli.main import main

    shutil.copytree(ROOT / "catalog", tmp_path / "catalog")
    gpus = tmp_path / "catalog" / "gpus.yaml"
    shipped = gpus.read_text()
    for old, new, said in [
        ("fp4_tflops: 9000", "fp4_tflops: .inf", "fp4_tflops: Input should be a finite number"),
        ("fp4_tflops: 9000", "fp4_tflops: 9", "fp4_tflops (9) is below fp8_tflops (4,500)"),
        ("fp8_tflops: 4500\n  fp4_tflops: 9000", "fp4_tflops: 9000", "fp4_tflops is given but fp8_tflops is not"),
    ]:
        assert old in shipped
        gpus.write_text(shipped.replace(old, new, 1))
        code = main(["catalog", "gpus", "--catalog", str(tmp_path / "catalog")])
        err = capsys.readouterr().err
        assert code == 2 and "(id=b200)" in err and said in err and "Traceback" not in err, err


@pytest.mark.parametrize("key", ["fp4_efficiency_ratio", "fp8_efficiency_ratio"])
def test_an_efficiency_ratio_above_one_is_bad_input(
    key: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The efficiency ratios of catalog/calibration.yaml are the GEMMs' efficiency at the lower precision relative
    to the higher one's, in (0, 1]: `fp4_efficiency_ratio: 8` (0.8 mistyped, an MFU above 100%) is bad input naming
    the file and key."""
    from planner.cli.main import main

    shutil.copytree(ROOT / "catalog", tmp_path / "catalog")
    cal = tmp_path / "catalog" / "calibration.yaml"
    text = cal.read_text()
    assert f"\n{key}: 0.8\n" in text
    cal.write_text(text.replace(f"\n{key}: 0.8\n", f"\n{key}: 8\n"))
    code = main(["evaluate", "--catalog", str(tmp_path / "catalog"), "--model", "llama3-70b", "--server", "hgx-b200",
                 "--nodes", "4", "--tokens", "1e11", "--precision", "fp4"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and f"calibration.yaml: {key}: Input should be less than or equal to 1 (got 8)" in err, err


def test_the_scaling_chart_says_each_gpus_precision(shipped: Catalog) -> None:
    """Under an fp4 request the app's scaling chart has each GPU's precision in its data and tooltips (H100 in fp8,
    B200 in fp4)."""
    from planner.present import scaling_chart, scaling_frame

    req = PlanRequest(**FP4_MIX, max_nodes=4)
    frame = scaling_frame(shipped, req)
    assert dict(zip(frame["gpu"], frame["precision"], strict=False)) == {"b200": "fp4", "h100-sxm": "fp8"}
    assert '"field": "precision"' in scaling_chart(frame, None, 4).to_json()


def test_precision_flags_take_any_case_and_name_nvfp4_as_fp4(capsys: pytest.CaptureFixture[str]) -> None:
    """--precision takes any case (FP4 is fp4); a format's own name (nvfp4, as NVIDIA calls it) is said to be
    --precision fp4; an unknown precision lists the valid ones; the --help of evaluate, solve and pareto says what
    fp4 stands for."""
    from planner.cli.main import build_parser, main

    with pytest.raises(SystemExit) as stop:  # argparse's errors: exit 2 from main's parser
        main(["solve", "--model", "llama3-8b", "--deadline-days", "30", "--precision", "nvfp4"])
    code, err = stop.value.code, capsys.readouterr().err
    assert (
        code == 2
        and "'nvfp4': block-scaled FP4 (NVFP4 on NVIDIA Blackwell, MXFP4 on AMD MI350) is --precision fp4" in err
    )
    with pytest.raises(SystemExit) as stop:
        main(["solve", "--model", "llama3-8b", "--deadline-days", "30", "--precision", "fp5"])
    code, err = stop.value.code, capsys.readouterr().err
    assert code == 2 and "invalid choice: 'fp5' (choose from bf16, fp16, fp8, fp4, tf32, fp32)" in err, err
    args = build_parser().parse_args(["evaluate", "--model", "llama3-8b", "--server", "hgx-b200", "--nodes", "1",
                                      "--precision", "FP4"])  # fmt: skip
    assert args.precision == "fp4"
    for cmd in ("evaluate", "solve", "pareto"):
        with pytest.raises(SystemExit):
            main([cmd, "--help"])
        out = " ".join(capsys.readouterr().out.split())
        assert "fp4 is block-scaled FP4 training (NVFP4 / MXFP4" in out, (cmd, out)
