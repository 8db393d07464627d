"""Two relaxations of the fleet MIP as lower bounds on bench_fleet.py's instance. Neither beats the full MIP's LP
relaxation there, so ``planner.fleet.fleet()`` uses neither; their figures are in docs/fleet-bound.md ("Other
relaxations"), and this script reruns them.

``--peak S``: the peak-of-the-sum relaxation. A plan buys N_p nodes of each type (p) and pays at least
k_p N_p + net_p(N_p), k_p = the horizon's share of the server price + its idle energy over the horizon (in the
objective's unit), and net_p(N) >= a_pf N for N >= 2 (a_pf = min over N = 2..max_nodes of the fabric's NIC,
cable and switch capex per node, the horizon's share of it; net(1) = 0). Since N_p is at least the nodes busy on
p in every slot, sum_p (k_p + a_pf [N_p >= 2]) N_p >= max_t sum_{jobs j running in t} w_j, with w_j = n_m (k_p +
[n_m >= 2] a_pf) for the mode m the job runs in -- one resource in dollars shared by every type (a peak of the
sum, not a sum of peaks). Each job adds c_m: its energy above idle (site modes), its rent (offers billed per
job) or price per hour x node-hours (offers billed per period, which rent at least the node-hours they use).
Owned nodes are free and unlimited in it, power and budget are dropped: every plan of the fleet MIP is a plan
of it at no higher value. Per job, modes dominated in (w, slots, c) are dropped (a single resource), then the
MIP (time-indexed, with the energetic-interval cut (13)) goes to HiGHS for S seconds.

``--subset K [K ...] --subset-time S``: the job-subset relaxation. Dropping jobs from a plan leaves a plan of
the others at no higher cost, and each dropped job pays at least its least energy above idle, so OPT(all) >=
OPT(the K jobs of most fewest-node-slots) + sum of the dropped jobs' least energy; ``fleet`` on the K jobs for S
seconds gives a bound on OPT(K jobs).

Run: python bench/bench_fleet_relaxations.py [--jobs 50 --types 30 --slots 52] --peak 60 --subset 5 10
"""

from __future__ import annotations

import argparse
import time

import highspy
import numpy as np
import pandas as pd
from bench_fleet import catalog_with, instance_arguments, request

from planner.data import Catalog
from planner.fleet import (
    FleetRequest,
    Pools,
    billed_per_job,
    billing_period_h,
    fleet,
    job_modes,
    job_rent_usd,
    job_window,
    objective_weights,
    pareto_mask,
    period_price_usd,
    pools_of,
)
from planner.physics import cost as cost_mod


def network_usd_per_node(cat: Catalog, server: str, fabric: str, most: int) -> float:
    """min over n = 2..most of the NIC, cable and switch capex of an n-node cluster per node (cost.py's rule)."""
    s, fb = cat.server(server), cat.fabric(fabric)
    k, radix = s.nic_ports, fb.switch_radix
    n = np.arange(2, most + 1, dtype=np.int64)
    x2 = np.where(k * n > radix, n, 0)
    x3 = np.where(2 * k * n > radix**2, n, 0)
    w = cost_mod.switch_count(n, k, radix)
    usd = k * fb.nic_price_usd * n + k * fb.cable_price_usd * (n + x2 + x3) + fb.switch_price_usd * w
    return float(np.min(usd / n))


def peak_weights(cat: Catalog, req: FleetRequest, pools: Pools, modes: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(w, c) of every mode: its weight on the shared resource and its own cost (module docstring)."""
    share, cost_obj, e_w = objective_weights(cat, req)
    H = req.slot_hours
    k_p = {
        p: (share * (cat.server(p).price_usd or 0.0) if cost_obj else 0.0) + e_w * pools.idle_kw[p] * H * req.slots
        for p in pools.buy
    }
    a_pf = {
        (p, f): share * network_usd_per_node(cat, p, f, req.max_nodes) if cost_obj else 0.0
        for p, fabs in pools.buy.items()
        for f in fabs
    }
    w, c = np.zeros(len(modes)), np.zeros(len(modes))
    for k, (kind, p, f, n, d, e, h) in enumerate(
        zip(
            modes["kind"],
            modes["server"],
            modes["fabric"],
            modes["nodes"].to_numpy(np.int64),
            modes["slots_needed"].to_numpy(np.int64),
            modes["energy_coef_kwh"].to_numpy(float),
            modes["time_to_train_h"].to_numpy(float),
            strict=True,
        )
    ):
        s = cat.server(p)
        if kind == "site":
            if p not in pools.owned_fabrics:  # owned types: free and unlimited in the relaxation
                w[k] = n * (k_p[p] + (a_pf[(p, f)] if n >= 2 else 0.0))
            c[k] = e_w * e
        elif not cost_obj:
            c[k] = e_w * e  # rented energy counts in the energy and carbon objectives
        elif billed_per_job(s, H):
            c[k] = float(job_rent_usd(s, np.asarray([n]), np.asarray([h]))[0])
        else:
            c[k] = period_price_usd(s) / billing_period_h(s) * n * d * H
    return w, c


def peak_bound(cat: Catalog, req: FleetRequest, pools: Pools, modes: pd.DataFrame, seconds: float) -> None:
    """The peak-of-the-sum relaxation (module docstring) solved by HiGHS for ``seconds``; prints its bound."""
    w, c = peak_weights(cat, req, pools, modes)
    d = modes["slots_needed"].to_numpy(np.int64)
    job_col = modes["job"].to_numpy()
    jobs = [j.id for j in req.jobs]
    keep: dict[str, np.ndarray] = {}
    for j in jobs:
        idx = np.flatnonzero(job_col == j)
        keep[j] = idx[pareto_mask(np.column_stack([w[idx], d[idx], c[idx]]))]
    win = {j.id: job_window(req, j) for j in req.jobs}
    lb: list[float] = []
    ub: list[float] = []
    obj: list[float] = []
    integral: list[bool] = []

    def col(lo: float, hi: float, cost: float, integer: bool) -> int:
        lb.append(lo)
        ub.append(hi)
        obj.append(cost)
        integral.append(integer)
        return len(lb) - 1

    inf = highspy.kHighsInf
    rows: list[tuple[float, float, list[int], list[float]]] = []
    peak = col(0.0, inf, 1.0, False)
    z = {j: [col(0.0, 1.0, float(c[k]), True) for k in keep[j]] for j in jobs}
    r = {j: {t: col(0.0, 1.0, 1e-6 * (t + 1), True) for t in win[j]} for j in jobs}
    u = {j: {t: col(0.0, inf, 0.0, False) for t in win[j]} for j in jobs}
    for j in jobs:
        ks = keep[j]
        rows.append((1.0, 1.0, z[j], [1.0] * len(ks)))  # one mode
        rows.append((0.0, inf, list(r[j].values()) + z[j], [1.0] * len(r[j]) + [-float(d[k]) for k in ks]))  # work
        big = float(max(w[k] for k in ks))
        for t in win[j]:  # u_jt >= w_j - big (1 - r_jt)
            rows.append((-big, inf, [u[j][t], *z[j], r[j][t]], [1.0] + [-float(w[k]) for k in ks] + [-big]))
    for t in range(req.slots):
        on = [j for j in jobs if t in r[j]]
        rows.append((0.0, inf, [peak] + [u[j][t] for j in on], [1.0] + [-1.0] * len(on)))
    e_col: dict[tuple[str, int], int] = {}
    starts, ends = sorted({win[j][0] for j in jobs}), sorted({win[j][-1] for j in jobs})
    for a in starts:  # (13): the jobs' mandatory weight-slots in [a, b] fit under the peak x |I|
        for b in (b for b in ends if b >= a):
            cols_in: list[int] = [peak]
            vals_in: list[float] = [float(b - a + 1)]
            for j in jobs:
                out = sum(1 for t in win[j] if t < a or t > b)
                need = [max(0, int(d[k]) - out) for k in keep[j]]
                if not any(need):
                    continue
                if (j, out) not in e_col:
                    e_col[(j, out)] = col(0.0, inf, 0.0, False)
                    coef = [-float(w[k]) * q for k, q in zip(keep[j], need, strict=True)]
                    rows.append((0.0, inf, [e_col[(j, out)], *z[j]], [1.0, *coef]))
                cols_in.append(e_col[(j, out)])
                vals_in.append(-1.0)
            if len(cols_in) > 1:
                rows.append((0.0, inf, cols_in, vals_in))
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    h.setOptionValue("time_limit", float(seconds))
    n = len(lb)
    h.addVars(n, np.asarray(lb), np.asarray(ub))
    h.changeColsCost(n, np.arange(n, dtype=np.int32), np.asarray(obj))
    kinds = [highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous for i in integral]
    h.changeColsIntegrality(n, np.arange(n, dtype=np.int32), np.asarray(kinds))
    for lo, hi, idx_, val_ in rows:
        h.addRow(lo, hi, len(idx_), np.asarray(idx_, dtype=np.int32), np.asarray(val_))
    t0 = time.perf_counter()
    h.run()
    info = h.getInfo()
    print(
        f"  peak of the sum: {n:,} columns x {len(rows):,} rows ({sum(len(v) for v in keep.values()):,} modes after "
        f"pruning); HiGHS {time.perf_counter() - t0:.0f} s: bound {info.mip_dual_bound:,.0f}, its own best plan "
        f"{info.objective_function_value:,.0f}, gap {info.mip_gap:.2%}"
    )


def subset_bound(cat: Catalog, req: FleetRequest, modes: pd.DataFrame, sizes: list[int], s: float) -> None:
    """The job-subset relaxation (module docstring) for each size in ``sizes``, ``fleet`` given ``s`` seconds;
    prints each bound on all jobs."""
    _share, _cost, e_w = objective_weights(cat, req)
    area = (
        (modes["nodes"] * modes["slots_needed"]).groupby(modes["job"]).min().sort_values(ascending=False, kind="stable")
    )
    least_energy = (e_w * modes["energy_coef_kwh"]).groupby(modes["job"]).min()
    for k in sizes:
        kept = set(area.index[:k])
        sub = req.model_copy(
            update={
                "jobs": [j for j in req.jobs if j.id in kept],
                "solver": req.solver.model_copy(update={"time_limit_s": s}),
            }
        )
        t = time.perf_counter()
        rep = fleet(sub, cat).solver
        dropped = float(least_energy[[j for j in least_energy.index if j not in kept]].sum())
        if rep is None or rep.bound is None:
            print(f"  subset of {k} jobs: no bound in {time.perf_counter() - t:.0f} s")
            continue
        print(
            f"  subset of the {k} jobs of most node-slots: fleet() {time.perf_counter() - t:.0f} s, plan "
            f"{rep.objective or float('nan'):,.0f}, bound {rep.bound:,.0f}; on all jobs "
            f"{rep.bound + dropped:,.0f} "
            f"(+ the dropped jobs' least energy {dropped:,.0f})"
        )


def main() -> None:
    """The command line (module docstring)."""
    ap = argparse.ArgumentParser()
    instance_arguments(ap)
    ap.add_argument("--peak", type=float, default=0.0, help="seconds of HiGHS on the peak-of-the-sum relaxation")
    ap.add_argument("--subset", type=int, nargs="*", default=[], help="job-subset sizes to bound")
    ap.add_argument("--subset-time", type=float, default=60.0, help="fleet() time limit per subset, seconds")
    args = ap.parse_args()
    cat = catalog_with(args.types)
    req = request(args.jobs, args.slots, args.max_nodes)
    pools = pools_of(cat, req)
    modes = job_modes(cat, req, pools=pools)
    print(f"{args.jobs} jobs x {args.types} server types x {args.slots} slots: {len(modes):,} modes")
    if args.peak > 0:
        peak_bound(cat, req, pools, modes, args.peak)
    if args.subset:
        subset_bound(cat, req, modes, args.subset, args.subset_time)


if __name__ == "__main__":
    main()
