"""What a plan says was adjusted or left unused, never silently: precision fallbacks, rounded batches, batches above
a workload's limit, owned servers retiring or unusable; worded for the command line, the app or a batch file."""

from __future__ import annotations

from typing import Any

from planner.checks import PlanRequest, Style, allowed_servers, field_name, in_service, owned_fabric
from planner.data import Catalog, Workload
from planner.formatting import precision_caveat


def plan_notes(catalog: Catalog, req: PlanRequest, plan: Any, style: Style = "cli") -> list[str]:
    """What was adjusted in the chosen plan (never silent): fp8 or fp4 on a GPU without it, fp4 for a workload
    no published FP4 recipe trains (textfmt.precision_caveat), a rounded-up global batch, owned servers it cannot
    run on -- the service life named as the command line's flag, the app's input or a batch scenario's field
    (``style`` 'cli', 'app', 'fields')."""
    notes = []
    precision = req.precision or catalog.workload(req.model).precision
    if precision != plan.estimate.precision and precision in ("fp8", "fp4"):
        notes.append(f"{plan.estimate.gpu} has no {precision}: this plan computes in {plan.estimate.precision}")
    wl = catalog.workload(req.model)
    caveat = precision_caveat(req.model, wl.family, plan.estimate.precision, wl.trainable_params is not None)
    notes += [caveat] if caveat else []  # fp4 for a CNN: no published recipe, an extrapolation
    if req.global_batch is not None and plan.global_batch != req.global_batch:
        notes.append(
            f"global batch {req.global_batch:,} was rounded up to {plan.global_batch:,} (a whole micro-batch for "
            f"each data-parallel replica of layout {plan.layout})"
        )
    notes += owned_notes(catalog, req, style)
    notes += owned_retiring_notes(catalog, req, plan.time_to_train_h, style)
    notes += batch_limit_notes(catalog.workload(req.model), req.global_batch)
    return notes


def batch_limit_notes(wl: Workload, global_batch: int | None) -> list[str]:
    """A global batch given above the workload's stated limit (plans the planner makes never exceed it): said,
    with what the estimate then assumes -- the same tokens for an LLM (Workload.convergence empty: optimistic,
    since beyond the critical batch more tokens reach the same loss), the convergence curve extrapolated for a
    workload with a published convergence point (compute.samples_factor)."""
    if global_batch is None:
        return []
    if wl.max_global_batch_tokens and wl.sequence_length:
        limit = int(wl.max_global_batch_tokens // wl.sequence_length)
        if global_batch <= limit:
            return []
        tokens = global_batch * wl.sequence_length
        assumed = (
            "this estimate trains the same tokens at it, which is optimistic: beyond the critical batch more tokens "
            "are needed to reach the same loss"
            if not wl.convergence
            else "the tokens to converge at it are extrapolated from the convergence data"
        )
        return [
            f"global batch {global_batch:,} sequences ({tokens:,.0f} tokens per step) is above the largest "
            f"'{wl.id}' trains at, {limit:,} sequences ({wl.max_global_batch_tokens:,.0f} tokens): {assumed}"
        ]
    if wl.max_global_batch and global_batch > wl.max_global_batch:
        return [
            f"global batch {global_batch:,} is above the largest with a published convergence point for "
            f"'{wl.id}', {int(wl.max_global_batch):,} samples: the samples to converge at it are extrapolated"
        ]
    return []


def owned_retiring_notes(catalog: Catalog, req: PlanRequest, run_h: float, style: Style = "cli") -> list[str]:
    """Owned servers still in service that retire before a run of ``run_h`` hours would end, so the plan cannot
    run on them (a run never changes size: checks.in_service) -- said, not left as silently unused."""
    out = []
    for o in req.owned:
        end = o.retire_at_age_years if o.retire_at_age_years is not None else req.life_years
        if o.age_years >= end or bool(in_service(o.age_years, run_h, end)):
            continue  # past their service already (owned_notes says so), or they serve the whole run
        left_days = (end - o.age_years) * 365.25
        out.append(
            f"the {o.count} owned {o.server} on {owned_fabric(catalog, o)} leave service in {left_days:,.3g} days "
            f"({o.age_years:g} of {end:g} years), before this plan's {run_h / 24:,.3g}-day run would end, so it "
            f"cannot run on them (a run never changes size); a run that ends by then could "
            f"({field_name('life_years', style)})"
        )
    return out


def owned_notes(catalog: Catalog, req: PlanRequest, style: Style = "cli") -> list[str]:
    """Owned servers no plan of the request can run on, and why (never silently unused)."""
    allowed = set(allowed_servers(catalog, req))
    out = []
    for o in req.owned:
        fab = owned_fabric(catalog, o)
        why = []
        if req.purchase == "rent":
            why.append("the request only rents")
        if o.server not in allowed:
            why.append("the server is outside the allowed GPUs/servers")
        if req.fabrics is not None and fab not in req.fabrics:
            why.append(f"{fab} is outside the allowed fabrics")
        end = o.retire_at_age_years if o.retire_at_age_years is not None else req.life_years
        if o.age_years >= end:
            why.append(
                f"they are {o.age_years:g} years old, past the end of their service at {end:g} years "
                f"({field_name('life_years', style)}; raise it to keep them in service)"
            )
        if why:
            out.append(f"the {o.count} owned {o.server} on {fab} cannot serve this request: {'; '.join(why)}")
    return out
