"""A start that runs every job on one bought cluster of as few nodes as it can pack them into.

The other starts buy clusters at their peak use, and their MIPs rarely lower a peak (a smaller cluster needs every
job on it rescheduled at once). Packing goes the other way: it fixes one buy option (p, f) of a type without owned
nodes on which every job has a mode (on f, or one node of p) and searches for the fewest nodes that run them all.

The options are ranked by a lower bound on the value of any plan that runs every job on them (``pack_options``:
the cluster's capex share and idle energy at the energetic-interval size bound ``pack_size_bound`` -- the jobs
whose windows lie in [a, b] need their fewest node-slots within it -- plus each job's least energy).

1. Of the ``tuning.pack_options`` cheapest, each whose bound is below the best plan in hand (the start, or a packing
   found) is packed: from its size bound the cluster size gallops up (step doubling) to the first size at which
   the repair search packs the jobs and is bisected back between it and the last that did not
   (``smallest_packing``, ``tuning.pack_iters`` repair moves per size). Starting at the window bound, not at the
   windowless fluid bound, many short jobs due early are packed at their size at once.
2. With the time left, the packed options are searched again one node smaller (a fresh search of
   ``tuning.pack_refine_iters`` moves), the option with the fewest failed searches at its size first, then the one
   whose plan one node smaller would be cheapest; an option leaves when it is at its size bound, failed
   ``tuning.pack_retries`` times at a size, or when the bound at one node fewer (cluster value at that size + the
   jobs' least energy) is not below the best plan in hand -- so packing ends early where it cannot win. When the
   repair search fails one node below the best plan's cluster, HiGHS is asked once per size whether any packing
   exists there (``cluster_fits``, at most ``tuning.proof_s``); a proof that none does raises the option's size
   bound to its cluster.

At each size found each job in turn is moved to the mode that costs least (energy, lateness) on the earliest slots
with room for it, so the cluster stays within that size and a job with a penalty is as little late as the others
allow. Owned nodes are retired, nothing is rented. The best packed plan by ``evaluate_fleet`` (capacity, fabric,
power, budget; exact prices) replaces the start when it is cheaper than the start (or the start is not known to be a
plan), so it is a plan of the full MIP.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from planner.data import Catalog
from planner.fleet.evaluate import cluster_value, objective_weights
from planner.fleet.formulation import FleetMIP, Index
from planner.fleet.modes import ANY_FABRIC
from planner.fleet.request import FleetRequest, Job
from planner.fleet.starts.cluster_fits import cluster_fits
from planner.fleet.starts.packing import (
    Packing,
    earliest_due_first,
    pack_cluster,
    pack_size_bound,
    smallest_packing,
)
from planner.fleet.starts.state import (
    PackProof,
    StartPlan,
    StartState,
    current_plan,
    mode_arrays,
    plan_value,
    set_plan_start,
)
from planner.fleet.tuning import DEFAULT_TUNING, FleetTuning


@dataclass
class PackOption:
    """One bought cluster that may run every job (``pack_start``): type and fabric, each job's modes on it, the
    fewest nodes any packing needs (``pack_size_bound``), the least energy value of the jobs, and ``bound`` =
    cluster_value at that size + that energy: no plan that runs every job on this cluster is below it (the cluster
    is at least that large and its value grows with size; each job's mode draws at least its least energy; lateness
    adds)."""

    bound: float
    server: str
    fabric: str
    cands: dict[str, np.ndarray]
    size_bound: int
    energy: float


def pack_options(mip: FleetMIP, cat: Catalog, req: FleetRequest, deadline: float = math.inf) -> list[PackOption]:
    """Every buy option (p, f) of a type without owned nodes on which every job has a site mode (on f, or one node
    of p: its "any"-fabric mode), cheapest ``bound`` first; only the options bounded before ``time.perf_counter()``
    passes ``deadline``."""
    ix = mip.index
    nodes, d, kind, server, fabric, e_coef = mode_arrays(ix.modes)
    e_w = objective_weights(cat, req)[2]
    window = {j: np.asarray(ts, dtype=np.int64) for j, ts in ix.window.items()}
    by_job = {j: np.asarray(ks, dtype=np.int64) for j, ks in ix.by_job.items()}
    site_k = kind == "site"
    options = []
    for p, fabs in ix.pools.buy.items():
        if p in ix.pools.owned_fabrics:
            continue
        if time.perf_counter() >= deadline:
            break
        for f in fabs:
            on = site_k & (server == p) & ((fabric == f) | (fabric == ANY_FABRIC))
            cands = {j: ks[on[ks]] for j, ks in by_job.items()}
            if any(not len(ks) for ks in cands.values()):
                continue
            area = {j: int(np.min(nodes[ks] * d[ks])) for j, ks in cands.items()}
            lb = pack_size_bound(area, max(int(np.min(nodes[ks])) for ks in cands.values()), window)
            energy = sum(float(np.min(e_w * e_coef[ks])) for ks in cands.values())
            value = cluster_value(cat, req, ix.pools, p, f, lb) + energy
            options.append(PackOption(value, p, f, cands, lb, energy))
    options.sort(key=lambda o: (o.bound, o.server, o.fabric))
    return options


def pack_start(
    mip: FleetMIP,
    cat: Catalog,
    req: FleetRequest,
    state: StartState,
    time_limit_s: float,
    tuning: FleetTuning = DEFAULT_TUNING,
) -> dict[str, float]:
    """Pack every job onto one bought cluster (module docstring) within ``time_limit_s``; the best packed plan
    replaces the start when cheaper. Returns pack_s, and pack_objective (the start's value after it), pack_nodes
    (cluster size) when it improved the start, and pack_min_proved (1.0) when that size is proved the fewest of its
    option -- by its window bound or by HiGHS (``cluster_fits``) -- with the proof in ``state.pack_proof``
    (``FleetPlan.proofs`` says it)."""
    t0 = time.perf_counter()
    out: dict[str, float] = {}
    if time_limit_s <= 0:
        out["pack_s"] = 0.0
        return out
    deadline = t0 + time_limit_s
    options = pack_options(mip, cat, req, deadline)  # bounded within the limit too
    plan = current_plan(mip)
    before = plan_value(cat, req, mip.index, plan) if plan is not None else None
    search = _PackSearch.of(cat, req, mip.index, tuning, deadline, before)
    search.pack_each(options[: tuning.pack_options])
    search.refine()
    best = min(search.packed, key=lambda o: o.value, default=None)
    if best is not None and (before is None or best.value < before - 1e-9 * max(1.0, abs(before))):
        set_plan_start(mip, cat, req, best.plan, state, feasible=True)
        out["pack_objective"] = state.value(mip)
        out["pack_nodes"] = float(sum(best.plan.bought.values()))
        # lb is a proved lower bound on the option's cluster (pack_size_bound, or raised to cap by cluster_fits), so
        # at cap == lb the size is the fewest -- also when the repair search reached the bound one node at a time
        if best.cap == best.lb and best.plan.bought == {(best.p, best.f): best.cap}:
            # every plan that runs all jobs on one cluster of this option has >= cap nodes, so it is worth at least
            # the cluster's value at cap (cluster_value never decreases with n) plus each job's least energy
            bound = search.cluster_usd(best.p, best.f, best.cap) + best.energy
            state.pack_proof = PackProof(best.p, best.f, best.cap, bound)
            out["pack_min_proved"] = 1.0
    out["pack_s"] = time.perf_counter() - t0
    return out


@dataclass
class _Packed:
    """An option packed: its best plan and value, its cluster size now and its proved size bound, the repair
    searches that failed at one node fewer, and the size HiGHS was last asked about."""

    value: float
    plan: StartPlan
    p: str
    f: str
    cands: dict[str, np.ndarray]
    order: list[str]  # the jobs in the order the repair search places them (largest node-slots per slot first)
    cap: int
    lb: int
    energy: float
    fails: int = 0
    asked: int | None = None


@dataclass
class _PackSearch:
    """The state of ``pack_start``'s search: the modes as arrays, the deadline, the random numbers, the plan in hand
    (``before``) and the options packed so far."""

    cat: Catalog
    req: FleetRequest
    ix: Index
    tuning: FleetTuning
    deadline: float
    before: float | None
    nodes: np.ndarray
    d: np.ndarray
    e_coef: np.ndarray
    e_w: float
    window: dict[str, np.ndarray]
    jobs: dict[str, Job]
    rng: np.random.Generator
    packed: list[_Packed]

    @classmethod
    def of(
        cls, cat: Catalog, req: FleetRequest, ix: Index, tuning: FleetTuning, deadline: float, before: float | None
    ) -> _PackSearch:
        """A search with nothing packed yet."""
        nodes, d, _kind, _server, _fabric, e_coef = mode_arrays(ix.modes)
        window = {j: np.asarray(ts, dtype=np.int64) for j, ts in ix.window.items()}
        jobs = {j.id: j for j in req.jobs}
        e_w = objective_weights(cat, req)[2]
        rng = np.random.default_rng(tuning.pack_seed)
        return cls(cat, req, ix, tuning, deadline, before, nodes, d, e_coef, e_w, window, jobs, rng, [])

    def in_time(self) -> bool:
        return time.perf_counter() < self.deadline

    def late_usd(self, j: str, last: int) -> float:
        """The penalty job j pays when its last slot is ``last``."""
        return (self.jobs[j].penalty_usd_per_slot or 0.0) * max(0, last - self.jobs[j].due_slot)

    def cluster_usd(self, p: str, f: str, n: int) -> float:
        return cluster_value(self.cat, self.req, self.ix.pools, p, f, n)

    def best_known(self) -> float:
        """The value of the best plan in hand: the start's (when it is a plan) or a packing's."""
        values = [o.value for o in self.packed] + ([self.before] if self.before is not None else [])
        return min(values, default=math.inf)

    def repair(self, cands: dict[str, np.ndarray], order: list[str], cap: int, iters: int) -> Packing | None:
        """One repair search (``pack_cluster``) at ``cap`` nodes."""
        return pack_cluster(
            cands,
            self.nodes,
            self.d,
            self.window,
            self.req.slots,
            cap,
            order,
            iters,
            self.rng,
            self.deadline,
            noise=self.tuning.pack_noise,
            pair=self.tuning.pack_pair,
        )

    def pack_each(self, options: list[PackOption]) -> None:
        """Step 1: each option, cheapest bound first, while its bound is below the best plan known, packed at the
        smallest size found by galloping and bisection."""
        for option in options:
            if not self.in_time():
                break
            known = self.best_known()
            if option.bound >= known - 1e-9 * max(1.0, abs(known)):  # no packing of it beats a plan in hand
                continue
            cands = option.cands
            area = {j: int(np.min(self.nodes[ks] * self.d[ks])) for j, ks in cands.items()}
            order = sorted(cands, key=lambda j: (-area[j] / len(self.window[j]), j))

            def packs(cap: int, cands: dict[str, np.ndarray] = cands, order: list[str] = order) -> Packing | None:
                return self.repair(cands, order, cap, self.tuning.pack_iters)

            first = smallest_packing(packs, option.size_bound, self.req.max_nodes, self.in_time)
            if first is None:
                continue
            cap, packing = first
            got = self.finish(option.server, option.fabric, cands, order, cap, packing)
            if got is not None:
                value, found = got
                self.packed.append(
                    _Packed(
                        value,
                        found,
                        option.server,
                        option.fabric,
                        cands,
                        order,
                        cap,
                        option.size_bound,
                        energy=option.energy,
                    )
                )

    def hopeful(self, o: _Packed) -> bool:
        """Whether option o is still worth a search one node smaller: above its size bound, not failed
        ``tuning.pack_retries`` times at it, and its bound there below the best plan known."""
        smaller, known = self.cluster_usd(o.p, o.f, o.cap - 1) + o.energy, self.best_known()
        return o.cap > o.lb and o.fails < self.tuning.pack_retries and smaller < known - 1e-9 * max(1.0, abs(known))

    def refine(self) -> None:
        """Step 2, with the time left: the packed option whose plan one node smaller would be cheapest (its value
        less what that node costs), the fewest failed searches first, is searched again at that size (a new repair
        search from scratch); HiGHS is asked once per size when the search fails below the best plan's cluster."""
        while self.in_time():
            todo = [o for o in self.packed if self.hopeful(o)]
            if not todo:
                break
            o = min(
                todo,
                key=lambda o: (
                    o.fails,
                    o.value - self.cluster_usd(o.p, o.f, o.cap) + self.cluster_usd(o.p, o.f, o.cap - 1),
                ),
            )
            smaller = self.repair(o.cands, o.order, o.cap - 1, self.tuning.pack_refine_iters)
            left_s = self.deadline - time.perf_counter()
            best_now = o.value <= self.best_known() + 1e-9 * max(1.0, abs(o.value))
            if smaller is None and best_now and o.asked != o.cap - 1 and left_s >= self.tuning.proof_min_s:
                # the repair search failed one node below the best plan's cluster: HiGHS is asked, once per size,
                # whether any packing exists there. Only for the best option and after a failed search: an
                # undecided question takes up to proof_s of pack's share
                o.asked = o.cap - 1
                limit = min(self.tuning.proof_s, left_s)
                fits, smaller = cluster_fits(o.cands, self.nodes, self.d, self.window, o.cap - 1, limit)
                if fits is False:  # proved: no cluster of this option smaller than cap runs every job
                    o.lb = o.cap
                    continue
            if smaller is None:
                o.fails += 1
                continue
            got = self.finish(o.p, o.f, o.cands, o.order, o.cap - 1, smaller)
            o.cap -= 1
            o.fails = 0
            if got is not None and got[0] < o.value:
                o.value, o.plan = got

    def finish(
        self, p: str, f: str, cands: dict[str, np.ndarray], order: list[str], cap: int, packing: Packing
    ) -> tuple[float, StartPlan] | None:
        """The packing at ``cap`` nodes laid out earliest due first, then each job moved to its cheapest mode and
        slots that keep the cluster within cap, priced by evaluate_fleet (None when it breaks a rule: power,
        budget)."""
        packing = earliest_due_first(
            packing, self.nodes, self.d, self.window, self.jobs, self.req.slots, cap, self.late_usd
        )
        usage = np.zeros(self.req.slots)
        for k, sl in packing.values():
            usage[sl] += self.nodes[k]
        moved = True
        while moved and self.in_time():  # rounds while a job moves (each move saves)
            moved = False
            for j in order:
                moved = self.cheapest_mode(j, cands[j], cap, packing, usage) or moved
        found = StartPlan(packing, {(p, f): round(float(usage.max()))}, [0] * len(self.ix.pools.owned))
        value = plan_value(self.cat, self.req, self.ix, found)
        return None if value is None else (value, found)

    def cheapest_mode(self, j: str, cands: np.ndarray, cap: int, packing: Packing, usage: np.ndarray) -> bool:
        """Job j moved to its cheapest mode (energy, lateness) on the earliest slots with room for it within
        ``cap``, the other jobs held (``packing`` and ``usage`` updated); whether its mode changed."""
        nodes, d = self.nodes, self.d
        k0, sl0 = packing[j]
        usage[sl0] -= nodes[k0]
        win = self.window[j]
        free = cap - usage[win]
        top = np.sort(free)[::-1]
        ks = cands[nodes[cands] <= top[np.minimum(d[cands], len(win)) - 1]]
        pick = (self.e_w * self.e_coef[k0] + self.late_usd(j, max(sl0)), k0, sl0)
        for k in ks:
            # the earliest d slots with room for the mode's nodes: within cap, and the least lateness
            sl = [int(t) for t in win[free >= nodes[k]][: d[k]]]
            usd = self.e_w * self.e_coef[k] + self.late_usd(j, sl[-1])
            if usd < pick[0] - 1e-9 * max(1.0, abs(pick[0])):
                pick = (usd, int(k), sl)
        packing[j] = (pick[1], pick[2])
        usage[pick[2]] += nodes[pick[1]]
        return pick[1] != k0
