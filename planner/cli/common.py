"""Shared pieces of the command line: the parser class, argument types, output helpers and input checks.

Every command module (``catalog``, ``evaluate``, ``validate``, ``plan`` with ``solve`` and ``pareto``, ``fleet``,
``batch``) and ``main`` import from here; this module imports no other module of ``planner.cli``.

Exit codes: 0 success, 1 infeasible request (with an explanation), 2 bad input (message, no traceback),
3 internal error (a bug: please report it).
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import os
import shutil
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tabulate import tabulate

from planner.data import MAX_EVALUATION_SAMPLES, MAX_LIFE_YEARS, MAX_STARTUP_S, Catalog, load_catalog
from planner.errors import PlannerInputError
from planner.physics import validated as api_validated

EXIT_OK, EXIT_INFEASIBLE, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 3
PRECISIONS = ["bf16", "fp16", "fp8", "fp4", "tf32", "fp32"]

COST_HELP = (
    "Money: 'cost' is what the run costs = the bought hardware's share over the run (capex x run time / life) "
    "+ facility energy, or the rent for the whole billing periods the run occupies; 'up-front' is what must be "
    "spent before the run starts = the whole capex when buying, the whole rent when renting. Bought servers serve "
    "--life-years: a bought run must end within it (so its hardware share never exceeds the capex)."
)


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Help lines with the default appended (unless the text already states it); descriptions keep their line breaks
    and wrap their long lines to the terminal."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if (
            "default" not in text
            and action.default not in (None, False, argparse.SUPPRESS)
            and action.option_strings
            and action.nargs != 0
        ):
            shown = ",".join(map(str, action.default)) if isinstance(action.default, list) else action.default
            text += f" (default: {shown})"
        return text

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        """Each paragraph (lines between blank lines) as written when it fits ``width``, else refilled to it."""
        out = []
        for paragraph in text.split("\n\n"):
            lines = paragraph.splitlines()
            if all(len(indent + line) <= width for line in lines):
                out.append("\n".join(indent + line for line in lines))
            else:
                out.append(wrap_line(indent + " ".join(line.strip() for line in lines), width))
        return "\n\n".join(out)


class Parser(argparse.ArgumentParser):
    """argparse with the planner's error convention: one message (not the whole usage, which for `solve` is a
    screenful that pushes the message away) and the --help to read, exit code 2.

    Two additions, each checked for every command the same way: ``route(word, parser)`` hands the arguments after a
    leading ``word`` to another parser (`planner batch report DIR` has its own options and --help), and
    ``needs(option, what, holds)`` refuses an option given where it does nothing (`--ray-address` without
    `--engine ray`) instead of ignoring it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)
        self.routes: dict[str, argparse.ArgumentParser] = {}
        self.dependencies: list[tuple[str, str, Callable[[argparse.Namespace], bool]]] = []

    def error(self, message: str) -> Any:
        """argparse's own errors: one message and where the options are, exit 2; an unknown option is answered with
        the nearest options of any command (``option_hints``)."""
        unknown = self._unknown_options() if message.startswith("the following arguments are required") else []
        if unknown:  # a misspelt required option: the misspelling is the error to fix first
            message = f"unrecognized arguments: {' '.join(unknown)}"
        hints = option_hints(self, message)
        said = f"{message} ({hints})" if hints else message
        sys.stderr.write(f"planner: error: {said}\n  (all options: `{self.prog} --help`)\n")
        raise SystemExit(EXIT_BAD_INPUT)

    def _print_message(self, message: str, file: Any = None) -> None:
        """argparse's help and version text, written without swallowing a failed write (a full disk is said)."""
        if message:
            (file or sys.stderr).write(message)

    def route(self, word: str, parser: argparse.ArgumentParser) -> None:
        """Arguments that start with ``word`` are parsed by ``parser`` (its options, its --help)."""
        self.routes[word] = parser

    def needs(self, option: str, what: str, holds: Callable[[argparse.Namespace], bool]) -> None:
        """``option`` (e.g. ``--ray-address``), when given, needs ``what`` (said in the error, e.g. ``--engine ray``):
        refused when ``holds(args)`` is false."""
        self.dependencies.append((option, what, holds))

    def _unknown_options(self) -> list[str]:
        """The long options among the arguments being parsed that this parser does not know (``--modl``)."""
        known = {o for o in self._option_string_actions if o.startswith("--")}
        words = [w.split("=", 1)[0] for w in getattr(self, "_arguments", [])]
        return [w for w in words if w.startswith("--") and w not in known and not any(k.startswith(w) for k in known)]

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        items = None if args is None else list(args)
        self._arguments = sys.argv[1:] if items is None else items
        if items and items[0] in self.routes:
            return self.routes[items[0]].parse_known_args(items[1:], namespace)
        parsed, extras = super().parse_known_args(items, namespace)
        for option, what, holds in self.dependencies:
            given = getattr(parsed, option.lstrip("-").replace("-", "_"), None)
            if given is not None and given is not False and not holds(parsed):
                self.error(f"{option} needs {what}")
        return parsed, extras


# options a user may bring from a scenario file or the API, where a field is set another way on the command line
FIELD_OPTIONS = {
    "--purchase": "--rent or --either (buying is the default)",
}


def option_hints(parser: argparse.ArgumentParser, message: str) -> str:
    """For argparse's "unrecognized arguments" ``message``: per unknown option, what to write instead
    (``FIELD_OPTIONS``), else the nearest options of ``parser`` and its commands (difflib), joined by "; " (empty
    where there is none: an option of another command is not one to suggest)."""
    prefix = "unrecognized arguments:"
    if not message.startswith(prefix):
        return ""
    known = sorted(_option_strings(parser))
    lines = []
    for word in message[len(prefix) :].split():
        name = word.split("=", 1)[0]
        if not name.startswith("--"):
            continue
        if name in FIELD_OPTIONS:
            lines.append(f"{name}: use {FIELD_OPTIONS[name]}")
            continue
        if name in known:
            continue
        near = difflib.get_close_matches(name, known, n=2, cutoff=0.75)
        if near:
            lines.append(f"{name}: did you mean {' or '.join(near)}?")
    return "; ".join(lines)


def _option_strings(parser: argparse.ArgumentParser) -> set[str]:
    """The long options of ``parser`` and of every command under it (subparsers and routed parsers)."""
    out = {o for o in parser._option_string_actions if o.startswith("--")}
    children = list(getattr(parser, "routes", {}).values())
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            children += list(action.choices.values())
    for child in children:
        out |= _option_strings(child)
    return out


def one_line(message: str) -> str:
    """A message of several lines (a catalog with several invalid entries, each on its line) as one line, its lines
    joined by '; ' (after a line that ends in a colon, by a space: 'references do not resolve: server ...')."""
    out = ""
    for line in (x.strip() for x in message.splitlines()):
        if line:
            out += ("" if not out else " " if out.endswith(":") else "; ") + line
    return out


def number(text: str) -> float:
    """Any number argparse reads (NaN and infinity included: the typed checks below refuse them by name)."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


def positive_float(text: str) -> float:
    """A finite number > 0 (an amount, a duration); NaN and infinity are refused."""
    v = number(text)
    if math.isnan(v) or math.isinf(v):
        raise argparse.ArgumentTypeError(f"must be a finite positive number, got {text!r}")
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return v


def positive_limit(text: str) -> float:
    """A limit > 0 (power envelope): as positive_float, and an infinite one is said to be the option left out."""
    v = number(text)
    if math.isnan(v) or math.isinf(v):
        raise argparse.ArgumentTypeError(
            f"must be a finite positive number, got {text!r} (leave the option out for no limit)"
        )
    return positive_float(text)


def non_negative_float(text: str) -> float:
    """A finite number >= 0 (a budget); an infinite one is said to be the option left out."""
    v = number(text)
    if math.isnan(v) or math.isinf(v):
        raise argparse.ArgumentTypeError(
            f"must be a finite number >= 0, got {text!r} (leave the option out for no limit)"
        )
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text!r}")
    return v


def life_years(text: str) -> float:
    """--life-years: a positive number of years, at most MAX_LIFE_YEARS (the request's own bound)."""
    v = positive_float(text)
    if v > MAX_LIFE_YEARS:
        raise argparse.ArgumentTypeError(f"must be a number of years in (0, {MAX_LIFE_YEARS:g}], got {text!r}")
    return v


def gap_fraction(text: str) -> float:
    """A relative MIP gap in [0, 1)."""
    v = number(text)
    if not (0 <= v < 1):
        raise argparse.ArgumentTypeError(f"a relative MIP gap is a number in [0, 1), e.g. 1e-4; got {text!r}")
    return v


def whole_number(text: str) -> int | None:
    """The whole number ``text`` writes, as '64', '1e9' or '2.0' (None where it writes none: '1.5', 'x')."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        v = float(text)
    except ValueError:
        return None
    return int(v) if math.isfinite(v) and v == int(v) else None


def positive_int(text: str) -> int:
    """A whole number > 0 (a count of nodes, samples or steps)."""
    v = whole_number(text)
    if v is None:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}")
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive whole number, got {text!r}")
    return v


def bounded_int(lo: int, hi: int) -> Callable[[str], int]:
    """The argument type of a whole number from ``lo`` to ``hi`` (both included)."""

    def parse(text: str) -> int:
        v = whole_number(text)
        if v is None or not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"must be a whole number from {lo:,} to {hi:,}, got {text!r}")
        return v

    return parse


FP4_FORMATS = ("nvfp4", "mxfp4")  # the block-scaled FP4 formats `--precision fp4` models (one model for both)


def precision_arg(text: str) -> str:
    """A --precision value, case-insensitively ('FP8' is fp8); NVFP4 / MXFP4 are said to be `fp4`."""
    v = text.strip().lower()
    if v in FP4_FORMATS:
        raise argparse.ArgumentTypeError(
            f"{text!r}: block-scaled FP4 (NVFP4 on NVIDIA Blackwell, MXFP4 on AMD MI350) is --precision fp4"
        )
    if v not in PRECISIONS:
        raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from {', '.join(PRECISIONS)})")
    return v


def fraction(text: str) -> float:
    """A GPU power cap: a fraction of TDP in (0, 1]."""
    v = positive_float(text)
    if v > 1:
        raise argparse.ArgumentTypeError(f"a power cap is a fraction of TDP in (0, 1], got {text!r}")
    return v


def csv_list(text: str) -> list[str]:
    """A comma-separated list of ids, blanks dropped; an empty list is refused."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise argparse.ArgumentTypeError("expected a comma-separated list")
    return items


def fraction_list(text: str) -> list[float]:
    """A comma-separated list of power caps, each a fraction of TDP in (0, 1]."""
    return [fraction(x) for x in csv_list(text)]


def negative_numbers_as_values(argv: Sequence[str]) -> list[str]:
    """`--tokens -1e12`: argparse reads '-1e12' as an option; join it to its option (`--tokens=-1e12`) so the
    value reaches the option's own check and its message ("must be a positive number")."""
    out: list[str] = []
    i = 0
    items = list(argv)
    while i < len(items):
        a = items[i]
        nxt = items[i + 1] if i + 1 < len(items) else None
        if a.startswith("--") and "=" not in a and nxt is not None and nxt.startswith("-") and _is_number(nxt):
            out.append(f"{a}={nxt}")
            i += 2
            continue
        out.append(a)
        i += 1
    return out


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# ------------------------------------------------------------------------------------------------ output
def _json_default(o: Any) -> Any:
    """What ``json.dumps`` cannot write itself: numpy scalars, pydantic models, non-finite floats (null)."""
    if hasattr(o, "item"):
        return o.item()
    if hasattr(o, "model_dump"):
        return o.model_dump()
    if isinstance(o, float) and not math.isfinite(o):
        return None
    return str(o)


def emit_json(obj: Any) -> None:
    """``obj`` as indented, standard JSON (no NaN) on stdout."""
    print(json.dumps(obj, indent=2, default=_json_default, allow_nan=False))


def clean(obj: Any) -> Any:
    """NaN/inf -> None so the JSON is standard."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [clean(v) for v in obj]
    if hasattr(obj, "item"):
        return clean(obj.item())
    return obj


def number_text(v: float) -> str:
    """A number for people: from 1,000 on in whole units with thousands separators, else 4 significant figures."""
    if math.isfinite(v) and 1e3 <= abs(v) < 1e15:
        return f"{v:,.0f}"
    return f"{v:,.4g}" if isinstance(v, float) else str(v)


def table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], width: int | None = None) -> str:
    """Rows as a text table: numbers to 4 significant figures below 1,000, written out in whole units with
    thousands separators from 1,000 on (a price of 380,000, a cost of 45,502,345 and an envelope of 30,000 kW,
    never 3.8e+05); number columns right-aligned. Wider than ``width`` (characters; None: no limit), the columns
    after the first are split into as many tables, one under the other, as it takes to fit, each led by the first
    column (it names the row)."""

    def number(v: Any) -> bool:
        return isinstance(v, int | float) and not isinstance(v, bool)

    def cell(v: Any) -> Any:
        return number_text(v) if number(v) else ("" if v is None else v)

    def render(cols: Sequence[str]) -> str:
        body = [[cell(r.get(c)) for c in cols] for r in rows]
        align = ["right" if rows and all(number(r.get(c)) or r.get(c) is None for r in rows) else "left" for c in cols]
        return tabulate(body, headers=list(cols), colalign=align, disable_numparse=True)

    def wide(text: str) -> int:
        return max(map(len, text.splitlines()), default=0)

    whole = render(columns)
    if width is None or len(columns) < 3 or wide(whole) <= width:
        return whole
    groups: list[list[str]] = [[]]
    for c in columns[1:]:
        if groups[-1] and wide(render([columns[0], *groups[-1], c])) > width:
            groups.append([])
        groups[-1].append(c)
    return "\n\n".join(render([columns[0], *g]) for g in groups)


def output_width(wide: bool = False) -> int | None:
    """The width tables and notes are fitted to: the terminal's columns ($COLUMNS first) when stdout is a terminal or
    $COLUMNS is set; None (one line per row, as written) with --wide or when the output goes to a file or a pipe."""
    if wide:
        return None
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit():
        return max(int(columns), 40)
    return terminal_columns(sys.stdout)


def terminal_columns(stream: Any) -> int | None:
    """The terminal's columns (at least 40) where ``stream`` is a terminal, else None."""
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):
        terminal = False
    return max(shutil.get_terminal_size().columns, 40) if terminal else None


def wrap_line(line: str, width: int | None, hanging: int | None = None) -> str:
    """One line of prose wrapped to ``width`` (None: as it is), its continuation lines indented as it is (or by
    ``hanging`` columns: under the value of a 'label   value' line)."""
    if width is None or len(line) <= width:
        return line
    indent = line[: len(line) - len(line.lstrip())]
    rest = indent if hanging is None or hanging >= width // 2 else " " * hanging
    return textwrap.fill(line.strip(), width, initial_indent=indent, subsequent_indent=rest, break_on_hyphens=False)


def said_on_stderr(text: str) -> str:
    """A 'planner: ...' line for standard error: wrapped to the terminal's columns, continuation lines indented, when
    standard error is a terminal; one line otherwise (as scripts read it)."""
    return wrap_line(text, terminal_columns(sys.stderr), hanging=2)


def add_wide_arg(p: argparse.ArgumentParser) -> None:
    """--wide: tables and notes as written, one line per row (default: fitted to the terminal's width)."""
    p.add_argument(
        "--wide",
        action="store_true",
        help="do not fit tables and notes to the terminal's width (default: fitted when printing to a terminal)",
    )


def notice(text: str) -> None:
    """A note on stderr about something the user asked for that was adjusted (never silent)."""
    sys.stderr.write(said_on_stderr(f"planner: note: {text}") + "\n")


# ------------------------------------------------------------------------------------------- arguments
def add_catalog_args(p: argparse.ArgumentParser) -> None:
    """--catalog and --models: the hardware catalog and workload library directories."""
    p.add_argument("--catalog", metavar="DIR", help="hardware catalog directory (default: the shipped one)")
    p.add_argument("--models", metavar="DIR", help="workload library directory (default: the shipped one)")


def check_work_flags(wl: Any, tokens: float | None, epochs: float | None) -> None:
    """--tokens for a model that is not a sequence model, --epochs for one without a dataset size: bad input in the
    flags' terms (the API's message names its fields: 'give samples or epochs')."""
    others = ["--samples"] + (["--tokens"] if wl.sequence_length else []) + (["--epochs"] if wl.dataset_samples else [])
    if tokens is not None and not wl.sequence_length:
        raise PlannerInputError(
            f"--tokens: '{wl.id}' is not a sequence model (its work is counted in {wl.sample_unit}s): give "
            f"{' or '.join(o for o in others if o != '--tokens')}"
        )
    if epochs is not None and not wl.dataset_samples:
        raise PlannerInputError(
            f"--epochs: '{wl.id}' states no dataset size (dataset_samples in its workload file): give "
            f"{' or '.join(o for o in others if o != '--epochs')}"
        )


def add_work_args(p: argparse.ArgumentParser) -> None:
    """--samples, --tokens or --epochs (one of them): how much to train."""
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--samples",
        type=positive_float,
        help="samples to train, counted at the workload's reference batch (default: the workload's default_samples)",
    )
    g.add_argument(
        "--tokens",
        type=positive_float,
        help="tokens to train, sequence models only (= samples x sequence length; default: the workload's)",
    )
    g.add_argument(
        "--epochs",
        type=positive_float,
        help="passes over the workload's dataset (workloads with dataset_samples; default: the workload's amount)",
    )


def add_run_terms_args(p: argparse.ArgumentParser) -> None:
    """--startup-s, --evaluations and --evaluation-samples: the run's start-up and evaluations, added to its
    time-to-train (planner/physics/run_time.py)."""
    p.add_argument(
        "--startup-s",
        type=bounded_float(MAX_STARTUP_S, "seconds"),
        help="start-up of the run, seconds (initialization, compilation, checkpoint load), added to the "
        "time-to-train (default 0)",
    )
    p.add_argument(
        "--evaluations",
        type=bounded_int(0, 10_000_000),
        help="evaluations during the run, each a forward pass over --evaluation-samples held-out samples (default 0)",
    )
    p.add_argument(
        "--evaluation-samples",
        type=bounded_float(MAX_EVALUATION_SAMPLES, "samples"),
        help="held-out samples per evaluation (sequences for a language model): each evaluation takes the time "
        "the servers take to train the forward pass's share of as many samples (a third for full training)",
    )


def bounded_float(hi: float, unit: str) -> Callable[[str], float]:
    """The argument type of a finite number from 0 to ``hi`` (0 = none), ``unit`` said in the message."""

    def parse(text: str) -> float:
        v = number(text)
        if not (math.isfinite(v) and 0 <= v <= hi):
            raise argparse.ArgumentTypeError(
                f"must be a number of {unit} from 0 to {number_text(hi)} (0 = none), got {text!r}"
            )
        return v

    return parse


def run_terms_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The request fields of the run-term flags that were given (the two of evaluations go together:
    planner.checks.evaluations_problem, run with every check of a request)."""
    fields = {
        "startup_s": args.startup_s,
        "evaluations": args.evaluations,
        "evaluation_samples": args.evaluation_samples,
    }
    return {k: v for k, v in fields.items() if v is not None}


def add_framework_arg(p: argparse.ArgumentParser) -> None:
    """--framework: the framework profile the workload runs under."""
    p.add_argument(
        "--framework",
        metavar="ID",
        help="run the workload under this framework profile (see `planner catalog frameworks`; "
        "default: the workload's own)",
    )


def add_life_arg(p: argparse.ArgumentParser) -> None:
    """--life-years: the service life of bought hardware."""
    p.add_argument(
        "--life-years",
        type=life_years,
        default=4.0,
        help=f"service life of bought hardware, in (0, {MAX_LIFE_YEARS:g}]: a run is charged capex x run time / "
        "life, and a bought run must end within it, years",
    )


def catalog_from(args: argparse.Namespace) -> Catalog:
    """The catalog of --catalog/--models, with the workload's framework replaced when --framework is given."""
    cat = load_catalog(args.catalog, args.models)
    fw = getattr(args, "framework", None)
    model = getattr(args, "model", None)
    if fw is not None:
        cat.framework(fw)  # unknown id: a clear error listing the valid ones
        if model is not None:
            wl = cat.workload(model)
            cat = cat.replace(workloads={**cat.workloads, wl.id: wl.model_copy(update={"framework": fw})})
    return cat


def readable_text_file(path: str, what: str) -> str:
    """The path of a UTF-8 text file, or a clear error (missing, a directory, binary)."""
    p = Path(path)
    if not p.exists():
        raise PlannerInputError(f"{what} not found: {path}")
    if p.is_dir():
        raise PlannerInputError(f"{path} is a directory; give the {what} itself")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise PlannerInputError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        raise PlannerInputError(f"{path} is not a text file (not UTF-8); give a text (YAML or CSV) {what}") from None
    if b"\x00" in data:
        raise PlannerInputError(f"{path} is a binary file; give a text (YAML or CSV) {what}")
    if not any(line.strip() and not line.lstrip().startswith(b"#") for line in data.splitlines()):
        raise PlannerInputError(f"{path} is empty (nothing but blanks or comments); give a {what} (see examples/)")
    return path


def writable_file(path: str, option: str) -> Path:
    """A file path the command can write, checked before the work starts: not a directory, and its nearest
    existing folder writable (missing folders are created by the writer)."""
    p = Path(path)
    if p.is_dir():
        raise PlannerInputError(f"{option} {path} is a directory; give a file name, e.g. {p / 'VALIDATION.md'}")
    folder = p.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise PlannerInputError(f"{option} {path}: {folder} is a file, not a folder")
    if not os.access(folder, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise PlannerInputError(f"{option} {path} cannot be written (permission denied): give a writable path")
    return p


def validated(model: Any, data: dict[str, Any], where: str = "request") -> Any:
    """model.model_validate(data), a ValidationError turned into a PlannerInputError naming each field (the API's
    rule, planner.physics.validated)."""
    return api_validated(model, data, where)


FIRST_TICK_S, TICK_S = 3.0, 1.0


def with_progress(work: Any, what: str, message: str | None = None, expected_s: float | None = None) -> Any:
    """Run ``work()`` (a solve: one blocking call) with its progress on stderr: ``message`` first when given
    (what runs and when it stops), and on a terminal the seconds used, ticking on one line after FIRST_TICK_S
    (a solve over 100,000 nodes or a fleet of many jobs takes a minute; a usual solve is done before it shows),
    with ``expected_s`` as the estimate of the whole when given."""
    if message:
        sys.stderr.write(said_on_stderr(f"planner: {message}") + "\n")
        sys.stderr.flush()
    if not sys.stderr.isatty():
        return work()
    stop = threading.Event()
    ticked = threading.Event()
    t0 = time.perf_counter()
    of = f" of about {expected_s / 60:.0f} min" if expected_s and expected_s >= 120 else ""
    of = of or (f" of about {expected_s:.0f} s" if expected_s else "")

    def tick() -> None:
        wait_s = FIRST_TICK_S
        while not stop.wait(wait_s):
            wait_s = TICK_S
            sys.stderr.write(f"\rplanner: {what}: {time.perf_counter() - t0:.0f} s{of}")
            sys.stderr.flush()
            ticked.set()

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    try:
        return work()
    finally:
        stop.set()
        ticker.join()
        if ticked.is_set():
            sys.stderr.write(f"\rplanner: {what}: done in {time.perf_counter() - t0:.0f} s{' ' * len(of)}\n")
            sys.stderr.flush()
