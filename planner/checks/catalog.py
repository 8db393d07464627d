"""The catalog a request is planned over: its workload under the request's framework profile, its owned servers
checked."""

from __future__ import annotations

from planner.checks.owned import check_owned
from planner.checks.request import PlanRequest
from planner.data import Catalog


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
