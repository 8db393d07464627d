"""Every candidate configuration of a request, exactly: the physics of each (server, fabric, cap, node count) chunk,
cached in memory and on disk per physical fingerprint of the catalog, then priced for the request's sites,
purchase modes and owned servers."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from planner.checks.hardware import allowed_servers
from planner.checks.owned import in_service
from planner.checks.request import PlanRequest
from planner.checks.search import MAX_CONFIGS, options_per_count
from planner.data import Catalog
from planner.errors import PlannerInputError
from planner.physics import (
    Work,
    cost,
    evaluate_space,
    price_space,
)
from planner.physics import store as physics_store
from planner.plan.limits import (
    purchases_of,
    samples_of,
)
from planner.plan.owned import owned_credit_usd

CHUNK_CONFIGS = 250_000  # configurations per evaluate_space call (bounds peak memory)


PHYSICS_CACHE_ROWS = 4_000_000  # cached physics rows, all requests together


# Physics (times, IT power, switches) of every configuration, cached per physical fingerprint of the catalog and
# per chunk of node counts: scenarios that change only prices, sites, limits or objectives re-price cached rows.
# Also stored on disk (planner/physics/store.py), so that a fresh process re-prices what an earlier one computed.
PHYSICS: dict[tuple[Any, ...], pd.DataFrame] = {}


PHYSICS_COLUMNS = [
    "server",
    "fabric",
    "gpu",
    "power_cap",
    "nodes",
    "gpus",
    "global_batch",
    "time_to_train_h",
    "power_kw",
    "switches",
    "fits_memory",
    "valid_layout",
]


_PRICE_FIELDS = {
    "price_usd",
    "rent_usd_per_month",
    "price_source",
    "rent_usd_per_gpu_hour",
    "nic_price_usd",
    "switch_price_usd",
    "cable_price_usd",
    "source",
}


def physics_fingerprint(catalog: Catalog) -> str:
    """A hash of everything in the catalog that changes times or IT power (not prices or sites)."""
    cached = _FINGERPRINTS.get(id(catalog))
    if cached is not None and cached[0] is catalog:
        return cached[1]

    parts = {
        name: {k: v.model_dump(exclude=_PRICE_FIELDS) for k, v in getattr(catalog, name).items()}
        for name in ("gpus", "servers", "fabrics", "power_curves", "frameworks", "workloads")
    }
    parts["calibration"] = catalog.calibration
    fp = hashlib.sha1(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()
    _FINGERPRINTS[id(catalog)] = (catalog, fp)
    while len(_FINGERPRINTS) > 64:
        _FINGERPRINTS.pop(next(iter(_FINGERPRINTS)))
    return fp


_FINGERPRINTS: dict[int, tuple[Catalog, str]] = {}


def _physics_key(catalog: Catalog, req: PlanRequest, servers: Sequence[str]) -> tuple[Any, ...]:
    return (
        physics_fingerprint(catalog),
        req.model,
        samples_of(catalog, req),
        req.global_batch,
        req.precision,
        tuple(servers),
        tuple(req.fabrics or ()),
        tuple(req.power_caps),
    )


def physics_chunks(
    catalog: Catalog, req: PlanRequest, lo: int, hi: int, timings: dict[str, float] | None = None
) -> Iterator[pd.DataFrame]:
    """The physics of every allowed configuration at every node count lo..hi that fits memory with a valid
    layout, in chunks of consecutive counts; rows sorted by (server, fabric, cap, nodes)."""
    if hi < lo:
        return
    servers = allowed_servers(catalog, req)
    base = _physics_key(catalog, req, servers)
    per = options_per_count(catalog, req, servers)
    if per * (hi - lo + 1) > MAX_CONFIGS:
        raise PlannerInputError(
            f"an exact search over every node count {lo}..{hi} would evaluate {per * (hi - lo + 1):,} "
            f"configurations (limit {MAX_CONFIGS:,}): lower --max-nodes, or restrict --gpus, --servers, "
            "--fabrics or --power-caps"
        )
    step = max(1, CHUNK_CONFIGS // per)
    work = Work(samples_of(catalog, req), req.global_batch, req.precision)
    for a in range(lo, hi + 1, step):
        b = min(hi, a + step - 1)
        key = (*base, a, b)
        df = PHYSICS.pop(key, None)  # re-inserted below: most recently used last
        if df is None:
            df = physics_store.load(key)  # what an earlier process computed (planner/physics/store.py)
        if df is None:
            t0 = time.perf_counter()
            full = evaluate_space(
                catalog,
                req.model,
                servers=servers,
                fabrics=list(req.fabrics) if req.fabrics else None,
                caps=req.power_caps,
                nodes=range(a, b + 1),
                site=req.sites[0],
                work=work,
            )
            if len(full):
                keep = full["fits_memory"].to_numpy(dtype=bool) & full["valid_layout"].to_numpy(dtype=bool)
                df = full.loc[keep, PHYSICS_COLUMNS].reset_index(drop=True)
                df = _sorted_by_option(df)
            else:
                df = pd.DataFrame(columns=PHYSICS_COLUMNS)
            if timings is not None:
                timings["evaluate_s"] = timings.get("evaluate_s", 0.0) + time.perf_counter() - t0
                timings["configurations"] = timings.get("configurations", 0.0) + len(full)
            physics_store.save(key, df)
        PHYSICS[key] = df
        total = sum(len(v) for v in PHYSICS.values())
        while total > PHYSICS_CACHE_ROWS and len(PHYSICS) > 1:
            total -= len(PHYSICS.pop(next(iter(PHYSICS))))
        yield df


def _sorted_by_option(df: pd.DataFrame) -> pd.DataFrame:
    """Rows of one (server, fabric, cap) contiguous, nodes ascending (evaluate_space already returns them so;
    sorted here only if not)."""
    s = np.asarray(df["server"].cat.codes, dtype=np.int64)
    f = np.asarray(df["fabric"].cat.codes, dtype=np.int64)
    c = df["power_cap"].to_numpy(dtype=float)
    n = df["nodes"].to_numpy(dtype=np.int64)
    order = np.lexsort((n, c, f, s))
    if np.array_equal(order, np.arange(len(df))):
        return df
    return df.iloc[order].reset_index(drop=True)


def price_chunk(catalog: Catalog, req: PlanRequest, phys: pd.DataFrame) -> pd.DataFrame:
    """Candidate plans from physics rows: priced for every allowed site and purchase mode, available ones only,
    with rack units and the up-front spend. Rows of one hardware option (server, fabric, cap, site, purchase)
    are contiguous, nodes ascending."""
    frames, sites, buys = [], [], []
    purchases = purchases_of(req)
    for i, site in enumerate(req.sites):
        for j, purchase in enumerate(purchases):
            if not len(phys):
                continue
            df = price_space(catalog, phys, site, purchase, req.life_years)
            keep = df["feasible"].to_numpy(dtype=bool, copy=True)
            if purchase == "buy":
                keep &= in_service(0.0, df["time_to_train_h"].to_numpy(dtype=float), req.life_years)
            df = df[keep]
            frames.append(df.drop(columns=["site", "purchase"]))
            sites.append(np.full(len(df), i))
            buys.append(np.full(len(df), j))
    if not frames:
        return pd.DataFrame()
    cand = frames[0].reset_index(drop=True) if len(frames) == 1 else pd.concat(frames, ignore_index=True)
    cand["site"] = pd.Categorical.from_codes(np.concatenate(sites), categories=list(req.sites))
    purchase_codes = np.concatenate(buys)
    cand["purchase"] = pd.Categorical.from_codes(purchase_codes, categories=list(purchases))
    # from the codes: a categorical of string categories turned into an object array costs ~30 ms per 100k rows
    is_buy = purchase_codes == (purchases.index("buy") if "buy" in purchases else -1)
    server_cat = cand["server"].cat
    rack = np.asarray([catalog.server(str(s)).rack_units for s in server_cat.categories], dtype=np.int64)
    cand["rack_units"] = cand["nodes"].to_numpy(dtype=np.int64) * rack[np.asarray(server_cat.codes)]
    if req.owned:
        buy = is_buy
        credit = np.zeros(len(cand))
        for (server, fabric), idx in cand[buy].groupby(["server", "fabric"], observed=True).indices.items():
            rows = np.flatnonzero(buy)[idx]
            credit[rows] = owned_credit_usd(
                catalog,
                req,
                str(server),
                str(fabric),
                cand["nodes"].to_numpy()[rows],
                cand["time_to_train_h"].to_numpy(dtype=float)[rows],
            )
        cand["capex_usd"] = cand["capex_usd"].to_numpy() - credit
        cand["cost_usd"] = cand["cost_usd"].to_numpy() - cost.amortized_usd(
            credit, cand["time_to_train_h"].to_numpy(dtype=float), req.life_years
        )
    cand["upfront_usd"] = np.where(is_buy, cand["capex_usd"], cand["cost_usd"])
    return cand
