"""Running scenarios in worker processes (local) or Ray actors, surviving the death of any worker.

Local engine: ``workers`` processes, each with its own pipe and exactly one scenario at a time, so the
scenario of a worker that dies is known (``workers=1`` runs in the calling process: there is no pool to
lose). The main process waits on every worker's pipe *and* process sentinel; a death (killed, out of
memory, segfault) re-queues that scenario at the front and starts a replacement worker. A scenario is tried
at most ``max_attempts`` times; then it becomes an ``error`` row naming the cause ("worker died 3 times while
solving this scenario (last: killed by SIGKILL)"). The batch itself never stops for a worker.

No orphans: each worker asks the kernel for SIGKILL when its parent dies (Linux ``prctl(PR_SET_PDEATHSIG)``,
checked against a parent that died before the call), ignores SIGINT (Ctrl-C reaches the whole process group;
the main process decides), and is killed by the main process on any way out (normal end, exception,
SIGINT/SIGTERM turned into :class:`BatchInterrupted`). SIGKILL of the main process cannot be caught, and the
parent-death signal covers it.

Scheduling: scenarios are grouped by the physics their solve needs (``ScenarioQueue``); a worker or actor keeps to
its group while it has scenarios and takes a group no other worker is on next, so each physics is computed (or
loaded from the physics store) about once per batch, not once per worker. Inside a group, scenarios that price the
physics alike (the same prices, sites, purchase mode and run terms) follow one another, so a worker prices those
rows once and reduces them per scenario.

Ray engine: one actor per worker, two scenarios in flight per actor once it has started (scenarios wait in the
main process, never behind an actor the cluster has no room for). A task that fails because its actor died (its
process killed, its node lost) is re-submitted to a running actor (same bound on attempts) and the dead actor is
replaced once; the main loop wakes every ``RAY_POLL_S`` whatever Ray does, and a replacement that has not started
within ``RAY_START_TIMEOUT_S`` while no other actor runs is given up: with no actor left, the scenarios not run stay
without an answer (an incomplete run: exit 4, rerun to resume) rather than waiting forever. Ray's own output goes to
stderr (file descriptor 1 points at stderr while Ray starts and runs), so stdout stays clean.
"""

from __future__ import annotations

import ctypes
import gc
import math
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any

from planner.batch.scenarios import error_row, init_worker, physics_group, pricing_group, run_scenario
from planner.errors import PlannerInputError

PR_SET_PDEATHSIG = 1
Done = Callable[[dict[str, Any], int], None]  # (row, attempts)
Event = Callable[[str, "str | None", str], None]  # (kind, scenario id, message)


class BatchInterrupted(KeyboardInterrupt):
    """The batch was stopped by SIGINT or SIGTERM; every finished scenario is committed."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextmanager
def interruptible() -> Iterator[None]:
    """SIGTERM (and SIGINT) raise BatchInterrupted in the main thread for the duration, so the cleanup runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: Any) -> None:
        raise BatchInterrupted(signum)

    old = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def die_with_parent(parent_pid: int) -> None:
    """In a worker: SIGKILL when the parent dies (Linux), and exit now if it is already gone."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - no prctl: the main process still kills us
            pass
    if os.getppid() != parent_pid:
        os._exit(1)


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "stopped responding"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"


# ------------------------------------------------------------------------------------------- local
def _worker_main(conn: Connection, parent_pid: int, cdir: str | None, mdir: str | None, loaded: bool) -> None:
    die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if not loaded:
        init_worker(cdir, mdir)
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        conn.send(run_scenario(task))


@dataclass
class _Slot:
    """One worker process, its end of the pipe, and the scenario it is solving (None: idle)."""

    proc: Any
    conn: Connection
    task: dict[str, Any] | None = None
    broken: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


class ScenarioQueue:
    """Scenarios waiting for a worker, grouped by physics (``physics_group``), groups in order of first appearance;
    inside a group, the scenarios of one pricing group (``pricing_group``: prices, sites, purchase mode, run terms)
    follow one another, pricing groups in order of first appearance.

    ``take(group, busy)`` gives a worker the next scenario of the group it last solved, else of a group no other
    worker is on, else of the group with the most left: each worker computes (or loads) a group's physics once,
    and two workers share a group only when there is no other work. ``popleft`` takes in order of groups."""

    def __init__(self, todo: list[dict[str, Any]]) -> None:
        groups: dict[str, dict[str, list[dict[str, Any]]]] = {}
        for s in todo:
            groups.setdefault(physics_group(s), {}).setdefault(pricing_group(s), []).append(s)
        # inside a group, scenarios of one pricing group in a row: the worker prices their rows once
        self.groups = {g: deque(s for part in parts.values() for s in part) for g, parts in groups.items()}

    def __len__(self) -> int:
        return sum(len(q) for q in self.groups.values())

    def __bool__(self) -> bool:
        return bool(self.groups)

    def appendleft(self, s: dict[str, Any]) -> None:
        """Put a scenario back at the front of its group (a retry after its worker died)."""
        g = physics_group(s)
        if g not in self.groups:
            self.groups = {g: deque(), **self.groups}
        self.groups[g].appendleft(s)

    def popleft(self) -> dict[str, Any]:
        return self._pop(next(iter(self.groups)))

    def take(self, group: str | None, busy: set[str]) -> dict[str, Any]:
        """The next scenario for a worker that last solved ``group``, while other workers are on ``busy``."""
        if group in self.groups:
            return self._pop(group)
        free = [g for g in self.groups if g not in busy]
        return self._pop(free[0] if free else max(self.groups, key=lambda g: len(self.groups[g])))

    def _pop(self, g: str) -> dict[str, Any]:
        s = self.groups[g].popleft()
        if not self.groups[g]:
            del self.groups[g]
        return s


def new_stats() -> dict[str, int]:
    """The counters a run returns: worker deaths, retries, scenarios given up on, and scenarios not run because no
    worker was left (Ray)."""
    return {"worker_deaths": 0, "retries": 0, "gave_up": 0, "not_run": 0}


def _retry_or_give_up(
    s: dict[str, Any],
    n: int,
    max_attempts: int,
    what: str,
    cause: str,
    queue: ScenarioQueue,
    stats: dict[str, int],
    done: Done,
) -> None:
    """After the worker solving ``s`` died on its n-th attempt: queue it again, or, after ``max_attempts``, end it
    as an error row that names the cause (the batch itself goes on)."""
    if n >= max_attempts:
        stats["gave_up"] += 1
        done(error_row(s, f"{what} while solving this scenario ({cause})"), n)
    else:
        stats["retries"] += 1
        queue.appendleft(s)


class LocalPool:
    """Worker processes, one scenario each at a time, replaced when they die; see the module docstring.

    On Linux the catalog is loaded here once and inherited by every forked worker, with the inherited heap frozen
    out of the workers' garbage collections (no copy-on-write of it); elsewhere each spawned worker loads it."""

    def __init__(
        self,
        todo: list[dict[str, Any]],
        cdir: str | None,
        mdir: str | None,
        done: Done,
        event: Event,
        max_attempts: int,
        stats: dict[str, int],
    ) -> None:
        self.linux = sys.platform.startswith("linux")
        self.ctx: Any = mp.get_context("fork" if self.linux else "spawn")
        self.cdir, self.mdir = cdir, mdir
        self.done, self.event = done, event
        self.max_attempts = max_attempts
        self.stats = stats
        self.queue = ScenarioQueue(todo)
        self.attempts: Counter[str] = Counter()
        self.slots: list[_Slot] = []
        self.me = os.getpid()
        if self.linux:
            init_worker(cdir, mdir)  # loaded once here, inherited by every forked worker
            gc.freeze()  # the inherited heap stays out of the workers' collections (no copy-on-write of it)

    def start(self) -> _Slot:
        """A new worker process and its pipe."""
        parent, child = self.ctx.Pipe()
        p = self.ctx.Process(target=_worker_main, args=(child, self.me, self.cdir, self.mdir, self.linux), daemon=True)
        p.start()
        child.close()
        return _Slot(p, parent)

    def start_workers(self, n: int) -> None:
        """Start ``n`` workers, each given its first scenario."""
        for _ in range(n):
            self.slots.append(self.start())
            self.assign(self.slots[-1])

    def assign(self, slot: _Slot) -> None:
        """Send the next queued scenario to ``slot`` (counted as an attempt); a worker already dead is marked broken
        and found by its sentinel."""
        if not self.queue:
            return
        busy = {sl.extra["group"] for sl in self.slots if sl is not slot and sl.task is not None}
        s = self.queue.take(slot.extra.get("group"), busy)
        slot.extra["group"] = physics_group(s)
        self.attempts[s["id"]] += 1
        slot.task = s
        try:
            slot.conn.send(s)
        except OSError:  # already dead: found by its sentinel
            slot.broken = True

    def busy(self) -> bool:
        """Some worker is solving a scenario."""
        return any(sl.task is not None for sl in self.slots)

    def wait_ready(self) -> list[_Slot]:
        """Block until a busy worker answers or dies; the slots that did, each once."""
        waitables: dict[Any, _Slot] = {}
        for sl in self.slots:
            if sl.task is not None:
                waitables[sl.conn] = sl
                waitables[sl.proc.sentinel] = sl
        ready: list[_Slot] = []
        for obj in wait(list(waitables)):
            if not any(sl is waitables[obj] for sl in ready):
                ready.append(waitables[obj])
        return ready

    def serve(self, sl: _Slot) -> None:
        """A worker that answered or died: its row to ``done`` and its next scenario, or, dead, it is buried and
        replaced."""
        row = None
        if not sl.broken:
            try:
                if sl.conn.poll():
                    row = sl.conn.recv()
            except (EOFError, OSError):
                sl.broken = True
        if row is not None and sl.task is not None:
            s, sl.task = sl.task, None
            self.done(row, self.attempts[s["id"]])
            if sl.proc.is_alive():
                self.assign(sl)
                return
        if sl.broken or not sl.proc.is_alive():
            new = self.bury(sl)
            self.slots[self.slots.index(sl)] = new if new is not None else sl

    def bury(self, slot: _Slot) -> _Slot | None:
        """A dead worker: re-queue or give up its scenario, and return its replacement (None if no work left)."""
        slot.proc.join(timeout=5)
        if slot.proc.is_alive():
            slot.proc.kill()
            slot.proc.join(timeout=5)
        cause = _describe_exit(slot.proc.exitcode)
        slot.conn.close()
        self.stats["worker_deaths"] += 1
        s, slot.task = slot.task, None
        if s is not None:
            n = self.attempts[s["id"]]
            self.event(
                "worker_died",
                s["id"],
                f"worker pid {slot.proc.pid} {cause} while solving it (attempt {n}/{self.max_attempts})",
            )
            what = f"worker died {n} times"
            _retry_or_give_up(s, n, self.max_attempts, what, f"last: {cause}", self.queue, self.stats, self.done)
        else:
            self.event("worker_died", None, f"worker pid {slot.proc.pid} {cause} while idle")
        if not self.queue:
            return None
        new = self.start()
        self.assign(new)
        return new

    def close(self) -> None:
        """Kill every worker still alive, reap them all and close their pipes; unfreeze the heap."""
        for sl in self.slots:
            if sl.proc.is_alive():
                sl.proc.kill()
        for sl in self.slots:
            sl.proc.join(timeout=5)
            sl.conn.close()
        if self.linux:
            gc.unfreeze()


def run_local(
    todo: list[dict[str, Any]],
    workers: int,
    cdir: str | None,
    mdir: str | None,
    done: Done,
    event: Event,
    max_attempts: int = 3,
    in_process_when_one: bool = True,
) -> dict[str, int]:
    """Solve ``todo`` on ``workers`` processes; every scenario ends in ``done`` exactly once. Returns counters.

    One worker runs in this process (no pool to lose; as safe in a threaded host such as Streamlit) unless
    ``in_process_when_one`` is false."""
    stats = new_stats()
    if not todo:
        return stats
    if workers == 1 and in_process_when_one:
        run_in_process(todo, cdir, mdir, done)
        return stats
    pool = LocalPool(todo, cdir, mdir, done, event, max_attempts, stats)
    try:
        pool.start_workers(min(workers, len(todo)))
        while pool.busy():
            for slot in pool.wait_ready():
                pool.serve(slot)
    finally:
        pool.close()
    return stats


def run_in_process(todo: list[dict[str, Any]], cdir: str | None, mdir: str | None, done: Done) -> None:
    """Solve ``todo`` one after another in this process (each scenario one attempt), in the queue's order: each
    physics group, and each pricing group inside it, in a row (``ScenarioQueue``)."""
    init_worker(cdir, mdir)
    queue = ScenarioQueue(todo)
    while queue:
        done(run_scenario(queue.popleft()), 1)


# ------------------------------------------------------------------------------------------- ray
@contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """File descriptor 1 -> stderr for the duration (for Ray's processes and C++ logs too)."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _descendants(root: int) -> set[tuple[int, str]]:
    """(pid, start time) of every live descendant of ``root`` (Linux /proc; empty elsewhere)."""
    children: dict[int, list[tuple[int, str]]] = {}
    try:
        entries = [d for d in os.listdir("/proc") if d.isdigit()]
    except OSError:
        return set()
    for d in entries:
        try:
            with open(f"/proc/{d}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append((int(d), fields[19]))
    out: set[tuple[int, str]] = set()
    todo = [root]
    while todo:
        for pid, start in children.get(todo.pop(), []):
            if (pid, start) not in out:
                out.add((pid, start))
                todo.append(pid)
    return out


def _start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[19]
    except OSError:
        return None


def _watchdog_main(parent_pid: int, conn: Connection) -> None:
    """Keep a list of the parent's descendants (Ray's processes); if the parent dies, SIGKILL every one left."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    me = os.getpid()
    known: set[tuple[int, str]] = set()
    while True:
        if conn.poll(0.5):  # the parent is done and shut Ray down itself
            return
        if os.getppid() != parent_pid:
            break
        known |= {(p, t) for p, t in _descendants(parent_pid) if p != me}
    for pid, start in known:
        if _start_time(pid) == start:  # the same process, not a reused pid
            with suppress(OSError):
                os.kill(pid, signal.SIGKILL)


@contextmanager
def ray_reaper() -> Iterator[None]:
    """A watchdog process that kills what Ray started if this process dies without shutting Ray down
    (SIGKILL): Ray's raylet dies with its parent, but some of its agents outlive it."""
    if not sys.platform.startswith("linux"):
        yield
        return
    ctx: Any = mp.get_context("fork")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_watchdog_main, args=(os.getpid(), child), daemon=True)
    proc.start()
    child.close()
    try:
        yield
    finally:
        with suppress(OSError):
            parent.send(None)
        proc.join(timeout=5)
        if proc.is_alive():
            proc.kill()
        parent.close()


def _ray_actor_class(ray: Any) -> Any:
    """The Ray actor class of a worker: the catalog loaded once, SIGINT ignored (the main process decides)."""

    @ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)
    class Worker:
        """A Ray worker: solves one scenario per call."""

        def __init__(self, cdir: str | None, mdir: str | None) -> None:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            init_worker(cdir, mdir)

        def where(self) -> tuple[str, int]:
            """(node id, pid) of this actor: answered once it is placed and its catalog is loaded."""
            return ray.get_runtime_context().get_node_id(), os.getpid()

        def run(self, s: dict[str, Any]) -> dict[str, Any]:
            """The result row of scenario ``s`` (never raises)."""
            return run_scenario(s)

    return Worker


def start_ray(ray: Any, address: str | None, workers: int) -> bool:
    """Connect to the Ray cluster at ``address``, or start a local Ray of ``workers`` CPUs; False when Ray is already
    running in this process (the caller's to shut down). A cluster that cannot be reached or started is bad input."""
    if ray.is_initialized():
        return False
    kw: dict[str, Any] = {"log_to_driver": False, "logging_level": "ERROR", "ignore_reinit_error": True}
    try:
        if address:
            ray.init(address=address, **kw)
        else:
            ray.init(num_cpus=workers, include_dashboard=False, **kw)
    except Exception as exc:  # no cluster at that address, or Ray cannot start here
        where = f"the Ray cluster at {address}" if address else "a local Ray instance"
        raise PlannerInputError(
            f"could not start or reach {where}: {type(exc).__name__}: {exc}; check --ray-address, or use --engine local"
        ) from None
    return True


RAY_POLL_S = 0.5  # the longest the main loop waits on Ray before it looks at its workers again
RAY_START_TIMEOUT_DEFAULT_S = 60.0


def ray_start_timeout_s() -> float:
    """Seconds a worker actor may take to start while no other is running before it is given up:
    $PLANNER_RAY_START_TIMEOUT_S when it is a positive number, else 60."""
    try:
        value = float(os.environ.get("PLANNER_RAY_START_TIMEOUT_S", RAY_START_TIMEOUT_DEFAULT_S))
    except ValueError:
        return RAY_START_TIMEOUT_DEFAULT_S
    return value if value > 0 and math.isfinite(value) else RAY_START_TIMEOUT_DEFAULT_S


RAY_START_TIMEOUT_S = ray_start_timeout_s()
PER_ACTOR = 2  # scenarios in flight per actor: one solving, one queued behind it


@dataclass
class _Actor:
    """One Ray worker actor: its handle, whether it has started (``node`` set once ``where`` answered), since when it
    has been waited for, and the scenarios it holds (task ref -> scenario)."""

    handle: Any
    index: int
    ready_ref: Any
    since_s: float
    node: str | None = None
    pid: int | None = None
    tasks: dict[Any, dict[str, Any]] = field(default_factory=dict)
    group: str | None = None  # the physics group of the scenario it was last given


class RayPool:
    """Ray actors, ``PER_ACTOR`` scenarios in flight each, replaced when they die; see the module docstring.

    Scenarios wait in this process until an actor has *started* (its ``where`` call answered), so none is held by an
    actor the cluster has no room for. An actor that dies (its process or its node) has its scenarios queued again
    and is replaced once; a replacement that does not start is given up after ``RAY_START_TIMEOUT_S`` while no
    other actor runs, and when no actor is left the scenarios still queued stay without an answer (the run is
    incomplete: exit 4, rerun to resume)."""

    def __init__(
        self,
        ray: Any,
        todo: list[dict[str, Any]],
        workers: int,
        cdir: str | None,
        mdir: str | None,
        done: Done,
        event: Event,
        max_attempts: int,
        stats: dict[str, int],
    ) -> None:
        self.ray = ray
        self.cls = _ray_actor_class(ray)
        self.workers = workers
        self.cdir, self.mdir = cdir, mdir
        self.done, self.event = done, event
        self.max_attempts = max_attempts
        self.stats = stats
        self.queue = ScenarioQueue(todo)
        self.attempts: Counter[str] = Counter()
        self.actors: list[_Actor] = []
        self.starts = 0
        self.max_starts = workers * (max_attempts + 1)  # replacements are bounded: a cluster that kills every actor

    def start(self, index: int) -> None:
        """A new actor in slot ``index``, waited for through its ``where`` call."""
        handle = self.cls.remote(self.cdir, self.mdir)
        self.starts += 1
        self.actors.append(_Actor(handle, index, handle.where.remote(), time.monotonic()))

    def refs(self) -> list[Any]:
        """Everything to wait on: the scenarios in flight and the start of each actor not started yet."""
        out: list[Any] = []
        for a in self.actors:
            out += list(a.tasks) if a.node is not None else [a.ready_ref]
        return out

    def fill(self) -> None:
        """Give every started actor up to PER_ACTOR scenarios (each counted as an attempt)."""
        for a in self.actors:
            while a.node is not None and self.queue and len(a.tasks) < PER_ACTOR:
                busy = {b.group for b in self.actors if b is not a and b.tasks and b.group is not None}
                s = self.queue.take(a.group, busy)
                a.group = physics_group(s)
                self.attempts[s["id"]] += 1
                a.tasks[a.handle.run.remote(s)] = s

    def owner(self, ref: Any) -> _Actor | None:
        """The actor ``ref`` belongs to (None: an actor already given up)."""
        return next((a for a in self.actors if ref == a.ready_ref or ref in a.tasks), None)

    def serve(self, ref: Any) -> None:
        """An actor that started, or a scenario that ended (its row) or whose actor died (the actor is replaced)."""
        a = self.owner(ref)
        if a is None:
            return
        if ref == a.ready_ref:
            try:
                a.node, a.pid = self.ray.get(ref)
            except Exception as exc:  # the actor died before it started (its node, or its catalog failed to load)
                self.lost(a, f"{type(exc).__name__} before it started")
            return
        s = a.tasks.pop(ref)
        try:
            row = self.ray.get(ref)
        except self.ray.exceptions.RayTaskError as exc:  # run_scenario never raises: an error of Ray itself
            row = error_row(s, f"ray task failed: {type(exc).__name__}: {exc}")
        except Exception as exc:  # RayActorError & co: the actor (its process or its node) died with this task
            a.tasks[ref] = s
            self.lost(a, type(exc).__name__)
            return
        self.done(row, self.attempts[s["id"]])

    def lost(self, a: _Actor, cause: str) -> None:
        """Actor ``a`` died: each scenario it held is retried or, after max_attempts, an error row; it is killed and
        replaced (within ``max_starts``)."""
        self.actors.remove(a)
        self.stats["worker_deaths"] += 1
        name = f"Ray actor {a.index}" + (f" (pid {a.pid})" if a.pid is not None else "")
        for s in a.tasks.values():
            n = self.attempts[s["id"]]
            self.event(
                "worker_died", s["id"], f"{name} died ({cause}) while solving it (attempt {n}/{self.max_attempts})"
            )
            what = f"Ray actor died {n} times"
            _retry_or_give_up(s, n, self.max_attempts, what, cause, self.queue, self.stats, self.done)
        if not a.tasks:
            self.event("worker_died", None, f"{name} died ({cause}) while idle")
        with suppress(Exception):
            self.ray.kill(a.handle, no_restart=True)
        if self.queue and self.starts < self.max_starts:
            self.start(a.index)
            self.event("worker_replaced", None, f"Ray actor {a.index} replaced")

    def give_up_unstarted(self) -> None:
        """While no actor runs, an actor that has not started within RAY_START_TIMEOUT_S (no room in the cluster, its
        node gone) is given up; with none left the loop ends and the queued scenarios stay without an answer."""
        if any(a.node is not None for a in self.actors):
            return
        now = time.monotonic()
        for a in [a for a in self.actors if now - a.since_s > RAY_START_TIMEOUT_S]:
            self.actors.remove(a)
            with suppress(Exception):
                self.ray.kill(a.handle, no_restart=True)
            self.event(
                "worker_gave_up",
                None,
                f"Ray actor {a.index} did not start within {RAY_START_TIMEOUT_S:g} s (no room in the cluster, or "
                "its node is gone)",
            )
        if not self.actors and self.queue:
            self.stats["not_run"] = len(self.queue)
            self.event(
                "no_workers",
                None,
                f"no Ray worker left: {len(self.queue)} scenario(s) not run (rerun to resume them)",
            )

    def run(self) -> None:
        """Start the actors and serve them until every scenario has ended or no actor is left."""
        for i in range(min(self.workers, len(self.queue))):
            self.start(i)
        while self.actors and (self.queue or any(a.tasks for a in self.actors)):
            self.fill()
            refs = self.refs()
            ready, _ = self.ray.wait(refs, num_returns=1, timeout=RAY_POLL_S) if refs else ([], [])
            for ref in ready:
                self.serve(ref)
            self.give_up_unstarted()

    def close(self) -> None:
        """Kill every actor."""
        for a in self.actors:
            with suppress(Exception):
                self.ray.kill(a.handle, no_restart=True)


def run_ray(
    todo: list[dict[str, Any]],
    workers: int,
    address: str | None,
    cdir: str | None,
    mdir: str | None,
    done: Done,
    event: Event,
    max_attempts: int = 3,
) -> dict[str, int]:
    """Solve ``todo`` on ``workers`` Ray actors (``PER_ACTOR`` scenarios in flight each) of the cluster at ``address``
    or of a local Ray started here; every scenario that ends, ends in ``done`` exactly once (one left queued when no
    actor is left has no row). Returns counters (as ``run_local``)."""
    try:
        import ray
    except ImportError:
        raise PlannerInputError("the Ray engine needs Ray: pip install 'planner[ray]'") from None
    stats = new_stats()
    if not todo:
        return stats
    with stdout_to_stderr(), ray_reaper():
        started = start_ray(ray, address, workers)
        pool = RayPool(ray, todo, workers, cdir, mdir, done, event, max_attempts, stats)
        try:
            pool.run()
        finally:
            pool.close()
            if started:
                ray.shutdown()
    return stats
