"""The single-job request: what to train, by when, within what (validated with pydantic; units in the field names)."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from planner.data import MAX_EVALUATION_SAMPLES, MAX_LIFE_YEARS, MAX_STARTUP_S, Precision
from planner.physics import (
    DEFAULT_CAPS,
)
from planner.solver import SolverOptions

Objective = Literal["energy", "cost", "carbon", "time"]


class OwnedServers(BaseModel):
    """Servers a team already owns, as in a fleet request (planner/fleet/request.py ``Owned``): no capex; they
    serve a run on the fabric they are cabled to while they are in service (until ``retire_at_age_years``, default
    the request's ``life_years``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    server: str = Field(description="server id (catalog servers)")
    count: int = Field(ge=1, le=100_000, description="nodes owned")
    fabric: str | None = Field(None, description="fabric they are cabled to (default: the server's first listed)")
    age_years: float = Field(0.0, ge=0, allow_inf_nan=False, description="age at the start of the run, years")
    retire_at_age_years: float | None = Field(
        None, gt=0, allow_inf_nan=False, description="end of service, years of age (default: the request's life_years)"
    )


def one_as_list(value: Any) -> Any:
    """One id or one number given alone is a list of one (gpus="H100", power_caps=0.8), as evaluate_space reads
    them: the request fields that take lists (PlanRequest's, a fleet request's) read it so."""
    return (
        [value] if isinstance(value, str) or (isinstance(value, int | float) and not isinstance(value, bool)) else value
    )


class PlanRequest(BaseModel):
    """What to train, by when, within what. Frozen; JSON round-trips.

    Units are in the field names (``deadline_days``, ``budget_usd``, ``power_kw``, ``life_years``); a limit left
    out (None) is no limit. Give at most one of samples, tokens or epochs (none: the workload's default) and a
    deadline unless the objective is time. Constructing one with a wrong field raises pydantic's
    ``ValidationError`` (a ``ValueError``) naming each field; ``solve`` and ``pareto`` also take a plain dict of
    these fields and raise ``PlannerInputError`` (also a ``ValueError``) for it instead."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    model: str = Field(description="workload id (models/)")
    samples: float | None = Field(None, gt=0, description="samples to train (reference batch)")
    tokens: float | None = Field(None, gt=0, description="tokens to train (sequence models)")
    epochs: float | None = Field(None, gt=0, description="epochs over the dataset")
    global_batch: int | None = Field(None, ge=1, description="fixed global batch (default: workload policy)")
    precision: Precision | None = None
    deadline_days: float | None = Field(None, gt=0, description="training must finish within, days")
    budget_usd: float | None = Field(None, ge=0, description="money limit, USD")
    budget_kind: Literal["upfront", "total"] = Field(
        "upfront", description="upfront: capex when buying / the whole rent when renting; total: run cost"
    )
    power_kw: float | None = Field(None, gt=0, description="facility power envelope, kW (default: the site's)")
    sites: list[str] = Field(
        default_factory=lambda: ["us-colo"], min_length=1, description="site ids the plan may run at (catalog sites)"
    )
    objective: Objective = Field(
        "energy", description="minimised: energy (facility kWh), cost (USD), carbon (kgCO2e) or time (hours)"
    )
    purchase: Literal["buy", "rent", "either"] = Field("buy", description="buy servers, rent them, or either")
    gpus: list[str] | None = Field(
        None, description="allowed GPUs: ids, families or the start of ids such as 'A100', 'H100'"
    )
    servers: list[str] | None = Field(None, description="allowed server ids (default: every GPU server)")
    fabrics: list[str] | None = Field(None, description="allowed fabric ids (default: each server's fabrics)")
    power_caps: list[float] = Field(
        default_factory=lambda: list(DEFAULT_CAPS),
        description="GPU power caps to consider, fractions of TDP in (0, 1] (default 0.4, 0.5, ..., 1.0)",
    )
    max_nodes: int = Field(1024, ge=1, le=100_000, description="most nodes a plan may use")
    max_rack_units: int | None = Field(None, ge=1, description="rack space limit, rack units (U)")
    life_years: float = Field(4.0, gt=0, le=MAX_LIFE_YEARS, description="service life of bought servers, years")
    alternatives: int = Field(3, ge=0, le=20, description="next-best distinct plans to report")
    owned: list[OwnedServers] = Field(
        default_factory=list,
        description="servers already owned (type, count, fabric, age): a bought plan of that type on that fabric "
        "runs on them at no capex and pays only for the nodes and network it adds (owned_credit_usd); "
        "also accepted as {server: count} (on the server's first listed fabric, new)",
    )
    framework: str | None = Field(
        None, description="framework profile the workload runs under (catalog frameworks; default: the workload's)"
    )
    startup_s: float = Field(
        0.0,
        ge=0,
        le=MAX_STARTUP_S,
        description="start-up of the run, seconds (initialization, compilation, checkpoint load), added to its "
        "time-to-train (default 0)",
    )
    evaluations: int = Field(
        0, ge=0, le=10_000_000, description="evaluations during the run, each over evaluation_samples (default 0)"
    )
    evaluation_samples: float = Field(
        0.0,
        ge=0,
        le=MAX_EVALUATION_SAMPLES,
        description="held-out samples per evaluation (sequences for a language model); each evaluation takes the "
        "time the plan's servers take to train the forward pass's share of as many samples",
    )
    solver: SolverOptions = Field(default_factory=SolverOptions)

    @field_validator(
        "samples",
        "tokens",
        "epochs",
        "deadline_days",
        "budget_usd",
        "power_kw",
        "life_years",
        "startup_s",
        "evaluation_samples",
        mode="before",
    )
    @classmethod
    def _finite(cls, v: Any, info: ValidationInfo) -> Any:
        """NaN and infinity are refused with what to give instead, as the CLI and batch refuse them (pydantic would
        take infinity and call NaN 'not greater than 0')."""
        if isinstance(v, float) and not math.isfinite(v):
            hint = (
                "; leave it out (None) for no limit"
                if info.field_name in ("deadline_days", "budget_usd", "power_kw")
                else "; leave it out (None) for the workload's default"
                if info.field_name in ("samples", "tokens", "epochs")
                else ""
            )
            raise ValueError(f"{info.field_name} must be a finite number (got {v}){hint}")
        return v

    @field_validator("sites", "gpus", "servers", "fabrics", "power_caps", mode="before")
    @classmethod
    def _one(cls, v: Any) -> Any:
        return one_as_list(v)

    @field_validator("gpus", "servers", "fabrics")
    @classmethod
    def _some_ids(cls, v: list[str] | None, info: ValidationInfo) -> list[str] | None:
        """An empty list allows nothing, which no request means: said so (left out, every one is allowed)."""
        if v is not None and not v:
            kind = {"gpus": "GPU", "servers": "server", "fabrics": "fabric"}[str(info.field_name)]
            raise ValueError(f"give at least one {kind} id, or leave {info.field_name} out to allow every {kind}")
        return v

    @field_validator("sites")
    @classmethod
    def _distinct_sites(cls, v: list[str]) -> list[str]:
        """A site named twice is the site once (the order kept): it is one place to run, and its candidates are
        priced once."""
        return list(dict.fromkeys(v))

    @field_validator("owned", mode="before")
    @classmethod
    def _owned_mapping(cls, v: Any) -> Any:
        """{server: count} (the short form) -> [{server, count}] on the server's first listed fabric."""
        if isinstance(v, dict):
            return [{"server": k, "count": n} for k, n in v.items()]
        return v

    @field_validator("power_caps")
    @classmethod
    def _caps(cls, v: list[float]) -> list[float]:
        if not v:
            raise ValueError("give at least one power cap, or leave power_caps out for 0.4, 0.5, ..., 1.0 of TDP")
        if any(not (0 < c <= 1) for c in v):
            raise ValueError("power caps are fractions of TDP in (0, 1]")
        return sorted(set(v))

    @model_validator(mode="after")
    def _one_work(self) -> PlanRequest:
        if sum(x is not None for x in (self.samples, self.tokens, self.epochs)) > 1:
            raise ValueError("give only one of samples, tokens or epochs")
        if self.deadline_days is None and self.objective != "time":
            raise ValueError("a deadline is required unless the objective is time")
        return self


def field_list(model: type[BaseModel]) -> str:
    """Every field of a request model, one line each: its name (units in it), what it is and its default, so that
    ``help(PlanRequest)`` says what each field means (pydantic's own help lists none of its descriptions)."""
    lines = []
    for name, f in model.model_fields.items():
        default = "required" if f.is_required() else f"default {f.get_default(call_default_factory=True)!r}"
        lines.append(f"    {name}: {f.description or ''} [{default}]")
    return "\n".join(lines)


PlanRequest.__doc__ = f"{PlanRequest.__doc__}\n\n    Fields:\n\n{field_list(PlanRequest)}\n"
