"""The published measurements the model is validated against, each predicted as a ``Case``.

From reference/:

* MLPerf Training time-to-train, ResNet-50 and BERT-Large, A100 (PCIe, SXM 40/80 GB; 1-32 nodes) and 8xH100
  systems (mlperf_training_calibration.csv; duplicates across rounds removed). The planner predicts
  samples-to-converge from the workload's convergence curve, not from the run's own log.
* MLPerf Training Power energy-to-train, 8xH100 BERT and ResNet (mlperf_power.md).
* Megatron-LM Table 1 throughput per GPU, 1.7B-1T GPT models on 32-3072 A100s (megatron.md).
* Llama 3 405B on H100 (throughput at the published layout, effective training time) and Megatron-Core's GPT-3
  175B throughput on H100 (scale_facts.md).
* Zeus power-cap traces: time and energy at a cap relative to the highest limit, leave-one-network-out.

MLPerf results at scale and on newer GPUs are planner/validation/at_scale.py's. Fit split: the MLPerf results of the
first round each GPU type was available in (<= 128 GPUs: A100 v2.0, H100 v3.0; "preview" submissions are never fit
data; a result resubmitted unchanged later counts in its first round) and the Megatron rows on at most 512 GPUs;
everything else here is test data.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from planner.data import Catalog, Configuration, Estimate, Layout, Server, Workload
from planner.data import calibration as calib
from planner.physics import evaluate

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
    """One published measurement and the model's prediction of it; ``error`` = (predicted - published) /
    published."""

    kind: str  # time_to_train | energy | throughput | goodput | power_cap_time | power_cap_energy
    name: str
    split: str  # fit | test
    published: float
    predicted: float = math.nan
    unit: str = ""
    gpu_family: str = ""
    workload_family: str = ""
    inputs: str = ""  # the model's inputs for this case: cases with equal inputs get equal predictions
    gpus: int = 0  # accelerators in the run (for the summary binned by scale)
    steps: float = 0.0  # optimizer steps of the run (MLPerf at scale: samples trained / global batch)

    @property
    def error(self) -> float:
        """(predicted - published) / published."""
        return (self.predicted - self.published) / self.published


def evaluate_case(cat: Catalog, config: Configuration) -> Estimate:
    """The model's estimate of a benchmark run: a successful run of minutes, so without failures or checkpoints
    (MLPerf scores only successful runs; the goodput term is checked separately, against Llama 3)."""
    return evaluate(cat, config.model_copy(update={"failures": False}))


def gpu_for(accel: str) -> str:
    """The catalog GPU of an MLPerf accelerator name (``ACCELERATORS``: the first listed substring it contains)."""
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
        if "XDR" in part:
            kind = ("xdr800", 800.0, 2)
        elif "NDR" in part:
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
    """The MLPerf Training results on <= 128 GPUs (mlperf_training_calibration.csv) with their fit split: the
    first round each GPU type was available in, no previews, a result resubmitted unchanged in its first round."""
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


def case_catalog(cat: Catalog, row: pd.Series) -> tuple[Catalog, str, str]:
    """(the catalog with the run's node as server 'case', 'case', the run's fabric): the host template of the
    run's GPU with its GPUs per node and network, host cores and power scaled with the GPUs per node."""
    gpu = gpu_for(str(row["accelerator"]))
    fabric, ports, port_gbps = parse_network(row["host_networking"])
    host = cat.server(HOST_TEMPLATE[gpu])
    g = int(row["gpus_per_node"])
    scale = g / host.gpus_per_node
    host_scaled = {
        "cpu_cores": max(16, int(host.cpu_cores * max(scale, 0.5))),
        "cpu_power_w": host.cpu_power_w * max(scale, 0.5),
        "other_power_w": host.other_power_w * scale,
    }
    return with_case_server(cat, host, gpu, g, fabric, ports, port_gbps, **host_scaled), "case", fabric


def with_case_server(
    cat: Catalog, host: Server, gpu: str, gpus_per_node: int, fabric: str, ports: int, port_gbps: float, **extra: Any
) -> Catalog:
    """The catalog with a server 'case': the host template with the run's GPU, GPUs per node and network."""
    server = host.model_copy(
        update={
            "id": "case",
            "gpu": gpu,
            "gpus_per_node": gpus_per_node,
            "nic_ports": ports,
            "max_nic_port_gbps": port_gbps,
            "fabrics": [fabric],
            **extra,
        }
    )
    return cat.replace(servers={**cat.servers, "case": Server.model_validate(server.model_dump())})


def mlperf_workload_id(benchmark: str) -> str:
    """The catalog workload of an MLPerf benchmark of mlperf_training_calibration.csv."""
    return {"bert": "bert-large", "resnet": "resnet50"}[benchmark]


def mlperf_time_cases(
    cat: Catalog, ref: Path, fit_only: bool = False, gpu_families: Collection[str] | None = None
) -> list[Case]:
    """Time to train of the MLPerf results on <= 128 GPUs, each on its own node ('case', ``case_catalog``) at its
    global batch, samples from the workload's convergence curve. ``fit_only``: the fit rows only;
    ``gpu_families``: only runs on GPUs of these families."""
    mlperf = mlperf_cases(ref)
    if fit_only:
        mlperf = mlperf[mlperf["split"] == "fit"]
    if gpu_families is not None:
        families = mlperf["accelerator"].map(lambda a: cat.gpu(gpu_for(str(a))).family)
        mlperf = mlperf[families.isin(list(gpu_families))]
    cases = []
    for _, row in mlperf.iterrows():
        c2, server, fabric = case_catalog(cat, row)
        wl = c2.workload(mlperf_workload_id(row["benchmark"]))
        est = evaluate_case(
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
                gpus=int(row["gpus"]),
            )
        )
    return cases


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


def mlperf_power_cases(cat: Catalog, ref: Path) -> list[Case]:
    """MLPerf Power v4.0 on one 8xH100 node (``power_cases``): energy-to-train and time-to-train of each, at the
    global batch of the same run in the Training results. Test cases."""
    cases = []
    for p in power_cases(ref):
        wl = cat.workload(mlperf_workload_id(p["benchmark"]))
        est = evaluate_case(
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
                gpus=8,
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
                gpus=8,
            )
        )
    return cases


def megatron_workload(params_b: float, batch: int) -> Workload:
    """The GPT model of a Megatron-LM Table 1 row (Narayanan et al. 2021): its shape (``MEGATRON_SHAPES``),
    sequence 2,048 and vocabulary 51,200, the paper's FLOPs per sequence (72 s l h^2 (1 + s/6h + V/16lh), with
    recomputation's extra forward pass) and Korthikanti et al.'s activation bytes without FlashAttention."""
    h, a, layers = MEGATRON_SHAPES[params_b]
    s, v = 2048, 51200
    model_flops = 72.0 * s * layers * h * h * (1 + s / (6 * h) + v / (16 * layers * h))
    return Workload(
        id=f"megatron-{params_b}b",
        name=f"Megatron GPT {params_b}B",
        family="llm",
        framework="megatron-2021",
        params=params_b * 1e9,
        train_flops_per_sample=model_flops,
        sample_unit="sequence",
        sequence_length=s,
        layers=layers,
        hidden_size=h,
        attention_heads=a,
        flash_attention=False,
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
    """Megatron-LM Table 1 (reference/megatron.md): parameters (B), tensor and pipeline degrees, GPUs, batch and
    achieved TFLOP/s per GPU, one row per published configuration."""
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


def megatron_cases(cat: Catalog, ref: Path, fit_only: bool = False) -> list[Case]:
    """Megatron-LM Table 1 throughput per GPU on DGX A100 over HDR at the published tensor and pipeline degrees
    and batch, with full recomputation; the model's TFLOP/s counted as the paper counts them (4/3 of the model
    FLOPs: the recomputed forward pass included). Rows on <= ``FIT_MAX_MEGATRON_GPUS`` GPUs are fit data
    (``fit_only``: only those)."""
    cases = []
    for _, r in megatron_table(ref).iterrows():
        split = "fit" if r["gpus"] <= FIT_MAX_MEGATRON_GPUS else "test"
        if fit_only and split != "fit":
            continue
        wl = megatron_workload(float(r["params_b"]), int(r["batch"]))
        c2 = cat.replace(workloads={**cat.workloads, wl.id: wl})
        est = evaluate_case(
            c2,
            Configuration(
                model=wl.id,
                server="dgx-a100-80gb",
                nodes=int(r["gpus"]) // 8,
                fabric="hdr200",
                global_batch=int(r["batch"]),
                layout=Layout(
                    tensor_parallel=int(r["tp"]), pipeline_parallel=int(r["pp"]), zero_stage=0, recompute=True
                ),
            ),
        )
        reported = est.throughput_samples_per_s * wl.train_flops_per_sample * 4.0 / 3.0 / est.gpus / 1e12
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
                gpus=int(r["gpus"]),
            )
        )
    return cases


def h100_throughput_case(
    cat: Catalog,
    workload_id: str,
    gpus: int,
    tflops: float,
    layout: Layout,
    name: str,
    global_batch: int | None = None,
    approximate: bool = False,
) -> Case:
    """A published BF16 TFLOP/s per GPU of a run on DGX H100 over NDR at its published layout, as a test case."""
    config = Configuration(
        model=workload_id,
        server="dgx-h100",
        nodes=gpus // 8,
        fabric="ndr400",
        global_batch=global_batch,
        precision="bf16",
        layout=layout,
    )
    est = evaluate_case(cat, config)
    suffix = ", approximate" if approximate else ""
    return Case(
        "throughput",
        f"{name} (TFLOP/s per GPU{suffix})",
        "test",
        tflops,
        est.achieved_tflops_per_gpu,
        "TFLOP/s/GPU",
        "hopper",
        "llm",
        gpus=gpus,
    )


LLAMA3_405B_TFLOPS = {8192: 430.0, 16384: 400.0}  # BF16, TP8 CP1 PP16, 16M-token batches (Llama 3 Table 4)


def llama3_cases(cat: Catalog) -> list[Case]:
    """Llama 3 405B pre-training on H100 (reference/scale_facts.md section 1.1): achieved BF16 TFLOP/s per GPU at
    the published layout (TP8, PP16, 16M-token batches of 8,192-token sequences) on 8,192 and 16,384 GPUs, and
    the effective training time of the 54-day snapshot on 16,384 GPUs (published "> 90%": compared as 0.90)."""
    wl = cat.workload("llama3-405b")
    batch = int(16 * 2**20 // (wl.sequence_length or 8192))
    layout = Layout(tensor_parallel=8, pipeline_parallel=16, zero_stage=1, sequence_parallel=True)
    cases = [
        h100_throughput_case(cat, wl.id, gpus, tflops, layout, f"Llama 3 405B BF16 TP8 PP16 on {gpus} H100", batch)
        for gpus, tflops in LLAMA3_405B_TFLOPS.items()
    ]
    est = evaluate(cat, Configuration(model=wl.id, server="dgx-h100", nodes=2048, fabric="ndr400"))
    cases.append(
        Case(
            "goodput",
            "Llama 3 405B on 16,384 H100: effective training time",
            "test",
            0.90,
            est.goodput,
            "share",
            "hopper",
            "llm",
            gpus=16384,
        )
    )
    return cases


# GPT-3 175B with TP4/PP8 on 128-512 H100 at ~390 TFLOP/s per GPU, BF16 (reference/scale_facts.md section 5.3,
# Megatron-LM README / perf docs [S]): one case at the largest stated scale; the batch is not stated (the workload's).
MEGATRON_CORE_GPT3_TFLOPS = {512: 390.0}


def megatron_core_cases(cat: Catalog) -> list[Case]:
    """Megatron-Core's GPT-3 175B throughput on H100 (BF16, TP4 PP8, sequence parallel, distributed optimizer):
    achieved TFLOP/s per GPU at the published layout. The source is secondary and approximate ("~390"), and its
    global batch is not stated, so the case uses the workload's; reported as a test case, never fitted."""
    layout = Layout(tensor_parallel=4, pipeline_parallel=8, zero_stage=1, sequence_parallel=True)
    return [
        h100_throughput_case(
            cat, "gpt3-175b", gpus, tflops, layout, f"Megatron-Core GPT-3 175B BF16 TP4 PP8 on {gpus} H100", None, True
        )
        for gpus, tflops in MEGATRON_CORE_GPT3_TFLOPS.items()
    ]


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
