"""Mixture-of-Experts training runs as validation cases (reference/moe.md section 1), the fit of the two MoE
calibration parameters, the MoE accuracy table and its section of docs/VALIDATION.md (``moe_section``).

Each row is a published Megatron-Core, ModelZoo or NeMo/Megatron-Bridge benchmark with its full layout (TP, PP,
VP, CP, EP, micro-batch, global batch), precision and dispatcher, predicted at that layout with forced load
balance (as every benchmark ran: moe.md section 0) and without failures; the published figure is model TFLOP/s
per GPU under Megatron's convention (the planner's ``achieved_tflops_per_gpu`` counts the same FLOPs), or tokens/s
per GPU for gpt-oss (moe.md section 0 caveat b). Hosts: DGX H100 and HGX B200 on 400G NDR, HGX B300 on 800G XDR
(8-GPU NVLink domains); GB200 / GB300 runs on the NVL72 racks as nodes of their NVLink domain as used (64 GPUs of
a rack for EP64 runs on 256 GPUs: ModelZoo runs 256 GB200 as 64 nodes of 4 in four racks).

Fit split (``MOE_FIT_ROWS``): five rows -- A19 (Qwen3-30B, 32 H100), A21 with and without EP overlap (Qwen3-235B,
256 H100: the pair that identifies the overlap), A10 (DeepSeek-V3, 256 B200), A26 (Qwen3-235B, 256 GB200, BF16) --
fit two parameters (``fit_moe``): the grouped-GEMM width half-point (catalog/calibration.yaml
``moe_expert_width_half``) and the share of the all-to-all Megatron-Core's EP overlap hides
(``moe_all_to_all_overlap: {megatron-moe: ...}``). Every other row is a test row. Nothing is fitted per row.
A21 without overlap stays 28% slow at the fit: its published step leaves less time for the exposed exchange of
EP32 across four HGX nodes than the measured inter-node all-to-all bandwidths (moe.md section 2.2) take.
Each row's source and release is stated (``RELEASES``); the NeMo 25.09 rows ran token-drop and are summarised
apart from the dropless ones (moe.md section 3), still as test rows.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from planner.data import Catalog, Configuration, Layout, load_catalog
from planner.physics import evaluate
from planner.validation.cases import Case, with_case_server

MOE_FIT_ROWS = frozenset({"A19", "A21 no overlap", "A21 overlap", "A10", "A26"})
# GPU of a row -> (host server template, catalog GPU, fabric, port Gb/s, GPU family)
MOE_HOSTS = {
    "H100": ("dgx-h100", "h100-sxm", "ndr400", 400.0, "hopper"),
    "B200": ("hgx-b200", "b200", "ndr400", 400.0, "blackwell"),
    "B300": ("hgx-b300", "b300", "xdr800", 800.0, "blackwell"),
    "GB200": ("gb200-nvl72", "gb200", "ndr400", 400.0, "blackwell"),
    "GB300": ("gb300-nvl72", "gb300", "xdr800", 800.0, "blackwell"),
}
RACK_SCALE = frozenset({"GB200", "GB300"})
# The source and software release of each row (moe.md section 1): the same layout on the same hardware differs by
# release (Qwen3-235B on 256 H100 TP2 PP8 VP4 EP32 FP8: 178, 233, 253 TFLOP/s in NeMo 25.09, 25.11, 26.04.01), and
# moe.md section 3 says not to mix token-drop with dropless rows: NeMo 25.09's MoE rows are token-drop ("tokendrop"),
# the planner predicts dropless routing. Reported apart (``moe_release_summary``), never fitted per release.
TOKENDROP = "NeMo 25.09 (tokendrop)"
RELEASES = {
    **{r: "Megatron-LM moe_recipes @d48bd6b" for r in ("A10", "A11", "A12", "A14", "A15", "A16", "A17", "A18")},
    **{r: "Megatron-LM moe_recipes @d48bd6b" for r in ("A19", "A20")},
    **{r: "ModelZoo qwen3 @e865051" for r in ("A21 no overlap", "A21 overlap", "A23", "A24", "A26", "A27", "A29")},
    **{r: TOKENDROP for r in ("B2", "B3", "B4", "B5 GB200", "B5 B200", "B6 H100", "B6 GB200", "B6 B200")},
    **{r: "NeMo 25.11" for r in ("B9", "B10")},
    **{r: "NeMo 26.04.01" for r in ("B12", "B14", "B15 B200", "B15 B300", "B16 H100", "B16 B200")},
    **{r: "NeMo 26.04.01" for r in ("B17 H100", "B17 B200", "B17 GB200")},
    "B19": "NeMo 26.06",
    **{r: "NeMo 26.08" for r in ("B21 GB300", "B21 GB200", "B22 GB300", "B22 GB200", "B23 GB300", "B23 GB200")},
}
TOK = "tokens/s/GPU"


@dataclass(frozen=True)
class MoeRow:
    """One published MoE run of reference/moe.md section 1: its row id, workload, GPUs, layout, batch, precision,
    dispatcher, whether the all-to-all was overlapped (1F1B EP overlap), and the published figure."""

    row: str
    model: str
    gpu: str
    gpus: int
    tp: int
    pp: int
    vp: int | None
    ep: int
    micro_batch: int
    global_batch: int
    precision: str
    dispatcher: str
    ep_overlap: bool
    published: float
    unit: str = "TFLOP/s/GPU"  # or tokens/s/GPU


R = MoeRow
MOE_ROWS: tuple[MoeRow, ...] = (
    # Megatron-LM examples/moe_recipes/README.md @d48bd6be0a (A10-A20) and ModelZoo qwen3 readme @e865051 (A21-A29)
    R("A10", "deepseek-v3", "B200", 256, 1, 8, None, 32, 1, 2048, "fp8", "deepep", True, 776.7),
    R("A11", "deepseek-v3", "GB200", 256, 1, 4, None, 64, 1, 8192, "fp8", "hybridep", False, 1127.6),
    R("A12", "deepseek-v3", "GB300", 256, 1, 4, None, 64, 1, 8192, "fp8", "hybridep", False, 1357.7),
    R("A14", "qwen3-235b-a22b", "H100", 256, 2, 8, 4, 32, 1, 2048, "bf16", "hybridep", True, 214.3),
    R("A15", "qwen3-235b-a22b", "B200", 128, 2, 4, 12, 16, 3, 3072, "fp8", "deepep", True, 633.9),
    R("A16", "qwen3-235b-a22b", "B300", 128, 2, 1, None, 16, 3, 9216, "fp8", "hybridep", False, 922.6),
    R("A17", "qwen3-235b-a22b", "GB200", 128, 1, 1, None, 64, 1, 8192, "fp8", "hybridep", False, 1018.0),
    R("A18", "qwen3-235b-a22b", "GB300", 128, 1, 1, None, 64, 1, 8192, "fp8", "hybridep", False, 1323.1),
    R("A19", "qwen3-30b-a3b", "H100", 32, 1, 1, None, 8, 1, 256, "bf16", "hybridep", False, 234.1),
    R("A20", "qwen3-30b-a3b", "GB200", 16, 1, 1, None, 16, 4, 512, "bf16", "hybridep", False, 528.0),
    R("A21 no overlap", "qwen3-235b-a22b", "H100", 256, 2, 8, 4, 32, 1, 2048, "bf16", "deepep", False, 245.0),
    R("A21 overlap", "qwen3-235b-a22b", "H100", 256, 2, 8, 4, 32, 1, 2048, "bf16", "deepep", True, 276.0),
    R("A23", "qwen3-235b-a22b", "H100", 256, 2, 32, None, 8, 1, 2048, "bf16", "alltoall", False, 200.0),
    R("A24", "qwen3-235b-a22b", "H100", 256, 4, 8, 4, 8, 1, 2048, "bf16", "deepep", False, 167.0),
    R("A26", "qwen3-235b-a22b", "GB200", 256, 1, 8, None, 8, 1, 8192, "bf16", "hybridep", False, 750.0),
    R("A27", "qwen3-235b-a22b", "GB200", 256, 1, 4, 6, 64, 3, 3072, "fp8", "hybridep", True, 919.0),
    R("A29", "qwen3-235b-a22b", "GB300", 64, 1, 1, None, 64, 1, 8192, "fp8", "hybridep", True, 1055.0),
    # NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md @067f987df (B rows)
    R("B2", "deepseek-v3", "GB200", 256, 1, 4, 4, 64, 1, 2048, "fp8", "hybridep", False, 899.0),
    R("B3", "deepseek-v3", "B200", 256, 1, 16, None, 8, 1, 2048, "fp8", "deepep", False, 589.0),
    R("B9", "deepseek-v3", "B200", 256, 1, 16, None, 8, 1, 2048, "fp8", "deepep", False, 557.0),
    R("B12", "deepseek-v3", "B200", 256, 1, 8, 2, 32, 1, 4096, "fp8", "deepep", False, 864.0),
    R("B4", "qwen3-235b-a22b", "H100", 256, 2, 8, 4, 32, 1, 2048, "fp8", "deepep", False, 178.0),
    R("B10", "qwen3-235b-a22b", "H100", 256, 2, 8, 4, 32, 1, 2048, "fp8", "deepep", False, 233.0),
    R("B14", "qwen3-235b-a22b", "H100", 256, 2, 8, 4, 32, 1, 8192, "fp8", "deepep", False, 253.0),
    R("B5 GB200", "qwen3-235b-a22b", "GB200", 64, 2, 1, None, 64, 1, 1024, "fp8", "hybridep", False, 659.0),
    R("B5 B200", "qwen3-235b-a22b", "B200", 64, 1, 8, 2, 8, 1, 1024, "fp8", "deepep", False, 607.0),
    R("B15 B200", "qwen3-235b-a22b", "B200", 256, 1, 8, None, 8, 1, 8192, "fp8", "deepep", False, 560.0),
    R("B15 B300", "qwen3-235b-a22b", "B300", 256, 1, 8, None, 8, 2, 8192, "fp8", "deepep", False, 878.0),
    R("B21 GB300", "qwen3-235b-a22b", "GB300", 256, 1, 4, 12, 32, 2, 8192, "fp8", "hybridep", False, 1306.0),
    R("B21 GB200", "qwen3-235b-a22b", "GB200", 256, 1, 8, 3, 32, 1, 8192, "fp8", "hybridep", False, 1077.0),
    R("B6 H100", "qwen3-30b-a3b", "H100", 16, 1, 2, 24, 8, 2, 512, "fp8", "deepep", False, 241.0),
    R("B6 GB200", "qwen3-30b-a3b", "GB200", 8, 1, 1, None, 8, 4, 512, "fp8", "hybridep", False, 524.0),
    R("B6 B200", "qwen3-30b-a3b", "B200", 8, 1, 1, None, 8, 1, 512, "fp8", "deepep", False, 416.0),
    R("B16 H100", "qwen3-30b-a3b", "H100", 16, 1, 1, None, 16, 1, 1024, "fp8", "deepep", False, 206.0),
    R("B16 B200", "qwen3-30b-a3b", "B200", 8, 1, 1, None, 8, 4, 512, "fp8", "deepep", False, 619.0),
    R("B22 GB300", "qwen3-30b-a3b", "GB300", 8, 1, 1, None, 8, 8, 512, "fp8", "hybridep", False, 1029.0),
    R("B22 GB200", "qwen3-30b-a3b", "GB200", 8, 1, 1, None, 8, 4, 512, "fp8", "hybridep", False, 923.0),
    R("B19", "kimi-k2", "GB300", 256, 1, 4, 4, 64, 2, 4096, "fp8", "hybridep", False, 1099.0),
    R("B17 H100", "gpt-oss-120b", "H100", 64, 1, 4, None, 8, 1, 1280, "bf16", "hybridep", False, 5824.0, TOK),
    R("B17 B200", "gpt-oss-120b", "B200", 64, 1, 1, None, 8, 4, 1280, "bf16", "hybridep", False, 13568.0, TOK),
    R("B17 GB200", "gpt-oss-120b", "GB200", 64, 1, 1, None, 64, 4, 1280, "bf16", "hybridep", False, 16640.0, TOK),
    R("B23 GB300", "gpt-oss-120b", "GB300", 64, 1, 1, None, 16, 4, 1280, "fp8", "hybridep", False, 33024.0, TOK),
    R("B23 GB200", "gpt-oss-120b", "GB200", 64, 1, 1, None, 64, 4, 1280, "fp8", "hybridep", False, 28672.0, TOK),
)


def moe_row_catalog(cat: Catalog, row: MoeRow) -> tuple[Catalog, int]:
    """(the catalog with the row's host as server 'case', its node count): an 8-GPU NVLink domain on HGX, the
    run's NVLink domain on a rack (its GPUs up to 72, or 64 of a rack for larger runs); NICs one per GPU."""
    host_id, gpu, fabric, port_gbps, _ = MOE_HOSTS[row.gpu]
    per_node = (row.gpus if row.gpus <= 72 else 64) if row.gpu in RACK_SCALE else 8
    host = cat.server(host_id)
    return with_case_server(cat, host, gpu, per_node, fabric, per_node, port_gbps), row.gpus // per_node


def moe_case(cat: Catalog, row: MoeRow, split: str) -> Case:
    """The model's prediction of one published MoE run at its layout, forced balance, its dispatcher and
    overlap (framework megatron-moe with EP overlap, megatron without)."""
    case_cat, nodes = moe_row_catalog(cat, row)
    base = case_cat.workloads[row.model]
    assert base.moe is not None
    wl = base.model_copy(
        update={
            "framework": "megatron-moe" if row.ep_overlap else "megatron",
            "moe": base.moe.model_copy(update={"dispatcher": row.dispatcher, "force_load_balance": True}),
        }
    )
    case_cat = case_cat.replace(workloads={**case_cat.workloads, wl.id: wl})
    layout = Layout(
        tensor_parallel=row.tp,
        pipeline_parallel=row.pp,
        virtual_stages=row.vp,
        expert_parallel=row.ep,
        sequence_parallel=row.tp > 1,
        zero_stage=1,
        micro_batch=row.micro_batch,
    )
    config = Configuration(
        model=wl.id,
        server="case",
        nodes=nodes,
        fabric=MOE_HOSTS[row.gpu][2],
        global_batch=row.global_batch,
        precision=row.precision,
        layout=layout,
        failures=False,
    )
    est = evaluate(case_cat, config)
    tokens = est.throughput_samples_per_s * float(wl.sequence_length or 1) / est.gpus
    predicted = est.achieved_tflops_per_gpu if row.unit == "TFLOP/s/GPU" else tokens
    return Case(
        "throughput",
        f"MoE {row.row}: {row.model} on {row.gpus} {row.gpu} {layout.label(est.gpus // (row.tp * row.pp))} "
        f"{row.precision} ({row.unit})",
        split,
        row.published,
        predicted,
        row.unit,
        MOE_HOSTS[row.gpu][4],
        "llm",
        inputs=f"{row.row}",
        gpus=row.gpus,
    )


def moe_cases(cat: Catalog, rows: tuple[MoeRow, ...] = MOE_ROWS) -> list[Case]:
    """Every MoE row predicted with ``cat``: the fit rows (``MOE_FIT_ROWS``) split 'fit', the others 'test'."""
    return [moe_case(cat, r, "fit" if r.row in MOE_FIT_ROWS else "test") for r in rows]


def with_moe_calibration(cat: Catalog, width_half: float, overlap: float) -> Catalog:
    """The catalog with the two MoE calibration parameters set (``fit_moe``)."""
    overlaps = {**cat.calibration.get("moe_all_to_all_overlap", {}), "megatron-moe": overlap}
    return cat.replace(
        calibration={**cat.calibration, "moe_expert_width_half": width_half, "moe_all_to_all_overlap": overlaps}
    )


WIDTH_GRID = tuple(128.0 * i for i in range(33))  # 0 .. 4096
OVERLAP_GRID = tuple(i / 20 for i in range(21))  # 0 .. 1


def fit_moe(
    cat: Catalog, widths: tuple[float, ...] = WIDTH_GRID, overlaps: tuple[float, ...] = OVERLAP_GRID
) -> tuple[float, float]:
    """(grouped-GEMM width half-point, EP-overlap share) minimising the mean |log(predicted / published)| of the
    fit rows (``MOE_FIT_ROWS``) on a grid (128-wide steps, 0.05 steps)."""
    fit_rows = tuple(r for r in MOE_ROWS if r.row in MOE_FIT_ROWS)
    best, best_score = (widths[0], overlaps[0]), math.inf
    for w in widths:
        for o in overlaps:
            cases = moe_cases(with_moe_calibration(cat, w, o), fit_rows)
            score = float(np.mean([abs(math.log(c.predicted / c.published)) for c in cases]))
            if score < best_score:
                best, best_score = (w, o), score
    return best


def moe_table(cases: list[Case]) -> pd.DataFrame:
    """One row per case: name, split, published, predicted, error %."""
    return pd.DataFrame(
        [
            {
                "case": c.name,
                "split": c.split,
                "unit": c.unit,
                "published": c.published,
                "predicted": round(c.predicted, 1),
                "error_pct": round(100.0 * c.error, 1),
            }
            for c in cases
        ]
    )


def moe_summary(cases: list[Case]) -> pd.DataFrame:
    """Median and worst |error| %, and cases within 25%, per split and GPU family."""
    rows = []
    for (split, family), group in pd.DataFrame(
        [{"split": c.split, "family": c.gpu_family, "err": 100.0 * abs(c.error)} for c in cases]
    ).groupby(["split", "family"]):
        rows.append(
            {
                "split": split,
                "GPU family": family,
                "cases": len(group),
                "median_abs_error_pct": round(float(group["err"].median()), 1),
                "max_abs_error_pct": round(float(group["err"].max()), 1),
                "within_25pct": int((group["err"] <= 25).sum()),
            }
        )
    return pd.DataFrame(rows)


def moe_release_summary(cases: list[Case]) -> pd.DataFrame:
    """Median and worst |error| % of the test rows per source and release (``RELEASES``)."""
    frame = pd.DataFrame(
        [{"release": RELEASES[c.inputs], "err": 100.0 * abs(c.error)} for c in cases if c.split == "test"]
    )
    return (
        frame.groupby("release", sort=False)["err"]
        .agg(cases="size", median_abs_error_pct="median", max_abs_error_pct="max")
        .round(1)
        .reset_index()
    )


# Scale bins of the MoE section: GPUs in the run
MOE_SCALE_BINS = ((0, 16, "<= 16"), (17, 64, "32-64"), (65, 10**9, "128-256"))


def moe_scale(gpus: int) -> str:
    """The scale bin (``MOE_SCALE_BINS``) of a run of ``gpus`` GPUs."""
    return next(label for low, high, label in MOE_SCALE_BINS if low <= gpus <= high)


def moe_family_scale_summary(cases: list[Case]) -> pd.DataFrame:
    """Median and worst |error| % per split, GPU family and scale bin, with the GPUs of each group."""
    frame = pd.DataFrame(
        [
            {
                "split": c.split,
                "GPU family": c.gpu_family,
                "GPUs in run": moe_scale(c.gpus or 0),
                "gpu": c.name.split(" on ")[1].split(" ")[1],
                "err": 100.0 * abs(c.error),
            }
            for c in cases
        ]
    )
    order = {label: i for i, (_, _, label) in enumerate(MOE_SCALE_BINS)}
    rows = []
    for (split, family, scale), group in frame.groupby(["split", "GPU family", "GPUs in run"]):
        rows.append(
            {
                "split": split,
                "GPU family": family,
                "GPUs in run": scale,
                "GPUs": ", ".join(sorted(set(group["gpu"]))),
                "cases": len(group),
                "median |error| %": round(float(group["err"].median()), 1),
                "worst |error| %": round(float(group["err"].max()), 1),
                "within 25%": int((group["err"] <= 25).sum()),
                "_order": order[scale],
            }
        )
    out = pd.DataFrame(rows).sort_values(["split", "GPU family", "_order"], kind="stable")
    return out.drop(columns="_order").reset_index(drop=True)


def moe_section(cases: list[Case]) -> list[str]:
    """The Mixture-of-Experts section of docs/VALIDATION.md: the fit split, the summary by GPU family and scale
    (fit and test rows apart), by source and release, and every row."""
    test = [100.0 * abs(c.error) for c in cases if c.split == "test"]
    fit_rows = ", ".join(sorted(MOE_FIT_ROWS))
    table = moe_table(cases).drop(columns="split").assign(split=[c.split for c in cases])
    return [
        "## Mixture-of-Experts training (reference/moe.md section 1)",
        "",
        "Published Megatron-Core, ModelZoo and NeMo/Megatron-Bridge MoE runs at their stated layouts, precision, "
        "dispatcher and EP overlap, with forced load balance as every benchmark ran "
        "(`python -m planner.validation.moe`, planner/validation/moe.py). "
        f"Fit rows ({fit_rows}) set the two MoE parameters of catalog/calibration.yaml "
        "(`moe_expert_width_half`, `moe_all_to_all_overlap`); every other row is a test row. "
        f"Test rows: median |error| {np.median(test):.1f}%, worst {max(test):.1f}% ({len(test)} rows).",
        "",
        moe_family_scale_summary(cases).to_markdown(index=False, floatfmt=".1f"),
        "",
        "Test rows by source and software release (the same layout on the same GPUs differs by release: "
        "reference/moe.md section 3):",
        "",
        moe_release_summary(cases).to_markdown(index=False, floatfmt=".1f"),
        "",
        table.to_markdown(index=False, floatfmt=".1f"),
        "",
    ]


def main(argv: list[str] | None = None) -> None:
    """``python -m planner.validation.moe [--fit]``: print the MoE validation table and its summary (``--fit``:
    the two fitted parameters first)."""
    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--fit", action="store_true", help="fit the two MoE parameters on the fit rows and print them")
    args = ap.parse_args(argv)
    cat = load_catalog()
    if args.fit:
        width, overlap = fit_moe(cat)
        print(f"fitted on {sorted(MOE_FIT_ROWS)}: moe_expert_width_half {width:g}, megatron-moe overlap {overlap:g}")
    cases = moe_cases(cat)
    with pd.option_context("display.width", 200, "display.max_colwidth", 90, "display.max_rows", 200):
        print(moe_table(cases).to_string(index=False))
        print()
        print(moe_summary(cases).to_string(index=False))
        print()
        print(moe_release_summary(cases).to_string(index=False))
        test = [100.0 * abs(c.error) for c in cases if c.split == "test"]
        print(f"\ntest rows: median |error| {np.median(test):.1f}%, worst {max(test):.1f}% ({len(test)} rows)")
        dropless = [100.0 * abs(c.error) for c in cases if c.split == "test" and RELEASES[c.inputs] != TOKENDROP]
        print(
            f"dropless test rows (all but {TOKENDROP}): median |error| {np.median(dropless):.1f}%, "
            f"worst {max(dropless):.1f}% ({len(dropless)} rows)"
        )


if __name__ == "__main__":
    main()
