"""What capacity a fleet may use: the owned servers (in service per slot), the buy options and the rental offers.

A *site cluster* is one server type on one fabric at the site: the nodes a team owns on that fabric plus any bought
on it. A server type is bought on one fabric (the plan picks it); bought nodes on the fabric of owned nodes of their
type extend that cluster. A rental pool is the provider's cluster of one rentable type, on the offer's network (the
server's first listed fabric). Pools share no network: a job runs inside one.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from planner.checks import fp8_in, match_gpus, precision_problem_text
from planner.data import Catalog, Server
from planner.errors import PlannerInputError
from planner.fleet.request import FleetRequest, Owned
from planner.physics import compute
from planner.physics import cost as cost_mod
from planner.physics import power as power_mod


@dataclass(frozen=True)
class OwnedEntry:
    """One entry of the request's owned servers, resolved: its type, fabric, count and the slots it serves."""

    server: str
    fabric: str
    count: int
    avail: tuple[int, ...]  # 1 in the slots the nodes are in service

    @property
    def serves(self) -> bool:
        """Whether the nodes serve any slot: they are in service at the start of the horizon (a node's age only
        grows, so it serves a first run of slots) and are part of its cluster's owned network."""
        return any(self.avail)


@dataclass
class Pools:
    """What capacity exists: owned entries, buy options (type -> fabrics), rental offers (type -> fabric)."""

    owned: list[OwnedEntry]
    buy: dict[str, list[str]]
    rent: dict[str, str]
    idle_kw: dict[str, float]  # facility power of one idle node of each type
    owned_fabrics: dict[str, set[str]] = field(default_factory=dict)

    def site_group(self, server: str, fabric: str) -> str:
        """The capacity group of a site cluster: 'type|fabric' for a type with owned nodes (each fabric is a
        cluster), 'type|*' for the others (bought on one fabric, whichever the plan picks)."""
        return f"{server}|{fabric}" if server in self.owned_fabrics else f"{server}|*"

    def owned_on(self, server: str, fabric: str) -> int:
        """Nodes owned of ``server`` on ``fabric`` (kept or not)."""
        return sum(e.count for e in self.owned if e.server == server and e.fabric == fabric)

    def serving(self, server: str, fabric: str) -> list[int]:
        """The owned entries of ``server`` on ``fabric`` that serve some slot (``OwnedEntry.serves``): those whose
        kept nodes are in the cluster and whose network the cluster reuses (``billing.owned_capex_usd``)."""
        return [i for i, e in enumerate(self.owned) if e.server == server and e.fabric == fabric and e.serves]

    def serving_on(self, server: str, fabric: str) -> int:
        """Nodes owned of ``server`` on ``fabric`` in service at the start of the horizon (kept or not): the nodes
        the owned network of that cluster serves."""
        return sum(self.owned[i].count for i in self.serving(server, fabric))

    def kept_on(self, server: str, fabric: str, kept: list[int]) -> int:
        """Of ``serving_on``, the nodes kept (``kept``: per owned entry): the owned nodes in the cluster."""
        return sum(kept[i] for i in self.serving(server, fabric))


def cap_settable(server: Server) -> bool:
    """Whether a power cap can be set on the server (a rental whose cap is not settable runs at 1.0)."""
    return server.power_cap_settable


def pools_of(cat: Catalog, req: FleetRequest) -> Pools:
    """The pools of the request: buy options and rental offers of the allowed servers, owned entries with the
    slots they serve, and each type's idle facility power. Unknown ids, an owned server without a GPU or on a
    fabric it cannot be built with, nothing to plan on and a precision no allowed GPU has are bad input."""
    site = cat.site(req.site)
    allowed = _allowed_servers(cat, req)
    buy: dict[str, list[str]] = {}
    rent: dict[str, str] = {}
    if req.purchase in ("buy", "either"):
        for s in allowed:
            fabs = [f for f in s.fabrics if req.fabrics is None or f in req.fabrics]
            if s.price_usd is not None and fabs:
                buy[s.id] = fabs
    if req.purchase in ("rent", "either"):
        for s in allowed:
            if s.rent_usd_per_month is not None:
                rent[s.id] = s.fabrics[0]
    owned = [owned_entry(cat, req, o) for o in req.owned]
    if not buy and not rent and not owned:
        raise PlannerInputError(
            "no allowed server can be bought, rented or is owned as asked: widen gpus/servers/fabrics or the purchase"
        )
    types = set(buy) | set(rent) | {e.server for e in owned}
    check_job_precisions(cat, req, types)
    idle = {p: power_mod.idle_node_kw(cat.server(p), cat.gpu(cat.server(p).gpu or ""), site.pue) for p in types}
    owned_f: dict[str, set[str]] = {}
    for e in owned:
        owned_f.setdefault(e.server, set()).add(e.fabric)
    return Pools(owned, buy, rent, idle, owned_f)


def _allowed_servers(cat: Catalog, req: FleetRequest) -> list[Server]:
    """The GPU servers new nodes may be bought or rented as (``servers``, ``gpus``); every id named is checked."""
    allowed = [s for s in cat.gpu_servers() if (req.servers is None or s.id in req.servers)]
    if req.servers is not None:
        for sid in req.servers:
            cat.server(sid)
    if req.gpus is not None:
        gpus = match_gpus(cat, req.gpus)
        allowed = [s for s in allowed if s.gpu in gpus]
    for f in req.fabrics or ():
        cat.fabric(f)
    return allowed


def owned_entry(cat: Catalog, req: FleetRequest, o: Owned) -> OwnedEntry:
    """An owned entry resolved: its fabric (default the server's first) and the slots it serves -- a node serves
    a slot when its age at the slot's end is at most its end of service (``retire_at_age_years``, default the
    request's ``life_years``)."""
    s = cat.server(o.server)
    if s.gpu is None:
        raise PlannerInputError(f"owned server '{o.server}' has no GPU: list GPU servers only")
    fab = o.fabric or s.fabrics[0]
    if fab not in s.fabrics:
        raise PlannerInputError(
            f"owned {o.server}: fabric '{fab}' is not one it can be built with ({', '.join(s.fabrics)})"
        )
    end = o.retire_at_age_years if o.retire_at_age_years is not None else req.life_years
    avail = tuple(
        int(o.age_years + (t + 1) * req.slot_hours / cost_mod.HOURS_PER_YEAR <= end + 1e-12) for t in range(req.slots)
    )
    return OwnedEntry(o.server, fab, o.count, avail)


def check_job_precisions(cat: Catalog, req: FleetRequest, types: Collection[str]) -> None:
    """A job asking for fp8 or fp4 by name where none of the fleet's allowed servers has a GPU with it: bad input,
    never a plan silently computed in another precision (as `planner solve` refuses it). Where some have it, a mode
    on a GPU without computes in its fallback and the schedule's precision column says so."""
    gpus = sorted({cat.server(p).gpu or "" for p in types} - {""})
    for j in req.jobs:
        if j.precision in compute.LOW_PRECISION_FIELDS and not any(
            compute.has_precision(cat.gpu(g), j.precision) for g in gpus
        ):
            fix = "give the job precision: bf16 (or leave it out for the workload's)"
            text = precision_problem_text(j.precision, gpus, fix, "fields", fp8_in(cat, gpus))
            raise PlannerInputError(f"job '{j.id}': precision {text}")
