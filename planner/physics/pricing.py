"""Pricing of evaluated configurations: the site- and money-dependent columns from the physical ones.

Facility power and energy = IT power and energy x the site's PUE (a start-up's hours at the start-up's IT power,
``space.run_energy_kwh``); capex = nodes x (server + NICs) + switches +
cables (planner/physics/cost.py); a bought run pays capex x run time / service life plus facility energy at the
site's electricity price; a rented one pays whole billing periods (rent includes power and network); carbon =
facility energy x the site's grid intensity. Re-pricing a table for another site, purchase mode or price list needs
no re-evaluation of the physics.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from planner.data import Catalog
from planner.physics import cost
from planner.physics.tables import categorical
from planner.physics.work import check_purchase


def price_space(catalog: Catalog, df: pd.DataFrame, site: str, purchase: str, life_years: float) -> pd.DataFrame:
    """The site- and money-dependent columns of evaluated configurations (facility power and energy via PUE,
    capex or rent, energy cost, carbon, availability, feasibility) from the physical ones, set on a shallow copy
    of ``df``. Re-pricing a table for another site, purchase mode or price list needs no re-evaluation of the
    physics."""
    out = df.copy(deep=False)  # copy-on-write: the caller's table is not modified
    for k, v in price_columns(catalog, out, site, purchase, life_years).items():
        out[k] = v
    return out


def price_columns(
    catalog: Catalog,
    df: Any,
    site: str,
    purchase: str,
    life_years: float,
    rows: tuple[np.ndarray, np.ndarray] | None = None,
    capex: np.ndarray | None = None,
) -> dict[str, Any]:
    """The priced columns from a table or dict of physical columns (see price_space). ``rows`` = (row of each
    configuration, a configuration of each row) for rows of equal (server, fabric, nodes): capex is computed
    once per row. ``capex``: the configurations' capex already computed (``capex_column``), by a caller that
    prices the same physics again."""
    site_ = catalog.site(site)
    check_purchase(purchase)
    out: dict[str, Any] = {}
    srv_cat = pd.Categorical(df["server"])
    srv_codes = np.asarray(srv_cat.codes)

    def srv_attr(fn: Any) -> np.ndarray:
        """fn(server) of each configuration, computed once per server."""
        return np.asarray([fn(catalog.server(str(c))) for c in srv_cat.categories], dtype=float)[srv_codes]

    N = np.asarray(df["nodes"])
    hours = np.asarray(df["time_to_train_h"], dtype=float)
    it_kw = np.asarray(df["power_kw"], dtype=float)
    fac_kwh = it_kw * site_.pue * hours
    if "startup_h" in df and np.any(np.asarray(df["startup_h"], dtype=float)):  # start-up at its own power
        startup_kw = np.asarray(df["startup_power_kw"], dtype=float)
        fac_kwh = fac_kwh + (startup_kw - it_kw) * site_.pue * np.asarray(df["startup_h"], dtype=float)
    out["facility_power_kw"] = it_kw * site_.pue
    out["facility_energy_kwh"] = fac_kwh
    price = srv_attr(lambda s: np.nan if s.price_usd is None else s.price_usd)
    rent = srv_attr(lambda s: np.nan if s.rent_usd_per_month is None else s.rent_usd_per_month)

    if capex is None:
        capex = capex_column(catalog, df, rows)
    bought = purchase == "buy"
    per_month: Any = np.nan
    if bought:
        hw = cost.amortized_usd(capex, hours, life_years)
        available = np.isfinite(price)
    else:
        period_h = srv_attr(lambda s: cost.BILLING_PERIOD_H[s.rent_billing_period])
        hw, per_month = cost.rent_usd(N, rent, hours, period_h), N * rent
        cap_ok = (srv_attr(lambda s: float(s.power_cap_settable)) > 0) | (np.asarray(df["power_cap"]) >= 1 - 1e-9)
        available = np.isfinite(rent) & cap_ok  # a rented GPU whose limit cannot be set runs at TDP
    tariffed = tariff_columns(fac_kwh, hw, bought, site_.electricity_usd_per_kwh, site_.carbon_kg_per_kwh)
    out["capex_usd"], out["hardware_usd"], out["energy_usd"] = capex if bought else 0.0, hw, tariffed["energy_usd"]
    out["cost_usd"], out["rent_usd_per_month"] = tariffed["cost_usd"], per_month
    out["available"] = available
    out["carbon_kg"] = tariffed["carbon_kg"]
    out["site"] = categorical(np.zeros(len(N), dtype=np.int8), categories=[site_.id])
    out["purchase"] = categorical(np.zeros(len(N), dtype=np.int8), categories=[purchase])
    out["feasible"] = np.asarray(df["fits_memory"], dtype=bool) & available & np.asarray(df["valid_layout"], dtype=bool)
    return out


def tariff_columns(
    facility_energy_kwh: np.ndarray,
    hardware_usd: Any,
    bought: bool | np.ndarray,
    electricity_usd_per_kwh: Any,
    carbon_kg_per_kwh: Any,
) -> dict[str, Any]:
    """The priced columns a site's tariffs set: the energy bill of bought rows (facility energy x the electricity
    price; a rent includes power and network: no separate bill), the run's cost (hardware share or rent + that
    bill) and carbon (facility energy x the grid's intensity). ``bought``: every row, none, or per row; the tariffs
    one number or one per row. The rest of a priced table does not read them, so a table priced at one site's
    tariffs is brought to another's by these columns alone (plan.candidates.PricedChunk)."""
    if isinstance(bought, bool):
        energy_usd: Any = facility_energy_kwh * electricity_usd_per_kwh if bought else 0.0
    else:
        energy_usd = np.where(bought, facility_energy_kwh * electricity_usd_per_kwh, 0.0)
    cost_usd = hardware_usd + energy_usd if bought is not False else hardware_usd
    return {"energy_usd": energy_usd, "cost_usd": cost_usd, "carbon_kg": facility_energy_kwh * carbon_kg_per_kwh}


def capex_column(catalog: Catalog, df: Any, rows: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Capex of every configuration of a table or dict of physical columns: servers, NICs, switches and cables
    (cost.capex_usd) at the catalog's prices; ``rows`` as in ``price_columns``. It depends on the prices and the
    physics only, not on the site or the purchase mode."""
    srv_cat = pd.Categorical(df["server"])
    fab_cat = pd.Categorical(df["fabric"])
    srv_codes, fab_codes = np.asarray(srv_cat.codes), np.asarray(fab_cat.codes)
    servers = [catalog.server(str(c)) for c in srv_cat.categories]
    fabrics = [catalog.fabric(str(c)) for c in fab_cat.categories]
    sel = slice(None) if rows is None else rows[1]
    s, f = srv_codes[sel], fab_codes[sel]
    nodes = np.asarray(df["nodes"])[sel]
    price = np.asarray([np.nan if x.price_usd is None else x.price_usd for x in servers], dtype=float)[s]
    nic_ports = np.asarray([x.nic_ports for x in servers], dtype=np.int64)[s]

    def fab(attr: str) -> np.ndarray:
        return np.asarray([getattr(x, attr) for x in fabrics], dtype=float)[f]

    capex = cost.capex_usd(
        nodes,
        price,
        nic_ports,
        fab("nic_price_usd"),
        np.asarray(df["switches"])[sel],
        fab("switch_price_usd"),
        cost.cable_count(nodes, nic_ports, fab("switch_radix").astype(np.int64)),
        fab("cable_price_usd"),
    )
    return capex if rows is None else capex[rows[0]]
