"""What to train (``Work``) and the checks every public entry point of the model applies to its arguments.

A check here turns a value of the wrong type or out of range into a ``PlannerInputError`` that names the argument,
the value given and what would fix it, before any array is built: the model itself never sees a bool where a
number belongs, a NaN node count or a pydantic ``ValidationError``.
"""

from __future__ import annotations

import math
import numbers
import reprlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeVar, get_args

import numpy as np
from pydantic import BaseModel, ValidationError

from planner.data import Catalog, Precision, Workload
from planner.errors import PlannerInputError, describe_validation_error

PRECISIONS: tuple[str, ...] = get_args(Precision)
_M = TypeVar("_M", bound=BaseModel)


@dataclass(frozen=True)
class Work:
    """What to train: samples at the reference batch, optional fixed batch and precision, and the run's start-up
    and evaluation.

    ``samples``: samples to train at the workload's reference batch (None: the workload's default; tokens or
    epochs convert with ``work_from``); ``global_batch``: a fixed global batch in samples, a whole number (an int,
    or a float such as 2048.0 that is one, kept as the int; None: the workload's policy); ``precision``: bf16,
    fp16, fp8, fp4, tf32 or fp32 (None: the workload's); ``failures``: include failures, restarts and checkpoints
    (goodput, planner/physics/reliability.py); ``startup_s``: the run's start-up, seconds; ``evaluation_s``:
    evaluation as fixed seconds; ``evaluation_samples``: evaluation as training-sample equivalents, which take the
    time the configuration takes to train that many samples (planner/physics/run_time.py). The three add to the
    time-to-train, and what follows from it (energy, amortization, rent); all default to 0 (a run of training
    only). A value out of range is a PlannerInputError."""

    samples: float | None = None
    global_batch: int | None = None
    precision: str | None = None
    failures: bool = True  # goodput: failures, restarts and checkpoints (planner/physics/reliability.py)
    startup_s: float = 0.0
    evaluation_s: float = 0.0
    evaluation_samples: float = 0.0

    def __post_init__(self) -> None:
        s = scenario_number(self.samples)
        if self.samples is not None and not (s is not None and math.isfinite(s) and s > 0):
            raise PlannerInputError(
                f"Work.samples must be a finite number of samples > 0 (got {self.samples!r}); leave it out for the "
                "workload's"
            )
        b = scenario_number(self.global_batch)
        if self.global_batch is not None and not (b is not None and math.isfinite(b) and b >= 1 and b == int(b)):
            raise PlannerInputError(
                f"Work.global_batch must be a whole number of samples >= 1 (got {self.global_batch!r}); leave it out "
                "for the workload's batch policy"
            )
        if b is not None:  # 2048.0 (or NumPy's 2048) is the whole number 2048: kept as an int
            g = self.global_batch
            object.__setattr__(self, "global_batch", int(g) if isinstance(g, numbers.Integral) else int(b))
        if self.precision is not None and self.precision not in PRECISIONS:
            raise PlannerInputError(
                f"Work.precision must be one of {', '.join(PRECISIONS)} (got {self.precision!r}); leave it out for "
                "the workload's"
            )
        for name in ("startup_s", "evaluation_s", "evaluation_samples"):
            v = scenario_number(getattr(self, name))
            if v is None or not (math.isfinite(v) and v >= 0):
                raise PlannerInputError(f"Work.{name} must be a finite number >= 0 (got {getattr(self, name)!r})")
            object.__setattr__(self, name, v)


def scenario_number(v: Any) -> float | None:
    """v as a float where it is a real number (int, float, NumPy scalar; not a bool or a string), else None."""
    if isinstance(v, bool | np.bool_) or not isinstance(v, numbers.Real):
        return None
    return float(v)


def as_list(v: Any) -> list[Any] | None:
    """One number as a one-element list, an iterable (not a string) as a list, anything else None."""
    if scenario_number(v) is not None:
        return [v]
    if isinstance(v, str | bytes) or not isinstance(v, Iterable):
        return None
    return list(v)


def check_catalog(catalog: Any) -> Catalog:
    """The catalog argument of a public entry point: a ``Catalog`` (``planner.load_catalog()``), else bad input."""
    if not isinstance(catalog, Catalog):
        raise PlannerInputError(
            f"catalog must be a planner.Catalog, got {type(catalog).__name__}: pass planner.load_catalog() (or "
            "load_catalog('my/catalog', 'my/models') for your own folders)"
        )
    return catalog


def validated(model: type[_M], value: Any, what: str) -> _M:
    """``value`` as a ``model`` instance: an instance as is, a mapping validated field by field; a field that is
    wrong or a value of another type is a PlannerInputError naming it (not pydantic's ValidationError)."""
    if isinstance(value, model):
        return value
    if not isinstance(value, dict):
        raise PlannerInputError(
            f"{what} must be a planner {model.__name__} or a dict of its fields, got {type(value).__name__}"
        )
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise PlannerInputError(describe_validation_error(exc, what)) from None


def work_from(
    workload: Workload, samples: float | None = None, tokens: float | None = None, epochs: float | None = None
) -> float | None:
    """Samples at the reference batch from at most one of samples, tokens (/ the sequence length) or epochs
    (x the dataset's samples); None when none is given (the workload's default then applies)."""
    given = [x for x in (samples, tokens, epochs) if x is not None]
    if len(given) > 1:
        raise PlannerInputError("give only one of samples, tokens or epochs")
    for name, v in (("samples", samples), ("tokens", tokens), ("epochs", epochs)):
        if v is not None and not (v > 0 and math.isfinite(v)):
            raise PlannerInputError(f"{name} must be a positive number (got {v})")
    if tokens is not None:
        if workload.sequence_length is None:
            raise PlannerInputError(f"model '{workload.id}' is not a sequence model: give samples or epochs")
        return tokens / workload.sequence_length
    if epochs is not None:
        if workload.dataset_samples is None:
            raise PlannerInputError(f"model '{workload.id}' has no dataset_samples: give samples or tokens")
        return epochs * workload.dataset_samples
    return samples


def check_workload(catalog: Catalog, workload: Any) -> Workload:
    """The workload argument: a workload id of the catalog (``planner models``) or a ``Workload``."""
    if isinstance(workload, str):
        return catalog.workload(workload)
    if isinstance(workload, Workload):
        return workload
    raise PlannerInputError(
        f"workload must be a workload id such as 'llama3-8b' (planner models) or a Workload, got "
        f"{type(workload).__name__}"
    )


def check_work(work: Any) -> Work:
    """The work argument: a ``Work``, or None for the workload's defaults (``Work()``)."""
    if work is not None and not isinstance(work, Work):
        raise PlannerInputError(
            f"work must be a planner.Work(samples=..., global_batch=...), got {type(work).__name__}"
        )
    return work or Work()


def check_purchase(purchase: Any) -> None:
    """The purchase mode: 'buy' (capex amortized over the service life) or 'rent'."""
    if purchase not in ("buy", "rent"):
        raise PlannerInputError(f"purchase must be 'buy' or 'rent' (got {purchase!r})")


def check_life(life_years: Any) -> None:
    """The service life of bought hardware: a finite number of years > 0."""
    v = scenario_number(life_years)
    if v is None or not (math.isfinite(v) and v > 0):
        raise PlannerInputError(f"life_years must be a finite number of years > 0 (got {life_years!r}); default 4")


def check_caps(caps: Any) -> list[float]:
    """Power caps: fractions of TDP in (0, 1], at least one (one number is read as one cap)."""
    listed = as_list(caps)
    values = [scenario_number(c) for c in listed or []]
    bad = [c for c, v in zip(listed or [], values, strict=True) if v is None or not 0 < v <= 1]
    if listed is None or bad or not listed:
        raise PlannerInputError(
            f"caps are GPU power caps as fractions of TDP in (0, 1], e.g. [0.6, 0.8, 1.0] (got {reprlib.repr(caps)}"
            + (f": {bad[0]!r} is not one)" if bad else ")")
        )
    return [float(v) for v in values if v is not None]


def check_nodes(nodes: Any) -> list[int]:
    """Node counts: whole numbers >= 1, at least one (one number is read as one count)."""
    listed = as_list(nodes)
    values = [scenario_number(n) for n in listed or []]
    bad = [
        n
        for n, v in zip(listed or [], values, strict=True)
        if v is None or not (math.isfinite(v) and v >= 1 and v == int(v))
    ]
    if listed is None or bad or not listed:
        raise PlannerInputError(
            f"nodes are node counts, whole numbers >= 1, e.g. range(1, 65) (got {reprlib.repr(nodes)}"
            + (f": {bad[0]!r} is not one)" if bad else ")")
        )
    return [int(v) for v in values if v is not None]
