"""The package's layer rule, read from the imports of every module (ast): a layer imports only from layers below it.

    foundation (errors, version, formatting) <- data <- physics, solver <- checks <- plan, fleet
        <- batch, validation <- present <- cli <- app.py

Within one layer, two subpackages do not import each other (plan and fleet, batch and validation, physics and
solver are independent). ``planner/__init__.py`` is the public facade and imports lazily (PEP 562); it is exempt.
No module imports a private name (``_x``) from another module. Imports inside functions are for the optional or
heavy dependencies listed in ``LAZY_IMPORTS`` only (so ``import planner`` and ``planner evaluate`` do not pay for
them); every other import is at the top of its module, where a reader sees what the module depends on.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "planner"

LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"planner.errors", "planner.version", "planner.formatting"}),
    frozenset({"planner.data"}),
    frozenset({"planner.physics", "planner.solver"}),
    frozenset({"planner.checks"}),
    frozenset({"planner.plan", "planner.fleet"}),
    frozenset({"planner.batch", "planner.validation"}),
    frozenset({"planner.present"}),
    frozenset({"planner.cli"}),
    frozenset({"app"}),
)

# Imported inside functions only: optional extras (Ray, Altair, vl-convert, Playwright, Streamlit, pyarrow), the
# solver stack (Pyomo, HiGHS, SciPy: planner.solver.highs and planner.plan.formulation import them in the functions
# that build and solve a model), the fleet package, whose modules import Pyomo at their top, and the command
# modules of the CLI (planner/cli/main.py imports the one of the command run).
LAZY_IMPORTS = frozenset(
    {
        "pyomo",
        "highspy",
        "scipy",
        "ray",
        "altair",
        "vl_convert",
        "playwright",
        "streamlit",
        "pyarrow",
        "planner.fleet",
        "planner.cli.catalog",
        "planner.cli.evaluate",
        "planner.cli.validate",
        "planner.cli.solve",
        "planner.cli.pareto",
        "planner.cli.fleet",
        "planner.cli.batch",
    }
)


@dataclass(frozen=True)
class Violation:
    """One import that breaks the rule: where it is, what it imports and which rule it breaks."""

    where: str
    imported: str
    rule: str

    def __str__(self) -> str:
        return f"{self.where}: {self.imported} ({self.rule})"


def unit_of(module: str) -> str:
    """The layer unit of a dotted module name: its subpackage (``planner.plan``) or top module (``planner.errors``)."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "planner" else parts[0]


def layer_of(unit: str) -> int | None:
    return next((i for i, units in enumerate(LAYERS) if unit in units), None)


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _imports(tree: ast.AST) -> list[tuple[ast.stmt, str, list[str], bool]]:
    """(node, module, names, inside_function) for every import of the tree."""
    found: list[tuple[ast.stmt, str, list[str], bool]] = []

    def walk(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.Import):
                found.extend((child, a.name, [], in_function) for a in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                found.append((child, child.module, [a.name for a in child.names], in_function))
            walk(child, inner)

    walk(tree, False)
    return found


def _type_checking_only(tree: ast.AST) -> set[int]:
    """Line numbers of imports under ``if TYPE_CHECKING:`` (never executed: not a dependency at run time)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for inner in node.body:
                lines.update(range(inner.lineno, (inner.end_lineno or inner.lineno) + 1))
    return lines


def violations(source: str, module: str) -> list[Violation]:
    """Every import of ``source`` (the text of ``module``) that breaks the layer rule."""
    tree = ast.parse(source)
    own_unit = unit_of(module)
    own_layer = layer_of(own_unit)
    typing_only = _type_checking_only(tree)
    found: list[Violation] = []
    for node, imported, names, in_function in _imports(tree):
        where = f"{module}:{node.lineno}"
        targets = [imported] if imported != "planner" else [f"planner.{n}" for n in names]
        for target in targets:
            top = target.split(".")[0]
            lazy = any(target == t or target.startswith(t + ".") for t in LAZY_IMPORTS)
            if in_function and not lazy:
                found.append(Violation(where, target, "an import inside a function that is not in LAZY_IMPORTS"))
            if top != "planner" or node.lineno in typing_only:
                continue
            unit = unit_of(target)
            layer = layer_of(unit)
            if unit != own_unit and layer is not None and own_layer is not None:
                if layer > own_layer:
                    found.append(Violation(where, target, f"upward: {own_unit} is below {unit}"))
                elif layer == own_layer:
                    found.append(Violation(where, target, f"sideways: {own_unit} and {unit} are one layer"))
            if layer is None and target != "planner":
                found.append(Violation(where, target, "a planner module in no layer: add it to LAYERS"))
        if imported.startswith("planner.") and imported != module:
            found += [
                Violation(where, f"{imported}.{n}", "a private name of another module")
                for n in names
                if n.startswith("_") and not n.startswith("__")
            ]
    return found


def all_modules() -> list[tuple[Path, str]]:
    mods = [(p, module_name(p)) for p in sorted(PACKAGE.rglob("*.py")) if p != PACKAGE / "__init__.py"]
    return [*mods, (ROOT / "app.py", "app")]


def test_every_module_imports_only_from_the_layers_below_it() -> None:
    found = [str(v) for path, module in all_modules() for v in violations(path.read_text(), module)]
    assert not found, "imports that break the layer rule:\n" + "\n".join(found)


def test_every_subpackage_and_top_module_of_planner_has_a_layer() -> None:
    units = {unit_of(module_name(p)) for p in PACKAGE.rglob("*.py") if p != PACKAGE / "__init__.py"}
    assert sorted(u for u in units if layer_of(u) is None) == []


def test_an_upward_import_is_reported() -> None:
    source = "from planner.plan import solve\n"
    assert [v.rule for v in violations(source, "planner.physics.step")] == [
        "upward: planner.physics is below planner.plan"
    ]


def test_a_sideways_import_between_plan_and_fleet_is_reported() -> None:
    (v,) = violations("import planner.fleet.run\n", "planner.plan.solve")
    assert v.rule.startswith("sideways")


def test_a_private_name_of_another_module_is_reported() -> None:
    (v,) = violations("from planner.physics.space import _group\n", "planner.physics.pricing")
    assert v.imported == "planner.physics.space._group" and "private" in v.rule


def test_an_import_inside_a_function_is_reported_unless_listed_as_lazy() -> None:
    source = "def f():\n    from planner.data import Catalog\n    import altair\n    from planner.fleet import fleet\n"
    assert [v.imported for v in violations(source, "planner.present.charts")] == ["planner.data"]


def test_an_import_under_type_checking_is_not_a_dependency() -> None:
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from planner.present import plan_card\n"
    assert violations(source, "planner.plan.result") == []
