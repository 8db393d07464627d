"""The physics judged on MLPerf's steady-state step time, at the submission's own layout and at the model's best.

Cases: the MLPerf results at scale and on newer GPUs that ``at_scale_table`` keeps (reference/
mlperf_training_at_scale.csv: the catalog's GPUs and workloads, duplicates removed, its fit/test split), joined by
``source_path`` to

* reference/mlperf_timing.csv: the published **steady step time** (``step_time_s_med``: global batch / the steady
  throughput of the training blocks after the first, evaluation excluded; where evaluation is not separable from
  the blocks, ``eval_separable`` = no, the implementation's own logged step time when it logs one), MLPerf's timed
  window (``total_s_med``) and its start-up and evaluation;
* reference/mlperf_settings.csv: the submission's layout, precision (and whether attention ran in FP8:
  ``their_fp8_attention``; whether it stored frozen weights and the activation function's input in FP8:
  ``their_fp8_params``, ``their_fp8_activation``, which set what fits memory), recompute (its config file) and
  whether it overlapped tensor-parallel communication with GEMMs (``their_tp_comm_overlap``: where it did not,
  none of it is hidden).

Each case is predicted twice with the same node, fabric, global batch and precision: at **their layout**
(``their_layout``, a fixed ``Layout``; unknown where the submission's config was not found or does not state its
tensor parallelism -- then no prediction, said in the table) and at the **model's best layout** (the layout search).
The first judges the physics apart from the search; a case whose best layout the model predicts much faster than
theirs (``FINDING_RATIO``) is a finding: the model believes a layout beats the submitter's.

Time-to-train as named terms (planner/physics/run_time.py): MLPerf's timed window is reproduced by training (the
run's own trained work at the predicted step, their layout where known) + evaluation (the run's own number of
evaluations x the benchmark's stated training samples per evaluation at the predicted step:
``run_time.evaluation_time_from_step_s``) + start-up (the benchmark's stated median start-up and first-block warm-up
excess), each per-benchmark figure the median over the result folders of
mlperf_timing.csv (``mlperf_run_terms``). Nothing here is fitted: it measures.

``python -m planner.validation.steady`` prints the per-case table, the summaries and the findings.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from pathlib import Path

import numpy as np
import pandas as pd

from planner.data import Catalog, Layout, load_catalog, reference_dir
from planner.errors import PlannerInputError
from planner.physics import startup_time_s
from planner.validation.at_scale import (
    at_scale_configuration,
    at_scale_table,
    mlperf_evaluation_s,
    mlperf_run_terms,
    their_fp8_activation,
    their_fp8_attention,
    their_fp8_params,
    their_precision,
    their_tp_comm_overlap,
    with_attention_precision,
    with_stored_precisions,
    with_tp_comm_overlap,
)
from planner.validation.cases import Case, evaluate_case
from planner.validation.summary import SCALE_BINS, scale_bin

DATA_PARALLEL_BENCHMARKS = ("resnet", "bert")  # pure data parallelism in every submission: their layout is DP
FINDING_RATIO = 0.85  # best-layout step / their-layout step below this: the model's layout "beats theirs by a lot"
TIMING_COLUMNS = [
    "source_path",
    "step_time_s_med",
    "logged_step_time_s_med",
    "eval_separable",
    "total_s_med",
    "startup_s_med",
    "first_block_excess_s_med",
    "eval_s_med",
    "evals_med",
]
SETTINGS_COLUMNS = [
    "source_path",
    "config_file",
    "tp",
    "pp",
    "cp",
    "vpp",
    "sp",
    "micro_batch",
    "precision",
    "fp8_attention",
    "fp8_params",
    "fp8_activation",
    "recompute",
    "dist_optimizer",
    "tp_comm_overlap",
    "grad_accum_log",
]
TRUE_TEXT = ("true", "1")
# a steady-step case as its tables show it: the run, the published step, and the prediction at their layout and at
# the model's own
CASE_COLUMNS = [
    "benchmark",
    "gpus",
    "system",
    "round",
    "split",
    "published_step_s",
    "their_layout",
    "predicted_their_s",
    "error_their",
    "best_layout",
    "predicted_best_s",
    "error_best",
]


def steady_table(ref: Path) -> pd.DataFrame:
    """``at_scale_table`` rows joined with their timing and settings rows (``source_path``), those with a
    published steady step: ``published_step_s`` is ``step_time_s_med``, or where evaluation is not separable
    (``eval_separable`` = no) ``logged_step_time_s_med`` when logged (``step_source`` says which)."""
    timing = pd.read_csv(ref / "mlperf_timing.csv", usecols=TIMING_COLUMNS)
    settings = pd.read_csv(ref / "mlperf_settings.csv", usecols=SETTINGS_COLUMNS)
    df = at_scale_table(ref).merge(timing, on="source_path", how="left").merge(settings, on="source_path", how="left")
    logged = (df["eval_separable"] == "no") & df["logged_step_time_s_med"].notna()
    df["published_step_s"] = np.where(logged, df["logged_step_time_s_med"], df["step_time_s_med"])
    df["step_source"] = np.where(logged, "logged", np.where(df["eval_separable"] == "no", "blocks+eval", "blocks"))
    return df[df["published_step_s"].notna()].reset_index(drop=True)


def their_layout(row: pd.Series) -> Layout | None:
    """The submission's layout from mlperf_settings.csv, None where unknown (no config found, or an LLM config
    that does not state its tensor parallelism). ResNet-50 and BERT: data parallel, the logged gradient
    accumulation. LLMs: TP, PP, CP, interleaved stages (VP; 1 = none where PP > 1 and VP is unset), sequence
    parallelism, micro-batch, recompute (unset = none), the distributed optimizer as ZeRO-1 (unset = none)."""
    if not isinstance(row.get("config_file"), str):
        return None
    if row["benchmark"] in DATA_PARALLEL_BENCHMARKS:
        accumulation = row.get("grad_accum_log")
        return Layout(accumulation=int(accumulation) if _known(accumulation) else 1)
    if not _known(row.get("tp")):
        return None
    pp = int(row["pp"]) if _known(row.get("pp")) else 1
    vpp = int(row["vpp"]) if _known(row.get("vpp")) else 1
    recompute = str(row["recompute"]) if isinstance(row.get("recompute"), str) else "none"
    return Layout(
        tensor_parallel=int(row["tp"]),
        pipeline_parallel=pp,
        context_parallel=int(row["cp"]) if _known(row.get("cp")) else 1,
        virtual_stages=vpp if pp > 1 else None,
        sequence_parallel=str(row.get("sp", "")).strip().lower() in TRUE_TEXT,
        micro_batch=int(row["micro_batch"]) if _known(row.get("micro_batch")) else None,
        recompute=recompute if recompute in ("none", "selective", "block", "full") else "full",
        zero_stage=1 if str(row.get("dist_optimizer", "")).strip().lower() in TRUE_TEXT else 0,
    )


def _known(v: object) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def steady_cases(cat: Catalog | None = None, ref: Path | None = None) -> pd.DataFrame:
    """One row per case: benchmark, gpus, system, round, submitter, split, scale (``SCALE_BINS``),
    ``published_step_s``, ``their_layout`` (text, or 'unknown'), ``predicted_their_s``, ``error_their``,
    ``best_layout``, ``predicted_best_s``, ``error_best``; MLPerf's timed window ``published_window_s`` against
    ``predicted_window_s`` (training at their layout where known, else the best, + ``evaluation_s`` +
    ``startup_s``) and ``error_window``. Errors are (predicted - published) / published."""
    cat = cat or load_catalog()
    ref = ref or reference_dir()
    terms = mlperf_run_terms(ref)
    rows = []
    for _, row in steady_table(ref).iterrows():
        c2, config = at_scale_configuration(cat, row)
        precision = their_precision(row) or config.precision
        if precision is not None and precision != config.precision:
            config = config.model_copy(update={"precision": precision})
        c2 = with_attention_precision(c2, config, their_fp8_attention(row))
        c2 = with_stored_precisions(c2, config, their_fp8_params(row), their_fp8_activation(row))
        c2 = with_tp_comm_overlap(c2, config, their_tp_comm_overlap(row))
        layout = their_layout(row)
        best = evaluate_case(c2, config)
        their_step, their_text, their_est = math.nan, "unknown", None
        if layout is not None:
            their_text = layout.label(int(row["gpus"]) // _model_parallel(layout))
            try:
                their_est = evaluate_case(c2, config.model_copy(update={"layout": layout}))
                their_step = their_est.step_time_s
            except PlannerInputError as e:
                their_text += f" (cannot run in the model: {str(e).splitlines()[0]})"
        bench = str(row["benchmark"])
        gpus = int(row["gpus"])
        t = terms.loc[bench]
        trained = their_est if their_est is not None else best
        evaluation = mlperf_evaluation_s(
            terms, bench, float(row["evals_med"]), trained.step_time_s, float(trained.global_batch)
        )
        startup = startup_time_s(float(t["startup_s"]), float(t["warmup_excess_s"]))
        window_est = evaluate_case(
            c2,
            config.model_copy(
                update={
                    "layout": layout if their_est is not None else None,
                    "evaluation_s": evaluation,
                    "startup_s": startup,
                }
            ),
        )
        published = float(row["published_step_s"])
        window = float(row["total_s_med"])
        rows.append(
            {
                "benchmark": bench,
                "gpus": gpus,
                "system": str(row["system"]),
                "round": str(row["round"]),
                "submitter": str(row["submitter"]),
                "split": str(row["split"]),
                "scale": scale_bin(gpus),
                "precision": best.precision,
                "published_step_s": published,
                "step_source": str(row["step_source"]),
                "their_layout": their_text,
                "predicted_their_s": their_step,
                "error_their": (their_step - published) / published,
                "best_layout": best.layout,
                "predicted_best_s": best.step_time_s,
                "error_best": (best.step_time_s - published) / published,
                "published_window_s": window,
                "predicted_window_s": window_est.time_to_train_h * 3600.0,
                "evaluation_s": window_est.evaluation_s,
                "startup_s": window_est.startup_s,
                "error_window": (window_est.time_to_train_h * 3600.0 - window) / window,
            }
        )
    return pd.DataFrame(rows)


def steady_step_cases(
    cat: Catalog, ref: Path, fit_only: bool = False, gpu_families: Collection[str] | None = None
) -> list[Case]:
    """One ``step_time`` case per at-scale MLPerf result with a published steady step (``steady_table``): the
    step predicted at the submission's own layout, precision, recompute and tensor-parallel overlap where its
    settings are known, else at the model's best layout (``inputs`` says which). What the fit scores the physics on
    at scale: the steady step holds neither MLPerf's start-up nor its evaluation. ``fit_only``: the fit rows only
    (``at_scale_table``'s split); ``gpu_families``: only the runs on GPUs of these families."""
    cases = []
    for _, row in steady_table(ref).iterrows():
        if fit_only and row["split"] != "fit":
            continue
        c2, config = at_scale_configuration(cat, row)
        family = c2.gpu(c2.server("case").gpu or "").family
        if gpu_families is not None and family not in gpu_families:
            continue
        precision = their_precision(row) or config.precision
        if precision is not None and precision != config.precision:
            config = config.model_copy(update={"precision": precision})
        c2 = with_attention_precision(c2, config, their_fp8_attention(row))
        c2 = with_stored_precisions(c2, config, their_fp8_params(row), their_fp8_activation(row))
        c2 = with_tp_comm_overlap(c2, config, their_tp_comm_overlap(row))
        layout = their_layout(row)
        est = None
        if layout is not None:
            try:
                est = evaluate_case(c2, config.model_copy(update={"layout": layout}))
            except PlannerInputError:
                est = None
        at = "their layout" if est is not None else "best layout (their settings unknown)"
        est = est or evaluate_case(c2, config)
        cases.append(
            Case(
                "step_time",
                f"{row['round']} {row['submitter']} {row['system']} {row['benchmark']} ({row['gpus']} GPUs, "
                f"batch {row['global_batch']}): steady step",
                str(row["split"]),
                float(row["published_step_s"]),
                est.step_time_s,
                "s",
                family,
                c2.workload(config.model).family,
                f"{row['benchmark']} {est.gpu} {est.layout} at {at}",
                gpus=int(row["gpus"]),
            )
        )
    return cases


def _model_parallel(layout: Layout) -> int:
    return layout.tensor_parallel * layout.pipeline_parallel * layout.context_parallel


def steady_summary(cases: pd.DataFrame, by: str) -> pd.DataFrame:
    """Median and worst |error| at their layout, at the model's best layout and of the timed window, grouped
    ``by`` a column ('benchmark' or 'scale'), with the case counts (``n_their``: cases whose layout is known)."""
    order = [label for *_, label in SCALE_BINS] if by == "scale" else sorted(cases[by].unique())
    groups = [*((k, cases[cases[by] == k]) for k in order if (cases[by] == k).any()), ("all", cases)]
    out = []
    for key, g in groups:
        their = g["error_their"].abs().dropna()
        best = g["error_best"].abs()
        window = g["error_window"].abs()
        out.append(
            {
                by: key,
                "n": len(g),
                "n_their": len(their),
                "median_their": their.median(),
                "worst_their": their.max(),
                "median_best": best.median(),
                "worst_best": best.max(),
                "median_window": window.median(),
                "worst_window": window.max(),
            }
        )
    return pd.DataFrame(out).set_index(by)


def steady_findings(cases: pd.DataFrame, ratio: float = FINDING_RATIO) -> pd.DataFrame:
    """Cases whose predicted step at the model's best layout is below ``ratio`` x the predicted step at their
    layout: the model believes its layout beats the submitter's by more than 1 - ``ratio``."""
    r = cases["predicted_best_s"] / cases["predicted_their_s"]
    return cases[r < ratio].assign(best_over_their=r[r < ratio]).sort_values("best_over_their")


def steady_report(cases: pd.DataFrame) -> str:
    """The per-case table, the summaries by benchmark and by scale, the stated run terms and the findings, as
    text."""
    pct = {c: "{:+.1%}".format for c in ("error_their", "error_best", "error_window")}
    table = cases[[*CASE_COLUMNS, "error_window"]].sort_values(["benchmark", "gpus"])
    summary_fmt = {
        c: "{:.1%}".format
        for c in (
            "median_their",
            "worst_their",
            "median_best",
            "worst_best",
            "median_window",
            "worst_window",
        )
    }
    findings = steady_findings(cases)
    parts = [
        "Steady-state step time: MLPerf published vs predicted at their layout and at the model's best layout",
        table.to_string(index=False, formatters=pct, float_format="{:.4g}".format, max_colwidth=48),
        "",
        "|error| by benchmark (their = at the submission's layout, best = at the model's; window = MLPerf's timed "
        "window with the start-up and evaluation terms)",
        steady_summary(cases, "benchmark").to_string(formatters=summary_fmt),
        "",
        "|error| by scale (GPUs)",
        steady_summary(cases, "scale").to_string(formatters=summary_fmt),
        "",
        "Stated per-benchmark run terms (reference/mlperf_timing.csv, medians over result folders)",
        mlperf_run_terms(reference_dir()).to_string(float_format="{:.4g}".format),
        "",
        f"Findings: the model's best layout predicted faster than theirs by more than {1 - FINDING_RATIO:.0%} "
        f"({len(findings)} cases)",
        findings[
            ["benchmark", "gpus", "system", "their_layout", "predicted_their_s", "best_layout", "predicted_best_s"]
        ].to_string(index=False, float_format="{:.4g}".format, max_colwidth=48)
        if len(findings)
        else "none",
    ]
    return "\n".join(parts)


def main() -> None:
    """Print the steady-step report (``steady_report`` of ``steady_cases``)."""
    with pd.option_context("display.width", 250, "display.max_rows", 1000):
        print(steady_report(steady_cases()))


if __name__ == "__main__":
    main()
