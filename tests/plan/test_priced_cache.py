"""The priced-chunk cache (planner/plan/candidates.py ``price_chunk``): a request that differs from an earlier one
only in its limits or objective reduces the chunks priced for it without pricing them again; one that differs also
in its sites' electricity price or carbon intensity has only the columns those set computed again; a request that
changes anything else a price reads (the catalog's prices, sites' PUE, the request's sites, purchase modes, service
life, owned servers, start-up or evaluations) prices them again; either way it plans exactly as with nothing
cached. The cache holds at most PRICED_CACHE_ROWS rows, and no chunk beyond a request's node limit."""

from __future__ import annotations

from typing import Any

import pytest

from planner.data import Catalog
from planner.plan import candidates, solve

BASE = dict(model="llama3-8b", tokens=1e11, deadline_days=20, objective="energy", max_nodes=40, alternatives=2)


def result(res: Any) -> dict[str, Any]:
    """A result's content, without its timings."""
    out: dict[str, Any] = res.model_dump(exclude={"timings_s"})
    if out["solver"]:
        for k in ("solve_time_s", "build_time_s", "handoff_time_s"):
            out["solver"].pop(k)
    return out


def test_a_request_that_changes_only_its_limits_or_objective_is_not_priced_again(
    shipped: Catalog, pricings: list[int]
) -> None:
    solve(BASE, shipped)
    priced = len(pricings)
    assert priced > 0
    for change in ({"deadline_days": 12}, {"objective": "cost"}, {"budget_usd": 1e6, "power_kw": 80.0}, {}):
        res = solve({**BASE, **change}, shipped)
        assert res.plan is not None
    assert len(pricings) == priced


def electricity_doubled(cat: Catalog) -> Catalog:
    return cat.replace(
        sites={
            k: v.model_copy(update={"electricity_usd_per_kwh": 2 * v.electricity_usd_per_kwh})
            for k, v in cat.sites.items()
        }
    )


def carbon_halved(cat: Catalog) -> Catalog:
    return cat.replace(
        sites={k: v.model_copy(update={"carbon_kg_per_kwh": 0.5 * v.carbon_kg_per_kwh}) for k, v in cat.sites.items()}
    )


def pue_raised(cat: Catalog) -> Catalog:
    return cat.replace(sites={k: v.model_copy(update={"pue": min(3.0, v.pue + 0.2)}) for k, v in cat.sites.items()})


@pytest.mark.parametrize("tariff", [electricity_doubled, carbon_halved])
@pytest.mark.parametrize(
    "change",
    [
        {"objective": "cost"},
        {"objective": "carbon", "purchase": "either"},
        {"objective": "cost", "owned": [{"server": "dgx-h100", "count": 6}]},
        {"objective": "cost", "sites": ["us-colo", "hydro-nordic"], "purchase": "either"},
    ],
)
def test_a_request_that_changes_only_the_sites_tariffs_is_not_priced_again_and_plans_as_with_nothing_cached(
    shipped: Catalog, pricings: list[int], change: dict[str, Any], tariff: Any
) -> None:
    solve({**BASE, **change}, shipped)
    priced = len(pricings)
    cached = solve({**BASE, **change}, tariff(shipped))
    assert len(pricings) == priced
    assert result(solve({**BASE, **change}, shipped)) != result(cached)  # the tariffs moved the figures
    candidates._PRICED.clear()
    assert result(cached) == result(solve({**BASE, **change}, tariff(shipped)))


def server_price_cut(cat: Catalog) -> Catalog:
    return cat.replace(
        servers={
            k: v.model_copy(update={"price_usd": None if v.price_usd is None else 0.5 * v.price_usd})
            for k, v in cat.servers.items()
        }
    )


@pytest.mark.parametrize(
    ("change", "catalog"),
    [
        ({"objective": "cost"}, server_price_cut),
        ({"objective": "energy"}, pue_raised),
        ({"sites": ["us-colo", "hydro-nordic"], "objective": "carbon"}, None),
        ({"purchase": "either", "objective": "cost"}, None),
        ({"life_years": 0.3, "objective": "cost"}, None),
        ({"owned": [{"server": "dgx-h100", "count": 6}], "objective": "cost"}, None),
        ({"startup_s": 3600.0}, None),
        ({"evaluations": 4, "evaluation_samples": 1e5}, None),
    ],
)
def test_a_request_that_changes_what_a_price_reads_is_priced_again_and_plans_as_with_nothing_cached(
    shipped: Catalog, pricings: list[int], change: dict[str, Any], catalog: Any
) -> None:
    cat = catalog(shipped) if catalog else shipped
    solve({**BASE, "objective": "cost"}, shipped)
    priced = len(pricings)
    cached = solve({**BASE, **change}, cat)
    assert len(pricings) > priced
    candidates._PRICED.clear()
    assert result(cached) == result(solve({**BASE, **change}, cat))


def test_the_priced_chunks_kept_are_bounded(
    shipped: Catalog, pricings: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(candidates, "PRICED_CACHE_ROWS", 1)
    for sites in (["us-colo"], ["hydro-nordic"], ["coal-heavy"]):
        solve({**BASE, "sites": sites}, shipped)
    assert len(candidates._PRICED) == 1  # the last table priced, however large


def test_a_chunk_dropped_from_the_physics_cache_takes_its_prices_with_it(shipped: Catalog, pricings: list[int]) -> None:
    solve(BASE, shipped)
    assert candidates._PRICED
    candidates.PHYSICS.clear()
    solve({**BASE, "sites": ["coal-heavy"]}, shipped)  # evaluates the physics again, and prices it
    live = [entry.phys() for entry in candidates._PRICED.values()]
    assert all(phys is not None for phys in live)
    assert len(candidates._PRICED) == len(candidates.PHYSICS)


def test_an_infeasible_requests_explanation_keeps_no_chunk_beyond_the_node_limit(
    shipped: Catalog, pricings: list[int]
) -> None:
    """Explaining an infeasible request prices chunks of node counts beyond its limit (the least node count that
    would do): they are not kept, so the chunks within the limit, which every request reads, stay."""
    tight = {**BASE, "deadline_days": 0.1, "max_nodes": 2}  # needs 8 nodes (or a longer deadline)
    first = solve(tight, shipped)
    assert first.plan is None and first.explanation is not None
    assert "nodes" in {r.requirement for r in first.explanation.relaxations}  # found beyond the node limit
    assert len(pricings) > len(candidates._PRICED) > 0
    within = 2 + 1  # the node limit and its binding step (node_step(2) = 1)
    assert all(int(entry.phys()["nodes"].max()) <= within for entry in candidates._PRICED.values())  # type: ignore[index]
    priced = len(pricings)
    assert solve(tight, shipped).plan is None
    assert len(pricings) - priced == priced - len(candidates._PRICED)  # only the chunks not kept are priced again
