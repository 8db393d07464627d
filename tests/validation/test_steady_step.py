"""The steady-step validation (planner/validation/steady.py): the cases joined from mlperf_timing.csv and
mlperf_settings.csv, their layouts, the report's numbers and MLPerf's stated run terms."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from planner.data import Configuration, Layout, load_catalog, reference_dir
from planner.physics import evaluate
from planner.validation.at_scale import their_tp_comm_overlap, with_tp_comm_overlap
from planner.validation.steady import (
    mlperf_run_terms,
    steady_cases,
    steady_summary,
    steady_table,
    their_layout,
    their_precision,
)

# v5.0 NVIDIA eos-dfw_n1024 llama31_405b (reference/mlperf_timing.csv and mlperf_settings.csv, one folder):
# 1,024 x 8 H100, global batch 1,536, TP8 PP8 CP2 VP8 SP, micro-batch 1, FP8, no recompute, distributed optimizer;
# steady step 5.2505 s, 7 evaluations, timed window 1,178.276 s
EOS = "eos-dfw_n1024_ngc25.01_nemo"


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return steady_table(reference_dir())


@pytest.fixture(scope="module")
def cases() -> pd.DataFrame:
    return steady_cases(load_catalog(), reference_dir())


def test_a_known_row_joins_its_layout_gpus_and_steady_step(table: pd.DataFrame) -> None:
    (row,) = [r for _, r in table.iterrows() if r["system"] == EOS]
    assert (row["gpus"], row["nodes"], row["global_batch"]) == (8192, 1024, 1536)
    assert row["published_step_s"] == 5.2505 and row["step_source"] == "blocks"
    assert their_precision(row) == "fp8"
    assert their_layout(row) == Layout(
        tensor_parallel=8,
        pipeline_parallel=8,
        context_parallel=2,
        virtual_stages=8,
        sequence_parallel=True,
        micro_batch=1,
        recompute="none",
        zero_stage=1,
    )


def test_data_parallel_benchmarks_are_data_parallel_and_unknown_settings_stay_unknown(table: pd.DataFrame) -> None:
    bert = table[(table["benchmark"] == "bert") & table["config_file"].notna()].iloc[0]
    assert their_layout(bert) == Layout(accumulation=int(bert["grad_accum_log"]))
    unknown = table[table["config_file"].isna()].iloc[0]
    assert their_layout(unknown) is None


def test_the_report_rows_are_the_module_predictions(cases: pd.DataFrame) -> None:
    (row,) = [r for _, r in cases.iterrows() if r["system"] == EOS]
    assert row["their_layout"] == "DP64 TP8 PP8 VP8 ZeRO-1 CP2 SP mb1"
    assert row["error_their"] == pytest.approx((row["predicted_their_s"] - 5.2505) / 5.2505)
    assert row["error_best"] == pytest.approx((row["predicted_best_s"] - 5.2505) / 5.2505)
    terms = mlperf_run_terms(reference_dir()).loc["llama31_405b"]
    # 7 evaluations, each the benchmark's training samples per evaluation at their layout's predicted step
    per_sample_s = row["predicted_their_s"] / 1536
    assert row["evaluation_s"] == pytest.approx(7 * terms["train_samples_per_evaluation"] * per_sample_s)
    assert row["startup_s"] == pytest.approx(terms["startup_s"] + max(terms["warmup_excess_s"], 0.0))
    assert row["error_window"] == pytest.approx((row["predicted_window_s"] - 1178.276) / 1178.276)
    unknown = cases[cases["their_layout"] == "unknown"]
    assert len(unknown) and unknown["predicted_their_s"].isna().all()


def test_the_summary_is_the_median_and_worst_of_the_case_errors(cases: pd.DataFrame) -> None:
    s = steady_summary(cases, "benchmark")
    gpt3 = cases[cases["benchmark"] == "gpt3"]
    assert s.loc["gpt3", "median_their"] == pytest.approx(gpt3["error_their"].abs().median())
    assert s.loc["gpt3", "worst_best"] == pytest.approx(gpt3["error_best"].abs().max())
    assert s.loc["all", "n"] == len(cases)
    assert list(steady_summary(cases, "scale").index)[-1] == "all"


def test_stated_run_terms_are_the_medians_of_mlperf_timing() -> None:
    t = pd.read_csv(reference_dir() / "mlperf_timing.csv")
    lora = t[(t["benchmark"] == "llama2_70b_lora") & (t["eval_separable"] == "yes") & (t["evals_med"] > 0)]
    lora = lora[
        lora["accelerator_family"].isin(
            ["A100", "H100", "H200", "B200", "GB200", "L40S", "MI300X", "MI325X", "MI350X", "MI355X", "B300", "GB300"]
        )
    ]
    expected = (lora["eval_s_med"] / lora["evals_med"] * lora["gpus"]).median()
    terms = mlperf_run_terms(reference_dir()).loc["llama2_70b_lora"]
    assert terms["gpu_s_per_evaluation"] == pytest.approx(expected)
    assert not math.isnan(expected)
    samples = (lora["eval_s_med"] / lora["evals_med"] * lora["steady_samples_per_s_med"]).median()
    assert terms["train_samples_per_evaluation"] == pytest.approx(samples)
    assert 60 < samples < 95  # about 77: the 173 held-out sequences, forward only (2N of ~4.5N per token)


def test_the_fit_scores_the_steady_step_at_their_layout() -> None:
    """At scale a fit scores the steady step (no start-up, no evaluation), predicted at the submission's layout
    where its settings are known: the fit-split rows of the steady table, each once, with the same numbers as the
    report's per-case table."""
    from planner.validation.run import run_cases_fit_only
    from planner.validation.steady import steady_step_cases

    cat, ref = load_catalog(), reference_dir()
    steps = steady_step_cases(cat, ref, fit_only=True)
    table = steady_table(ref)
    assert len(steps) == int((table["split"] == "fit").sum()) > 0
    assert all(c.kind == "step_time" and c.split == "fit" and c.predicted > 0 for c in steps)
    fit = run_cases_fit_only(cat, ref)
    assert [c.name for c in fit if c.kind == "step_time"] == [c.name for c in steps]
    assert not any(c.kind == "time_to_train" and c.name.endswith("steady step") for c in fit)
    known = [c for c in steps if "at their layout" in c.inputs]
    assert known and all(c.inputs.split(" at ")[0].split()[-1] for c in known)


def test_calibrate_keeps_the_moe_block_verbatim() -> None:
    """`planner calibrate` rewrites the dense keys and keeps the Mixture-of-Experts block (keys and comments) of the
    file it replaces."""
    import yaml

    from planner.validation.fit import CALIBRATION_HEADER, calibration_text

    previous = (
        "mfu:\n  ampere:\n    llm: 0.5\n# Mixture-of-Experts: fitted apart\nmoe_expert_width_half: 768.0  # note\n"
    )
    text = calibration_text({"mfu": {"ampere": {"llm": 0.6}}, "moe_expert_width_half": 768.0}, previous)
    assert text.startswith(CALIBRATION_HEADER)
    assert text.endswith("# Mixture-of-Experts: fitted apart\nmoe_expert_width_half: 768.0  # note\n")
    assert yaml.safe_load(text) == {"mfu": {"ampere": {"llm": 0.6}}, "moe_expert_width_half": 768.0}


def test_a_submission_without_tp_overlap_hides_only_what_weight_gradient_gemms_cover() -> None:
    # mlperf_settings.csv tp_comm_overlap: '0' / 'False' off, '1' / 'True' on, empty unknown
    assert their_tp_comm_overlap(pd.Series({"tp_comm_overlap": "0"})) is False
    assert their_tp_comm_overlap(pd.Series({"tp_comm_overlap": "True"})) is True
    assert their_tp_comm_overlap(pd.Series({"tp_comm_overlap": float("nan")})) is None
    cat = load_catalog()
    fitted = float(cat.calibration["tp_overlap"]["megatron"])
    lora = Configuration(model="llama2-70b-lora", server="dgx-h100", nodes=1)
    pretrain = Configuration(model="gpt3-175b", server="dgx-h100", nodes=1)
    # on or unknown: the catalog as it is, the fitted share
    assert with_tp_comm_overlap(cat, lora, True) is cat and with_tp_comm_overlap(cat, lora, None) is cat
    # off: the fitted share x the share of the weights that train -- all of them in pre-training, LoRA's 44.6M
    # adapters of 69B in effect none
    assert with_tp_comm_overlap(cat, pretrain, False).calibration["tp_overlap"]["megatron"] == pytest.approx(fitted)
    wl = cat.workload("llama2-70b-lora")
    hidden = with_tp_comm_overlap(cat, lora, False).calibration["tp_overlap"]["megatron"]
    assert hidden == pytest.approx(fitted * wl.trainable / wl.params) and hidden < 1e-3 * fitted
    assert cat.calibration["tp_overlap"]["megatron"] == fitted  # the shipped catalog is left as it is


def test_lora_without_tp_overlap_exposes_its_tensor_parallel_collectives() -> None:
    # 4 H100 at DP1 TP4 (the v4.1 XE8640 submission, tp_comm_overlap 0): the step grows by the hidden share of the
    # tensor-parallel term, the rest of the step unchanged
    cat = load_catalog()
    config = Configuration(
        model="llama2-70b-lora",
        server="dgx-h100",
        nodes=1,
        global_batch=8,
        layout=Layout(tensor_parallel=4, sequence_parallel=True, micro_batch=1, accumulation=8),
    )
    four = cat.replace(
        servers={**cat.servers, "dgx-h100": cat.server("dgx-h100").model_copy(update={"gpus_per_node": 4})}
    )
    on = evaluate(four, config)
    off = evaluate(with_tp_comm_overlap(four, config, False), config)
    fitted = float(cat.calibration["tp_overlap"]["megatron"])
    tp_on, tp_off = on.step_time_breakdown_s["tensor_parallel"], off.step_time_breakdown_s["tensor_parallel"]
    assert tp_off == pytest.approx(tp_on / (1 - fitted), rel=1e-3)
    assert off.step_time_s - on.step_time_s == pytest.approx(tp_off - tp_on, rel=1e-6)
