"""catalog/calibration.yaml: a key given empty (YAML null) is bad input, not an internal error."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from planner.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
KEYS = (
    "fp8_efficiency_ratio",
    "half_batch_scale",
    "half_batch_scale_families",
    "gemm_tokens_half",
    "gemm_width_half",
    "mfu",
    "overlap",
)


@pytest.mark.parametrize("key", KEYS)
def test_an_empty_calibration_key_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str
) -> None:
    """`fp8_efficiency_ratio:` with no value reads as null: bad input naming the key, exit 2. The keys are
    optional, so the schema alone would let the null through, to fail inside the model with a TypeError (exit 3)
    on every evaluate."""
    cat = tmp_path / "catalog"
    shutil.copytree(ROOT / "catalog", cat)
    path = cat / "calibration.yaml"
    path.write_text(path.read_text() + f"{key}:\n")  # the last occurrence of a YAML key wins
    argv = ["evaluate", "--model", "bert-large", "--server", "dgx-a100-80gb", "--nodes", "1", "--catalog", str(cat)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{path}: {key}: " in err and "is empty (null)" in err and "remove the key" in err, err
    assert "internal error" not in err and "Traceback" not in err
