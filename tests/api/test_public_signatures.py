"""The public API says what it takes and returns: no parameter, return or model field of a name in
``planner.__all__`` (and of the public functions of the subpackages it exports) is annotated as bare ``Any``."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Iterator

import planner


def _public_callables() -> Iterator[tuple[str, Callable[..., object]]]:
    for name in planner.__all__:
        obj = getattr(planner, name)
        if inspect.isfunction(obj):
            yield name, obj
        elif inspect.isclass(obj):
            for member, fn in vars(obj).items():
                if inspect.isfunction(fn) and not member.startswith("_"):
                    yield f"{name}.{member}", fn
        elif inspect.ismodule(obj):
            for member in getattr(obj, "__all__", []):
                fn = getattr(obj, member)
                if inspect.isfunction(fn):
                    yield f"{name}.{member}", fn


def test_no_public_function_of_the_api_takes_or_returns_bare_any() -> None:
    found = [
        f"{name}: {arg}"
        for name, fn in _public_callables()
        for arg, hint in typing.get_type_hints(fn).items()
        if hint is typing.Any
    ]
    assert found == []


def test_no_field_of_a_public_model_is_bare_any() -> None:
    found = [
        f"{name}.{field}"
        for name in planner.__all__
        if inspect.isclass(obj := getattr(planner, name)) and hasattr(obj, "model_fields")
        for field, info in obj.model_fields.items()
        if info.annotation is typing.Any
    ]
    assert found == []


def test_help_of_a_plan_request_lists_every_field_with_its_meaning_and_default() -> None:
    """The README sends a notebook user to help(planner.PlanRequest): it lists each field, what it means (units in
    the name or the description) and its default; pydantic's own help listed none of the descriptions."""
    import pydoc

    import planner

    text = pydoc.render_doc(planner.PlanRequest, renderer=pydoc.plaintext)
    assert "model: workload id (models/) [required]" in text
    assert "deadline_days: training must finish within, days [default None]" in text
    assert "max_nodes: most nodes a plan may use [default 1024]" in text
    assert all(f"{name}: " in text for name in planner.PlanRequest.model_fields)
