"""Goodput: the share of wall-clock time a run makes progress, given failures, restarts and checkpoints.

A run on G GPUs fails (any unexpected interruption: GPU, HBM, network, host, software) at rate lambda x G per
hour, so its mean time between failures is M = 1 / (lambda G). It writes a checkpoint of its training state
every tau seconds, taking delta seconds; after a failure it loses the work since the last checkpoint (tau / 2
on average) and the restart time R (detection, rescheduling, loading the checkpoint). To first order
(Young 1974; Daly 2006), per second of progress the run spends

    waste = delta / tau  +  (tau / 2 + delta + R) / M

and the interval that minimises it is Daly's tau = sqrt(2 delta M) [1 + sqrt(delta / 2M) / 3 + delta / 18M] - delta
(tau = M when delta >= 2M). Goodput = 1 / (1 + waste); time-to-train, energy and cost are divided by it.

Sources (reference/scale_facts.md section 1):
* FAILURES_PER_GPU_HOUR: Llama 3 405B, 419 unexpected interruptions in 54 days on 16,384 H100 (Grattafiori
  et al. 2024, section 3.3.4, Table 5): 419 / (54 x 24 x 16,384) = 1.97e-5 per GPU-hour, all causes
  (78% hardware) attributed per GPU -- a job of that size fails every 3.1 hours.
* RESTART_S: MegaScale (Jiang et al. 2024): detection and diagnosis < 10 min, resume < 15 min; with
  15 min the model gives Llama 3's published "> 90%" effective training time (90.7%).
* Checkpoint: the training state (bf16 weights + fp32 master weights and two Adam moments: 14 B per trainable
  parameter; frozen parameters 2 B; ZeRO paper, BLOOM's 2.3 TB for 176B) written in parallel by the nodes
  (local NVMe, then asynchronously on) up to a shared-storage ceiling of STORAGE_CEILING_BYTES_S (Llama 3's
  Tectonic: 2 TB/s sustained).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

FAILURES_PER_GPU_HOUR = 419.0 / (54.0 * 24.0 * 16384.0)
RESTART_S = 15.0 * 60.0
CHECKPOINT_BYTES_PER_TRAINABLE_PARAM = 14.0
CHECKPOINT_BYTES_PER_FROZEN_PARAM = 2.0
STORAGE_CEILING_BYTES_S = 2.0e12


def mtbf_s(gpus: ArrayLike, failures_per_gpu_hour: float = FAILURES_PER_GPU_HOUR) -> NDArray[np.float64]:
    """Mean time between interruptions of a job on ``gpus`` GPUs, seconds."""
    return np.asarray(3600.0 / (np.asarray(gpus, dtype=float) * failures_per_gpu_hour))


def checkpoint_bytes(params: float, trainable: float) -> float:
    """Bytes of one checkpoint of the training state (no gradients)."""
    return trainable * CHECKPOINT_BYTES_PER_TRAINABLE_PARAM + (params - trainable) * CHECKPOINT_BYTES_PER_FROZEN_PARAM


def checkpoint_write_s(size_bytes: float, nodes: ArrayLike, node_write_bytes_s: ArrayLike) -> NDArray[np.float64]:
    """Time to write a checkpoint: every node its share, up to the shared-storage ceiling."""
    bw = np.minimum(
        np.asarray(nodes, dtype=float) * np.asarray(node_write_bytes_s, dtype=float), STORAGE_CEILING_BYTES_S
    )
    return np.asarray(size_bytes / bw)


def daly_interval_s(write_s: ArrayLike, mtbf: ArrayLike) -> NDArray[np.float64]:
    """Daly's (2006) optimum checkpoint interval (Young's sqrt(2 delta M) to first order)."""
    d = np.asarray(write_s, dtype=float)
    m = np.asarray(mtbf, dtype=float)
    r = d / (2.0 * m)
    tau = np.sqrt(2.0 * d * m) * (1.0 + np.sqrt(r) / 3.0 + r / 9.0) - d
    return np.asarray(np.where(d >= 2.0 * m, m, np.maximum(tau, 1e-9)))


def goodput(
    gpus: ArrayLike,
    write_s: ArrayLike,
    restart_s: float = RESTART_S,
    failures_per_gpu_hour: float = FAILURES_PER_GPU_HOUR,
) -> NDArray[np.float64]:
    """Share of wall-clock time spent making progress at the optimum checkpoint interval."""
    m = mtbf_s(gpus, failures_per_gpu_hour)
    d = np.asarray(write_s, dtype=float)
    tau = daly_interval_s(d, m)
    waste = d / tau + (tau / 2.0 + d + restart_s) / m
    return np.asarray(1.0 / (1.0 + waste))
