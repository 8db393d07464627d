"""The shipped catalog and workload library: they validate, hold the GPU types, workloads, fabrics and sites the
planner covers (each entry with its source), every workload evaluates and the current-generation servers plan end
to end; bad files (YAML or CSV) fail naming the file and the field, and a catalog written as CSV reads back the
same."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.data import Catalog, catalog_dir, load_catalog, models_dir
from planner.errors import PlannerInputError

# the GPU types and workloads the shipped catalog always covers (its stated scope)
REQUIRED_GPUS = {
    "a100-sxm-40gb",
    "a100-sxm-80gb",
    "a100-pcie-80gb",
    "h100-sxm",
    "h100-pcie",
    "h200",
    "b200",
    "l40s",
    "rtx-a6000",
    "rtx-4000-ada",
    "mi300x",
}
REQUIRED_MODELS = {
    "resnet50",
    "inception-v3",
    "bert-large",
    "gpt3-175b",
    "llama2-70b-lora",
    "llama3-8b",
    "llama3-70b",
    "llama3-405b",
    "dlrm-dcnv2",
}


def test_shipped_catalog_covers_the_required_gpus_workloads_fabrics_and_sites(shipped: Catalog) -> None:
    assert set(shipped.gpus) >= REQUIRED_GPUS
    assert set(shipped.workloads) >= REQUIRED_MODELS
    assert {"eth25", "roce100", "hdr200", "ndr400"} <= set(shipped.fabrics)
    assert len(shipped.sites) >= 3
    assert "power-optimized-a100" in shipped.servers
    assert sum(s.gpus_per_node == 0 for s in shipped.servers.values()) == 16  # the CPU rental list
    for table in (shipped.gpus, shipped.servers, shipped.fabrics, shipped.sites, shipped.power_curves):
        for item in table.values():
            assert item.source.strip(), f"{item.id} has no source"


def test_every_gpu_server_can_be_evaluated(shipped: Catalog) -> None:
    from planner.physics import evaluate_space

    for wl in shipped.workloads:
        df = evaluate_space(shipped, wl, nodes=[1, 8, 64], caps=[1.0])
        assert len(df) > 0 and df["time_to_train_h"].gt(0).all()


def test_loading_is_cached() -> None:
    assert load_catalog() is load_catalog()


def test_unknown_ids_name_the_valid_ones(shipped: Catalog) -> None:
    with pytest.raises(PlannerInputError, match=r"unknown server 'dgx-a10'.*Did you mean 'dgx-a100-80gb'.*Valid"):
        shipped.server("dgx-a10")
    with pytest.raises(PlannerInputError, match=r"Valid models: .*bert-large"):
        shipped.workload("nope")


def _copy_tree(tmp_path: Path) -> tuple[Path, Path]:
    import shutil

    c, m = tmp_path / "catalog", tmp_path / "models"
    shutil.copytree(catalog_dir(), c)
    shutil.copytree(models_dir(), m)
    return c, m


def test_negative_quantity_is_rejected_with_the_field_path(tmp_path: Path) -> None:
    c, m = _copy_tree(tmp_path)
    text = (c / "gpus.yaml").read_text().replace("bf16_tflops: 312\n", "bf16_tflops: -312\n", 1)
    (c / "gpus.yaml").write_text(text)
    with pytest.raises(
        PlannerInputError, match=r"gpus.yaml entry 1 \(id=a100-sxm-40gb\): bf16_tflops: Input should be greater than 0"
    ):
        load_catalog(c, m)


def test_unknown_field_is_rejected(tmp_path: Path) -> None:
    c, m = _copy_tree(tmp_path)
    (m / "resnet50.yaml").write_text((m / "resnet50.yaml").read_text() + "paramz: 3\n")
    said = r"resnet50.yaml \(id=resnet50\): paramz: Extra inputs are not permitted"
    with pytest.raises(PlannerInputError, match=said):
        load_catalog(c, m)


def test_malformed_yaml_names_the_file(tmp_path: Path) -> None:
    c, m = _copy_tree(tmp_path)
    (c / "sites.yaml").write_text("- id: x\n  pue: [1.2\n")
    with pytest.raises(PlannerInputError, match=r"sites.yaml: not valid YAML"):
        load_catalog(c, m)


def test_dangling_reference_is_reported_with_the_nearest_id(tmp_path: Path) -> None:
    c, m = _copy_tree(tmp_path)
    (c / "servers.yaml").write_text((c / "servers.yaml").read_text().replace("gpu: h100-sxm", "gpu: h100-sxmm"))
    with pytest.raises(PlannerInputError, match="server 'dgx-h100': unknown gpu 'h100-sxmm'") as err:
        load_catalog(c, m)
    assert "(did you mean 'h100-sxm'?); valid: " in str(err.value) and "b200" in str(err.value)


def test_a_dangling_reference_reads_as_one_line_on_the_command_line(tmp_path: Path) -> None:
    """The CLI joins a message's lines with '; ', and a line that ends in a colon with a space."""
    from planner.cli.common import one_line

    said = one_line("catalog references do not resolve:\nserver 'a': unknown gpu 'x'\nserver 'b': unknown gpu 'y'")
    assert said == "catalog references do not resolve: server 'a': unknown gpu 'x'; server 'b': unknown gpu 'y'"


def test_csv_catalog_file_loads(tmp_path: Path) -> None:
    c, m = _copy_tree(tmp_path)
    (c / "sites.yaml").unlink()
    (c / "sites.csv").write_text(
        "id,name,pue,electricity_usd_per_kwh,carbon_kg_per_kwh,power_envelope_kw,source\n"
        "us-colo,Colo,1.4,0.1,0.37,2000,test\nbad,Bad,0.5,0.1,0.3,100,test\n"
    )
    with pytest.raises(
        PlannerInputError, match=r"sites.csv entry 2 \(id=bad\): pue: Input should be greater than or equal to 1"
    ):
        load_catalog(c, m)


# ------------------------------------------------------------------ current-generation accelerators (late 2026)
# GPU id -> (server id, family, dense BF16 / FP8 TFLOP/s, memory GB, TDP W, the measured matmul efficiency that
# stands in): the figures gpus.yaml states for the accelerators of the MLPerf v5.0/v5.1 systems
# (reference/mlperf_training_at_scale.csv) that reference/hardware.md does not list.
CURRENT_GEN = {
    "b300": ("hgx-b300", "blackwell", 2250, 4500, 270, 1100, "b200"),
    "gb300": ("gb300-nvl72", "blackwell", 2500, 5000, 279, 1400, "b200"),
    "mi325x": ("mi325x-8", "cdna3", 1307, 2615, 256, 1000, "mi300x"),
    "mi350x": ("mi350x-8", "cdna4", 2307, 4614, 288, 1000, "mi300x"),
    "mi355x": ("mi355x-8", "cdna4", 2517, 5033, 288, 1400, "mi300x"),
}


@pytest.mark.parametrize("gpu_id", sorted(CURRENT_GEN))
def test_current_generation_gpus_load_with_their_sources(shipped: Catalog, gpu_id: str) -> None:
    """Each entry carries its figures with a source that says they are recalled datasheet figures to verify (not in
    reference/), which measured matmul efficiency stands in, and estimate prices; its server carries it."""
    server_id, family, bf16, fp8, mem_gb, tdp_w, stand_in = CURRENT_GEN[gpu_id]
    g = shipped.gpu(gpu_id)
    assert (g.family, g.bf16_tflops, g.fp8_tflops, g.memory_gb, g.tdp_w) == (family, bf16, fp8, mem_gb, tdp_w)
    assert g.matmul_efficiency == shipped.gpu(stand_in).matmul_efficiency
    assert "as recalled, not in reference/ -- verify" in g.source and "stands in" in g.source
    assert g.price_source.startswith("estimate")
    assert g.min_power_limit_w == pytest.approx(0.4 * g.tdp_w)  # 40% of TDP, as B200 / GB200 / MI300X
    s = shipped.server(server_id)
    assert s.gpu == gpu_id and s.source.strip() and s.price_source.startswith("estimate")
    assert s.gpus_per_node == (72 if gpu_id == "gb300" else 8)
    if s.rent_usd_per_month is not None and g.rent_usd_per_gpu_hour is not None:  # 730 h x GPUs x per-GPU rent
        assert s.rent_usd_per_month == pytest.approx(730 * s.gpus_per_node * g.rent_usd_per_gpu_hour)


def test_xdr800_fabric_and_the_servers_built_with_it(shipped: Catalog) -> None:
    """XDR InfiniBand (ConnectX-8, Quantum-X800), the '800 Gb/s' NICs of the B300 / GB300 MLPerf systems: NDR's
    latency, efficiency and in-network reduction stand in. B300 and GB300 servers are built with it by default
    (their first fabric); no server lists a fabric faster than its NIC ports."""
    xdr, ndr = shipped.fabric("xdr800"), shipped.fabric("ndr400")
    assert xdr.kind == "infiniband" and xdr.port_bandwidth_gbps == 800 and xdr.in_network_reduction
    assert (xdr.latency_us, xdr.achieved_efficiency) == (ndr.latency_us, ndr.achieved_efficiency)
    assert "ConnectX-8" in xdr.source and "stand in" in xdr.source and "prices estimate" in xdr.source
    for sid in ("hgx-b300", "gb300-nvl72"):
        assert shipped.server(sid).fabrics[0] == "xdr800"
    for s in shipped.servers.values():
        for f in s.fabrics:
            assert shipped.fabric(f).port_bandwidth_gbps <= s.max_nic_port_gbps, (s.id, f)


def test_gpu_patterns_separate_b300_from_gb300(shipped: Catalog) -> None:
    """--gpus takes an id, a family or the start of an id: 'b300' is not 'gb300' (a prefix, not a substring)."""
    from planner.checks import allowed_servers, match_gpus
    from planner.plan import PlanRequest

    assert match_gpus(shipped, ["b300"]) == {"b300"}
    assert match_gpus(shipped, ["GB300"]) == {"gb300"}
    assert match_gpus(shipped, ["b3"]) == {"b300"}
    assert match_gpus(shipped, ["cdna4"]) == {"mi350x", "mi355x"}
    assert match_gpus(shipped, ["cdna3"]) == {"mi300x", "mi325x"}
    assert match_gpus(shipped, ["MI35"]) == {"mi350x", "mi355x"}
    req = PlanRequest(model="llama3-8b", tokens=1e12, deadline_days=30, gpus=["b300"])
    assert allowed_servers(shipped, req) == ["hgx-b300"]
    assert allowed_servers(shipped, req.model_copy(update={"gpus": ["gb300"]})) == ["gb300-nvl72"]


def test_hgx_b300_node_uses_its_stated_peak_and_memory(shipped: Catalog) -> None:
    """Llama 3 8B on one 8-GPU node, DP8 without sharding or recomputation, micro-batch 1 (hand-derived from
    planner/physics/memory.py's formulas): Megatron keeps 2 B weights + 4 B fp32 gradients + 12 B Adam state per
    parameter
    = 18 x 8.03e9 = 144.54 GB; activations with FlashAttention and TP1 are 34 s b h per layer = 34 x 8192 x 4096
    x 32 layers = 36.51 GB; plus the 2 GB workspace: 183.05 GB. It fits a B300 (0.95 x 270 = 256.5 GB usable) and
    not a B200 (0.95 x 180 = 171 GB). The B300's dense peak is B200's (2,250 BF16, 4,500 FP8 TFLOP/s) and so are
    its HBM bandwidth, NVLink and matmul efficiency, so the step takes exactly as long on both."""
    from planner.data import Configuration, Layout
    from planner.physics import evaluate

    layout = Layout(zero_stage=0, recompute="none")
    b300, b200 = (
        evaluate(shipped, Configuration(model="llama3-8b", server=s, nodes=1, fabric="ndr400", layout=layout))
        for s in ("hgx-b300", "hgx-b200")
    )
    hand_gb = 18 * 8.03e9 / 1e9 + 34 * 8192 * 4096 * 32 / 1e9 + 2.0
    assert b300.memory_per_gpu_gb == pytest.approx(hand_gb, rel=1e-9) == b200.memory_per_gpu_gb
    assert (b300.gpu_memory_gb, b300.fits_memory) == (270, True)
    assert (b200.gpu_memory_gb, b200.fits_memory) == (180, False)
    assert b300.achieved_tflops_per_gpu / b300.mfu == pytest.approx(2250)
    assert b300.step_time_s == pytest.approx(b200.step_time_s, rel=1e-12)
    fp8 = evaluate(shipped, Configuration(model="llama3-8b", server="hgx-b300", nodes=1, precision="fp8"))
    assert fp8.precision == "fp8" and fp8.achieved_tflops_per_gpu / fp8.mfu == pytest.approx(4500)


def test_a_family_without_a_fit_borrows_the_reference_by_matmul_efficiency(shipped: Catalog) -> None:
    """A (GPU family, workload family) pair without an MFU fit -- e.g. LLMs on the L40S (Ada) or the A100 PCIe,
    which have MLPerf results for CNNs and BERT only -- gets calibration.yaml's rule: the first fallback reference
    family's fitted value scaled by matmul efficiency (gpu / reference); a fitted pair gets its own value."""
    from planner.physics import mfu_max

    cal = shipped.calibration
    llm = shipped.workload("llama3-70b")
    borrowed = []
    for g in shipped.gpus.values():
        own = cal["mfu"].get(g.family, {}).get("llm")
        ref = next(r for r in cal["fallback_references"] if "llm" in cal["mfu"].get(r["family"], {}))
        expected = (
            own
            if own is not None
            else cal["mfu"][ref["family"]]["llm"] * g.matmul_efficiency / ref["matmul_efficiency"]
        )
        assert mfu_max(cal, g, llm, "bf16") == pytest.approx(expected), g.id
        borrowed += [g.id] if own is None else []
    assert "l40s" in borrowed
    # the L40S's stand-in matmul efficiency (0.80) equals the Hopper reference's: it borrows Hopper's value as is
    assert mfu_max(cal, shipped.gpu("l40s"), llm, "bf16") == pytest.approx(cal["mfu"]["hopper"]["llm"])


def test_current_generation_servers_plan_end_to_end(shipped: Catalog) -> None:
    """A real solve restricted to a new GPU (by id: 'b300' is not 'gb300') plans on exactly that GPU."""
    from planner.plan import PlanRequest, solve

    for pattern, gpu in (("b300", "b300"), ("gb300", "gb300"), ("mi355x", "mi355x")):
        req = PlanRequest(
            model="llama3-8b", tokens=1e12, deadline_days=30, objective="cost", gpus=[pattern], alternatives=0
        )
        res = solve(req, shipped)
        assert res.plan is not None and res.plan.gpu == gpu


def test_a_catalog_written_as_csv_reads_back_the_same(tmp_path: Path) -> None:
    """Lists as `a;b` cells (a server's fabrics) read back as lists, and a text field holding a semicolon (a
    source such as 'datasheet; measured ...') stays text -- cut into a list, it would be refused."""
    import csv

    import yaml

    from planner.data import load_catalog

    c, m = _copy_tree(tmp_path)
    for stem in ("gpus", "servers"):
        records = yaml.safe_load((c / f"{stem}.yaml").read_text())
        assert any(";" in str(v) for r in records for v in r.values() if isinstance(v, str)), stem
        fields = list(dict.fromkeys(k for r in records for k in r))
        with (c / f"{stem}.csv").open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(fields)
            for r in records:
                w.writerow(
                    ["" if r.get(k) is None else ";".join(r[k]) if isinstance(r[k], list) else r[k] for k in fields]
                )
        (c / f"{stem}.yaml").unlink()
    shipped, from_csv = load_catalog(), load_catalog(c, m)
    assert from_csv.gpus == shipped.gpus
    assert from_csv.servers == shipped.servers
