"""Owned servers: the short text form, the fabric they are cabled to, whether they are GPU servers of the catalog,
and the one service rule (in_service) for owned and bought servers."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from planner.checks.request import OwnedServers, PlanRequest
from planner.data import Catalog
from planner.errors import PlannerInputError
from planner.physics import (
    cost,
)

OWNED_FORMAT = "SERVER:COUNT[:FABRIC[:AGE_YEARS]]"


def parse_owned(text: str) -> list[dict[str, Any]]:
    """'SERVER:COUNT[:FABRIC[:AGE_YEARS]][,...]' (the CLI's --owned, the app's owned field) -> owned entries.
    FABRIC left out or empty: the server's first listed; AGE_YEARS: 0. A malformed entry is bad input."""
    out: list[dict[str, Any]] = []
    example = "e.g. dgx-a100-80gb:64 or dgx-a100-80gb:64:hdr200 or dgx-a100-80gb:64:hdr200:2.5"
    for part in text.split(","):
        fields = [x.strip() for x in part.strip().split(":")]
        if not 2 <= len(fields) <= 4 or not fields[0] or not fields[1].isdigit() or int(fields[1]) < 1:
            raise PlannerInputError(f"'{part.strip()}' is not {OWNED_FORMAT} with a positive whole count ({example})")
        entry: dict[str, Any] = {"server": fields[0], "count": int(fields[1])}
        if len(fields) >= 3 and fields[2]:
            entry["fabric"] = fields[2]
        if len(fields) == 4:
            try:
                age = float(fields[3])
            except ValueError:
                age = -1.0
            if not (0 <= age < math.inf):
                raise PlannerInputError(
                    f"'{part.strip()}': the age must be a number of years >= 0, got {fields[3]!r} ({example})"
                )
            entry["age_years"] = age
        out.append(entry)
    return out


def format_owned(owned: Sequence[OwnedServers]) -> str:
    """The inverse of parse_owned (retire_at_age_years has no short form: it is left out)."""
    specs = []
    for o in owned:
        fields = [o.server, str(o.count)] + ([o.fabric or ""] if o.fabric or o.age_years else [])
        specs.append(":".join(fields + ([repr(float(o.age_years))] if o.age_years else [])))  # every digit
    return ",".join(specs)


def owned_fabric(catalog: Catalog, owned: OwnedServers) -> str:
    """The fabric owned servers are cabled to: the one named, else the server's first listed fabric."""
    return owned.fabric or catalog.server(owned.server).fabrics[0]


def check_owned(catalog: Catalog, req: PlanRequest) -> None:
    """Owned servers must be GPU servers of the catalog on a fabric they can be built with (else bad input)."""
    for o in req.owned:
        s = catalog.server(o.server)  # an unknown server: a clear error listing the valid ones
        if s.gpu is None:
            raise PlannerInputError(f"owned server '{o.server}' has no GPU: list GPU servers only")
        if o.fabric is not None:
            catalog.fabric(o.fabric)  # an unknown fabric: a clear error listing the valid ones
            if o.fabric not in s.fabrics:
                raise PlannerInputError(
                    f"owned {o.server}: fabric '{o.fabric}' is not one it can be built with "
                    f"({', '.join(s.fabrics)}); give one of those, e.g. {o.server}:{o.count}:{s.fabrics[0]}"
                )


def in_service(age_years: Any, hours: Any, end_years: float) -> np.ndarray:
    """Servers of ``age_years`` serve a run of ``hours`` h when they are still in service at its end:
    age + T / 8766 h <= ``end_years`` (their retirement age). A run never changes size, so a server that leaves
    service mid-run cannot serve it. The one rule for owned servers (owned_in_service, and planner/fleet/pools.py per
    slot) and bought ones: a bought plan's servers are new and serve ``life_years``, so a bought plan must finish
    within the life (else they retire before it ends, and its hardware share, capex x T / life, would be more
    than the capex); rentals have no life of the renter's."""
    age = np.asarray(age_years, dtype=float)
    return np.asarray(age + np.asarray(hours, dtype=float) / cost.HOURS_PER_YEAR <= end_years + 1e-12)
