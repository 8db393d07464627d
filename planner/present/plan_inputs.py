"""The app's Plan page inputs: their defaults and the request they make.

Inputs are a mapping of the page's widget keys to values. The workload's own inputs -- the unit and amount of work,
precision, framework and deadline -- take the workload's defaults whenever the workload changes (``workload_inputs``);
every other input keeps its value (``common_inputs`` gives their first values). Values are the request's own (the
precision 'bf16', the framework 'megatron'), never a label that depends on the workload. The default deadline is one
that plans: 30 days where the default request for the workload has a plan in 30 days, else the shortest deadline the
explanation of that request names, rounded up (``deadline_that_plans``).
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import ValidationError

from planner.checks import no_server_problem, parse_owned, request_problems, servers_with_gpus
from planner.data import MAX_EVALUATION_SAMPLES, MAX_LIFE_YEARS, MAX_STARTUP_S, Catalog, Workload
from planner.errors import PlannerInputError, describe_validation_error
from planner.formatting import ceil_sig, number_text, parse_number
from planner.plan import PlanRequest, PlanResult

DEFAULT_MODEL = "llama3-8b"
DEFAULT_SITE = "us-colo"
DEFAULT_DEADLINE_DAYS = 30.0
DEADLINE_DIGITS = 2  # a deadline derived from the explanation, rounded up to 2 significant figures (53.18 -> 54)


def amount_units(wl: Workload) -> list[str]:
    """The units the amount of work can be given in: tokens for sequence models, samples, epochs with a dataset."""
    units = ["tokens", "samples"] if wl.sequence_length else ["samples"]
    if wl.dataset_samples:
        units.append("epochs")
    return units


def amount_default(wl: Workload, unit: str) -> float:
    """The workload's default amount of work in ``unit``."""
    if unit == "tokens":
        return float(wl.default_samples * (wl.sequence_length or 1))
    if unit == "epochs":
        return float(wl.default_samples / wl.dataset_samples) if wl.dataset_samples else 1.0
    return float(wl.default_samples)


def amount_key(model: str, unit: str) -> str:
    """The input of the amount of work in ``unit`` for ``model`` (one per workload and unit: each its own default)."""
    return f"amount_{model}_{unit}"


def trainable_gpus(catalog: Catalog) -> list[str]:
    """The GPU ids some server of the catalog carries (a GPU no server carries cannot be planned)."""
    return sorted({s.gpu for s in catalog.gpu_servers() if s.gpu is not None})


def common_inputs(catalog: Catalog) -> dict[str, Any]:
    """The first values of the inputs that do not follow the workload."""
    models = sorted(catalog.workloads)
    sites = sorted(catalog.sites)
    return {
        "model": DEFAULT_MODEL if DEFAULT_MODEL in models else models[0],
        "use_budget": False,
        "budget": 1e6,
        "budget_kind": "upfront",
        "power": 0.0,
        "sites": [DEFAULT_SITE] if DEFAULT_SITE in sites else sites[:1],
        "objective": "energy",
        "purchase": "buy",
        "life_years": 4.0,
        "startup_min": 0.0,
        "evaluations": 0,
        "evaluation_samples": 0.0,
        "owned": "",
        "gpus": [],
        "fabrics": [],
        "max_nodes": 1024,
    }


def workload_inputs(catalog: Catalog, model: str, deadline_days: float = DEFAULT_DEADLINE_DAYS) -> dict[str, Any]:
    """The inputs that follow the workload, at its defaults: the first unit, the default amount in each unit (as
    text with thousands separators), its precision and framework, and ``deadline_days``."""
    wl = catalog.workload(model)
    units = amount_units(wl)
    return {
        "unit": units[0],
        **{amount_key(model, u): number_text(amount_default(wl, u)) for u in units},
        "precision": wl.precision,
        "framework": wl.framework,
        "deadline": float(deadline_days),
    }


def default_inputs(catalog: Catalog, model: str | None = None, deadline_days: float = DEFAULT_DEADLINE_DAYS) -> dict:
    """Every input at its default for ``model`` (default: the first workload the page shows)."""
    common = common_inputs(catalog)
    model = model or str(common["model"])
    return {**common, "model": model, **workload_inputs(catalog, model, deadline_days)}


def deadline_that_plans(res: PlanResult, preferred: float = DEFAULT_DEADLINE_DAYS) -> tuple[float, str]:
    """(a default deadline in days, why): ``preferred`` when ``res`` (the request with it) has a plan; else the
    shortest deadline the explanation names, rounded up to 2 significant figures; ``preferred`` when relaxing the
    deadline alone gives no plan (the page then shows the explanation)."""
    if res.plan is not None:
        return preferred, "a plan meets it at the default inputs"
    need = next(
        (r.needed for r in (res.explanation.relaxations if res.explanation else []) if r.requirement == "deadline"),
        None,
    )
    if need is None or not need > preferred:
        return preferred, f"no deadline alone lets {res.request.model} plan at the default inputs"
    days = ceil_sig(need, DEADLINE_DIGITS)
    return days, (
        f"{preferred:g} days is too short for {res.request.model} at the default inputs; the shortest deadline that "
        f"plans is {need:,.4g} days, rounded up"
    )


def inputs_request(catalog: Catalog, inputs: dict[str, Any]) -> tuple[PlanRequest | None, list[str]]:  # noqa: C901 -- one check per input of the Plan page, each with its own message
    """(the request the inputs make, []) or (None, what is wrong in the page's words, one sentence each)."""
    model = str(inputs["model"])
    wl = catalog.workload(model)
    unit = str(inputs["unit"])
    problems: list[str] = []
    amount: float | None = None
    try:
        amount = parse_number(str(inputs.get(amount_key(model, unit)) or ""))
    except ValueError as exc:
        problems.append(f"The amount of work must be a positive number of {unit}: {exc}.")
    if amount is not None and not amount > 0:
        problems.append(f"The amount of work must be positive: enter the {unit} to train.")
    deadline, objective = inputs.get("deadline"), inputs.get("objective")
    if deadline is None or (not deadline > 0 and objective != "time"):
        problems.append("The deadline must be a positive number of days (or minimise time).")
    use_budget, budget = bool(inputs.get("use_budget")), inputs.get("budget")
    if use_budget and (budget is None or budget < 0):
        problems.append("The budget must be a number of US dollars >= 0 (or untick 'Limit the budget').")
    power = inputs.get("power")
    if power is None or power < 0:
        problems.append("The power envelope must be >= 0 kW (0 = each site's own envelope).")
    max_nodes = inputs.get("max_nodes")
    if max_nodes is None or not 1 <= max_nodes <= 100_000:
        problems.append("Max nodes must be a whole number from 1 to 100,000.")
    life = inputs.get("life_years")
    if life is None or not 0 < life <= MAX_LIFE_YEARS:
        problems.append(
            f"The service life of bought servers must be a number of years in (0, {MAX_LIFE_YEARS:g}] (default 4)."
        )
    startup_min = inputs.get("startup_min", 0.0)
    if startup_min is None or not (math.isfinite(startup_min) and 0 <= startup_min * 60.0 <= MAX_STARTUP_S):
        problems.append(
            f"The start-up of the run must be a number of minutes from 0 to {MAX_STARTUP_S / 60.0:,.0f} (a year; "
            "0 = none)."
        )
    evaluations, evaluation_samples = inputs.get("evaluations", 0), inputs.get("evaluation_samples", 0.0)
    if evaluations is None or evaluations < 0 or evaluations != int(evaluations):
        problems.append("Evaluations must be a whole number >= 0 (0 = none).")
    elif evaluation_samples is None or not (
        math.isfinite(evaluation_samples) and 0 <= evaluation_samples <= MAX_EVALUATION_SAMPLES
    ):
        problems.append(f"Held-out samples per evaluation must be a number from 0 to {MAX_EVALUATION_SAMPLES:,.0f}.")
    sites = list(inputs.get("sites") or [])
    if not sites:
        problems.append("Choose at least one site.")
    gpus = list(inputs.get("gpus") or [])
    servers = servers_with_gpus(catalog, gpus)
    if servers == []:
        problems.append(f"No server in the catalog carries {', '.join(gpus)}: choose other GPUs (or none for all).")
    owned: list[dict[str, Any]] = []
    owned_text = str(inputs.get("owned") or "")
    if owned_text.strip():
        try:
            owned = parse_owned(owned_text)
        except PlannerInputError as exc:
            problems.append(f"Servers you own: {exc}")
    if problems:
        return None, problems
    precision, framework = inputs.get("precision"), inputs.get("framework")
    fields: dict[str, Any] = {
        "model": model,
        unit: amount,
        "deadline_days": deadline if deadline and deadline > 0 else None,
        "budget_usd": budget if use_budget else None,
        "budget_kind": inputs.get("budget_kind", "upfront"),
        "power_kw": power or None,
        "sites": sites,
        "objective": objective,
        "purchase": inputs.get("purchase", "buy"),
        # the chosen GPU ids exactly, as the servers that carry them: a GPU pattern would match 'b200' in 'gb200'
        "servers": servers,
        "fabrics": list(inputs.get("fabrics") or []) or None,
        "max_nodes": int(max_nodes or 0),  # checked above: a whole number from 1 to 100,000
        # the workload's own precision and framework are the request's defaults (None): the command stays short
        "precision": None if precision in (None, wl.precision) else precision,
        "framework": None if framework in (None, wl.framework) else framework,
        "owned": owned,
        "life_years": life,
        "startup_s": float(startup_min or 0.0) * 60.0,
        "evaluations": int(evaluations or 0),
        "evaluation_samples": float(evaluation_samples or 0.0),
    }
    try:
        req = PlanRequest.model_validate(fields)
    except ValidationError as exc:  # a field the checks above do not cover: pydantic's words, one line each
        return None, describe_validation_error(exc, "Input problem").splitlines()
    # the GPUs chosen, not the servers they select, say why no server is left; then every check `solve` runs
    chosen = req.model_copy(update={"servers": None, "gpus": gpus or None})
    problem = no_server_problem(catalog, chosen, "app") or next(iter(request_problems(catalog, req, "app")), None)
    if problem is not None:
        return None, [problem.sentence()]
    return req, []
