"""Finding and loading the hardware catalog and the workload library.

Lookup order for the catalog directory: an explicit argument, then ``$PLANNER_CATALOG``, then the copy
shipped inside the installed package, then ``catalog/`` beside the package source (editable install).
The same for the workload library (``$PLANNER_MODELS``, ``models/``). Loading is cached per directory
and file modification time, so repeated calls are free but an edited file is re-read.
"""

from __future__ import annotations

import csv
import difflib
import functools
import io
import os
import typing
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from planner.data.calibration import read_calibration
from planner.data.schemas import Fabric, FrameworkProfile, Gpu, PowerCapCurve, Server, Site, Workload
from planner.errors import PlannerInputError, describe_validation_error, unknown_id

_PKG = Path(__file__).resolve().parent.parent  # the planner package
T = TypeVar("T", bound=BaseModel)


def _shipped(name: str) -> Path:
    """The copy of a data folder shipped inside the installed package, else the one beside the source."""
    inside = _PKG / "_shipped" / name
    return inside if inside.is_dir() else _PKG.parent / name


def catalog_dir(path: str | os.PathLike[str] | None = None) -> Path:
    """The hardware catalog folder: ``path``, else ``$PLANNER_CATALOG``, else the shipped catalog/."""
    return _resolve(path, "PLANNER_CATALOG", "catalog")


def models_dir(path: str | os.PathLike[str] | None = None) -> Path:
    """The workload library folder: ``path``, else ``$PLANNER_MODELS``, else the shipped models/."""
    return _resolve(path, "PLANNER_MODELS", "models")


def reference_dir(path: str | os.PathLike[str] | None = None) -> Path:
    """The published measurements folder: ``path``, else ``$PLANNER_REFERENCE``, else the shipped reference/."""
    return _resolve(path, "PLANNER_REFERENCE", "reference")


def _resolve(path: str | os.PathLike[str] | None, env: str, name: str) -> Path:
    """The folder given, else the environment variable's, else the shipped one; a missing folder is bad input."""
    chosen = Path(path) if path is not None else Path(os.environ[env]) if os.environ.get(env) else None
    if chosen is None:
        chosen = _shipped(name)
    if not chosen.is_dir():
        raise PlannerInputError(f"{name} directory not found: {chosen} (set --{name} DIR or ${env})")
    return chosen


_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when PyYAML was built with it: ~10x faster


def read_records(path: Path) -> list[dict[str, Any]]:
    """Rows of a YAML list or a CSV file (header = field names; `a;b` cells become lists)."""
    if path.suffix == ".csv":
        return csv_records(path.read_bytes(), str(path))
    try:
        data = yaml.load(path.read_text(), Loader=_YAML_LOADER)
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise PlannerInputError(f"{path}: not valid YAML/CSV: {exc}") from None
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise PlannerInputError(f"{path}: expected a list of mappings (one per entry)")
    return data


def csv_records(data: bytes, where: str) -> list[dict[str, Any]]:
    """The rows of a CSV table (a file's bytes; ``where`` names it in errors) as mappings of its header. Every row has
    exactly the header's cells: a short row (a missing cell, or an unterminated quote that swallowed the rest of the
    file) or a long one (an unquoted comma) is bad input naming the line -- never a row read with holes or with cells
    dropped; a column named twice is bad input (one of the two would be dropped); a UTF-8 byte-order mark and blank
    lines before the header are skipped. The command line's files and the app's uploads are read by it alike."""
    try:
        text = data.decode("utf-8-sig")  # -sig: a byte-order mark (Excel writes one) is not text
        return _csv_rows(csv.reader(io.StringIO(text, newline="")), where)
    except (csv.Error, UnicodeDecodeError) as exc:
        raise PlannerInputError(f"{where}: not valid YAML/CSV: {exc}") from None


def _csv_rows(reader: Any, where: str) -> list[dict[str, Any]]:
    """``csv_records``' rows of a csv.reader."""
    header = next(reader, None)
    while header is not None and not any(h.strip() for h in header):  # a blank line (or only commas) above it
        header = next(reader, None)
    if not header:
        raise PlannerInputError(f"{where}: a CSV table starts with a header of field names")
    twice = sorted({h for h in header if header.count(h) > 1})
    if twice:
        raise PlannerInputError(
            f"{where}: the header names {', '.join(repr(h) for h in twice)} more than once: give each column once"
        )
    rows: list[dict[str, Any]] = []
    for row in reader:
        if not row:
            continue
        if len(row) != len(header):
            raise PlannerInputError(
                f"{where}, line {reader.line_num}: {len(row)} cells where the header has {len(header)} "
                "(a missing cell, an unquoted comma or an unterminated quote): give every row one cell per "
                "column, empty for the default, and quote cells that hold commas"
            )
        rows.append({k: csv_cell(v) for k, v in zip(header, row, strict=True)})
    return rows


def csv_cell(value: str) -> Any:
    """A CSV cell as a value: empty is None, ``a;b`` a list of its parts, true/false/null YAML's, else the text."""
    if value == "":
        return None
    if ";" in value:
        return [v.strip() for v in value.split(";")]
    return yaml.safe_load(value) if value.strip().lower() in {"true", "false", "null"} else value


def parse_records(records: Iterable[dict[str, Any]], model: type[T], where: str) -> list[T]:
    """Records validated as ``model``: every invalid record and duplicate id reported at once, as a
    PlannerInputError naming ``where``, the record's place (entry 1 is the first: a YAML list's first item, a CSV
    table's first row under its header; no place for a file of one record, a workload's) and id, and the field."""
    out: list[T] = []
    problems: list[str] = []
    records = list(records)
    for i, rec in enumerate(records):
        place = f"{where} entry {i + 1}" if len(records) > 1 else where
        label = place + (f" (id={rec.get('id')})" if isinstance(rec, dict) and "id" in rec else "")
        try:
            out.append(model.model_validate(rec))
        except ValidationError as exc:
            problems.append(describe_validation_error(exc, label))
    if problems:
        raise PlannerInputError("\n".join(problems))
    ids = [getattr(x, "id", None) for x in out]
    dup = sorted({i for i in ids if i is not None and ids.count(i) > 1})
    if dup:
        raise PlannerInputError(f"{where}: duplicate ids: {', '.join(map(str, dup))}")
    return out


def load_file(path: Path, model: type[T]) -> list[T]:
    """The records of a YAML or CSV file as ``model`` instances (CSV cells read as the model's fields)."""
    records = read_records(path)
    if path.suffix == ".csv":
        records = [table_fields(r, model) for r in records]
    return parse_records(records, model, str(path))


def table_fields(record: dict[str, Any], model: type[BaseModel]) -> dict[str, Any]:
    """A table's row (a CSV file's, the app's edited tables') as the model's fields: an empty cell is the field's
    default where it has one (a bool or a number cannot be null) and null where it has none (a CPU server's gpu);
    `a;b` is a list in a list field (one cell without a semicolon a list of one) and text elsewhere (a source or a
    note may hold semicolons)."""
    out: dict[str, Any] = {}
    for k, v in record.items():
        f = model.model_fields.get(k)
        if f is None:
            out[k] = v  # an unknown column: the model reports it
        elif v is None:
            if f.is_required():
                out[k] = None
        elif _is_list_field(f.annotation):
            out[k] = v if isinstance(v, list) else [v]
        else:
            out[k] = "; ".join(map(str, v)) if isinstance(v, list) else v
    return out


def _is_list_field(annotation: Any) -> bool:
    """A field typed list[...] (or list[...] | None)."""
    if typing.get_origin(annotation) is list:
        return True
    return any(_is_list_field(a) for a in typing.get_args(annotation) if a is not type(None))


@dataclass(frozen=True, eq=False)  # identity hash: used as a cache key
class Catalog:
    """The hardware catalog plus the workload library, with id lookups that explain unknown ids."""

    gpus: dict[str, Gpu]
    servers: dict[str, Server]
    fabrics: dict[str, Fabric]
    sites: dict[str, Site]
    power_curves: dict[str, PowerCapCurve]
    frameworks: dict[str, FrameworkProfile]
    workloads: dict[str, Workload]
    calibration: dict[str, Any] = field(default_factory=dict)

    def gpu(self, id_: str) -> Gpu:
        """The GPU of this id; an unknown id is a PlannerInputError listing the known ones."""
        return _get(self.gpus, id_, "GPU")

    def server(self, id_: str) -> Server:
        """The server of this id; an unknown id is a PlannerInputError listing the known ones."""
        return _get(self.servers, id_, "server")

    def fabric(self, id_: str) -> Fabric:
        """The fabric of this id; an unknown id is a PlannerInputError listing the known ones."""
        return _get(self.fabrics, id_, "fabric")

    def site(self, id_: str) -> Site:
        """The site of this id; an unknown id is a PlannerInputError listing the known ones."""
        return _get(self.sites, id_, "site")

    def workload(self, id_: str) -> Workload:
        """The workload (model) of this id; an unknown id is a PlannerInputError listing the known ones."""
        return _get(self.workloads, id_, "model")

    def framework(self, id_: str) -> FrameworkProfile:
        """The framework profile of this id; an unknown id is a PlannerInputError listing the known ones."""
        return _get(self.frameworks, id_, "framework")

    def gpu_servers(self) -> list[Server]:
        """The servers with a GPU (the model places training on accelerators only), in catalog order."""
        return [s for s in self.servers.values() if s.gpu is not None]

    def replace(self, **changes: object) -> Catalog:
        """A copy with some tables replaced (catalog editing, price overrides)."""
        fields: dict[str, Any] = {k: getattr(self, k) for k in self.__dataclass_fields__}
        fields.update(changes)
        cat = Catalog(**fields)
        cat.check_references()
        return cat

    def check_references(self) -> None:
        """Every id a table names resolves (a server's GPU and fabrics, a GPU's power curve, a workload's
        framework); all that do not are one PlannerInputError."""
        problems: list[str] = []
        for s in self.servers.values():
            if s.gpu is not None and s.gpu not in self.gpus:
                problems.append(_unresolved(f"server '{s.id}'", "gpu", s.gpu, self.gpus))
            missing = [f for f in s.fabrics if f not in self.fabrics]
            problems += [_unresolved(f"server '{s.id}'", "fabric", f, self.fabrics) for f in missing]
        for g in self.gpus.values():
            if g.power_curve not in self.power_curves:
                problems.append(_unresolved(f"gpu '{g.id}'", "power_curve", g.power_curve, self.power_curves))
        for w in self.workloads.values():
            if w.framework not in self.frameworks:
                problems.append(_unresolved(f"model '{w.id}'", "framework", w.framework, self.frameworks))
        if problems:
            raise PlannerInputError("catalog references do not resolve:\n" + "\n".join(problems))


def _unresolved(owner: str, field_name: str, given: str, valid: Iterable[str]) -> str:
    """A reference that does not resolve: whose, which field, the nearest valid id (a typo) and every valid one."""
    ids = sorted(valid)
    near = difflib.get_close_matches(given, ids, n=1)
    hint = f" (did you mean '{near[0]}'?)" if near else ""
    return f"{owner}: unknown {field_name} '{given}'{hint}; valid: {', '.join(ids)}"


def _get(table: dict[str, T], id_: str, kind: str) -> T:
    try:
        return table[id_]
    except KeyError:
        raise unknown_id(kind, id_, table) from None


def _by_id(items: list[T]) -> dict[str, T]:
    return {getattr(x, "id"): x for x in items}  # noqa: B009


def _find(directory: Path, stem: str) -> Path:
    for suffix in (".yaml", ".yml", ".csv"):
        p = directory / f"{stem}{suffix}"
        if p.exists():
            return p
    raise PlannerInputError(f"{directory}: missing {stem}.yaml (or .csv)")


def _stamp(directory: Path) -> tuple[tuple[str, float], ...]:
    return tuple(sorted((p.name, p.stat().st_mtime) for p in directory.iterdir() if p.is_file()))


def load_catalog(
    catalog: str | os.PathLike[str] | None = None, models: str | os.PathLike[str] | None = None
) -> Catalog:
    """Load (cached) the catalog and workload library. Raises PlannerInputError with file and field."""
    cdir, mdir = catalog_dir(catalog), models_dir(models)
    return _load_cached(cdir, mdir, _stamp(cdir), _stamp(mdir))


@functools.lru_cache(maxsize=16)
def _load_cached(cdir: Path, mdir: Path, _s1: object, _s2: object) -> Catalog:
    workloads: list[Workload] = []
    for p in sorted(mdir.glob("*.yaml")):
        if p.name.startswith("_"):
            continue  # templates
        workloads += load_file(p, Workload)
    ids = [w.id for w in workloads]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise PlannerInputError(f"{mdir}: duplicate model ids: {', '.join(dup)}")
    calib_path = cdir / "calibration.yaml"
    calibration = read_calibration(calib_path) if calib_path.exists() else {}
    cat = Catalog(
        gpus=_by_id(load_file(_find(cdir, "gpus"), Gpu)),
        servers=_by_id(load_file(_find(cdir, "servers"), Server)),
        fabrics=_by_id(load_file(_find(cdir, "fabrics"), Fabric)),
        sites=_by_id(load_file(_find(cdir, "sites"), Site)),
        power_curves=_by_id(load_file(_find(cdir, "power_caps"), PowerCapCurve)),
        frameworks=_by_id(load_file(_find(cdir, "frameworks"), FrameworkProfile)),
        workloads=_by_id(workloads),
        calibration=calibration or {},
    )
    cat.check_references()
    return cat
