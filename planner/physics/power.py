"""Power: GPU power at a cap, node power through the PSU, switches, facility power.

* Power-cap curve (catalog/power_caps.yaml): at cap fraction c of TDP, throughput factor f(c) and board
  power p(c) x TDP under a typical training load, linear between levels. A cap binds only below the load's
  uncapped demand (planner/data/calibration.py fits the curves on that relative axis), so the curve is moved to
  the demand of the GPU under dense training compute (Gpu.training_power_fraction: GEMM-bound kernels draw
  close to TDP, e.g. 8xH100 nodes at 76% of their 10.2 kW maximum: Newkirk et al. 2025) by load_curve_at.
* GPU average power: idle + (p(c) TDP - idle) x (busy + COMM_ACTIVITY x (1 - busy)), busy = compute share
  of the step (GPUs draw less while waiting on communication or data).
* CPU power: CPU_IDLE_FRACTION of the package power at idle plus the rest in proportion to the busy
  cores -- one host thread per GPU driving its kernels plus the data pipeline's demand (samples/s per node x
  CPU core-seconds per sample). GPU training leaves most cores idle, so most CPUs run far below TDP.
* Node power (AC) = (g x GPU + CPU + RAM + storage + NICs + other) / PSU efficiency.
* IT power = nodes x node power + switches x switch power; facility power = IT power x PUE.
* Start-up (``startup_gpu_w``, ``startup_busy_cores``): initialization, compilation or graph capture, checkpoint
  load and the data pipeline's fill run on the hosts and the storage while the GPUs wait, so the GPUs draw their
  idle power, one host core per GPU is busy and the NICs and switches are up -- a figure that no power cap
  changes (a cap limits the GPUs' draw under load, not at idle), so the start-up's energy does not tilt the
  choice of the cap.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from planner.data import Gpu, PowerCapCurve, Server

COMM_ACTIVITY = 0.3
CPU_IDLE_FRACTION = 0.3  # server CPU package idle / loaded power, ~0.25-0.35 (SPECpower_ssj2008 result sheets)


def cap_curve_at(curve: PowerCapCurve, cap_fraction: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(throughput factor, power fraction of TDP) at the given caps, linear between the curve's levels. Below its
    lowest level c_min the cap binds harder than anything measured: power follows the cap (p(c_min) c / c_min)
    and throughput falls at least in proportion (f(c_min) c / c_min) -- clocks and voltage scale down together,
    so work per joule does not improve below the curve's range (holding throughput flat while power falls
    would hand the energy objective savings no GPU delivers)."""
    caps = np.array([p.cap_fraction for p in curve.points])
    tf = np.array([p.throughput_factor for p in curve.points])
    pf = np.array([p.power_fraction for p in curve.points])
    c = np.asarray(cap_fraction, dtype=float)
    below = np.minimum(c / caps[0], 1.0)
    return np.interp(c, caps, tf) * below, np.minimum(np.interp(c, caps, pf) * below, c)


def load_curve_at(
    curve: PowerCapCurve, cap_fraction: ArrayLike, demand_fraction: float | None
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(throughput factor relative to TDP, power / TDP) at the caps for a load whose uncapped demand is
    ``demand_fraction`` of TDP. The catalog curve was measured at the median demand d0 of its loads (its power
    at the top level) and a cap binds on the relative axis x = cap / demand (planner/data/calibration.py), so a load
    of demand d sees the catalog curve at cap x d0: throughput f0(c d0 / d) / f0(d0 / d) (relative to TDP, where
    the MFU is calibrated) and power d / d0 x p0(c d0 / d), never above the cap. None = the curve's own load.

    Uncapped (c = 1) the load draws d / d0 x p0(d0 / d): 0.82 of TDP for a Hopper GPU at d = 0.9, below d because
    the curve's power is still rising at that relative cap. That is what the measurements say: MLPerf Power
    energy-to-train of 8xH100 nodes is predicted within about 1% (docs/VALIDATION.md); normalising power to d
    at c = 1 instead (as throughput is) moves those cases to 7.6% median, 32.7% worst (tried, not kept)."""
    if demand_fraction is None:
        return cap_curve_at(curve, cap_fraction)
    d0 = curve.points[-1].power_fraction
    c = np.asarray(cap_fraction, dtype=float)
    tf, pf = cap_curve_at(curve, np.minimum(c * d0 / demand_fraction, 1.0))
    tf_tdp, _ = cap_curve_at(curve, np.asarray([min(d0 / demand_fraction, 1.0)]))
    return np.asarray(np.minimum(tf / tf_tdp[0], 1.0)), np.asarray(np.minimum(pf * demand_fraction / d0, c))


def gpu_power_w(
    tdp_w: ArrayLike, idle_w: ArrayLike, power_fraction: ArrayLike, busy_fraction: ArrayLike
) -> NDArray[np.float64]:
    """Average GPU power over a step: idle + (power fraction at the cap x TDP - idle) x (busy + COMM_ACTIVITY x
    (1 - busy)), busy = the compute share of the step (the module docstring)."""
    active = np.asarray(power_fraction) * np.asarray(tdp_w)
    idle = np.asarray(idle_w, dtype=float)
    busy = np.clip(np.asarray(busy_fraction, dtype=float), 0.0, 1.0)
    return np.asarray(idle + np.maximum(active - idle, 0.0) * (busy + COMM_ACTIVITY * (1.0 - busy)), dtype=float)


def startup_gpu_w(idle_w: ArrayLike) -> NDArray[np.float64]:
    """GPU power during a run's start-up: the GPU's idle power, at any cap (the module docstring)."""
    return np.asarray(idle_w, dtype=float)


def startup_busy_cores(gpus_per_node: ArrayLike) -> NDArray[np.float64]:
    """Busy host cores of a node during start-up: one per GPU (its process loading, compiling and capturing); the
    data pipeline has not started (the module docstring)."""
    return np.asarray(gpus_per_node, dtype=float)


def cpu_power_w(package_w: ArrayLike, cores: ArrayLike, busy_cores: ArrayLike) -> NDArray[np.float64]:
    """CPU package power: CPU_IDLE_FRACTION of it at idle plus the rest in proportion to the busy cores
    (SPECpower_ssj2008's idle-to-loaded ratio)."""
    util = np.clip(np.asarray(busy_cores, dtype=float) / np.asarray(cores, dtype=float), 0.0, 1.0)
    return np.asarray(np.asarray(package_w, dtype=float) * (CPU_IDLE_FRACTION + (1.0 - CPU_IDLE_FRACTION) * util))


def node_power_w(
    gpus_per_node: ArrayLike,
    gpu_w: ArrayLike,
    host_w: ArrayLike,
    nic_ports: ArrayLike,
    nic_w: ArrayLike,
    psu_efficiency: ArrayLike,
    multi_node: ArrayLike,
) -> NDArray[np.float64]:
    """AC power of one node; compute NICs draw only when the job spans several nodes."""
    nics = np.where(np.asarray(multi_node, dtype=bool), np.asarray(nic_ports) * np.asarray(nic_w), 0.0)
    dc = np.asarray(gpus_per_node) * np.asarray(gpu_w) + np.asarray(host_w) + nics
    return np.asarray(dc / np.asarray(psu_efficiency), dtype=float)


def idle_node_kw(server: Server, gpu: Gpu, pue: float) -> float:
    """Facility power of one powered, idle node, kW: GPUs at idle, CPU at its idle share, RAM, storage, board
    (``cpu_power_w``, ``node_power_w``), through the PSU, times the site's PUE. NICs and switches are left to
    the jobs. Used for owned nodes kept in service (planner/fleet/evaluate.py, planner/plan/)."""
    host = float(cpu_power_w(server.cpu_power_w, server.cpu_cores, 0.0)) + (
        server.ram_power_w + server.storage_power_w + server.other_power_w
    )
    node_w = float(
        node_power_w(server.gpus_per_node, gpu.idle_power_w, host, server.nic_ports, 0.0, server.psu_efficiency, False)
    )
    return node_w * pue / 1000.0
