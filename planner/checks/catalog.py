"""The catalog a request is planned over: its workload under the request's framework profile, its owned servers
checked."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from planner.checks.owned import check_owned
from planner.checks.request import PlanRequest
from planner.data import Catalog
from planner.errors import PlannerInputError


def catalog_for(catalog: Catalog, req: PlanRequest) -> Catalog:
    """The catalog a request is planned over: its workload under the request's framework profile (if given), and
    its owned servers checked (check_owned). Unknown ids are bad input with the valid ones listed."""
    catalog.workload(req.model)
    check_owned(catalog, req)
    if req.framework is None:
        return catalog
    fw = catalog.framework(req.framework).id
    wl = catalog.workload(req.model)
    if wl.framework == fw:
        return catalog
    return catalog.replace(workloads={**catalog.workloads, wl.id: wl.model_copy(update={"framework": fw})})


def unknown_ids(catalog: Catalog, fields: Mapping[str, Any]) -> list[str]:
    """What a request's fields (a dict, not yet validated) name that the catalog lacks -- the workload, sites,
    servers and fabrics -- one 'field: unknown ...' line each, with the nearest id and the valid ones: said beside
    the schema's own problems (a misspelt model and a negative deadline are two problems, both reported), where the
    catalog's lookups would otherwise run only once the schema has passed."""
    lookups: dict[str, Callable[[str], object]] = {
        "model": catalog.workload,
        "sites": catalog.site,
        "servers": catalog.server,
        "fabrics": catalog.fabric,
    }
    said: list[str] = []
    for field, lookup in lookups.items():
        value = fields.get(field)
        names = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        for name in names:
            if not isinstance(name, str):
                continue  # a value of another type: the schema says so
            try:
                lookup(name)
            except PlannerInputError as exc:
                said.append(f"{field}: {exc}")
    return said
