"""planner: capacity planning for distributed ML training clusters.

In a notebook::

    import planner
    cat = planner.load_catalog()
    est = planner.evaluate(cat, planner.Configuration(model="bert-large", server="dgx-h100", nodes=2))
    df = planner.evaluate_space(cat, "llama3-70b", servers=["dgx-h100"], nodes=range(1, 65))
    res = planner.solve(planner.PlanRequest(model="llama3-8b", tokens=1e12, deadline_days=30))
    front = planner.pareto(planner.PlanRequest(model="llama3-8b", tokens=1e12, deadline_days=30), x="cost", y="energy")
    from planner.fleet import fleet  # (planner.fleet is the package)
    fp = fleet(planner.load_fleet_request("examples/fleet.yaml"))

Bad input raises ``PlannerInputError`` (a ``ValueError``) saying what is wrong and how to fix it; constructing a
``PlanRequest`` or ``Configuration`` with a wrong field raises pydantic's ``ValidationError`` (also a
``ValueError``). The optimizer's names (``solve``, ``pareto``, ``PlanRequest``, ``load_fleet_request``...) are imported
on first use, so ``import planner`` stays light (no Pyomo until a plan is solved).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from planner.data import Catalog, Configuration, Estimate, Layout, load_catalog
from planner.errors import PlannerInputError
from planner.physics import Work, evaluate, evaluate_space
from planner.version import __version__

if TYPE_CHECKING:
    from planner.fleet import FleetPlan, FleetRequest, load_fleet_request
    from planner.plan import OwnedServers, Plan, PlanRequest, PlanResult, pareto, solve

_LAZY = {
    "OwnedServers": "planner.plan",
    "Plan": "planner.plan",
    "PlanRequest": "planner.plan",
    "PlanResult": "planner.plan",
    "pareto": "planner.plan",
    "solve": "planner.plan",
    "FleetPlan": "planner.fleet",
    "FleetRequest": "planner.fleet",
    "load_fleet_request": "planner.fleet",
}


def __getattr__(name: str) -> Any:
    """The optimizer's public names and the batch subpackage, imported on first use (PEP 562)."""
    if name == "batch":
        value = importlib.import_module("planner.batch")
        globals()[name] = value
        return value
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'planner' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | {"batch"})


__all__ = [
    "Catalog",
    "Configuration",
    "Estimate",
    "FleetPlan",
    "FleetRequest",
    "Layout",
    "OwnedServers",
    "Plan",
    "PlanRequest",
    "PlanResult",
    "PlannerInputError",
    "Work",
    "__version__",
    "batch",
    "evaluate",
    "evaluate_space",
    "load_catalog",
    "load_fleet_request",
    "pareto",
    "solve",
]
