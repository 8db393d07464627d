"""What a solve returns: the plan, its alternatives, the binding limits, the explanation of an infeasible request,
and their text."""

from __future__ import annotations

import math
from typing import Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from planner.checks.request import PlanRequest
from planner.checks.search import BINDING_STEP
from planner.data import Estimate
from planner.formatting import number_text, sig4, switches_text, time_terms_text
from planner.solver import SolverReport

OBJECTIVE_UNITS = {"energy": "kWh", "cost": "USD", "carbon": "kgCO2e", "time": "h"}  # what each objective sums


class Plan(BaseModel):
    """One capacity plan: ``nodes`` x ``server`` (``gpus`` x ``gpu``) on ``fabric`` with ``switches``, every GPU at
    ``power_cap`` (fraction of TDP; ``power_cap_w`` in watts), bought or rented (``purchase``) at ``site``, running
    ``layout``. Units are in the names: ``time_to_train_h`` / ``_days``, ``power_kw`` (IT) and
    ``facility_power_kw`` (x PUE), ``energy_kwh`` / ``facility_energy_kwh``, ``cost_usd`` (the run's cost: the
    hardware's share or the rent, plus energy), ``capex_usd``, ``upfront_usd`` (spent before it starts),
    ``carbon_kg`` (kgCO2e), ``rack_units`` (U), ``throughput_samples_per_s``; ``mfu`` is a fraction. ``estimate`` is
    the exact model's full ``Estimate`` (step-time breakdown, memory, precision it computes in)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    server: str
    gpu: str
    nodes: int
    gpus: int
    fabric: str
    switches: int
    power_cap: float
    power_cap_w: float
    site: str
    purchase: str
    layout: str
    global_batch: int
    time_to_train_h: float
    time_to_train_days: float
    power_kw: float
    facility_power_kw: float
    energy_kwh: float
    facility_energy_kwh: float
    cost_usd: float
    capex_usd: float
    upfront_usd: float
    carbon_kg: float
    rack_units: int
    throughput_samples_per_s: float
    mfu: float
    bottleneck: str
    estimate: Estimate
    owned_nodes: int = Field(0, description="owned nodes the plan runs on (the others of its nodes are bought)")
    owned_unused_nodes: int = Field(0, description="owned nodes the plan does not run on (retired or left off)")
    owned_unused_idle_kw: float = Field(
        0.0, description="facility power those would draw idle if left powered on, kW (not in the plan's energy)"
    )
    evaluation_h: float = Field(
        0.0, description="evaluation inside time_to_train_h, hours (the request's evaluations; 0 without)"
    )
    startup_h: float = Field(0.0, description="start-up inside time_to_train_h, hours (the request's startup_s)")

    @property
    def training_h(self) -> float:
        """Training inside ``time_to_train_h``, hours: the time-to-train less evaluation and start-up (a column of
        ``to_frame`` and a key of `planner solve --json`, beside them)."""
        return self.time_to_train_h - self.evaluation_h - self.startup_h


class Relaxation(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    requirement: str
    given: float
    needed: float
    unit: str
    message: str


class RelaxationPair(BaseModel):
    """Two requirements relaxed together (a point of the Pareto front of the two thresholds)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    relaxations: list[Relaxation]
    message: str


class Explanation(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    message: str
    relaxations: list[Relaxation]
    pairs: list[RelaxationPair] = Field(default_factory=list)


class PlanResult(BaseModel):
    """What ``solve`` returns: ``status`` ('optimal', 'time_limit' or 'infeasible'), the ``plan`` (None when
    infeasible) and ``alternatives``, the ``objective`` and its value (in OBJECTIVE_UNITS), the ``binding``
    limits, HiGHS's report (``solver``), and for an infeasible request the ``explanation``: each requirement's
    smallest relaxation (``relaxations``: given, needed, unit) and pairs of them. ``summary()`` is text,
    ``to_frame()`` a table; frozen, JSON round-trips (``model_dump_json``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    request: PlanRequest
    status: Literal["optimal", "time_limit", "infeasible"]
    plan: Plan | None
    objective: str
    objective_value: float | None
    binding: list[str] = Field(description="limits whose relaxation by binding_step improves the objective")
    binding_step: float = BINDING_STEP
    solver: SolverReport | None
    alternatives: list[Plan]
    explanation: Explanation | None
    timings_s: dict[str, float] = Field(default_factory=dict)

    def to_frame(self) -> pd.DataFrame:
        """The plan and its alternatives, one row each (units in the column names; ``role`` is 'plan' or
        'alternative'). An infeasible result gives no rows, with the same columns."""
        rows = []
        for role, p in [("plan", self.plan)] + [("alternative", a) for a in self.alternatives]:
            if p is not None:
                d = p.model_dump(exclude={"estimate"})
                d["training_h"] = p.training_h
                # the precision each computes in: a GPU without the one asked for falls back (fp8 to bf16), so
                # the rows of one request can differ in it (the command line's tables and batch rows say it too)
                d["precision"] = p.estimate.precision
                d["role"] = role
                rows.append(d)
        columns = [k for k in Plan.model_fields if k != "estimate"] + ["training_h", "precision", "role"]
        return pd.DataFrame(rows, columns=columns)

    def summary(self) -> str:
        """What was decided, in a few lines: servers x count, GPU, fabric, power cap, layout, precision, time,
        facility power and energy, cost (run and up-front), carbon, the objective and the binding limits; or,
        when infeasible, the smallest relaxation of each requirement."""
        if self.plan is None:
            return f"No plan: {self.explanation.message if self.explanation else self.status}"
        p = self.plan
        gap = f", gap {self.solver.gap:.2%}" if self.solver and self.solver.gap else ""
        value = self.objective_value or 0.0
        # dollars whole, as the cost line above writes them (4 figures read 2,454,000 beside $2,453,791)
        objective_text = f"{value:,.0f}" if self.objective == "cost" and abs(value) >= 1 else sig4(value)
        lines = [
            f"{p.nodes:,} x {p.server} ({p.gpus:,} x {p.gpu}), {p.fabric} ({switches_text(p.switches)}), "
            f"cap {p.power_cap:.0%} ({p.power_cap_w:.0f} W), {purchase_text(p)}",
            f"  layout {p.layout}, batch {p.global_batch:,}; bottleneck: {p.bottleneck}",
            f"  precision {p.estimate.precision}",  # the one the plan computes in (fp4 falls back to fp8 on a GPU)
            f"  work {work_text(self.request)}: {p.estimate.samples_to_train:,.0f} samples at batch {p.global_batch:,}",
            f"  time {sig4(p.time_to_train_days)} days{run_terms_text(p)}; "
            f"facility power {sig4(p.facility_power_kw)} kW; "
            f"facility energy {sig4(p.facility_energy_kwh)} kWh; {p.rack_units:,} rack units",
            f"  cost {usd(p.cost_usd)} (up-front {usd(p.upfront_usd)}); carbon {sig4(p.carbon_kg)} kg",
            f"  objective {self.objective} = {objective_text} {OBJECTIVE_UNITS[self.objective]} ({self.status}{gap})",
            f"  binding (relaxing by {self.binding_step:.0%} improves the objective): "
            f"{', '.join(self.binding) or 'none'}",
        ]
        if self.request.owned:
            lines.append("  " + owned_summary(p))
        return "\n".join(lines)


def work_text(req: PlanRequest) -> str:
    """What the request trains, as it was given, every digit ('14,999,552,000,000 tokens', '3 epochs': an input, not
    a model figure rounded to 4 significant figures), or 'the workload's default'."""
    for name in ("tokens", "samples", "epochs"):
        value = getattr(req, name)
        if value is not None:
            return f"{number_text(value)} {name}"
    return f"{req.model}'s default"


def run_terms_text(p: Plan) -> str:
    """The time-to-train's terms where the request states start-up or evaluation, as ' (training 17.3 days +
    evaluation 1.13 h + start-up 30 min)'; empty for a run of training only."""
    text = time_terms_text(p.estimate.time_to_train_breakdown_h)
    return f" ({text})" if text else ""


def purchase_text(p: Plan) -> str:
    """What the plan acquires, at which site: 'rent at us-colo', 'buy at us-colo', and with owned servers what it
    adds to them ('buy 28 new nodes (+ 64 owned) at us-colo', 'nothing to buy: runs on 5 owned nodes at
    us-colo') -- not 'buy' for a plan that buys nothing."""
    if p.purchase != "buy" or not p.owned_nodes:
        return f"{p.purchase} at {p.site}"
    new = p.nodes - p.owned_nodes
    if new == 0:
        return f"nothing to buy: runs on {p.owned_nodes:,} owned node{'' if p.owned_nodes == 1 else 's'} at {p.site}"
    return f"buy {new:,} new node{'' if new == 1 else 's'} (+ {p.owned_nodes:,} owned) at {p.site}"


def owned_summary(p: Plan) -> str:
    """One line on the owned servers: how many the plan runs on, how many it leaves unused and their idle draw."""
    new = p.nodes - p.owned_nodes
    text = f"owned servers: the plan runs on {p.owned_nodes:,} owned and {new:,} new node{'' if new == 1 else 's'}"
    if p.purchase == "rent":
        text = f"owned servers: the plan rents all {p.nodes:,} nodes and runs on no owned one"
    if p.owned_unused_nodes:
        text += (
            f"; {p.owned_unused_nodes:,} owned nodes unused (retired or off for the run: left on idle they would "
            f"draw {p.owned_unused_idle_kw:,.4g} kW, not counted in the plan)"
        )
    return text


def usd(amount: float, up: bool = False) -> str:
    """Dollars: whole dollars, or with cents below $1 (rounded up when ``up``: a stated minimum must suffice)."""
    if amount == 0:
        return "$0"  # nothing, not '$0.00' beside whole dollars
    if abs(amount) < 1:
        v = math.ceil(amount * 100 - 1e-9) / 100 if up else amount
        return f"${v:,.2f}"
    return f"${math.ceil(amount - 1e-9 * abs(amount)) if up else amount:,.0f}"
