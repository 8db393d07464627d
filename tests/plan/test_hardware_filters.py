"""Allowed-hardware filters that leave no server: the message names what the user gave and what would do."""

from __future__ import annotations

import pytest

from planner.cli.main import main


def test_a_gpu_no_server_carries_names_the_gpus_that_servers_do_carry(capsys: pytest.CaptureFixture[str]) -> None:
    """`--gpus h100-pcie` (no server carries it) is refused naming that flag and the GPUs servers do carry
    (h100-sxm among them) -- never a '--servers' flag the user did not give, with an empty value."""
    assert main(["solve", "--model", "resnet50", "--deadline-days", "5", "--gpus", "h100-pcie"]) == 2
    err = capsys.readouterr().err
    assert "--gpus h100-pcie: no server in the catalog carries it" in err, err
    assert "h100-sxm" in err and "--servers" not in err and "Traceback" not in err


def test_the_python_api_refuses_fp8_where_no_allowed_gpu_has_it() -> None:
    """`planner.solve` and `planner.pareto` refuse fp8 where no allowed GPU has it, as the command line, the app
    and batch do -- a plan computed in bf16 for an fp8 request would answer another question. With one allowed GPU
    that has fp8, there is a plan."""
    from planner import load_catalog
    from planner.errors import PlannerInputError
    from planner.plan import PlanRequest, pareto, solve

    req = PlanRequest(model="resnet50", deadline_days=5, gpus=["A100"], precision="fp8")
    with pytest.raises(PlannerInputError, match=r"precision fp8: none of the allowed GPUs \(a100"):
        solve(req, load_catalog())
    with pytest.raises(PlannerInputError, match="precision fp8"):
        pareto(req, catalog=load_catalog())
    assert solve(req.model_copy(update={"gpus": ["A100", "H100"]}), load_catalog()).plan is not None
