"""Fault injection with real processes: every fault is followed by a resume that must end with every scenario
exactly once and equal to an uninterrupted run, and no process of the batch may be left behind.

Faults: SIGKILL of a worker; SIGKILL and SIGTERM of the main process and SIGINT to its process group (Ctrl-C);
a store left mid-transaction by a killed writer; a store truncated or overwritten under a running batch; a second run
with another catalog into the same directory; a full disk and a read-only directory (tmpfs mounts, skipped where
mounting is not allowed); a killed Ray actor followed by a killed main process; a Ray node killed (its raylet and
every process of it) under a running batch, with another node left to finish on and with none.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from planner.batch import STORE, Store, expand, read_results, run_batch
from planner.data import catalog_dir

SPEC = {
    "base": {"model": "resnet50", "objective": "energy"},
    "grid": {
        "deadline_days": [0.2, 0.5, 1, 3],
        "gpus": [["A100"], ["H100"], ["H200"]],
        "purchase": ["buy", "rent"],
        "electricity_price_multiplier": [0.7, 1.3],
    },
}
TOTAL = len(expand(SPEC))  # 48
COMPARE = ["id", "status", "server", "nodes", "fabric", "power_cap", "purchase", "objective_value", "cost_usd"]


@pytest.fixture(scope="module")
def spec_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    f = tmp_path_factory.mktemp("spec") / "grid.yaml"
    f.write_text(json.dumps(SPEC))
    return f


@pytest.fixture(scope="module")
def clean(spec_file: Path, tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    """The uninterrupted run every faulted run must equal."""
    return run_batch(str(spec_file), tmp_path_factory.mktemp("clean") / "out", workers=1, progress=False).frame


def start(spec_file: Path, out: Path, *extra: str) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "planner.cli", "batch", str(spec_file), "--out", str(out), "--no-progress", *extra]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def rows_in(out: Path) -> list[tuple[str, int]]:
    """(id, worker pid) of the committed rows, read by a second connection while the batch writes."""
    if not (out / STORE).exists():
        return []
    try:
        db = sqlite3.connect(f"file:{out / STORE}?mode=ro", uri=True, timeout=5)
        try:
            return list(db.execute("SELECT id, json_extract(row, '$.worker_pid') FROM results"))
        finally:
            db.close()
    except sqlite3.OperationalError:
        return []


def wait_rows(out: Path, n: int, proc: subprocess.Popen[str], timeout: float = 120) -> list[tuple[str, int]]:
    t = time.time() + timeout
    while time.time() < t:
        rows = rows_in(out)
        if len(rows) >= n:
            return rows
        if proc.poll() is not None:
            pytest.fail(
                f"the batch ended before {n} rows: rc {proc.returncode}\n{proc.stderr.read() if proc.stderr else ''}"
            )
        time.sleep(0.01)
    pytest.fail(f"no {n} rows within {timeout} s")


def children(pid: int) -> list[int]:
    kids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(d.name))
    return kids


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has exited (and waits only for whoever adopted it to reap it)


def wait_gone(pids: list[int], timeout: float = 10) -> list[int]:
    t = time.time() + timeout
    while time.time() < t and any(alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


def exactly_once_and_equal(out: Path, clean: pd.DataFrame) -> None:
    with Store(out, readonly=True) as st:
        ids = [r[0] for r in st.db.execute("SELECT id FROM results")]
    assert len(ids) == len(set(ids)) == TOTAL
    assert sorted(ids) == sorted(s["id"] for s in expand(SPEC))
    got = read_results(out)
    pd.testing.assert_frame_equal(
        got[COMPARE].sort_values("id").reset_index(drop=True), clean[COMPARE].sort_values("id").reset_index(drop=True)
    )


pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc and Linux signals")


# ------------------------------------------------------------------------------------------- workers
def test_sigkill_of_a_worker_is_retried_and_loses_nothing(spec_file: Path, clean: pd.DataFrame, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = start(spec_file, out, "--workers", "2")
    wait_rows(out, 3, proc)
    kids = children(proc.pid)
    assert kids, "no worker processes found"
    os.kill(kids[0], signal.SIGKILL)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    with Store(out, readonly=True) as st:
        deaths = st.events()
    assert (deaths["kind"] == "worker_died").sum() == 1
    assert re.search(rf"worker pid {kids[0]} killed by SIGKILL", deaths["message"].iloc[0])
    exactly_once_and_equal(out, clean)
    assert run_batch(str(spec_file), out, workers=2, progress=False).ran == 0  # resume: nothing left


def test_a_scenario_whose_worker_always_dies_becomes_an_error_row_and_the_batch_goes_on(tmp_path: Path) -> None:
    """A 'scenario' that kills its own worker (an out-of-memory kill, a segfault): bounded retries, then an error
    row naming the cause; the other scenarios are answered and the run is incomplete (exit 4 on the CLI)."""
    import planner.batch.scenarios as bs

    real = bs.run_scenario

    def deadly(s: dict, catalog: object = None) -> dict:
        if s.get("deadline_days") == 0.5:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(s)

    bs.run_scenario = deadly  # forked workers inherit the patched module
    import planner.batch.pool as bp

    bp.run_scenario = deadly
    try:
        res = run_batch(
            SPEC | {"grid": {**SPEC["grid"], "deadline_days": [0.5, 1]}},
            tmp_path / "o",
            workers=2,
            progress=False,
            max_attempts=2,
        )
    finally:
        bs.run_scenario = real
        bp.run_scenario = real
    df = res.frame.set_index("id")
    bad = df[df["status"] == "error"]
    assert len(bad) == 12 and len(df) == 24 and not res.complete and len(res.unfinished) == 12
    assert (
        bad["message"]
        .str.contains("worker died 2 times while solving this scenario \\(last: killed by SIGKILL\\)")
        .all()
    )
    assert (bad["attempts"] == 2).all() and (df[df["status"] != "error"]["status"] == "optimal").all()
    assert res.stats["worker_deaths"] == 24 and res.stats["gave_up"] == 12


# ------------------------------------------------------------------------------------------- main process
@pytest.mark.parametrize(
    "sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT], ids=["SIGKILL", "SIGTERM", "SIGINT-to-group"]
)
def test_killed_main_process_leaves_no_worker_and_resumes(
    sig: signal.Signals, spec_file: Path, clean: pd.DataFrame, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    proc = start(spec_file, out, "--workers", "2")
    wait_rows(out, 3, proc)
    kids = children(proc.pid)
    assert kids, "no worker processes found"
    if sig == signal.SIGINT:
        os.killpg(proc.pid, sig)  # Ctrl-C in a terminal: the whole process group, workers included
    else:
        os.kill(proc.pid, sig)
    _, err = proc.communicate(timeout=60)
    assert wait_gone(kids, timeout=30) == [], "orphaned workers"
    if sig != signal.SIGKILL:
        assert proc.returncode == 128 + sig and f"interrupted by {sig.name}" in err and "Traceback" not in err
    partial = len(rows_in(out))
    assert 3 <= partial < TOTAL, f"the signal came too late to test resuming ({partial}/{TOTAL})"
    res = run_batch(str(spec_file), out, workers=2, progress=False)
    assert res.complete and res.ran == TOTAL - partial
    exactly_once_and_equal(out, clean)


# ------------------------------------------------------------------------------------------- store
def test_store_left_mid_transaction_by_a_killed_writer(spec_file: Path, clean: pd.DataFrame, tmp_path: Path) -> None:
    out = tmp_path / "out"
    run_batch(str(spec_file), out, workers=1, progress=False)
    ids = sorted(s["id"] for s in expand(SPEC))
    gone, ghost = ids[:5], ids[0]
    # A writer that commits the loss of five rows (as if never finished), then dies inside a transaction that
    # has written a bogus row for one of them and rewritten every other row, its pages spilled to the WAL.
    script = f"""
import os, signal, sqlite3
db = sqlite3.connect({str(out / STORE)!r}, isolation_level=None)
db.execute("DELETE FROM results WHERE id IN ({",".join("?" * len(gone))})", {gone!r})
db.execute("PRAGMA cache_size=1")
db.execute("BEGIN IMMEDIATE")
db.execute("INSERT INTO results VALUES (?, 0, 'optimal', 1, 'x', ?)", ({ghost!r}, {json.dumps({"id": ghost})!r}))
db.execute("UPDATE results SET row = json_set(row, '$.cost_usd', -1.0, '$.pad', hex(randomblob(4000)))")
assert os.path.getsize({str(out / STORE)!r} + "-wal") > 0
os.kill(os.getpid(), signal.SIGKILL)
"""
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert r.returncode == -signal.SIGKILL, r.stderr
    assert (out / f"{STORE}-wal").stat().st_size > 100_000  # uncommitted frames really are on disk
    res = run_batch(str(spec_file), out, workers=2, progress=False)
    assert res.complete and res.ran == 5
    exactly_once_and_equal(out, clean)


@pytest.mark.parametrize("damage", ["truncated", "overwritten"])
def test_a_store_damaged_under_a_running_batch_keeps_every_finished_row_and_force_new_starts_over(
    damage: str, spec_file: Path, clean: pd.DataFrame, tmp_path: Path
) -> None:
    """The store truncated to 0 bytes, or 16 KB of it overwritten, while a batch writes into it (its pages first
    checkpointed into the file, as a long run's are): the run exits 2 naming the damage, in one line, with every
    scenario that finished in results.csv (each equal to a clean run's); a rerun says the store is damaged and that
    --force-new starts over; --force-new starts over in the same directory and ends equal to a clean run."""
    out = tmp_path / "out"
    proc = start(spec_file, out, "--workers", "2")
    wait_rows(out, 5, proc)
    db = sqlite3.connect(out / STORE, timeout=10)
    db.execute("PRAGMA wal_checkpoint(PASSIVE)")
    db.close()
    before = {i for i, _ in rows_in(out)}
    if damage == "truncated":
        os.truncate(out / STORE, 0)
    else:
        with (out / STORE).open("r+b") as fh:
            fh.seek(4096)
            fh.write(b"\xa5" * 16384)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err and "internal error" not in err, err
    assert f"{out / STORE} is damaged (" in err and "saved in" in err and "--force-new" in err, err
    saved = pd.read_csv(out / "results.csv", dtype={"id": str})
    assert before <= set(saved["id"]) and len(saved) == saved["id"].nunique(), (len(before), len(saved))
    want = clean.set_index("id").loc[saved["id"], ["status", "server", "nodes", "purchase"]].reset_index(drop=True)
    pd.testing.assert_frame_equal(saved[["status", "server", "nodes", "purchase"]], want, check_dtype=False)

    cmd = [sys.executable, "-m", "planner.cli", "batch", str(spec_file), "--out", str(out), "--no-progress"]
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert again.returncode == 2 and "is damaged" in again.stderr and "--force-new" in again.stderr, again.stderr
    fresh = subprocess.run([*cmd, "--force-new", "--workers", "2"], capture_output=True, text=True, timeout=300)
    assert fresh.returncode == 0, fresh.stderr
    assert (out / "results.sqlite.damaged").exists()
    exactly_once_and_equal(out, clean)
    assert len(pd.read_csv(out / "results.csv")) == TOTAL


def test_another_catalog_into_the_same_directory_is_refused(
    spec_file: Path, clean: pd.DataFrame, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    run_batch(str(spec_file), out, workers=1, progress=False)
    cat = tmp_path / "catalog"
    shutil.copytree(catalog_dir(), cat)
    text = (cat / "servers.yaml").read_text()
    (cat / "servers.yaml").write_text(re.sub(r"(price_usd: )(\d+)", lambda m: f"{m[1]}{int(m[2]) * 10}", text))
    cmd = [sys.executable, "-m", "planner.cli", "batch", str(spec_file), "--out", str(out), "--no-progress"]
    r = subprocess.run([*cmd, "--catalog", str(cat)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2
    assert "holds the results of other inputs: the catalog differs: changed catalog/servers.yaml" in r.stderr
    assert "--force-new" in r.stderr and "Traceback" not in r.stderr
    exactly_once_and_equal(out, clean)  # untouched; a resume with the same catalog has nothing to do
    assert run_batch(str(spec_file), out, workers=1, progress=False).ran == 0
    r = subprocess.run(
        [*cmd, "--catalog", str(cat), "--force-new", "--workers", "2"], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr
    new = read_results(out)
    fresh = run_batch(str(spec_file), tmp_path / "fresh", workers=1, progress=False, catalog_dir=str(cat)).frame
    pd.testing.assert_frame_equal(
        new[COMPARE].sort_values("id").reset_index(drop=True), fresh[COMPARE].sort_values("id").reset_index(drop=True)
    )
    bought = new["purchase"] == "buy"
    assert (
        new.loc[bought, "cost_usd"].to_numpy()
        != clean.set_index("id").loc[new.loc[bought, "id"], "cost_usd"].to_numpy()
    ).any()


# ------------------------------------------------------------------------------------------- disk
@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96k", "tmpfs", str(mnt)], capture_output=True)
    if r.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_disk_full_exits_2_keeps_every_committed_row_and_resumes(
    spec_file: Path, clean: pd.DataFrame, tmpfs: Path
) -> None:
    out = tmpfs / "out"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "planner.cli",
            "batch",
            str(spec_file),
            "--out",
            str(out),
            "--no-progress",
            "--workers",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 2, r.stderr
    assert "disk full" in r.stderr and "rerun the same command to resume" in r.stderr and "Traceback" not in r.stderr
    partial = len(rows_in(out))
    assert partial < TOTAL
    subprocess.run(["mount", "-o", "remount,size=8m", str(tmpfs)], check=True)
    res = run_batch(str(spec_file), out, workers=2, progress=False)
    assert res.complete and res.ran == TOTAL - partial
    exactly_once_and_equal(out, clean)


def test_read_only_directory_exits_2(spec_file: Path, tmpfs: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    r = subprocess.run(
        [sys.executable, "-m", "planner.cli", "batch", str(spec_file), "--out", str(tmpfs / "out"), "--no-progress"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 2 and "read-only" in r.stderr and "Traceback" not in r.stderr


# ------------------------------------------------------------------------------------------- Ray
def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        for k in children(todo.pop()):
            out.append(k)
            todo.append(k)
    return out


def test_killed_ray_actor_is_replaced_and_a_killed_main_leaves_no_ray_process(
    spec_file: Path, clean: pd.DataFrame, tmp_path: Path
) -> None:
    """One Ray run: an actor is SIGKILLed (replaced, its tasks resubmitted), then the main process is SIGKILLed
    (nothing Ray started may survive it); a resume on Ray prints valid JSON and ends equal to a clean run."""
    pytest.importorskip("ray")
    out = tmp_path / "out"
    proc = start(spec_file, out, "--workers", "2", "--engine", "ray")
    t = time.time() + 180
    while time.time() < t and len(rows_in(out)) < 2 and proc.poll() is None:
        time.sleep(0.01)
    if proc.poll() is not None and not rows_in(out):
        _, err = proc.communicate()
        pytest.skip(f"Ray could not start here: {err[-500:]}")
    pid = rows_in(out)[-1][1]  # an actor's process
    os.kill(pid, signal.SIGKILL)
    while time.time() < t and proc.poll() is None:
        with Store(out, readonly=True) as st:
            if (st.events()["kind"] == "worker_replaced").any():
                break
        time.sleep(0.05)
    n = len(rows_in(out))
    while time.time() < t and len(rows_in(out)) < n + 2 and proc.poll() is None:
        time.sleep(0.01)
    ray_procs = [p for p in descendants(proc.pid) if p != pid]
    assert proc.poll() is None, "the run ended before the main process could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    # the watchdog polls and Ray shuts down slowly on a loaded machine: a minute, not the moment
    assert wait_gone(ray_procs, timeout=60) == [], "processes started by Ray outlived the batch"
    with Store(out, readonly=True) as st:
        ev = st.events()
    assert (ev["kind"] == "worker_replaced").sum() >= 1 and (ev["kind"] == "worker_died").sum() >= 1
    partial = len(rows_in(out))
    assert partial < TOTAL
    cmd = [sys.executable, "-m", "planner.cli", "batch", str(spec_file), "--out", str(out), "--no-progress"]
    r = subprocess.run(
        [*cmd, "--workers", "2", "--engine", "ray", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)  # nothing of Ray's on stdout
    assert doc["summary"]["complete"] and doc["summary"]["ran"] == TOTAL - partial
    exactly_once_and_equal(out, clean)


@pytest.fixture
def ray_cluster(request: pytest.FixtureRequest) -> Iterator[tuple[Any, Any]]:
    """A local Ray cluster of two nodes, (head CPUs, node CPUs) from the test's parameter: the cluster and the node
    the test may kill."""
    cluster_utils = pytest.importorskip("ray.cluster_utils")
    head_cpus, node_cpus = request.param
    try:
        cluster = cluster_utils.Cluster(
            initialize_head=True, head_node_args={"num_cpus": head_cpus, "include_dashboard": False}
        )
        node = cluster.add_node(num_cpus=node_cpus)
        cluster.wait_for_nodes()
    except Exception as exc:  # pragma: no cover - Ray cannot start here
        pytest.skip(f"a local Ray cluster cannot start here: {type(exc).__name__}: {exc}")
    try:
        yield cluster, node
    finally:
        with suppress(Exception):  # the killed node's processes are gone already
            cluster.shutdown()


def kill_node(node: Any) -> float:
    """SIGKILL a Ray node: its raylet and every process under it (its agents and workers), as when the machine is
    lost; the time of the kill (UTC seconds)."""
    raylet = node.all_processes["raylet"][0].process.pid
    victims = [raylet, *descendants(raylet)]
    killed_at = time.time()
    for pid in victims:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return killed_at


def wait_row_from_node(out: Path, node: Any, done: Any, timeout: float = 120) -> None:
    """Wait until an actor of ``node`` has committed a row (its pid is one of the node's processes)."""
    raylet = node.all_processes["raylet"][0].process.pid
    t = time.time() + timeout
    while time.time() < t and not done():
        if {pid for _, pid in rows_in(out)} & set(descendants(raylet)):
            return
        time.sleep(0.02)
    pytest.fail("no row from an actor of the node to kill")


def run_and_kill_node(spec_file: Path, out: Path, cluster: Any, node: Any) -> tuple[int, str, float, float]:
    """`planner batch --engine ray` on the cluster, ``node`` killed once an actor of it has committed a row:
    (exit code, stderr, time of the kill, seconds from the kill to the end). A run still going 120 s after the
    kill is a hang: killed, and the test fails."""
    proc = start(spec_file, out, "--workers", "2", "--engine", "ray", "--ray-address", cluster.address)
    wait_row_from_node(out, node, lambda: proc.poll() is not None)
    assert proc.poll() is None, "the run ended before the node could be killed"
    killed_at = kill_node(node)
    try:
        _, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("the batch hung after its Ray node was killed")
    return proc.returncode, err, killed_at, time.time() - killed_at


def utc_seconds(text: str) -> float:
    return dt.datetime.fromisoformat(text).timestamp()


@pytest.mark.parametrize("ray_cluster", [(1, 1)], indirect=True)
def test_a_killed_ray_node_is_detected_in_seconds_and_its_scenarios_finish_on_the_node_left(
    ray_cluster: tuple[Any, Any], spec_file: Path, clean: pd.DataFrame, tmp_path: Path
) -> None:
    """Two nodes of one CPU each, an actor on each; the second node is killed (raylet and every process of it) while
    its actor solves: its death is recorded within seconds, its scenarios are solved by the actor left (the
    replacement has no room and is not waited for), and the run ends complete (exit 0) well within a minute, every
    scenario exactly once and equal to a clean run."""
    cluster, node = ray_cluster
    out = tmp_path / "out"
    code, err, killed_at, ended_s = run_and_kill_node(spec_file, out, cluster, node)
    assert code == 0, err[-3000:]
    assert ended_s < 60, ended_s
    with Store(out, readonly=True) as st:
        ev = st.events()
    died = ev[ev["kind"] == "worker_died"]
    assert len(died) >= 1
    assert utc_seconds(died["time_utc"].iloc[0]) - killed_at < 20, died  # detected within seconds
    exactly_once_and_equal(out, clean)


@pytest.mark.parametrize("ray_cluster", [(0, 2)], indirect=True)
def test_a_killed_ray_node_with_no_node_left_ends_the_run_incomplete_with_results_csv(
    ray_cluster: tuple[Any, Any],
    spec_file: Path,
    clean: pd.DataFrame,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The only node with CPUs (both actors on it) is killed under `planner batch --engine ray`: the replacements
    have nowhere to start and are given up after RAY_START_TIMEOUT_S (5 s here through
    $PLANNER_RAY_START_TIMEOUT_S, 60 s by default), and the run ends with exit 4 and results.csv of what finished,
    instead of waiting forever. A real process, as the Ray driver's threads are in it."""
    monkeypatch.setenv("PLANNER_RAY_START_TIMEOUT_S", "5")
    cluster, node = ray_cluster
    out = tmp_path / "out"
    code, err, _, ended_s = run_and_kill_node(spec_file, out, cluster, node)
    assert code == 4, err[-3000:]
    assert ended_s < 60, ended_s
    saved = pd.read_csv(out / "results.csv", dtype={"id": str})
    committed = {i for i, _ in rows_in(out)}
    assert 1 <= len(saved) < TOTAL and set(saved["id"]) == committed
    want = clean.set_index("id").loc[saved["id"], ["status", "server", "nodes"]].reset_index(drop=True)
    pd.testing.assert_frame_equal(saved[["status", "server", "nodes"]], want, check_dtype=False)
    with Store(out, readonly=True) as st:
        ev = st.events()
    assert (ev["kind"] == "no_workers").sum() == 1 and (ev["kind"] == "worker_died").sum() >= 1
    assert f"{TOTAL - len(saved)} of {TOTAL} scenarios have no answer ({TOTAL - len(saved)} not run: no Ray" in err
