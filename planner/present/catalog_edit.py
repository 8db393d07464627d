"""Catalog tables the app edits: a table per kind (servers, GPUs, fabrics, sites, workloads), uploads read and
checked, edits applied through the same schemas as the YAML files and summarised field by field; a YAML file that
does not parse said in one line naming its line."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import yaml
from pydantic import BaseModel, ValidationError

from planner.data import Catalog, Gpu, Server, Workload, parse_records, table_fields
from planner.errors import PlannerInputError, describe_validation_error
from planner.formatting import number_text

TABLES: dict[str, tuple[str, type[BaseModel]]] = {"servers": ("servers", Server), "gpus": ("gpus", Gpu)}


def catalog_table(catalog: Catalog, table: str) -> pd.DataFrame:
    attr, _ = TABLES[table]
    rows = [x.model_dump() for x in getattr(catalog, attr).values()]
    return _lists_joined(pd.DataFrame(rows))


def _lists_joined(df: pd.DataFrame) -> pd.DataFrame:
    """The table with its list cells written as the editor shows them, comma-separated (fabrics: 'hdr200,ndr400';
    ``_row_records`` reads them back)."""
    for col in df.columns:
        if df[col].map(lambda v: isinstance(v, list)).any():
            df[col] = df[col].map(lambda v: ",".join(map(str, v)) if isinstance(v, list) else v)
    return df


def _row_records(df: pd.DataFrame) -> list[dict[str, Any]]:
    records = []
    for rec in df.to_dict(orient="records"):
        clean: dict[str, Any] = {}
        for k, v in rec.items():
            if isinstance(v, float) and np.isnan(v):
                v = None
            if k == "fabrics" and isinstance(v, str):
                v = [x.strip() for x in v.split(",") if x.strip()]
            clean[str(k)] = v
        records.append(clean)
    return records


def apply_table(catalog: Catalog, table: str, df: pd.DataFrame) -> tuple[Catalog | None, list[str]]:
    """Validate an edited table; (new catalog, []) or (None, one message per bad field)."""
    attr, model = TABLES[table]
    try:
        items = parse_records(_row_records(df), model, table)
        new = catalog.replace(**{attr: {getattr(i, "id"): i for i in items}})  # noqa: B009
    except PlannerInputError as exc:
        return None, str(exc).splitlines()
    return new, []


def upload_warning(catalog: Catalog, table: str, name: str, df: pd.DataFrame, shown: int = 5) -> str | None:
    """What is wrong with an uploaded table as the editor will show it, said at once (``apply_table``'s problems,
    the first ``shown`` of them, and the columns the table's schema does not have: a workload file uploaded as the
    servers table), so that the wrong file is not found out only at "Validate and use this table"; None where it
    validates."""
    _, problems = apply_table(catalog, table, df)
    if not problems:
        return None
    _, model = TABLES[table]
    foreign = [str(c) for c in df.columns if str(c) not in model.model_fields]
    if len(foreign) > shown:
        foreign = [*foreign[:shown], f"... ({len(foreign) - shown} more)"]
    lines = [
        f"{name} does not validate as the {table} table ({len(problems)} problem{'s' if len(problems) > 1 else ''}"
        + (f"; columns a {table} entry does not have: {', '.join(foreign)}" if foreign else "")
        + "). Fix it below, or upload the right file; nothing is used until it validates.",
        *(f"- `{p}`" for p in problems[:shown]),
    ]
    if len(problems) > shown:
        lines.append(f"- ... and {len(problems) - shown} more")
    return "\n".join(lines)


def read_upload(name: str, data: bytes, table: str | None = None) -> pd.DataFrame:
    """A YAML (list of mappings) or CSV upload as a table; PlannerInputError with the file name if malformed.
    ``table`` (one of ``TABLES``): a field an entry leaves out, or a CSV cell left empty, is the field's default, as
    the catalog loader reads the files (``data.table_fields``) -- so the shipped files upload as they load; a cell
    the editor clears later is not (a cleared billing period is an error, not hourly billing)."""
    try:
        if name.lower().endswith(".csv"):
            df = pd.read_csv(io.BytesIO(data))
            if table is None:
                return df
            return _with_defaults(_row_records(df), table)
        loaded = yaml.safe_load(data.decode("utf-8"))
    except yaml.YAMLError as exc:
        raise PlannerInputError(yaml_problem(name, exc, data, "YAML/CSV")) from None
    except (UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        raise PlannerInputError(f"{name}: not valid YAML/CSV: {first_line(exc)}") from None
    if isinstance(loaded, dict):
        loaded = [loaded]
    if not isinstance(loaded, list) or not all(isinstance(r, dict) for r in loaded):
        raise PlannerInputError(f"{name}: expected a list of mappings (one per entry)")
    return pd.DataFrame(loaded) if table is None else _with_defaults(loaded, table)


def _with_defaults(records: list[dict[str, Any]], table: str) -> pd.DataFrame:
    """The records as a table with every field of the table's schema they leave out (or leave empty) set to its
    default; a field with no default stays empty (the schema says it is required); list cells as the editor shows
    them (``_lists_joined``)."""
    _, model = TABLES[table]
    defaults = {
        k: f.get_default(call_default_factory=True) for k, f in model.model_fields.items() if not f.is_required()
    }
    rows = []
    for rec in records:
        row = table_fields(dict(rec), model)
        rows.append({**row, **{k: v for k, v in defaults.items() if k not in row}})
    return _lists_joined(pd.DataFrame(rows))


def first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


# PyYAML's words for the commonest slips, and what they mean to a person editing the file
YAML_HINTS = (
    ("mapping values are not allowed", "a ':' inside a value (quote the value, or start a new line for the key)"),
    ("expected <block end>", "this line's indentation does not line up with the lines above it"),
    ("did not find expected '-' indicator", "this line's indentation does not line up with the lines above it"),
    ("did not find expected key", "this line's indentation does not line up with the lines above it"),
    ("cannot start any token", "a character that cannot start a value here (a tab? indent with spaces)"),
    ("expected ',' or ']'", "a [ list ] that is not closed with ]"),
    ("expected ',' or '}'", "a { mapping } that is not closed with }"),
    ("found unexpected end of stream", "a quote that is not closed"),
    ("could not find expected ':'", "a key without its ':' (or a quote that is not closed)"),
    ("found duplicate anchor", "an anchor (&name) defined twice"),
)


def yaml_problem(name: str, exc: yaml.YAMLError, data: bytes | str, kind: str = "YAML") -> str:
    """A YAML file that does not parse, in one line: the file, the line and column, what is wrong and the line
    itself -- 'fleet.yaml: not valid YAML at line 4, column 4: this line's indentation does not line up with the
    lines above it (expected <block end>, but found '<block mapping start>'): "   model: x"'."""
    problem = str(getattr(exc, "problem", None) or first_line(exc))
    hint = next((h for key, h in YAML_HINTS if key in problem), None)
    what = f"{hint} ({problem})" if hint else problem
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    lines = text.splitlines()

    def line_at(m: Any) -> str:
        return lines[m.line].rstrip() if m is not None and 0 <= m.line < len(lines) else ""

    # where the problem was found; where the construct began when that is past the last line (an unclosed list)
    found, began = getattr(exc, "problem_mark", None), getattr(exc, "context_mark", None)
    mark = found if found is not None and (line_at(found).strip() or began is None) else began
    if mark is None:
        return f"{name}: not valid {kind}: {what}"
    shown = line_at(mark)
    line = f': "{shown}"' if shown.strip() else ""
    return f"{name}: not valid {kind} at line {mark.line + 1}, column {mark.column + 1}: {what}{line}"


EMPTY = "empty"

# what a cleared field means for the entry (a number cell typed as text is cleared by the table editor)
CLEARED_MEANS = {
    "price_usd": "can no longer be bought (rent-only)",
    "rent_usd_per_month": "can no longer be rented",
    "rent_usd_per_gpu_hour": "has no rental price",
}


def cell_text(value: Any) -> str:
    """A catalog field's value in a change summary: numbers with separators (310,000), lists comma separated."""
    if value is None:
        return EMPTY
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int | float):
        return number_text(value)
    if isinstance(value, list | tuple):
        return ",".join(map(str, value)) or EMPTY
    return str(value)


@dataclass(frozen=True)
class TableChange:
    """One edit of a catalog table: an entry added or removed (``field`` None), or one field of it changed."""

    entry: str
    field: str | None = None
    before: Any = None
    after: Any = None
    added: bool = False
    removed: bool = False

    @property
    def cleared(self) -> bool:
        """A field that had a value and has none now."""
        return self.field is not None and self.before is not None and self.after is None

    def text(self) -> str:
        """'mi350x-8: price_usd 310,000 → 3,100,000'; 'mi400-8: added'."""
        if self.added:
            return f"{self.entry}: added"
        if self.removed:
            return f"{self.entry}: removed"
        return f"{self.entry}: {self.field} {cell_text(self.before)} → {cell_text(self.after)}"

    def warning(self) -> str | None:
        """What a cleared field means, said: a number cell typed as text is cleared by the table editor."""
        if not self.cleared:
            return None
        means = CLEARED_MEANS.get(str(self.field), f"has no {self.field}")
        return (
            f"{self.text()}: {self.entry} {means}. A number cell given text is left empty: if you meant a value, "
            "type it as a number (3100000) and validate again"
        )


def table_changes(old: Catalog, new: Catalog, table: str) -> list[TableChange]:
    """What an edit changed in a catalog table, entry by entry in the new table's order (then the removed ones):
    each changed field with its old and new value."""
    attr, _ = TABLES[table]
    before = {k: v.model_dump() for k, v in getattr(old, attr).items()}
    after = {k: v.model_dump() for k, v in getattr(new, attr).items()}
    changes: list[TableChange] = []
    for entry, fields in after.items():
        if entry not in before:
            changes.append(TableChange(entry, added=True))
            continue
        changes += [
            TableChange(entry, field, before[entry].get(field), value)
            for field, value in fields.items()
            if before[entry].get(field) != value
        ]
    changes += [TableChange(entry, removed=True) for entry in before if entry not in after]
    return changes


def table_yaml(catalog: Catalog, table: str) -> str:
    attr, _ = TABLES[table]
    return yaml.safe_dump([x.model_dump() for x in getattr(catalog, attr).values()], sort_keys=False)


def add_workload(catalog: Catalog, name: str, data: bytes) -> Catalog:
    try:
        loaded = yaml.safe_load(data.decode("utf-8"))
    except yaml.YAMLError as exc:
        raise PlannerInputError(yaml_problem(name, exc, data)) from None
    except UnicodeDecodeError:
        raise PlannerInputError(f"{name} is not a text file (not UTF-8); give a YAML workload") from None
    try:
        wl = Workload.model_validate(loaded)
    except ValidationError as exc:
        raise PlannerInputError(describe_validation_error(exc, name)) from None
    return catalog.replace(workloads={**catalog.workloads, wl.id: wl})
