"""Batch optimization of procurement scenarios: expand, run in parallel (processes or Ray), resume, report.

``planner.batch.run(scenarios, out)`` (or ``planner batch FILE --out DIR``) solves every scenario of a scenario file
(see :mod:`planner.batch.scenarios` for the format) that ``DIR`` does not hold yet, and returns the whole
results table. The pieces:

* :mod:`planner.batch.store` -- the results store ``DIR/results.sqlite``: one transaction per finished
  scenario, the scenario id as primary key, the identity of the inputs (scenario set, catalog and workload
  files, planner version) checked on every run (other inputs are refused unless ``force_new``), exports
  ``results.csv`` and ``results.parquet`` (when pyarrow is installed).
* :mod:`planner.batch.pool` -- worker processes or Ray actors that may die: their scenario is retried up to
  ``max_attempts`` times, then recorded as an ``error`` row with the cause; workers die with the main process.
* :mod:`planner.batch.report` -- the Markdown/HTML report an analyst acts on.

Statuses: ``optimal``, ``time_limit``, ``infeasible``, ``bad_input`` are answers; ``error`` (a crash of the
planner on that scenario, or a worker that died ``max_attempts`` times) is not, and a re-run retries it.
The run is *complete* when every scenario has an answer; the CLI exits 0 only then (4 otherwise: rerun the
same command to resume; 130/143 after SIGINT/SIGTERM; 2 for bad input, an unusable output directory, a full
disk or a damaged store).
"""

from __future__ import annotations

import os
import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm import tqdm

from planner.batch.pool import BatchInterrupted, interruptible, run_local, run_ray
from planner.batch.report import report, sensitivity
from planner.batch.scenarios import (
    OVERRIDES,
    apply_overrides,
    expand,
    load_scenarios,
    parse_yaml,
    run_scenario,
    scenario_id,
    to_request,
)
from planner.batch.store import (
    FINAL_STATUSES,
    STORE,
    BatchStoreError,
    Identity,
    Store,
    StoreDamaged,
    damaged,
    input_files,
    input_values,
    salvage,
    scenarios_sha,
)
from planner.data import catalog_dir as _catalog_dir
from planner.data import load_catalog
from planner.data import models_dir as _models_dir
from planner.errors import PlannerInputError
from planner.version import __version__

EXIT_INCOMPLETE = 4

__all__ = [
    "EXIT_INCOMPLETE",
    "OVERRIDES",
    "STORE",
    "BatchInterrupted",
    "BatchOutcome",
    "BatchStoreError",
    "apply_overrides",
    "expand",
    "load_scenarios",
    "parse_yaml",
    "read_results",
    "report",
    "run",
    "run_batch",
    "run_scenario",
    "scenario_id",
    "sensitivity",
    "to_request",
]


@dataclass
class BatchOutcome:
    """What a batch run left in its directory."""

    frame: pd.DataFrame  # one row per scenario with a row in the store (answers and errors)
    out: Path
    total: int  # scenarios in the scenario set
    ran: int  # scenarios solved by this run
    unfinished: list[str]  # ids without an answer (no row, or an error row)
    counts: dict[str, int] = field(default_factory=dict)  # status -> rows
    stats: dict[str, int] = field(default_factory=dict)  # worker deaths, retries, give-ups of this run
    seconds: float = 0.0

    @property
    def complete(self) -> bool:
        """Every scenario has an answer."""
        return not self.unfinished

    def summary(self) -> dict[str, Any]:
        """The run in numbers (directory, scenarios, ran, complete, unfinished, statuses, worker stats, seconds)."""
        return {
            "out": str(self.out),
            "scenarios": self.total,
            "ran": self.ran,
            "complete": self.complete,
            "unfinished": len(self.unfinished),
            "statuses": self.counts,
            **self.stats,
            "seconds": round(self.seconds, 3),
        }


def run_batch(
    scenarios: str | os.PathLike[str] | list[dict[str, Any]] | dict[str, Any],
    out: str | os.PathLike[str],
    workers: int | None = None,
    engine: str = "local",
    ray_address: str | None = None,
    catalog_dir: str | None = None,
    models_dir: str | None = None,
    progress: bool = True,
    force_new: bool = False,
    max_attempts: int = 3,
) -> BatchOutcome:
    """Solve every scenario that ``out`` holds no answer for; see the module docstring.

    Raises PlannerInputError (bad scenarios or catalog, other inputs already in ``out``), BatchStoreError
    (output directory unusable, disk full), StoreDamaged (a BatchStoreError: the store cannot be read back; what
    finished is saved in results.csv first, and ``force_new`` starts over in ``out``) and BatchInterrupted
    (SIGINT/SIGTERM; finished rows are kept).
    """
    t0 = time.perf_counter()
    if isinstance(scenarios, list | dict):
        items, source = expand(scenarios), "<python>"
    elif isinstance(scenarios, str | os.PathLike):
        items, source = load_scenarios(scenarios), str(scenarios)
    else:
        raise PlannerInputError(
            "scenarios must be a scenario file's path (YAML or CSV), a list of scenarios (dicts of request fields) "
            f"or a grid spec (a dict with base / grid / scenarios), got {type(scenarios).__name__}"
        )
    workers = checked_workers(engine, workers, max_attempts)
    load_catalog(catalog_dir, models_dir)  # fail fast on a bad catalog, before any worker starts
    ident = run_identity(items, source, catalog_dir, models_dir)
    batch = Run(Store(out, discard_damaged=force_new), items, force_new)
    try:
        batch.store.begin_run(ident, items, force_new=force_new, engine=engine, workers=workers)
        finished = batch.store.done_ids()
        todo = [s for s in items if s["id"] not in finished]
        stats = batch.solve(todo, Engine(engine, workers, ray_address, catalog_dir, models_dir, max_attempts), progress)
        df = batch.read_back()
        answered = set(df.loc[df["status"].isin(FINAL_STATUSES), "id"]) if len(df) else set()
        unfinished = [s["id"] for s in items if s["id"] not in answered]
        batch.store.end_run("complete" if not unfinished else f"incomplete ({len(unfinished)} unfinished)")
    finally:
        batch.store.close()
    return BatchOutcome(
        frame=df,
        out=Path(out),
        total=len(items),
        ran=len(todo),
        unfinished=unfinished,
        counts={str(k): int(v) for k, v in df["status"].value_counts().items()} if len(df) else {},
        stats=stats,
        seconds=time.perf_counter() - t0,
    )


def checked_workers(engine: str, workers: int | None, max_attempts: int) -> int:
    """The number of workers (default: the CPU cores); an unknown engine or a count below 1 is bad input."""
    if engine not in ("local", "ray"):
        raise PlannerInputError(f"unknown engine '{engine}': use local or ray")
    workers = workers if workers is not None else (os.cpu_count() or 1)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise PlannerInputError(f"workers must be a whole number of at least 1 (--workers N), got {workers!r}")
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
        raise PlannerInputError(f"max_attempts must be a whole number of at least 1, got {max_attempts!r}")
    return workers


def run_identity(items: list[dict[str, Any]], source: str, catalog_dir: str | None, models_dir: str | None) -> Identity:
    """What this run's results depend on: the scenario set, the catalog and workload files (hashes and values),
    the planner version."""
    cdir, mdir = _catalog_dir(catalog_dir), _models_dir(models_dir)
    return Identity(
        scenarios_sha=scenarios_sha(s["id"] for s in items),
        scenario_source=source,
        input_files=input_files(cdir, mdir),
        planner_version=__version__,
        input_values=input_values(cdir, mdir),
    )


@dataclass(frozen=True)
class Engine:
    """Where the scenarios run: local processes or Ray actors, how many, with which catalog, tried how often."""

    name: str
    workers: int
    ray_address: str | None
    catalog_dir: str | None
    models_dir: str | None
    max_attempts: int


@dataclass
class Run:
    """One run into a store: its scenarios, and this run's rows as they finish (``fresh``), kept so that a store
    found damaged loses none of them (:func:`planner.batch.store.salvage`)."""

    store: Store
    items: list[dict[str, Any]]
    force_new: bool
    fresh: dict[str, dict[str, Any]] = field(default_factory=dict)

    def solve(self, todo: list[dict[str, Any]], engine: Engine, progress: bool) -> dict[str, int]:
        """Run ``todo`` on the engine, each finished row committed as it comes; returns the worker counters. Stopped
        by a signal, results.csv is written before BatchInterrupted goes on; a store found damaged, what finished is
        saved first (StoreDamaged)."""
        bar = _progress(len(self.items), len(self.items) - len(todo), progress)

        def done(row: dict[str, Any], attempts: int) -> None:
            self.fresh[str(row["id"])] = {**row, "attempts": attempts}
            self.store.write(row, attempts)
            bar.update(1)

        e = engine
        try:
            with interruptible():
                if e.name == "local":
                    return run_local(
                        todo, e.workers, e.catalog_dir, e.models_dir, done, self.store.event, e.max_attempts
                    )
                return run_ray(
                    todo, e.workers, e.ray_address, e.catalog_dir, e.models_dir, done, self.store.event, e.max_attempts
                )
        except BatchInterrupted as exc:
            with suppress(BatchStoreError):  # results.csv holds what finished, as after a complete run
                try:
                    self.store.export()
                except StoreDamaged as problem:
                    self.salvaged(problem)
            self.store.end_run(f"interrupted ({exc.args[0]})")
            raise
        except StoreDamaged as exc:  # a write found the store damaged: what finished goes to results.csv
            raise self.salvaged(exc) from None
        finally:
            bar.close()

    def read_back(self) -> pd.DataFrame:
        """Every stored row, checked on disk first (a new connection: this one may still hold damaged pages in
        memory), and exported to results.csv; a damaged store is StoreDamaged, what finished saved first."""
        try:
            self.store.verify()
            df = self.store.frame()
        except StoreDamaged as exc:
            raise self.salvaged(exc) from None
        self.store.export(df)
        return df

    def salvaged(self, exc: StoreDamaged) -> StoreDamaged:
        """The damage said with what was saved of the results (results.csv), or why nothing could be."""
        out = self.store.out
        try:
            df = salvage(out, [s["id"] for s in self.items], self.fresh, earlier=not self.force_new)
        except BatchStoreError as problem:
            return damaged(exc.path, exc.detail, f"results.csv could not be written either ({problem})")
        saved = (
            f"{len(df)} finished scenario(s) recovered ({len(self.fresh)} solved by this run) are saved in "
            f"{out / 'results.csv'}"
        )
        return damaged(exc.path, exc.detail, saved)


def run(
    scenarios: str | os.PathLike[str] | list[dict[str, Any]] | dict[str, Any],
    out: str | os.PathLike[str],
    workers: int | None = None,
    engine: str = "local",
    ray_address: str | None = None,
    catalog_dir: str | None = None,
    models_dir: str | None = None,
    progress: bool = True,
    force_new: bool = False,
    max_attempts: int = 3,
) -> pd.DataFrame:
    """Run a batch (see :func:`run_batch`) and return its results table, one row per scenario.

    ``frame.attrs["summary"]`` says whether every scenario has an answer (``complete``) and how many are left.
    """
    res = run_batch(
        scenarios, out, workers, engine, ray_address, catalog_dir, models_dir, progress, force_new, max_attempts
    )
    res.frame.attrs["summary"] = res.summary()
    return res.frame


def read_results(out: str | os.PathLike[str]) -> pd.DataFrame:
    """The results table stored in ``out`` (one row per scenario, in scenario order)."""
    with Store(out, readonly=True) as store:
        return store.frame()


def _progress(total: int, initial: int, enabled: bool) -> Any:
    """The progress bar on stderr (scenarios done of all, starting at those a past run finished)."""
    return tqdm(
        total=total, initial=initial, disable=not enabled, unit="scenario", desc="scenarios", dynamic_ncols=True
    )
