"""Errors the user can act on. The CLI turns these into a message and exit code 2, never a traceback."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import TYPE_CHECKING

from pydantic import ValidationError

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails


class PlannerInputError(ValueError):
    """Bad input: an unknown id, an out-of-range value, a malformed file. The message says how to fix it."""


def unknown_id(kind: str, given: str, valid: Iterable[str]) -> PlannerInputError:
    valid = sorted(valid)
    prefixed = [v for v in valid if v.startswith(given)]
    close = prefixed[:1] or difflib.get_close_matches(given, valid, n=1)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    return PlannerInputError(f"unknown {kind} '{given}'.{hint} Valid {kind}s: {', '.join(valid)}")


def describe_validation_error(err: ValidationError, where: str) -> str:
    """One line per problem: `where: field.path: message (got value)`; a rule over several fields (a model
    validator: no path) as `where: message`, its own words without pydantic's 'Value error, ' prefix."""
    lines = []
    for e in err.errors():
        if not e["loc"] and e["type"] == "value_error":
            lines.append(f"{where}: {e['msg'].removeprefix('Value error, ')}")
            continue
        path = ".".join(str(p) for p in e["loc"]) or "(root)"
        got = e.get("input")
        # a validator's own words (pydantic prefixes them 'Value error, '), which say the value where it matters
        said = _plain(e) or e["msg"].removeprefix("Value error, ")
        shown = "" if isinstance(got, dict | list) or "(got " in said else f" (got {got!r})"
        lines.append(f"{where}: {path}: {said}{shown}")
    return "\n".join(lines)


def _plain(e: ErrorDetails) -> str | None:
    """A list's length said plainly ('give at least 1 entry, got none' for pydantic's 'List should have at least
    1 item after validation, not 0'); None for the other problems, whose own words serve."""
    ctx = e.get("ctx") or {}
    if e["type"] not in ("too_short", "too_long"):
        return None
    n = ctx.get("actual_length")
    got = "none" if n == 0 else f"{n}"
    if e["type"] == "too_short":
        least = ctx.get("min_length")
        return f"give at least {least} {'entry' if least == 1 else 'entries'}, got {got}"
    return f"give at most {ctx.get('max_length')} entries, got {got}"
