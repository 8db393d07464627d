"""FP4 training (block-scaled NVFP4 / MXFP4 GEMMs) on the GPUs that have it, as a precision a plan may ask for.

Hand-derived: the GEMM rate against the FP4 peak is the BF16 MFU x fp8_efficiency_ratio x fp4_efficiency_ratio
(both 0.8 in the shipped calibration), so on a GB200 (5,000 dense FP8, 10,000 dense FP4 TFLOP/s) the same layout's
GEMM time in FP4 is that in FP8 x (5,000 x 0.8) / (10,000 x 0.64) = 1 / 1.6; everything else (memory, collectives,
the kernels between GEMMs) is FP8's. A GPU without FP4 computes an fp4 request in FP8 where it has that, else BF16,
and says so; fp4 asked for by name where no allowed GPU has it is bad input everywhere, as fp8 is.
"""

from __future__ import annotations

from typing import Any

import pytest

from planner.batch import run_scenario, scenario_id
from planner.data import Catalog, Configuration, Layout
from planner.errors import PlannerInputError
from planner.physics import compute, evaluate
from planner.plan import PlanRequest, solve
from planner.validation import AT_SCALE_FP4_RUNS, at_scale_configuration, at_scale_table, reference_dir


def test_fp4_peak_and_its_fallback_chain(shipped: Catalog) -> None:
    assert compute.peak_tflops(shipped.gpu("gb200"), "fp4") == (10_000.0, "fp4")
    assert compute.peak_tflops(shipped.gpu("gb300"), "fp4") == (15_000.0, "fp4")
    assert compute.peak_tflops(shipped.gpu("mi355x"), "fp4") == (10_066.0, "fp4")
    assert compute.peak_tflops(shipped.gpu("h100-sxm"), "fp4") == (1_979.0, "fp8")  # no fp4: its fp8
    assert compute.peak_tflops(shipped.gpu("a100-sxm-80gb"), "fp4") == (312.0, "bf16")  # neither: bf16
    assert compute.peak_tflops(shipped.gpu("a100-sxm-80gb"), "fp8") == (312.0, "bf16")
    assert compute.peak_tflops(shipped.gpu("h100-sxm"), "fp16") == (989.0, "bf16")


def test_fp4_mfu_is_fp8s_times_the_fp4_ratio(shipped: Catalog) -> None:
    cal, gpu, wl = shipped.calibration, shipped.gpu("gb200"), shipped.workload("llama3-405b")
    bf16 = compute.mfu_max(cal, gpu, wl, "bf16")
    assert cal["fp8_efficiency_ratio"] == 0.8 and cal["fp4_efficiency_ratio"] == 0.8
    assert compute.mfu_max(cal, gpu, wl, "fp8") == pytest.approx(bf16 * 0.8)
    assert compute.mfu_max(cal, gpu, wl, "fp4") == pytest.approx(bf16 * 0.64)
    without = {k: v for k, v in cal.items() if k != "fp4_efficiency_ratio"}  # the model's default is the same 0.8
    assert compute.mfu_max(without, gpu, wl, "fp4") == pytest.approx(bf16 * 0.8 * compute.FP4_EFFICIENCY_RATIO)


def _estimate(cat: Catalog, precision: str, fp4_tflops: float | None = None) -> Any:
    if fp4_tflops is not None:
        gpu = cat.gpu("gb200").model_copy(update={"fp4_tflops": fp4_tflops})
        cat = cat.replace(gpus={**cat.gpus, "gb200": gpu})
    layout = Layout(tensor_parallel=4, pipeline_parallel=9, zero_stage=1, sequence_parallel=True)
    config = Configuration(
        model="llama3-405b", server="gb200-nvl72", nodes=2, global_batch=144, samples=1e6, precision=precision,
        layout=layout,
    )  # fmt: skip
    return evaluate(cat, config)


def test_fp4_changes_only_the_gemm_time_in_proportion_to_the_peak(shipped: Catalog) -> None:
    """With an FP4 peak of FP8's / 0.8 the FP4 GEMMs run at FP8's rate (x 0.8 efficiency): the estimate is FP8's,
    term by term. At 2x and 4x that peak the GEMM time halves and quarters, so the compute saved is 1/2 and 3/4
    of the FP8 GEMM time: their ratio is 2/3 exactly; the pipeline bubble, a share of the compute, moves with it,
    and no other term moves."""
    fp8 = _estimate(shipped, "fp8")
    same = _estimate(shipped, "fp4", 5000 / 0.8)
    assert same.precision == "fp4" and fp8.precision == "fp8"
    assert same.step_time_breakdown_s == pytest.approx(fp8.step_time_breakdown_s, rel=1e-12)
    assert same.memory_per_gpu_gb == pytest.approx(fp8.memory_per_gpu_gb, rel=1e-12)
    half, quarter = _estimate(shipped, "fp4", 2 * 5000 / 0.8), _estimate(shipped, "fp4", 4 * 5000 / 0.8)
    for term in ("compute", "pipeline_bubble"):  # the bubble is (p - 1) / (v m) of the compute: it scales with it
        c8 = fp8.step_time_breakdown_s[term]
        saved_half = c8 - half.step_time_breakdown_s[term]
        saved_quarter = c8 - quarter.step_time_breakdown_s[term]
        assert saved_half > 0 and saved_half / saved_quarter == pytest.approx(2 / 3, rel=1e-9), term
    for term in set(fp8.step_time_breakdown_s) - {"compute", "pipeline_bubble"}:
        assert half.step_time_breakdown_s[term] == pytest.approx(fp8.step_time_breakdown_s[term], rel=1e-9), term
    c8 = fp8.step_time_breakdown_s["compute"]
    saved_half = c8 - half.step_time_breakdown_s["compute"]
    shipped_fp4 = _estimate(shipped, "fp4")  # the catalog's 10,000: 1.6x FP8's GEMM rate
    saved = c8 - shipped_fp4.step_time_breakdown_s["compute"]
    assert saved / saved_half == pytest.approx((1 - 1 / 1.6) / (1 - 1 / 2), rel=1e-9)


def test_fp4_on_a_gpu_without_it(shipped: Catalog) -> None:
    """The Python API and batch refuse fp4 where no allowed GPU has it, suggesting fp8 where that is there; with
    an fp4 GPU allowed a plan on another GPU computes in its fallback and says so."""
    req = PlanRequest(model="llama3-8b", tokens=1e11, deadline_days=30, precision="fp4", gpus=["H100"])
    with pytest.raises(PlannerInputError, match=r"precision fp4: none of the allowed GPUs \(h100-sxm\) has fp4: ask "
                       r"for fp8 .* allow GPUs with fp4 \(Blackwell or MI350, e.g. b200, mi355x\)"):  # fmt: skip
        solve(req, shipped)
    s: dict[str, object] = {"model": "llama3-8b", "deadline_days": 30, "precision": "fp4", "gpus": ["A100"]}
    row = run_scenario({**s, "id": scenario_id(s)}, shipped)
    assert row["status"] == "bad_input" and "give precision: bf16" in row["message"], row
    assert "e.g. gpus: [B200, MI355X]" in row["message"]
    from planner.plan import plan_notes

    both = PlanRequest(model="llama3-8b", tokens=1e11, deadline_days=30, precision="fp4", gpus=["H100", "B200"],
                       objective="cost", alternatives=0)  # fmt: skip
    h = shipped.server("dgx-h100").model_copy(update={"price_usd": 20_000.0})  # the H100 plan is the cheapest
    cheap_h100 = shipped.replace(servers={**shipped.servers, "dgx-h100": h})
    res = solve(both, cheap_h100)  # a plan, not exit 2 ("h100-sxm has no fp4"), when the best plan is on the H100
    assert res.plan is not None and res.plan.estimate.gpu == "h100-sxm", res.plan
    assert res.plan.estimate.precision == "fp8"
    assert "h100-sxm has no fp4: this plan computes in fp8" in plan_notes(cheap_h100, both, res.plan)
    res = solve(both.model_copy(update={"gpus": ["B200"]}), shipped)
    assert res.plan is not None and res.plan.estimate.precision == "fp4"
    assert not any("has no fp4" in n for n in plan_notes(shipped, both, res.plan))


def test_fp4_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    from planner.cli.main import main

    code = main(["evaluate", "--model", "llama3-8b", "--server", "dgx-h100", "--nodes", "1", "--tokens", "1e9",
                 "--precision", "fp4"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "h100-sxm has no fp4: give --precision fp8" in err, err
    code = main(["solve", "--model", "llama3-8b", "--deadline-days", "30", "--precision", "fp4", "--gpus", "A100"])
    err = capsys.readouterr().err
    assert code == 2 and "--precision fp4: none of the allowed GPUs" in err and "--gpus B200,MI355X" in err, err
    code = main(["evaluate", "--model", "llama3-8b", "--server", "gb200-nvl72", "--nodes", "1", "--tokens", "1e9",
                 "--precision", "fp4", "--json"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0 and '"precision": "fp4"' in out


def test_nvidias_v5_1_llama31_405b_runs_are_predicted_in_fp4_and_no_other(shipped: Catalog) -> None:
    """The one rule (planner.validation.AT_SCALE_FP4_RUNS): NVIDIA's own v5.1 Llama 3.1 405B results trained in NVFP4; a
    partner's v5.1 405B run, NVIDIA's v5.1 LoRA and NVIDIA's v5.0 405B are FP8. All are test rows (no fit uses FP4)."""
    t = at_scale_table(reference_dir(None))
    seen = set()
    for _, row in t.iterrows():
        _, config = at_scale_configuration(shipped, row)
        key = (row["round"], row["submitter"], row["benchmark"])
        if key in AT_SCALE_FP4_RUNS:
            assert config.precision == "fp4" and row["split"] == "test", key
        elif row["benchmark"] != "resnet" and row["benchmark"] != "bert":
            assert config.precision in ("fp8", None), key
        seen.add((key in AT_SCALE_FP4_RUNS, row["benchmark"], row["round"], row["submitter"] == "NVIDIA"))
    assert (True, "llama31_405b", "v5.1", True) in seen
    assert (False, "llama31_405b", "v5.1", False) in seen and (False, "llama2_70b_lora", "v5.1", True) in seen


def test_the_python_api_refuses_a_precision_asked_for_by_name_that_the_gpu_lacks(shipped: Catalog) -> None:
    """planner.evaluate(Configuration(precision="fp4", server="dgx-h100", ...)) is bad input naming the precision
    to give, as `planner evaluate --precision fp4 --server dgx-h100` exits 2 -- an fp8 estimate returned quietly
    would answer another question. A configuration that names no precision takes the workload's."""
    import planner

    base = {"model": "llama3-8b", "nodes": 1, "samples": 1e6}
    with pytest.raises(PlannerInputError, match=r"h100-sxm has no fp4: give precision='fp8'"):
        planner.evaluate(shipped, Configuration(server="dgx-h100", precision="fp4", **base))  # type: ignore[arg-type]
    with pytest.raises(PlannerInputError, match=r"a100-sxm-80gb has no fp8: give precision='bf16'"):
        planner.evaluate(shipped, Configuration(server="dgx-a100-80gb", precision="fp8", **base))  # type: ignore[arg-type]
    est = planner.evaluate(shipped, Configuration(server="dgx-h100", **base))  # type: ignore[arg-type]
    assert est.precision == shipped.workload("llama3-8b").precision
    res = solve(PlanRequest(model="llama3-8b", tokens=1e11, deadline_days=30, gpus=["B200"], precision="fp4",
                            alternatives=0), shipped)  # fmt: skip
    assert res.plan is not None and "  precision fp4" in res.summary().splitlines()


def test_a_fleet_job_may_ask_for_fp4_and_each_assignment_says_what_it_computes_in(shipped: Catalog) -> None:
    """`precision: fp4` on a fleet job plans an NVFP4 fleet: the job's modes are the model's in that precision; a
    pool whose GPU lacks it computes in its fallback and the assignment says which; asked for where no allowed
    server has it: bad input."""
    from planner.fleet import fleet

    base = {"slots": 4, "slot_hours": 168, "objective": "cost", "purchase": "buy", "max_nodes": 8,
            "solver": {"time_limit_s": 30}}  # fmt: skip
    job = {"id": "ft", "model": "llama3-8b", "tokens": 2e10, "due_slot": 3}
    fp4 = fleet({**base, "gpus": ["B200"], "jobs": [{**job, "precision": "fp4"}]}, shipped)
    fp8 = fleet({**base, "gpus": ["B200"], "jobs": [{**job, "precision": "fp8"}]}, shipped)
    assert [a["precision"] for a in fp4.assignments] == ["fp4"] and [a["precision"] for a in fp8.assignments] == ["fp8"]
    # every fp8 mode has an fp4 twin that trains faster at the same nodes and cap (GEMMs at 1.6x, nothing else
    # slower), so the optimal fp4 fleet costs no more; both tiny instances solve to optimality
    assert fp4.status == fp8.status == "optimal"
    assert fp4.objective_value is not None and fp8.objective_value is not None
    assert fp4.objective_value <= fp8.objective_value * (1 + 1e-9)
    h100 = fleet({**base, "gpus": ["H100"], "jobs": [job]}, shipped)  # the workload's own bf16
    assert [a["precision"] for a in h100.assignments] == ["bf16"]
    fp16 = fleet({**base, "gpus": ["H100"], "jobs": [{**job, "precision": "fp16"}]}, shipped)
    assert "which has no" not in fp16.summary()  # fp16 runs at bf16's rate: no note
    said = r"job 'ft': precision fp4: none of the allowed GPUs \(h100-sxm\) has fp4: give the job "
    with pytest.raises(PlannerInputError, match=said + "precision: fp8"):
        fleet({**base, "gpus": ["H100"], "jobs": [{**job, "precision": "fp4"}]}, shipped)
    h = shipped.server("dgx-h100").model_copy(update={"price_usd": 20_000.0})  # the H100 pool is the cheapest
    cheap_h100 = shipped.replace(servers={**shipped.servers, "dgx-h100": h})
    mixed = fleet({**base, "gpus": ["H100", "B200"], "jobs": [{**job, "precision": "fp4"}]}, cheap_h100)
    assert [(a["gpu"], a["precision"], a["precision_asked"]) for a in mixed.assignments] == [("h100-sxm", "fp8", "fp4")]
    assert "- **ft** runs on h100-sxm, which has no fp4: it computes in fp8." in mixed.decisions(markdown=True)
    assert "\n  ft runs on h100-sxm, which has no fp4: it computes in fp8\n" in mixed.summary()
