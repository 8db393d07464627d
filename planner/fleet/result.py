"""What ``fleet()`` returns: ``FleetPlan``, its rows (typed), its text and its tables.

The rows are ``TypedDict``s: each is a plain ``dict`` (``row["server"]``), so the plan is JSON as it is and every
table is ``pandas.DataFrame(rows)``; the types say what each key holds. Every key is written by the planner; a
plan written by hand (a test, a chart's example) may leave out the keys it does not use.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypedDict

from planner.formatting import OBJECTIVE_UNITS_TEXT, objective_text, precision_caveat, sig4, slot_ranges, switches_text
from planner.solver import PlanStatus, SolverReport

ROW_CONFIG = ConfigDict(extra="forbid")  # a key no row type has is an error, not dropped


class PurchaseRow(TypedDict, total=False):
    """One server type and fabric kept, bought or rented (``FleetPlan.purchases``)."""

    __pydantic_config__ = ROW_CONFIG  # type: ignore[misc]
    server: str
    gpu: str | None
    fabric: str
    kind: str  # 'owned', 'buy', 'owned+buy' or 'rent'
    nodes: int  # kept + added (rented: the most rented in any slot)
    owned: int
    kept: int
    retired: int
    added: int  # bought (rented: the most rented in any slot)
    peak_busy_nodes: int
    switches_added: int
    capex_usd: float  # of what is added: servers, NICs, cables, switches beyond the owned cluster's
    rent_usd: float
    node_periods: int  # node billing periods paid (rent)


class AssignmentRow(TypedDict, total=False):
    """One job: its pool, mode (nodes, fabric, power cap, layout, precision) and the slots it runs in."""

    __pydantic_config__ = ROW_CONFIG  # type: ignore[misc]
    job: str
    model: str
    server: str
    gpu: str
    pool: str  # 'server|fabric', or 'server|fabric (rent)'
    kind: str  # 'site' or 'rent'
    nodes: int
    fabric: str
    power_cap: float  # fraction of TDP
    layout: str
    precision: str  # what it computes in (a GPU without fp4 computes fp4 in fp8)
    precision_asked: str
    workload_family: str  # cnn, encoder, llm, recsys
    frozen_base: bool  # a fine-tune of frozen base weights (LoRA): the workload states its trainable parameters
    time_to_train_h: float
    slots: list[int]  # ascending; the job may pause between slots
    first_slot: int
    last_slot: int
    late_slots: int  # slots after its due slot
    facility_energy_kwh: float
    facility_power_kw: float


class ScheduleRow(TypedDict, total=False):
    """One slot and pool in use: nodes busy, the jobs running and the facility power drawn."""

    __pydantic_config__ = ROW_CONFIG  # type: ignore[misc]
    slot: int
    server: str
    pool: str
    nodes: int
    jobs: str  # comma-separated job ids ('' in a slot where none runs)
    facility_power_kw: float  # jobs running + idle nodes of the pool
    on_site: bool  # False for a rental pool (its power is the provider's)


class FleetPlan(BaseModel):
    """What ``fleet`` returns: ``status`` (``PlanStatus``: optimal, time_limit, infeasible or no_solution), the
    ``objective`` and its value (``objective_value``, in formatting.OBJECTIVE_UNITS_TEXT; None without a plan), what
    is kept, bought and rented per server type and fabric (``purchases``), each job's pool, mode and the slots it
    runs in (``assignments``; ``slots`` a list of slot numbers), facility power per slot and pool (``schedule``),
    the money and energy ``totals``, HiGHS's report (``solver``: its bound and gap) and, without a plan, the
    ``explanation``. ``summary()`` is text; the ``*_frame()`` methods are tables that round-trip through CSV."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    status: PlanStatus
    objective: str
    objective_value: float | None
    purchases: list[PurchaseRow]
    assignments: list[AssignmentRow]
    schedule: list[ScheduleRow]
    totals: dict[str, float]
    solver: SolverReport | None
    explanation: str | None = None
    timings_s: dict[str, float] = Field(default_factory=dict)
    start: dict[str, float] = Field(
        default_factory=dict, description="figures of the start heuristics (improve_start), when they ran"
    )
    proofs: list[str] = Field(
        default_factory=list,
        description="what the planner proved of this plan beyond HiGHS's bound (pack_start: its cluster's size)",
    )

    def purchase_frame(self) -> pd.DataFrame:
        """One row per server type and fabric kept, bought or rented (``purchases``)."""
        return pd.DataFrame(self.purchases)

    def assignment_frame(self) -> pd.DataFrame:
        """One row per job (``assignments``), every cell a scalar so that the table round-trips through CSV:
        ``slots`` is the slots the job runs in as text, consecutive slots as 'first-last' and runs joined by
        commas in ascending order ('3-9,12' is slots 3 to 9 and 12; ``planner.formatting.parse_slot_ranges``
        reads it back into the list), beside ``first_slot``, ``last_slot`` and ``slots_run`` (how many slots it
        runs in; it may pause between slots)."""
        rows = [
            {**a, "slots": slot_ranges(a["slots"]), "slots_run": len(a["slots"])} if "slots" in a else a
            for a in self.assignments
        ]
        return pd.DataFrame(rows)

    def schedule_frame(self) -> pd.DataFrame:
        """One row per slot and pool in use: nodes busy, the jobs running (comma-separated ids), facility power."""
        return pd.DataFrame(self.schedule)

    def headline(self) -> str:
        """'Optimal fleet: cost = 31,815,406 USD' (the objective with its unit); a plan stopped by the time limit
        says it is not proven optimal; without a plan, 'No feasible fleet' or 'No fleet within the time limit'."""
        if self.objective_value is None:
            return "No fleet within the time limit" if self.status == PlanStatus.NO_SOLUTION else "No feasible fleet"
        head = (
            "Optimal fleet"
            if self.status == PlanStatus.OPTIMAL
            else "Best fleet within the time limit (not proven optimal)"
        )
        unit = OBJECTIVE_UNITS_TEXT.get(self.objective, "")
        return f"{head}: {self.objective} = {objective_text(self.objective_value)} {unit}".rstrip()

    def decisions(self, markdown: bool = False) -> list[str]:
        """What the plan keeps and retires of the owned servers, buys (per server type, on which fabric) and
        rents, the jobs that compute in another precision than they asked for, and the totals: one line each,
        as markdown list items (``markdown``, the app's) or plain text (``summary``)."""
        proved = [f"- **Proved**: {x}." if markdown else f"Proved: {x}" for x in self.proofs]
        return self._acquisitions(markdown) + self._precision_notes(markdown) + [self._totals_line(markdown)] + proved

    def summary(self) -> str:
        """The plan in a few lines, as ``PlanResult.summary()`` writes a single-job plan: the status and the
        objective with its unit; what is kept and retired of the owned servers, bought and rented per server type
        and fabric; per job its pool, nodes, the slots it runs in and how late it ends; the jobs computing in a
        fallback precision; the totals; HiGHS's bound and gap. Without a plan, why (the explanation)."""
        if self.objective_value is None:
            return f"{self.headline()}: {self.explanation or self.status}"
        lines = [self.headline()]
        lines += ["  " + x for x in self._acquisitions(False)]
        lines.append("  Jobs (pool, slots run, lateness):")
        lines += ["    " + _job_line(a) for a in self.assignments]
        lines += ["  " + x for x in self._precision_notes(False)]
        lines.append("  " + self._totals_line(False))
        if self.solver is not None:
            unit = OBJECTIVE_UNITS_TEXT.get(self.objective, "")
            rep = self.solver
            bound = f"bound {objective_text(rep.bound)} {unit}" if rep.bound is not None else "no bound"
            gap = f", gap {rep.gap:.2%}" if rep.gap is not None else ""
            lines.append(f"  Solver: HiGHS {rep.status.value}, {bound}{gap}")
        lines += [f"  Proved: {x}" for x in self.proofs]
        return "\n".join(lines)

    def _acquisitions(self, markdown: bool) -> list[str]:
        """'Keeps ...', 'Buys ...', 'Rents ...': one line per owned, bought and rented pool ('nothing' for none)."""
        b = _strong(markdown)
        end = "." if markdown else ""
        keeps, buys, rents = [], [], []
        for p in self.purchases:
            if p["kind"] == "rent":
                periods = p["node_periods"]
                rents.append(
                    f"{b('Rents')} {p['nodes']} x {p['server']} at peak ({periods:,} node billing "
                    f"period{'' if periods == 1 else 's'}, ${p['rent_usd']:,.0f}){end}"
                )
                continue
            if p["owned"]:
                keeps.append(
                    f"{b('Keeps')} {p['kept']} of {p['owned']} owned {p['server']} on {p['fabric']}"
                    + (f", {b('retires')} {p['retired']}" if p["retired"] else ", retires none")
                    + end
                )
            if p["added"]:
                where = f"extending the owned {p['fabric']} cluster" if p["owned"] else f"on {p['fabric']}"
                buys.append(
                    f"{b('Buys')} {p['added']} x {p['server']} {where} ({switches_text(p['switches_added'])} "
                    f"added, capex ${p['capex_usd']:,.0f}){end}"
                )
        lines = keeps + (buys or [f"{b('Buys')} nothing{end}"]) + (rents or [f"{b('Rents')} nothing{end}"])
        return [("- " if markdown else "") + x for x in lines]

    def _precision_notes(self, markdown: bool) -> list[str]:
        """A job asked for fp4 (or fp8) on a pool without it: never silent (fp16 is bf16's rate: no note); a job
        computing in a precision no published recipe trains its workload in (formatting.precision_caveat)."""
        b = _strong(markdown)
        notes = []
        for a in self.assignments:
            if (
                a.get("precision_asked") in ("fp8", "fp4")
                and a.get("precision")
                and a["precision"] != a["precision_asked"]
            ):
                asked, used = a["precision_asked"], a["precision"]
                notes.append(f"{b(a['job'])} runs on {a['gpu']}, which has no {asked}: it computes in {used}")
            caveat = precision_caveat(
                a.get("model", ""), a.get("workload_family", ""), a.get("precision", ""), a.get("frozen_base", False)
            )
            if caveat:
                notes.append(f"{b(a['job'])}: {caveat}")
        return [f"- {x}." if markdown else x for x in notes]

    def _totals_line(self, markdown: bool) -> str:
        """Capex, rent, cost over the horizon, facility energy and peak site power in one line."""
        t = self.totals
        return (
            f"{'- ' if markdown else ''}{_strong(markdown)('Totals')}: capex ${t.get('capex_usd', 0):,.0f}, rent "
            f"${t.get('rent_usd', 0):,.0f}, cost over the horizon ${t.get('cost_usd', 0):,.0f} (the bought "
            f"hardware's share + site energy + rent + late penalties); facility energy "
            f"{sig4(t.get('facility_energy_kwh', 0))} kWh; peak site power {sig4(t.get('peak_site_power_kw', 0))} kW"
            + ("." if markdown else "")
        )


def _job_line(a: AssignmentRow) -> str:
    """'pre: 3 x dgx-a100-80gb on hdr200, slots 0-2,4 (4 run), on time' (``summary``'s line of a job)."""
    rented = " (rented)" if a.get("kind") == "rent" else ""
    late = int(a.get("late_slots", 0))
    return (
        f"{a['job']}: {a['nodes']:,} x {a['server']} on {a['fabric']}{rented}, "
        f"slot{'' if len(a['slots']) == 1 else 's'} {slot_ranges(a['slots'])} ({len(a['slots'])} run), "
        + (f"late by {late} slot{'' if late == 1 else 's'}" if late else "on time")
    )


def _strong(markdown: bool) -> Callable[[str], str]:
    """Markdown's strong emphasis ('**Buys**') for the app's lines, nothing for plain text."""
    return (lambda text: f"**{text}**") if markdown else (lambda text: text)
