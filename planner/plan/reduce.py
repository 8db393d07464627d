"""Exact reduction of a priced chunk to the rows that can answer one of the request's questions: per hardware option
and limit, the frontier of each objective, so the MIP sees every candidate that could be optimal, binding or an
alternative."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from planner.checks.request import PlanRequest
from planner.checks.search import node_step
from planner.data import Catalog
from planner.plan.candidates import (
    column_array,
    column_arrays,
    physics_chunks,
    price_chunk,
    rack_units,
    table_fact,
    with_run_terms_h,
)
from planner.plan.formulation import Limits
from planner.plan.limits import (
    LIMIT_NAMES,
    limit_bounds,
    limit_columns,
    threshold,
)


class Masks:
    """Per-candidate: does it meet each limit (ok), each limit relaxed by the binding step (relaxed), and can it be
    a plan at all (usable: available, in service)? ``all`` and ``all_but`` include usable. A limit the request does
    not set (not in ``given``) holds for every candidate: its ok and relaxed masks are one shared all-true array
    (read-only), and the masks combine the given limits only. ``nested[k]``: every candidate that meets limit k
    meets it relaxed (its relaxed threshold is at least its own: the bounds are not negative)."""

    def __init__(self, cand: pd.DataFrame, lim: Limits, req: PlanRequest, cat: Catalog) -> None:
        cols = limit_columns(lim)
        n = len(cand)
        bounds = limit_bounds(cand, lim, req, cat)
        self.given = [k for k in LIMIT_NAMES if bounds[k] is not None]
        self.values = _ColumnValues(cand, cols)
        true = np.ones(n, dtype=bool)
        true.flags.writeable = False
        self.ok = dict.fromkeys(LIMIT_NAMES, true)
        self.relaxed = dict.fromkeys(LIMIT_NAMES, true)
        self.nested = dict.fromkeys(LIMIT_NAMES, True)
        for k in self.given:
            bound, rows = bounds[k]
            # integer limits compare the integer column (exact, as its floats are)
            values = column_arrays(cand)[cols[k]] if k in ("nodes", "rack") else self.values[k]
            strict, loose = threshold(bound, k), threshold(bound, k, relaxed=True)
            self.ok[k] = _at_most(values, strict, rows)
            self.relaxed[k] = _at_most(values, loose, rows)
            self.nested[k] = bool(np.all(np.asarray(loose) >= np.asarray(strict)))
        # rows that can be a plan at all (available, in service: candidates.price_chunk), under every mask
        self.usable = np.asarray(column_arrays(cand)["usable"], dtype=bool) if "usable" in cand else true
        self.all = self.all_but()

    def all_but(self, *skip: str) -> np.ndarray:
        out = self.usable.copy()
        for k in self.given:
            if k not in skip:
                out &= self.ok[k]
        return out


class _ColumnValues(dict[str, np.ndarray]):
    """Each limit's candidate column as floats, read from the table on first use."""

    def __init__(self, cand: pd.DataFrame, columns: dict[str, str]) -> None:
        super().__init__()
        self._cand, self._columns = cand, columns

    def __missing__(self, k: str) -> np.ndarray:
        v = self[k] = np.asarray(column_arrays(self._cand)[self._columns[k]], dtype=float)
        return v


def _at_most(values: np.ndarray, threshold: Any, rows: np.ndarray | None) -> np.ndarray:
    """values <= threshold, where ``rows`` (when given) picks each row's entry of an array of thresholds (one
    number where they are all equal)."""
    if rows is not None:
        threshold = threshold[0] if (threshold == threshold[0]).all() else np.take(threshold, rows.astype(np.intp))
    return np.asarray(values <= threshold)


class OptionGroups:
    """The contiguous runs of one hardware option (HARDWARE_KEY) in a priced table, nodes ascending within each
    (candidates.price_chunk orders rows so): each row's group (``gid``) and each group's first row (``starts``).
    Computed once per priced table (``option_groups``)."""

    def __init__(self, cand: pd.DataFrame) -> None:
        n = len(cand)
        change = np.zeros(n, dtype=bool)
        if n:
            change[0] = True
        arrays = column_arrays(cand)
        for col in HARDWARE_KEY:
            v = arrays[col]
            change[1:] |= v[1:] != v[:-1]
        self.gid = np.cumsum(change) - 1
        self.starts = np.flatnonzero(change)
        self.lengths = np.diff(np.append(self.starts, n))
        self.rows = np.arange(n)

    def argmin(self, v: np.ndarray, mask: np.ndarray, all_finite: bool | None = None) -> np.ndarray:
        """Per group, the first row (fewest nodes) among those in `mask` with the least finite v (``all_finite``:
        whether every v is finite, where the caller knows)."""
        return self.least(v, mask, all_finite).rows()

    def least(self, v: np.ndarray, mask: np.ndarray, all_finite: bool | None = None) -> Least:
        """``argmin`` per group, with the least value (``Least``)."""
        if not len(v):
            return Least(np.zeros(0), np.zeros(0, dtype=np.int64))
        if not (all_finite if all_finite is not None else np.isfinite(v).all()):
            mask = mask & np.isfinite(v)
        w = np.where(mask, v, np.inf)
        least = np.minimum.reduceat(w, self.starts)
        least[least == np.inf] = np.nan  # a group with no row in the mask: its rows (all inf) match nothing
        idx = np.flatnonzero(w == np.repeat(least, self.lengths))
        g = self.gid[idx]
        keep = np.ones(len(idx), dtype=bool)
        keep[1:] = g[1:] != g[:-1]  # ties: the first row of its group
        row = np.full(len(self.starts), -1, dtype=np.int64)
        row[g[keep]] = idx[keep]
        return Least(least, row)

    def argmin_with(self, v: np.ndarray, base: Least, extra: np.ndarray, all_finite: bool | None = None) -> np.ndarray:
        """``argmin`` over the rows of ``base``'s mask and the rows in ``extra`` together, from ``base`` (that mask's
        ``least``) and the rows of ``extra`` alone: the least value of a union is the lesser of the two least values,
        and of equal values the first row. Few rows in ``extra`` cost little."""
        e = np.flatnonzero(extra)
        if not (all_finite if all_finite is not None else np.isfinite(v[e]).all()):
            e = e[np.isfinite(v[e])]
        row = base.row.copy()
        if e.size:
            ve, ge = v[e], self.gid[e]
            order = np.lexsort((e, ve, ge))  # by group, then value, then row: the first of each group is its argmin
            e, ve, ge = e[order], ve[order], ge[order]
            first = np.ones(len(e), dtype=bool)
            first[1:] = ge[1:] != ge[:-1]
            e, ve, ge = e[first], ve[first], ge[first]
            held, at = base.value[ge], base.row[ge]
            better = (at < 0) | (ve < held) | ((ve == held) & (e < at))
            row[ge[better]] = e[better]
        return row[row >= 0]

    def first(self, mask: np.ndarray) -> np.ndarray:
        """Per group, the first row (fewest nodes) in `mask`: its least value of a column that grows with the node
        count within a group (nodes, rack units), as ``argmin`` finds it."""
        if not len(mask):
            return np.zeros(0, dtype=np.int64)
        n = len(mask)
        first = np.minimum.reduceat(np.where(mask, self.rows, n), self.starts)
        return first[first < n]


class Least:
    """Per option group: the least value among the rows of a mask (nan where none, ``value``) and the first row that
    has it (-1 where none, ``row``)."""

    def __init__(self, value: np.ndarray, row: np.ndarray) -> None:
        self.value, self.row = value, row

    def rows(self) -> np.ndarray:
        """The rows found, ascending."""
        return self.row[self.row >= 0]


def option_groups(cand: pd.DataFrame) -> OptionGroups:
    """``OptionGroups`` of a priced table, kept while the table lives (a priced chunk is cached: candidates.price_chunk)
    so that every request reducing it again reuses them."""
    return table_fact(cand, "groups", OptionGroups)


def frontier(a: np.ndarray, b: np.ndarray, mask: np.ndarray, tie: np.ndarray | None = None) -> np.ndarray:
    """Rows in `mask` not dominated in (a, b) (both minimised), one per point, a ascending; of rows at the same
    point, the first by ``tie`` (then by position)."""
    idx = np.flatnonzero(mask & np.isfinite(a) & np.isfinite(b))
    if not idx.size:
        return idx
    keys = (b[idx], a[idx]) if tie is None else (tie[idx], b[idx], a[idx])
    idx = idx[np.lexsort(keys)]
    bb = b[idx]
    prev = np.minimum.accumulate(bb)
    keep = np.ones(len(idx), dtype=bool)
    keep[1:] = bb[1:] < prev[:-1]
    return idx[keep]


def physics_may_meet(cat: Catalog, req: PlanRequest, lim: Limits, phys: pd.DataFrame) -> bool:
    """Whether some row of a physics chunk may meet ``lim``: a condition every candidate that meets all of ``lim``
    (``Masks.all``) meets, read from the physics before it is priced -- the deadline, the power limit at one of the
    request's sites and the rack units are computed as pricing computes them (time with the request's start-up and
    evaluations, IT power x the site's PUE, nodes x the server's rack units) and compared as ``Masks`` compares them;
    the budget, availability and service life are left out (they need prices). A chunk for which it is False holds
    no candidate meeting ``lim`` and need not be priced."""
    if not len(phys):
        return False
    physical = column_arrays(phys)
    ok = np.ones(len(phys), dtype=bool)
    if lim.deadline_h is not None:
        hours = with_run_terms_h(cat, req, dict(physical))
        ok &= _at_most(hours, threshold(lim.deadline_h, "deadline"), None)
    if lim.max_rack_units is not None:
        ok &= _at_most(rack_units(cat, phys), threshold(lim.max_rack_units, "rack"), None)
    if lim.power_kw is not None and ok.any():
        it_kw = np.asarray(physical["power_kw"], dtype=float)
        at_some_site = np.zeros(len(phys), dtype=bool)
        for site in req.sites:  # the limit where the request sets one, else each site's envelope (limit_bounds)
            envelope = lim.power_kw if req.power_kw is not None else cat.site(site).power_envelope_kw
            at_some_site |= _at_most(it_kw * cat.site(site).pue, threshold(envelope, "power"), None)
        ok &= at_some_site
    return bool(ok.any())


def scan(
    cat: Catalog,
    req: PlanRequest,
    lo: int,
    hi: int,
    reducer: Any,
    timings: dict[str, float],
    stop_when_found: bool = False,
    may_hold: Callable[[pd.DataFrame], bool] | None = None,
) -> tuple[pd.DataFrame, int]:
    """Candidates at every node count lo..hi, each chunk reduced to the rows `reducer(chunk)` selects (an exact
    reduction: the union answers the same questions as the whole table). Returns (kept rows, rows priced).
    ``may_hold(physics chunk)``: False where the reducer would select no row of the chunk (a necessary condition,
    ``physics_may_meet``): the chunk is not priced."""
    parts: list[tuple[pd.DataFrame, np.ndarray]] = []  # (priced chunk, the positions kept)
    priced = 0
    within = req.max_nodes + node_step(req.max_nodes)  # the counts a plan is scanned at (solve)
    for phys in physics_chunks(cat, req, lo, hi, timings):
        if may_hold is not None and not may_hold(phys):
            continue
        t0 = time.perf_counter()
        # priced chunks beyond them (an infeasible request's explanation) are not kept: they would push out these
        cand = price_chunk(cat, req, phys, keep=not len(phys) or int(phys["nodes"].max()) <= within)
        priced += table_fact(cand, "usable", _usable_rows) if len(cand) else 0
        if len(cand):
            keep = reducer(cand)
            if len(keep):
                parts.append((cand, np.unique(keep)))
        timings["price_reduce_s"] = timings.get("price_reduce_s", 0.0) + time.perf_counter() - t0
        if stop_when_found and parts:
            break
    if not parts:
        return pd.DataFrame(), priced
    return kept_table(parts), priced


def kept_table(parts: list[tuple[pd.DataFrame, np.ndarray]]) -> pd.DataFrame:
    """The rows kept of each priced chunk, (table, positions) in order, as one table indexed 0.. with one block per
    dtype (the pool, the MIP's candidates and the alternatives are taken from it block by block): each column
    gathered and joined in NumPy (categorical ones as codes), the table built once. Chunks whose columns differ
    in name or dtype are joined by pandas."""
    first = parts[0][0]
    if any(list(t.columns) != list(first.columns) or not t.dtypes.equals(first.dtypes) for t, _ in parts[1:]):
        return pd.concat([t.iloc[i] for t, i in parts], ignore_index=True).copy()
    arrays = [column_arrays(t) for t, _ in parts]
    cols: dict[str, Any] = {}
    for c, dtype in first.dtypes.items():
        joined = _joined([a[c][i] for a, (_, i) in zip(arrays, parts, strict=True)])
        categorical = isinstance(dtype, pd.CategoricalDtype)
        cols[c] = pd.Categorical.from_codes(joined, dtype=dtype, validate=False) if categorical else joined
    return pd.DataFrame(cols)


def _joined(arrays: list[np.ndarray]) -> np.ndarray:
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


def _usable_rows(cand: pd.DataFrame) -> int:
    """The rows of a priced table that can be a plan at all (``usable``)."""
    return int(cand["usable"].to_numpy(dtype=bool).sum())


def solve_reducer(cat: Catalog, req: PlanRequest, lim: Limits, column: str) -> Any:
    """Per hardware option: the best plan under all limits; under all limits with each one relaxed by the
    binding step (binding); and the least value of each limit's column under all the others (relaxations).

    The relaxations are what the explanation of an infeasible request reads (plan.explain): they are kept from the
    chunks scanned before the first that has a plan meeting every limit, and not after -- from then on the request
    is feasible, and the rows that answer its questions (the MIP's candidates, the alternatives, the binding limits)
    are the others."""
    feasible = False

    def reduce(cand: pd.DataFrame) -> np.ndarray:
        nonlocal feasible
        groups = option_groups(cand)
        m = Masks(cand, lim, req, cat)
        obj = np.asarray(column_arrays(cand)[column], dtype=float)
        finite = bool(np.isfinite(obj).all())
        best = groups.least(obj, m.all, finite)
        picks = [best.rows()]
        relaxations = not feasible
        feasible = feasible or bool(len(picks[0]))
        for k in m.given:
            others = m.all_but(k)
            if m.nested[k]:  # others & relaxed = all and the few rows that meet k only relaxed
                picks.append(groups.argmin_with(obj, best, others & m.relaxed[k] & ~m.ok[k], finite))
            else:
                picks.append(groups.argmin(obj, others & m.relaxed[k], finite))
            if relaxations:
                # nodes and rack units grow with the node count within a group: the least is the first row
                picks.append(groups.first(others) if k in ("nodes", "rack") else groups.argmin(m.values[k], others))
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
    order = np.lexsort((cand["nodes"].to_numpy()[idx], cand[column].to_numpy(dtype=float)[idx]))
    _, first = np.unique(option_codes(cand)[idx][order], return_index=True)
    return np.asarray(np.sort(idx[order[first]]))


def option_codes(cand: pd.DataFrame) -> np.ndarray:
    """One integer per candidate naming its hardware option (HARDWARE_KEY): equal integers, equal options. Computed
    once per table object (the pool a solve presolves, cuts and lists alternatives from)."""
    codes: np.ndarray = table_fact(cand, "options", _option_codes)
    return codes


def _option_codes(cand: pd.DataFrame) -> np.ndarray:
    """``option_codes``, computed."""
    key = np.zeros(len(cand), dtype=np.int64)
    for col in HARDWARE_KEY:
        codes = np.unique(column_array(cand[col]), return_inverse=True)[1].astype(np.int64)
        key = key * (int(codes.max(initial=0)) + 2) + codes + 1
    return key
