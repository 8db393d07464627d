"""A local search on the start: each job on a bought cluster moved to where it lowers the cluster's peak.

A bought site cluster is paid for its peak use, so each job on it in turn is moved to the mode of that cluster
(same type; the fabric it is bought on, or a one-node mode) and the slots of its window that make the cluster's
(capex share + idle energy) + the job's energy and lateness least, the other jobs held where they are: for a mode
of n nodes and d slots the best slots are the d least busy of the window (earliest first), which give the cluster
a peak of max(busiest slot of the others, d-th least busy + n). A move is made only when it keeps the cluster
within ``max_nodes`` and the site's power (jobs above idle + idle power of every node bought or kept, the resized
cluster's included) within the envelope in every slot, so every move made is kept: each intermediate plan is a
plan. Clusters holding owned nodes, rentals and budgets are left alone (their jobs stay).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from planner.data import Catalog
from planner.fleet.billing import owned_capex_usd
from planner.fleet.evaluate import objective_weights
from planner.fleet.formulation import FleetMIP, Index
from planner.fleet.modes import ANY_FABRIC
from planner.fleet.request import FleetRequest, Job
from planner.fleet.starts.state import (
    StartPlan,
    StartState,
    current_plan,
    mode_arrays,
    plan_value,
    set_plan_start,
)
from planner.fleet.tuning import DEFAULT_TUNING, FleetTuning


def flatten_start(
    mip: FleetMIP,
    cat: Catalog,
    req: FleetRequest,
    state: StartState,
    time_limit_s: float,
    tuning: FleetTuning = DEFAULT_TUNING,
) -> dict[str, float]:
    """A better start by local search on the current one (module docstring): in ``fleet()`` the restricted MIP's
    plan, before ``squeeze_start``; or the greedy plan when ``evaluate_fleet`` finds it within every rule. Rounds
    over the movable clusters repeat while one lowers the cost, within ``time_limit_s``. The result replaces the
    start only when ``evaluate_fleet`` finds it a plan (capacity, fabric, power, budget) of lower value, so it is a
    plan of the full MIP. Returns flatten_s, and flatten_objective (the start's value after it) and flatten_moves
    (jobs moved) when it improved the start."""
    t0 = time.perf_counter()
    out: dict[str, float] = {}
    plan = current_plan(mip)
    # a start not known to be a plan (the greedy's) is one when evaluate_fleet finds it within every rule
    before = plan_value(cat, req, mip.index, plan) if plan is not None and req.budget_usd is None else None
    if plan is None or before is None:
        out["flatten_s"] = time.perf_counter() - t0
        return out
    search = _Flatten.from_plan(cat, req, mip.index, plan, tuning)
    improved = True
    while improved and time.perf_counter() - t0 < time_limit_s:
        improved = False
        for p, f in search.movable.items():
            improved = search.flatten_cluster(p, f) or improved
        if time.perf_counter() - t0 >= time_limit_s:
            break
    new = StartPlan(search.chosen, {pf: n for pf, n in search.bought.items() if n > 0}, plan.kept)
    after = plan_value(cat, req, mip.index, new)
    if search.moves and after is not None and after < before - 1e-9 * max(1.0, abs(before)):
        set_plan_start(mip, cat, req, new, state, feasible=True)
        out["flatten_objective"] = state.value(mip)
        out["flatten_moves"] = float(search.moves)
    out["flatten_s"] = time.perf_counter() - t0
    return out


@dataclass
class _Flatten:
    """The local search's state: the plan being improved (``chosen``, ``bought``), the site power per slot as
    ``evaluate_fleet`` adds it, and what a move is priced with."""

    cat: Catalog
    req: FleetRequest
    ix: Index
    tuning: FleetTuning
    chosen: dict[str, tuple[int, list[int]]]
    bought: dict[tuple[str, str], int]
    power: np.ndarray  # site power per slot: the jobs above idle and the idle power of every node bought or kept
    envelope: float  # the site's power envelope, with the tolerance evaluate_fleet allows
    movable: dict[str, str]  # clusters without owned nodes, bought on one fabric: type -> fabric
    weights: tuple[float, bool, float]  # objective_weights: the horizon's share, cost objective, weight per kWh
    jobs: dict[str, Job]
    arrays: tuple[np.ndarray, ...]  # mode_arrays and the power coefficient of every mode
    moves: int = 0

    @classmethod
    def from_plan(cls, cat: Catalog, req: FleetRequest, ix: Index, plan: StartPlan, tuning: FleetTuning) -> _Flatten:
        """The search's state at ``plan``."""
        p_coef = ix.modes["power_coef_kw"].to_numpy(float)
        chosen = dict(plan.chosen)
        bought = dict(plan.bought)
        envelope = req.power_kw if req.power_kw is not None else cat.site(req.site).power_envelope_kw
        power = np.zeros(req.slots)
        for k, sl in chosen.values():
            power[sl] += p_coef[k]
        for (p, _f), n in bought.items():
            power += ix.pools.idle_kw[p] * n
        kept = plan.kept if plan.kept is not None else [e.count for e in ix.pools.owned]
        for i, e in enumerate(ix.pools.owned):
            power += ix.pools.idle_kw[e.server] * np.asarray(e.avail) * kept[i]
        fab_of = {p: f for (p, f), n in bought.items() if n > 0}
        movable = {p: f for p, f in fab_of.items() if p not in ix.pools.owned_fabrics}
        weights = objective_weights(cat, req)
        jobs = {j.id: j for j in req.jobs}
        arrays = (*mode_arrays(ix.modes), p_coef)
        envelope = envelope * (1 + 1e-9) + 1e-9
        return cls(cat, req, ix, tuning, chosen, bought, power, envelope, movable, weights, jobs, arrays)

    def cluster_usd(self, p: str, f: str, n: int) -> float:
        """The cluster's value at n nodes: its capex share (cost objective) and its idle energy over the horizon."""
        share, cost_obj, e_w = self.weights
        capex = owned_capex_usd(self.cat, p, f, 0, n)[0] if n > 0 else 0.0
        idle = self.ix.pools.idle_kw[p] * self.req.slot_hours * self.req.slots * n * e_w
        return (share * capex if cost_obj else 0.0) + idle

    def late_usd(self, j: str, last: int) -> float:
        """The penalty job j pays when its last slot is ``last``."""
        job = self.jobs[j]
        return (job.penalty_usd_per_slot or 0.0) * max(0, last - job.due_slot)

    def flatten_cluster(self, p: str, f: str) -> bool:
        """One round over the jobs on cluster (p, f), the largest first, each moved where it lowers the value; then
        the cluster sheds the nodes above its peak use (less idle power). Whether a job moved."""
        nodes, _d, kind, server, *_rest = self.arrays
        on_p = [j for j, (k, _s) in self.chosen.items() if kind[k] == "site" and server[k] == p]
        usage = np.zeros(self.req.slots)
        for j in on_p:
            k, sl = self.chosen[j]
            usage[sl] += nodes[k]
        moved = False
        for j in sorted(on_p, key=lambda j: -nodes[self.chosen[j][0]]):
            usage, moved_j = self.move(p, f, j, usage)
            moved = moved or moved_j
        top = round(float(usage.max()))
        if top < self.bought.get((p, f), 0):
            self.power -= self.ix.pools.idle_kw[p] * (self.bought[(p, f)] - top)
            self.bought[(p, f)] = top
        return moved

    def move(self, p: str, f: str, j: str, usage: np.ndarray) -> tuple[np.ndarray, bool]:
        """Job j moved to the mode on (p, f) and least busy slots that make the cluster's value plus its energy and
        lateness least, within max_nodes and the power envelope, when that is below where it is: (the cluster's
        nodes busy per slot after it, whether it moved)."""
        nodes, d, kind, server, fabric, e_coef, p_coef = self.arrays
        e_w = self.weights[2]
        idle = self.ix.pools.idle_kw[p]
        k0, sl0 = self.chosen[j]
        other = usage.copy()
        other[sl0] -= nodes[k0]
        win = np.asarray(self.ix.window[j])
        order = win[np.lexsort((win, other[win]))]  # least busy slots of the window, earliest first
        cand = np.asarray(
            [
                k
                for k in self.ix.by_job[j]
                if kind[k] == "site" and server[k] == p and fabric[k] in (f, ANY_FABRIC) and d[k] <= len(win)
            ],
            dtype=np.int64,
        )  # holds the job's current mode (a plan's mode is on its cluster's fabric or one node)
        peak = np.maximum(float(other.max()), other[order][d[cand] - 1] + nodes[cand])
        have = self.bought.get((p, f), 0)
        power_other = self.power.copy()  # the site's power without this job, at the cluster's current size
        power_other[sl0] -= p_coef[k0]
        best = (self.cluster_usd(p, f, have) + e_w * e_coef[k0] + self.late_usd(j, max(sl0)), k0, sl0, have)
        for i in np.argsort(peak + 1e-9 * e_coef[cand], kind="stable")[: self.tuning.flatten_candidates]:
            k = int(cand[i])
            n_new = round(float(peak[i]))
            if n_new > self.req.max_nodes:
                continue
            sl = sorted(int(t) for t in order[: d[k]])
            usd = self.cluster_usd(p, f, n_new) + e_w * e_coef[k] + self.late_usd(j, sl[-1])
            if usd >= best[0] - 1e-6 * max(1.0, abs(best[0])):
                continue
            moved = power_other + idle * (n_new - have)
            moved[sl] += p_coef[k]
            if (moved > self.envelope).any():
                continue
            best = (usd, k, sl, n_new)
        if best[1] == k0 and best[2] == sl0 and best[3] == have:
            return usage, False
        k, sl, n_new = best[1], best[2], best[3]
        other[sl] += nodes[k]
        self.power = power_other + idle * (n_new - have)
        self.power[sl] += p_coef[k]
        self.chosen[j] = (k, sl)
        self.bought[(p, f)] = n_new
        self.moves += 1
        return other, True
