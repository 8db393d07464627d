"""The results store of a batch run: one SQLite database (standard library, WAL journal) per output directory.

Tables (``<out>/results.sqlite``)::

    meta      (key PRIMARY KEY, value)                      schema version
    runs      (run_id PRIMARY KEY, started_utc, finished_utc, outcome, scenarios_sha, scenario_source,
               inputs_sha, input_files, planner_version, scenarios, engine, workers)
    scenarios (id PRIMARY KEY, position, spec)              every scenario of the directory's scenario set
    results   (id PRIMARY KEY, run_id, status, attempts, finished_utc, row)   + index (status, id)
    events    (run_id, time_utc, kind, scenario_id, message)                  worker deaths, retries, replacements

Guarantees:

* **One transaction per finished scenario** (``synchronous=FULL``: a committed row survives a crash of the
  process or of the machine). A process killed mid-transaction leaves nothing of that transaction: SQLite
  rolls the uncommitted WAL frames back on the next open, so the scenario simply runs again.
* **Exactly once:** the scenario id is the primary key (``INSERT OR REPLACE``); a retried scenario replaces
  its ``error`` row.
* **Runs never mix:** the first run records the identity of its inputs -- the scenario set (sha256 over
  the canonical scenarios), every catalog and workload file (sha256 each, and its values) and the planner version.
  A later run into the same directory with any of them different is refused with a message naming the difference
  (for a catalog or workload file: the entry and field whose value changed, old -> new; a change of comments or
  layout that changes no value is no difference), unless ``force_new`` (which discards the old results in the same
  transaction that records the new run).
* **Resume is one indexed query:** ``SELECT id FROM results WHERE status != 'error'`` on the
  ``(status, id)`` index.
* **One writer at a time:** an exclusive ``flock`` on ``<out>/.batch.lock`` for the whole run.
* **Clear failures:** an output path that is a file, a directory that cannot be created or written
  (read-only), or a full disk raise :class:`BatchStoreError` (a :class:`PlannerInputError`, exit 2) naming
  the path and what to do; a committed row is never half-written.
* **Damage is found and said:** a store that SQLite cannot read back (truncated, overwritten, not a database) is
  checked for on every open (``PRAGMA quick_check``, about 20 ms for 10,000 rows) and at the end of every run (on
  a new connection, so pages this process still holds in memory do not hide it), and raises
  :class:`StoreDamaged` (exit 2) naming it. The rows that can still be had -- read one by one from the damaged
  store, the last ``results.csv``, and this run's rows, which the runner keeps -- are written to ``results.csv``
  (:func:`salvage`). ``force_new`` moves a damaged store aside (``results.sqlite.damaged``) and starts over in
  the same directory.
"""

from __future__ import annotations

import datetime as dt
import errno
import fcntl
import hashlib
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from planner.errors import PlannerInputError

STORE = "results.sqlite"
DAMAGED = "results.sqlite.damaged"  # where force_new moves a damaged store
LOCK = ".batch.lock"
SCHEMA_VERSION = "1"
FINAL_STATUSES = ("optimal", "time_limit", "infeasible", "bad_input")  # answers; "error" is retried on resume

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id INTEGER PRIMARY KEY,
    started_utc TEXT NOT NULL,
    finished_utc TEXT,
    outcome TEXT,
    scenarios_sha TEXT NOT NULL,
    scenario_source TEXT,
    inputs_sha TEXT NOT NULL,
    input_files TEXT NOT NULL,
    planner_version TEXT NOT NULL,
    scenarios INTEGER NOT NULL,
    engine TEXT,
    workers INTEGER,
    input_values TEXT
);
CREATE TABLE IF NOT EXISTS scenarios (id TEXT PRIMARY KEY, position INTEGER NOT NULL, spec TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS results (
    id TEXT PRIMARY KEY,
    run_id INTEGER NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    finished_utc TEXT NOT NULL,
    row TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS results_status ON results (status, id);
CREATE TABLE IF NOT EXISTS events (
    run_id INTEGER NOT NULL,
    time_utc TEXT NOT NULL,
    kind TEXT NOT NULL,
    scenario_id TEXT,
    message TEXT NOT NULL
);
"""


class BatchStoreError(PlannerInputError):
    """The output directory cannot hold the results (a file in the way, read-only, disk full, locked)."""


class StoreDamaged(BatchStoreError):
    """The results store cannot be read back (truncated, overwritten, not a database); ``detail`` is what SQLite or
    the check said."""

    def __init__(self, message: str, path: Path, detail: str) -> None:
        super().__init__(message)
        self.path = path
        self.detail = detail


def now_utc() -> str:
    """The time now, UTC, ISO 8601 to the millisecond."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


# ------------------------------------------------------------------------------------------- identity
@dataclass(frozen=True)
class Identity:
    """What a directory's results depend on: the scenario set, the catalog/workload files, the planner."""

    scenarios_sha: str
    scenario_source: str
    input_files: dict[str, str]  # "catalog/servers.yaml" -> sha256 of its bytes
    planner_version: str
    # "catalog/servers.yaml" -> the file's values (parsed YAML): a change is named by entry and field, and a change
    # of comments or layout alone is none
    input_values: dict[str, Any] = field(default_factory=dict)

    @property
    def inputs_sha(self) -> str:
        """sha256 of the input files' hashes, sorted by path."""
        return hashlib.sha256(json.dumps(sorted(self.input_files.items())).encode()).hexdigest()


def scenarios_sha(ids: Iterable[str]) -> str:
    """sha256 of the scenario set: the sorted content-derived ids (each a hash of the scenario's fields)."""
    return hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()


def input_files(catalog_dir: Path, models_dir: Path) -> dict[str, str]:
    """sha256 of every file of the catalog and of the workload library, keyed ``catalog/NAME``/``models/NAME``."""
    out: dict[str, str] = {}
    for label, d in (("catalog", catalog_dir), ("models", models_dir)):
        for p in sorted(d.iterdir()):
            if p.is_file() and not p.name.startswith("."):
                out[f"{label}/{p.name}"] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def input_values(catalog_dir: Path, models_dir: Path) -> dict[str, Any]:
    """The values of every catalog and workload file (parsed YAML; None for a file that is not YAML), keyed as
    :func:`input_files`."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    out: dict[str, Any] = {}
    for label, d in (("catalog", catalog_dir), ("models", models_dir)):
        for p in sorted(d.iterdir()):
            if p.is_file() and not p.name.startswith("."):
                try:
                    out[f"{label}/{p.name}"] = json.loads(
                        json.dumps(yaml.load(p.read_text(), Loader=loader), default=str)
                    )
                except (yaml.YAMLError, UnicodeDecodeError, ValueError):
                    out[f"{label}/{p.name}"] = None
    return out


_ABSENT = object()
CHANGES_NAMED = 3  # per file; the rest are counted


def _keyed(items: list[Any]) -> bool:
    """A list of mappings each with a distinct ``id`` (a catalog table): compared entry by entry."""
    ids = [x.get("id") for x in items if isinstance(x, dict)]
    return len(ids) == len(items) and None not in ids and len(set(map(str, ids))) == len(ids)


def value_changes(old: Any, new: Any, at: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any, Any]]:
    """Every value that differs between two parsed files, as (path, old, new): mappings key by key, catalog tables
    (lists of mappings with ids) entry by entry, anything else as a whole. An entry or key only on one side has
    ``_ABSENT`` on the other."""
    if isinstance(old, dict) and isinstance(new, dict):
        keys = [*old, *(k for k in new if k not in old)]
        return [c for k in keys for c in value_changes(old.get(k, _ABSENT), new.get(k, _ABSENT), (*at, str(k)))]
    if isinstance(old, list) and isinstance(new, list) and _keyed(old) and _keyed(new):
        o = {str(x["id"]): x for x in old}
        n = {str(x["id"]): x for x in new}
        keys = [*o, *(k for k in n if k not in o)]
        return [c for k in keys for c in value_changes(o.get(k, _ABSENT), n.get(k, _ABSENT), (*at, k))]
    return [] if old == new else [(at, old, new)]


def _value_text(v: Any) -> str:
    text = json.dumps(v, default=str) if not isinstance(v, str) else v
    return text if len(text) <= 40 else text[:37] + "..."


def change_text(values: Any, path: tuple[str, ...], old: Any, new: Any) -> str:
    """One change in a user's terms: ``dgx-h100: price_usd 380000 -> 3800000`` (the entry, then the field), an
    entry ``added`` or ``removed``; a workload file's changes are named by its id."""
    if isinstance(values, dict) and "id" in values and (not path or path[0] != "id"):
        path = (str(values["id"]), *path)
    if old is _ABSENT or new is _ABSENT:
        what = "added" if old is _ABSENT else "removed"
        return f"{'.'.join(path)} {what}" + (f" ({_value_text(new)})" if old is _ABSENT and len(path) > 1 else "")
    field_path = ".".join(path[1:]) if len(path) > 1 else ""
    head = f"{path[0]}: {field_path} " if field_path else (f"{path[0]} " if path else "")
    return f"{head}{_value_text(old)} -> {_value_text(new)}"


def file_changes(old: Any, new: Any) -> list[str]:
    """The changes of one file's values, each in its user's terms (:func:`change_text`)."""
    return [change_text(new if new is not None else old, p, o, n) for p, o, n in value_changes(old, new)]


def describe_difference(old: dict[str, Any], new: Identity, old_ids: set[str], new_ids: set[str]) -> list[str]:
    """Human-readable differences between the stored run identity and this one (empty: same inputs)."""
    diffs: list[str] = []
    if old["scenarios_sha"] != new.scenarios_sha:
        n_added, n_removed = len(new_ids - old_ids), len(old_ids - new_ids)
        diffs.append(
            f"the scenarios differ ({old.get('scenario_source') or 'stored'} -> {new.scenario_source}: "
            f"{n_added} scenario(s) not in the stored set, {n_removed} stored scenario(s) not in this one)"
        )
    old_files: dict[str, str] = json.loads(old["input_files"])
    old_values: dict[str, Any] = json.loads(old.get("input_values") or "{}")
    if old_files != new.input_files:
        changed, named = [], []
        for k in sorted(set(old_files) & set(new.input_files)):
            if old_files[k] == new.input_files[k]:
                continue
            if old_values.get(k) is not None and new.input_values.get(k) is not None:
                texts = file_changes(old_values[k], new.input_values[k])
                if not texts:  # comments or layout only: no value changed
                    continue
                more = len(texts) - CHANGES_NAMED
                named.append(
                    f"{k} ({'; '.join(texts[:CHANGES_NAMED])}" + (f"; and {more} more" if more > 0 else "") + ")"
                )
            else:  # a file that is not YAML, or a store recorded without values
                changed.append(k)
        changed = [*named, *changed]
        added = sorted(set(new.input_files) - set(old_files))
        removed = sorted(set(old_files) - set(new.input_files))
        parts = [f"changed {', '.join(changed)}"] if changed else []
        parts += [f"added {', '.join(added)}"] if added else []
        parts += [f"missing {', '.join(removed)}"] if removed else []
        kinds = sorted({k.split("/")[0] for k in [*changed, *added, *removed]})
        if parts:
            diffs.append(f"the {' and '.join(kinds)} {'differ' if len(kinds) > 1 else 'differs'}: {'; '.join(parts)}")
    if old["planner_version"] != new.planner_version:
        diffs.append(f"the planner version differs ({old['planner_version']} -> {new.planner_version})")
    return diffs


# ------------------------------------------------------------------------------------------- errors
def _os_problem(exc: BaseException, path: Path) -> BatchStoreError:
    """A clear message for the ways an output directory fails."""
    text = str(exc).lower()
    code = getattr(exc, "errno", None)
    if code == errno.ENOSPC or "disk is full" in text or "database or disk is full" in text:
        return BatchStoreError(
            f"disk full while writing {path}: every scenario already committed is kept; "
            "free space and rerun the same command to resume"
        )
    if code in (errno.EROFS, errno.EACCES, errno.EPERM) or "readonly" in text or "read-only" in text:
        return BatchStoreError(f"cannot write to {path}: read-only or no permission; choose another --out")
    if code == errno.ENOTDIR or code == errno.EEXIST:
        return BatchStoreError(f"--out {path}: a file is in the way (a directory is needed)")
    if "locked" in text or "busy" in text:
        return BatchStoreError(f"{path} is locked by another process; wait for it or choose another --out")
    if isinstance(exc, sqlite3.DatabaseError) and "not a database" in text:
        return damaged(path, f"not a planner results store: {exc}")
    if isinstance(exc, sqlite3.DatabaseError) and "malformed" in text:
        return damaged(path, str(exc))
    return BatchStoreError(f"cannot use {path}: {exc}; choose another --out (a directory this user can write)")


def damaged(path: Path, detail: str, saved: str = "it cannot be read back") -> StoreDamaged:
    """The error of a store that cannot be read back: what is wrong, what was saved of it, and that --force-new
    starts over in place."""
    return StoreDamaged(
        f"{path} is damaged ({detail}): {saved}. Rerun with --force-new to start over in {path.parent} (the damaged "
        f"store is kept as {DAMAGED}), or give another --out",
        path,
        detail,
    )


# ------------------------------------------------------------------------------------------- store
class Store:
    """The SQLite results store of one output directory (see the module docstring)."""

    def __init__(
        self,
        out: str | os.PathLike[str],
        *,
        readonly: bool = False,
        lock: bool = True,
        discard_damaged: bool = False,
    ) -> None:
        """Open (or create) the store of ``out``; a damaged one raises StoreDamaged, or with ``discard_damaged`` (a
        run with force_new) is moved aside to ``results.sqlite.damaged`` and a new store is started in its place."""
        self.out = Path(out)
        self.path = self.out / STORE
        self.run_id: int | None = None
        self.discarded: str | None = None  # the damaged store moved aside, said in the run's events
        self._lock_fh: Any = None
        if self.out.exists() and not self.out.is_dir():
            raise BatchStoreError(f"--out {self.out}: a file is in the way (a directory is needed)")
        if readonly:
            if not self.path.exists():
                raise PlannerInputError(f"no results in {self.out} (expected {STORE}; run `planner batch` first)")
            try:
                self.db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, isolation_level=None)
                self.check()
                self.db.execute("SELECT 1 FROM results LIMIT 1")
            except sqlite3.Error as exc:
                self.close()
                raise _os_problem(exc, self.path) from None
            except StoreDamaged:
                self.close()
                raise
            return
        try:
            self.out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _os_problem(exc, self.out) from None
        if not os.access(self.out, os.W_OK | os.X_OK):
            raise BatchStoreError(f"cannot write to {self.out}: read-only or no permission; choose another --out")
        if lock:
            self._take_lock()
        try:
            self._truncated()
            self._open()
            self.check()
        except StoreDamaged as exc:
            if not discard_damaged:
                self.close()
                if (self.out / "results.csv").exists():
                    saved = "it cannot be read back (results.csv next to it holds the rows its last run exported)"
                    raise damaged(self.path, exc.detail, saved) from None
                raise
            self._close_db()
            self._move_aside(exc.detail)
            self._open()

    def _open(self) -> None:
        """Connect (WAL journal, synchronous commits), create the tables, and add the columns a store written by an
        earlier planner lacks."""
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None, timeout=10.0)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
            self.db.executescript(_SCHEMA)
            self.db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
            if "input_values" not in {r[1] for r in self.db.execute("PRAGMA table_info(runs)")}:
                self.db.execute("ALTER TABLE runs ADD COLUMN input_values TEXT")
        except (sqlite3.Error, OSError) as exc:
            problem = _os_problem(exc, self.path)
            if not isinstance(problem, StoreDamaged):
                self.close()
            else:
                self._close_db()
            raise problem from None

    def _truncated(self) -> None:
        """A store of 0 bytes, with no journal, next to the results.csv of an earlier run: truncated (SQLite would
        take it for a new, empty store and the earlier results would be silently gone)."""
        wal = self.path.with_name(STORE + "-wal")
        if (
            self.path.exists()
            and self.path.stat().st_size == 0
            and (not wal.exists() or wal.stat().st_size == 0)
            and (self.out / "results.csv").exists()
        ):
            raise damaged(self.path, "truncated to 0 bytes")

    def check(self, db: sqlite3.Connection | None = None) -> None:
        """StoreDamaged if SQLite cannot read the store back (``PRAGMA quick_check`` on ``db``, default this
        store's connection)."""
        try:
            found = [str(r[0]) for r in (db or self.db).execute("PRAGMA quick_check")]
        except sqlite3.DatabaseError as exc:
            problem = _os_problem(exc, self.path)
            raise problem if isinstance(problem, StoreDamaged) else damaged(self.path, str(exc)) from None
        if found != ["ok"]:
            raise damaged(self.path, found[0] if found else "quick_check returned nothing")

    def verify(self) -> None:
        """The check on a new read-only connection -- what is on disk, not pages this connection holds in memory --
        and that it holds as many result rows as this connection wrote (a store truncated under a running batch reads
        back as an empty database, which passes the check)."""
        try:
            db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, isolation_level=None, timeout=10.0)
        except sqlite3.Error as exc:
            raise _os_problem(exc, self.path) from None
        try:
            self.check(db)
            try:
                on_disk = int(db.execute("SELECT count(*) FROM results").fetchone()[0])
            except sqlite3.Error as exc:
                raise damaged(self.path, f"the file no longer holds its tables: {exc}") from None
        finally:
            db.close()
        with self._reading():
            written = int(self.db.execute("SELECT count(*) FROM results").fetchone()[0])
        if on_disk != written:
            raise damaged(self.path, f"the file holds {on_disk} of the {written} result rows written")

    def _move_aside(self, detail: str) -> None:
        """Move the damaged store (and its journal) to results.sqlite.damaged, replacing an earlier one."""
        try:
            for suffix in ("", "-wal"):
                src = self.path.with_name(STORE + suffix)
                if src.exists():
                    os.replace(src, self.path.with_name(DAMAGED + suffix))
            self.path.with_name(STORE + "-shm").unlink(missing_ok=True)
        except OSError as exc:
            self.close()
            raise _os_problem(exc, self.path) from None
        self.discarded = f"{STORE} was damaged ({detail}): moved to {DAMAGED} (--force-new)"

    def _close_db(self) -> None:
        db = getattr(self, "db", None)
        if db is not None:
            with suppress(sqlite3.Error):
                db.close()
            self.db = None  # type: ignore[assignment]

    def _take_lock(self) -> None:
        try:
            self._lock_fh = (self.out / LOCK).open("a+")
        except OSError as exc:
            raise _os_problem(exc, self.out / LOCK) from None
        try:
            fcntl.flock(self._lock_fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._lock_fh.close()
            self._lock_fh = None
            raise BatchStoreError(
                f"another `planner batch` is writing into {self.out}; wait for it to finish or choose another --out"
            ) from None

    def close(self) -> None:
        """Close the database and release the directory's lock (idempotent)."""
        self._close_db()
        if self._lock_fh is not None:
            self._lock_fh.close()
            self._lock_fh = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        try:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")
        except (sqlite3.Error, OSError) as exc:
            if self.db.in_transaction:
                with suppress(sqlite3.Error):
                    self.db.execute("ROLLBACK")
            raise _os_problem(exc, self.path) from None

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """Reads of the store: an SQLite error is said as _os_problem says it, a row that is not JSON as damage."""
        try:
            yield
        except sqlite3.Error as exc:
            raise _os_problem(exc, self.path) from None
        except ValueError as exc:  # json.JSONDecodeError: a row's bytes overwritten
            raise damaged(self.path, f"a result row is not JSON: {exc}") from None

    # --------------------------------------------------------------------------------------- runs
    def begin_run(
        self,
        ident: Identity,
        scenarios: list[dict[str, Any]],
        *,
        force_new: bool = False,
        engine: str = "local",
        workers: int = 1,
    ) -> None:
        """Record this run; refuse (BatchStoreError naming the difference) if the directory holds other inputs."""
        keys = ["scenarios_sha", "scenario_source", "input_files", "planner_version", "input_values"]
        with self._reading():
            prev = self.db.execute(f"SELECT {', '.join(keys)} FROM runs ORDER BY run_id DESC LIMIT 1").fetchone()
        new_ids = [s["id"] for s in scenarios]
        same_set = False
        if prev is not None:
            old = dict(zip(keys, prev, strict=True))
            same_set = old["scenarios_sha"] == ident.scenarios_sha
            with self._reading():
                old_ids = set() if same_set else {r[0] for r in self.db.execute("SELECT id FROM scenarios")}
            diffs = describe_difference(old, ident, old_ids, set(new_ids))
            if diffs and not force_new:
                raise BatchStoreError(
                    f"{self.out} holds the results of other inputs: "
                    + "; ".join(diffs)
                    + ". Use another --out, or --force-new to discard the stored results and start over"
                )
            if not diffs:
                force_new = False
        with self._tx() as db:
            if prev is not None and force_new:
                db.execute("DELETE FROM results")
                db.execute("DELETE FROM scenarios")
                same_set = False
            if not same_set:
                db.executemany(
                    "INSERT OR REPLACE INTO scenarios VALUES (?, ?, ?)",
                    (
                        (s["id"], i, json.dumps({k: v for k, v in s.items() if k != "id"}, sort_keys=True, default=str))
                        for i, s in enumerate(scenarios)
                    ),
                )
            cur = db.execute(
                "INSERT INTO runs (started_utc, scenarios_sha, scenario_source, inputs_sha, input_files, "
                "planner_version, scenarios, engine, workers, input_values, outcome) "
                "VALUES (?,?,?,?,?,?,?,?,?,?, 'running')",
                (
                    now_utc(),
                    ident.scenarios_sha,
                    ident.scenario_source,
                    ident.inputs_sha,
                    json.dumps(ident.input_files, sort_keys=True),
                    ident.planner_version,
                    len(scenarios),
                    engine,
                    workers,
                    json.dumps(ident.input_values, sort_keys=True) if ident.input_values else None,
                ),
            )
            self.run_id = cur.lastrowid
            if prev is not None and force_new:
                db.execute(
                    "INSERT INTO events VALUES (?, ?, 'force_new', NULL, ?)",
                    (self.run_id, now_utc(), "stored results of other inputs discarded (--force-new)"),
                )
            if self.discarded:
                db.execute(
                    "INSERT INTO events VALUES (?, ?, 'force_new', NULL, ?)", (self.run_id, now_utc(), self.discarded)
                )

    def end_run(self, outcome: str) -> None:
        """Record when and how this run ended (complete, incomplete, interrupted); a failure to record it is ignored,
        since every result row is committed already."""
        if self.run_id is None or self.db is None:
            return
        try:
            with self._tx() as db:
                db.execute(
                    "UPDATE runs SET finished_utc = ?, outcome = ? WHERE run_id = ?", (now_utc(), outcome, self.run_id)
                )
        except BatchStoreError:
            pass  # the run's outcome is informative only; every result row is already committed

    # --------------------------------------------------------------------------------------- rows
    def done_ids(self) -> set[str]:
        """Ids with an answer (every status but ``error``): one query on the (status, id) index."""
        with self._reading():
            return {r[0] for r in self.db.execute("SELECT id FROM results WHERE status != 'error'")}

    def write(self, row: dict[str, Any], attempts: int = 1) -> None:
        """Commit one finished scenario (its own transaction)."""
        data = json.dumps(row, default=str, allow_nan=True)
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?, ?)",
                (row["id"], self.run_id or 0, row.get("status", "error"), attempts, now_utc(), data),
            )

    def event(self, kind: str, scenario_id: str | None, message: str) -> None:
        """Commit one event of this run (a worker that died or was replaced, ...), naming its scenario if any."""
        with self._tx() as db:
            db.execute(
                "INSERT INTO events VALUES (?, ?, ?, ?, ?)", (self.run_id or 0, now_utc(), kind, scenario_id, message)
            )

    # --------------------------------------------------------------------------------------- reading
    def frame(self, ids: Iterable[str] | None = None) -> pd.DataFrame:
        """The results as a table, in scenario order (one row per scenario id)."""
        with self._reading():
            rows = self.db.execute(
                "SELECT r.row, r.attempts FROM results r LEFT JOIN scenarios s ON s.id = r.id ORDER BY s.position, r.id"
            ).fetchall()
            recs = []
            for data, attempts in rows:
                d = json.loads(data)
                d["attempts"] = attempts
                recs.append(d)
        df = pd.DataFrame(recs)
        if ids is not None and len(df):
            df = df[df["id"].isin(set(ids))].reset_index(drop=True)
        return df

    def scenarios(self) -> list[dict[str, Any]]:
        """The scenario set of the directory, in scenario order, each with its id."""
        with self._reading():
            return [
                {"id": i, **json.loads(spec)}
                for i, spec in self.db.execute("SELECT id, spec FROM scenarios ORDER BY position")
            ]

    def runs(self) -> pd.DataFrame:
        """One row per run into the directory: when, engine, workers, outcome."""
        return pd.read_sql_query("SELECT * FROM runs ORDER BY run_id", self.db)

    def events(self) -> pd.DataFrame:
        """Every event recorded, in order."""
        return pd.read_sql_query("SELECT * FROM events ORDER BY rowid", self.db)

    def export(self, df: pd.DataFrame | None = None) -> list[Path]:
        """Write results.csv (and results.parquet) of ``df`` (default: every stored row); see :func:`export`."""
        return export(self.out, self.frame() if df is None else df)


def export(out: Path, df: pd.DataFrame) -> list[Path]:
    """Write ``out``/results.csv (and results.parquet when pyarrow is installed) atomically (temp file + rename): a
    reader sees the old file or the new one, never half of one, and the temp file is removed whatever stops the
    write (a disk error, or a second Ctrl-C while the export after the first one runs)."""
    df = _whole_numbers(df)
    written = []
    targets: list[tuple[str, Any]] = [("results.csv", lambda p: df.to_csv(p, index=False))]
    if _has_pyarrow():
        targets.append(("results.parquet", lambda p: _parquet_safe(df).to_parquet(p, index=False)))
    for name, write in targets:
        final = out / name
        tmp = out / f".{name}.tmp"
        try:
            write(tmp)
            os.replace(tmp, final)
        except BaseException as exc:  # KeyboardInterrupt / BatchInterrupted too: no .results.csv.tmp left
            tmp.unlink(missing_ok=True)
            if isinstance(exc, OSError):
                raise _os_problem(exc, final) from None
            raise
        written.append(final)
    return written


def readable_rows(path: Path) -> dict[str, dict[str, Any]]:
    """The result rows a damaged store still gives, read one at a time until SQLite cannot go on (each with its
    ``attempts``); a row that is not JSON is skipped."""
    out: dict[str, dict[str, Any]] = {}
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None, timeout=10.0)
    except sqlite3.Error:
        return out
    try:
        cur = db.execute("SELECT id, row, attempts FROM results")
        while (r := cur.fetchone()) is not None:
            with suppress(ValueError, TypeError):
                out[str(r[0])] = {**json.loads(r[1]), "attempts": r[2]}
    except sqlite3.Error:
        pass  # as far as the damage lets it read
    finally:
        db.close()
    return out


def exported_rows(out: Path) -> dict[str, dict[str, Any]]:
    """The rows of the last results.csv of ``out`` (none when it is missing or unreadable)."""
    try:
        df = pd.read_csv(out / "results.csv", dtype={"id": str})
    except (OSError, ValueError, pd.errors.ParserError, pd.errors.EmptyDataError):
        return {}
    if "id" not in df:
        return {}
    return {str(r["id"]): r for r in df.to_dict(orient="records")}


def salvage(out: Path, order: list[str], fresh: dict[str, dict[str, Any]], earlier: bool = True) -> pd.DataFrame:
    """What a damaged store leaves, written to results.csv (and parquet) in scenario ``order``: the rows the store
    still gives (:func:`readable_rows`), those of the last results.csv for the scenarios it does not give (when
    ``earlier``: not after --force-new, whose earlier rows are of other inputs), and this run's rows (``fresh``, kept
    by the runner: they win). Only scenarios of ``order``. Returns the table written."""
    rows: dict[str, dict[str, Any]] = exported_rows(out) if earlier else {}
    rows.update(readable_rows(out / STORE))
    rows.update(fresh)
    position = {i: k for k, i in enumerate(order)}
    recs = sorted((r for i, r in rows.items() if i in position), key=lambda r: position[str(r["id"])])
    df = pd.DataFrame(recs)
    export(out, df)
    return df


WHOLE_NUMBER_COLUMNS = ("nodes", "gpus", "owned_nodes", "owned_unused_nodes", "attempts", "worker_pid")


def _whole_numbers(df: pd.DataFrame) -> pd.DataFrame:
    """Counts stay whole numbers in the exports (`nodes` 4, not 4.0, where rows without a plan leave them empty)."""
    out = df.copy()
    for c in WHOLE_NUMBER_COLUMNS:
        if c in out and pd.api.types.is_numeric_dtype(out[c]):
            values = out[c].dropna()
            if (values == values.round()).all():
                out[c] = out[c].round().astype("Int64")
    return out


def _has_pyarrow() -> bool:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


def _parquet_safe(df: pd.DataFrame) -> pd.DataFrame:
    """Columns of mixed Python types (e.g. None and str) as strings, so Arrow gets one type per column."""
    out = df.copy()
    for c in out.columns:
        if out[c].dtype == object:
            kinds = {type(v) for v in out[c] if v is not None and not (isinstance(v, float) and v != v)}
            if len(kinds) > 1 or (kinds and not kinds <= {str}):
                out[c] = out[c].map(lambda v: None if v is None else str(v))
    return out
