"""Defects a new user met on the app's plan page (views used by app.py), each pinned by the check that found it."""

from __future__ import annotations

from planner.data import Catalog
from planner.optimize import PlanRequest
from planner.views import scaling_frame


def test_the_scaling_chart_shows_only_the_allowed_gpus_servers_and_fabrics(shipped: Catalog) -> None:
    """Was: with B200 and H100 allowed, the scaling chart plotted all nine GPU types of the catalog (A100, GB200,
    MI300X, L40S, ...) beside the plan, as if they were options."""
    req = PlanRequest(model="llama3-8b", deadline_days=30, servers=["hgx-b200", "dgx-h100"], max_nodes=16)
    frame = scaling_frame(shipped, req)
    assert set(frame["gpu"]) == {"b200", "h100-sxm"} and set(frame["server"]) == {"hgx-b200", "dgx-h100"}
    # a GPU pattern and a fabric restriction follow the request's rules too (B200 does not allow gb200)
    req = PlanRequest(model="llama3-8b", deadline_days=30, gpus=["B200"], fabrics=["roce400"], max_nodes=16)
    assert set(scaling_frame(shipped, req)["gpu"]) == {"b200"}
