"""Exact reduction of a priced chunk to the rows that can answer one of the request's questions: per hardware option
and limit, the frontier of each objective, so the MIP sees every candidate that could be optimal, binding or an
alternative."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from planner.checks.request import PlanRequest
from planner.data import Catalog
from planner.plan.candidates import physics_chunks, price_chunk
from planner.plan.formulation import Limits
from planner.plan.limits import (
    LIMIT_NAMES,
    limit_columns,
    limit_values,
    within,
)


class Masks:
    """Per-candidate: does it meet each limit (ok), each limit relaxed by the binding step (relaxed), and can it be
    a plan at all (usable: available, in service)? ``all`` and ``all_but`` include usable."""

    def __init__(self, cand: pd.DataFrame, lim: Limits, req: PlanRequest, cat: Catalog) -> None:
        cols = limit_columns(lim)
        rhs = limit_values(cand, lim, req, cat)
        n = len(cand)
        self.given = [k for k in LIMIT_NAMES if rhs[k] is not None]
        self.values = {k: cand[cols[k]].to_numpy(dtype=float) for k in LIMIT_NAMES}
        self.ok = {k: np.ones(n, dtype=bool) for k in LIMIT_NAMES}
        self.relaxed = {k: np.ones(n, dtype=bool) for k in LIMIT_NAMES}
        for k in self.given:
            self.ok[k] = np.asarray(within(self.values[k], rhs[k], k))
            self.relaxed[k] = np.asarray(within(self.values[k], rhs[k], k, relaxed=True))
        # rows that can be a plan at all (available, in service: candidates.price_chunk), under every mask
        self.usable = cand["usable"].to_numpy(dtype=bool) if "usable" in cand else np.ones(n, dtype=bool)
        self.all = np.logical_and.reduce([self.usable, *(self.ok[k] for k in LIMIT_NAMES)])

    def all_but(self, *skip: str) -> np.ndarray:
        return np.logical_and.reduce([self.usable, *(self.ok[k] for k in LIMIT_NAMES if k not in skip)])


def _option_groups(cand: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(group of each row, first row of each group) for contiguous runs of one hardware option."""
    n = len(cand)
    change = np.zeros(n, dtype=bool)
    if n:
        change[0] = True
    for col in HARDWARE_KEY:
        s = cand[col]
        v = np.asarray(s.cat.codes) if isinstance(s.dtype, pd.CategoricalDtype) else s.to_numpy()
        change[1:] |= v[1:] != v[:-1]
    return np.cumsum(change) - 1, np.flatnonzero(change)


def _group_argmin(v: np.ndarray, mask: np.ndarray, gid: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per group, the first row (fewest nodes) among those in `mask` with the least v."""
    mask = mask & np.isfinite(v)
    if not mask.any():
        return np.zeros(0, dtype=np.int64)
    w = np.where(mask, v, np.inf)
    gmin = np.minimum.reduceat(w, starts)
    lengths = np.diff(np.append(starts, len(w)))
    # a group with no row in the mask has gmin inf, which its rows (all inf) equal: the mask keeps them out
    idx = np.flatnonzero((w == np.repeat(gmin, lengths)) & mask)
    first = np.ones(len(idx), dtype=bool)
    first[1:] = gid[idx[1:]] != gid[idx[:-1]]
    return idx[first]


def frontier(a: np.ndarray, b: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Rows in `mask` not dominated in (a, b) (both minimised), one per point, a ascending."""
    idx = np.flatnonzero(mask & np.isfinite(a) & np.isfinite(b))
    if not idx.size:
        return idx
    idx = idx[np.lexsort((b[idx], a[idx]))]
    bb = b[idx]
    prev = np.minimum.accumulate(bb)
    keep = np.ones(len(idx), dtype=bool)
    keep[1:] = bb[1:] < prev[:-1]
    return idx[keep]


def scan(
    cat: Catalog,
    req: PlanRequest,
    lo: int,
    hi: int,
    reducer: Any,
    timings: dict[str, float],
    stop_when_found: bool = False,
) -> tuple[pd.DataFrame, int]:
    """Candidates at every node count lo..hi, each chunk reduced to the rows `reducer(chunk)` selects (an exact
    reduction: the union answers the same questions as the whole table). Returns (kept rows, rows priced)."""
    parts: list[pd.DataFrame] = []
    priced = 0
    for phys in physics_chunks(cat, req, lo, hi, timings):
        t0 = time.perf_counter()
        cand = price_chunk(cat, req, phys)
        priced += int(cand["usable"].sum()) if len(cand) else 0
        if len(cand):
            keep = reducer(cand)
            if len(keep):
                parts.append(cand.iloc[np.unique(keep)])
        timings["price_reduce_s"] = timings.get("price_reduce_s", 0.0) + time.perf_counter() - t0
        if stop_when_found and parts:
            break
    if not parts:
        return pd.DataFrame(), priced
    kept = parts[0] if len(parts) == 1 else pd.concat(parts)
    return kept.reset_index(drop=True), priced


def solve_reducer(cat: Catalog, req: PlanRequest, lim: Limits, column: str) -> Any:
    """Per hardware option: the best plan under all limits; under all limits with each one relaxed by the
    binding step (binding); and the least value of each limit's column under all the others (relaxations)."""

    def reduce(cand: pd.DataFrame) -> np.ndarray:
        gid, starts = _option_groups(cand)
        m = Masks(cand, lim, req, cat)
        obj = cand[column].to_numpy(dtype=float)
        picks = [_group_argmin(obj, m.all, gid, starts)]
        for k in m.given:
            others = m.all_but(k)
            picks.append(_group_argmin(obj, others & m.relaxed[k], gid, starts))
            picks.append(_group_argmin(m.values[k], others, gid, starts))
        return np.concatenate(picks)

    return reduce


HARDWARE_KEY = ("server", "fabric", "power_cap", "site", "purchase")


def reduce_pool(
    cand: pd.DataFrame, column: str, epsilon: Sequence[tuple[str, float]] = (), exclude: Sequence[int] = ()
) -> np.ndarray:
    """Exact presolve for the single-plan MIP: positions of the candidates that can be optimal.

    Every constraint involves only the chosen plan, so a candidate that breaks one on its own can never
    be chosen (the caller passes candidates that meet every limit; the epsilon bounds and exclusions are
    applied here); among the remaining candidates of one hardware option (server, fabric, cap, site,
    purchase) only the lowest objective can be optimal. What is left is at most one candidate per hardware
    option."""
    ok = np.ones(len(cand), dtype=bool)
    for col, bound in epsilon:
        ok &= cand[col].to_numpy(dtype=float) <= bound
    if len(exclude):
        ok[np.asarray(exclude, dtype=int)] = False
    idx = np.flatnonzero(ok)
    if idx.size == 0:
        return idx
    sub = cand.iloc[idx]
    order = np.lexsort((sub["nodes"].to_numpy(), sub[column].to_numpy(dtype=float)))
    key = np.zeros(len(sub), dtype=np.int64)
    for col in HARDWARE_KEY:  # one integer per hardware option
        codes = np.asarray(pd.Categorical(sub[col]).codes, dtype=np.int64)
        key = key * (int(codes.max()) + 2) + codes + 1
    _, first = np.unique(key[order], return_index=True)
    return np.asarray(np.sort(idx[order[first]]))
