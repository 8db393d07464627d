"""The size of the exact search: every node count 1..max_nodes plus the binding step, for every (server, fabric, cap)
option, within MAX_CONFIGS configurations."""

from __future__ import annotations

import math
from collections.abc import Sequence

from planner.checks.catalog import catalog_for
from planner.checks.hardware import allowed_servers
from planner.checks.problems import Problem, Style
from planner.checks.request import PlanRequest
from planner.data import Catalog

BINDING_STEP = 0.01  # "binding": relaxing the limit by 1% (at least one node / rack unit) improves the objective


MAX_CONFIGS = 40_000_000  # beyond this an exact scan over every node count is refused with a clear message


def node_step(limit: int) -> int:
    """The binding step for an integer limit: 1% of it, at least one unit."""
    return max(1, math.ceil(BINDING_STEP * limit))


def options_per_count(catalog: Catalog, req: PlanRequest, servers: Sequence[str]) -> int:
    """(server, fabric, cap) combinations evaluated per node count (an upper bound: caps outside a GPU's range
    are skipped by the model)."""
    allowed = set(req.fabrics) if req.fabrics is not None else None
    fabrics = sum(len([f for f in catalog.server(s).fabrics if allowed is None or f in allowed]) for s in servers)
    return max(1, fabrics * len(req.power_caps))


def largest_max_nodes(catalog: Catalog, req: PlanRequest) -> int:
    """The largest node limit whose exact search stays within MAX_CONFIGS for the request's allowed servers,
    fabrics and caps: a solve scans every node count 1..m + node_step(m) (the binding step of the node limit too)
    for each (server, fabric, cap) option, so m is the largest with options x (m + node_step(m)) <= MAX_CONFIGS
    (0 when even one node count is too many)."""
    per = options_per_count(catalog, req, allowed_servers(catalog, req))
    m = int(MAX_CONFIGS // per)  # an upper bound (m + node_step(m) >= m + 1 > MAX_CONFIGS / per); step down to fit
    while m > 0 and per * (m + node_step(m)) > MAX_CONFIGS:
        m -= max(1, (per * (m + node_step(m)) - MAX_CONFIGS) // (2 * per))
    return max(m, 0)


def search_size_problem(catalog: Catalog, req: PlanRequest, style: Style = "cli") -> Problem | None:
    """None when the exact search over every node count up to the request's max_nodes is within its size limit,
    else what to change, worded for ``style``: the largest node limit that fits with the allowed hardware as it is,
    or fewer GPU types, servers, fabrics or caps. (The plan's physics_chunks refuses such a search too, but its
    message names neither the node limit that would do nor the app's inputs.)"""
    cat = catalog_for(catalog, req)
    per = options_per_count(cat, req, allowed_servers(cat, req))
    n = req.max_nodes
    if per * (n + node_step(n)) <= MAX_CONFIGS:
        return None
    most = largest_max_nodes(cat, req)
    fits = max(1, MAX_CONFIGS // (n + node_step(n)))
    limit, give, narrow = {
        "cli": ("--max-nodes", "give --max-nodes", "restrict --gpus, --servers, --fabrics or --power-caps"),
        "app": ("Max nodes", "set Max nodes to", "allow fewer GPUs or fabrics"),
        "fields": ("max_nodes", "give max_nodes", "restrict gpus, servers, fabrics or power_caps"),
        "api": ("max_nodes", "give max_nodes", "restrict gpus, servers, fabrics or power_caps"),
    }[style]
    head = (
        f"{limit} {n:,} makes too large a search: {per:,} server x fabric x power-cap options at every node count "
        f"1..{n + node_step(n):,} (the limit plus its 1% binding step) = {per * (n + node_step(n)):,} "
        f"configurations, over the exact search's limit of {MAX_CONFIGS:,}: "
    )
    fix = f"{narrow} (to at most {fits:,} options at {limit} {n:,})"
    message = head + (f"{give} {most:,} or less, or {fix}" if most >= 1 else fix)
    return Problem("max_nodes", n, message, style)
