"""Bad input to every command, as a careful user (or a script gone wrong) gives it: a fixed corpus of about 400
command lines -- each option of each command given values it refuses (empty, negative, zero, NaN, infinite, huge,
text for a number, an id that does not exist, a path that is missing, a directory, binary or empty), options it does
not have, options where they do nothing, files that are not what they should be -- run through `main(argv)` in this
process, and a few as real processes.

Each must keep the README's promise: never a traceback or an internal error (exit 3); an exit code of 0, 1 or 2 (2
for every case marked bad); and when it is refused, one line ``planner: error: ...`` that names what is wrong
(argparse's errors add one line pointing at --help). No case may run long: the corpus holds no request that starts a
long search (validate and calibrate only with inputs they refuse at once, solves on small searches).
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from planner.cli.main import main
from planner.data import catalog_dir, reference_dir

ROOT = Path(__file__).resolve().parents[2]

NUMBERS = ["", "-1", "0", "nan", "inf", "-inf", "1e400", "abc", "1,2", "½", "0x10"]
IDS = ["", "nope", "DGX-H100 ", "../etc", "ü"]


def numbers(option: str, k: int = 4) -> list[str]:
    """``k`` of NUMBERS for ``option``, a different choice per option (every value is drawn over the corpus)."""
    start = sum(map(ord, option))
    return [NUMBERS[(start + 3 * j) % len(NUMBERS)] for j in range(k)]


def ids(option: str, k: int = 3) -> list[str]:
    """``k`` of IDS for ``option``, as ``numbers``."""
    start = sum(map(ord, option))
    return [IDS[(start + 2 * j) % len(IDS)] for j in range(k)]


@dataclass(frozen=True)
class Case:
    argv: tuple[str, ...]
    bad: bool  # refused: exit 2


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Input files of every kind a user may point a command at by mistake."""
    d = tmp_path_factory.mktemp("fuzz")
    out: dict[str, Path] = {}

    def write(name: str, data: str | bytes) -> None:
        p = d / name
        if isinstance(data, bytes):
            p.write_bytes(data)
        else:
            p.write_text(data)
        out[name] = p

    write("empty.yaml", "")
    write("comments.yaml", "# nothing but a comment\n")
    write("binary.yaml", b"\x00\x01\x02\xff" * 64)
    write("latin1.yaml", "mod\xe8le: x\n".encode("latin-1"))
    write("broken.yaml", "base: {model: [unclosed\n")
    write("list.yaml", "- 1\n- 2\n")
    write("scalar.yaml", "42\n")
    write("fleet_as_batch.yaml", "slots: 4\njobs: []\n")
    write("unknown_top.yaml", "bases: {model: resnet50}\n")
    write("grid_not_list.yaml", "base: {model: resnet50}\ngrid: {deadline_days: 3}\n")
    write("grid_empty.yaml", "base: {model: resnet50}\ngrid: {deadline_days: []}\n")
    write("empty_list.yaml", "scenarios: []\n")
    write("bad_field.yaml", "scenarios:\n  - {model: resnet50, deadline_dayz: 1}\n")
    write("bad_model.yaml", "scenarios:\n  - {model: nope, deadline_days: 1}\n")
    write("bad_value.yaml", "scenarios:\n  - {model: resnet50, deadline_days: -1}\n")
    write("bad_pue.yaml", "scenarios:\n  - {model: resnet50, deadline_days: 1, pue: 0.5}\n")
    grid = {k: list(range(1, 41)) for k in ("deadline_days", "budget_usd", "power_kw", "max_nodes", "pue", "gap")}
    write("huge.yaml", json.dumps({"base": {"model": "resnet50"}, "grid": grid}))
    write("dup.csv", "model,deadline_days,model\nresnet50,1,bert-large\n")
    write("short.csv", "model,deadline_days\nresnet50\n")
    write("long.csv", "model,deadline_days\nresnet50,1,2\n")
    write("header_only.csv", "model,deadline_days\n")
    write("quote.csv", 'model,deadline_days\n"resnet50,1\n')
    write("fleet_bad_slots.yaml", "slots: -3\nslot_hours: 24\njobs: [{id: a, model: resnet50, samples: 1e6}]\n")
    write("fleet_no_jobs.yaml", "slots: 4\nslot_hours: 24\njobs: []\n")
    write("fleet_bad_model.yaml", "slots: 4\nslot_hours: 24\njobs: [{id: a, model: nope, samples: 1e6}]\n")
    write("fleet_unknown.yaml", "slots: 4\nslot_hours: 24\nbogus: 1\njobs: [{id: a, model: resnet50}]\n")
    write("fleet_scenarios.yaml", "base: {model: resnet50}\ngrid: {deadline_days: [1, 2]}\n")
    write("a_file.txt", "not a directory\n")
    (d / "dir").mkdir()
    out["dir"] = d / "dir"
    (d / "emptydir").mkdir()
    out["emptydir"] = d / "emptydir"
    junk = d / "junk_results"
    junk.mkdir()
    (junk / "results.sqlite").write_text("not a database")
    out["junk_results"] = junk
    part = d / "part_reference"
    part.mkdir()
    for f in reference_dir().glob("*.md"):
        shutil.copy(f, part / f.name)
    out["part_reference"] = part
    cat = d / "catalog_copy"
    shutil.copytree(catalog_dir(), cat)
    out["catalog_copy"] = cat
    bad_cat = d / "bad_catalog"
    shutil.copytree(catalog_dir(), bad_cat)
    (bad_cat / "sites.yaml").write_text("- id: x\n  pue: -1\n")
    out["bad_catalog"] = bad_cat
    out["missing"] = d / "no-such-file.yaml"
    out["out"] = d / "results"
    return out


# values of the draw that are valid: ZeRO stage 0, a budget of 0 (infeasible: exit 1), an empty fabric (the default)
VALID = {("--zero", "0"), ("--budget-usd", "0"), ("--fabric", "")}


def case(*argv: str | Path, bad: bool = True) -> Case:
    text = tuple(str(a) for a in argv)
    return Case(text, bad and not any(pair in VALID for pair in itertools.pairwise(text)))


def corpus(f: dict[str, Path]) -> list[Case]:
    """The command lines, each marked bad (must exit 2) or not (0, 1 or 2), command by command."""
    return [
        *top_level_cases(),
        *catalog_cases(f),
        *evaluate_cases(),
        *plan_cases("solve"),
        *plan_cases("pareto"),
        *fleet_cases(f),
        *batch_cases(f),
        *batch_report_cases(f),
        *validate_cases(f),
    ]


def bad_paths(f: dict[str, Path]) -> list[str | Path]:
    return [f["missing"], f["dir"], f["binary.yaml"], f["empty.yaml"], f["a_file.txt"]]


def top_level_cases() -> list[Case]:
    cases = [case(*argv) for argv in ([], ["nope"], ["--nope"], ["-x"], ["catalog"], ["evaluate"], ["solve"],
                                      ["fleet"], ["batch"])]  # fmt: skip
    return [*cases, case("catalog", "--help", bad=False), case("--version", bad=False)]


def catalog_cases(f: dict[str, Path]) -> list[Case]:
    cases = [case("catalog", table) for table in ("GPUS", "gpu", "", "servers2", "../gpus")]
    for p in bad_paths(f):
        # an empty folder of workloads lists none (exit 0); every other path is refused
        cases += [case("catalog", "gpus", "--catalog", p), case("models", "--models", p, bad=p != f["dir"])]
    cases.append(case("catalog", "sites", "--catalog", f["bad_catalog"]))
    cases.append(case("catalog", "servers", "--json", "--wide", bad=False))
    cases.append(case("models", "--json", "extra"))
    return cases


def evaluate_cases() -> list[Case]:
    """Each option of evaluate with values it refuses, and the layouts it cannot run."""
    ev = ["evaluate", "--model", "resnet50", "--server", "dgx-a100-80gb", "--nodes", "2"]
    cases = []
    for opt in ("--model", "--server", "--fabric", "--site", "--framework", "--precision", "--recompute"):
        cases += [case(*with_value(ev, opt, v)) for v in ids(opt)]
    for opt in ("--nodes", "--power-cap", "--global-batch", "--life-years", "--tp", "--pp", "--vp", "--zero", "--cp",
                "--ep", "--etp", "--micro-batch", "--accumulation", "--samples", "--epochs"):  # fmt: skip
        cases += [case(*with_value(ev, opt, v)) for v in numbers(opt)]
    for extra in (["--tokens", "1e12"], ["--sequence-parallel"], ["--vp", "2"], ["--tp", "3"],
                  ["--rent", "--power-cap", "0.5"], ["--samples", "1e9", "--epochs", "3"]):  # fmt: skip
        cases.append(case(*ev, *extra))
    return [*cases, case(*ev, bad=False), case(*ev, "--json", "--no-failures", bad=False)]


def plan_cases(command: str) -> list[Case]:
    """Each option of solve or pareto with values it refuses, on a small search."""
    base = [command, "--model", "resnet50", "--deadline-days", "1", "--max-nodes", "16", "--time-limit", "20"]
    base += ["--points", "2"] if command == "pareto" else ["--alternatives", "1"]
    numeric = ["--deadline-days", "--budget-usd", "--power-kw", "--global-batch", "--max-nodes", "--max-rack-units",
               "--life-years", "--time-limit", "--gap", "--threads", "--samples"]  # fmt: skip
    numeric += ["--points"] if command == "pareto" else ["--alternatives"]
    cases = [case(*with_value(base, opt, v)) for opt in numeric for v in numbers(command + opt)]
    named = ("--model", "--site", "--gpus", "--servers", "--fabrics", "--framework", "--precision")
    cases += [case(*with_value(base, opt, v)) for opt in named for v in ids(command + opt)]
    cases += [case(*base, "--power-caps", v) for v in ("0", "1.5", "0.5,abc", ",", "nan")]
    owned = ("dgx-h100", "dgx-h100:-1", "dgx-h100:x", "nope:4", "dgx-h100:4:nope", "dgx-h100:4:ndr400:-1", ":")
    cases += [case(*base, "--owned", v) for v in owned]
    for extra in (["--budget-kind", "monthly"], ["--rent", "--buy"], ["--servers", "dgx-h100", "--gpus", "A100"],
                  ["--precision", "fp8", "--gpus", "A100"], ["--tokens", "1e12"]):  # fmt: skip
        cases.append(case(*base, *extra))
    cases.append(case(*base, "--power-kw", "0.001", bad=False))  # infeasible: exit 1 with the relaxation
    cases.append(case(*base, bad=False))
    if command == "pareto":
        cases += [case(*base, "--x", "cost", "--y", "cost"), case(*base, "--x", "speed")]
    return cases


def fleet_cases(f: dict[str, Path]) -> list[Case]:
    files = [
        "broken.yaml",
        "list.yaml",
        "scalar.yaml",
        "fleet_bad_slots.yaml",
        "fleet_no_jobs.yaml",
        "fleet_bad_model.yaml",
        "fleet_unknown.yaml",
        "fleet_scenarios.yaml",
        "comments.yaml",
        "latin1.yaml",
    ]
    cases = [case("fleet", p) for p in [*bad_paths(f), *(f[n] for n in files)]]  # fmt: skip
    for opt in ("--time-limit", "--gap"):
        cases += [case("fleet", "examples/fleet.yaml", opt, v) for v in numbers(opt, 6)]
    cases.append(case("fleet", "examples/fleet.yaml", "--csv", f["a_file.txt"]))
    cases.append(case("fleet", "examples/fleet.yaml", "examples/portfolio.yaml"))
    return cases


def batch_cases(f: dict[str, Path]) -> list[Case]:
    """Scenario files that are not, scenarios every one of which is bad, and options a run refuses."""
    out = f["out"]
    files = ["empty.yaml", "comments.yaml", "binary.yaml", "latin1.yaml", "broken.yaml", "list.yaml", "scalar.yaml",
             "fleet_as_batch.yaml", "unknown_top.yaml", "grid_not_list.yaml", "grid_empty.yaml", "empty_list.yaml",
             "huge.yaml", "dup.csv", "short.csv", "long.csv", "quote.csv"]  # fmt: skip
    cases = [case("batch", f[n], "--out", out / n, "--no-progress") for n in files]
    every_bad = ("bad_field.yaml", "bad_model.yaml", "bad_value.yaml", "bad_pue.yaml", "header_only.csv")
    cases += [case("batch", f[n], "--out", out / n, "--no-progress", "--workers", "1") for n in every_bad]
    cases += [case("batch", p, "--out", out / "x", "--no-progress") for p in (f["missing"], f["dir"], "/dev/null")]
    spec = "examples/procurement.yaml"
    cases += [
        case("batch", spec),  # no --out
        case("batch", spec, "--out", f["a_file.txt"]),
        case("batch", spec, "--out", f["junk_results"], "--no-progress"),
        case("batch", spec, spec, "--out", out / "two"),
        case("batch", spec, "--out", out / "r", "--ray-address", "10.0.0.1:6379"),
        case("batch", spec, "--out", out / "r", "--engine", "spark"),
        case("batch", spec, "--out", out / "c", "--catalog", f["bad_catalog"], "--no-progress"),
        case("batch", spec, "--out", out / "c", "--catalog", f["missing"], "--no-progress"),
    ]
    for opt in ("--workers", "--max-attempts"):
        cases += [case("batch", spec, "--out", out / "w", opt, v) for v in numbers(opt, 6)]
    return cases


def batch_report_cases(f: dict[str, Path]) -> list[Case]:
    cases = [case("batch", *argv) for argv in (["report"], ["report", f["missing"]], ["report", f["a_file.txt"]],
                                               ["report", f["emptydir"]], ["report", f["junk_results"]],
                                               ["report", f["dir"], f["dir"]], ["report", f["dir"], "--out", "x"],
                                               ["report", "--json"])]  # fmt: skip
    return [*cases, case("batch", "report", "--help", bad=False)]


def validate_cases(f: dict[str, Path]) -> list[Case]:
    """validate and calibrate, with inputs they refuse before any work only."""
    v_out = f["out"] / "VALIDATION.md"
    cases = []
    for p in (f["missing"], f["a_file.txt"], f["emptydir"], f["part_reference"]):
        cases.append(case("validate", "--reference", p, "--out", v_out))
        cases.append(case("calibrate", "--reference", p, "--catalog", f["catalog_copy"]))
    return [
        *cases,
        case("validate", "--out", f["dir"]),
        case("validate", "--out", f["a_file.txt"] / Path("x.md")),
        case("validate", "--catalog", f["missing"], "--out", v_out),
        case("calibrate", "--catalog", f["missing"]),
        case("calibrate", "--catalog", f["a_file.txt"]),
        case("validate", "--json", "--bogus"),
        case("calibrate", "extra"),
    ]


def with_value(argv: list[str], option: str, value: str) -> list[str]:
    """``argv`` with ``option`` set to ``value`` (replaced where it is given, else added)."""
    if option not in argv:
        return [*argv, option, value]
    i = argv.index(option)
    return [*argv[: i + 1], value, *argv[i + 2 :]]


def outcome(argv: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """(exit code, stderr) of `planner ARGV` run in this process."""
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, capsys.readouterr().err


def problems(case: Case, code: int, err: str) -> Iterator[str]:
    """How a case breaks the README's promise (nothing when it keeps it)."""
    if "Traceback" in err or "internal error" in err or code == 3:
        yield "a traceback or an internal error"
    if code not in (0, 1, 2):
        yield f"exit {code}, outside 0/1/2"
    if case.bad and code != 2:
        yield f"exit {code} for bad input"
    if code == 2:
        said = [line for line in err.splitlines() if line.startswith("planner: error:")]
        rest = [
            line
            for line in err.splitlines()
            if not line.startswith(("planner: error:", "planner: note:", "planner: predicting", "planner: refitting"))
            and not line.startswith("  (all options: `planner")
        ]
        if len(said) != 1 or len(said[0]) <= len("planner: error: ") + 5:
            yield "not one line 'planner: error: ...' naming the problem"
        if rest:
            yield f"more than the one line: {rest[:2]}"


def test_the_corpus_is_about_four_hundred_command_lines_over_every_command(files: dict[str, Path]) -> None:
    cases = corpus(files)
    commands = {c.argv[0] for c in cases if c.argv}
    assert 350 <= len(cases) <= 500, len(cases)
    assert {"catalog", "models", "evaluate", "solve", "pareto", "fleet", "batch", "validate", "calibrate"} <= commands
    assert len({c.argv for c in cases}) == len(cases)  # no case twice


def test_no_bad_input_to_any_command_is_a_traceback_or_more_than_one_line(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every case of the corpus in this process (about a minute in all): no traceback, no exit 3, exit 2 for each
    bad case, one line naming the problem; none runs more than 20 s."""
    monkeypatch.chdir(ROOT)  # examples/ as the README runs them
    monkeypatch.delenv("PLANNER_DEBUG", raising=False)
    monkeypatch.delenv("COLUMNS", raising=False)
    broken: list[str] = []
    slow: list[str] = []
    for case in corpus(files):
        t0 = time.perf_counter()
        code, err = outcome(case.argv, capsys)
        if time.perf_counter() - t0 > 20:
            slow.append(" ".join(case.argv))
        broken += [f"planner {' '.join(case.argv)!r}: {p}\n    {err[:300]!r}" for p in problems(case, code, err)]
    assert not broken, f"{len(broken)} cases break the promise:\n" + "\n".join(broken[:40])
    assert not slow, slow


@pytest.mark.parametrize(
    "argv",
    [
        ["solve", "--model", "resnet50", "--deadline-days", "nan"],
        ["evaluate", "--model", "resnet50", "--server", "dgx-h100", "--nodes", "2", "--sequence-parallel"],
        ["batch", "report", "/no/such/results"],
        ["nope"],
    ],
)
def test_bad_input_as_a_real_process_is_exit_2_and_one_line(argv: list[str]) -> None:
    """A few cases as the user runs them (a new interpreter, so the interpreter's own exit is checked too)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PLANNER_DEBUG", None)
    p = subprocess.run([sys.executable, "-m", "planner.cli", *argv], capture_output=True, text=True, env=env,
                       timeout=120)  # fmt: skip
    assert p.returncode == 2 and not list(problems(Case(tuple(argv), True), p.returncode, p.stderr)), p.stderr
