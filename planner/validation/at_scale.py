"""MLPerf Training results at scale and on newer GPUs as validation cases (reference/mlperf_training_at_scale.csv,
mlperf_power_at_scale.csv).

A100/H100/H200/B200/GB200 to 16,384 GPUs, the L40S, AMD MI300X-MI355X, B300 and GB300, each predicted at the samples
the run actually trained (its own convergence point), so their errors are the step-time model's. Fit split
(``AT_SCALE_FIRST_ROUND``): the first round each GPU type was available in (A100 v1.1, H100 v3.0, H200 and B200 v5.0,
L40S v3.1, MI300X and MI325X v5.0, MI350X, MI355X and B300 v5.1); every later round and all previews are test data.
Rack-scale NVL72 systems (GB200, GB300) are test data only: the model's node is then the run's NVLink domain.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from planner.data import Catalog, Configuration, Workload
from planner.physics import evaluation_time_from_step_s, samples_factor, startup_time_s
from planner.physics.compute import overlap_fractions
from planner.validation.cases import Case, evaluate_case, parse_network, with_case_server

AT_SCALE_GPUS = {  # MLPerf accelerator_family -> catalog GPU (families the catalog models)
    "A100": "a100-sxm-80gb",
    "H100": "h100-sxm",
    "H200": "h200",
    "B200": "b200",
    "GB200": "gb200",
    # GPUs added with the catalog's current generation (fitted on their first round like the others: B300 within the
    # Blackwell family, the L40S as Ada, MI300X/MI325X as CDNA3, MI350X/MI355X as CDNA4)
    "L40S": "l40s",
    "MI300X": "mi300x",
    "MI325X": "mi325x",
    "MI350X": "mi350x",
    "MI355X": "mi355x",
    "B300": "b300",
    "GB300": "gb300",
}
# The fit split at scale: the MLPerf round each GPU type was first available in, one rule for every type (A100 v1.1,
# H100 v3.0, H200 and B200 v5.0 as before; the L40S v3.1; MI300X and MI325X v5.0; MI350X, MI355X and B300 v5.1, their
# only round). Rack-scale NVLink systems (GB200 / GB300 NVL72) are test data only: systems of a fitted family whose
# NVLink domain of up to 72 GPUs the fit meets nowhere. How the model carries to a GPU family no fit has seen is
# reported apart (``unseen_family_cases``: each family predicted with its own fit removed).
AT_SCALE_FIRST_ROUND = {
    "A100": "v1.1",
    "H100": "v3.0",
    "H200": "v5.0",
    "B200": "v5.0",
    "L40S": "v3.1",
    "MI300X": "v5.0",
    "MI325X": "v5.0",
    "MI350X": "v5.1",
    "MI355X": "v5.1",
    "B300": "v5.1",
}
AT_SCALE_HOST = {
    "a100-sxm-80gb": "dgx-a100-80gb",
    "h100-sxm": "dgx-h100",
    "h200": "hgx-h200",
    "b200": "hgx-b200",
    "gb200": "gb200-nvl72",
    "l40s": "l40s-4",
    "mi300x": "mi300x-8",
    "mi325x": "mi325x-8",
    "mi350x": "mi350x-8",
    "mi355x": "mi355x-8",
    "b300": "hgx-b300",
    "gb300": "gb300-nvl72",
}
AT_SCALE_FRAMEWORKS_NOT_MODELLED = ("tinygrad",)  # research frameworks no catalog profile describes
# GPUs one NVLink domain joins where it spans several nodes (compute trays)
NVLINK_DOMAIN_MAX = {"gb200": 72, "gb300": 72}
AT_SCALE_WORKLOADS = {  # MLPerf benchmark -> (workload, precision of the reference implementation)
    "resnet": ("resnet50", None),
    "bert": ("bert-large", None),
    "gpt3": ("gpt3-175b", "fp8"),
    "llama2_70b_lora": ("llama2-70b-lora", "fp8"),
    "llama31_405b": ("llama3-405b", "fp8"),
}
# (round, submitter, benchmark) of published runs that trained their GEMMs in FP4: NVIDIA's own v5.1 Llama 3.1
# 405B submissions (GB200, GB300) used NVFP4, as NVIDIA announced for that round (recalled, not stated in
# reference/); partners' v5.1 405B runs (University of Florida, B200) are taken as FP8
AT_SCALE_FP4_RUNS = {("v5.1", "NVIDIA", "llama31_405b")}
IMAGENET_TRAIN_IMAGES = 1_281_167


def at_scale_table(ref: Path) -> pd.DataFrame:
    """MLPerf Training results at scale and on newer GPUs (reference/mlperf_training_at_scale.csv) for the GPU
    types and benchmarks the catalog models: closed division, NVIDIA SXM GPUs, the L40S and AMD MI300X-MI355X, runs of
    frameworks no catalog profile describes (tinygrad) left out, duplicates (logs re-published in later rounds)
    removed. Split (``AT_SCALE_FIRST_ROUND``): the first round each GPU type was available in is fit data, every
    later round and all previews are test data. GB200 and GB300 (NVL72 racks) are test data only: systems of the
    fitted Blackwell family with an NVLink domain of up to 72 GPUs, which the model meets nowhere in its fit."""
    df = pd.read_csv(ref / "mlperf_training_at_scale.csv")
    df = df[df["accelerator_family"].isin(list(AT_SCALE_GPUS)) & df["benchmark"].isin(list(AT_SCALE_WORKLOADS))]
    df = df[~df["accelerator"].str.contains("PCIe|NVL", case=False, regex=True) & (df["division"] == "closed")]
    df = df[~df["notes"].fillna("").str.contains("identical per-run times")]
    df = df[~df["framework"].fillna("").str.lower().str.contains("|".join(AT_SCALE_FRAMEWORKS_NOT_MODELLED))]
    df = df.sort_values("round", kind="stable").drop_duplicates(
        ["system", "benchmark", "gpus", "global_batch", "time_to_train_min_unscaled"]
    )
    preview = df["system_status"].fillna("").str.contains("preview", case=False).to_numpy()
    is_first = df["round"].to_numpy() == df["accelerator_family"].map(AT_SCALE_FIRST_ROUND).to_numpy()
    df = df.assign(split=np.where(is_first & ~preview, "fit", "test"))
    return df.reset_index(drop=True)


def at_scale_samples(row: pd.Series) -> float:
    """Samples the run trained (mean over its successful runs) in the workload's sample unit."""
    runs = [float(x) for x in str(row["converged_at_per_run"]).split(";") if x]
    mean = float(np.mean(runs))
    unit, bench = row["converged_at_unit"], row["benchmark"]
    if bench == "resnet":
        return mean * IMAGENET_TRAIN_IMAGES  # epochs
    if bench == "gpt3":
        return mean / 2048.0  # tokens -> 2,048-token sequences
    return mean if unit != "tokens" else mean / 8192.0


def at_scale_configuration(cat: Catalog, row: pd.Series) -> tuple[Catalog, Configuration]:
    """The catalog (with the run's node as server 'case') and configuration of an at-scale MLPerf result: the
    samples the run actually trained (its own convergence point), its global batch and node count."""
    family = str(row["accelerator_family"])
    gpu = "a100-sxm-40gb" if "40GB" in str(row["accelerator"]).upper() else AT_SCALE_GPUS[family]
    host = cat.server(AT_SCALE_HOST[AT_SCALE_GPUS[family]])
    net = row["host_networking"]
    if isinstance(net, str) and re.search(r"HDR|NDR|EDR|XDR", net):
        fabric, ports, port_gbps = parse_network(net)
    elif isinstance(net, str) and re.search(r"RoCE|BF3|BlueField", net, re.IGNORECASE):  # Ethernet RDMA: no SHARP
        m = re.search(r"Compute:\s*(\d+)\s*x", net)
        rate = re.search(r"(\d+)\s*Gb", net.split("Compute:")[-1])
        ew = re.search(r"(\d+)\s*x\s*\S*\s*(\d+)\s*Gb\w*\s+for\s+EW", net)  # the east-west (compute) NICs
        if ew:
            m, rate = ew, re.search(r"(\d+)\s*Gb", ew.group(0).split("x", 1)[1])
        fabric, ports = "roce400", int(m.group(1)) if m else host.nic_ports
        port_gbps = min(float(rate.group(1)), 400.0) if rate else 400.0
    else:  # not stated: the host template's fabric
        fabric, ports, port_gbps = host.fabrics[0], host.nic_ports, host.max_nic_port_gbps
    gpus_per_node, nodes = int(row["gpus_per_node"]), int(row["nodes"])
    extra: dict[str, Any] = {}
    if gpu in NVLINK_DOMAIN_MAX:  # the model's node is the NVLink domain: the run's trays in one rack
        gpus_per_node = nvlink_domain(int(row["gpus"]), NVLINK_DOMAIN_MAX[gpu])
        nodes, ports = int(row["gpus"]) // gpus_per_node, gpus_per_node  # one NIC per GPU
        share = gpus_per_node / host.gpus_per_node
        extra = {
            "cpu_cores": max(1, round(host.cpu_cores * share)),
            **{k: getattr(host, k) * share for k in ("cpu_power_w", "ram_power_w", "storage_power_w", "other_power_w")},
        }
    c2 = with_case_server(cat, host, gpu, gpus_per_node, fabric, ports, port_gbps, **extra)
    wl_id, precision = AT_SCALE_WORKLOADS[str(row["benchmark"])]
    wl = c2.workload(wl_id)
    if "deepspeed" in f"{row['system']} {row['framework']}".lower():  # the software the run used, as a user would
        wl = wl.model_copy(update={"framework": "deepspeed"})  # DeepSpeed on NGC PyTorch: bf16, no FP8 engine
        c2 = c2.replace(workloads={**c2.workloads, wl.id: wl})
        precision = None
    if (str(row["round"]), str(row["submitter"]), str(row["benchmark"])) in AT_SCALE_FP4_RUNS:
        precision = "fp4"
    batch = int(row["global_batch"])
    config = Configuration(
        model=wl.id,
        server="case",
        nodes=nodes,
        fabric=fabric,
        global_batch=batch,
        samples=at_scale_samples(row) * reference_factor(wl, batch),
        precision=precision,
    )
    return c2, config


def nvlink_domain(gpus: int, domain_max: int) -> int:
    """GPUs per NVLink domain of a run on rack-scale NVLink systems (GB200 NVL72): the whole run while it fits
    one rack, else the largest whole share of a rack that divides the run (72, or 64 = 16 of a rack's 18 trays,
    as 512- to 5,120-GPU runs are laid out), else one compute tray (4)."""
    if gpus <= domain_max:
        return gpus
    for g in (domain_max, 64, 32, 16, 8, 4):
        if gpus % g == 0:
            return g
    return 4


def at_scale_cases(
    cat: Catalog, ref: Path, fit_only: bool = False, gpu_families: Collection[str] | None = None
) -> list[Case]:
    """Time to train the samples each run actually trained (its own convergence point, so convergence noise
    is out: this checks the step-time model), against the measured olympic mean (unscaled): MLPerf's timed window
    as the sum of its named terms -- training at the model's best layout in the run's precision and attention
    precision and the precisions it stored frozen weights and activation-function inputs in (where its settings
    state them: ``their_precision``, ``their_fp8_attention``, ``their_fp8_params``, ``their_fp8_activation``), plus
    the run's own evaluations at the benchmark's stated training samples per evaluation and the benchmark's stated
    start-up (``mlperf_run_terms``, reference/mlperf_timing.csv).
    ``gpu_families``: only the runs on GPUs of these families."""

    terms = mlperf_run_terms(ref)
    timing = pd.read_csv(ref / "mlperf_timing.csv", usecols=["source_path", "evals_med"])
    evals = timing.drop_duplicates("source_path").set_index("source_path")["evals_med"]
    settings = pd.read_csv(
        ref / "mlperf_settings.csv",
        usecols=["source_path", "precision", "fp8_attention", "fp8_params", "fp8_activation"],
        dtype=str,
    )
    stated = settings.drop_duplicates("source_path").set_index("source_path")
    cases = []
    for _, row in at_scale_table(ref).iterrows():
        if fit_only and row["split"] != "fit":
            continue
        if (
            gpu_families is not None
            and cat.gpu(AT_SCALE_GPUS[str(row["accelerator_family"])]).family not in gpu_families
        ):
            continue
        c2, config = at_scale_configuration(cat, row)
        theirs = stated.loc[row["source_path"]] if row["source_path"] in stated.index else pd.Series(dtype=str)
        precision = their_precision(theirs)
        if precision is not None and precision != config.precision:  # the run's own, where its settings state it
            config = config.model_copy(update={"precision": precision})
        c2 = with_attention_precision(c2, config, their_fp8_attention(theirs))
        c2 = with_stored_precisions(c2, config, their_fp8_params(theirs), their_fp8_activation(theirs))
        bench = str(row["benchmark"])
        est = evaluate_case(c2, config)
        n_evals = float(evals.get(row["source_path"], math.nan))
        evaluation = mlperf_evaluation_s(terms, bench, n_evals, est.step_time_s, float(est.global_batch))
        startup = startup_time_s(float(terms.at[bench, "startup_s"]), float(terms.at[bench, "warmup_excess_s"]))
        window_min = est.time_to_train_h * 60.0 + (evaluation + startup) / 60.0
        server = c2.server("case")
        cases.append(
            Case(
                "time_to_train",
                f"{row['round']} {row['submitter']} {row['system']} {row['benchmark']} "
                f"({row['gpus']} GPUs, batch {row['global_batch']})",
                str(row["split"]),
                float(row["time_to_train_min_unscaled"]),
                window_min,
                "min",
                c2.gpu(server.gpu or "").family,
                c2.workload(config.model).family,
                f"{row['benchmark']} {server.gpu} {config.nodes}x{server.gpus_per_node} "
                f"{config.fabric}x{server.nic_ports} batch {row['global_batch']}",
                gpus=int(row["gpus"]),
                steps=est.samples_to_train / est.global_batch,
            )
        )
    return cases


def reference_factor(wl: Workload, batch: int) -> float:
    """Samples at the reference batch that the model scales to ``samples`` at this batch: the model multiplies
    the work by the convergence factor of the batch, so the run's own sample count is divided by it first."""
    return 1.0 / float(samples_factor(wl, np.asarray([batch]))[0])


def power_at_scale_cases(cat: Catalog, ref: Path) -> list[Case]:
    """MLPerf Power energy-to-train of newer systems (reference/mlperf_power_at_scale.csv; the v4.0 8xH100 rows
    repeat mlperf_power.md and are skipped), each predicted at the configuration and samples of the same run
    in the Training results: node-level energy against the IT energy of the nodes (no switches, no PUE)."""
    power = pd.read_csv(ref / "mlperf_power_at_scale.csv")
    training = pd.read_csv(ref / "mlperf_training_at_scale.csv")
    cases = []
    for _, p in power.iterrows():
        if p["round"] == "v4.0":
            continue
        match = training[
            (training["round"] == p["round"])
            & (training["system"] == p["system"])
            & (training["benchmark"] == p["benchmark"])
        ]
        if match.empty or str(match.iloc[0]["accelerator_family"]) not in AT_SCALE_GPUS:
            continue
        c2, config = at_scale_configuration(cat, match.iloc[0])
        est = evaluate_case(c2, config)
        cases.append(
            Case(
                "energy",
                f"MLPerf Power {p['round']} {p['submitter']} {p['system']} {p['benchmark']} energy-to-train",
                "test",
                float(p["energy_kj"]),
                est.energy_kwh * 3600.0,
                "kJ",
                c2.gpu(c2.server("case").gpu or "").family,
                c2.workload(config.model).family,
                gpus=int(p["gpus"]),
            )
        )
    return cases


def their_fp8_attention(row: pd.Series) -> bool:
    """Whether the submission ran attention's score and context GEMMs in FP8, as its settings state it
    (mlperf_settings.csv ``fp8_attention``: '1' or 'True', the config's FP8_DPA / fp8_dot_product_attention);
    unstated, '0' or 'False': off, Transformer Engine's default (planner/physics/compute.py attention_precision)."""
    text = str(row.get("fp8_attention", "")).strip().lower()
    return text in ("1", "1.0", "true")


def with_attention_precision(cat: Catalog, config: Configuration, fp8_attention: bool) -> Catalog:
    """``cat`` with the configuration's workload running attention in FP8 or not (``Workload.fp8_attention``), as the
    submission did."""
    wl = cat.workload(config.model)
    if wl.fp8_attention == fp8_attention:
        return cat
    wl = wl.model_copy(update={"fp8_attention": fp8_attention})
    return cat.replace(workloads={**cat.workloads, wl.id: wl})


def their_stated_flag(row: pd.Series, column: str) -> bool | None:
    """A yes/no setting of the submission as mlperf_settings.csv states it in ``column``: '1' or 'True' on, '0' or
    'False' off, None where unstated (no config found, or the config does not set it)."""
    text = str(row.get(column, "")).strip().lower()
    if text in ("1", "1.0", "true"):
        return True
    if text in ("0", "0.0", "false"):
        return False
    return None


def their_fp8_params(row: pd.Series) -> bool | None:
    """Whether the submission kept its (frozen) weights in FP8 only (mlperf_settings.csv ``fp8_params``: NeMo
    ``fp8_params``, Transformer Engine ``fp8_model_init``); None where unstated (the workload's
    ``fp8_frozen_weights`` then applies)."""
    return their_stated_flag(row, "fp8_params")


def their_fp8_activation(row: pd.Series) -> bool | None:
    """Whether the submission kept the MLP activation function's input in FP8 (mlperf_settings.csv
    ``fp8_activation``, taken as Megatron-Core's ``activation_func_fp8_input_store``); None where unstated (the
    workload's ``fp8_activation_function_input`` then applies)."""
    return their_stated_flag(row, "fp8_activation")


def their_tp_comm_overlap(row: pd.Series) -> bool | None:
    """Whether the submission overlapped its tensor-parallel communication with GEMMs (mlperf_settings.csv
    ``tp_comm_overlap``: NeMo / Megatron-Core ``tp_comm_overlap``, Transformer Engine's userbuffers overlap of the
    sequence-parallel all-gathers and reduce-scatters); None where unstated."""
    return their_stated_flag(row, "tp_comm_overlap")


def with_tp_comm_overlap(cat: Catalog, config: Configuration, overlap: bool | None) -> Catalog:
    """``cat`` with the tensor-parallel communication a submission that turned the overlap off hides
    (``their_tp_comm_overlap`` False). On or unstated, the framework's fitted share applies (catalog/calibration.yaml
    ``tp_overlap``). Off, Transformer Engine does not split the all-gathers and reduce-scatters into chunks
    pipelined with the GEMM that reads or writes them, and what remains hidden is Megatron's own asynchronous
    overlap of the backward pass's collectives with the weight-gradient GEMMs (``LinearWithGradAccumulationAnd
    AsyncCommunication``) -- GEMMs that frozen weights do not run: the fitted share x the share of the weights
    that train (all of it in pre-training; none, in effect, with LoRA's frozen base)."""
    if overlap is not False:
        return cat
    wl = cat.workload(config.model)
    fw = cat.framework(wl.framework)
    _, fitted = overlap_fractions(cat.calibration, fw)
    calibration = dict(cat.calibration)
    hidden = fitted * min(wl.trainable / wl.params, 1.0)
    calibration["tp_overlap"] = {**calibration.get("tp_overlap", {}), fw.id: hidden}
    return cat.replace(calibration=calibration)


def with_stored_precisions(
    cat: Catalog, config: Configuration, fp8_frozen_weights: bool | None, fp8_activation_function_input: bool | None
) -> Catalog:
    """``cat`` with the configuration's workload storing its frozen weights (``Workload.fp8_frozen_weights``) and its
    activation function's input (``Workload.fp8_activation_function_input``) in FP8 or not, as the submission did;
    None leaves the workload's own."""
    wl = cat.workload(config.model)
    update = {
        k: v
        for k, v in (
            ("fp8_frozen_weights", fp8_frozen_weights),
            ("fp8_activation_function_input", fp8_activation_function_input),
        )
        if v is not None and getattr(wl, k) != v
    }
    if not update:
        return cat
    wl = wl.model_copy(update=update)
    return cat.replace(workloads={**cat.workloads, wl.id: wl})


def their_precision(row: pd.Series) -> str | None:
    """The submission's GEMM precision from mlperf_settings.csv ('fp4' for an FP4 recipe, 'fp8', 'bf16'); None
    where not stated (the at-scale default then applies)."""
    text = str(row.get("precision", "")).strip().upper()
    if text.startswith("FP4"):
        return "fp4"
    if text.startswith("FP8"):
        return "fp8"
    if text.startswith("BF16"):
        return "bf16"
    return None


def mlperf_run_terms(ref: Path) -> pd.DataFrame:
    """MLPerf's stated start-up and evaluation figures per benchmark (reference/mlperf_timing.csv, the median over
    the result folders on the catalog's GPU families): ``startup_s`` (run_start to the first block,
    ``startup_s_med``), ``warmup_excess_s`` (the first block's time beyond the steady rate,
    ``first_block_excess_s_med``), ``gpu_s_per_evaluation`` (eval_s_med / evals_med x GPUs) and
    ``train_samples_per_evaluation`` (eval_s_med / evals_med x the run's steady samples per second: what one
    evaluation costs in training samples on the same GPUs, ``run_time.evaluation_time_from_step_s``; both over the
    folders whose evaluation is separable), ``folders``; index: benchmark."""
    t = pd.read_csv(ref / "mlperf_timing.csv")
    t = t[t["accelerator_family"].isin(list(AT_SCALE_GPUS))]
    evals = t[(t["eval_separable"] == "yes") & (t["evals_med"] > 0)]
    one_eval_s = evals["eval_s_med"] / evals["evals_med"]
    per_eval = (one_eval_s * evals["gpus"]).groupby(evals["benchmark"]).median()
    samples_per_eval = (one_eval_s * evals["steady_samples_per_s_med"]).groupby(evals["benchmark"]).median()
    g = t.groupby("benchmark")
    return pd.DataFrame(
        {
            "startup_s": g["startup_s_med"].median().fillna(0.0),
            "warmup_excess_s": g["first_block_excess_s_med"].median().fillna(0.0),
            "gpu_s_per_evaluation": per_eval,
            "train_samples_per_evaluation": samples_per_eval,
            "folders": g.size(),
        }
    ).fillna({"gpu_s_per_evaluation": 0.0, "train_samples_per_evaluation": 0.0})


def mlperf_evaluation_s(terms: pd.DataFrame, benchmark: str, evaluations: float, step_s: float, batch: float) -> float:
    """Seconds of evaluation in an MLPerf run of ``benchmark`` with ``evaluations`` evaluations (NaN: none logged) at
    a steady step of ``step_s`` for ``batch`` samples: the benchmark's stated training samples per evaluation
    (``mlperf_run_terms``) at that step (``run_time.evaluation_time_from_step_s``)."""
    n = 0.0 if math.isnan(evaluations) else evaluations
    samples = float(terms.at[benchmark, "train_samples_per_evaluation"])
    return evaluation_time_from_step_s(n, samples, step_s, batch)
