"""What a fleet plan is asked for: the jobs, the horizon cut into slots, what may be bought, rented or is owned.

``FleetRequest`` is the schema (validated field by field, with the rules that tie fields together), read from
YAML by ``load_fleet_request``; ``check_fleet_ids`` checks the ids it names against a catalog before any work.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from planner.checks import one_as_list
from planner.data import Catalog, Precision
from planner.errors import PlannerInputError, describe_validation_error
from planner.physics import cost as cost_mod
from planner.physics import work_from
from planner.solver import SolverOptions

DEFAULT_MAX_NODES = 2048  # the most nodes bought or rented per pool unless the request says otherwise


class Job(BaseModel):
    """One training run of the portfolio: its workload, its amount of work and the slots it may run in."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    model: str
    samples: float | None = Field(None, gt=0)
    tokens: float | None = Field(None, gt=0)
    epochs: float | None = Field(None, gt=0)
    release_slot: int = Field(0, ge=0, description="first slot the job may run in")
    due_slot: int = Field(ge=0, description="last slot the job may run in (inclusive)")
    penalty_usd_per_slot: float | None = Field(
        None, ge=0, allow_inf_nan=False, description="if set, the job may finish late at this price"
    )
    precision: Precision | None = Field(
        None,
        description="compute precision (default: the workload's); fp8 / fp4 run in the next precision a pool's GPU "
        "has (fp4 in fp8, fp8 in bf16), and asking for one no allowed GPU has is an error",
    )

    @model_validator(mode="after")
    def _window(self) -> Job:
        if self.due_slot < self.release_slot:
            raise ValueError(
                f"due_slot ({self.due_slot}) must not be before release_slot ({self.release_slot}): the job may "
                f"run from its release slot to its due slot, both included"
            )
        return self


class Owned(BaseModel):
    """Servers the team already has: no capex; they draw idle power while kept and may be retired."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    server: str
    count: int = Field(ge=1, le=100_000)
    fabric: str | None = Field(None, description="fabric they are cabled to (default: the server's first)")
    age_years: float = Field(0.0, ge=0, description="age at the start of the horizon, years")
    retire_at_age_years: float | None = Field(
        None, gt=0, description="end of service, years of age (default: the request's life_years)"
    )


class FleetRequest(BaseModel):
    """A fleet to plan: the jobs, ``slots`` slots of ``slot_hours`` each, what may be added to the owned servers
    (``purchase``), the objective and the limits (budget, site power, allowed GPUs, servers and fabrics)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    jobs: list[Job] = Field(min_length=1)
    slots: int = Field(ge=1, le=520)
    slot_hours: float = Field(168.0, gt=0, allow_inf_nan=False)
    site: str = "us-colo"
    objective: Literal["cost", "energy", "carbon"] = "cost"
    purchase: Literal["buy", "rent", "either", "none"] = Field(
        "buy", description="what may be added to the owned servers: buy, rent, either (both) or none"
    )
    owned: list[Owned] = Field(default_factory=list, description="servers already owned (no capex)")
    budget_usd: float | None = Field(
        None, ge=0, allow_inf_nan=False, description="capex of what is bought plus all rent, USD (leave out: none)"
    )
    power_kw: float | None = Field(
        None, gt=0, allow_inf_nan=False, description="facility power per slot (default: the site's envelope)"
    )
    gpus: list[str] | None = Field(
        None,
        description="GPUs new servers may be bought or rented with (ids, families or id starts; default: any). "
        "Owned servers serve whatever their GPU: a fleet runs on what the team has (a single-job solve, in "
        "contrast, plans only on the allowed GPUs and leaves owned servers outside them unused)",
    )
    servers: list[str] | None = Field(
        None, description="server types new servers may be bought or rented as (default: any); owned ones serve"
    )
    fabrics: list[str] | None = Field(None, description="fabrics new servers may be bought on (default: any)")
    power_caps: list[float] = Field(default_factory=lambda: [0.7, 1.0])
    max_nodes: int = Field(DEFAULT_MAX_NODES, ge=1, le=100_000, description="most nodes bought or rented per pool")
    node_counts: list[int] | None = Field(
        None, description="evaluate only these node counts (default: every count 1..max_nodes, exact)"
    )
    life_years: float = Field(4.0, gt=0, allow_inf_nan=False)
    solver: SolverOptions = Field(
        default_factory=lambda: SolverOptions(time_limit_s=60.0, mip_rel_gap=1e-4, presolve=True)
    )

    @field_validator("gpus", "servers", "fabrics", "power_caps", mode="before")
    @classmethod
    def _one(cls, v: Any) -> Any:
        return one_as_list(v)

    @model_validator(mode="after")
    def _jobs(self) -> FleetRequest:
        ids = [j.id for j in self.jobs]
        if len(set(ids)) != len(ids):
            twice = sorted({i for i in ids if ids.count(i) > 1})
            raise ValueError(
                f"job ids must be unique: {', '.join(repr(i) for i in twice)} "
                f"{'is' if len(twice) == 1 else 'are'} given to more than one job; rename them"
            )
        for j in self.jobs:
            if j.release_slot >= self.slots:
                raise ValueError(
                    f"job {j.id}: release_slot {j.release_slot} is beyond the horizon of {self.slots} slots"
                )
            if j.due_slot >= self.slots:  # never read as the horizon end: the job's window would silently grow
                raise ValueError(
                    f"job {j.id}: due_slot {j.due_slot} is beyond the horizon of {self.slots} slots (the last is "
                    f"slot {self.slots - 1}): set due_slot to at most {self.slots - 1}, or plan more slots"
                )
        if self.purchase == "none" and not self.owned:
            raise ValueError("purchase 'none' plans on owned servers only: list them under 'owned'")
        if any(not (0 < c <= 1) for c in self.power_caps) or not self.power_caps:
            raise ValueError("power caps are fractions of TDP in (0, 1]")
        if self.node_counts is not None and any(n < 1 for n in self.node_counts):
            raise ValueError("node_counts must be positive")
        if self.node_counts is not None and not any(n <= self.max_nodes for n in self.node_counts):
            raise ValueError(
                f"node_counts: give at least one count from 1 to max_nodes ({self.max_nodes:,})"
                + (f"; all of {sorted(set(self.node_counts))} are above it" if self.node_counts else "")
                + ", or leave node_counts out for every count"
            )
        horizon_years = self.slots * self.slot_hours / cost_mod.HOURS_PER_YEAR
        if self.purchase in ("buy", "either") and horizon_years > self.life_years * (1 + 1e-9):
            # servers are bought at the start and serve life_years: past it they are retired, and their hardware
            # share (capex x horizon / life) would exceed what they cost -- the single-job rule
            # (planner.checks.in_service)
            raise ValueError(
                f"the horizon ({self.slots} slots x {self.slot_hours:g} h = {horizon_years:.2f} years) is longer than "
                f"the {self.life_years:g}-year service life of the servers it buys: plan at most "
                f"{math.floor(self.life_years * cost_mod.HOURS_PER_YEAR / self.slot_hours)} slots, or set life_years"
            )
        return self


def load_fleet_request(path: str) -> FleetRequest:
    """The fleet request in the YAML file ``path``; a missing, unreadable or invalid file is bad input naming it."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
    except FileNotFoundError:
        raise PlannerInputError(f"fleet file not found: {path}") from None
    except (IsADirectoryError, UnicodeDecodeError) as exc:
        raise PlannerInputError(f"{path}: not a YAML fleet request ({exc.__class__.__name__})") from None
    except yaml.YAMLError as exc:
        raise PlannerInputError(f"{path}: not valid YAML: {exc}") from None
    try:
        return FleetRequest.model_validate(data)
    except ValidationError as exc:
        raise PlannerInputError(describe_validation_error(exc, path)) from None


def check_fleet_ids(cat: Catalog, req: FleetRequest) -> None:
    """Every job's workload exists and its amount of work is one the workload can take (samples, tokens for a
    sequence model, epochs for one with a dataset size), and every owned server exists: bad input names the job
    (or the owned entry) it is written in, with the valid ids -- not the id or the rule alone, to be searched for."""
    for j in req.jobs:
        try:
            work_from(cat.workload(j.model), j.samples, j.tokens, j.epochs)
        except PlannerInputError as exc:
            raise PlannerInputError(f"job {j.id}: {exc}") from None
    for i, o in enumerate(req.owned):
        try:
            cat.server(o.server)
        except PlannerInputError as exc:
            raise PlannerInputError(f"owned.{i} (the owned servers' entry {i + 1}): {exc}") from None
