"""Which servers a request allows (GPU patterns, server and fabric ids), whether they can be acquired as asked
(bought, rented) and run at the request's power caps."""

from __future__ import annotations

import math
from collections.abc import Sequence

from planner.checks.problems import Problem, Style, field_name, raise_problem
from planner.checks.request import PlanRequest
from planner.data import Catalog, Server
from planner.errors import PlannerInputError


def match_gpus(catalog: Catalog, patterns: Sequence[str]) -> set[str]:
    """The GPU ids an allowed-GPU pattern names, case-insensitively: the GPU with that id, else the GPUs of that
    family ('hopper'), else the ids that start with it ('A100' -> every A100, 'H100' -> h100-sxm and h100-pcie).
    A prefix, not a substring: 'B200' does not allow 'gb200'."""
    out: set[str] = set()
    for pat in patterns:
        p = pat.strip().lower()
        hits = {g for g in catalog.gpus if g.lower() == p}
        hits = hits or {g for g in catalog.gpus if catalog.gpus[g].family.lower() == p}
        hits = hits or {g for g in catalog.gpus if g.lower().startswith(p)}
        if not p or not hits:
            raise PlannerInputError(
                f"no GPU matches '{pat}' (a GPU id, a family or the start of an id). GPUs: "
                f"{', '.join(sorted(catalog.gpus))}"
            )
        out |= hits
    return out


def allowed_servers(catalog: Catalog, req: PlanRequest) -> list[str]:
    servers = catalog.gpu_servers()
    if req.servers is not None:
        for s in req.servers:
            if catalog.server(s).gpu is None:
                raise PlannerInputError(
                    f"server '{s}' has no GPU, and a training plan needs GPU servers: allow GPU servers only "
                    f"({', '.join(g.id for g in catalog.gpu_servers())})"
                )
        servers = [s for s in servers if s.id in set(req.servers)]
    if req.gpus is not None:
        gpus = match_gpus(catalog, req.gpus)
        servers = [s for s in servers if s.gpu in gpus]
    if req.fabrics is not None:
        for f in req.fabrics:
            catalog.fabric(f)
        servers = [s for s in servers if set(s.fabrics) & set(req.fabrics)]
    if not servers:
        raise PlannerInputError("no server in the catalog matches the allowed GPUs/servers/fabrics")
    return [s.id for s in servers]


def caps_problem(catalog: Catalog, req: PlanRequest, style: Style = "api") -> Problem | None:
    """No allowed server's GPU can be set to any of the request's power caps (each GPU has a configurable range,
    min_power_limit_w / tdp_w .. max_power_limit_w / tdp_w): said with the ranges, not as a plan that fits nothing.
    The lowest cap any of them takes is the fix."""
    servers = [catalog.server(s) for s in allowed_servers(catalog, req)]
    ranges: dict[str, tuple[float, float]] = {}
    for s in servers:
        g = catalog.gpu(s.gpu or "")
        ranges[g.id] = (g.min_power_limit_w / g.tdp_w, g.max_power_limit_w / g.tdp_w)
    if any(catalog.gpu(s.gpu or "").allows_cap(c) for s in servers for c in req.power_caps):
        return None
    caps = ", ".join(f"{c:g}" for c in req.power_caps)
    lowest = min(lo for lo, _ in ranges.values())
    message = (
        f"no allowed GPU can run at power cap {caps} (fractions of TDP): below every GPU's lowest power limit; "
        "their configurable ranges: "
        + ", ".join(f"{g} {lo:.2f}-{hi:.2f}" for g, (lo, hi) in sorted(ranges.items()))
        + f". Give {field_name('power_caps', style)} of at least {math.ceil(lowest * 100) / 100:.2f}, or leave them out"
    )
    return Problem("power_caps", req.power_caps, message, style)


def check_caps(catalog: Catalog, req: PlanRequest) -> None:
    """caps_problem, raised."""
    raise_problem(caps_problem(catalog, req))


def _settable(catalog: Catalog, s: Server, cap: float) -> bool:
    return catalog.gpu(s.gpu or "").allows_cap(cap)


def rentals_without_caps(catalog: Catalog, req: PlanRequest) -> list[str]:
    """Allowed rentals whose provider sets the GPU power limit (``power_cap_settable: false``: they run at 1.0 of
    TDP) when the request's caps leave 1.0 out: the caps exclude them (a note where other ways remain)."""
    if req.purchase == "buy" or max(req.power_caps) >= 1 - 1e-9:
        return []
    rentals = [catalog.server(s) for s in allowed_servers(catalog, req)]
    return [s.id for s in rentals if s.rent_usd_per_month is not None and not s.power_cap_settable]


def rented_caps_problem(catalog: Catalog, req: PlanRequest, style: Style = "api") -> Problem | None:
    """Every way the request may acquire its allowed servers is ruled out by its power caps because the rented
    ones run at full power (the provider sets the GPU's limit): said so, not as a plan that fits no GPU memory.
    Asked after caps_problem and purchase_problem."""
    servers = [catalog.server(s) for s in allowed_servers(catalog, req)]
    can_buy = req.purchase in ("buy", "either") and any(
        s.price_usd is not None and _settable(catalog, s, c) for s in servers for c in req.power_caps
    )
    rentable = [s for s in servers if s.rent_usd_per_month is not None] if req.purchase in ("rent", "either") else []
    can_rent = any(
        (_settable(catalog, s, c) if s.power_cap_settable else abs(c - 1.0) <= 1e-9)
        for s in rentable
        for c in req.power_caps
    )
    fixed = [s.id for s in rentable if not s.power_cap_settable]
    if can_buy or can_rent or not fixed:
        return None
    caps_name = field_name("power_caps", style)
    buy = {"cli": "--buy or --either", "app": "Buy or Either", "api": "purchase 'buy' or 'either'"}.get(
        style, "purchase: buy or either"
    )
    message = (
        f"rented {', '.join(fixed)} do not let you set the GPU power limit: they run at full power (1.0 of TDP), "
        f"which {caps_name} {', '.join(f'{c:g}' for c in req.power_caps)} leaves out: add 1.0 to {caps_name}, or buy "
        f"({buy}) to cap the GPUs"
    )
    return Problem("power_caps", req.power_caps, message, style)


def check_rented_caps(catalog: Catalog, req: PlanRequest) -> None:
    """rented_caps_problem, raised."""
    raise_problem(rented_caps_problem(catalog, req))


def purchase_problem(catalog: Catalog, req: PlanRequest, style: Style = "api") -> Problem | None:
    """Some allowed server can be acquired as the request asks (bought: it has a price -- owned servers of a type
    are credited at its price too; rented: it has a rent), else a problem saying which way it can be had -- not an
    infeasible request blamed on GPU memory."""
    servers = [catalog.server(s) for s in allowed_servers(catalog, req)]
    buyable = [s.id for s in servers if s.price_usd is not None]
    rentable = [s.id for s in servers if s.rent_usd_per_month is not None]
    names = ", ".join(s.id for s in servers)
    rent, buy = {
        "cli": ("--rent, or --either to compare", "--buy, or --either to compare"),
        "app": ("Rent, or Either to compare", "Buy, or Either to compare"),
    }.get(style, ("purchase='rent' (--rent), or 'either' to compare", "purchase='buy' (--buy), or 'either' to compare"))
    message = None
    if req.purchase == "buy" and not buyable:
        how = f" Rent them ({rent})," if rentable else ""
        message = (
            f"none of the allowed servers ({names}) can be bought: the catalog gives them no price.{how} "
            "allow servers with a price, or add a price_usd to the catalog entry"
        )
    elif req.purchase == "rent" and not rentable:
        how = f" Buy them ({buy})," if buyable else ""
        message = (
            f"none of the allowed servers ({names}) can be rented: the catalog gives them no rent.{how} "
            "allow servers with a rent, or add a rent_usd_per_month to the catalog entry"
        )
    elif not buyable and not rentable:
        message = f"none of the allowed servers ({names}) has a price or a rent in the catalog"
    return None if message is None else Problem("purchase", req.purchase, message, style)


def check_purchase(catalog: Catalog, req: PlanRequest) -> None:
    """purchase_problem, raised."""
    raise_problem(purchase_problem(catalog, req))


def servers_with_gpus(catalog: Catalog, gpus: list[str] | None) -> list[str] | None:
    """The GPU servers that carry exactly these GPU ids (None: no restriction): the app's GPU choice is exact."""
    if not gpus:
        return None
    chosen = set(gpus)
    return [s.id for s in catalog.gpu_servers() if s.gpu in chosen]


NO_SERVER = "no server in the catalog matches the allowed GPUs/servers/fabrics"


def no_server_problem(catalog: Catalog, req: PlanRequest, style: Style = "cli") -> Problem | None:
    """Why no server is left when the allowed servers, GPUs and fabrics exclude each other, and what would do
    (allowed_servers says only 'no server in the catalog matches the allowed GPUs/servers/fabrics'):
    the servers given carry none of the GPUs allowed, or none of the allowed servers can be built with the
    fabrics allowed (say which fabrics they take, and which servers take the fabrics asked for). None when
    servers are left (or allowed_servers has another complaint, e.g. an unknown id: it says that itself).
    ``style``: where the request was written (problems.field_name)."""
    try:
        allowed_servers(catalog, req)
        return None
    except PlannerInputError as exc:
        if NO_SERVER not in str(exc):
            return None
    servers_name, gpus_name, fabrics_name = (field_name(f, style) for f in ("servers", "gpus", "fabrics"))
    base = catalog.gpu_servers()
    by_servers = [s for s in base if req.servers is None or s.id in set(req.servers)]
    gpus = match_gpus(catalog, req.gpus) if req.gpus is not None else None
    by_gpus = [s for s in by_servers if gpus is None or s.gpu in gpus]
    if not by_gpus and req.servers is None:  # only GPUs were given: none of them is in a server of the catalog
        carried = sorted({s.gpu or "" for s in base})
        return Problem(
            "gpus",
            req.gpus,
            f"{gpus_name} {', '.join(req.gpus or [])}: no server in the catalog carries "
            f"{'it' if len(req.gpus or []) == 1 else 'them'}; the GPUs in servers are {', '.join(carried)}: allow one "
            "of those (or add a server with that GPU to the catalog)",
            style,
        )
    if not by_gpus:
        carried = sorted({s.gpu or "" for s in by_servers})
        return Problem(
            "servers",
            req.servers,
            f"{servers_name} {', '.join(req.servers or [])} carr{'y' if len(by_servers) > 1 else 'ies'} "
            f"{', '.join(carried)}, which {gpus_name} "
            f"{', '.join(req.gpus or [])} does not allow: allow their GPUs, or leave one of the two out",
            style,
        )
    asked = list(req.fabrics or [])
    takes = list(dict.fromkeys(f for s in by_gpus for f in s.fabrics))
    elsewhere = [s.id for s in base if set(s.fabrics) & set(asked)]
    what = "the servers of the allowed GPUs" if style == "app" else "the allowed servers"
    line = (
        f"{fabrics_name} {', '.join(asked)}: none of {what} ({', '.join(s.id for s in by_gpus)}) can be built with "
        f"{'it' if len(asked) == 1 else 'them'}; they take {', '.join(takes)}: allow one of those"
    )
    line += f", or servers that take {', '.join(asked)} ({', '.join(elsewhere)})" if elsewhere else ""
    return Problem("fabrics", req.fabrics, line, style)
