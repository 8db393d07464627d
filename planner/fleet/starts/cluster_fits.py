"""Whether every job runs on one cluster of ``cap`` nodes, asked of HiGHS exactly.

The time-indexed feasibility MIP: z_k in {0, 1} job j runs in mode k (k in cands[j]); y_kt in {0, 1} mode k runs
in slot t (t in window[j]):
    (a) sum_{k in cands[j]} z_k = 1 for each job;
    (b) sum_t y_kt = d_k z_k for each mode;
    (c) sum_k n_k y_kt <= cap for each slot;
    (d) y_kt <= z_k (implied by (b) in integers; it tightens the LP relaxation HiGHS bounds with).
Its integer points are exactly the packings of packing.py (each job in one mode on d_k distinct slots of its
window, no slot over cap); the coefficients are small integers. It proves sizes infeasible fast where the repair
search cannot tell, and rarely finds a packing within seconds where the repair search does
(docs/fleet-bound.md, "Packing").
"""

from __future__ import annotations

import highspy
import numpy as np

from planner.fleet.starts.packing import Packing
from planner.solver import process_threads


class _Rows:
    """The rows of the feasibility MIP as HiGHS takes them: per row its bounds, columns and coefficients."""

    def __init__(self) -> None:
        self.lo: list[float] = []
        self.hi: list[float] = []
        self.idx: list[np.ndarray] = []
        self.val: list[np.ndarray] = []

    def add(self, lo: float, hi: float, idx: np.ndarray, val: np.ndarray) -> None:
        self.lo.append(lo)
        self.hi.append(hi)
        self.idx.append(idx)
        self.val.append(val)


def cluster_fits(
    cands: dict[str, np.ndarray],
    nodes: np.ndarray,
    d: np.ndarray,
    window: dict[str, np.ndarray],
    cap: int,
    time_limit_s: float,
) -> tuple[bool | None, Packing | None]:
    """Whether every job runs on one cluster of ``cap`` nodes (module docstring): (False, None) when HiGHS proves
    that no packing exists, (True, packing) when it finds one (the same form as ``pack_cluster``'s), (None, None)
    when it decides neither within ``time_limit_s``. HiGHS runs with the thread count of the process's earlier
    solves (``planner.solver.process_threads``: its thread pool is process-wide, and another count fails the
    solve); a solve that errs is undecided."""
    jobs = list(cands)
    if not jobs:
        return True, {}
    if any(not len(cands[j]) for j in jobs):  # a job with no mode runs on no cluster
        return False, None
    ks = np.concatenate([np.asarray(cands[j], dtype=np.int64) for j in jobs])
    y_mode: list[int] = []  # z column of each y column
    y_slot: list[int] = []
    starts = [0]
    for j in jobs:
        for _k in cands[j]:
            y_mode += [len(starts) - 1] * len(window[j])
            y_slot += [int(t) for t in window[j]]
            starts.append(len(y_mode))
    y_mode_a, y_slot_a = np.asarray(y_mode, dtype=np.int64), np.asarray(y_slot, dtype=np.int64)
    rows = _feasibility_rows(cands, jobs, ks, nodes, d, y_mode_a, y_slot_a, starts, cap)
    h = _highs(rows, len(ks) + len(y_mode), time_limit_s)
    if h.run() == highspy.HighsStatus.kError:
        return None, None
    if h.getModelStatus() == highspy.HighsModelStatus.kInfeasible:
        return False, None
    if h.getInfo().primal_solution_status != 2:  # no feasible point (kSolutionStatusFeasible = 2)
        return None, None
    x = np.asarray(h.getSolution().col_value)
    n_z = len(ks)
    out: Packing = {}
    i = 0
    for j in jobs:
        for k in cands[j]:
            if x[i] > 0.5:
                sl = sorted(int(y_slot_a[c]) for c in range(starts[i], starts[i + 1]) if x[n_z + c] > 0.5)
                out[j] = (int(k), sl)
            i += 1
    return True, out


def _feasibility_rows(
    cands: dict[str, np.ndarray],
    jobs: list[str],
    ks: np.ndarray,
    nodes: np.ndarray,
    d: np.ndarray,
    y_mode: np.ndarray,
    y_slot: np.ndarray,
    starts: list[int],
    cap: int,
) -> _Rows:
    """Rows (a)-(d) of the module docstring over the columns z (one per mode of ``ks``) then y (one per mode and
    slot of its job's window: ``y_mode``, ``y_slot``; mode i's y columns are starts[i]..starts[i + 1])."""
    n_z = len(ks)
    rows = _Rows()
    col = 0
    for j in jobs:  # (a)
        m_j = len(cands[j])
        rows.add(1.0, 1.0, np.arange(col, col + m_j), np.ones(m_j))
        col += m_j
    for i in range(n_z):  # (b): sum_t y - d_k z = 0
        ys = np.arange(n_z + starts[i], n_z + starts[i + 1])
        rows.add(0.0, 0.0, np.concatenate([ys, [i]]), np.concatenate([np.ones(len(ys)), [-float(d[ks[i]])]]))
    for c in range(len(y_mode)):  # (d) y_kt <= z_k
        rows.add(-highspy.kHighsInf, 0.0, np.asarray([n_z + c, y_mode[c]]), np.asarray([1.0, -1.0]))
    for t in np.unique(y_slot):  # (c)
        ys = np.flatnonzero(y_slot == t)
        rows.add(-highspy.kHighsInf, float(cap), n_z + ys, nodes[ks[y_mode[ys]]].astype(float))
    return rows


def _highs(rows: _Rows, n: int, time_limit_s: float) -> highspy.Highs:
    """A HiGHS instance holding the feasibility MIP: n binary columns, the rows, no objective."""
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("time_limit", max(0.01, float(time_limit_s)))
    threads = process_threads()
    if threads is not None:  # the pool's own count: another one fails the solve
        h.setOptionValue("threads", threads)
    h.addVars(n, np.zeros(n), np.ones(n))
    h.changeColsIntegrality(n, np.arange(n, dtype=np.int32), np.full(n, highspy.HighsVarType.kInteger))
    counts = np.asarray([len(i) for i in rows.idx], dtype=np.int32)
    h.addRows(
        len(rows.idx),
        np.asarray(rows.lo),
        np.asarray(rows.hi),
        int(counts.sum()),
        np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int32),
        np.concatenate(rows.idx).astype(np.int32),
        np.concatenate(rows.val),
    )
    return h
