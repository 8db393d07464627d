"""Batch optimization of procurement scenarios: expand, run in parallel (processes or Ray), resume, report.

Scenario file (YAML)::

    base:            {model: llama3-8b, tokens: 1.0e12, deadline_days: 30, objective: cost}
    grid:            {gpus: [[A100], [H100]], purchase: [buy, rent], electricity_price_multiplier: [0.7, 1.0, 1.3]}
    scenarios:       [{deadline_days: 14}, {deadline_days: 60, objective: energy}]

``grid`` is a cartesian product; ``scenarios`` an explicit list; both are merged onto ``base`` (a file may
have either or both). CSV files are an explicit list: one scenario per row, list cells ``a;b``.
Any PlanRequest field may vary, plus catalog overrides: ``price_multiplier`` (server prices and rents),
``electricity_price_multiplier``, ``electricity_usd_per_kwh``, ``carbon_kg_per_kwh``, ``pue`` (applied to
the scenario's sites). Every scenario gets a stable id: a hash of its content.

Nothing is lost: each finished scenario is appended to ``<out>/results.jsonl`` and flushed at once; a re-run
of the same command skips the ids already there. A failing scenario (infeasible, bad input, time-out,
crash) becomes a row with its status and message.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import time
from collections.abc import Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

import pandas as pd
import yaml
from pydantic import ValidationError

from planner.data import Catalog, load_catalog, read_records
from planner.errors import PlannerInputError, describe_validation_error
from planner.optimize import PlanRequest, solve

OVERRIDES = ("price_multiplier", "electricity_price_multiplier", "electricity_usd_per_kwh", "carbon_kg_per_kwh", "pue")
RESULTS = "results.jsonl"
DEFAULTS = {"alternatives": 0}


# ------------------------------------------------------------------------------------------- scenarios
def scenario_id(scenario: dict[str, Any]) -> str:
    canon = json.dumps(scenario, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha1(canon.encode()).hexdigest()[:12]


def expand(spec: dict[str, Any] | list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The scenarios of a spec (base + grid product + explicit list), each with a stable ``id``."""
    if isinstance(spec, list):
        spec = {"scenarios": spec}
    if not isinstance(spec, dict):
        raise PlannerInputError("a scenario file is a mapping with base/grid/scenarios, or a list of scenarios")
    unknown = set(spec) - {"base", "grid", "scenarios"}
    if unknown:
        raise PlannerInputError(f"unknown top-level keys {sorted(unknown)}: use base, grid, scenarios")
    base = dict(spec.get("base") or {})
    grid = spec.get("grid") or {}
    explicit = spec.get("scenarios") or []
    if not isinstance(grid, dict) or not all(isinstance(v, list) and v for v in grid.values()):
        raise PlannerInputError("grid: every entry is a non-empty list of values")
    out: list[dict[str, Any]] = []
    keys = list(grid)
    for combo in itertools.product(*(grid[k] for k in keys)) if keys else [()]:
        merged = {**base, **dict(zip(keys, combo, strict=True))}
        if explicit:
            for ex in explicit:
                if not isinstance(ex, dict):
                    raise PlannerInputError(f"scenarios: each entry is a mapping (got {ex!r})")
                out.append({**merged, **ex})
        else:
            out.append(merged)
    for s in out:
        s["id"] = scenario_id(s)
    ids = [s["id"] for s in out]
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        out = [s for s in out if not (s["id"] in seen or seen.add(s["id"]))]  # type: ignore[func-returns-value]
    return out


def load_scenarios(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    p = Path(path)
    if not p.exists():
        raise PlannerInputError(f"scenario file not found: {p}")
    if p.suffix == ".csv":
        return expand(read_records(p))
    try:
        spec = yaml.safe_load(p.read_text())
    except yaml.YAMLError as exc:
        raise PlannerInputError(f"{p}: not valid YAML: {exc}") from None
    return expand(spec)


def to_request(s: dict[str, Any]) -> tuple[PlanRequest, dict[str, Any]]:
    """(request, catalog overrides) of a scenario; PlannerInputError naming the scenario and field."""
    fields = {k: v for k, v in s.items() if k != "id" and k not in OVERRIDES}
    over = {k: s[k] for k in OVERRIDES if k in s}
    for k, v in over.items():
        if not isinstance(v, int | float) or not math.isfinite(v) or v < 0 or (k == "pue" and v < 1):
            raise PlannerInputError(f"scenario {s.get('id')}: {k}: must be a number >= {1 if k == 'pue' else 0}")
    for key in ("gpus", "sites", "servers", "fabrics"):
        if isinstance(fields.get(key), str):
            fields[key] = [x.strip() for x in fields[key].split(",")]
    try:
        return PlanRequest.model_validate({**DEFAULTS, **fields}), over
    except ValidationError as exc:
        raise PlannerInputError(describe_validation_error(exc, f"scenario {s.get('id')}")) from None


def apply_overrides(cat: Catalog, req: PlanRequest, over: dict[str, Any]) -> Catalog:
    if not over:
        return cat
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


def _init_worker(catalog_dir: str | None, models_dir: str | None) -> None:
    global _WORKER_CATALOG
    _WORKER_CATALOG = load_catalog(catalog_dir, models_dir)


def run_scenario(s: dict[str, Any], catalog: Catalog | None = None) -> dict[str, Any]:
    """Solve one scenario; always returns a row (never raises)."""
    t0 = time.perf_counter()
    row: dict[str, Any] = {
        "id": s.get("id"),
        "scenario": json.dumps({k: v for k, v in s.items() if k != "id"}, sort_keys=True, default=str),
    }
    try:
        cat = catalog or _WORKER_CATALOG or load_catalog()
        req, over = to_request(s)
        key = json.dumps([sorted(over.items()), req.sites], default=str)
        if over:
            if key not in _OVERRIDE_CACHE:
                _OVERRIDE_CACHE[key] = apply_overrides(cat, req, over)
            cat = _OVERRIDE_CACHE[key]
        res = solve(req, cat)
        row["status"] = res.status
        row["objective"] = res.objective
        row["objective_value"] = res.objective_value
        if res.plan is not None:
            p = res.plan
            row.update(
                {
                    "server": p.server,
                    "gpu": p.gpu,
                    "nodes": p.nodes,
                    "gpus": p.gpus,
                    "fabric": p.fabric,
                    "power_cap": p.power_cap,
                    "site": p.site,
                    "purchase": p.purchase,
                    "layout": p.layout,
                    "time_to_train_days": p.time_to_train_days,
                    "facility_power_kw": p.facility_power_kw,
                    "facility_energy_kwh": p.facility_energy_kwh,
                    "cost_usd": p.cost_usd,
                    "upfront_usd": p.upfront_usd,
                    "carbon_kg": p.carbon_kg,
                    "bottleneck": p.bottleneck,
                    "binding": ",".join(res.binding),
                }
            )
            row["gap"] = res.solver.gap if res.solver else None
            row["message"] = ""
        else:
            row["message"] = res.explanation.message if res.explanation else "infeasible"
    except PlannerInputError as exc:
        row["status"], row["message"] = "bad_input", str(exc)
    except Exception as exc:  # a crash of one scenario is a row, not the end of the batch
        row["status"], row["message"] = "error", f"{type(exc).__name__}: {exc}"
    row["seconds"] = time.perf_counter() - t0
    row["worker_pid"] = os.getpid()
    return row


# ------------------------------------------------------------------------------------------- runner
def done_ids(out: Path) -> set[str]:
    f = out / RESULTS
    if not f.exists():
        return set()
    ids = set()
    for line in f.read_text().splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut by a crash mid-write: that scenario runs again
        if row.get("status") != "interrupted":  # a killed worker is not an answer: run it again
            ids.add(row["id"])
    return ids


def read_results(out: str | os.PathLike[str]) -> pd.DataFrame:
    f = Path(out) / RESULTS
    if not f.exists():
        raise PlannerInputError(f"no results in {out} (expected {RESULTS})")
    rows = []
    for line in f.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    df = pd.DataFrame(rows)
    return df.drop_duplicates("id", keep="last").reset_index(drop=True) if len(df) else df


class _Writer:
    def __init__(self, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.fh = (out / RESULTS).open("a")

    def write(self, row: dict[str, Any]) -> None:
        self.fh.write(json.dumps(row, default=str, allow_nan=True) + "\n")
        self.fh.flush()
        os.fsync(self.fh.fileno())

    def close(self) -> None:
        self.fh.close()


def batch(
    scenarios: str | os.PathLike[str] | list[dict[str, Any]] | dict[str, Any],
    out: str | os.PathLike[str],
    workers: int | None = None,
    engine: str = "local",
    ray_address: str | None = None,
    catalog_dir: str | None = None,
    models_dir: str | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """Run every scenario not yet in ``out``; return the whole results table (old and new rows)."""
    items = expand(scenarios) if isinstance(scenarios, list | dict) else load_scenarios(scenarios)
    out_p = Path(out)
    todo = [s for s in items if s["id"] not in done_ids(out_p)]
    workers = workers or os.cpu_count() or 1
    if workers < 1:
        raise PlannerInputError("--workers must be at least 1")
    load_catalog(catalog_dir, models_dir)  # fail fast on a bad catalog, before any worker starts
    bar = _progress(len(items), len(items) - len(todo), progress)
    writer = _Writer(out_p)
    try:
        if engine == "local":
            _run_local(todo, workers, catalog_dir, models_dir, writer, bar)
        elif engine == "ray":
            _run_ray(todo, workers, ray_address, catalog_dir, models_dir, writer, bar)
        else:
            raise PlannerInputError(f"unknown engine '{engine}': use local or ray")
    finally:
        writer.close()
        bar.close()
    df = read_results(out_p)
    wanted = {s["id"] for s in items}
    df = df[df["id"].isin(wanted)].reset_index(drop=True)
    df.to_csv(out_p / "results.csv", index=False)
    return df


def _progress(total: int, initial: int, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(
        total=total, initial=initial, disable=not enabled, unit="scenario", desc="scenarios", dynamic_ncols=True
    )


def _run_local(
    todo: list[dict[str, Any]], workers: int, cdir: str | None, mdir: str | None, writer: _Writer, bar: Any
) -> None:
    if not todo:
        return
    if workers == 1:
        _init_worker(cdir, mdir)
        for s in todo:
            writer.write(run_scenario(s))
            bar.update(1)
        return
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_init_worker, initargs=(cdir, mdir))
    pending: dict[Future[dict[str, Any]], dict[str, Any]] = {}
    queue = iter(todo)
    try:
        for s in itertools.islice(queue, workers * 4):
            pending[pool.submit(run_scenario, s)] = s
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                s = pending.pop(fut)
                try:
                    row = fut.result()
                except Exception as exc:  # a worker died (killed, out of memory): record it, go on
                    row = {
                        "id": s["id"],
                        "scenario": json.dumps({k: v for k, v in s.items() if k != "id"}, sort_keys=True, default=str),
                        "status": "error",
                        "message": f"worker failed: {type(exc).__name__}: {exc}",
                    }
                    pool.shutdown(wait=False, cancel_futures=True)
                    pool = ProcessPoolExecutor(max_workers=workers, initializer=_init_worker, initargs=(cdir, mdir))
                    for f2, s2 in list(pending.items()):
                        pending.pop(f2)
                        pending[pool.submit(run_scenario, s2)] = s2
                writer.write(row)
                bar.update(1)
                nxt = next(queue, None)
                if nxt is not None:
                    pending[pool.submit(run_scenario, nxt)] = nxt
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _run_ray(
    todo: list[dict[str, Any]],
    workers: int,
    address: str | None,
    cdir: str | None,
    mdir: str | None,
    writer: _Writer,
    bar: Any,
) -> None:
    try:
        import ray
    except ImportError:
        raise PlannerInputError("the Ray engine needs Ray: pip install 'planner[ray]'") from None
    started = False
    if not ray.is_initialized():
        if address:
            ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
        else:
            ray.init(num_cpus=workers, ignore_reinit_error=True, log_to_driver=False, include_dashboard=False)
        started = True

    @ray.remote(num_cpus=1)
    class Worker:
        def __init__(self) -> None:
            _init_worker(cdir, mdir)

        def run(self, s: dict[str, Any]) -> dict[str, Any]:
            return run_scenario(s)

    actors = [Worker.remote() for _ in range(workers)]  # type: ignore[attr-defined]
    try:
        queue = iter(todo)
        inflight: dict[Any, tuple[Any, dict[str, Any]]] = {}
        for a in actors:
            for s in itertools.islice(queue, 2):
                inflight[a.run.remote(s)] = (a, s)
        while inflight:
            ready, _ = ray.wait(list(inflight), num_returns=1)
            for ref in ready:
                actor, s = inflight.pop(ref)
                try:
                    row = ray.get(ref)
                except Exception as exc:
                    row = {"id": s["id"], "status": "interrupted", "message": f"ray task failed: {exc}"}
                writer.write(row)
                bar.update(1)
                nxt = next(queue, None)
                if nxt is not None:
                    inflight[actor.run.remote(nxt)] = (actor, nxt)
    finally:
        for a in actors:
            ray.kill(a)
        if started:
            ray.shutdown()


# ------------------------------------------------------------------------------------------- report
def report(out: str | os.PathLike[str], path: str | os.PathLike[str] | None = None) -> Path:
    """Write <out>/report.md (+ report_scatter.html): cheapest and lowest-energy options, statuses,
    and which swept parameter changes the chosen GPU type, at what value."""
    df = read_results(out)
    target = Path(path) if path else Path(out) / "report.md"
    params = _swept(df)
    ok = df[df["status"].isin(["optimal", "time_limit"])].copy() if "status" in df else df.iloc[0:0]
    lines = [
        "# Batch report",
        "",
        f"{len(df)} scenarios: " + ", ".join(f"{k} {v}" for k, v in df["status"].value_counts().items())
        if len(df)
        else "no scenarios",
        "",
    ]
    if len(ok):
        cols = [
            c
            for c in [
                "id",
                *params,
                "gpu",
                "server",
                "nodes",
                "purchase",
                "site",
                "power_cap",
                "time_to_train_days",
                "cost_usd",
                "facility_energy_kwh",
                "carbon_kg",
            ]
            if c in ok
        ]
        lines += [
            "## Cheapest options",
            "",
            ok.nsmallest(5, "cost_usd")[cols].to_markdown(index=False),
            "",
            "## Lowest-energy options",
            "",
            ok.nsmallest(5, "facility_energy_kwh")[cols].to_markdown(index=False),
            "",
            "## Sensitivity of the chosen GPU to each swept parameter",
            "",
        ]
        lines += sensitivity(ok, params) or ["(no swept parameter changes the chosen GPU)"]
        try:
            import altair as alt

            chart = (
                alt.Chart(ok)
                .mark_circle(size=70)
                .encode(
                    x=alt.X("cost_usd:Q", title="cost (USD)"),
                    y=alt.Y("facility_energy_kwh:Q", title="facility energy (kWh)"),
                    color="gpu:N",
                    tooltip=["id", "server", "nodes", "purchase", "site"],
                )
                .properties(title="Cost vs energy by GPU type", width=600, height=400)
            )
            chart.save(str(target.parent / "report_scatter.html"))
            lines += ["", "Cost vs energy scatter, coloured by GPU type: [report_scatter.html](report_scatter.html)"]
        except ImportError:  # pragma: no cover - altair is in the app extra
            lines += ["", "(install altair for the cost-vs-energy scatter)"]
    bad = df[~df["status"].isin(["optimal", "time_limit"])] if "status" in df else df.iloc[0:0]
    if len(bad):
        lines += ["", "## Scenarios without a plan", "", bad[["id", "status", "message"]].to_markdown(index=False)]
    target.write_text("\n".join(lines) + "\n")
    return target


def _swept(df: pd.DataFrame) -> list[str]:
    if "scenario" not in df or not len(df):
        return []
    params = pd.DataFrame([json.loads(s) for s in df["scenario"]])
    for c in params.columns:
        df[c] = params[c].map(lambda v: json.dumps(v) if isinstance(v, list | dict) else v).to_numpy()
    return [c for c in params.columns if params[c].astype(str).nunique() > 1]


def sensitivity(ok: pd.DataFrame, params: Iterable[str]) -> list[str]:
    out = []
    params = list(params)
    for p in params:
        others = [q for q in params if q != p]
        changes = []
        groups: Iterable[tuple[Any, pd.DataFrame]] = ok.groupby(others, dropna=False) if others else [((), ok)]
        for _, g in groups:
            g = g.sort_values(p, key=_sort_key)
            prev = None
            for _, r in g.iterrows():
                if prev is not None and r["gpu"] != prev["gpu"]:
                    changes.append(f"{prev[p]} -> {r[p]}: {prev['gpu']} -> {r['gpu']}")
                prev = r
        if changes:
            uniq = sorted(set(changes))
            out.append(f"- **{p}** changes the chosen GPU in {len(changes)} place(s): " + "; ".join(uniq[:6]))
    return out


def _sort_key(s: pd.Series) -> pd.Series:
    num = pd.to_numeric(s, errors="coerce")
    return num if num.notna().all() else s.astype(str)
