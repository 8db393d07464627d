"""Time-to-train as a sum of named terms: steady training + evaluation + start-up.

    time_to_train = training (steps x step time / goodput)  +  evaluation  +  start-up

* **training**: the step-time model (``step.py``) over the run's steps, divided by goodput (``reliability.py``).
* **evaluation** (``evaluation_time_s``): evaluations x the cost of one. Evaluation runs the forward pass over a
  fixed held-out set split over the run's GPUs, so one evaluation costs GPU-seconds that do not depend on the
  GPU count: seconds = GPU-seconds per evaluation / GPUs. Stated in training samples instead
  (``evaluation_time_from_step_s``), the cost also carries across GPU types: the held-out forward passes run on
  the same GPUs as training, so an evaluation costs what training a fixed number of samples costs there.
* **start-up** (``startup_time_s``): the time from the start of the run to its first steady training step
  (initialization, compilation or graph capture, checkpoint load, data-pipeline fill), a per-run figure.

A user's run has neither unless it states them: both default to zero (``Work``, ``Configuration`` and
``PlanRequest``: ``startup_s``; evaluations x held-out samples per evaluation, or fixed ``evaluation_s``), so a
plan is its training time. The terms are wall-clock of the same servers, so what follows from the time-to-train
follows from all three: the deadline, rent and amortization, and energy -- evaluations at the training's IT power,
the start-up at its own (the GPUs idle while the hosts initialize, compile and load: planner/physics/power.py).
MLPerf's stated per-benchmark figures (median start-up, warm-up left inside the timed window, GPU-seconds per
evaluation; reference/mlperf_timing.csv, method in reference/mlperf_timing.md) are the validation's
(``planner.validation.steady``), which adds them to reproduce MLPerf's timed window.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

SECONDS_PER_HOUR = 3600.0


def evaluation_time_s(evaluations: float, gpu_s_per_evaluation: float, gpus: int) -> float:
    """Seconds of evaluation in a run: ``evaluations`` x ``gpu_s_per_evaluation`` / ``gpus`` (one evaluation's
    forward pass over a fixed held-out set, split over the run's GPUs). Zero evaluations cost zero."""
    if evaluations < 0 or gpu_s_per_evaluation < 0 or gpus < 1:
        raise ValueError("evaluations and GPU-seconds per evaluation must be >= 0, gpus >= 1")
    return float(evaluations) * float(gpu_s_per_evaluation) / float(gpus)


def evaluation_time_from_step_s(
    evaluations: float, train_samples_per_evaluation: float, step_time_s: float, global_batch: float
) -> float:
    """Seconds of evaluation in a run whose steady step is ``step_time_s`` at ``global_batch`` samples:
    ``evaluations`` x ``train_samples_per_evaluation`` x step / batch. One evaluation is the forward pass over a
    fixed held-out set on the run's GPUs, so it costs the time those GPUs take to train a fixed number of samples
    -- its training-sample equivalent, a property of the benchmark that carries across GPU types and scales
    (MLPerf: eval seconds x steady samples per second, e.g. 77 samples for Llama 2 70B LoRA: its 173 held-out
    sequences at the forward pass's 2N of the 4N + attention FLOPs a trained token costs; reference/
    mlperf_timing.csv). Zero evaluations cost zero."""
    if evaluations < 0 or train_samples_per_evaluation < 0 or step_time_s < 0 or global_batch <= 0:
        raise ValueError("evaluations, samples per evaluation and step time must be >= 0, the batch > 0")
    return float(evaluations) * float(train_samples_per_evaluation) * float(step_time_s) / float(global_batch)


def evaluation_sample_equivalents(evaluations: float, held_out_samples: float, forward_share: float) -> float:
    """Training-sample equivalents of a run's evaluations: ``evaluations`` x ``held_out_samples`` (the forward pass
    over the held-out set) x ``forward_share``, the forward pass's share of a training sample's FLOPs
    (compute.forward_flops_share: 1/3 when every weight trains, about 0.45 for LoRA)."""
    for name, v in (("evaluations", evaluations), ("held_out_samples", held_out_samples)):
        if not (math.isfinite(v) and v >= 0):
            raise ValueError(f"{name} must be finite and >= 0, got {v}")
    if not 0 < forward_share <= 1:
        raise ValueError(f"forward_share must be in (0, 1], got {forward_share}")
    return float(evaluations) * float(held_out_samples) * float(forward_share)


def evaluation_hours(evaluation_s: float, evaluation_samples: float, throughput_samples_per_s: Any) -> Any:
    """Hours of evaluation in a run, per configuration: fixed ``evaluation_s`` plus ``evaluation_samples``
    training-sample equivalents at the configuration's steady throughput (``evaluation_time_from_step_s`` with
    step / batch = 1 / throughput). Arrays in, arrays out."""
    thr = np.asarray(throughput_samples_per_s, dtype=float)
    if evaluation_samples == 0:
        return np.full(thr.shape, float(evaluation_s) / SECONDS_PER_HOUR)
    with np.errstate(divide="ignore"):  # a configuration that cannot run (throughput 0) evaluates forever, as it trains
        return (float(evaluation_s) + float(evaluation_samples) / thr) / SECONDS_PER_HOUR


def startup_time_s(init_s: float, warmup_excess_s: float = 0.0) -> float:
    """Seconds of start-up inside a run: ``init_s`` (start of the run to the first training step: initialization,
    compilation, checkpoint load) plus ``warmup_excess_s``, the time the first steps take beyond the steady step
    time (autotuning, graph capture, data-pipeline fill; MLPerf: ``first_block_excess_s``, reference/
    mlperf_timing.md). A negative warm-up excess (later blocks carrying an overhead the first lacks) counts as 0."""
    if init_s < 0:
        raise ValueError("init_s must be >= 0")
    return float(init_s) + max(float(warmup_excess_s), 0.0)
