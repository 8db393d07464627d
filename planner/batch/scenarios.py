"""Batch scenarios: reading a scenario file, expanding it, and solving one scenario into a result row.

Scenario file (YAML)::

    base:            {model: llama3-8b, tokens: 1.0e12, deadline_days: 30, objective: cost}
    grid:            {gpus: [[A100], [H100]], purchase: [buy, rent], electricity_price_multiplier: [0.7, 1.0, 1.3]}
    scenarios:       [{deadline_days: 14}, {deadline_days: 60, objective: energy}]

``grid`` is a cartesian product; ``scenarios`` an explicit list; both are merged onto ``base`` (a file may
have either or both). CSV files are an explicit list: one scenario per row, list cells ``a;b``.
Any PlanRequest field may vary, plus catalog overrides: ``price_multiplier`` (server prices and rents),
``electricity_price_multiplier``, ``electricity_usd_per_kwh``, ``carbon_kg_per_kwh``, ``pue`` (applied to
the scenario's sites) and ``framework`` (a framework profile id of catalog/frameworks.yaml the workload runs
under, as ``--framework`` on the CLI). ``owned`` takes mappings ({server, count, fabric, age_years}) or the
command line's ``SERVER:COUNT[:FABRIC[:AGE_YEARS]]`` (in CSV: ``dgx-a100-80gb:64:hdr200:2.5;dgx-h100:8``). An
empty field (a CSV cell left empty, or null) is its default. Every scenario gets a stable id: a hash of its content.

Numbers: YAML 1.1 (PyYAML) reads ``1e12`` and ``1.0e12`` as *strings* (its float pattern wants a dot and a
signed exponent); the scenario loader here resolves every decimal/exponent literal as a float, so
``tokens: 1e12`` is the number 10^12. CSV cells that are numbers are numbers too.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import json
import math
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import ValidationError

from planner.checks import PlanRequest, parse_owned, request_problems, unknown_ids
from planner.data import Catalog, load_catalog, read_records
from planner.errors import PlannerInputError, describe_validation_error
from planner.plan import plan_notes, solve

if TYPE_CHECKING:
    from planner.plan import PlanResult

OVERRIDES = ("price_multiplier", "electricity_price_multiplier", "electricity_usd_per_kwh", "carbon_kg_per_kwh", "pue")
DEFAULTS = {"alternatives": 0}
MAX_SCENARIOS = 100_000  # one batch: ~100 MB to expand and hours to solve; more is refused before expanding
# the plan attributes of a result row; precision is the one the plan computes in (an fp4 scenario runs in fp8 on a
# GPU without fp4, an fp8 one in bf16: plan_notes says so in the row's message)
PLAN_COLUMNS = ("server", "gpu", "precision", "nodes", "fabric", "power_cap", "site", "purchase")


# ------------------------------------------------------------------------------------------- YAML numbers
_FLOAT = re.compile(
    r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
    |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.X,
)


class _Base(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    pass


class ScenarioLoader(_Base):
    """PyYAML's safe loader (libyaml when available) with floats as YAML 1.2 / JSON write them."""


ScenarioLoader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:float"]
    for k, v in _Base.yaml_implicit_resolvers.items()
}
ScenarioLoader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))


def parse_yaml(text: str) -> object:
    """A scenario file's text as data, every decimal or exponent literal a float (``1e12`` too)."""
    return yaml.load(text, Loader=ScenarioLoader)


def scenario_number(value: object) -> object:
    """A CSV/str cell that spells a number, as that number (else unchanged)."""
    if isinstance(value, str):
        v = value.strip()
        if re.fullmatch(r"[-+]?[0-9]+", v):
            return int(v)
        if _FLOAT.match(v):
            try:
                return float(v.replace("_", ""))
            except ValueError:
                return value
    return value


# ------------------------------------------------------------------------------------------- scenarios
def scenario_id(scenario: dict[str, Any]) -> str:
    """A scenario's stable id: the first 12 hex digits of the SHA-1 of its canonical JSON."""
    canon = json.dumps(scenario, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha1(canon.encode()).hexdigest()[:12]


def expand(spec: object) -> list[dict[str, Any]]:
    """The scenarios of a spec (base + grid product + explicit list), each with a stable ``id``; a spec of more than
    MAX_SCENARIOS is refused before it is expanded."""
    base, grid, explicit = spec_parts(spec)
    check_size(grid, len(explicit))
    out: list[dict[str, Any]] = []
    keys = list(grid)
    for combo in itertools.product(*(grid[k] for k in keys)) if keys else [()]:
        merged = {**base, **dict(zip(keys, combo, strict=True))}
        out += [{**merged, **ex} for ex in explicit] if explicit else [merged]
    seen: set[str] = set()
    unique = []
    for s in out:
        s.pop("id", None)
        s["id"] = scenario_id(s)
        if s["id"] not in seen:
            seen.add(s["id"])
            unique.append(s)
    return unique


def spec_parts(spec: object) -> tuple[dict[str, Any], dict[str, list[Any]], list[dict[str, Any]]]:
    """(base, grid, explicit list) of a spec (a list is an explicit list), each checked for its shape."""
    if isinstance(spec, list):
        spec = {"scenarios": spec}
    if not isinstance(spec, dict):
        raise PlannerInputError("a scenario file is a mapping with base/grid/scenarios, or a list of scenarios")
    unknown = set(spec) - {"base", "grid", "scenarios"}
    if unknown:
        other = (
            "; this is a fleet request (slots, jobs): plan it with `planner fleet FILE` (the app's Fleet page)"
            if "jobs" in unknown
            else ""
        )
        raise PlannerInputError(f"unknown top-level keys {sorted(unknown)}: use base, grid, scenarios{other}")
    base = spec.get("base") or {}
    grid = spec.get("grid") or {}
    explicit = spec.get("scenarios") or []
    if not isinstance(base, dict):
        raise PlannerInputError(
            f"base: a mapping of request fields, e.g. base: {{model: llama3-8b, tokens: 1.0e12}} (got {base!r})"
        )
    if not isinstance(grid, dict) or not all(isinstance(v, list) and v for v in grid.values()):
        raise PlannerInputError("grid: every entry is a non-empty list of values")
    if not isinstance(explicit, list):
        raise PlannerInputError("scenarios: a list of mappings")
    if "scenarios" in spec and not explicit and not grid and not base:
        raise PlannerInputError(
            "scenarios: the list is empty, so there is nothing to run: give at least one scenario (or a grid)"
        )
    for ex in explicit:
        if not isinstance(ex, dict):
            raise PlannerInputError(f"scenarios: each entry is a mapping (got {ex!r})")
    return dict(base), grid, explicit


def check_size(grid: dict[str, list[Any]], explicit: int) -> None:
    """A spec whose grid (times its explicit list) makes more than MAX_SCENARIOS scenarios is bad input, counted
    before anything is expanded: its size, each key's count and the limit."""
    count = math.prod(len(v) for v in grid.values()) * max(explicit, 1)
    if count > MAX_SCENARIOS:
        factors = [f"{len(v)} {k}" for k, v in grid.items()] + ([f"{explicit} scenarios"] if explicit else [])
        raise PlannerInputError(
            f"the scenario file makes {count:,} scenarios ({' x '.join(factors)}), more than the {MAX_SCENARIOS:,} "
            "one batch runs: narrow the grid, or split it into several scenario files (each with its own --out)"
        )


def load_scenarios(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The scenarios of a YAML or CSV scenario file (see the module docstring), expanded, each with its id."""
    p = Path(path)
    if not p.is_file():
        raise PlannerInputError(f"scenario file not found: {p}")
    if p.suffix == ".csv":  # read_records checks every row against the header
        return expand([{k: scenario_number(v) for k, v in r.items()} for r in read_records(p)])
    try:
        spec = parse_yaml(p.read_text())
    except yaml.YAMLError as exc:
        raise PlannerInputError(f"{p}: not valid YAML: {yaml_problem(exc)}") from None
    except UnicodeDecodeError:
        raise PlannerInputError(f"{p}: not a text file") from None
    return expand(spec)


def yaml_problem(exc: yaml.YAMLError) -> str:
    """A YAML error in one line: what is wrong and where ('did not find expected ',' or ']' (line 2, column 1)')."""
    problem = getattr(exc, "problem", None)
    mark = getattr(exc, "problem_mark", None)
    if problem is None:
        return " ".join(str(exc).split())
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
    context = getattr(exc, "context", None)
    return f"{problem}{where}" + (f", {context}" if context else "")


def to_request(s: dict[str, Any], catalog: Catalog | None = None) -> tuple[PlanRequest, dict[str, Any]]:
    """(request, catalog overrides) of a scenario; PlannerInputError naming the scenario and field -- every field the
    schema refuses and, with ``catalog``, every id it lacks (checks.unknown_ids) beside them."""
    # an empty field (a CSV cell left empty, or null) is its default, as the CSV format says (owned, sites, max_nodes)
    named = {k for k in s if k not in ("id", "framework") and k not in OVERRIDES}
    fields = {k: v for k, v in s.items() if k in named and v is not None}
    # a misspelt field is named even when it is empty (a CSV column whose cells are all blank)
    unknown = sorted(named - set(PlanRequest.model_fields))
    if unknown:  # a typo: the nearest field, and every one a scenario may set
        known = sorted({*PlanRequest.model_fields, *OVERRIDES, "framework"})
        said = []
        for k in unknown:
            near = difflib.get_close_matches(str(k), known, n=1)
            said.append(f"'{k}'" + (f" (did you mean {near[0]}?)" if near else ""))
        raise PlannerInputError(
            f"scenario {s.get('id')}: unknown field{'s' if len(unknown) > 1 else ''} {', '.join(said)}; a scenario "
            f"may set {', '.join(known)}"
        )
    over = {k: scenario_number(s[k]) for k in OVERRIDES if s.get(k) is not None}  # empty: the catalog's own
    framework = s.get("framework")
    if framework is not None and (not isinstance(framework, str) or not framework.strip()):
        raise PlannerInputError(
            f"scenario {s.get('id')}: framework: must be a framework id (planner catalog frameworks)"
        )
    for k, v in over.items():
        if (
            isinstance(v, bool)
            or not isinstance(v, int | float)
            or not math.isfinite(v)
            or v < 0
            or (k == "pue" and v < 1)
        ):
            raise PlannerInputError(
                f"scenario {s.get('id')}: {k}: must be a number >= {1 if k == 'pue' else 0} (got {v!r}); leave it "
                "empty for the catalog's own"
            )
    for key in ("gpus", "sites", "servers", "fabrics"):
        if isinstance(fields.get(key), str):
            fields[key] = [x.strip() for x in fields[key].split(",")]
    owned = fields.get("owned")
    if isinstance(owned, str) or (isinstance(owned, list) and any(isinstance(o, str) for o in owned)):
        # the command line's short form, SERVER:COUNT[:FABRIC[:AGE_YEARS]] (a CSV cell, several as a;b)
        try:
            fields["owned"] = [e for o in ([owned] if isinstance(owned, str) else owned) for e in _owned_entries(o)]
        except PlannerInputError as exc:
            raise PlannerInputError(f"scenario {s.get('id')}: owned: {exc}") from None
    if framework is not None:
        over["framework"] = framework.strip()
    try:
        return PlanRequest.model_validate({**DEFAULTS, **fields}), over
    except ValidationError as exc:
        where = f"scenario {s.get('id')}"
        unknown = [f"{where}: {line}" for line in unknown_ids(catalog, fields)] if catalog is not None else []
        raise PlannerInputError("\n".join([describe_validation_error(exc, where), *unknown])) from None


def _owned_entries(o: Any) -> list[Any]:
    """One owned item of a scenario: 'SERVER:COUNT[:FABRIC[:AGE_YEARS]]' (or several, comma separated) as entries, a
    mapping as it is."""
    return parse_owned(o) if isinstance(o, str) else [o]


def apply_overrides(cat: Catalog, req: PlanRequest, over: dict[str, Any]) -> Catalog:
    """The catalog a scenario's overrides make: every workload under the ``framework`` given, server prices and rents
    times ``price_multiplier``, and the electricity price, carbon and PUE of the request's sites replaced."""
    if not over:
        return cat
    if "framework" in over:  # every workload runs under that profile (a scenario plans one of them)
        fw = cat.framework(str(over["framework"])).id  # an unknown id is a clear error listing the valid ones
        cat = cat.replace(workloads={k: w.model_copy(update={"framework": fw}) for k, w in cat.workloads.items()})
    servers = cat.servers
    if "price_multiplier" in over:
        f = float(over["price_multiplier"])
        servers = {
            k: v.model_copy(
                update={
                    "price_usd": None if v.price_usd is None else v.price_usd * f,
                    "rent_usd_per_month": None if v.rent_usd_per_month is None else v.rent_usd_per_month * f,
                }
            )
            for k, v in servers.items()
        }
    sites = dict(cat.sites)
    for sid in req.sites:
        site = cat.site(sid)
        upd: dict[str, Any] = {}
        if "electricity_price_multiplier" in over:
            upd["electricity_usd_per_kwh"] = site.electricity_usd_per_kwh * float(over["electricity_price_multiplier"])
        for k in ("electricity_usd_per_kwh", "carbon_kg_per_kwh", "pue"):
            if k in over:
                upd[k] = float(over[k])
        sites[sid] = site.model_copy(update=upd)
    return cat.replace(servers=servers, sites=sites)


# ------------------------------------------------------------------------------------------- one scenario
_WORKER_CATALOG: Catalog | None = None
_OVERRIDE_CACHE: dict[str, Catalog] = {}


def init_worker(catalog_dir: str | None, models_dir: str | None) -> None:
    """Load the catalog once per worker process (a forked worker inherits the parent's)."""
    global _WORKER_CATALOG
    _WORKER_CATALOG = load_catalog(catalog_dir, models_dir)
    _OVERRIDE_CACHE.clear()


def spec_json(s: dict[str, Any]) -> str:
    """A scenario's fields (its id left out) as canonical JSON: the ``scenario`` column of a result row."""
    return json.dumps({k: v for k, v in s.items() if k != "id"}, sort_keys=True, default=str)


def error_row(s: dict[str, Any], message: str) -> dict[str, Any]:
    """The result row of a scenario that ended without an answer (status ``error``), saying why."""
    return {"id": s["id"], "scenario": spec_json(s), "model": s.get("model"), "status": "error", "message": message}


# The scenario fields the physics of a solve depends on (plan.candidates' physics key): scenarios equal in these
# share it, and a worker that solves them in a row computes it once.
PHYSICS_FIELDS = (
    "model",
    "tokens",
    "samples",
    "epochs",
    "global_batch",
    "precision",
    "gpus",
    "servers",
    "fabrics",
    "power_caps",
    "max_nodes",
)


def physics_group(s: dict[str, Any]) -> str:
    """The scenario's physics group: its ``PHYSICS_FIELDS`` (for scheduling only: scenarios of one group share the
    physics a worker computes or loads once)."""
    return json.dumps([s.get(k) for k in PHYSICS_FIELDS], default=str)


# The scenario fields a priced chunk depends on besides its physics (plan.candidates' pricing key, with the catalog
# overrides that change prices, PUE or carbon): scenarios of one physics group equal in these -- those that differ
# only in limits or objective -- reduce the same priced rows, which a worker keeps while they are solved in a row.
PRICING_FIELDS = (
    *OVERRIDES,
    "sites",
    "purchase",
    "life_years",
    "owned",
    "startup_s",
    "evaluations",
    "evaluation_samples",
)


def pricing_group(s: dict[str, Any]) -> str:
    """The scenario's pricing group within its physics group: its ``PRICING_FIELDS`` (for scheduling only)."""
    return json.dumps([s.get(k) for k in PRICING_FIELDS], default=str)


def run_scenario(s: dict[str, Any], catalog: Catalog | None = None) -> dict[str, Any]:
    """Solve one scenario into its result row; always returns a row (never raises): ``bad_input`` for a scenario the
    checks before a solve refuse (worded in its fields), ``error`` for a crash of the planner on it."""
    t0 = time.perf_counter()
    row: dict[str, Any] = {"id": s.get("id"), "scenario": spec_json(s), "model": s.get("model")}
    try:
        cat = catalog or _WORKER_CATALOG or load_catalog()
        req, over = to_request(s, cat)
        row["budget_kind"] = req.budget_kind
        row["budget_usd"] = req.budget_usd
        cat = overridden_catalog(cat, req, over)
        problems = request_problems(cat, req, "fields")  # worded in a scenario's fields, as `solve` refuses them
        if problems:
            raise PlannerInputError(f"scenario {s.get('id')}: {problems[0]}")
        row.update(result_fields(cat, req, solve(req, cat)))
    except PlannerInputError as exc:  # the message names its scenario, whichever check refused it
        said, prefix = str(exc), f"scenario {s.get('id')}: "
        row["status"], row["message"] = "bad_input", said if said.startswith(prefix) else prefix + said
    except Exception as exc:  # a crash of one scenario is a row, not the end of the batch
        row["status"], row["message"] = "error", f"{type(exc).__name__}: {exc}"
    row["seconds"] = time.perf_counter() - t0
    row["worker_pid"] = os.getpid()
    return row


def overridden_catalog(cat: Catalog, req: PlanRequest, over: dict[str, Any]) -> Catalog:
    """``cat`` with a scenario's overrides applied (``apply_overrides``), kept per worker for the next scenario with
    the same overrides and sites."""
    if not over:
        return cat
    key = json.dumps([id(cat), sorted(over.items()), req.sites], default=str)
    if key not in _OVERRIDE_CACHE:
        _OVERRIDE_CACHE[key] = apply_overrides(cat, req, over)
    return _OVERRIDE_CACHE[key]


def result_fields(cat: Catalog, req: PlanRequest, res: PlanResult) -> dict[str, Any]:
    """The result row's fields of a solve: status and objective; with a plan, its attributes (the precision it computes
    in), figures and what was adjusted (``message``, in the scenario's field names); without one, the explanation and
    its relaxations (JSON)."""

    row: dict[str, Any] = {"status": res.status, "objective": res.objective, "objective_value": res.objective_value}
    if res.plan is None:
        row["message"] = res.explanation.message if res.explanation else "infeasible"
        if res.explanation and res.explanation.relaxations:
            row["relaxations"] = json.dumps([r.model_dump() for r in res.explanation.relaxations])
        return row
    p = res.plan
    row.update({c: p.estimate.precision if c == "precision" else getattr(p, c) for c in PLAN_COLUMNS})
    row.update(
        {
            "gpus": p.gpus,
            "layout": p.layout,
            "time_to_train_days": p.time_to_train_days,
            "facility_power_kw": p.facility_power_kw,
            "facility_energy_kwh": p.facility_energy_kwh,
            "cost_usd": p.cost_usd,
            "upfront_usd": p.upfront_usd,
            "carbon_kg": p.carbon_kg,
            "bottleneck": p.bottleneck,
            "binding": ",".join(res.binding),
            "owned_nodes": p.owned_nodes,  # of the plan's nodes, those already owned (the rest are added)
            "owned_unused_nodes": p.owned_unused_nodes,
        }
    )
    if req.startup_s or req.evaluations:  # the run's terms inside time_to_train_days (evaluation follows the plan)
        row.update({"training_days": p.training_h / 24.0, "evaluation_h": p.evaluation_h, "startup_h": p.startup_h})
    row["gap"] = res.solver.gap if res.solver else None
    row["message"] = "; ".join(plan_notes(cat, req, p, style="fields"))  # what was adjusted (fp8 on a GPU without it)
    return row
