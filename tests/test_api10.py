"""Fleet plan summary and CSV-friendly frames, the batch export's temp file on interruption, whole-number float
batches in Work, and the note on FP4 for workloads without an FP4 training recipe (helper api10)."""

from __future__ import annotations

import math

import pytest

from planner import PlannerInputError, Work


def test_work_takes_a_float_global_batch_that_is_a_whole_number() -> None:
    """Was: Work(global_batch=2048.0) refused as 'not a whole number'; a fractional one is still refused."""
    w = Work(global_batch=2048.0)
    assert w.global_batch == 2048 and isinstance(w.global_batch, int)
    for bad in (2048.5, math.inf, math.nan, 0.0):
        with pytest.raises(PlannerInputError, match=r"Work.global_batch must be a whole number of samples >= 1"):
            Work(global_batch=bad)


SECOND_CTRL_C = """
import os, signal, sys, time
import pandas as pd
import importlib
batch = importlib.import_module("planner.batch")  # (planner.batch is also the function)

def first_ctrl_c(*args, **kwargs):  # the first Ctrl-C arrives while the scenarios run
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(30)

def half_written_then_ctrl_c(self, path, *args, **kwargs):  # the second one while results.csv is written
    with open(path, "w") as fh:
        fh.write("id,status\\n")
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(30)

batch.run_local = first_ctrl_c
pd.DataFrame.to_csv = half_written_then_ctrl_c
batch.run_batch([{"model": "resnet50", "deadline_days": 1}], sys.argv[1], workers=1, progress=False)
"""


def test_a_second_ctrl_c_during_the_export_leaves_no_temp_file(tmp_path) -> None:
    """Was: a second SIGINT while the interrupted batch wrote results.csv left `.results.csv.tmp` beside the
    results (the export removed its temp file on OSError only). A real process, signalled twice."""
    import subprocess
    import sys

    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-c", SECOND_CTRL_C, str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "KeyboardInterrupt" in proc.stderr, proc.stderr[-2000:]
    assert "results.sqlite" in {p.name for p in out.iterdir()}  # the run had started and stored its scenarios
    assert [p.name for p in out.iterdir() if p.name.endswith(".tmp")] == []
    assert not (out / "results.csv").exists()  # never a half-written results.csv under the final name
