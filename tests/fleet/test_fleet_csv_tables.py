"""`planner fleet FILE --csv DIR`: DIR is checked before the solve, the plan is printed before the tables are
written, each table is replaced atomically, the tables read back to the plan's values (job ids such as '007' and
'1e3' too), and the slots text reads back or says what is wrong with it."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from planner.cli.main import main
from planner.data import Catalog
from planner.formatting import FLEET_CSV_TEXT_COLUMNS, parse_slot_ranges, slot_ranges

# two L40S jobs over 4 daily slots, ids that pandas reads as numbers unless told not to: '007' -> 7, '1e3' -> 1000.0;
# 007 may run in any slot, 1e3 in slots 1-2, so some slot is idle (an empty `jobs` cell in schedule.csv)
TINY = (
    "slots: 4\nslot_hours: 24\ngpus: [L40S]\nmax_nodes: 4\njobs:\n"
    "  - {id: '007', model: bert-large, release_slot: 0, due_slot: 3}\n"
    "  - {id: '1e3', model: resnet50, epochs: 90, release_slot: 1, due_slot: 2}\n"
)
TABLES = ("purchases.csv", "jobs.csv", "schedule.csv")
RECIPE = {"keep_default_na": False, "dtype": dict.fromkeys(FLEET_CSV_TEXT_COLUMNS, str)}  # write_fleet_csv's docstring


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    f = tmp_path / "tiny.yaml"
    f.write_text(TINY)
    return f


def planner_process(*args: str, prelude: str = "") -> subprocess.CompletedProcess[str]:
    """`planner ARGS` in a process of its own (after ``prelude``: the fault it injects into itself)."""
    code = f"import sys\n{prelude}\nfrom planner.cli.main import main\nraise SystemExit(main(sys.argv[1:]))\n"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120)


def old_tables(out: Path) -> dict[str, bytes]:
    """An earlier run's tables in ``out`` (what an interrupted or failed write must leave as they were)."""
    out.mkdir(parents=True, exist_ok=True)
    for name in TABLES:
        (out / name).write_text(f"earlier,{name}\n1,2\n")
    return {name: (out / name).read_bytes() for name in TABLES}


def files_in(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in out.iterdir()}


# ------------------------------------------------------------------------------------------- DIR before the solve
def test_a_directory_the_tables_cannot_go_to_is_bad_input_before_the_solve(
    tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An existing file, a path under a file, a directory that cannot be written, an empty name or a table name
    taken by a directory: each is exit 2 at once, saying what to give -- the solve (up to the time limit) never
    starts, and `--csv ''` writes nothing into the working directory."""
    import planner.fleet

    def no_solve(*args: object, **kwargs: object) -> None:
        raise AssertionError("the fleet was solved before --csv DIR was checked")

    monkeypatch.setattr(planner.fleet, "fleet", no_solve)
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    a_file = tmp_path / "afile"
    a_file.write_text("x\n")
    taken = tmp_path / "taken"
    (taken / "jobs.csv").mkdir(parents=True)
    bad = {
        "": "needs a directory name",
        "  ": "needs a directory name",
        str(a_file): "is an existing file; give a directory",
        str(a_file / "sub"): "cannot write the plan's tables there (Not a directory); give a directory you can",
        str(taken): "jobs.csv in it is a directory",
        "/proc": "cannot write the plan's tables there",  # exists, but no file can be made in it (root neither)
        "/proc/planner/csv": "cannot write the plan's tables there",  # cannot be made
    }
    for csv_dir, said in bad.items():
        assert main(["fleet", str(tiny), "--csv", csv_dir]) == 2, csv_dir
        out, err = capsys.readouterr()
        assert out == "" and err.startswith(f"planner: error: --csv {csv_dir}".rstrip()) and said in err, err
        assert "Planning the fleet" not in err and "Traceback" not in err
    assert list(work.iterdir()) == []  # `--csv ''` wrote nothing into the working directory
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    if not os.access(locked, os.W_OK):  # root may write anywhere: /proc above is the unwritable directory then
        assert main(["fleet", str(tiny), "--csv", str(locked)]) == 2
        assert "cannot write the plan's tables there (Permission denied)" in capsys.readouterr().err
    # a real process: exit 2 at once, nothing on stdout, and the probe's temp file is not left in a directory it made
    proc = planner_process("fleet", str(tiny), "--csv", str(a_file / "sub"))
    assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr, proc.stderr
    assert "Planning the fleet" not in proc.stderr
    fresh = tmp_path / "made" / "here"
    monkeypatch.undo()
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["fleet", str(tiny), "--csv", str(fresh), "--time-limit", "20"]) == 0
    assert sorted(os.listdir(fresh)) == sorted(TABLES)  # made with its parents; no probe or temp file left


# ------------------------------------------------------------------------------------------- plan first, then atomic
HALF_THEN_CTRL_C = """
import os, signal, time
import pandas as pd
real_to_csv = pd.DataFrame.to_csv

def half_then_ctrl_c(self, path=None, *args, **kwargs):  # Ctrl-C while jobs.csv is half written
    if path is None or "jobs.csv" not in str(path):
        return real_to_csv(self, path, *args, **kwargs)
    text = real_to_csv(self, None, *args, **kwargs)
    with open(path, "w") as fh:
        fh.write(text[: len(text) // 2])
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(30)

pd.DataFrame.to_csv = half_then_ctrl_c
"""


def test_an_interrupted_write_leaves_the_earlier_tables_whole_and_the_plan_printed(tiny: Path, tmp_path: Path) -> None:
    """A real process, interrupted (SIGINT) half-way through jobs.csv: exit 130, the plan is on stdout (printed
    before the tables), the earlier run's three tables are as they were -- no half table under a final name -- and
    no temp file is left."""
    out = tmp_path / "plan"
    before = old_tables(out)
    proc = planner_process(
        "fleet", str(tiny), "--json", "--csv", str(out), "--time-limit", "20", prelude=HALF_THEN_CTRL_C
    )
    assert proc.returncode == 130 and "planner: interrupted" in proc.stderr, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["objective_value"] is not None  # printed before the tables were written
    assert files_in(out) == before


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs holding an empty directory `new` and a directory `earlier` with an earlier run's tables, the
    rest of the space filled: an empty file can still be made (the probe passes), a byte written to a new file
    cannot (ENOSPC)."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        (mnt / "new").mkdir()
        old_tables(mnt / "earlier")
        with contextlib.suppress(OSError), open(mnt / "filler", "wb") as fh:
            while True:
                fh.write(b"x" * 1024)
                fh.flush()
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_a_full_disk_keeps_the_plan_and_leaves_no_partial_table(tiny: Path, full_disk: Path) -> None:
    """A real full disk: the plan is printed (JSON or tables) before the tables are written, exit 2 says what
    happened, and no table or temp file (not even an empty purchases.csv) is left; where an earlier run's tables
    are, they stay whole (each new table is a new file, which needs space of its own)."""
    for args in (["--json"], []):  # the plan as JSON, or as tables
        for where in ("new", "earlier"):
            before = files_in(full_disk / where)
            proc = planner_process("fleet", str(tiny), *args, "--csv", str(full_disk / where), "--time-limit", "20")
            assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
            if args:
                assert json.loads(proc.stdout)["objective_value"] is not None
            else:
                assert proc.stdout.startswith(("Optimal fleet", "Best fleet")) and "\nJobs:\n" in proc.stdout
            assert files_in(full_disk / where) == before
            assert "(No space left on device); the plan was printed, no table replaced" in proc.stderr


# ------------------------------------------------------------------------------------------- reading the tables back
def text_columns(frame: pd.DataFrame) -> set[str]:
    types = pd.api.types
    return {c for c in frame if not (types.is_numeric_dtype(frame[c]) or types.is_bool_dtype(frame[c]))}


def test_every_table_reads_back_to_the_plan_numeric_looking_job_ids_too(tiny: Path, tmp_path: Path) -> None:
    """Read as write_fleet_csv says (the id and text columns as text, FLEET_CSV_TEXT_COLUMNS), each table holds the
    values of the plan from the same run's --json; that list names every text column of the tables and no
    number's. Read with dtype={"slots": str} alone, job '007' would come back as 7 and '1e3' as 1000.0."""
    from planner.fleet import FleetPlan

    out = tmp_path / "plan"
    with contextlib.redirect_stdout(io.StringIO()) as stdout:
        assert main(["fleet", str(tiny), "--json", "--csv", str(out), "--time-limit", "20"]) == 0
    plan = FleetPlan.model_validate(json.loads(stdout.getvalue()))
    frames = {"purchases": plan.purchase_frame(), "jobs": plan.assignment_frame(), "schedule": plan.schedule_frame()}
    assert sorted(frames["jobs"]["job"]) == ["007", "1e3"] and "" in set(frames["schedule"]["jobs"])
    for name, frame in frames.items():
        back = pd.read_csv(out / f"{name}.csv", **RECIPE)
        pd.testing.assert_frame_equal(back, frame, check_dtype=False)
        assert text_columns(frame) <= set(FLEET_CSV_TEXT_COLUMNS)
        assert not set(FLEET_CSV_TEXT_COLUMNS) & (set(frame) - text_columns(frame))
    assert sorted(pd.read_csv(out / "jobs.csv", dtype={"slots": str})["job"]) == [7.0, 1000.0]  # slots alone: no
    plain = pd.read_csv(out / "jobs.csv")  # slots of one slot each come back as NumPy integers: still read back
    assert [parse_slot_ranges(s) for s in plain["slots"]] == [a["slots"] for a in plan.assignments]


# ------------------------------------------------------------------------------------------- the slots text
def test_slot_ranges_read_back_from_numbers_and_say_what_is_wrong_with_bad_text() -> None:
    """A NumPy integer (a read_csv column of single slots) reads back as its slot; descending runs ('3-1'), a
    negative slot, an empty part ('3,,4') and slots out of order are errors that say what is wrong with them."""
    assert [parse_slot_ranges(v) for v in (np.int64(7), np.int32(0), 7, 7.0, np.float64(12.0))] == [
        [7],
        [0],
        [7],
        [7],
        [12],
    ]
    assert [parse_slot_ranges(v) for v in ("", " ", None, float("nan"))] == [[], [], [], []]
    assert parse_slot_ranges(" 3 - 5 , 9") == [3, 4, 5, 9] and parse_slot_ranges(slot_ranges([0, 1, 2, 4])) == [
        0,
        1,
        2,
        4,
    ]
    bad = {
        "3-1": "'3-1' is descending",
        "-3": "'-3' is not a slot or a run",
        "3,,4": "an empty part between commas",
        "a": "'a' is not a slot or a run",
        "5,3": "'3' does not come after slot 5",
        "3-5,4": "'4' does not come after slot 5",
    }
    for text, said in bad.items():
        with pytest.raises(ValueError, match=rf"^slots '{text}': {said}; expected '3-9,12' \(slots 3 to 9 and 12"):
            parse_slot_ranges(text)
    for number in (7.5, -2, np.int64(-1), float("inf")):
        with pytest.raises(ValueError, match=r"a slot is a whole number.*expected '3-9,12'"):
            parse_slot_ranges(number)
    with pytest.raises(ValueError, match=r"slots True \(bool\): expected text such as '3-9,12'"):
        parse_slot_ranges(True)


def test_the_tables_are_written_when_the_reader_of_the_plan_leaves_early(tiny: Path, tmp_path: Path) -> None:
    """`planner fleet FILE --csv DIR | head -1`: the plan is printed before the tables are written, and the broken
    pipe of a reader that leaves after one line ends the command (exit 0, as for any `| head`) only after it has
    written them: the tables asked for are never silently missing."""
    out = tmp_path / "tables"
    proc = subprocess.Popen(
        [sys.executable, "-m", "planner.cli", "fleet", str(tiny), "--csv", str(out), "--time-limit", "30"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # the reader leaves after one line, as `head -1` does
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 0, err
    assert first.strip() and "Traceback" not in err
    assert sorted(p.name for p in out.iterdir()) == sorted(TABLES)


def test_a_killed_run_s_temp_files_are_removed_by_the_next_write(tmp_path: Path) -> None:
    """A run killed with SIGKILL between writing its tables and renaming them cannot remove its temp files (its
    earlier tables stay whole); the next write into the directory removes those of
    processes that are gone and leaves a live writer's alone."""
    from planner.cli.fleet import write_fleet_csv
    from tests.api.test_fleet_summary_and_frames import a_fleet_plan

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(gone.stdout)
    out = tmp_path / "tables"
    out.mkdir()
    stale = [out / f".{name}.{dead_pid}.tmp" for name in TABLES]
    live = out / f".jobs.csv.{os.getppid()}.tmp"
    for f in [*stale, live]:
        f.write_text("half a table")
    write_fleet_csv(a_fleet_plan(), out)
    assert not any(f.exists() for f in stale) and live.exists()
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == sorted(TABLES)


def test_a_solved_fleets_assignment_table_round_trips_through_the_csv_writer(toy: Catalog, tmp_path: Path) -> None:
    """fleet() on the toy world, written by the command line's CSV writer (write_fleet_csv) and read back with the
    recipe its docstring gives: jobs.csv is the plan's assignment frame, cell for cell -- the ids '007' and '1e3' as
    text, a job's slots as runs ('1-2') that parse back into the plan's list. The plan's status is a PlanStatus,
    the same type as a single-job plan's, and the plan reads back from its JSON equal."""
    from planner.cli.fleet import write_fleet_csv
    from planner.fleet import FleetPlan, FleetRequest, fleet
    from planner.solver import PlanStatus

    # 6 h slots on one toy node: 1.5e6 samples take 8.75 h (two slots), 1e6 samples 5.83 h (one slot)
    req = FleetRequest.model_validate(
        {
            "slots": 3,
            "slot_hours": 6.0,
            "site": "clean",
            "power_caps": [1.0],
            "node_counts": [1],
            "servers": ["toy-a"],
            "jobs": [
                {"id": "007", "model": "toy-model", "samples": 1.5e6, "due_slot": 2},
                {"id": "1e3", "model": "toy-model", "due_slot": 2},
            ],
        }
    )
    plan = fleet(req, toy)
    assert plan.status is PlanStatus.OPTIMAL and plan.status.has_plan
    assert FleetPlan.model_validate_json(plan.model_dump_json()) == plan
    write_fleet_csv(plan, tmp_path)
    back = pd.read_csv(tmp_path / "jobs.csv", **RECIPE)
    frame = plan.assignment_frame()
    pd.testing.assert_frame_equal(back, frame, check_dtype=False)
    assert sorted(back["job"]) == ["007", "1e3"] and any("-" in text for text in back["slots"])  # a run: '0-1'
    assert [parse_slot_ranges(s) for s in back["slots"]] == [a["slots"] for a in plan.assignments]
    assert sorted(len(a["slots"]) for a in plan.assignments) == [1, 2]
