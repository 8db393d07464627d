"""Defects met walking the product as an ML-infra / procurement engineer (the current-generation GPUs, large node
limits, bad input), each pinned by the check that found it. Messages in-process (fast)."""

from __future__ import annotations

import re

import pytest

from planner.cli import main
from planner.data import Catalog
from planner.errors import PlannerInputError
from planner.optimize import PlanRequest, solve

from .conftest import toy_catalog


def test_a_too_large_search_says_which_node_limit_would_do(
    shipped: Catalog, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was, for `planner solve ... --max-nodes 100000` over every GPU: 'an exact search over every node count
    1..101000 would evaluate 47,369,000 configurations (limit 40,000,000): lower --max-nodes, ...' -- a range
    that is not the one asked for, and no word of how far to lower it; the app said the same in flags it does not
    have. Now the message names the largest --max-nodes the search takes with the hardware allowed (exit 2)."""
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
    one more node is refused by the optimizer's own guard."""
    from planner import optimize
    from planner.views import search_size_problem

    monkeypatch.setattr(optimize, "MAX_CONFIGS", 1_000)
    cat = toy_catalog()  # 2 servers x 1 fabric x 2 caps = 4 options per node count
    req = PlanRequest(model="toy-model", sites=["clean"], power_caps=[0.5, 1.0], deadline_days=30, max_nodes=400)
    said = search_size_problem(cat, req)
    assert said is not None
    m = re.search(r"give --max-nodes ([\d,]+) or less", said)
    assert m is not None, said
    most = int(m.group(1).replace(",", ""))
    assert most == 247  # 4 x (247 + ceil(2.47)) = 1,000; 4 x (248 + 3) = 1,004
    ok = req.model_copy(update={"max_nodes": most})
    assert search_size_problem(cat, ok) is None and solve(ok, cat).plan is not None
    with pytest.raises(PlannerInputError):
        solve(req.model_copy(update={"max_nodes": most + 1}), cat)
