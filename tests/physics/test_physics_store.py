"""The on-disk store of physics chunks (planner/physics/store.py): a fresh process re-prices what an earlier one
computed, and never reads back anything computed for another catalog, request or planner version."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from planner.data import Catalog
from planner.physics import store as physics_store
from planner.plan import PlanRequest, candidates, solve

ROOT = Path(__file__).resolve().parents[2]
REQ = PlanRequest(model="llama3-8b", tokens=1e11, deadline_days=30, gpus=["H100"], max_nodes=16, alternatives=0)


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("PLANNER_CACHE_DIR", str(tmp_path / "store"))
    candidates.PHYSICS.clear()
    yield tmp_path / "store"
    candidates.PHYSICS.clear()


def model_calls() -> tuple[list[int], Any]:
    """(a list that grows by one per call, candidates.evaluate_space wrapped to count its calls)."""
    calls: list[int] = []
    real = candidates.evaluate_space

    def counting(*a: object, **k: object) -> object:
        calls.append(1)
        return real(*a, **k)  # type: ignore[arg-type]

    return calls, counting


def _no_model(*_: object, **__: object) -> None:
    raise AssertionError("the model was evaluated: the store was not read")


def test_a_new_process_reprices_stored_chunks_without_evaluating_the_model(
    store: Path, shipped: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = solve(REQ, shipped)
    files = sorted(store.glob("physics-*.pkl"))
    assert first.plan is not None and files
    candidates.PHYSICS.clear()  # as a fresh process: nothing in memory
    monkeypatch.setattr(candidates, "evaluate_space", _no_model)
    again = solve(REQ, shipped)
    assert again.plan is not None and again.plan.model_dump() == first.plan.model_dump()
    assert again.objective_value == first.objective_value


def test_another_catalog_request_or_code_version_is_never_read_back(
    store: Path, shipped: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    solve(REQ, shipped)
    n = len(list(store.glob("physics-*.pkl")))
    candidates.PHYSICS.clear()
    calls, counting = model_calls()
    monkeypatch.setattr(candidates, "evaluate_space", counting)
    gpu = shipped.gpu("h100-sxm").model_copy(update={"memory_bandwidth_tbps": 3.0})  # another physics
    solve(REQ, shipped.replace(gpus={**shipped.gpus, "h100-sxm": gpu}))
    assert calls, "a catalog of other physics read the stored chunks"
    calls.clear()
    solve(REQ.model_copy(update={"tokens": 2e11}), shipped)  # another request
    assert calls
    calls.clear()
    monkeypatch.setattr(physics_store, "_CODE", ["another planner version"])
    candidates.PHYSICS.clear()
    solve(REQ, shipped)
    assert calls and len(list(store.glob("physics-*.pkl"))) > n


def test_an_unreadable_file_is_recomputed_and_an_unwritable_store_ignored(
    store: Path, shipped: Catalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = solve(REQ, shipped)
    for f in store.glob("physics-*.pkl"):
        f.write_bytes(f.read_bytes()[:100])  # truncated, as by a process killed mid-write without the rename
    candidates.PHYSICS.clear()
    again = solve(REQ, shipped)
    assert again.plan is not None and first.plan is not None and again.plan.nodes == first.plan.nodes
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("PLANNER_CACHE_DIR", str(blocker / "store"))
    candidates.PHYSICS.clear()
    assert solve(REQ, shipped).plan is not None  # nothing stored, nothing lost
    monkeypatch.setenv("PLANNER_CACHE_DIR", "off")
    assert physics_store.directory() is None


def test_two_real_processes_print_the_same_plan_and_the_second_reads_the_store(tmp_path: Path) -> None:
    import pickle

    env = {**os.environ, "PYTHONPATH": str(ROOT), "PLANNER_CACHE_DIR": str(tmp_path)}
    cmd = [sys.executable, "-m", "planner.cli", "solve", "--model", "llama3-8b", "--tokens", "1e11",
           "--deadline-days", "30", "--gpus", "H100", "--max-nodes", "16", "--alternatives", "0"]  # fmt: skip
    first = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    files = sorted(tmp_path.glob("physics-*.pkl"))
    assert first.returncode == 0 and files
    plan = [line for line in first.stdout.splitlines() if "solver:" not in line]
    second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert second.returncode == 0 and [line for line in second.stdout.splitlines() if "solver:" not in line] == plan
    for f in files:  # stored chunks emptied: a process that reads them has no configuration to plan with
        frame = pickle.loads(f.read_bytes())
        f.write_bytes(pickle.dumps(frame.iloc[0:0]))
    emptied = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert emptied.returncode == 1, emptied.stdout + emptied.stderr  # it read the store, not the model
    for f in files:
        f.unlink()
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and [line for line in again.stdout.splitlines() if "solver:" not in line] == plan


def test_a_store_it_may_not_read_is_no_store(store: Path, shipped: Catalog) -> None:
    """A store directory the user cannot read (or list) reads as no store: the solve recomputes and plans the
    same nodes as with the store readable, with no PermissionError out of it."""
    first = solve(REQ, shipped)
    candidates.PHYSICS.clear()
    store.chmod(0)
    try:
        if os.access(store, os.R_OK):  # root reads anything: nothing to check
            pytest.skip("running as a user every directory is readable to")
        again = solve(REQ, shipped)
    finally:
        store.chmod(0o700)
    assert again.plan is not None and first.plan is not None and again.plan.nodes == first.plan.nodes


def test_the_store_keeps_within_its_size_the_most_recently_used(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pandas as pd

    frame = pd.DataFrame({"x": range(100)})
    physics_store.save(("size",), frame)
    size = physics_store._path(("size",)).stat().st_size  # type: ignore[union-attr]
    physics_store._path(("size",)).unlink()  # type: ignore[union-attr]
    monkeypatch.setattr(physics_store, "MAX_BYTES", int(3.5 * size))  # room for three chunks
    for i in range(3):
        physics_store.save(("chunk", i), frame)
        os.utime(physics_store._path(("chunk", i)), (1000 + i, 1000 + i))  # type: ignore[arg-type]
    assert physics_store.load(("chunk", 0)) is not None  # read: now the most recently used
    physics_store.save(("chunk", 3), frame)  # over the limit: the least recently used (1) goes
    physics_store.save(("chunk", 4), frame)  # then 2
    kept = {i for i in range(5) if physics_store._path(("chunk", i)).is_file()}  # type: ignore[union-attr]
    assert kept == {0, 3, 4}
    assert sum(p.stat().st_size for p in store.glob("physics-*.pkl")) <= 3.5 * size


def test_the_chunks_of_a_request_the_store_cannot_keep_together_are_not_written(
    store: Path, shipped: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Written, the request's later chunks would push out its first ones, which a rerun reads first: none is written,
    and the request plans as with the store off; a store large enough for them all gets them all."""
    wide = REQ.model_copy(update={"max_nodes": 1024, "gpus": None})
    chunks = list(candidates.physics_chunks(shipped, wide, 1, 1024))
    assert len(chunks) > 1
    total = sum(int(c.memory_usage(index=False).sum()) for c in chunks)
    for f in store.glob("physics-*.pkl"):
        f.unlink()
    candidates.PHYSICS.clear()
    monkeypatch.setattr(physics_store, "MAX_BYTES", total // 2)
    small = solve(wide, shipped)
    assert small.plan is not None and not list(store.glob("physics-*.pkl"))
    candidates.PHYSICS.clear()
    monkeypatch.setattr(physics_store, "MAX_BYTES", 4 * total)
    large = solve(wide, shipped)
    assert len(list(store.glob("physics-*.pkl"))) >= len(chunks)
    assert large.plan is not None and large.plan.model_dump() == small.plan.model_dump()


def test_files_another_user_owns_or_that_cannot_be_read_are_not_read(
    store: Path, shipped: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pickle is code: a file another user put in the store is never loaded (here: this process pretends to be
    another user), and a PermissionError reading the store reads as no store (the suite may run as root, where
    chmod cannot deny anything)."""
    solve(REQ, shipped)
    key_files = list(store.glob("physics-*.pkl"))
    assert key_files
    candidates.PHYSICS.clear()
    calls, counting = model_calls()
    monkeypatch.setattr(candidates, "evaluate_space", counting)
    monkeypatch.setattr(physics_store.os, "getuid", lambda: os.getuid() + 1, raising=False)
    assert solve(REQ, shipped).plan is not None and calls  # not ours: recomputed
    monkeypatch.undo()

    def denied(path: Path) -> bool:
        raise PermissionError(f"[Errno 13] Permission denied: '{path}'")

    monkeypatch.setattr(physics_store, "_ours", denied)
    monkeypatch.setattr(candidates, "evaluate_space", counting)
    calls.clear()
    candidates.PHYSICS.clear()
    assert solve(REQ, shipped).plan is not None and calls  # recomputed, no PermissionError out of solve
    assert all(f.is_file() for f in key_files)  # and nothing of the store removed


@pytest.mark.parametrize("kill_after_s", [0.8, 1.6])
def test_a_process_killed_while_it_writes_the_store_loses_nothing(tmp_path: Path, kill_after_s: float) -> None:
    """SIGKILL a `planner solve` mid-run (while it evaluates and writes chunks): the next process plans exactly as
    one without any store does -- a chunk is either whole (renamed into place) or absent, never half-read."""
    import signal
    import time

    base = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "planner.cli", "solve", "--model", "llama3-8b", "--tokens", "1e12",
           "--deadline-days", "30", "--alternatives", "0"]  # fmt: skip
    clean = subprocess.run(cmd, env={**base, "PLANNER_CACHE_DIR": "off"}, capture_output=True, text=True, timeout=120)
    env = {**base, "PLANNER_CACHE_DIR": str(tmp_path)}
    victim = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(kill_after_s)
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=30)
    after = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)  # from the store, now whole

    def plan(p: subprocess.CompletedProcess[str]) -> list[str]:
        return [line for line in p.stdout.splitlines() if "solver:" not in line]

    assert clean.returncode == after.returncode == again.returncode == 0, after.stderr
    assert plan(after) == plan(clean) and plan(again) == plan(clean)
    assert list(tmp_path.glob("physics-*.pkl"))
