"""The start heuristics of the fleet MIP, one per module: a greedy plan (``greedy``), the MIP over the LP
relaxation's modes (``restricted``), a local search that lowers cluster peaks (``flatten``), a one-node squeeze of
the most expensive type (``squeeze``), every job packed onto one cluster (``pack``, with its repair search in
``packing`` and HiGHS's exact size question in ``cluster_fits``), run in turn by ``improve_start``. Each writes its
plan into the MIP's variables only when it is better, and records it in the ``StartState`` (``state``)."""

from __future__ import annotations

from planner.fleet.starts.cluster_fits import cluster_fits
from planner.fleet.starts.flatten import flatten_start
from planner.fleet.starts.greedy import greedy_plan, set_greedy_start
from planner.fleet.starts.improve import improve_start
from planner.fleet.starts.pack import PackOption, pack_options, pack_start
from planner.fleet.starts.packing import earliest_due_first, pack_cluster, pack_size_bound, smallest_packing
from planner.fleet.starts.restricted import restricted_start
from planner.fleet.starts.squeeze import squeeze_start
from planner.fleet.starts.state import (
    PackProof,
    StartPlan,
    StartState,
    current_plan,
    load_solution,
    plan_value,
    set_plan_start,
)

__all__ = [
    "PackOption",
    "PackProof",
    "StartPlan",
    "StartState",
    "cluster_fits",
    "current_plan",
    "earliest_due_first",
    "flatten_start",
    "greedy_plan",
    "improve_start",
    "load_solution",
    "pack_cluster",
    "pack_options",
    "pack_size_bound",
    "pack_start",
    "plan_value",
    "restricted_start",
    "set_greedy_start",
    "set_plan_start",
    "smallest_packing",
    "squeeze_start",
]
