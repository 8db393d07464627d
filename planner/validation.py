"""Accuracy against published measurements, and the fit of the calibration parameters.

Cases (all from reference/):
* MLPerf Training time-to-train, ResNet-50 and BERT-Large, A100 (PCIe, SXM 40/80 GB; 1-32 nodes) and
  8xH100 systems (mlperf_training_calibration.csv; duplicates across rounds removed). The planner predicts
  samples-to-converge from the workload's convergence curve, not from the run's own log.
* MLPerf Training Power energy-to-train, 8xH100 BERT and ResNet (mlperf_power.md).
* Megatron-LM Table 1 throughput per GPU, 1.7B-1T GPT models on 32-3072 A100s (megatron.md).
* Zeus power-cap traces: time and energy at a cap relative to the highest limit, leave-one-network-out.

Fitted parameters: the achievable MFU per (GPU family, workload family) -- ampere/ampere-pcie/hopper x
cnn/encoder/llm -- and two global scales (overlap_scale on the frameworks' overlap fractions,
half_batch_scale on the workloads' efficiency_half_batch). Fabric bandwidth and efficiency are catalog
physics (line rate x nccl-tests efficiency), not fitted. Fit split: the MLPerf results of the first round
each GPU type was available in (A100: v2.0, H100: v3.0; "preview" submissions are never fit data), at all
scales (a result resubmitted unchanged later counts in its first round), and the Megatron rows on at most
512 GPUs. Everything else (later rounds, Megatron >= 1024 GPUs, all energy
cases) is test data. Power, memory and convergence figures are physical/catalog values, not fitted.
Power-cap curves are refitted leaving the validated network out for their own validation rows.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from planner import calibration as calib
from planner.data import Catalog, load_catalog, reference_dir
from planner.model import evaluate
from planner.schemas import Configuration, Layout, Server, Workload

# fit on the first round each GPU type was available in (MLPerf "available" category): A100 in v2.0; the
# H100 first appeared as a "preview" system (not yet available hardware/software) in v2.1 and was available
# from v3.0. Preview submissions are always test data.
FIRST_ROUND = {"a100": "v2.0", "h100": "v3.0"}
FIT_MAX_MEGATRON_GPUS = 512
ACCELERATORS = [  # substring of the MLPerf accelerator name -> catalog GPU
    ("PCIE-80GB", "a100-pcie-80gb"),
    ("PCIE-40GB", "a100-pcie-80gb"),
    ("PCIE", "a100-pcie-80gb"),
    ("SXM-40GB", "a100-sxm-40gb"),
    ("SXM4-40GB", "a100-sxm-40gb"),
    ("SXM-80GB", "a100-sxm-80gb"),
    ("SXM4-80GB", "a100-sxm-80gb"),
    ("H100", "h100-sxm"),
]
HOST_TEMPLATE = {
    "a100-pcie-80gb": "a100-pcie-4",
    "a100-sxm-40gb": "dgx-a100-80gb",
    "a100-sxm-80gb": "dgx-a100-80gb",
    "h100-sxm": "dgx-h100",
}
MEGATRON_SHAPES = {  # params (B) -> (hidden, attention heads, layers): Narayanan et al. 2021, Table 1
    1.7: (2304, 24, 24),
    3.6: (3072, 32, 30),
    7.5: (4096, 32, 36),
    18.4: (6144, 48, 40),
    39.1: (8192, 64, 48),
    76.1: (10240, 80, 60),
    145.6: (12288, 96, 80),
    310.1: (16384, 128, 96),
    529.6: (20480, 128, 105),
    1008.0: (25600, 160, 128),
}


@dataclass
class Case:
    kind: str  # time_to_train | energy | throughput | power_cap_time | power_cap_energy
    name: str
    split: str  # fit | test
    published: float
    predicted: float = math.nan
    unit: str = ""
    gpu_family: str = ""
    workload_family: str = ""
    inputs: str = ""  # the model's inputs for this case: cases with equal inputs get equal predictions
    gpus: int = 0  # accelerators in the run (for the summary binned by scale)

    @property
    def error(self) -> float:
        return (self.predicted - self.published) / self.published


def _gpu_for(accel: str) -> str:
    key = accel.upper().replace(" ", "").replace("-", "")
    for sub, gpu in ACCELERATORS:
        if sub.replace("-", "") in key:
            return gpu
    raise ValueError(f"no catalog GPU for accelerator {accel!r}")


def parse_network(text: str | float) -> tuple[str, int, float]:
    """(fabric id, compute ports per node, port Gb/s) from an MLPerf host-networking description.

    The description lists NICs (``"1x Ethernet 40Gb/Sec, 8x ConnectX-6 IB HDR 200Gb/Sec"``); the compute
    fabric is the part after "Compute:" if given, else the fastest InfiniBand/Omni-Path group, else Ethernet."""
    s = "" if not isinstance(text, str) else text
    if "Compute:" in s:
        s = s.split("Compute:")[1]
        s = re.split(r"Management|Storage|\+", s)[0]
    best: tuple[float, str, int, float] | None = None
    for part in re.split(r",|\+|Management:|Storage:", s):
        m = re.search(r"(\d+)\s*x", part)
        ports = int(m.group(1)) if m else 1
        if "NDR" in part:
            kind = ("ndr400", 400.0, 2)
        elif "HDR100" in part or "EDR" in part or "Omni-Path" in part:
            kind = ("edr100", 100.0, 2)
        elif "HDR" in part:
            kind = ("hdr200", 200.0, 2)
        elif "40Gb" in part:
            kind = ("roce100", 40.0, 1)
        elif "25Gb" in part:
            kind = ("eth25", 25.0, 1)
        else:
            continue
        score = kind[2] * 1e6 + ports * kind[1]  # prefer RDMA fabrics, then aggregate bandwidth
        if best is None or score > best[0]:
            best = (score, kind[0], ports, kind[1])
    if best is None:
        return "hdr200", 1, 200.0
    return best[1], best[2], best[3]


def mlperf_cases(ref: Path) -> pd.DataFrame:
    df = pd.read_csv(ref / "mlperf_training_calibration.csv")
    df = df.dropna(subset=["global_batch", "time_to_train_min"])  # one v4.0 row has no result
    df = df.sort_values("round", kind="stable")  # a result resubmitted unchanged counts in its first round
    df = df.drop_duplicates(["system", "benchmark", "gpus", "global_batch", "time_to_train_min"]).copy()
    # one system reports two batches ("816;1024") for its runs: take the first
    df["global_batch"] = df["global_batch"].astype(str).str.split(";").str[0].astype(float).astype(int)
    gpu_kind = np.where(df["accelerator"].str.contains("H100"), "h100", "a100")
    first = np.array([FIRST_ROUND[k] for k in gpu_kind])
    preview = df["system"].str.contains("preview", case=False).to_numpy()
    df["split"] = np.where((df["round"].to_numpy() == first) & ~preview, "fit", "test")
    return df.reset_index(drop=True)


def _case_catalog(cat: Catalog, row: pd.Series) -> tuple[Catalog, str, str]:
    gpu = _gpu_for(str(row["accelerator"]))
    fabric, ports, port_gbps = parse_network(row["host_networking"])
    host = cat.server(HOST_TEMPLATE[gpu])
    g = int(row["gpus_per_node"])
    scale = g / host.gpus_per_node
    server = host.model_copy(
        update={
            "id": "case",
            "gpu": gpu,
            "gpus_per_node": g,
            "nic_ports": ports,
            "max_nic_port_gbps": port_gbps,
            "fabrics": [fabric],
            "cpu_cores": max(16, int(host.cpu_cores * max(scale, 0.5))),
            "cpu_power_w": host.cpu_power_w * max(scale, 0.5),
            "other_power_w": host.other_power_w * scale,
        }
    )
    return cat.replace(servers={**cat.servers, "case": Server.model_validate(server.model_dump())}), "case", fabric


AT_SCALE_GPUS = {  # MLPerf accelerator_family -> catalog GPU (families the catalog models)
    "A100": "a100-sxm-80gb",
    "H100": "h100-sxm",
    "H200": "h200",
    "B200": "b200",
}
AT_SCALE_HOST = {"a100-sxm-80gb": "dgx-a100-80gb", "h100-sxm": "dgx-h100", "h200": "hgx-h200", "b200": "hgx-b200"}
AT_SCALE_WORKLOADS = {  # MLPerf benchmark -> (workload, precision of the reference implementation)
    "resnet": ("resnet50", None),
    "bert": ("bert-large", None),
    "gpt3": ("gpt3-175b", "fp8"),
    "llama2_70b_lora": ("llama2-70b-lora", None),
    "llama31_405b": ("llama3-405b", "fp8"),
}
IMAGENET_TRAIN_IMAGES = 1_281_167


def at_scale_table(ref: Path) -> pd.DataFrame:
    """MLPerf Training results at scale and on newer GPUs (reference/mlperf_training_at_scale.csv) for the GPU
    types and benchmarks the catalog models: closed division, NVIDIA SXM GPUs, duplicates (logs re-published in
    later rounds) removed. Split: the first round each GPU type was available in (A100 v1.1 at scale, H100 v3.0,
    H200 and B200 v5.0; previews never) is fit data, every later round and all previews are test data."""
    df = pd.read_csv(ref / "mlperf_training_at_scale.csv")
    df = df[df["accelerator_family"].isin(list(AT_SCALE_GPUS)) & df["benchmark"].isin(list(AT_SCALE_WORKLOADS))]
    df = df[~df["accelerator"].str.contains("PCIe|NVL", case=False, regex=True) & (df["division"] == "closed")]
    df = df[~df["notes"].fillna("").str.contains("identical per-run times")]
    df = df.sort_values("round", kind="stable").drop_duplicates(
        ["system", "benchmark", "gpus", "global_batch", "time_to_train_min_unscaled"]
    )
    first = {"A100": "v1.1", "H100": "v3.0", "H200": "v5.0", "B200": "v5.0"}
    preview = df["system_status"].fillna("").str.contains("preview", case=False).to_numpy()
    is_first = df["round"].to_numpy() == df["accelerator_family"].map(first).to_numpy()
    df = df.assign(split=np.where(is_first & ~preview, "fit", "test"))
    return df.reset_index(drop=True)


def _at_scale_samples(row: pd.Series) -> float:
    """Samples the run trained (mean over its successful runs) in the workload's sample unit."""
    runs = [float(x) for x in str(row["converged_at_per_run"]).split(";") if x]
    mean = float(np.mean(runs))
    unit, bench = row["converged_at_unit"], row["benchmark"]
    if bench == "resnet":
        return mean * IMAGENET_TRAIN_IMAGES  # epochs
    if bench == "gpt3":
        return mean / 2048.0  # tokens -> 2,048-token sequences
    return mean if unit != "tokens" else mean / 8192.0


def at_scale_cases(cat: Catalog, ref: Path, fit_only: bool = False) -> list[Case]:
    """Time to train the samples each run actually trained (its own convergence point, so convergence noise
    is out: this checks the step-time model), against the measured olympic mean (unscaled)."""
    cases = []
    for _, row in at_scale_table(ref).iterrows():
        if fit_only and row["split"] != "fit":
            continue
        gpu = AT_SCALE_GPUS[str(row["accelerator_family"])]
        if "40GB" in str(row["accelerator"]).upper():
            gpu = "a100-sxm-40gb"
        host = cat.server(AT_SCALE_HOST[AT_SCALE_GPUS[str(row["accelerator_family"])]])
        fabric, ports, port_gbps = (
            parse_network(row["host_networking"])
            if isinstance(row["host_networking"], str) and re.search(r"HDR|NDR|EDR", row["host_networking"])
            else ("ndr400" if gpu != "a100-sxm-80gb" else "hdr200", host.nic_ports, 400.0)
        )
        g = int(row["gpus_per_node"])
        server = host.model_copy(
            update={
                "id": "case",
                "gpu": gpu,
                "gpus_per_node": g,
                "nic_ports": ports,
                "max_nic_port_gbps": port_gbps,
                "fabrics": [fabric],
            }
        )
        c2 = cat.replace(servers={**cat.servers, "case": Server.model_validate(server.model_dump())})
        wl_id, precision = AT_SCALE_WORKLOADS[str(row["benchmark"])]
        wl = c2.workload(wl_id)
        samples = _at_scale_samples(row)
        est = evaluate(
            c2,
            Configuration(
                model=wl.id,
                server="case",
                nodes=int(row["nodes"]),
                fabric=fabric,
                global_batch=int(row["global_batch"]),
                samples=samples * _reference_factor(wl, int(row["global_batch"])),
                precision=precision,
            ),
        )
        cases.append(
            Case(
                "time_to_train",
                f"{row['round']} {row['submitter']} {row['system']} {row['benchmark']} "
                f"({row['gpus']} GPUs, batch {row['global_batch']})",
                str(row["split"]),
                float(row["time_to_train_min_unscaled"]),
                est.time_to_train_h * 60.0,
                "min",
                c2.gpu(gpu).family,
                wl.family,
                f"{row['benchmark']} {gpu} {row['nodes']}x{g} {fabric}x{ports} batch {row['global_batch']}",
                gpus=int(row["gpus"]),
            )
        )
    return cases


def _reference_factor(wl: Workload, batch: int) -> float:
    """Samples at the reference batch that the model scales to ``samples`` at this batch: the model multiplies
    the work by the convergence factor of the batch, so the run's own sample count is divided by it first."""
    from planner.compute import samples_factor

    return 1.0 / float(samples_factor(wl, np.asarray([batch]))[0])


def megatron_workload(params_b: float, batch: int) -> Workload:
    h, a, layers = MEGATRON_SHAPES[params_b]
    s, v = 2048, 51200
    model_flops = 72.0 * s * layers * h * h * (1 + s / (6 * h) + v / (16 * layers * h))
    return Workload(
        id=f"megatron-{params_b}b",
        name=f"Megatron GPT {params_b}B",
        family="llm",
        framework="megatron",
        params=params_b * 1e9,
        train_flops_per_sample=model_flops,
        sample_unit="sequence",
        sequence_length=s,
        layers=layers,
        hidden_size=h,
        precision="bf16",
        activation_bytes_per_sample=layers * (34.0 * s * h + 5.0 * a * s * s),
        recompute_activation_fraction=0.06,
        micro_batch=1,
        efficiency_half_batch=0.02,
        default_global_batch=batch,
        default_samples=1e6,
        reference_global_batch=batch,
        source="Narayanan et al. 2021, Table 1",
    )


def megatron_table(ref: Path) -> pd.DataFrame:
    rows = []
    for line in (ref / "megatron.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 8 and re.fullmatch(r"[\d.]+", cells[0]):
            rows.append(
                {
                    "params_b": float(cells[0]),
                    "tp": int(cells[1]),
                    "pp": int(cells[2]),
                    "gpus": int(cells[3]),
                    "batch": int(cells[4]),
                    "tflops": float(cells[5]),
                }
            )
    return pd.DataFrame(rows)


def power_cases(ref: Path) -> list[dict[str, Any]]:
    """The 8-GPU MLPerf Power rows, with the global batch of the same run in the Training results (submitter
    'smc-ac-power': same system, same time-to-train)."""
    training = pd.read_csv(ref / "mlperf_training_calibration.csv")
    training = training[training["submitter"] == "smc-ac-power"]
    out = []
    for line in (ref / "mlperf_power.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and cells[0] == "8":
            bench = "bert" if "BERT" in cells[1] else "resnet"
            batch = training.loc[training["benchmark"] == bench, "global_batch"]
            out.append(
                {
                    "benchmark": bench,
                    "minutes": float(cells[2]),
                    "ac_kj": float(cells[3].replace(",", "")),
                    "global_batch": int(batch.iloc[0]) if len(batch) else None,
                }
            )
    return out


def _workload_id(benchmark: str) -> str:
    return {"bert": "bert-large", "resnet": "resnet50"}[benchmark]


def run_cases(cat: Catalog, ref: Path, fit_only: bool = False) -> list[Case]:
    cases: list[Case] = []
    mlperf = mlperf_cases(ref)
    if fit_only:
        mlperf = mlperf[mlperf["split"] == "fit"]
    for _, row in mlperf.iterrows():
        c2, server, fabric = _case_catalog(cat, row)
        wl = c2.workload(_workload_id(row["benchmark"]))
        est = evaluate(
            c2,
            Configuration(
                model=wl.id,
                server=server,
                nodes=int(row["nodes"]),
                fabric=fabric,
                global_batch=int(row["global_batch"]),
            ),
        )
        cases.append(
            Case(
                "time_to_train",
                f"{row['round']} {row['submitter']} {row['system']} {row['benchmark']} "
                f"({row['gpus']} GPUs, batch {row['global_batch']})",
                row["split"],
                float(row["time_to_train_min"]),
                est.time_to_train_h * 60.0,
                "min",
                c2.gpu(c2.server(server).gpu or "").family,
                wl.family,
                f"{row['benchmark']} {c2.server(server).gpu} {row['nodes']}x{row['gpus_per_node']} "
                f"{fabric}x{c2.server(server).nic_ports} batch {row['global_batch']}",
            )
        )
    for p in [] if fit_only else power_cases(ref):
        wl = cat.workload(_workload_id(p["benchmark"]))
        est = evaluate(
            cat,
            Configuration(
                model=wl.id, server="dgx-h100", nodes=1, global_batch=p["global_batch"] or wl.default_global_batch
            ),
        )
        kj = est.energy_kwh * 3600.0
        cases.append(
            Case(
                "energy",
                f"MLPerf Power v4.0 8xH100 {p['benchmark']} energy-to-train",
                "test",
                p["ac_kj"],
                kj,
                "kJ",
                "hopper",
                wl.family,
            )
        )
        cases.append(
            Case(
                "time_to_train",
                f"MLPerf Power v4.0 8xH100 {p['benchmark']} time-to-train",
                "test",
                p["minutes"],
                est.time_to_train_h * 60.0,
                "min",
                "hopper",
                wl.family,
            )
        )
    for _, r in megatron_table(ref).iterrows():
        wl = megatron_workload(float(r["params_b"]), int(r["batch"]))
        c2 = cat.replace(workloads={**cat.workloads, wl.id: wl})
        nodes = int(r["gpus"]) // 8
        est = evaluate(
            c2,
            Configuration(
                model=wl.id,
                server="dgx-a100-80gb",
                nodes=nodes,
                fabric="hdr200",
                global_batch=int(r["batch"]),
                layout=Layout(
                    tensor_parallel=int(r["tp"]), pipeline_parallel=int(r["pp"]), zero_stage=0, recompute=True
                ),
            ),
        )
        reported = est.throughput_samples_per_s * wl.train_flops_per_sample * 4.0 / 3.0 / est.gpus / 1e12
        split = "fit" if r["gpus"] <= FIT_MAX_MEGATRON_GPUS else "test"
        if fit_only and split != "fit":
            continue
        cases.append(
            Case(
                "throughput",
                f"Megatron-LM {r['params_b']}B t={r['tp']} p={r['pp']} on {r['gpus']} A100",
                split,
                float(r["tflops"]),
                reported,
                "TFLOP/s/GPU",
                "ampere",
                "llm",
            )
        )
    if not fit_only:
        cases += zeus_cases(ref)
    return cases


def zeus_cases(ref: Path, caps: tuple[float, ...] = (0.5, 0.7)) -> list[Case]:
    """Leave-one-network-out: the demand-normalized curve fit on the other networks of the same GPU predicts
    the held-out network from its own uncapped demand (its power at the highest limit, part of the baseline
    the ratios are taken against)."""
    runs = calib.relative_runs(calib.zeus_traces(ref))
    cases = []
    for (curve, net), held in runs.groupby(["curve", "network"]):
        others = runs[(runs["curve"] == curve) & (runs["network"] != net)]
        norm = calib.normalized_curve(others)
        d = float(calib.demand(held).median())
        top = float(held["top_cap_fraction"].iloc[0])
        for c in caps:
            at = held[np.isclose(held["cap_fraction"], c, atol=0.02)]
            if at.empty or c >= top:
                continue
            f, p = calib.curve_at(norm, d, np.asarray([top, c]))
            t_pred = float(f[0] / f[1])
            e_pred = t_pred * float(p[1] / p[0])
            cases.append(
                Case(
                    "power_cap_time",
                    f"Zeus {curve} {net} at {c:.0%} cap: time / time at max",
                    "test",
                    float(at["time_ratio"].median()),
                    t_pred,
                    "ratio",
                )
            )
            cases.append(
                Case(
                    "power_cap_energy",
                    f"Zeus {curve} {net} at {c:.0%} cap: energy / energy at max",
                    "test",
                    float(at["energy_ratio"].median()),
                    e_pred,
                    "ratio",
                )
            )
    return cases


OVERLAP_SCALES = (0.0, 0.25, 0.5, 0.75, 1.0)
HALF_BATCH_SCALES = (1.0, 4.0, 16.0)


def fit_mfu(cat: Catalog, ref: Path, iterations: int = 3) -> tuple[dict[str, Any], float]:
    """Fixed-point fit of MFU per (GPU family, workload family) on the fit split (geometric median).

    Returns the calibration and its mean absolute log error on the fit cases."""
    calibration = dict(cat.calibration)
    calibration["mfu"] = {}  # start clean: only pairs with fit cases get a value (no leakage from a prior fit)
    score = math.inf
    for _ in range(iterations):
        fit_cases = run_cases_fit_only(cat.replace(calibration=calibration), ref)
        groups: dict[tuple[str, str], list[float]] = {}
        for c in fit_cases:
            # time cases: MFU must scale by predicted/published time; throughput cases inversely
            ratio = c.predicted / c.published if c.kind == "time_to_train" else c.published / c.predicted
            groups.setdefault((c.gpu_family, c.workload_family), []).append(math.log(ratio))
        score = float(np.mean([abs(x) for logs in groups.values() for x in logs]))
        for (gf, wf), logs in groups.items():
            old = float(calibration["mfu"].setdefault(gf, {}).get(wf, 0.4))
            calibration["mfu"][gf][wf] = round(old * math.exp(float(np.median(logs))), 4)
    return calibration, score


def fit_all(cat: Catalog, ref: Path) -> dict[str, Any]:
    """Grid over the two global communication scales; MFU refitted at each grid point; best fit-split score."""
    best: tuple[float, dict[str, Any]] | None = None
    for o in OVERLAP_SCALES:
        for hb in HALF_BATCH_SCALES:
            start = {**cat.calibration, "overlap_scale": o, "half_batch_scale": hb}
            start.pop("fabric_efficiency_scale", None)  # retired: fabric efficiency is catalog physics
            calibration, score = fit_mfu(cat.replace(calibration=start), ref)
            if best is None or score < best[0]:
                best = (score, calibration)
    assert best is not None
    return best[1]


def run_cases_fit_only(cat: Catalog, ref: Path) -> list[Case]:
    return [c for c in run_cases(cat, ref, fit_only=True) if c.split == "fit"]


def summarize(cases: list[Case]) -> pd.DataFrame:
    rows = []
    for kind in ("time_to_train", "energy", "throughput", "power_cap_time", "power_cap_energy"):
        for split in ("fit", "test", "all"):
            sel = [abs(c.error) for c in cases if c.kind == kind and (split == "all" or c.split == split)]
            if sel:
                rows.append(
                    {
                        "metric": kind,
                        "split": split,
                        "cases": len(sel),
                        "median_abs_error_pct": 100 * float(np.median(sel)),
                        "max_abs_error_pct": 100 * float(np.max(sel)),
                        "within_25pct": sum(e <= 0.25 for e in sel),
                    }
                )
    return pd.DataFrame(rows)


def input_spread(cases: list[Case]) -> pd.DataFrame:
    """Published spread within groups of MLPerf cases with identical model inputs (>= 2 cases)."""
    groups: dict[str, list[float]] = {}
    for c in cases:
        if c.kind == "time_to_train" and c.inputs:
            groups.setdefault(c.inputs, []).append(c.published)
    rows = [
        {
            "model inputs": key,
            "results": len(v),
            "fastest (min)": min(v),
            "slowest (min)": max(v),
            "spread % (slowest / fastest - 1)": 100 * (max(v) / min(v) - 1),
        }
        for key, v in groups.items()
        if len(v) >= 2
    ]
    df = pd.DataFrame(rows)
    return df.sort_values("spread % (slowest / fastest - 1)", ascending=False) if len(df) else df


def write_report(cases: list[Case], out: Path, calibration: dict[str, Any]) -> None:
    summ = summarize(cases)
    lines = [
        "# Model accuracy against published measurements",
        "",
        "Generated by `planner validate` (planner/validation.py) from the data in `reference/`. Do not edit by hand.",
        "",
        "Error = (predicted - published) / published. **Fit** rows were used to fit the only fitted parameters "
        "(achievable MFU per GPU family x workload family and two global scales, overlap and small-batch "
        "efficiency): the MLPerf round each GPU type was first available in (A100 v2.0, H100 v3.0; preview "
        "systems are test data) at all scales, and Megatron-LM rows on <= 512 GPUs); "
        "**test** rows were not. MLPerf time-to-train predictions use the "
        "workload's convergence-vs-batch curve (not the run's own convergence point), so they include "
        "convergence noise; MLPerf times also include evaluation and start-up, which the model does not add.",
        "",
        "## Summary",
        "",
        summ.to_markdown(index=False, floatfmt=".1f"),
        "",
        "## Spread between submitters of the same configuration",
        "",
        "MLPerf results whose model inputs are identical (benchmark, GPU, nodes x GPUs per node, fabric x ports, "
        "global batch) but come from different systems or software, so the model predicts one time for all of "
        "them. Their published times still differ: no model of the hardware alone can be closer than about half "
        "of a group's spread on every case of it.",
        "",
        input_spread(cases).to_markdown(index=False, floatfmt=".3g"),
        "",
        "## Fitted parameters (catalog/calibration.yaml)",
        "",
        "```yaml",
        yaml.safe_dump(
            {k: calibration.get(k) for k in ("mfu", "overlap_scale", "half_batch_scale")},
            sort_keys=True,
        ).strip(),
        "```",
        "",
    ]
    titles = {
        "time_to_train": "Time-to-train (MLPerf Training)",
        "energy": "Energy-to-train (MLPerf Power)",
        "throughput": "Throughput per GPU (Megatron-LM Table 1)",
        "power_cap_time": "Power cap: time ratio (Zeus, leave-one-network-out)",
        "power_cap_energy": "Power cap: energy ratio (Zeus, leave-one-network-out)",
    }
    for kind, title in titles.items():
        sel = [c for c in cases if c.kind == kind]
        if not sel:
            continue
        df = pd.DataFrame(
            [
                {
                    "case": c.name,
                    "split": c.split,
                    f"published ({c.unit})": c.published,
                    f"predicted ({c.unit})": c.predicted,
                    "error %": 100 * c.error,
                }
                for c in sel
            ]
        )
        lines += [f"## {title}", "", df.to_markdown(index=False, floatfmt=".3g"), ""]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines))


def calibrate(catalog_path: Path | None = None, reference: Path | None = None) -> dict[str, Any]:
    """Refit power-cap curves and MFU; write catalog/power_caps.yaml and catalog/calibration.yaml."""
    from planner.data import catalog_dir

    ref = reference_dir(reference)
    cdir = catalog_dir(catalog_path)
    calib.write_power_caps(ref, cdir / "power_caps.yaml")
    cat = load_catalog(cdir)
    calibration = fit_all(cat, ref)
    header = (
        "# Calibration, generated by `planner calibrate` (planner/validation.py::fit_mfu). mfu: achievable\n"
        "# model-FLOPs utilisation at large micro-batch per GPU family x workload family, fitted on the split\n"
        "# stated in docs/VALIDATION.md. Pairs without a fit use the first fallback reference family with a\n"
        "# value, scaled by matmul efficiency (gpu / reference). default_mfu: unvalidated estimates.\n"
        "# fp8_efficiency_ratio: MFU against the FP8 peak relative to BF16 (1.4x speed-up, estimate).\n"
        "# overlap_scale multiplies every framework's overlap_fraction, half_batch_scale every workload's\n"
        "# efficiency_half_batch: fitted on a grid on the same split. Fabric efficiency is not fitted.\n"
    )
    (cdir / "calibration.yaml").write_text(header + yaml.safe_dump(calibration, sort_keys=False))
    return calibration


def validate(out: Path, catalog_path: Path | None = None, reference: Path | None = None) -> pd.DataFrame:
    cat = load_catalog(catalog_path)
    cases = run_cases(cat, reference_dir(reference))
    write_report(cases, out, cat.calibration)
    return summarize(cases)
