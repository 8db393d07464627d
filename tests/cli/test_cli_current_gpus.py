"""The command line on the current-generation GPUs, large node limits and bad input: a search too large says which
node limit would do, a malformed calibration file is bad input key by key, figures are written out, and filters that
exclude each other say which one does. Messages in-process (fast)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from planner.cli.main import main
from planner.data import Catalog
from planner.errors import PlannerInputError
from planner.plan import PlanRequest, solve
from tests.conftest import toy_catalog


def test_a_too_large_search_says_which_node_limit_would_do(
    shipped: Catalog, capsys: pytest.CaptureFixture[str]
) -> None:
    """`planner solve ... --max-nodes 100000` over every GPU: exit 2 naming the --max-nodes asked for and the
    largest the exact search takes with the hardware allowed ('give --max-nodes N or less, or restrict --gpus,
    ...'), N between 50,000 and 100,000."""
    argv = ["solve", "--model", "llama3-8b", "--tokens", "1e12", "--deadline-days", "30", "--max-nodes", "100000"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "--max-nodes 100,000 makes too large a search" in err
    m = re.search(r"give --max-nodes ([\d,]+) or less, or restrict --gpus, --servers, --fabrics or --power-caps", err)
    assert m is not None, err
    assert 50_000 < int(m.group(1).replace(",", "")) < 100_000


def test_the_node_limit_the_message_names_is_the_largest_that_solves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a toy catalog with the search limit lowered: the limit named solves (a real HiGHS solve, no refusal),
    one more node is refused before the search (and by the optimizer's own guard behind it)."""
    from planner.checks import search, search_size_problem
    from planner.plan import candidates

    monkeypatch.setattr(search, "MAX_CONFIGS", 1_000)
    monkeypatch.setattr(candidates, "MAX_CONFIGS", 1_000)
    cat = toy_catalog()  # 2 servers x 1 fabric x 2 caps = 4 options per node count
    req = PlanRequest(model="toy-model", sites=["clean"], power_caps=[0.5, 1.0], deadline_days=30, max_nodes=400)
    said = search_size_problem(cat, req)
    assert said is not None
    m = re.search(r"give --max-nodes ([\d,]+) or less", said.message)
    assert m is not None, said.message
    most = int(m.group(1).replace(",", ""))
    assert most == 247  # 4 x (247 + ceil(2.47)) = 1,000; 4 x (248 + 3) = 1,004
    ok = req.model_copy(update={"max_nodes": most})
    assert search_size_problem(cat, ok) is None and solve(ok, cat).plan is not None
    with pytest.raises(PlannerInputError):
        solve(req.model_copy(update={"max_nodes": most + 1}), cat)


ROOT = Path(__file__).resolve().parents[2]
SHIPPED_FAMILIES = "half_batch_scale_families:\n- cnn\n- encoder\n"


@pytest.mark.parametrize(
    ("families", "said"),
    [
        # a string is not a list of families (no substring match)
        ("half_batch_scale_families: cnn\n", "half_batch_scale_families: Input should be a valid list (got 'cnn')"),
        # a misspelt family is refused, naming the valid ones
        ("half_batch_scale_families: [cnnn, encoder]\n", "half_batch_scale_families.0: Input should be 'cnn', "),
        # a number is bad input (exit 2), not an internal error
        ("half_batch_scale_families: 3\n", "half_batch_scale_families: Input should be a valid list (got 3)"),
    ],
)
def test_a_wrong_half_batch_scale_families_is_bad_input_naming_the_valid_families(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], families: str, said: str
) -> None:
    cat = tmp_path / "catalog"
    shutil.copytree(ROOT / "catalog", cat)
    text = (cat / "calibration.yaml").read_text()
    assert SHIPPED_FAMILIES in text
    (cat / "calibration.yaml").write_text(text.replace(SHIPPED_FAMILIES, families))
    argv = ["evaluate", "--model", "bert-large", "--server", "dgx-a100-80gb", "--nodes", "1", "--catalog", str(cat)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{cat / 'calibration.yaml'}: {said}" in err and "cnn, encoder, llm, recsys" in err, err
    assert "internal error" not in err and "Traceback" not in err


def test_the_calibration_file_is_checked_key_by_key_and_other_keys_are_kept(tmp_path: Path) -> None:
    """Each key of catalog/calibration.yaml is checked against its schema: `mfu: 3`, `overlap: x`, a negative
    fp8_efficiency_ratio, a misspelt workload family, a ratio above 1 and malformed YAML are each bad input naming
    the file and key; a file that is not a mapping is refused; a key the schema does not know is kept."""
    from planner.data import read_calibration

    shipped = (ROOT / "catalog" / "calibration.yaml").read_text()
    path = tmp_path / "calibration.yaml"
    cases = {
        "mfu: 3\n": "mfu: Input should be a valid dictionary (got 3)",
        "overlap: x\n": "overlap: Input should be a valid dictionary (got 'x')",
        "fp8_efficiency_ratio: -1\n": "fp8_efficiency_ratio: Input should be greater than 0 (got -1)",
        "default_mfu: {recsis: 0.2}\n": "default_mfu.recsis: Input should be 'cnn', 'encoder', 'llm' or 'recsys'",
        "tp_overlap: {megatron: 1.5}\n": "tp_overlap.megatron: Input should be less than or equal to 1 (got 1.5)",
        "a: [unclosed\n": "not valid YAML",
    }
    for extra, said in cases.items():
        path.write_text(shipped + extra)
        with pytest.raises(PlannerInputError) as exc:
            read_calibration(path)
        assert f"{path}: {said}" in str(exc.value), str(exc.value)
    path.write_text("- 1\n")
    with pytest.raises(PlannerInputError, match="the calibration is a YAML mapping of keys"):
        read_calibration(path)
    path.write_text(shipped + "a_new_fit_parameter: 0.5\n")  # a key the schema does not know is kept
    assert read_calibration(path)["a_new_fit_parameter"] == 0.5
    assert read_calibration(ROOT / "catalog" / "calibration.yaml") == yaml.safe_load(shipped)


def test_evaluate_and_solve_write_their_figures_out(capsys: pytest.CaptureFixture[str]) -> None:
    """`evaluate` writes efficiency and the step breakdown in 4 significant figures with separators ('compute
    36.6 s'), '1 switch' in the singular; solve's solver line writes objective and bound in whole units."""
    import json

    from planner.formatting import sig4

    argv = ["evaluate", "--model", "llama3-70b", "--server", "hgx-b300", "--nodes", "8", "--precision", "fp8"]
    assert main([*argv, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"efficiency        {sig4(d['achieved_tflops_per_gpu'])} TFLOP/s per GPU" in out
    compute_s = d["step_time_breakdown_s"]["compute"]
    assert f"step breakdown    compute {sig4(compute_s)} s" in out
    switches = d["switches"]
    assert f"{switches:,} switch{'' if switches == 1 else 'es'})" in out and "1 switches" not in out
    argv = ["solve", "--model", "llama3-405b", "--tokens", "15e12", "--deadline-days", "70", "--gpus", "B300"]
    assert main([*argv, "--power-kw", "20000", "--alternatives", "0", "--json"]) == 0
    objective = json.loads(capsys.readouterr().out)["solver"]["objective"]
    assert objective >= 1e6  # a figure an exponent form would show as 2.02093e+07
    assert main([*argv, "--power-kw", "20000", "--alternatives", "0"]) == 0
    out = capsys.readouterr().out
    assert f"objective {objective:,.0f}, bound " in out and re.search(r"objective [\d,]+, bound [\d,]+, gap", out), out


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (
            ["--gpus", "MI325X", "--fabrics", "xdr800"],
            "--fabrics xdr800: none of the allowed servers (mi325x-8) can be built with it; they take ndr400, "
            "roce400, hdr200, roce100, eth25: allow one of those, or servers that take xdr800 (hgx-b300, gb300-nvl72)",
        ),
        (
            ["--gpus", "B300", "--servers", "dgx-h100"],
            "--servers dgx-h100 carries h100-sxm, which --gpus B300 does not allow",
        ),
    ],
)
def test_filters_that_exclude_each_other_say_what_would_do(
    capsys: pytest.CaptureFixture[str], flags: list[str], said: str
) -> None:
    """Filters that exclude each other: exit 2 saying which filter excludes which and what would do (the fabrics the
    MI325X servers take; XDR is on the B300 and GB300 servers only), never 'no server in the catalog matches'."""
    assert main(["solve", "--model", "llama3-8b", "--deadline-days", "30", *flags]) == 2
    err = capsys.readouterr().err
    assert said in err and "no server in the catalog matches" not in err, err
