"""The shipped catalog and workload library validate; bad files fail with the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.data import Catalog, catalog_dir, load_catalog, models_dir
from planner.errors import PlannerInputError

ISSUE_GPUS = {
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
ISSUE_MODELS = {
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


def test_shipped_catalog_has_what_the_issue_names(shipped: Catalog) -> None:
    assert set(shipped.gpus) >= ISSUE_GPUS
    assert set(shipped.workloads) >= ISSUE_MODELS
    assert {"eth25", "roce100", "hdr200", "ndr400"} <= set(shipped.fabrics)
    assert len(shipped.sites) >= 3
    assert "power-optimized-a100" in shipped.servers
    assert sum(s.gpus_per_node == 0 for s in shipped.servers.values()) == 16  # the CPU rental list
    for table in (shipped.gpus, shipped.servers, shipped.fabrics, shipped.sites, shipped.power_curves):
        for item in table.values():
            assert item.source.strip(), f"{item.id} has no source"


def test_every_gpu_server_can_be_evaluated(shipped: Catalog) -> None:
    from planner.model import evaluate_space

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
        PlannerInputError, match=r"gpus.yaml\[0\] \(id=a100-sxm-40gb\): bf16_tflops: Input should be greater than 0"
    ):
        load_catalog(c, m)


def test_unknown_field_is_rejected(tmp_path: Path) -> None:
    c, m = _copy_tree(tmp_path)
    (m / "resnet50.yaml").write_text((m / "resnet50.yaml").read_text() + "paramz: 3\n")
    with pytest.raises(PlannerInputError, match=r"resnet50.yaml\[0\].*paramz: Extra inputs are not permitted"):
        load_catalog(c, m)


def test_malformed_yaml_names_the_file(tmp_path: Path) -> None:
    c, m = _copy_tree(tmp_path)
    (c / "sites.yaml").write_text("- id: x\n  pue: [1.2\n")
    with pytest.raises(PlannerInputError, match=r"sites.yaml: not valid YAML"):
        load_catalog(c, m)


def test_dangling_reference_is_reported(tmp_path: Path) -> None:
    c, m = _copy_tree(tmp_path)
    (c / "servers.yaml").write_text((c / "servers.yaml").read_text().replace("gpu: h100-sxm", "gpu: h100-sxmm"))
    with pytest.raises(PlannerInputError, match="server 'dgx-h100': unknown gpu 'h100-sxmm'"):
        load_catalog(c, m)


def test_csv_catalog_file_loads(tmp_path: Path) -> None:
    c, m = _copy_tree(tmp_path)
    (c / "sites.yaml").unlink()
    (c / "sites.csv").write_text(
        "id,name,pue,electricity_usd_per_kwh,carbon_kg_per_kwh,power_envelope_kw,source\n"
        "us-colo,Colo,1.4,0.1,0.37,2000,test\nbad,Bad,0.5,0.1,0.3,100,test\n"
    )
    with pytest.raises(
        PlannerInputError, match=r"sites.csv\[1\] \(id=bad\): pue: Input should be greater than or equal to 1"
    ):
        load_catalog(c, m)
