"""A complete fleet decision priced exactly, and checked against every rule of the MIP.

``evaluate_fleet`` is the one place a decision -- each job's mode and slots, the nodes bought per (type, fabric),
the owned nodes kept -- is checked and priced outside the solver: the plan read back from HiGHS, the start
heuristics' plans and the brute-force tests all go through it, so no plan is reported that breaks a rule.
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np
import pandas as pd

from planner.data import Catalog
from planner.fleet.billing import group_rent_usd, owned_capex_usd
from planner.fleet.modes import ANY_FABRIC, job_window
from planner.fleet.pools import Pools
from planner.fleet.request import FleetRequest
from planner.physics import cost as cost_mod


class FleetEvaluation(TypedDict):
    """What ``evaluate_fleet`` finds of a decision within every rule: its value in the objective's unit and its
    money, energy and power figures, with the nodes busy per group and slot and the idle power per slot."""

    value: float  # the objective (cost USD, energy kWh or carbon kg) + late penalties, without the tie-break
    capex_usd: float
    rent_usd: float
    cost_usd: float  # the bought hardware's share of the horizon + site energy + rent + late penalties
    penalty_usd: float
    site_energy_kwh: float
    facility_energy_kwh: float  # site + rented
    carbon_kg: float
    peak_site_power_kw: float
    usage: dict[str, np.ndarray]  # nodes busy per capacity group and slot
    idle_kw: np.ndarray  # idle power of every node bought or kept, per slot


def evaluate_fleet(
    cat: Catalog,
    req: FleetRequest,
    pools: Pools,
    chosen: dict[str, pd.Series],
    slots: dict[str, list[int]],
    bought: dict[tuple[str, str], int],
    kept: list[int],
) -> FleetEvaluation | None:
    """Price a complete fleet decision exactly (planner/physics/cost.py): modes and slots of every job, nodes bought
    per (type, fabric), owned nodes kept. Returns None when it breaks a rule: a job without a mode of its own, or
    run outside its window or for fewer slots than its mode needs; more than max_nodes bought per cluster or rented
    per offer and slot; capacity, a fabric rule, power or budget. Shared by the plan extraction, the start
    heuristics and the brute-force tests."""
    if not _jobs_run_their_modes(req, chosen, slots) or any(n > req.max_nodes for n in bought.values()):
        return None
    usage, site_power = busy_nodes_and_power(req, chosen, slots)
    if not _fabrics_hold(pools, chosen, bought) or not _capacity_holds(req, pools, usage, bought, kept):
        return None
    idle_w = idle_power(req, pools, bought, kept)
    envelope = req.power_kw if req.power_kw is not None else cat.site(req.site).power_envelope_kw
    if (site_power + idle_w > envelope * (1 + 1e-9) + 1e-9).any():
        return None
    capex = sum(
        (
            owned_capex_usd(cat, p, f, pools.serving_on(p, f), n, pools.kept_on(p, f, kept))[0]
            for (p, f), n in bought.items()
        ),
        0.0,
    )
    rent = sum((group_rent_usd(cat, req, g, arr, chosen)[0] for g, arr in usage.items() if g.endswith("|rent")), 0.0)
    if req.budget_usd is not None and capex + rent > req.budget_usd * (1 + 1e-9) + 1e-6:
        return None
    return _priced(cat, req, chosen, slots, usage, site_power, idle_w, capex, rent)


def _jobs_run_their_modes(req: FleetRequest, chosen: dict[str, pd.Series], slots: dict[str, list[int]]) -> bool:
    """Rows (1)-(2): every job has one mode of its own and runs in at least d_m slots of its window W_j."""
    for jb in req.jobs:
        row = chosen.get(jb.id)
        sl = set(slots.get(jb.id, []))
        if row is None or ("job" in row.index and row["job"] != jb.id):
            return False
        if not sl or not sl <= set(job_window(req, jb)) or len(sl) < int(row["slots_needed"]):
            return False
    return True


def busy_nodes_and_power(
    req: FleetRequest, chosen: dict[str, pd.Series], slots: dict[str, list[int]]
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """(nodes busy per capacity group and slot, the jobs' site power above idle per slot)."""
    usage: dict[str, np.ndarray] = {}
    site_power = np.zeros(req.slots)
    for j, row in chosen.items():
        arr = usage.setdefault(str(row["group"]), np.zeros(req.slots))
        for t in slots[j]:
            arr[t] += int(row["nodes"])
            site_power[t] += float(row["power_coef_kw"])
    return usage, site_power


def _fabrics_hold(pools: Pools, chosen: dict[str, pd.Series], bought: dict[tuple[str, str], int]) -> bool:
    """Rule (6): one fabric per bought type, and a job on a fabric without owned nodes runs where it is bought."""
    fab_of: dict[str, str] = {}
    for (p, f), n in bought.items():
        if n > 0:
            if p in fab_of:
                return False
            fab_of[p] = f
    for row in chosen.values():
        p, f = str(row["server"]), str(row["fabric"])
        if (
            row["kind"] == "site"
            and f != ANY_FABRIC
            and f not in pools.owned_fabrics.get(p, set())
            and fab_of.get(p) != f
        ):
            return False
    return True


def _capacity_holds(
    req: FleetRequest,
    pools: Pools,
    usage: dict[str, np.ndarray],
    bought: dict[tuple[str, str], int],
    kept: list[int],
) -> bool:
    """Rule (5): the nodes busy in every site group and slot fit what is bought and kept in service there; rented
    nodes per offer and slot stay within max_nodes."""
    for g, arr in usage.items():
        p, tag = g.split("|")
        if tag == "rent":
            if (arr > req.max_nodes).any():
                return False
            continue
        cap = np.zeros(req.slots)
        for f in pools.buy.get(p, []) if tag == "*" else [tag]:
            cap += bought.get((p, f), 0)
        for i, e in enumerate(pools.owned):
            if e.server == p and e.fabric == tag:
                cap += np.asarray(e.avail) * kept[i]
        if (arr > cap + 1e-9).any():
            return False
    return True


def idle_power(req: FleetRequest, pools: Pools, bought: dict[tuple[str, str], int], kept: list[int]) -> np.ndarray:
    """Idle facility power per slot of every node bought (all slots) or kept (the slots it is in service)."""
    idle_w = np.zeros(req.slots)
    for (p, _f), n in bought.items():
        idle_w += pools.idle_kw[p] * n
    for i, e in enumerate(pools.owned):
        idle_w += pools.idle_kw[e.server] * np.asarray(e.avail) * kept[i]
    return idle_w


def _priced(
    cat: Catalog,
    req: FleetRequest,
    chosen: dict[str, pd.Series],
    slots: dict[str, list[int]],
    usage: dict[str, np.ndarray],
    site_power: np.ndarray,
    idle_w: np.ndarray,
    capex: float,
    rent: float,
) -> FleetEvaluation:
    """The figures of a decision within every rule: energy at the site and rented, late penalties, cost over the
    horizon (the bought hardware's share of its life) and the objective's value."""
    site = cat.site(req.site)
    site_kwh = float(idle_w.sum() * req.slot_hours) + sum(
        float(r["energy_coef_kwh"]) for r in chosen.values() if r["kind"] == "site"
    )
    rent_kwh = sum(float(r["energy_coef_kwh"]) for r in chosen.values() if r["kind"] == "rent")
    energy = site_kwh + rent_kwh
    penalty = 0.0
    for jb in req.jobs:
        late = max(0, max(slots[jb.id]) - jb.due_slot)
        penalty += (jb.penalty_usd_per_slot or 0.0) * late
    share = req.slots * req.slot_hours / (req.life_years * cost_mod.HOURS_PER_YEAR)
    cost = capex * share + site_kwh * site.electricity_usd_per_kwh + rent
    value = {"cost": cost, "energy": energy, "carbon": energy * site.carbon_kg_per_kwh}[req.objective] + penalty
    return FleetEvaluation(
        value=value,
        capex_usd=capex,
        rent_usd=rent,
        cost_usd=cost + penalty,
        penalty_usd=penalty,
        site_energy_kwh=site_kwh,
        facility_energy_kwh=energy,
        carbon_kg=energy * site.carbon_kg_per_kwh,
        peak_site_power_kw=float((site_power + idle_w).max()),
        usage=usage,
        idle_kw=idle_w,
    )


def objective_weights(cat: Catalog, req: FleetRequest) -> tuple[float, bool, float]:
    """(the horizon's share of a bought server's life, whether the objective is cost, the objective's weight per
    kWh: USD, 1 for energy, kg for carbon) -- how the start heuristics price a cluster and a mode."""
    site = cat.site(req.site)
    share = req.slots * req.slot_hours / (req.life_years * cost_mod.HOURS_PER_YEAR)
    cost_obj = req.objective == "cost"
    e_w = site.electricity_usd_per_kwh if cost_obj else 1.0 if req.objective == "energy" else site.carbon_kg_per_kwh
    return share, cost_obj, e_w


def cluster_value(cat: Catalog, req: FleetRequest, pools: Pools, p: str, f: str, n: int) -> float:
    """What a bought cluster of n nodes of type p on fabric f adds to the objective (``evaluate_fleet``'s value): its
    capex (servers, NICs, cables, switches, as cost.py prices them) times the horizon's share of its life when the
    objective is cost, plus the idle energy of its nodes over the horizon at the objective's weight per kWh. It
    never decreases with n (every capex term grows with the node count)."""
    share, cost_obj, e_w = objective_weights(cat, req)
    capex = share * owned_capex_usd(cat, p, f, 0, n)[0] if cost_obj and n > 0 else 0.0
    return capex + e_w * pools.idle_kw[p] * req.slot_hours * req.slots * n
