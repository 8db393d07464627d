"""The `planner` command: the parser, built from one module per command, and `main`, which runs the command and
turns every way out into an exit code. Tables for people by default, `--json` for machines.

Exit codes: 0 success, 1 infeasible request (with an explanation), 2 bad input (message, no traceback; also a file
the command cannot read or write, standard output on a full disk included), 3 internal error, 130 after Ctrl-C.
The optimizer (Pyomo, HiGHS) is imported inside the commands that solve. Each command's module (its parser and
handler) is imported only when its parser is built: `planner CMD ...` builds the parser of CMD alone (the same
parser and the same parse as the whole one's, for a known CMD), so `planner solve` does not import the batch,
fleet or validation stacks; `planner --help`, an unknown command and `build_parser()` build every command's.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from planner.cli.common import (
    COST_HELP,
    EXIT_BAD_INPUT,
    EXIT_INTERNAL,
    EXIT_OK,
    Parser,
    negative_numbers_as_values,
    one_line,
    said_on_stderr,
)
from planner.errors import PlannerInputError
from planner.version import __version__

__all__ = ["COMMANDS", "EXIT_BAD_INPUT", "EXIT_INTERNAL", "EXIT_OK", "build_parser", "main", "parser_for"]

DESCRIPTION = f"""Capacity planner for distributed ML training clusters.

Exit codes: 0 ok, 1 no feasible plan (with the smallest relaxation of each requirement; `evaluate`: the
configuration does not fit in GPU memory, or a bought run outlasts its servers' --life-years), 2 bad input,
3 internal error (please report it), 4 `batch` left scenarios without an answer (rerun to resume), 130/143
interrupted (SIGINT/SIGTERM).

{COST_HELP}"""


def add_catalog(sub: Any) -> None:
    from planner.cli.catalog import add_catalog_commands

    add_catalog_commands(sub)


def add_evaluate(sub: Any) -> None:
    from planner.cli.evaluate import add_evaluate_command

    add_evaluate_command(sub)


def add_validate(sub: Any) -> None:
    from planner.cli.validate import add_validate_commands

    add_validate_commands(sub)


def add_solve(sub: Any) -> None:
    from planner.cli.solve import add_solve_command

    add_solve_command(sub)


def add_pareto(sub: Any) -> None:
    from planner.cli.pareto import add_pareto_command

    add_pareto_command(sub)


def add_fleet(sub: Any) -> None:
    from planner.cli.fleet import add_fleet_command

    add_fleet_command(sub)


def add_batch(sub: Any) -> None:
    from planner.cli.batch import add_batch_command

    add_batch_command(sub)


# The commands, in the order of `planner --help`: the names each module registers, and the function that imports
# the module and registers them (its parsers and handlers).
COMMANDS: tuple[tuple[tuple[str, ...], Callable[[Any], None]], ...] = (
    (("catalog", "models"), add_catalog),
    (("evaluate",), add_evaluate),
    (("validate", "calibrate"), add_validate),
    (("solve",), add_solve),
    (("pareto",), add_pareto),
    (("fleet",), add_fleet),
    (("batch",), add_batch),
)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The `planner` parser: each command's module registers its subcommand and the handler it runs (``func``).
    ``command`` (a name in COMMANDS): only the commands of that one module are registered, and only it is
    imported."""
    p = Parser(prog="planner", description=DESCRIPTION)
    p.add_argument("--version", action="version", version=f"planner {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    for names, add in COMMANDS:
        if command is None or command in names:
            add(sub)
    return p


def parser_for(argv: Sequence[str]) -> argparse.ArgumentParser:
    """The parser that reads ``argv``: the named command's alone when ``argv`` starts with a known command (argparse
    then sees no other subcommand: the same parse), else every command's (`planner --help`, `--version`, a usage
    error naming the commands)."""
    first = argv[0] if argv else None
    known = first is not None and any(first in names for names, _add in COMMANDS)
    return build_parser(first if known else None)


def main(argv: Sequence[str] | None = None) -> int:
    """Run `planner ARGV` (default: the process's arguments) and return its exit code: bad input is a message on
    stderr (2), a file the system refuses to read or write is one line naming it (2; standard output on a full disk
    too, flushed here so that it is said, not lost at exit), a reader that left the pipe is success, Ctrl-C is 130,
    anything else an internal error (3) with one line (PLANNER_DEBUG=1 raises it). argparse's own exits (--help,
    --version, a usage error) stay SystemExit."""
    words = negative_numbers_as_values(sys.argv[1:] if argv is None else argv)
    try:
        args = parser_for(words).parse_args(words)
    except SystemExit:
        problem = flush_stdout()
        if problem is not None:
            raise SystemExit(output_failed(problem)) from None
        raise
    except OSError as exc:  # --help or --version on a full disk
        raise SystemExit(output_failed(exc)) from None
    try:
        code = int(args.func(args))
        sys.stdout.flush()
        return code
    except PlannerInputError as exc:
        sys.stderr.write(said_on_stderr(f"planner: error: {one_line(str(exc))}") + "\n")
        return EXIT_BAD_INPUT
    except BrokenPipeError:  # `planner ... | head`: the reader left; not an error of ours
        silence_stdout()
        return EXIT_OK
    except KeyboardInterrupt:
        sys.stderr.write("planner: interrupted\n")
        return 130
    except OSError as exc:  # the system refused a read or a write: a full disk, a file that is not there
        if flush_stdout() is not None:  # standard output is what failed
            return output_failed(exc)
        return system_refused(exc)
    except Exception as exc:  # never a bare traceback for users
        if os.environ.get("PLANNER_DEBUG"):
            raise
        sys.stderr.write(
            f"planner: internal error: {type(exc).__name__}: {one_line(str(exc))} (set PLANNER_DEBUG=1 for details)\n"
        )
        return EXIT_INTERNAL


def flush_stdout() -> OSError | None:
    """Flush standard output; the error if it cannot be written (None when it can)."""
    try:
        sys.stdout.flush()
    except OSError as exc:
        return exc
    return None


def output_failed(exc: OSError) -> int:
    """Standard output cannot be written: a reader that left is success, anything else (a full disk under
    `planner ... > file`) one line and exit 2. Either way stdout is pointed at /dev/null so the interpreter's final
    flush does not fail again."""
    silence_stdout()
    if isinstance(exc, BrokenPipeError):
        return EXIT_OK
    sys.stderr.write(f"planner: error: cannot write the output (standard output): {reason(exc)}\n")
    return EXIT_BAD_INPUT


WRITE_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO)


def system_refused(exc: OSError) -> int:
    """A file the command could not read or write, or another refusal of the system: one line naming the file (a
    failed write names none: it is the output) and why, exit 2."""
    if exc.filename:
        what = f"{exc.filename}: "
    elif exc.errno in WRITE_ERRORS:
        what = "cannot write the output: "
    else:
        what = f"{type(exc).__name__}: "
    sys.stderr.write(f"planner: error: {what}{reason(exc)}\n")
    return EXIT_BAD_INPUT


def reason(exc: OSError) -> str:
    """Why the system refused, in words ('No space left on device (disk full)')."""
    text = exc.strerror or str(exc) or type(exc).__name__
    return text + (" (disk full)" if exc.errno in (errno.ENOSPC, errno.EDQUOT) else "")


def silence_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null so the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # pytest's captured stdout has no real descriptor
        pass


if __name__ == "__main__":
    raise SystemExit(main())
