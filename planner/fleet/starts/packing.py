"""Packing every job onto one cluster of ``cap`` nodes: a repair search, its size bound and the size search.

A packing puts each job in one of its modes (``cands[j]``, indices into ``nodes`` and ``d``) on d_k distinct slots
of its window, with at most ``cap`` nodes busy in any slot. ``pack_cluster`` searches for one (min-conflicts
repair with breakout weights), ``pack_size_bound`` bounds the fewest nodes any packing needs from below,
``smallest_packing`` finds the smallest size the search packs, and ``earliest_due_first`` re-lays a packing so that
penalised jobs are as little late as the others allow. HiGHS answers the same question exactly: cluster_fits.py.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TypeVar

import numpy as np

from planner.fleet.request import Job
from planner.fleet.tuning import DEFAULT_TUNING

Packing = dict[str, tuple[int, list[int]]]  # job -> (mode, its slots in ascending order)
T = TypeVar("T")


def pack_cluster(
    cands: dict[str, np.ndarray],
    nodes: np.ndarray,
    d: np.ndarray,
    window: dict[str, np.ndarray],
    slots: int,
    cap: int,
    order: list[str],
    iters: int,
    rng: np.random.Generator,
    deadline: float = math.inf,
    *,
    noise: float = DEFAULT_TUNING.pack_noise,
    pair: float = DEFAULT_TUNING.pack_pair,
) -> Packing | None:
    """Every job of ``order`` on one cluster of ``cap`` nodes, or None (also when ``time.perf_counter()`` passes
    ``deadline``): each job in one of its modes ``cands[j]`` on d_k of its window's slots, at most ``cap`` nodes busy
    in any slot (min-conflicts repair with breakout weights). Jobs are placed in order, each in the mode and slots
    that add the least weighted overload (nodes above ``cap`` times the slot's weight, every weight 1 at first),
    then the least node-slots; then, while a slot is overloaded, the weight of every overloaded slot grows by 1 (so
    that the search leaves a local minimum by clearing the slots that stay overloaded) and a job running in one is
    taken out and placed again the same way -- in ``pair`` of the moves together with another job running in that
    slot, the two placed again in random order; in ``noise`` of the placements in a random mode on its least busy
    slots -- for at most ``iters`` moves. The search is randomised: at a size where a packing exists it may miss,
    and fresh searches (another ``rng`` state) may find it."""
    usage = np.zeros(slots)
    weight = np.ones(slots)
    fit = {j: ks[nodes[ks] <= cap] for j, ks in cands.items()}
    if any(not len(ks) for ks in fit.values()):
        return None
    chosen: dict[str, tuple[int, np.ndarray]] = {}

    def place(j: str, noisy: bool) -> tuple[int, np.ndarray]:
        ks, win = fit[j], window[j]
        u = usage[win]
        if noisy:
            k = int(ks[rng.integers(len(ks))])
            return k, win[np.argsort(u + 0.5 * rng.random(len(u)), kind="stable")[: d[k]]]
        n = nodes[ks][:, None]
        w = weight[win]
        marg = (np.maximum(0.0, u[None, :] + n - cap) - np.maximum(0.0, u - cap)[None, :]) * w[None, :]
        over = np.take_along_axis(np.cumsum(np.sort(marg, axis=1), axis=1), (d[ks] - 1)[:, None], axis=1)[:, 0]
        k = int(ks[np.lexsort((nodes[ks] * d[ks], over))[0]])
        m_k = (np.maximum(0.0, u + nodes[k] - cap) - np.maximum(0.0, u - cap)) * w
        return k, win[np.lexsort((win, u, m_k))[: d[k]]]  # least overload, then least busy, then earliest

    for j in order:
        k, sl = place(j, False)
        usage[sl] += nodes[k]
        chosen[j] = (k, sl)
    for it in range(iters + 1):
        over = usage > cap
        if not over.any():
            return {j: (k, sorted(int(t) for t in sl)) for j, (k, sl) in chosen.items()}
        if it % 64 == 0 and time.perf_counter() > deadline:
            return None
        weight[over] += 1.0
        bad = [j for j in order if over[chosen[j][1]].any()]
        j = bad[int(rng.integers(len(bad)))]
        group = [j]
        if rng.random() < pair:  # and another job busy in one of its overloaded slots
            sl = chosen[j][1]
            t = int(sl[over[sl]][0])
            others = [i for i in order if i != j and t in chosen[i][1]]
            if others:
                group.append(others[int(rng.integers(len(others)))])
                rng.shuffle(group)
        for i in group:
            k, sl = chosen[i]
            usage[sl] -= nodes[k]
        for i in group:
            k, sl = place(i, rng.random() < noise)
            usage[sl] += nodes[k]
            chosen[i] = (k, sl)
    return None


def pack_size_bound(area: dict[str, int], fewest: int, window: dict[str, np.ndarray]) -> int:
    """A lower bound on the nodes of any cluster that runs every job (the energetic-interval reasoning of cut (13)):
    the jobs whose windows lie inside an interval I = [a, b] run all their node-slots in it, at least ``area[j]``
    each (their modes' fewest node-slots), so a cluster of n nodes needs n |I| >= sum of those areas; the bound is
    the largest ceil(sum / |I|) over the intervals from a window start to a window end, and at least ``fewest``
    (the largest job's fewest nodes). The whole horizon is one such interval, so it is never below the fluid bound
    ceil(sum of areas / slots). Windows are runs of consecutive slots."""
    jobs = list(area)
    if not jobs:
        return fewest
    rel = np.asarray([int(window[j][0]) for j in jobs], dtype=np.int64)
    end = np.asarray([int(window[j][-1]) for j in jobs], dtype=np.int64)
    a_j = np.asarray([area[j] for j in jobs], dtype=np.int64)
    ends = np.unique(end)
    best = fewest
    for a in np.unique(rel):
        b = ends[ends >= a]
        inside = (rel[None, :] >= a) & (end[None, :] <= b[:, None])  # interval x job: the job's window in [a, b]
        need = inside.astype(np.int64) @ a_j
        best = max(best, int((-(-need // (b - a + 1))).max()))
    return best


def smallest_packing(
    packs: Callable[[int], T | None], lo: int, hi: int, in_time: Callable[[], bool]
) -> tuple[int, T] | None:
    """The smallest size in [lo, hi] at which ``packs(size)`` finds a packing (not None), and that packing, by
    galloping up from ``lo`` (lo, lo + 1, lo + 3, lo + 7, ..., hi last: the step doubles) to the first size that
    packs, then bisecting between it and the last size that did not; None when no size up to ``hi`` packs or
    ``in_time()`` turns false before one does (when it turns false while bisecting, the smallest size found so far
    is returned). ``packs`` is a repair search that may fail at a size where a packing exists, so the size is the
    smallest found, not proved: about 2 log2(size - lo) tries instead of size - lo climbing one at a time."""
    failed, cap, step = lo - 1, lo, 1
    found: tuple[int, T] | None = None
    while cap <= hi and in_time():
        got = packs(cap)
        if got is not None:
            found = (cap, got)
            break
        failed = cap
        if cap == hi:
            return None
        cap, step = min(hi, cap + step), 2 * step
    if found is None:
        return None
    while found[0] - failed > 1 and in_time():
        mid = (failed + found[0]) // 2
        got = packs(mid)
        if got is None:
            failed = mid
        else:
            found = (mid, got)
    return found


def earliest_due_first(
    packed: Packing,
    nodes: np.ndarray,
    d: np.ndarray,
    window: dict[str, np.ndarray],
    jobs: dict[str, Job],
    slots: int,
    cap: int,
    late_usd: Callable[[str, int], float],
) -> Packing:
    """The packing re-laid in earliest-due-first order (penalised jobs first among equal due slots), each job's
    mode kept and put on the earliest slots of its window with room for it within ``cap`` nodes; returned when
    every job fits and the lateness it pays is lower, else the packing as it was. The repair search places jobs
    wherever they fit, so a job with a penalty may wait behind one that could have run later."""
    usage = np.zeros(slots)
    out: Packing = {}
    for j in sorted(packed, key=lambda j: (jobs[j].due_slot, -(jobs[j].penalty_usd_per_slot or 0.0), j)):
        k = packed[j][0]
        win = window[j]
        sl = [int(t) for t in win[cap - usage[win] >= nodes[k]][: d[k]]]
        if len(sl) < d[k]:
            return packed
        out[j] = (k, sl)
        usage[sl] += nodes[k]
    before = sum(late_usd(j, max(sl)) for j, (_k, sl) in packed.items())
    after = sum(late_usd(j, max(sl)) for j, (_k, sl) in out.items())
    return out if after < before - 1e-9 * max(1.0, before) else packed
