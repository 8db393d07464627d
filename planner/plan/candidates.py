"""Every candidate configuration of a request, exactly: the physics of each (server, fabric, cap, node count) chunk,
cached in memory and on disk per physical fingerprint of the catalog, then priced for the request's sites,
purchase modes and owned servers."""

from __future__ import annotations

import hashlib
import json
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
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
    cost,
    evaluate_space,
    run_time,
)
from planner.physics import store as physics_store
from planner.physics.pricing import capex_column, price_columns, tariff_columns
from planner.physics.space import LAYOUT_COLUMNS, host_twins, on_twins, twin_rows
from planner.physics.tables import categorical
from planner.physics.work import Work
from planner.plan.limits import (
    evaluation_samples_of,
    purchases_of,
    samples_of,
    work_of,
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
    "time_to_train_h",  # training only: price_chunk adds the request's start-up and evaluation
    "throughput_samples_per_s",  # what an evaluation's training-sample equivalents take (run_time.evaluation_hours)
    "power_kw",
    "startup_power_kw",  # IT power during a start-up (GPUs idle): price_chunk prices the request's start-up at it
    "switches",
    "fits_memory",
    "valid_layout",
    # the chosen layout, so that a plan is re-evaluated at it (planner/plan/plans.py) rather than searched again
    *LAYOUT_COLUMNS,
    "virtual_stages",
]
CATEGORICAL_PHYSICS = ("server", "fabric", "gpu", "recompute")


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

    def parts() -> dict[str, Any]:
        out: dict[str, Any] = {
            name: {k: v.model_dump(exclude=_PRICE_FIELDS) for k, v in getattr(catalog, name).items()}
            for name in ("gpus", "servers", "fabrics", "power_curves", "frameworks", "workloads")
        }
        out["calibration"] = catalog.calibration
        return out

    return _fingerprint(catalog, "physics", parts)


def _fingerprint(catalog: Catalog, kind: str, parts: Callable[[], dict[str, Any]]) -> str:
    """The SHA-1 of ``parts()`` as JSON, computed once per catalog object and kind (the last 64 kept)."""
    cached = _FINGERPRINTS.get((id(catalog), kind))
    if cached is not None and cached[0] is catalog:
        return cached[1]
    fp = hashlib.sha1(json.dumps(parts(), sort_keys=True, default=str).encode()).hexdigest()
    _FINGERPRINTS[(id(catalog), kind)] = (catalog, fp)
    while len(_FINGERPRINTS) > 64:
        _FINGERPRINTS.pop(next(iter(_FINGERPRINTS)))
    return fp


_FINGERPRINTS: dict[tuple[int, str], tuple[Catalog, str]] = {}


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
    layout, in chunks of consecutive counts; rows sorted by (server, fabric, cap, nodes). ``timings`` gets the
    seconds spent evaluating (``evaluate_s``) and the configurations whose figures were computed
    (``configurations``: those read through a host twin included, kept or not)."""
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
    work = work_of(catalog, req, run_terms=False)  # start-up and evaluation are added when priced (price_chunk)
    twins: Twins | None = None  # made when a chunk is evaluated (not when every chunk is cached or stored)
    starts = range(lo, hi + 1, step)
    storing = True  # off once the chunks are seen not to fit the store together (physics_store.keeps)
    for a in starts:
        b = min(hi, a + step - 1)
        key = (*base, a, b)
        df = PHYSICS.pop(key, None)  # re-inserted below: most recently used last
        if df is None:
            df = physics_store.load(key)  # what an earlier process computed (planner/physics/store.py)
        if df is None:
            t0 = time.perf_counter()
            if TWINS and twins is None:
                twins = Twins(catalog, req, servers, work, step, hi)
            if twins is not None and twins.shared:
                df, configurations = twins.chunk(a, b)
            else:
                full = evaluate_space(catalog, req.model, nodes=range(a, b + 1), **space_arguments(req, servers, work))
                df, configurations = kept_rows(full), len(full)
            if timings is not None:
                timings["evaluate_s"] = timings.get("evaluate_s", 0.0) + time.perf_counter() - t0
                timings["configurations"] = timings.get("configurations", 0.0) + configurations
            # chunks the store could not keep all of are not written: it would drop the first of them for the
            # last, and the next run would find none of those it reads first (each chunk's size as this one's)
            storing = storing and physics_store.keeps(len(starts) * int(df.memory_usage(index=False).sum()))
            if storing:
                physics_store.save(key, df)
        PHYSICS[key] = df
        total = sum(len(v) for v in PHYSICS.values())
        while total > PHYSICS_CACHE_ROWS and len(PHYSICS) > 1:
            total -= len(PHYSICS.pop(next(iter(PHYSICS))))
        yield df


TWINS = True  # evaluate host twins once (Twins); off: every server evaluated on its own (the tests compare both)


def space_arguments(req: PlanRequest, servers: Sequence[str], work: Work) -> dict[str, Any]:
    """The arguments of the planner's ``evaluate_space`` calls besides the workload and the node counts."""
    return {
        "servers": list(servers),
        "fabrics": list(req.fabrics) if req.fabrics else None,
        "caps": req.power_caps,
        "site": req.sites[0],
        "work": work,
        "physical_only": True,
    }


def kept_rows(full: pd.DataFrame) -> pd.DataFrame:
    """The ``PHYSICS_COLUMNS`` of the rows of an evaluated table that fit memory with a valid layout, sorted by
    (server, fabric, cap, nodes) (``option_order``), compacted."""
    if not len(full):
        return pd.DataFrame(columns=PHYSICS_COLUMNS)
    keep = full["fits_memory"].to_numpy(dtype=bool) & full["valid_layout"].to_numpy(dtype=bool)
    idx = np.flatnonzero(keep)
    order = option_order(*option_keys(full, idx))
    if order is not None:
        idx = idx[order]
    columns = [full.columns.get_loc(k) for k in PHYSICS_COLUMNS]
    return compact(full.iloc[idx, columns].reset_index(drop=True))  # one take: the kept rows, sorted


class Twins:
    """The physics of the allowed servers through their host twins (``space.host_twins``: one GPU board under other
    names, prices or host power): the first server of each set of twins is evaluated, over windows of node counts
    as large as one evaluation of those servers alone may be (many chunks' counts at once), and every server reads
    its twin's rows of a chunk with its own IT power (``space.on_twins``): the chunk ``evaluate_space`` gives for
    all the servers, at the cost of evaluating one of each set. ``shared``: some servers are twins (else the
    chunks are evaluated as they are)."""

    def __init__(
        self, catalog: Catalog, req: PlanRequest, servers: Sequence[str], work: Work, step: int, hi: int
    ) -> None:
        self.catalog, self.req, self.servers, self.work, self.hi = catalog, req, list(servers), work, hi
        self.twin_of = host_twins([catalog.server(s) for s in servers])
        self.shared = len(set(self.twin_of)) < len(self.twin_of)
        self.firsts = [s for i, s in enumerate(self.servers) if self.twin_of[i] == i]
        per = options_per_count(catalog, req, self.firsts)
        self.window = step * max(1, CHUNK_CONFIGS // per // step)  # whole chunks of node counts per evaluation
        self.table: pd.DataFrame | None = None
        self.span = (0, -1)

    def chunk(self, a: int, b: int) -> tuple[pd.DataFrame, int]:
        """(``kept_rows`` of node counts a..b of every server, the number of configurations they stand for, kept or
        not)."""
        if not (self.span[0] <= a and b <= self.span[1]):
            self.span = (a, min(self.hi, a + self.window - 1))
            full = evaluate_space(
                self.catalog,
                self.req.model,
                nodes=range(self.span[0], self.span[1] + 1),
                **space_arguments(self.req, self.firsts, self.work),
            )
            self.table = compact(full) if len(full) else full
        table = self.table
        assert table is not None
        if b >= self.span[1]:  # the window's last chunk: its table is not kept past it
            self.table, self.span = None, (0, -1)
        if not len(table):
            return pd.DataFrame(columns=PHYSICS_COLUMNS), 0
        nodes = table["nodes"].to_numpy()
        inside = (nodes >= a) & (nodes <= b)
        per_first = np.bincount(np.asarray(table["server"].cat.codes)[inside], minlength=len(self.firsts))
        first_pos = {s: k for k, s in enumerate(self.firsts)}
        configurations = int(sum(per_first[first_pos[self.servers[t]]] for t in self.twin_of))
        keep = inside & table["fits_memory"].to_numpy(dtype=bool) & table["valid_layout"].to_numpy(dtype=bool)
        idx, si = twin_rows(table, self.servers, self.twin_of, np.flatnonzero(keep))
        fabric = np.asarray(table["fabric"].cat.codes, dtype=np.int64)[idx]
        order = option_order(si, fabric, table["power_cap"].to_numpy(dtype=float)[idx], nodes[idx])
        if order is not None:
            idx, si = idx[order], si[order]
        return on_twins(self.catalog, self.req.model, table, self.servers, idx, si, PHYSICS_COLUMNS), configurations


def compact(df: pd.DataFrame) -> pd.DataFrame:
    """The layout columns of physics rows as 16-bit integers (degrees and interleaves are small): the chunks are
    cached in memory and on disk, and these columns would otherwise double their size."""
    small = {c: df[c].astype(np.int16) for c in (*LAYOUT_COLUMNS, "virtual_stages") if df[c].dtype.kind in "iu"}
    return df.assign(**small)


def option_keys(df: pd.DataFrame, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(server code, fabric code, cap, nodes) of rows idx of an evaluated table."""
    return (
        np.asarray(df["server"].cat.codes, dtype=np.int64)[idx],
        np.asarray(df["fabric"].cat.codes, dtype=np.int64)[idx],
        df["power_cap"].to_numpy(dtype=float)[idx],
        df["nodes"].to_numpy(dtype=np.int64)[idx],
    )


def option_order(s: np.ndarray, f: np.ndarray, c: np.ndarray, n: np.ndarray) -> np.ndarray | None:
    """The order that puts rows of one (server, fabric, cap) contiguous, nodes ascending, options sorted by
    (server, fabric, cap); None where they already are (s, f, c, n: the rows' ``option_keys``).
    evaluate_space returns each option's rows contiguous with nodes ascending and its options in the catalog's
    fabric order: then the options' blocks are reordered whole (a sort of the options, not of the rows); rows in
    any other order are sorted."""
    if len(n) < 2:
        return None
    starts = np.flatnonzero(np.r_[True, (s[1:] != s[:-1]) | (f[1:] != f[:-1]) | (c[1:] != c[:-1])])
    inside = np.ones(len(n) - 1, dtype=bool)
    inside[starts[1:] - 1] = False  # consecutive rows of one block
    block = np.lexsort((c[starts], f[starts], s[starts]))
    keys_sorted = np.column_stack([s[starts], f[starts], c[starts]])[block]
    if not (n[1:][inside] > n[:-1][inside]).all() or not (keys_sorted[1:] != keys_sorted[:-1]).any(axis=1).all():
        return np.lexsort((n, c, f, s))  # not in blocks of options
    if np.array_equal(block, np.arange(len(starts))):
        return None
    lengths = np.diff(np.r_[starts, len(n)])[block]
    offsets = np.cumsum(lengths) - lengths  # where each block lands
    return np.arange(len(n)) + np.repeat(starts[block] - offsets, lengths)


PRICED_CACHE_ROWS = 1_000_000  # priced rows kept (price_chunk), all requests together

# The priced columns a site's tariffs set: energy_usd (electricity price, bought rows; rent includes power), cost_usd
# (hardware + energy_usd) and carbon_kg (grid intensity). Everything else a price reads is the pricing key's.
TARIFF_COLUMNS = ("energy_usd", "cost_usd", "carbon_kg")


def price_chunk(catalog: Catalog, req: PlanRequest, phys: pd.DataFrame, keep: bool = True) -> pd.DataFrame:
    """Candidate plans from physics rows, priced for every allowed site and purchase mode, with rack units, the
    up-front spend and ``usable``: available to buy or rent there and, bought, in service for the whole run
    (``in_service``). Every reducer selects usable rows only (plan.reduce.Masks). Rows of one hardware option
    (server, fabric, cap, site, purchase) are contiguous, nodes ascending. The pricing runs on NumPy columns and
    the physical columns are shared, not copied, where one site and purchase mode is asked for.

    The table is kept while its physics chunk lives (the last PRICED_CACHE_ROWS rows priced, all requests
    together), keyed on all it depends on besides the physics and the sites' tariffs (``_pricing_key``): requests
    that differ only in their limits or objective (a batch varying the deadline, the app planning again) reduce it
    without pricing it again, and requests that differ also in the sites' electricity price or carbon intensity
    (a batch sweeping them) have only ``TARIFF_COLUMNS`` computed again (``PricedChunk.at``). Callers read it and
    never modify it. ``keep`` off: the table is not kept (a chunk only the explanation of an infeasible request
    reads, beyond its node limit, would push out the chunks every request reads)."""
    if not len(phys):
        return pd.DataFrame()
    key = (id(phys), _pricing_key(catalog, req))
    tariffs = site_tariffs(catalog, req)
    hit = _PRICED.pop(key, None)  # re-inserted below: most recently used last
    if hit is not None and hit.phys() is phys:
        _PRICED[key] = hit
        return hit.at(tariffs)
    table, owned_amortized = _priced(catalog, req, phys)
    if not keep:
        return table
    for k in [k for k, entry in _PRICED.items() if entry.phys() is None]:  # chunks dropped from the physics cache
        del _PRICED[k]
    _PRICED[key] = PricedChunk(weakref.ref(phys), table, tariffs, owned_amortized)
    total = sum(len(entry.table) for entry in _PRICED.values())
    while total > PRICED_CACHE_ROWS and len(_PRICED) > 1:
        total -= len(_PRICED.pop(next(iter(_PRICED))).table)
    return table


Tariffs = tuple[tuple[float, float], ...]  # per site of the request, in its order: (USD per kWh, kg CO2e per kWh)


def site_tariffs(catalog: Catalog, req: PlanRequest) -> Tariffs:
    """The electricity price and grid carbon intensity of each of the request's sites."""
    return tuple((catalog.site(s).electricity_usd_per_kwh, catalog.site(s).carbon_kg_per_kwh) for s in req.sites)


class PricedChunk:
    """A kept priced table of a physics chunk (``phys``, weakly: the table goes with its chunk) and the tariffs it was
    priced at; ``owned_amortized``: the owned servers' credit each row's cost is reduced by (None without owned
    servers). ``at`` gives the table at other tariffs, the last one kept."""

    def __init__(
        self, phys: weakref.ref[pd.DataFrame], table: pd.DataFrame, tariffs: Tariffs, owned_amortized: Any
    ) -> None:
        self.phys, self.table, self.tariffs, self.owned_amortized = phys, table, tariffs, owned_amortized

    def at(self, tariffs: Tariffs) -> pd.DataFrame:
        """The table at ``tariffs``: its ``TARIFF_COLUMNS`` computed by ``pricing.tariff_columns``, as pricing it
        whole computes them (the same figures), the other columns shared."""
        if tariffs != self.tariffs:
            t = self.table
            electricity_usd_per_kwh: Any = tariffs[0][0]  # one site: its figures (the same products as per row)
            carbon_kg_per_kwh: Any = tariffs[0][1]
            if len(tariffs) > 1:
                site = np.asarray(t["site"].cat.codes, dtype=np.intp)
                electricity_usd_per_kwh = np.asarray([e for e, _ in tariffs])[site]
                carbon_kg_per_kwh = np.asarray([c for _, c in tariffs])[site]
            purchases = list(t["purchase"].cat.categories)
            bought: bool | np.ndarray = purchases == ["buy"]
            if "buy" in purchases and purchases != ["buy"]:
                bought = np.asarray(t["purchase"].cat.codes) == purchases.index("buy")
            columns = tariff_columns(
                t["facility_energy_kwh"].to_numpy(dtype=float),
                t["hardware_usd"].to_numpy(dtype=float),
                bought,
                electricity_usd_per_kwh,
                carbon_kg_per_kwh,
            )
            if self.owned_amortized is not None:
                columns["cost_usd"] = columns["cost_usd"] - self.owned_amortized
            n = len(t)
            out = t.copy(deep=False)
            for k in TARIFF_COLUMNS:
                out[k] = _full(columns[k], n)
            self.table, self.tariffs = out, tariffs
        return self.table


_PRICED: dict[tuple[Any, ...], PricedChunk] = {}


def _pricing_key(catalog: Catalog, req: PlanRequest) -> tuple[Any, ...]:
    """What a priced chunk depends on besides its physics and the sites' tariffs: the catalog's servers, fabrics and
    sites (prices, rack units, availability, PUE), the request's sites, purchase modes, service life, owned servers
    and run terms (start-up and evaluations)."""
    return (
        pricing_fingerprint(catalog),
        tuple(req.sites),
        purchases_of(req),
        req.life_years,
        tuple(o.model_dump_json() for o in req.owned),
        req.startup_s,
        req.evaluations,
        req.evaluation_samples,
    )


def pricing_fingerprint(catalog: Catalog) -> str:
    """A hash of the catalog's servers, fabrics and sites: every entry a price reads, whole, but the sites' tariffs
    (``site_tariffs``)."""

    def parts() -> dict[str, Any]:
        out: dict[str, Any] = {
            name: {k: v.model_dump() for k, v in getattr(catalog, name).items()} for name in ("servers", "fabrics")
        }
        out["sites"] = {
            k: v.model_dump(exclude={"electricity_usd_per_kwh", "carbon_kg_per_kwh"}) for k, v in catalog.sites.items()
        }
        return out

    return _fingerprint(catalog, "pricing", parts)


def _priced(catalog: Catalog, req: PlanRequest, phys: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray | None]:
    """``price_chunk``'s table, computed, and the owned servers' credit its costs are reduced by (None without
    owned servers)."""
    physical = {c: column_arrays(phys)[c] for c in PHYSICS_COLUMNS}
    physical["time_to_train_h"] = with_run_terms_h(catalog, req, physical)
    # what pricing reads: the physical columns, servers and fabrics by id (categoricals over the codes)
    inputs = {**physical, "server": phys["server"].array, "fabric": phys["fabric"].array}
    if req.startup_s:  # its hours at the start-up's power (pricing.price_columns)
        inputs["startup_h"] = np.full(len(phys), req.startup_s / run_time.SECONDS_PER_HOUR)
    capex = chunk_capex(catalog, phys, inputs)
    purchases = purchases_of(req)
    n = len(phys)
    parts: list[dict[str, np.ndarray]] = []
    for i, site in enumerate(req.sites):
        for j, purchase in enumerate(purchases):
            priced = price_columns(catalog, inputs, site, purchase, req.life_years, capex=capex)
            usable = np.asarray(priced.pop("feasible"), dtype=bool)
            if purchase == "buy":
                usable = usable & in_service(0.0, physical["time_to_train_h"], req.life_years)
            part = dict(physical)
            part.update({k: _full(v, n) for k, v in priced.items() if k not in ("site", "purchase")})
            part["usable"] = usable
            part["site"] = np.full(n, i, dtype=np.int64)
            part["purchase"] = np.full(n, j, dtype=np.int64)
            parts.append(part)
    cols: dict[str, Any] = {k: _concat([p[k] for p in parts]) for k in parts[0]}
    for k in CATEGORICAL_PHYSICS:
        cols[k] = pd.Categorical.from_codes(cols[k], dtype=phys[k].dtype, validate=False)
    is_buy = cols["purchase"] == (purchases.index("buy") if "buy" in purchases else -1)
    cols["site"] = categorical(cols["site"], list(req.sites))
    cols["purchase"] = categorical(cols["purchase"], list(purchases))
    cols["rack_units"] = _concat([rack_units(catalog, phys)] * len(parts))
    owned_amortized = _credit_owned(catalog, req, cols, is_buy) if req.owned else None
    cols["upfront_usd"] = np.where(is_buy, cols["capex_usd"], cols["cost_usd"])
    return pd.DataFrame(cols, copy=False), owned_amortized


def rack_units(catalog: Catalog, phys: pd.DataFrame) -> np.ndarray:
    """The rack units of each row of a physics chunk: its nodes x its server's height."""
    arrays = column_arrays(phys)
    height = np.asarray([catalog.server(str(s)).rack_units for s in phys["server"].cat.categories], dtype=np.int64)
    return np.asarray(arrays["nodes"], dtype=np.int64) * height[np.asarray(arrays["server"], dtype=np.intp)]


def table_fact(table: pd.DataFrame, kind: Any, make: Callable[[pd.DataFrame], Any]) -> Any:
    """``make(table)``, computed once per table object and kind and kept while the table lives (the last
    TABLE_FACTS): what a cached physics chunk or priced table is read for again by every request (its columns as
    NumPy, its capex, its option groups)."""
    key = (id(table), kind)
    hit = _TABLE_FACTS.get(key)
    if hit is not None and hit[0]() is table:
        return hit[1]
    value = make(table)
    for k in [k for k, (ref, _) in _TABLE_FACTS.items() if ref() is None]:  # tables dropped from their caches
        del _TABLE_FACTS[k]
    _TABLE_FACTS[key] = (weakref.ref(table), value)
    while len(_TABLE_FACTS) > TABLE_FACTS:
        _TABLE_FACTS.pop(next(iter(_TABLE_FACTS)))
    return value


TABLE_FACTS = 256  # kept facts of live tables, all kinds together
_TABLE_FACTS: dict[tuple[int, Any], tuple[weakref.ref[pd.DataFrame], Any]] = {}


def column_arrays(table: pd.DataFrame) -> dict[str, np.ndarray]:
    """Each column of a physics chunk or priced table as NumPy (a categorical one as its codes, its categories
    staying on the table), read once per table object (``table_fact``): every pricing and reduction of a cached
    table reads them again."""
    arrays: dict[str, np.ndarray] = table_fact(table, "arrays", _column_arrays)
    return arrays


def _column_arrays(table: pd.DataFrame) -> dict[str, np.ndarray]:
    """``column_arrays``, computed."""
    return {str(c): column_array(table[c]) for c in table.columns}


def column_array(s: pd.Series) -> np.ndarray:
    """A column as NumPy, equal where its values are: a categorical's codes, else its values."""
    return np.asarray(s.cat.codes) if isinstance(s.dtype, pd.CategoricalDtype) else s.to_numpy()


def with_run_terms_h(catalog: Catalog, req: PlanRequest, physical: dict[str, np.ndarray]) -> np.ndarray:
    """The time-to-train of physics rows (training only) with the request's evaluation and start-up added, the sum
    ``evaluate_space`` forms for a ``Work`` that states them (space.time_columns): the physics is shared by every
    start-up and evaluation, so changing them re-prices rather than re-evaluates."""
    training_h = physical["time_to_train_h"]
    if not (req.startup_s or req.evaluations):
        return training_h
    evaluation_h, startup_h = run_terms_h(catalog, req, physical["throughput_samples_per_s"])
    return np.asarray(training_h + evaluation_h + startup_h)


def run_terms_h(catalog: Catalog, req: PlanRequest, throughput_samples_per_s: Any) -> tuple[Any, float]:
    """(hours of the request's evaluations at each configuration's throughput, hours of its start-up): the terms
    ``with_run_terms_h`` adds to the training (run_time.evaluation_hours over the training-sample equivalents of the
    held-out samples, ``evaluation_samples_of``)."""
    evaluation_h = run_time.evaluation_hours(0.0, evaluation_samples_of(catalog, req), throughput_samples_per_s)
    return evaluation_h, req.startup_s / run_time.SECONDS_PER_HOUR


def chunk_capex(catalog: Catalog, phys: pd.DataFrame, inputs: dict[str, Any]) -> np.ndarray:
    """The capex column of a physics chunk at the catalog's prices (pricing.capex_column), kept for the chunk
    while it is cached: it depends on neither site, purchase mode nor limits, so every request that prices the
    chunk again at the same prices reuses it."""
    return np.asarray(table_fact(phys, ("capex", price_fingerprint(catalog)), lambda _: capex_column(catalog, inputs)))


def price_fingerprint(catalog: Catalog) -> str:
    """A hash of the catalog's prices of servers and fabrics (what capex reads)."""

    def parts() -> dict[str, Any]:
        return {
            "servers": {k: (v.price_usd, v.nic_ports) for k, v in catalog.servers.items()},
            "fabrics": {
                k: (v.nic_price_usd, v.switch_price_usd, v.cable_price_usd, v.switch_radix)
                for k, v in catalog.fabrics.items()
            },
        }

    return _fingerprint(catalog, "prices", parts)


def _full(v: Any, n: int) -> np.ndarray:
    """v as a column of n rows (repeated where it is one number for every row)."""
    a = np.asarray(v)
    return np.full(n, a) if not a.ndim else a


def _concat(arrays: list[np.ndarray]) -> np.ndarray:
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


def _credit_owned(catalog: Catalog, req: PlanRequest, cols: dict[str, Any], is_buy: np.ndarray) -> np.ndarray:
    """Subtract the owned servers' credit (owned_credit_usd) from the capex and cost of the bought rows; returns what
    each row's cost is reduced by (the credit amortized over the run)."""
    credit = np.zeros(len(is_buy))
    hours = np.asarray(cols["time_to_train_h"], dtype=float)
    servers, fabrics = cols["server"], cols["fabric"]
    key = np.asarray(servers.codes, dtype=np.int64) * (len(fabrics.categories) + 1) + np.asarray(fabrics.codes)
    for k in np.unique(key[is_buy]):
        rows = np.flatnonzero(is_buy & (key == k))
        first = rows[0]
        credit[rows] = owned_credit_usd(
            catalog, req, str(servers[first]), str(fabrics[first]), cols["nodes"][rows], hours[rows]
        )
    amortized = cost.amortized_usd(credit, hours, req.life_years)
    cols["capex_usd"] = np.asarray(cols["capex_usd"], dtype=float) - credit
    cols["cost_usd"] = np.asarray(cols["cost_usd"], dtype=float) - amortized
    return amortized
