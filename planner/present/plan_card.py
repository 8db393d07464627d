"""The plan card and why-this-plan text: the recommended plan's figures, each written by planner.formatting in the
unit that reads (a short run in minutes, a small footprint in kg, cents under $10). No Streamlit here."""

from __future__ import annotations

import html

from planner.formatting import cap_text, carbon_text, duration_text, money_text
from planner.plan import PlanResult, purchase_text, run_terms_text
from planner.present.tables import OBJECTIVE_METRIC, OBJECTIVE_UNITS, human


def plan_card(res: PlanResult) -> dict[str, str]:
    """Human-readable figures of the recommended plan."""
    p = res.plan
    if p is None:
        return {}
    return {
        "Servers": f"{p.nodes:,} x {p.server}",
        "GPUs": f"{p.gpus:,} x {p.gpu}",
        "Fabric": f"{p.fabric} ({p.switches:,} switch{'' if p.switches == 1 else 'es'})",
        "Power cap": f"{cap_text(p.power_cap)} of TDP ({p.power_cap_w:.0f} W)",
        "Layout": p.layout,
        "Precision": p.estimate.precision,
        "Time to train": duration_text(p.time_to_train_days) + run_terms_text(p),
        "Facility power": f"{human(p.facility_power_kw)} kW",
        "Facility energy": f"{human(p.facility_energy_kwh)} kWh",
        "Cost (this run)": money_text(p.cost_usd),
        "Up-front": money_text(p.upfront_usd),
        "Carbon": carbon_text(p.carbon_kg),
        "Bottleneck": p.bottleneck,
        "Binding": ", ".join(res.binding) or "none",
        "Purchase": purchase_text(p),
        **(
            {
                "Owned servers": f"{p.owned_nodes:,} used, {p.nodes - p.owned_nodes:,} new"
                + (
                    f"; {p.owned_unused_nodes:,} unused ({human(p.owned_unused_idle_kw)} kW idle if left on)"
                    if p.owned_unused_nodes
                    else ""  # was '; 0 unused (0 kW idle if left on)' on every plan that uses them all
                )
            }
            if res.request.owned
            else {}
        ),
    }


def plan_card_html(card: dict[str, str]) -> str:
    """The card as a wrapping grid: values are never cut off, whatever the window width."""

    cells = "".join(
        '<div style="padding:0.4rem 0.6rem;border:1px solid rgba(128,128,128,0.3);border-radius:0.4rem">'
        f'<div style="font-size:0.8rem;opacity:0.7">{html.escape(k)}</div>'
        f'<div class="plan-value" style="font-size:1.1rem;overflow-wrap:anywhere;word-break:break-word">'
        f"{html.escape(v)}</div></div>"
        for k, v in card.items()
    )
    return (
        '<div class="plan-card" style="display:grid;grid-template-columns:repeat(auto-fill,minmax(15rem,1fr));'
        f'gap:0.5rem">{cells}</div>'
    )


def why_this_plan(res: PlanResult) -> list[str]:
    """Markdown lines: what decided the plan (binding constraints) and, per other GPU type, its best plan and
    how much better it would have to be to win."""
    p = res.plan
    if p is None:
        return []
    obj = res.objective
    # time as the plan card states it (in the unit that reads: '8.65 h', '29.4 days'), the others in their unit
    metric = "time_to_train_days" if obj == "time" else OBJECTIVE_METRIC[obj]
    unit = OBJECTIVE_UNITS[obj]

    def said(v: float) -> str:
        return duration_text(v) if obj == "time" else f"{human(v)} {unit}"

    best = float(getattr(p, metric))
    what = {
        "deadline": "the deadline (a later deadline would allow a plan with lower {obj})",
        "budget": "the budget (more money would allow a plan with lower {obj})",
        "power": "the power envelope (more kW would allow a plan with lower {obj})",
        "nodes": "the node limit (more nodes would allow a plan with lower {obj})",
        "rack": "the rack space (more rack units would allow a plan with lower {obj})",
    }
    lines = [f"**Minimising {obj}**: this plan has {said(best)}."]
    if res.binding:
        lines.append("**Binding constraints:** " + "; ".join(what.get(b, b).format(obj=obj) for b in res.binding) + ".")
    else:
        lines.append(
            "**No constraint binds:** relaxing the deadline, budget, power or node limit by 1% (or one node) would "
            "not give a lower-" + obj + " plan; the limits are met or sit just past what a better plan would need."
        )
    seen = {p.gpu}
    for a in res.alternatives:
        if a.gpu in seen:
            continue
        seen.add(a.gpu)
        v = float(getattr(a, metric))
        need = 1 - best / v if v > 0 else 0.0
        extra = []
        if a.cost_usd < p.cost_usd:
            extra.append(f"{money_text(p.cost_usd - a.cost_usd)} cheaper")
        if a.time_to_train_days < p.time_to_train_days:
            extra.append(f"{duration_text(p.time_to_train_days - a.time_to_train_days)} faster")
        trade = f" (it is {' and '.join(extra)})" if extra else ""
        # in another precision than the plan's: its GPU lacks the one asked for (fp4 -> fp8 -> bf16)
        other = f" in {a.estimate.precision}" if a.estimate.precision != p.estimate.precision else ""
        lines.append(
            f"- Runner-up on **{a.gpu}**: {a.nodes:,} x {a.server}{other}, {obj} {said(v)} = "
            f"{(v / best - 1) if best else 0:+.1%}{trade}. To win it would need {need:.1%} less {obj} "
            f"(at most {said(best)})."
        )
    if len(seen) == 1:
        lines.append("- No other GPU type has a plan within the limits (or alternatives are off).")
    return lines
