"""Allowed-hardware filters that leave no server: the message names what the user gave and what would do."""

from __future__ import annotations

import pytest

from planner.cli.main import main


def test_a_gpu_no_server_carries_names_the_gpus_that_servers_do_carry(capsys: pytest.CaptureFixture[str]) -> None:
    """Was '--servers  carry a100-pcie-80gb, ..., which --gpus h100-pcie does not allow: ... or leave one of the two
    out' -- a flag the user never gave, with an empty value (review of this session)."""
    assert main(["solve", "--model", "resnet50", "--deadline-days", "5", "--gpus", "h100-pcie"]) == 2
    err = capsys.readouterr().err
    assert "--gpus h100-pcie: no server in the catalog carries it" in err, err
    assert "h100-sxm" in err and "--servers" not in err and "Traceback" not in err


def test_the_python_api_refuses_fp8_where_no_allowed_gpu_has_it() -> None:
    """The command line, the app and batch refused it; `planner.solve` and `planner.pareto` returned a plan silently
    computed in bf16 (review of this session)."""
    from planner import load_catalog
    from planner.errors import PlannerInputError
    from planner.plan import PlanRequest, pareto, solve

    req = PlanRequest(model="resnet50", deadline_days=5, gpus=["A100"], precision="fp8")
    with pytest.raises(PlannerInputError, match=r"precision fp8: none of the allowed GPUs \(a100"):
        solve(req, load_catalog())
    with pytest.raises(PlannerInputError, match="precision fp8"):
        pareto(req, catalog=load_catalog())
    assert solve(req.model_copy(update={"gpus": ["A100", "H100"]}), load_catalog()).plan is not None
