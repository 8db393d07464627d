"""Cost, switches and carbon.

* Switches of radix k for P node ports (P = nodes x NIC ports; none for one node):
  P <= k: one switch; P <= k^2/2: two-tier leaf/spine, ceil(2P/k) leaves + ceil(leaves/2) spines;
  beyond: three-tier fat tree, edge = aggregation = ceil(2P/k) plus ceil(edge/2) core switches.
  Cables: one per node port plus one per leaf-spine up-link (P for two tiers, 2P for three).
* Buy: capex = nodes x (server + ports x NIC) + switches + cables; the run is charged capex x run
  time / life, plus facility energy at the site price.
* Rent: an offer is billed in whole periods of P hours (hour: 1, day: 24, month: 730); one period costs
  rent per month x P / 730, and a run of T hours pays ceil(T / P) periods per node:
  rent = nodes x ceil(T / P) x rent per month x P / 730 (rent includes power and network). A monthly offer
  used for 1.5 days costs one month; an hourly offer used for 2.5 h costs 3 hours.
* Carbon = facility energy x grid intensity (operational only).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

HOURS_PER_MONTH = 730.0
HOURS_PER_YEAR = 8766.0
BILLING_PERIOD_H = {"hour": 1.0, "day": 24.0, "month": HOURS_PER_MONTH}
_BILLING_SLACK = 1e-9  # a run of exactly k periods (up to rounding) pays k, not k + 1


def switch_count(nodes: ArrayLike, nic_ports: ArrayLike, radix: ArrayLike) -> NDArray[np.int64]:
    """Switches of radix k for P = nodes x NIC ports node ports (none for one node): one switch while P <= k, a
    two-tier leaf/spine of ceil(2P/k) leaves + ceil(leaves/2) spines while P <= k^2/2, else a three-tier fat tree
    of 2 ceil(2P/k) edge and aggregation switches + ceil(edge/2) core switches (the module docstring)."""
    n = np.asarray(nodes, dtype=np.int64)
    ports = n * np.asarray(nic_ports, dtype=np.int64)
    k = np.asarray(radix, dtype=np.int64)
    leaves = -(-2 * ports // k)
    two_tier = leaves + (-(-leaves // 2))
    three_tier = 2 * leaves + (-(-leaves // 2))
    out = np.where(ports <= k, 1, np.where(2 * ports <= k * k, two_tier, three_tier))
    return np.asarray(np.where(n <= 1, 0, out), dtype=np.int64)


def cable_count(nodes: ArrayLike, nic_ports: ArrayLike, radix: ArrayLike) -> NDArray[np.int64]:
    """Cables of the fabric ``switch_count`` sizes: one per node port, plus one up-link per port for two tiers
    (P) or two for three tiers (2P); none for one node."""
    n = np.asarray(nodes, dtype=np.int64)
    ports = n * np.asarray(nic_ports, dtype=np.int64)
    k = np.asarray(radix, dtype=np.int64)
    uplinks = np.where(ports <= k, 0, np.where(2 * ports <= k * k, ports, 2 * ports))
    return np.asarray(np.where(n <= 1, 0, ports + uplinks), dtype=np.int64)


def capex_usd(
    nodes: ArrayLike,
    server_price_usd: ArrayLike,
    nic_ports: ArrayLike,
    nic_price_usd: ArrayLike,
    switches: ArrayLike,
    switch_price_usd: ArrayLike,
    cables: ArrayLike,
    cable_price_usd: ArrayLike,
) -> NDArray[np.float64]:
    """Capex of a cluster: nodes x (server + NIC ports x NIC price; NICs only where it spans nodes) + switches x
    switch price + cables x cable price, USD."""
    n = np.asarray(nodes, dtype=float)
    nics = np.where(n > 1, np.asarray(nic_ports) * np.asarray(nic_price_usd), 0.0)
    return np.asarray(
        n * (np.asarray(server_price_usd) + nics)
        + np.asarray(switches) * np.asarray(switch_price_usd)
        + np.asarray(cables) * np.asarray(cable_price_usd),
        dtype=float,
    )


def amortized_usd(capex: ArrayLike, hours: ArrayLike, life_years: float) -> NDArray[np.float64]:
    """The share of capex a run of ``hours`` is charged: capex x hours / (life x HOURS_PER_YEAR), straight-line
    over the service life."""
    return np.asarray(np.asarray(capex) * np.asarray(hours) / (life_years * HOURS_PER_YEAR), dtype=float)


def billed_periods(hours: ArrayLike, billing_period_h: ArrayLike = 1.0) -> NDArray[np.float64]:
    """Whole billing periods a run of ``hours`` pays: ceil(T / P), at least one (inf stays inf)."""
    t = np.asarray(hours, dtype=float) / np.asarray(billing_period_h, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.asarray(np.maximum(np.ceil(t * (1 - _BILLING_SLACK)), 1.0), dtype=float)


def rent_usd(
    nodes: ArrayLike, rent_usd_per_month: ArrayLike, hours: ArrayLike, billing_period_h: ArrayLike = 1.0
) -> NDArray[np.float64]:
    """nodes x ceil(T / P) x rent per month x P / 730 (see the module docstring)."""
    period = np.asarray(billing_period_h, dtype=float)
    return np.asarray(
        np.asarray(nodes) * billed_periods(hours, period) * np.asarray(rent_usd_per_month) * period / HOURS_PER_MONTH,
        dtype=float,
    )
