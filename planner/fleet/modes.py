"""The modes a job may run in, from the exact model, pruned exactly; the slots of its window.

A job runs in one *mode* m = (pool, fabric, power cap, node count) and never changes size, mode or pool: it may
pause between slots but resumes on the same nodes. Modes come from the exact model (``planner.physics.
evaluate_space``) at every integer node count from 1 to the pool's limit (``max_nodes`` per cluster plus the owned
nodes on that fabric), so every count at which some layout fits and is valid is seen; then they are pruned
exactly: a mode of one job, pool and fabric is dropped when another has no more nodes, no more slots ceil(T/H),
no more energy, no more site power and, on a rental offer billed per job, no more rent (the coefficients it enters
the MIP with). Any schedule of the dominated mode is feasible for the dominating one and no worse in any term, so
the optimum is unchanged. Pruning is done once per distinct (workload, work) and a job then keeps the survivors
that fit its window (a dominating mode needs no more slots, so it fits whenever the dominated one does).

A one-node mode of a type without owned nodes is one mode on ``ANY_FABRIC``: one node has no NICs, switches or
inter-node traffic in the exact model, so its time, power and energy are the same on every fabric, and it runs on
whatever fabric its type is bought on.

The exact model is evaluated once per (workload, precision) over one integer-coded ``Space`` of every (type,
fabric, cap, nodes) configuration; the other amounts of work of that workload are the evaluated table scaled
(``planner.physics.scale_work``: hours, energy and samples are proportional to the samples to train, and the
priced columns follow; tests/physics/test_space_properties.py checks the property column for column). Each
evaluated table is let go after its last use. Where the time goes: docs/fleet-bound.md, "The mode stage".
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd

from planner.data import Catalog
from planner.fleet.billing import SLOT_EPS, billed_per_job, job_rent_usd
from planner.fleet.pools import Pools, cap_settable, pools_of
from planner.fleet.request import FleetRequest, Job
from planner.physics import Space, Work, evaluate_space, scale_work, work_from

ANY_FABRIC = "any"  # a one-node mode: runs on a bought node of its type whatever fabric the type is bought on

WorkKey = tuple[str, float | None, str | None]  # (workload, amount of work as asked, precision)


def job_window(req: FleetRequest, j: Job) -> list[int]:
    """The slots job j may run in: its release slot to its due slot, or to the horizon end when it may be late."""
    last = req.slots - 1 if j.penalty_usd_per_slot is not None else min(j.due_slot, req.slots - 1)
    return list(range(j.release_slot, last + 1))


def slots_needed(hours: np.ndarray, slot_hours: float) -> np.ndarray:
    """Whole slots a run of ``hours`` needs, at least one: ceil(T / H) (a run of exactly k slots needs k)."""
    return np.maximum(np.ceil(np.asarray(hours, dtype=float) / slot_hours * (1 - SLOT_EPS)), 1.0)


def pareto_mask(X: np.ndarray) -> np.ndarray:
    """Rows of X (all columns minimised) not dominated by another row (<= everywhere); of equal rows the
    first is kept. Exact: in lexicographic order (stable, so equal rows keep their order) a dominating row always
    comes first, so a row is dropped iff an earlier row is <= everywhere. First, each row is compared with the
    first row in that order of the same value in column 1 (the fleet's slots needed: the fewest-node mode of
    that slot count) and dropped when that row is <= it everywhere -- that row stays, so anything it drops would
    be dropped by it below too. Then the rows left are swept in order: the first is kept and every later row it
    is <= everywhere is dropped, then the next row left. A dropped row is no loss as a dominator: it was dropped
    by an earlier row <= it everywhere that is kept or was itself dropped by an earlier one, and a kept row met
    first drops whatever it dominated (transitive). The comparison with each slot count's first row removes most
    rows before the sweep (docs/fleet-bound.md, "The mode stage")."""
    n = len(X)
    if n <= 1:
        return np.ones(n, dtype=bool)
    order = np.lexsort(X.T[::-1])
    Y = X[order]
    _, first, inv = np.unique(Y[:, 1], return_index=True, return_inverse=True)
    rep = first[inv]  # the first row of each column-1 value
    rest = np.flatnonzero(~(Y[rep] <= Y).all(axis=1) | (rep == np.arange(n)))
    keep = np.zeros(n, dtype=bool)
    while len(rest):
        i = rest[0]
        keep[i] = True
        rest = rest[1:]
        rest = rest[~(Y[i] <= Y[rest]).all(axis=1)]
    out = np.zeros(n, dtype=bool)
    out[order[keep]] = True
    return out


@dataclass
class Pairs:
    """Every (server, fabric) pair that is a site cluster (bought and/or owned) or a rental offer, with what the
    modes need of each pair as arrays (one entry per pair)."""

    pairs: list[tuple[str, str]]
    site_lim: np.ndarray  # most nodes of a site cluster: max_nodes if it may be bought, plus the owned
    rent_ok: np.ndarray  # the pair is a rental offer (the type's offer is on this fabric)
    settable: np.ndarray  # its GPU's power cap can be set
    per_job: np.ndarray  # its rental offer is billed per job
    idle_kw: np.ndarray  # facility power of one idle node
    site_group: list[str]  # the capacity group of the site cluster
    any_pair: np.ndarray  # a type without owned nodes (its one-node modes run on any fabric)
    type_ids: list[str]
    type_of: np.ndarray  # index into type_ids
    fabric_ids: list[str]
    fabric_of: np.ndarray  # index into fabric_ids


def pairs_of(cat: Catalog, req: FleetRequest, pools: Pools) -> Pairs:
    """The pools' (server, fabric) pairs (``Pairs``), sorted."""
    pairs = sorted(
        {(p, f) for p, fabs in pools.buy.items() for f in fabs}
        | {(e.server, e.fabric) for e in pools.owned}
        | set(pools.rent.items())
    )
    site_group = [pools.site_group(p, f) for p, f in pairs]
    type_ids = sorted({p for p, _ in pairs})
    fabric_ids = sorted({f for _, f in pairs})
    return Pairs(
        pairs=pairs,
        site_lim=np.asarray(
            [(req.max_nodes if f in pools.buy.get(p, []) else 0) + pools.owned_on(p, f) for p, f in pairs],
            dtype=np.int64,
        ),
        rent_ok=np.asarray([pools.rent.get(p) == f for p, f in pairs]),
        settable=np.asarray([cap_settable(cat.server(p)) for p, _ in pairs]),
        per_job=np.asarray([billed_per_job(cat.server(p), req.slot_hours) for p, _ in pairs], dtype=bool),
        idle_kw=np.asarray([pools.idle_kw[p] for p, _ in pairs]),
        site_group=site_group,
        any_pair=np.asarray([g.endswith("|*") for g in site_group], dtype=bool),
        type_ids=type_ids,
        type_of=np.asarray([type_ids.index(p) for p, _ in pairs], dtype=np.int64),
        fabric_ids=fabric_ids,
        fabric_of=np.asarray([fabric_ids.index(f) for _, f in pairs], dtype=np.int64),
    )


@dataclass
class Configurations:
    """Every (pair, power cap, node count) to evaluate, as ``evaluate_space``'s integer-coded ``Space`` and the
    pair and cap of each row."""

    space: Space
    pair_of: np.ndarray
    cap_of: np.ndarray
    caps_ok: np.ndarray  # the cap is one the request allows (site clusters run only those)


def configurations(cat: Catalog, req: FleetRequest, pp: Pairs) -> Configurations | None:
    """The configurations of every pair: the caps its GPU allows among the request's (and 1.0 on a rental whose cap
    is not settable), every node count up to its limit (or the request's ``node_counts``); None when there are none."""
    rows: list[tuple[int, float, np.ndarray]] = []  # (pair, cap, node counts)
    for i, (p, _f) in enumerate(pp.pairs):
        gpu = cat.gpu(cat.server(p).gpu or "")
        caps = {c for c in req.power_caps if gpu.allows_cap(c)}
        if pp.rent_ok[i] and not pp.settable[i]:
            caps.add(1.0)
        lim = max(int(pp.site_lim[i]), req.max_nodes if pp.rent_ok[i] else 0)
        counts = (
            np.arange(1, lim + 1)
            if req.node_counts is None
            else np.asarray(sorted(n for n in set(req.node_counts) if n <= lim))
        )
        for c in sorted(caps):
            rows.append((i, c, counts.astype(np.int64)))
    if not rows:
        return None
    pair_of = np.concatenate([np.full(len(n), i, dtype=np.int64) for i, _c, n in rows])
    cap_of = np.concatenate([np.full(len(n), c, dtype=float) for _i, c, n in rows])
    space = Space(
        pp.type_ids,
        pp.fabric_ids,
        pp.type_of[pair_of],
        pp.fabric_of[pair_of],
        cap_of,
        np.concatenate([n for *_x, n in rows]),
    )
    return Configurations(space, pair_of, cap_of, np.isin(cap_of, req.power_caps))


def evaluated_tables(cat: Catalog, req: FleetRequest, space: Space) -> Iterator[tuple[list[Job], pd.DataFrame]]:
    """(jobs, exact-model table) per distinct (workload, work, precision) of the jobs: one ``evaluate_space`` per
    (workload, precision), the other amounts of work of it that table scaled (``scale_work``). Each evaluated
    table (~215 MiB at 540,672 configurations) is let go after its last amount of work."""
    by_work: dict[WorkKey, list[Job]] = {}
    for j in req.jobs:
        wl = cat.workload(j.model)
        by_work.setdefault((j.model, work_from(wl, j.samples, j.tokens, j.epochs), j.precision), []).append(j)
    evaluated: dict[tuple[str, str | None], tuple[float, pd.DataFrame]] = {}
    uses: dict[tuple[str, str | None], int] = {}
    for model, _samples, precision in by_work:
        uses[(model, precision)] = uses.get((model, precision), 0) + 1
    for (model, samples, precision), jobs in by_work.items():
        amount = float(samples if samples is not None else cat.workload(model).default_samples)
        wp = (model, precision)
        if wp in evaluated:
            base, base_df = evaluated[wp]
            df = scale_work(cat, base_df, base, amount, req.site, "buy", req.life_years)
        else:
            work = Work(amount, precision=precision)
            df = evaluate_space(
                cat, model, space=space, site=req.site, purchase="buy", work=work, life_years=req.life_years
            )
            evaluated[wp] = (amount, df)
        uses[wp] -= 1
        if not uses[wp]:
            del evaluated[wp]
        yield jobs, df


def job_modes(cat: Catalog, req: FleetRequest, prune: bool = True, pools: Pools | None = None) -> pd.DataFrame:
    """Exact-model modes of every job in every pool it fits, within its window; dominated modes pruned (module
    docstring). One row per job and mode; ``attrs["fitting_modes"]`` counts the modes before pruning."""
    pools = pools or pools_of(cat, req)
    cat.site(req.site)
    pp = pairs_of(cat, req, pools)
    conf = configurations(cat, req, pp)
    if conf is None:
        return pd.DataFrame()
    frames = []
    fitting = 0
    for jobs, df in evaluated_tables(cat, req, conf.space):
        modes, fits = modes_of_table(cat, req, pp, conf, df, jobs, prune)
        fitting += fits
        if modes is None:
            continue
        for j in jobs:
            mj = modes[modes["slots_needed"].to_numpy() <= len(job_window(req, j))].copy()
            mj["job"] = j.id
            frames.append(mj)
    if not frames:
        return pd.DataFrame()
    out = pd.concat(frames, ignore_index=True)
    out.attrs["fitting_modes"] = fitting  # before pruning
    return out


def modes_of_table(
    cat: Catalog,
    req: FleetRequest,
    pp: Pairs,
    conf: Configurations,
    df: pd.DataFrame,
    jobs: list[Job],
    prune: bool,
) -> tuple[pd.DataFrame | None, int]:
    """The modes of one evaluated table (the jobs of one workload and work), on site clusters and on rentals, before
    each job's window is applied: (modes or None, how many fit the jobs' windows before pruning). A configuration
    is a mode when it fits memory, its layout is valid and it needs no more slots than the longest window; site
    clusters run the allowed caps up to the cluster's limit, rentals the offer's caps up to max_nodes."""
    nodes = df["nodes"].to_numpy(np.int64)
    hours = df["time_to_train_h"].to_numpy(float)
    d = slots_needed(hours, req.slot_hours)
    ok = df["fits_memory"].to_numpy(bool) & df["valid_layout"].to_numpy(bool)
    ok &= d <= max(len(job_window(req, j)) for j in jobs)
    pair_of, cap_of = conf.pair_of, conf.cap_of
    site_sel = ok & conf.caps_ok & (nodes <= pp.site_lim[pair_of])
    rent_caps = np.where(pp.settable[pair_of], conf.caps_ok, cap_of == 1.0)
    rent_sel = ok & pp.rent_ok[pair_of] & rent_caps & (nodes <= req.max_nodes)
    parts = []
    fitting = 0
    for kind, sel in (("site", site_sel), ("rent", rent_sel)):
        idx = np.flatnonzero(sel)
        if not len(idx):
            continue
        part, fits = _kind_modes(cat, req, pp, pair_of, df, d, idx, kind, jobs, prune)
        parts.append(part)
        fitting += fits
    return (pd.concat(parts, ignore_index=True) if parts else None), fitting


def _kind_modes(
    cat: Catalog,
    req: FleetRequest,
    pp: Pairs,
    pair_of: np.ndarray,
    df: pd.DataFrame,
    d: np.ndarray,
    idx: np.ndarray,
    kind: str,
    jobs: list[Job],
    prune: bool,
) -> tuple[pd.DataFrame, int]:
    """The rows ``idx`` of the table as modes of one kind ('site' or 'rent'), with the coefficients they enter the
    MIP with, pruned per pair (one-node modes of a type without owned nodes together, on ``ANY_FABRIC``)."""
    nodes = df["nodes"].to_numpy(np.int64)
    hours = df["time_to_train_h"].to_numpy(float)
    power = df["facility_power_kw"].to_numpy(float)
    energy = df["facility_energy_kwh"].to_numpy(float)
    pr = pair_of[idx]
    if kind == "site":
        e_coef = np.maximum(energy[idx] - nodes[idx] * pp.idle_kw[pr] * hours[idx], 0.0)
        p_coef = np.maximum(power[idx] - nodes[idx] * pp.idle_kw[pr], 0.0)
    else:
        e_coef, p_coef = energy[idx], np.zeros(len(idx))
    # the rent a mode pays on an offer billed per job, nodes x ceil(T / period) (0 elsewhere: nodes and slots price
    # the rest): more nodes may finish in fewer whole periods and pay less
    per_job = pp.per_job[pr] & (kind == "rent")
    rent_coef = np.zeros(len(idx))
    for q in np.unique(pr[per_job]):
        sel = per_job & (pr == q)
        rent_coef[sel] = job_rent_usd(cat.server(pp.pairs[q][0]), nodes[idx][sel], hours[idx][sel])
    X = np.column_stack([nodes[idx], d[idx], e_coef, p_coef, rent_coef])
    fitting = sum(int((d[idx] <= len(job_window(req, j))).sum()) for j in jobs)
    anyfab = (nodes[idx] == 1) & pp.any_pair[pr] & (kind == "site")
    keep = np.ones(len(idx), dtype=bool)
    if prune:
        key = np.where(anyfab, len(pp.pairs) + pp.type_of[pr], pr)
        keep[:] = False
        order = np.argsort(key, kind="stable")
        bounds = np.flatnonzero(np.diff(key[order])) + 1
        for grp in np.split(order, bounds):
            keep[grp[pareto_mask(X[grp])]] = True
    idx, pr, X, anyfab = idx[keep], pr[keep], X[keep], anyfab[keep]
    frame = pd.DataFrame(
        {
            "server": [pp.pairs[q][0] for q in pr],
            "fabric": [ANY_FABRIC if a else pp.pairs[q][1] for q, a in zip(pr, anyfab, strict=True)],
            "gpu": df["gpu"].iloc[idx].to_numpy().astype(str),
            "power_cap": df["power_cap"].to_numpy(float)[idx],
            "nodes": nodes[idx],
            "layout": df["layout"].iloc[idx].to_numpy().astype(str),
            "precision": df["precision"].iloc[idx].to_numpy().astype(str),
            "time_to_train_h": hours[idx],
            "slots_needed": d[idx].astype(np.int64),
            "facility_power_kw": power[idx],
            "facility_energy_kwh": energy[idx],
            "idle_kw": pp.idle_kw[pr],
            "kind": kind,
            "group": [pp.site_group[q] if kind == "site" else f"{pp.pairs[q][0]}|rent" for q in pr],
            "energy_coef_kwh": X[:, 2],
            "power_coef_kw": X[:, 3],
        }
    )
    return frame, fitting
